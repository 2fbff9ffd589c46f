"""The sensitivity sweep and the recipe it suggests."""

import json

import pytest

import qviz
from qviz.samples import data_for
from qviz.analysis.sensitivity import sensitivity
from qviz.cli import main


@pytest.fixture(scope="module")
def sweep(samples):
    graph = qviz.load(samples["lenet_digits"])
    calls = []
    result = sensitivity(graph, bits=(8, 4, 2), **data_for(graph).sweep_kwargs(),
                         progress=lambda done, total: calls.append((done, total)))
    return graph, result, calls


def test_fewer_bits_hurt_every_layer(sweep):
    _, s, calls = sweep
    assert s.layers == ("conv1", "conv2", "fc1", "logits")
    for table in (s.weight_sqnr, s.activation_sqnr):
        assert (table[:, 0] > table[:, 1]).all() and (table[:, 1] > table[:, 2]).all()
    assert s.weight_accuracy[:, 0].min() > 0.99          # one layer at 8 bits: as good as float
    assert calls[-1] == (24, 24) and len(calls) == 24   # 4 layers x 2 kinds x 3 widths


def test_suggested_recipe_meets_its_target(sweep):
    graph, s, _ = sweep
    strict, loose = s.suggest(30.0), s.suggest(10.0)
    assert qviz.apply(graph, strict, **data_for(graph).apply_kwargs()).report.sqnr_db >= 30.0
    total = lambda r: sum(b.weight_bits + b.activation_bits for b in r.quantize_layers.values())  # noqa: E731
    assert total(loose) < total(strict)
    assert all(b.weight_bits in (8, 4, 2) for b in strict.quantize_layers.values())


