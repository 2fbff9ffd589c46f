"""A recipe's size and bit-operations, checked against Keras' own layers: the float
model's weights are its conv/dense kernels, its MACs their sizes times the output
positions Keras reports."""

import math

import keras

import qviz
from qviz.analysis.budget import budget
from qviz.passes import LayerBits
from qviz.runtime import tensor_shapes


def _keras_cost(model):
    weights = macs = 0
    for layer in model.layers:
        if isinstance(layer, (keras.layers.Conv2D, keras.layers.DepthwiseConv2D, keras.layers.Dense)):
            kernel = int(math.prod(layer.kernel.shape))
            positions = math.prod(layer.output.shape[1:-1]) if not isinstance(layer, keras.layers.Dense) else 1
            weights += kernel
            macs += kernel * positions
    return weights, macs


def test_float_cost_is_keras_kernels_and_macs(samples):
    model = keras.saving.load_model(samples["lenet_digits"], compile=False)
    weights, macs = _keras_cost(model)
    g = qviz.load(samples["lenet_digits"])
    cost = budget(g, g, tensor_shapes(g))
    assert cost.float_weight_bits == 32 * weights and cost.weight_bits == cost.float_weight_bits
    assert cost.float_bops == 32 * 32 * macs == cost.bops


def test_mixed_widths_count_each_layers_weights_and_the_width_feeding_it(samples):
    g = qviz.load(samples["lenet_digits"])
    recipe = qviz.Recipe(fold_default=True, quantize_default=LayerBits(8, 8)).with_bits("conv2", LayerBits(4, 8))
    cost = budget(g, qviz.apply(g, recipe, report=False).graph, tensor_shapes(g))
    model = keras.saving.load_model(samples["lenet_digits"], compile=False)
    kernels = {l.name: int(math.prod(l.kernel.shape)) for l in model.layers if hasattr(l, "kernel")}
    assert cost.weight_bits == 8 * sum(kernels.values()) - 4 * kernels["conv2"]
    assert 0 < cost.bops < cost.float_bops / 16   # 8×8 everywhere would be exactly 1/16
    float_layer = budget(g, qviz.apply(g, recipe.with_bits("conv2", None), report=False).graph, tensor_shapes(g))
    assert float_layer.weight_bits == 8 * sum(kernels.values()) + 24 * kernels["conv2"]   # conv2 left at 32


def test_without_shapes_size_is_known_and_bit_ops_are_not(samples):
    g = qviz.load(samples["lenet_digits"])
    cost = budget(g, g)
    assert cost.bops is None and "bit-ops once the output shapes are known" in cost.summary()
