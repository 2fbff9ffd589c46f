"""Issue 19.5: each output channel's weight range before and after the fold, and the
error each quantization scheme gives — computed as TensorFlow's FakeQuant ops compute
it, on the weights the fold pass really writes."""

from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

import qviz
from qviz.analysis.channel_ranges import channel_ranges, channel_ranges_of
from qviz.analysis.quant_grid import fake_quant
from qviz.metrics.report import sqnr_db
from qviz.passes import fold_batch_norms, fold_candidates
from qviz.passes.constants import constant_value


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("narrow", [True, False])
def test_fake_quant_is_tensorflows_per_tensor_and_per_channel(bits, narrow):
    rng = np.random.default_rng(bits)
    w = rng.normal(size=(3, 3, 4, 6)).astype(np.float32) * np.linspace(0.1, 3, 6, dtype=np.float32)
    lo, hi = -1.3, 0.7      # an asymmetric range: the nudge moves it
    want = tf.quantization.fake_quant_with_min_max_vars(w, lo, hi, num_bits=bits, narrow_range=narrow).numpy()
    np.testing.assert_allclose(fake_quant(w, lo, hi, bits, narrow), want, atol=1e-6)
    clo, chi = w.min(axis=(0, 1, 2)), w.max(axis=(0, 1, 2))
    want = tf.quantization.fake_quant_with_min_max_vars_per_channel(
        w, clo, chi, num_bits=bits, narrow_range=narrow).numpy()
    np.testing.assert_allclose(fake_quant(w, clo, chi, bits, narrow), want, atol=1e-6)


def test_ranges_are_the_weights_before_and_after_the_fold_pass(samples):
    g = qviz.load(samples["lenet_digits"])
    r = channel_ranges(g, "conv2", bits=4)
    cand = next(c for c in fold_candidates(g) if c.layer == "conv2")
    kernel = constant_value(g, cand.match.layer_op.inputs[1])
    np.testing.assert_allclose(r.before.hi, np.maximum(kernel.max(axis=(0, 1, 2)), 0), rtol=1e-6)
    np.testing.assert_allclose(r.before.lo, np.minimum(kernel.min(axis=(0, 1, 2)), 0), rtol=1e-6)
    folded = fold_batch_norms(g, ["conv2"]).graph
    conv = next(n for n in folded.nodes if n.layer == "conv2" and n.op == "Conv2D")
    new_kernel = constant_value(folded, conv.inputs[1])
    np.testing.assert_allclose(r.after.hi, np.maximum(new_kernel.max(axis=(0, 1, 2)), 0), rtol=1e-5)
    # the per-tensor error after the fold is the error of the kernel through TF's FakeQuant at 4 bits
    m = float(np.abs(new_kernel).max())
    q = tf.quantization.fake_quant_with_min_max_vars(new_kernel, -m, m, num_bits=4, narrow_range=True).numpy()
    assert r.error("after fold", "per-tensor").sqnr_db == pytest.approx(float(sqnr_db(q, new_kernel)), abs=1e-3)
    assert "At 4 bits, per-tensor SQNR goes from" in r.summary()


def test_a_fold_that_spreads_the_channels_hurts_per_tensor_not_per_channel():
    # two channels of equal range; the batch norm scales one by 1, the other by 1/50
    w = np.stack([np.linspace(-1, 1, 27), np.linspace(-1, 1, 27)[::-1] * 0.9], axis=-1).reshape(3, 3, 3, 2)
    s = np.array([1.0, 0.02])
    values = SimpleNamespace(weights=w, folded_weights=w * s, multiplier=s)
    r = channel_ranges_of(values, "Conv2D", "conv", "bn", bits=4)
    np.testing.assert_allclose(r.after.width, r.before.width * s, rtol=1e-6)
    before, after = r.error("before fold", "per-tensor"), r.error("after fold", "per-tensor")
    assert after.channel_sqnr_db[1] < before.channel_sqnr_db[1] - 20      # channel 1 lost its grid
    per_channel = r.error("after fold", "per-channel")
    assert per_channel.channel_sqnr_db[1] == pytest.approx(r.error("before fold", "per-channel").channel_sqnr_db[1],
                                                           abs=0.01)   # scaling a channel alone changes nothing
    channel, steps = r.steps_of_narrowest()
    assert channel == 1 and steps == pytest.approx(14 * 0.9 * 0.02 / 1.0, rel=1e-3)


def test_depthwise_channels_are_input_times_multiplier(samples):
    g = qviz.load(samples["mobilenet_block"])
    cand = next(c for c in fold_candidates(g) if c.match.layer_op.op == "DepthwiseConv2dNative")
    r = channel_ranges(g, cand.layer, bits=8)
    h, w, cin, mult = cand.values.weights.shape
    assert r.channels == cin * mult == len(r.before.lo) == len(r.error("after fold", "per-channel").channel_sqnr_db)


def test_a_layer_without_a_batch_norm_or_a_bad_width_says_so(samples):
    g = qviz.load(samples["lenet_digits"])
    with pytest.raises(ValueError, match="'logits' has no batch norm after it"):
        channel_ranges(g, "logits")
    with pytest.raises(ValueError, match="bits must be 2 to 16, not 1"):
        channel_ranges(g, "conv1", bits=1)


@pytest.mark.parametrize("lo, hi, bits, narrow", [(-1.0, 1.0, 3, False), (-0.5, 2.0, 4, False), (0.0, 6.0, 8, False),
                                                  (-1.0, 1.0, 2, True)])
def test_error_split_adds_up_to_tensorflows_error_and_the_levels_are_its_outputs(lo, hi, bits, narrow):
    from qviz.analysis.quant_grid import error_split, quant_levels

    v = np.random.default_rng(bits).normal(0.3, 1.2, size=5000).astype(np.float32)
    q = tf.quantization.fake_quant_with_min_max_vars(v, lo, hi, num_bits=bits, narrow_range=narrow).numpy()
    e = error_split(v, lo, hi, bits, narrow)
    assert e.rounding + e.clipping == pytest.approx(float(np.mean((v.astype(np.float64) - q) ** 2)), rel=1e-6)
    levels = quant_levels(lo, hi, bits, narrow)
    assert np.isclose(np.unique(q)[:, None], levels[None, :], atol=1e-6).any(axis=1).all()   # (-1, 1, 3): a .5 tie
    assert e.clipped == pytest.approx(float(np.mean((v < levels[0]) | (v > levels[-1]))), abs=1e-3)


def test_a_symmetric_range_of_the_largest_weight_clips_nothing():
    """The range [-max|w|, max|w|] holds every weight: the node panel said "0.17 % of values
    outside the range" (clipping error 4e-19) where the grid's end fell a float32 round-off
    short of the largest one."""
    import numpy as np

    from qviz.analysis.quant_grid import error_split

    for seed in range(20):
        w = np.random.default_rng(seed).normal(size=600).astype(np.float32) * 0.07
        m = float(np.abs(w).max())
        for bits in (2, 3, 4, 6, 8):
            e = error_split(w, -m, m, bits, narrow_range=True)
            assert e.clipped == 0.0 and e.clipping == 0.0, (seed, bits, e)
    assert error_split(np.array([0.5, 1.5], np.float32), -1.0, 1.0, 8, narrow_range=True).clipped == 0.5
