"""Issue 20.3: ``qviz.show`` serves the app for a model from the notebook's process,
opened on the recipe given; ``.stop()`` ends it."""

import urllib.request

import pytest

import qviz
from qviz.passes import LayerBits
from qviz.samples import sample_path

from .helpers import badge_texts, needs_browser, wait_for

@needs_browser
def test_show_serves_the_app_on_the_recipe_given_and_stops(dash_duo, capsys):
    g = qviz.load(sample_path("lenet_digits"))
    recipe = qviz.Recipe(fold_default=True, quantize_default=None).with_bits("conv2", LayerBits(4, None))
    shown = qviz.show(g, recipe, mode="external", worker=False)
    try:
        assert f"qviz is at {shown.url}" in capsys.readouterr().out     # no notebook here: the address
        dash_duo.driver.get(shown.url)
        want = {"layer:conv1": "+bn", "layer:conv2": "w4+bn", "layer:fc1": "+bn"}
        wait_for(lambda: badge_texts(dash_duo) == want, timeout=60,
                 what=lambda: f"the recipe's badges; they read {badge_texts(dash_duo)}")
    finally:
        shown.stop()
    with pytest.raises(OSError):   # refused, or reset: nothing serves it
        urllib.request.urlopen(shown.url, timeout=5)


def test_show_refuses_a_recipe_for_another_model_before_serving():
    g = qviz.load(sample_path("lenet_digits"))
    with pytest.raises(qviz.RecipeError, match="no such layer"):
        qviz.show(g, qviz.Recipe(fold_layers={"stem_conv": True}), worker=False)
    with pytest.raises(ValueError, match="mode must be 'inline' or 'external'"):
        qviz.show(g, mode="jupyterlab", worker=False)
