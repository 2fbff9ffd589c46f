"""The words the app uses, each in one or two sentences a newcomer can follow:
shown as tooltips where the word appears and as a glossary under the fold explainer.

>>> sorted(GLOSSARY)[:3]
['AddV2', 'FakeQuant', 'Foldable']
>>> glossary_view().children[0].children
'Glossary'
"""

from __future__ import annotations

from dash import html

__all__ = ["GLOSSARY", "term", "glossary_view"]

GLOSSARY = {
    "SQNR": "Signal-to-quantization-noise ratio, in dB: how much bigger the float output is than the error the "
            "rewrite adds. Each 6 dB is about one more bit of precision; higher is better, ∞ means exact.",
    "max |Δ|": "The largest absolute difference between an output of the float model and the same output of the "
               "rewritten one, over the inputs checked.",
    "relative": "max |Δ| divided by the largest absolute value of the float model's output, over the inputs "
                "checked: 0.01 means the worst error is 1% of the output's scale.",
    "batch norm": "Batch normalization: per channel, y = γ(x − μ)/√(σ² + ε) + β, with μ and σ² the mean and "
                  "variance measured in training and γ, β learned. At inference it is a fixed scale and shift.",
    "fold": "Merging a batch norm into the conv or dense layer before it: its scale goes into the weights and "
            "its shift into the bias, so one layer does the work of two.",
    "Foldable": "The batch norm directly follows a conv/dense layer and nothing else reads that layer's output, "
                "so it can be merged into it.",
    "unfused": "A batch norm written as separate ops (Rsqrt, Mul, Sub, AddV2), as Keras 3 freezes it; "
               "'fused' is the single FusedBatchNormV3 op of Keras 2.",
    "AddV2": "TensorFlow's element-wise addition op (x + y).",
    "FakeQuant": "An op that rounds a tensor to the values an integer of some bits can hold and back to float, "
                 "so the float model shows the error the integer model will have.",
    "per-tensor": "One scale (quantization step) for the whole tensor.",
    "per-channel": "One scale for each output channel: a channel of small weights keeps a fine grid.",
    "narrow range": "Using 2^b − 1 levels instead of 2^b (for 8 bits: −127…127, not −128…127) so the grid is "
                    "symmetric around zero, as TFLite wants for weights.",
    "symmetric": "A range centred on zero (−m … m), so zero is exactly a level with zero point 0.",
    "rounding": "The error of a value inside the quantization range: it moves to the nearest level, at most half "
                "a step away. Fewer bits, wider steps, more rounding error.",
    "clipping": "The error of a value outside the range: it is cut to the range's end. A wider range clips less "
                "but makes every step wider.",
    "freeze_batch_norm_delay": "In quantization-aware training, the step after which the batch norm uses its "
                               "moving mean and variance instead of each batch's.",
    "correction_*": "In TF's training-mode fold, the factors (correction_scale, correction_recip, "
                    "correction_offset) that make the folded layer output what layer → batch norm would, while "
                    "the weights are quantized with the moving statistics.",
}


def term(word: str, text: str | None = None):
    """``word`` (or ``text``) with its glossary entry as a tooltip."""
    return html.Abbr(text or word, title=GLOSSARY[word], className="term")


def glossary_view():
    return html.Details([html.Summary("Glossary"),
                         html.Dl([part for word, meaning in GLOSSARY.items()
                                  for part in (html.Dt(word), html.Dd(meaning))], className="glossary")],
                        className="glossary-box")
