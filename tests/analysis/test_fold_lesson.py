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
