"""What to quantize, at which bits, with which range options.

The defaults are the ones TensorFlow Lite's integer kernels run as simulated:
weights symmetric (zero point 0, which TFLite's int8 conv and fully-connected
kernels require) and narrow-range (levels ``[−(2^(b−1)−1), 2^(b−1)−1]``);
activations asymmetric (their own zero point, as TFLite stores them).

>>> QuantizeConfig({"conv1": LayerBits(4, 8)}).weight_symmetric
True
>>> LayerBits(1, 8)
Traceback (most recent call last):
...
ValueError: weight_bits must be between 2 and 16, got 1
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..choices import MAX_BITS, MIN_BITS

__all__ = ["LayerBits", "QuantizeConfig", "MIN_BITS", "MAX_BITS"]



def _check_bits(value, what: str):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what} must be an integer number of bits or None, not {value!r}")
    if not MIN_BITS <= value <= MAX_BITS:
        raise ValueError(f"{what} must be between {MIN_BITS} and {MAX_BITS}, got {value}")


@dataclass(frozen=True)
class LayerBits:
    """Bit widths for one layer; ``None`` leaves that part float.

    A bypass ``Add`` has no weights: only its ``activation_bits`` count.
    """

    weight_bits: int | None = 8
    activation_bits: int | None = 8

    def __post_init__(self):
        _check_bits(self.weight_bits, "weight_bits")
        _check_bits(self.activation_bits, "activation_bits")

    @property
    def short(self) -> str:
        """``w4a8``, ``a8`` (no weight bits), ``w8`` (float activations) or ``float``.

        >>> LayerBits(4, 8).short, LayerBits(None, 8).short, LayerBits(None, None).short
        ('w4a8', 'a8', 'float')
        """
        text = (f"w{self.weight_bits}" if self.weight_bits else "") + \
            (f"a{self.activation_bits}" if self.activation_bits else "")
        return text or "float"


@dataclass(frozen=True)
class QuantizeConfig:
    """What to quantize: ``layers`` maps layer names (conv/dense layers and bypass
    ``Add`` layers, see :func:`~qviz.passes.quant_points.quantizable_units`) to their bits.

    Options apply to every layer: ``narrow_range`` weights (levels
    ``[1, 2^b − 1]``), ``weight_symmetric`` and ``activation_symmetric`` ranges
    (``[−m, m]``), ``per_channel`` weights, ``ema_decay`` for activation
    calibration (``None``: min/max), and ``int32_bias``: put each integer
    layer's bias on TFLite's int32 grid (input LSB × weight LSB), as the
    converter does (``False`` leaves biases float, as a QAT model trains them).
    """

    layers: Mapping[str, LayerBits] = field(default_factory=dict)
    narrow_range: bool = True
    weight_symmetric: bool = True
    activation_symmetric: bool = False
    per_channel: bool = False
    ema_decay: float | None = None
    int32_bias: bool = True
