"""The choices qviz offers, spelled once for the library, the CLI and the app:
bit widths, the sweep's widths, model file suffixes.

>>> bits_label(None), bits_label(4), parse_bits_label("float"), parse_bits_label("6")
('float', '4', None, 6)
>>> [bits_label(b) for b in BIT_MENU]
['float', '16', '8', '6', '4', '3', '2']
>>> is_keras_file("model.HDF5"), is_keras_file("model.pb")
(True, False)
"""

from __future__ import annotations

from pathlib import PurePath

__all__ = ["MIN_BITS", "MAX_BITS", "BIT_MENU", "SWEEP_BITS", "bits_label", "parse_bits_label", "bits_menu",
           "WEIGHT_METRICS", "KERAS_SUFFIXES", "GRAPHDEF_SUFFIXES", "MODEL_SUFFIXES", "is_keras_file", "MODEL_FORMATS"]

#: TensorFlow's FakeQuant ops accept 2 to 16 bits.
MIN_BITS, MAX_BITS = 2, 16
#: The widths a menu offers for one layer's weights or activations; None stays float.
BIT_MENU = (None, 16, 8, 6, 4, 3, 2)
#: The widths the sensitivity sweep measures by default.
SWEEP_BITS = (8, 6, 4, 3, 2)

#: The per-layer weight statistics qviz measures without data (qviz.analysis.weight_stats),
#: in menu order: the app's "colour by" and ``qviz node-data --metric``.
WEIGHT_METRICS = ("weight |max|", "weight kurtosis")

#: Keras model files: Keras 3 ``.keras``, HDF5 (Keras 2 / tf_keras, or Keras 3 legacy).
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")
#: Frozen TensorFlow graphs, binary and text.
GRAPHDEF_SUFFIXES = (".pb", ".pbtxt")
MODEL_SUFFIXES = KERAS_SUFFIXES + GRAPHDEF_SUFFIXES
MODEL_FORMATS = ".keras, .h5, .pb, .pbtxt, or a SavedModel directory"


def bits_label(bits: int | None) -> str:
    """How a width reads in a menu: ``"float"`` for None."""
    return "float" if bits is None else str(bits)


def bits_menu(current: int | None = None) -> list[str]:
    """The width menu's labels, with ``current`` in its place among them when a recipe or a
    rule set a width the menu does not offer (a menu without its value shows blank).

    >>> bits_menu(9)
    ['float', '16', '9', '8', '6', '4', '3', '2']
    >>> bits_menu(8) == [bits_label(b) for b in BIT_MENU]
    True
    """
    widths = list(BIT_MENU)
    if current not in widths:
        widths = [None, *sorted({*BIT_MENU[1:], current}, reverse=True)]
    return [bits_label(b) for b in widths]


def parse_bits_label(label) -> int | None:
    """The width a menu label (or an int) stands for; None for ``"float"`` or anything not a number."""
    if isinstance(label, int) and not isinstance(label, bool):
        return label
    return int(label) if isinstance(label, str) and label.isdigit() else None


def is_keras_file(path) -> bool:
    """Whether ``path`` names a Keras model file (by suffix, any case)."""
    return PurePath(str(path)).suffix.lower() in KERAS_SUFFIXES
