"""Issue 19.5: the fold explainer shows every output channel's weight range before
and after the fold and the error each quantization scheme gives, at the recipe's
bits, on the model's own weights (the same numbers as the library's)."""

import qviz
from qviz.analysis.channel_ranges import channel_ranges
from qviz.samples import sample_path

from .helpers import click, explain_fold_of, needs_browser, shot, start_app, text_of, wait_for

pytestmark = needs_browser

_FIGURE = ("const g = document.querySelector('.channel-ranges .js-plotly-plot');"
           "if (!g || !g.data) return null;"
           "return {names: g.data.map(d => d.name), channels: g.data[1].x.length,"
           "        after_hi: g.data[1].y.map((h, i) => h + g.data[1].base[i]),"
           "        title: g.layout.annotations[1].text};")


def test_channel_ranges_before_and_after_the_fold_at_the_recipes_bits(dash_duo):
    start_app(dash_duo)
    explain_fold_of(dash_duo, "conv2", "4")
    # opens at the recipe's width for conv2, with the library's numbers
    want = channel_ranges(qviz.load(sample_path("lenet_digits")), "conv2", 4)
    wait_for(lambda: text_of(dash_duo, ".channel-summary").startswith("At 4 bits"), timeout=60,
             what=lambda: f"the channel view at 4 bits; it reads {text_of(dash_duo, '.channel-ranges')!r}")
    assert want.summary() == text_of(dash_duo, ".channel-summary")
    assert "Your recipe quantizes weights per-tensor (narrow range, symmetric)" in text_of(dash_duo, ".channel-ranges")
    table = text_of(dash_duo, ".scheme-table")
    assert f"after fold {want.error('after fold', 'per-tensor').sqnr_db:.1f} dB" in table
    wait_for(lambda: dash_duo.driver.execute_script(_FIGURE) is not None, what="the channel figure")
    fig = dash_duo.driver.execute_script(_FIGURE)
    assert fig["names"][:2] == ["range before the fold", "range after the fold"]
    assert fig["channels"] == want.channels == 32       # every channel, not channel 0 only
    assert [round(v, 5) for v in fig["after_hi"]] == [round(float(v), 5) for v in want.after.hi]
    assert "at 4 bits" in fig["title"]
    dash_duo.driver.execute_script("document.querySelector('.channel-ranges').scrollIntoView();")
    shot(dash_duo, "fold_channel_ranges.png")
    # another width redraws the view (no job: constants only)
    click(dash_duo, ".channel-ranges input[value='2']")
    wait_for(lambda: text_of(dash_duo, ".channel-summary").startswith("At 2 bits"), what="the view at 2 bits")
    assert text_of(dash_duo, ".channel-summary") == channel_ranges(
        qviz.load(sample_path("lenet_digits")), "conv2", 2).summary()
    wait_for(lambda: "at 2 bits" in dash_duo.driver.execute_script(_FIGURE)["title"], what="figure at 2 bits")
