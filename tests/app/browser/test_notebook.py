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


@needs_browser
def test_show_inline_in_a_real_jupyter_kernel(dash_duo, tmp_path, monkeypatch):
    """A notebook run by Jupyter's own machinery (nbclient, an ipykernel): the cell shows the
    app in an <iframe>; the page it points to is served from the kernel, with TensorFlow in
    worker processes the kernel started, and verifies the recipe; a Result shows its summary."""
    import json
    import re
    import sys

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # a kernel of this very interpreter (not whichever "python" a machine's kernel spec names)
    spec = tmp_path / "kernels" / "qviz-test"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps(
        {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
         "display_name": "qviz test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        "import qviz\nfrom qviz.samples import sample_path\ng = qviz.load(sample_path('lenet_digits'))\n"
        "recipe = qviz.Recipe.default(g, qviz.LayerBits(4, 8))",
        "app = qviz.show(g, recipe)",
        "qviz.apply(g, recipe)",
        "app.stop()")]
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="qviz-test")
    with client.setup_kernel():
        for i in (0, 1):
            client.execute_cell(nb.cells[i], i)
        html = next(o["data"]["text/html"] for o in nb.cells[1].outputs if "text/html" in o.get("data", {}))
        url = re.search(r'<iframe[^>]*src="(http://127\.0\.0\.1:\d+/)"', html).group(1)
        dash_duo.driver.get(url)
        wait_for(lambda: "test accuracy: 99.78% →" in dash_duo.find_element("#verify-panel").text, timeout=180,
                 what=lambda: f"the recipe verified; the panel reads {dash_duo.find_element('#verify-panel').text!r}")
        assert set(badge_texts(dash_duo).values()) == {"w4a8+bn", "w4a8"}
        client.execute_cell(nb.cells[2], 2)
        summary = nb.cells[2].outputs[0]["data"]["text/html"]
        assert summary.startswith('<div class="qviz-result"><b>qviz.apply</b>') and "SQNR" in summary
        client.execute_cell(nb.cells[3], 3)
    with pytest.raises(OSError):   # stopped with the cell: nothing serves it
        urllib.request.urlopen(url, timeout=5)
