"""Tree patterns over the IR, with TensorFlow ``graph_matcher`` semantics.

A pattern describes an op and, recursively, the ops producing its inputs. A
match is rooted at one node and follows *inputs* (towards the graph's inputs).

>>> import numpy as np
>>> from qviz.ir import Graph, Node
>>> g = Graph([Node("x", "Placeholder"), Node("w", "Const"), Node("c", "Conv2D", ["x", "w"]),
...            Node("r", "Relu", ["c"])], inputs=["x"], outputs=["r"])
>>> pattern = OpTypePattern("Relu|Relu6", name="act",
...                         inputs=[OpTypePattern("Conv2D", name="conv", inputs=["*", "Const"])])
>>> [m.get_op("conv").name for m in GraphMatcher(pattern).match_graph(g)]
['c']
>>> print(explain(pattern, g, "c"))
c (Conv2D, layer c) does not match: it is a Conv2D, expected Relu|Relu6

Semantics, as in ``tensorflow.contrib.quantize``'s ``graph_matcher``:

* ``op_type`` ``'*'`` matches any op; ``'A|B'`` matches op types A or B exactly.
* With ``inputs`` given, the node must have exactly that many *data* inputs
  (control inputs never count), each matched positionally, or, with
  ``ordered_inputs=False``, under some permutation. With no inputs (``None`` or
  ``[]``), any inputs are accepted. A string input means ``OpTypePattern(that)``.
* :class:`OneofPattern` tries its alternatives in order; the first that matches wins.

Deliberate differences from the upstream implementation:

* A failed alternative (a permutation, a one-of branch, an absent optional
  node) never leaks its partial bindings into the result; upstream merged them
  before knowing the branch failed.
* A pattern object used twice in one tree must bind the *same* node both times
  (upstream silently rebound it). This is how a pattern says "this tensor feeds
  both ops", e.g. the shared ``γ·rsqrt(σ²+ε)`` factor of an unfused batch norm.
* The input limit applies only to unordered inputs (they try permutations):
  upstream applied it to ordered inputs too, where it guards nothing.

Extensions: attribute tests (``attrs={"data_format": "NHWC"}``, or a callable
predicate) and optional nodes (``optional=True``: the node may be absent, in
which case its *first* input pattern is matched in its place).

Modules: :mod:`.pattern` (the pattern objects), :mod:`.explain` (the reference
walk, which states these rules in code and says why a match failed),
:mod:`.compile` (the same rules compiled to Python functions: the fast path),
:mod:`.graph_matcher` (``GraphMatcher``, ``MatchResult``, ``find_matches``).
"""

from .compile import CompiledPattern, compile_pattern
from .explain import Failure, explain, explain_failure, explain_layer, nowhere, reference_match
from .graph_matcher import GraphMatcher, MatchResult, find_matches
from .pattern import (MAX_UNORDERED_INPUTS, AttrTest, OneofPattern, OpTypePattern, Pattern, check_pattern,
                      iter_patterns)

__all__ = [
    "Pattern", "OpTypePattern", "OneofPattern", "AttrTest", "GraphMatcher", "MatchResult",
    "Failure", "explain", "explain_failure", "explain_layer", "find_matches", "MAX_UNORDERED_INPUTS",
    "iter_patterns", "check_pattern", "reference_match", "compile_pattern", "CompiledPattern", "nowhere",
]