def test_cli_writes_the_suggestion(samples, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)     # the sweep's checkpoint is written beside, not in the checkout
    out = tmp_path / "s.json"
    assert main(["sensitivity", str(samples["lenet_digits"]), "--bits", "8", "4",
                 "--target-sqnr", "20", "--recipe-out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "w8" in text and "a4" in text and "suggested recipe" in text
    recipe = qviz.Recipe.from_json(out.read_text())
    assert set(recipe.quantize_layers) == {"conv1", "conv2", "fc1", "logits"}
    assert json.loads(out.read_text())["fold"]["default"] is True
    assert (tmp_path / "lenet_digits.sensitivity.json").is_file()


def test_a_stopped_sweep_resumes_from_its_checkpoint(tmp_path, samples):
    import json

    import numpy as np

    from qviz.analysis import sensitivity
    from qviz.analysis.sensitivity import CheckpointError

    g = qviz.load(samples["lenet_digits"])
    x = np.random.default_rng(1).normal(size=(8, 8, 8, 1)).astype("float32")
    ckpt = tmp_path / "sweep.json"
    first = sensitivity(g, bits=(8,), inputs=[x], checkpoint=ckpt)
    data = json.loads(ckpt.read_text())
    assert len(data["cells"]) == 2 * len(first.layers)        # every measurement was saved as it was made
    key = json.dumps(["w", first.layers[0], 8])
    data["cells"][key] = [12.5, None]                         # a value no measurement would give
    ckpt.write_text(json.dumps(data))
    del data["cells"][json.dumps(["a", first.layers[-1], 8])]   # as if stopped before the last measurement
    ckpt.write_text(json.dumps(data))
    calls = []
    again = sensitivity(g, bits=(8,), inputs=[x], checkpoint=ckpt, progress=lambda d, t: calls.append((d, t)))
    assert again.weight_sqnr[0, 0] == 12.5                    # read back, not re-measured
    assert calls == [(1, 1)]   # the bar counts the one measurement left, not the ones read
    assert again.activation_sqnr[-1, 0] == first.activation_sqnr[-1, 0]   # measured again, as before
    with pytest.raises(CheckpointError, match="other inputs"):   # other inputs: not mixed, not overwritten
        sensitivity(g, bits=(8,), inputs=[x + 1], checkpoint=ckpt)
    assert sensitivity(g, bits=(8,), inputs=[x + 1], checkpoint=tmp_path / "other.json").weight_sqnr[0, 0] != 12.5


def test_progress_bar_in_a_log_prints_a_line_per_tenth():
    import io

    from qviz.cli import _ProgressBar

    out = io.StringIO()
    bar = _ProgressBar("measuring", out)
    for done in range(1, 101):
        bar(done, 100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 11 and lines[0].startswith("measuring: 1/100")   # the start, then each tenth
    assert lines[-1].startswith("measuring: 100/100, done in")


def test_a_suggestion_that_cannot_meet_the_target_says_so(samples, capsys, tmp_path):
    """Issue 18.4: a 4-bit-only sweep suggested 4/4 everywhere 'for ≥ 30 dB' though layers reach 20 dB."""
    import qviz
    from qviz.cli import main

    result = sensitivity(qviz.load(samples["lenet_digits"]), bits=(4,))
    short = result.shortfalls(30.0)
    assert short and all("dB short of" in line for line in short)
    assert result.shortfalls(5.0) == []
    assert main(["sensitivity", str(samples["lenet_digits"]), "--bits", "4", "--target-sqnr", "30",
                 "--checkpoint", str(tmp_path / "sweep.json")]) == 0
    captured = capsys.readouterr()
    assert "(not met: see the warning)" in captured.out
    assert "qviz: warning: the widths swept cannot reach 30 dB overall" in captured.err


def test_a_checkpoint_that_is_not_this_sweeps_is_refused_not_overwritten(tmp_path, samples):
    """A recipe given as the checkpoint by mistake, another model's measurements, a directory,
    a folder that does not exist: refused in one line naming the file, before any
    measurement, and the file left as it was (a recipe was overwritten with measurements)."""
    import json

    import os

    import numpy as np

    from qviz.analysis.sensitivity import CheckpointError

    g = qviz.load(samples["lenet_digits"])
    x = np.random.default_rng(1).normal(size=(2, 8, 8, 1)).astype("float32")
    recipe = tmp_path / "recipe.json"
    recipe.write_text(qviz.Recipe.default(g).to_json())
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"fingerprint": "0" * 32, "cells": {json.dumps(["w", "conv1", 8]): [40.0, None]}}))
    (tmp_path / "adir.json").mkdir()
    os.mkfifo(tmp_path / "fifo.json")   # (never opened: a read would wait for a writer)
    truncated = tmp_path / "truncated.json"
    truncated.write_text(other.read_text()[:20])
    for path, said in ((recipe, "not a qviz sensitivity checkpoint"), (other, "another model or other inputs"),
                       (tmp_path / "adir.json", "not a regular file"), (tmp_path / "fifo.json", "not a regular file"),
                       (truncated, "not a qviz sensitivity checkpoint"),
                       (tmp_path / "none" / "x.json", "no such directory")):
        before = path.read_bytes() if path.is_file() else None
        with pytest.raises(CheckpointError, match=said) as caught:
            sensitivity(g, bits=(8,), inputs=[x], checkpoint=path, progress=lambda *_: pytest.fail("measured"))
        assert str(path) in str(caught.value) and "\n" not in str(caught.value)
        assert (path.read_bytes() if path.is_file() else None) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir.json", "fifo.json", "other.json", "recipe.json",
                                                          "truncated.json"]   # no temp files


def test_a_width_given_twice_is_measured_once(samples):
    """`--bits 8 8 4` printed two w8 columns and measured them twice."""
    g = qviz.load(samples["lenet_digits"])
    done = []
    result = sensitivity(g, bits=(8, 8), layers=["conv1"], progress=lambda d, t: done.append(t))
    assert result.bits == (8,) and done[-1] == 2      # conv1's weights and its activations, at 8 bits
