"""Issue 20.6: the fold worked through for one channel uses the model's own numbers,
and every number in it is the one the fold pass computes."""

import re

import numpy as np
import pytest

import qviz
from qviz.analysis.fold_explainer import worked_channel
from qviz.passes import fold_candidates


@pytest.mark.parametrize("sample, channel", [("lenet_digits", 3), ("mobilenet_block", 5)])
def test_worked_channel_is_the_fold_passs_numbers(samples, sample, channel):
    g = qviz.load(samples[sample])
    cand = next(c for c in fold_candidates(g) if c.foldable)
    v = cand.values
    lines = worked_channel(v, cand.match.layer_op.op, channel)
    last = [float(re.findall(r"[-\d.e+]+", line.split(" = ")[-1])[-1]) for line in lines[:3]]
    want = [np.ravel(v.multiplier)[channel], np.ravel(v.offset)[channel], np.ravel(v.folded_bias)[channel]]
    np.testing.assert_allclose(last, want, rtol=1e-3)
    assert lines[0].startswith("s" + str(channel).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")))
    before, after = map(float, re.search(r"largest, (\S+), becomes (\S+)$", lines[3]).groups())
    assert after == pytest.approx(before * np.ravel(v.multiplier)[channel], rel=2e-3)


def test_a_root_near_one_is_shown_precisely_enough_to_divide():
    """A batch norm at its start (σ² = 1, ε = 0.001) read "1 / √(1 + 0.001) = 1 / 1 = 0.9995"."""
    from dataclasses import replace

    g = qviz.load(qviz.samples.sample_path("lenet_digits"))
    cand = next(c for c in fold_candidates(g) if c.foldable)
    v = replace(cand.values, gamma=np.ones_like(cand.values.gamma), variance=np.ones_like(cand.values.variance),
                epsilon=0.001)
    line = worked_channel(v, cand.match.layer_op.op, 0)[0]
    assert "/ 1.0005 = " in line, line


def test_a_batch_norm_named_explains_its_own_fold():
    """``--explain bn2`` said "layer 'bn2' has no batch norm after it"."""
    from qviz.analysis.fold_explainer import foldable_candidate

    g = qviz.load(qviz.samples.sample_path("lenet_digits"))
    assert foldable_candidate(g, "bn2").layer == "conv2"
    with pytest.raises(ValueError, match="'logits' has no batch norm after it"):
        foldable_candidate(g, "logits")
