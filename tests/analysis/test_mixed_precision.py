"""Issue 19.4: a greedy mixed-precision search over the sensitivity sweep, its
recipes measured, the size-vs-SQNR front, and a size or bit-operations budget
picking a recipe."""


import numpy as np
import pytest

import qviz
from qviz.analysis.budget import budget, layer_macs
from qviz.analysis.mixed_precision import measure_front, search, weight_counts
from qviz.analysis.sensitivity import sensitivity
from qviz.cli import main
from qviz.runtime import tensor_shapes
from qviz.samples import data_for, sample_path


@pytest.fixture(scope="module")
def lenet_front():
    g = qviz.load(sample_path("lenet_digits"))
    data = data_for(g)
    sens = sensitivity(g, bits=(8, 4, 2), **data.sweep_kwargs())
    front = search(sens, weight_counts(g))
    return g, data, front, measure_front(g, front, **data.sweep_kwargs()), sens


def test_each_step_narrows_one_layer_and_the_size_is_counted_right(lenet_front):
    g, _, front, _, _ = lenet_front
    counts = weight_counts(g)
    assert counts == {"conv1": 144, "conv2": 4608, "fc1": 32768, "logits": 640}
    sizes = [p.weight_bits for p in front.points]
    assert sizes[0] == 8 * sum(counts.values()) and sizes[-1] == 2 * sum(counts.values())
    assert sizes == sorted(sizes, reverse=True) and len(front.points) == 1 + 2 * len(counts)
    for a, b in zip(front.points, front.points[1:]):
        wa = {k: v.weight_bits for k, v in a.recipe.quantize_layers.items()}
        wb = {k: v.weight_bits for k, v in b.recipe.quantize_layers.items()}
        assert sum(wa[k] != wb[k] for k in wa) == 1           # one layer, one width down
        assert all(v.activation_bits == 8 for v in b.recipe.quantize_layers.values())


def test_the_estimate_tracks_what_qviz_apply_measures(lenet_front):
    _, _, _, measured, _ = lenet_front
    for p in measured.points:
        if p.measured_sqnr_db > 5:           # where the model still works, the noise model holds
            assert abs(p.estimated_sqnr_db - p.measured_sqnr_db) < 3.0, (p.estimated_sqnr_db, p.measured_sqnr_db)
    first = measured.points[0]
    # the widest point is the all-8-bit recipe: measured exactly as qviz.apply measures it
    g, data, _, _, _ = lenet_front
    direct = qviz.apply(g, first.recipe, calibration=data.calibration, verification=data.verification,
                        labels=data.labels)
    assert first.measured_sqnr_db == pytest.approx(direct.report.sqnr_db, abs=1e-6)
    front = measured.front()
    assert front and all(not (q.weight_bits < p.weight_bits and q.measured_sqnr_db > p.measured_sqnr_db)
                         for p in front for q in measured.points)


def test_a_size_budget_picks_the_best_recipe_that_fits(lenet_front, tmp_path, capsys):
    _, _, _, measured, _ = lenet_front
    budget = measured.points[2].weight_bytes + 1
    chosen = measured.within(budget)
    assert chosen.weight_bytes <= budget
    assert chosen.measured_sqnr_db == max(p.measured_sqnr_db for p in measured.points if p.weight_bytes <= budget)
    assert measured.within(1) is None
    out = tmp_path / "r.json"
    assert main(["sensitivity", str(sample_path("lenet_digits")), "--bits", "8", "4", "2", "--size-kb", "20",
                 "--recipe-out", str(out), "--checkpoint", str(tmp_path / "s.json")]) == 0
    printed = capsys.readouterr().out
    assert "mixed precision (weights narrowed greedily" in printed and "the best recipe within 20 KB" in printed
    recipe = qviz.Recipe.from_json(out.read_text())
    sizes = weight_counts(qviz.load(sample_path("lenet_digits")))
    assert sum(sizes[k] * b.weight_bits for k, b in recipe.quantize_layers.items() if b.weight_bits) <= 20 * 1024 * 8
    assert main(["sensitivity", str(sample_path("lenet_digits")), "--bits", "8", "4", "2", "--pareto",
                 "--target-sqnr", "15", "--checkpoint", str(tmp_path / "s.json")]) == 0
    assert "the smallest recipe reaching 15 dB:" in capsys.readouterr().out
    assert main(["sensitivity", str(sample_path("lenet_digits")), "--bits", "8", "4", "2", "--size-kb", "1",
                 "--checkpoint", str(tmp_path / "s.json")]) == 2
    assert "no recipe's weights fit; the smallest is" in capsys.readouterr().err


def test_a_bit_ops_budget_narrows_the_busiest_conv_first_and_counts_what_runs(lenet_front, tmp_path, capsys):
    g, data, _, _, sens = lenet_front
    shapes = tensor_shapes(g)
    macs = layer_macs(g, shapes)
    by_ops = search(sens, weight_counts(g), macs=macs)
    narrowed = [next(k for k, b in q.recipe.quantize_layers.items() if b.weight_bits != p.recipe.bits(k).weight_bits)
                for p, q in zip(by_ops.points, by_ops.points[1:])]
    # fc1 holds the most weights (so the size search takes it first), conv2 the most MACs
    assert max(macs, key=macs.get) == "conv2" and max(weight_counts(g), key=weight_counts(g).get) == "fc1"
    assert narrowed[0] == "conv2" and narrowed.index("fc1") > 0
    assert [p.bops for p in by_ops.points] == sorted((p.bops for p in by_ops.points), reverse=True)
    measured = measure_front(g, replace_points(by_ops, 3), **data.sweep_kwargs(), shapes=shapes)
    for p in measured.points:   # what runs, counted on the rewritten graph
        assert p.bops == budget(g, qviz.apply(g, p.recipe, calibration=data.calibration, report=False).graph,
                                shapes).bops
    assert measured.float_bops == budget(g, g, shapes).float_bops
    cap = measured.points[1].bops
    assert measured.within_bops(cap).bops <= cap and measured.within_bops(1) is None
    assert main(["sensitivity", str(sample_path("lenet_digits")), "--bits", "8", "4", "2", "--bops", "15M",
                 "--checkpoint", str(tmp_path / "s.json")]) == 0
    printed = capsys.readouterr().out
    assert "least noise per bit-op saved first" in printed and "the best recipe within 15 M bit-ops:" in printed
    assert main(["sensitivity", str(sample_path("lenet_digits")), "--bits", "8", "4", "2", "--bops", "1k",
                 "--checkpoint", str(tmp_path / "s.json")]) == 2
    assert "--bops 1 k: no recipe is that cheap; the cheapest takes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sensitivity", str(sample_path("lenet_digits")), "--bops", "lots"])
    assert "'lots' is not a count such as 1500" in capsys.readouterr().err


def replace_points(front, n):
    """``front`` with its first ``n`` points only (measuring every one is the slow part)."""
    from dataclasses import replace

    return replace(front, points=front.points[:n])


def test_a_bit_ops_search_without_output_shapes_says_so():
    from qviz.analysis.sensitivity import Sensitivity

    s = Sensitivity(("a", "b"), (8, 4), np.array([[50.0, 26], [50, 40]]), np.array([[60.0, 30], [60, 30]]))
    with pytest.raises(ValueError, match="bit-operations need each layer's output shape, not known for b"):
        search(s, {"a": 10, "b": 10}, macs={"a": 100})
    with pytest.raises(SystemExit):     # one budget at a time
        main(["sensitivity", str(sample_path("lenet_digits")), "--size-kb", "20", "--bops", "8M"])
