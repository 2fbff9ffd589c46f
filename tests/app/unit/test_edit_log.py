"""The page's table-edit log comes from the browser: entries that are not edits of this
model's layers are skipped, never applied and never a crash."""

import qviz
from qviz.app import services


def test_hostile_log_entries_are_skipped(samples):
    g = qviz.load(samples["lenet_digits"])
    page = services.new_history(services.START_RECIPE)
    log = {"seq": 9, "edits": [
        "not a dict", {"seq": "1"}, {"seq": None, "layer": "conv1"},
        {"seq": 2, "model": 7, "layer": "no_such_layer", "field": "weight_bits", "value": "4"},
        {"seq": 3, "model": 7, "layer": "conv1", "field": "__class__", "value": "4"},
        {"seq": 4, "model": 8, "layer": "conv1", "field": "weight_bits", "value": "4"},     # another model
        {"seq": 5, "model": 7, "layer": "conv1", "field": "weight_bits", "value": "x" * 10_000},
        {"seq": 6, "model": 7, "layer": "conv2", "field": "fold", "value": True},
    ]}
    out = services.apply_edits(page, log, 7, set(g.layers))
    recipe = services.current(out)
    assert recipe.folds("conv2") and recipe.bits("conv1") is None      # only the real edit, once
    assert out["applied"] == 6
    assert services.apply_edits(out, log, 7, set(g.layers)) is out       # nothing new: nothing done
    assert services.apply_edits(page, None, 7, set(g.layers)) is page
