"""The TensorFlow op types qviz gives meaning to, in one place, and the
channel layout of the weights of each layer op.

Every pass, view and check that asks "is this a conv?", "a batch norm?", "a
fake quant?" reads these names, so a new op (``FusedBatchNormV2``,
``FakeQuantWithMinMaxArgs``) is added in one place.

>>> output_channels("DepthwiseConv2dNative", (3, 3, 8, 2))    # [h, w, in, multiplier]
16
>>> channel_scale_shape("DepthwiseConv2dNative", (3, 3, 8, 2)) # s laid out as [in, multiplier]
(8, 2)
>>> channel_scale_shape("MatMul", (10, 4), transpose_b=True)   # [out, in]: scale the rows
(10, 1)
>>> channels_last_shape("DepthwiseConv2dNative", (3, 3, 8, 2))
(3, 3, 1, 16)
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LAYER_OPS", "DEPTHWISE", "MATMUL", "FAKE_QUANT", "FAKE_QUANT_PER_CHANNEL", "KIND_OF_OP", "BATCH_NORM_OPS", "FAKE_QUANT_OPS", "ACTIVATION_OPS",
           "FUSED_ACTIVATIONS", "ADD_OPS", "TFLITE_FUSED_CHAIN", "CONV_LIKE_OPS", "LOOP_OPS", "LOOP_BACK_OPS",
           "output_channels", "channel_scale_shape", "channels_last_shape"]

#: The layer ops batch norms fold into and weights are quantized in.
LAYER_OPS = ("Conv2D", "DepthwiseConv2dNative", "MatMul")
DEPTHWISE = "DepthwiseConv2dNative"
MATMUL = "MatMul"   # a Dense layer: rank-2, no data_format, TFLite has no per-channel form of it
#: Layer op → the kind of Keras layer it came from (QAT rebuilds that layer).
KIND_OF_OP = {"Conv2D": "conv2d", "DepthwiseConv2dNative": "depthwise", "MatMul": "dense"}
#: Ops that draw as a conv/dense in the graph view (more than qviz rewrites).
CONV_LIKE_OPS = frozenset(LAYER_OPS) | {"Conv3D", "BatchMatMulV2"}

#: TensorFlow's single-op batch norms (tf_keras freezes to V3; the unfused
#: Keras 3 chain is recognized by pattern, not by op type).
BATCH_NORM_OPS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
#: Fake quantization: what qviz inserts (one range per tensor, or per output
#: channel) and every form it reads.
FAKE_QUANT = "FakeQuantWithMinMaxVars"
FAKE_QUANT_PER_CHANNEL = "FakeQuantWithMinMaxVarsPerChannel"
FAKE_QUANT_OPS = frozenset({FAKE_QUANT, FAKE_QUANT_PER_CHANNEL, "FakeQuantWithMinMaxArgs"})
ACTIVATION_OPS = frozenset({"Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Sigmoid", "Tanh", "Softmax",
                            "Softplus", "Softsign", "Gelu"})
#: Activations TFLite fuses into the conv/dense/add before them.
FUSED_ACTIVATIONS = frozenset({"Relu", "Relu6"})
ADD_OPS = frozenset({"Add", "AddV2"})
#: An op that computes nothing: freezing leaves one holding control edges to a model's ops.
NO_OP = "NoOp"
#: What TFLite's converter folds into one int8 conv/dense op after the layer op.
TFLITE_FUSED_CHAIN = frozenset({"BiasAdd", "Relu", "Relu6", "Identity", "BatchToSpaceND"})
#: A traced function's loops, before freezing lowers them to TF1 control flow.
LOOP_OPS = frozenset({"While", "StatelessWhile"})
#: Ops through which a TF1 ``while_loop`` closes its cycle (``NextIteration`` → ``Merge``).
LOOP_BACK_OPS = frozenset({"NextIteration", "RefNextIteration"})


def output_channels(op: str, weights_shape: Sequence[int], transpose_b: bool = False) -> int:
    """How many output channels a layer op's weights make.

    Conv ``[h, w, in, out]``: ``out``; depthwise ``[h, w, in, multiplier]``:
    ``in·multiplier``; MatMul ``[in, out]`` (``[out, in]`` with ``transpose_b``).
    """
    if op == MATMUL:
        return weights_shape[0] if transpose_b else weights_shape[1]
    if op == DEPTHWISE:
        return weights_shape[2] * weights_shape[3]
    return weights_shape[-1]


def channel_scale_shape(op: str, weights_shape: Sequence[int], transpose_b: bool = False) -> tuple[int, ...] | None:
    """The shape a per-output-channel vector takes to scale the weights by
    broadcasting (None: as it is, along the last axis)."""
    if op == DEPTHWISE:
        return (weights_shape[2], weights_shape[3])
    if op == MATMUL and transpose_b:
        return (weights_shape[0], 1)
    return None


def channels_last_shape(op: str, weights_shape: Sequence[int]) -> tuple[int, ...]:
    """The weights' shape with the output channels alone on the last axis (what
    per-channel ops and per-channel norms work along)."""
    shape = tuple(weights_shape)
    if op == DEPTHWISE:      # [h, w, in, mult] → [h, w, 1, in·mult]
        return (shape[0], shape[1], 1, shape[2] * shape[3])
    return shape
