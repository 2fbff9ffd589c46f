"""The built-in patterns: where batch norms fold, where activations and bypasses sit.

Each entry of :data:`BUILTIN` is written in the pattern language, so what the
passes match is exactly what a user can read, copy and edit in the UI. The
diagrams read from the graph input (top) to the pattern root (bottom); ``?``
marks a node that may be absent.

>>> sorted(BUILTIN)
['bypass_add', 'conv_bn', 'conv_bn_fused', 'conv_bn_unfused', 'layer_activation', 'post_activation_bypass']
>>> print(builtin_doc("conv_bn_fused").splitlines()[0])
A conv/dense layer whose output feeds a fused batch norm.
"""

from __future__ import annotations

from ..ir.ops import BATCH_NORM_OPS, LAYER_OPS
from ..matcher import Pattern
from .language import parse

__all__ = ["BUILTIN", "BUILTIN_TEXT", "builtin_doc"]

_LAYER = f"{'|'.join(LAYER_OPS)}(* as input, * as weights) as layer"      # Conv2D|DepthwiseConv2dNative|MatMul
# Atrous convs are wrapped in SpaceToBatchND/BatchToSpaceND; the bias comes after.
_LAYER_OUT = (f"Identity?(BiasAdd?(BatchToSpaceND?({_LAYER}, *, *) as batch_to_space, "
              f"* as bias) as bias_add) as identity")
_FUSED = (f"{'|'.join(sorted(BATCH_NORM_OPS))}({_LAYER_OUT}, * as gamma, * as beta, "
          f"* as mean, * as variance) as bn")
# Keras 3 (and tf_keras on rank-2 inputs) freeze BatchNormalization unfused:
#   scale = Rsqrt(variance + epsilon) * gamma;  y = x * scale + (beta - mean * scale)
_SCALE = ("oneof(Mul{Rsqrt(Add|AddV2{* as variance, * as epsilon}) as rsqrt, * as gamma}, "
          "Rsqrt(Add|AddV2{* as variance, * as epsilon}) as rsqrt) as scale")
# Without beta (center=False) the shift is Neg(mean) * scale.
_SHIFT = "oneof(Sub(* as beta, Mul{* as mean, $scale}), Mul{Neg(* as mean), $scale}) as shift"
_UNFUSED = f"Add|AddV2{{Mul{{{_LAYER_OUT}, {_SCALE}}} as scaled, {_SHIFT}}} as bn"
_LAYER_RESULT = f"oneof({_FUSED}, {_UNFUSED}, {_LAYER_OUT}) as layer_output"

#: name → (pattern text, docstring with diagram)
_DEFS: dict[str, tuple[str, str]] = {
    "conv_bn_fused": (_FUSED, """A conv/dense layer whose output feeds a fused batch norm.

        input   weights
            \\   /
        Conv2D | DepthwiseConv2dNative | MatMul      (layer)
              |
        BatchToSpaceND?  (atrous conv)
              |
        BiasAdd?  <- bias
              |
        Identity?
              |
        FusedBatchNorm | FusedBatchNormV3  <- gamma, beta, mean, variance   (bn)
    """),
    "conv_bn_unfused": (_UNFUSED, """A conv/dense layer followed by an unfused (Keras 3) batch norm.

        layer output (as in conv_bn_fused)     variance  epsilon
              |                                     \\    /
              |                                      AddV2
              |                                        |
              |                                      Rsqrt   gamma
              |                                        \\     /
              +-------------- Mul ---------------------- Mul (scale)
                              |                          |
                              |             mean ----- Mul
                              |                          |
                              |             beta ----- Sub (shift)
                              |                          |
                              +--------- AddV2 ----------+          (bn)

    Operands of Mul and AddV2 match in either order. The two uses of ``scale``
    must be the same node. Without gamma (``scale=False``), Rsqrt is the scale;
    without beta (``center=False``), the shift is ``Neg(mean)·scale``.
    """),
    "conv_bn": (f"oneof({_FUSED}, {_UNFUSED}) as conv_bn",
                """A conv/dense layer followed by a batch norm, fused or unfused.

        Conv2D | DepthwiseConv2dNative | MatMul     (layer)
              |
        (BatchToSpaceND? BiasAdd? Identity?)
              |
        FusedBatchNorm*  or  the unfused chain      (bn; see conv_bn_fused / conv_bn_unfused)
    """),
    "layer_activation": (f"Relu|Relu6|Identity?({_LAYER_RESULT}) as activation",
                         """A conv/dense layer, with or without a batch norm, and its activation.

        layer (+ BiasAdd?) (+ batch norm?)     (layer_output)
              |
        Relu | Relu6 | Identity ?                (activation; may be absent)
    """),
    "bypass_add": (f"Relu|Relu6?(Add|AddV2{{{_LAYER_RESULT}, * as bypass_input}} as bypass) as activation",
                   """A layer's output added to a bypass branch before the activation (ResNet style).

        layer (+ batch norm?)     bypass_input
                    \\             /
                    Add | AddV2                (bypass)
                         |
                    Relu | Relu6 ?             (activation; may be absent)
    """),
    "post_activation_bypass": (
        f"Add|AddV2{{Relu|Relu6({_LAYER_RESULT}) as activation, * as bypass_input}} as post_bypass",
        """A bypass added after the layer's activation.

        layer (+ batch norm?)
              |
        Relu | Relu6          bypass_input
                    \\          /
                    Add | AddV2             (post_bypass)
    """),
}

#: name → pattern text
BUILTIN_TEXT: dict[str, str] = {name: text for name, (text, _) in _DEFS.items()}


def _build() -> dict[str, Pattern]:
    out = {}
    for name, (text, doc) in _DEFS.items():
        pattern = parse(text)
        pattern.doc = doc
        out[name] = pattern
    return out


#: name → pattern. Shared objects: treat as read-only.
BUILTIN: dict[str, Pattern] = _build()


def builtin_doc(name: str) -> str:
    """The docstring (with its diagram) of a built-in pattern."""
    if name not in _DEFS:
        raise KeyError(f"no built-in pattern {name!r}; built-ins: {', '.join(_DEFS)}")
    return _DEFS[name][1]
