"""One base for every error qviz raises about its input.

A :class:`QvizError` is the user's to fix (a bad file, a recipe naming a layer
the graph lacks, a bit width TFLite refuses); its message is one line that
names the input and the cause. Anything else escaping qviz is a bug: the CLI
and the app catch ``QvizError`` to tell the two apart.

>>> from qviz.ir import GraphError
>>> from qviz.passes import RecipeError
>>> issubclass(GraphError, QvizError) and issubclass(RecipeError, QvizError)
True
>>> issubclass(GraphError, ValueError)      # each keeps the builtin type it always had
True
"""

__all__ = ["QvizError", "ModelRunError"]


class QvizError(Exception):
    """An error in what the user gave qviz, with a one-line message for them."""


class ModelRunError(QvizError):
    """The model given cannot be run or calibrated as it is (an op TensorFlow does not
    know, no inputs, an input of unknown shape, values that overflow): a front end says
    which model."""
