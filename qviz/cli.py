"""The ``qviz`` command line. Each subcommand is a thin shell over the library."""

from __future__ import annotations

import argparse
import math
import os
import sys
import threading
from pathlib import Path

from .choices import SWEEP_BITS, WEIGHT_METRICS
from .errors import ModelRunError, QvizError

__all__ = ["main"]


def _shape(text: str) -> tuple[int, ...]:
    try:   # (an empty part, "8,,1", is refused: it read as 8,1)
        dims = tuple(int(d) for d in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"input shape {text!r} must be integers separated by commas, "
                                         "e.g. 28,28,1") from None
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"input shape {text!r} must be positive integers, e.g. 28,28,1")
    return dims


def _count(text: str) -> float:
    from .analysis.budget import parse_count

    try:
        return parse_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bits(text: str) -> int:
    from .choices import MAX_BITS, MIN_BITS

    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not MIN_BITS <= value <= MAX_BITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a bit width: give a whole number from {MIN_BITS} to "
                                         f"{MAX_BITS}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line (``qviz: error: …``) instead of a usage block."""

    def error(self, message):
        self.exit(2, f"qviz: error: {self.prog.split(' ', 1)[-1] + ': ' if ' ' in self.prog else ''}{message} "
                     f"(see {self.prog} --help)\n")


def _check_model_path(args) -> None:
    """Refuse a missing, empty or special file before TensorFlow is imported (seconds)."""
    from .importers.safety import DEFAULT_LIMITS, Limits, check_model_path

    limit = getattr(args, "max_model_mb", None)
    check_model_path(Path(args.model), args.model, DEFAULT_LIMITS if limit is None else Limits(int(limit * 2**20)))


def _check_output(path: str | None, suffixes: tuple[str, ...], what: str) -> None:
    if path is not None and Path(path).suffix.lower() not in suffixes:
        raise _UsageError(f"-o {path}: qviz writes {what}; name the file {' or '.join('*' + s for s in suffixes)}")


def _number(what: str, *, positive: bool = True):
    """An argparse type: a finite number of ``what`` (positive unless told): "nan" was taken
    as a target, and a --scale of 0 wrote a 1×1 PNG."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what}") from None
        if not math.isfinite(value) or (positive and not value > 0):
            raise argparse.ArgumentTypeError(f"{text!r} must be a {'positive' if positive else 'finite'} number "
                                             f"of {what}")
        return value

    return parse


_megabytes = _number("megabytes")
_decibels = _number("dB", positive=False)


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .keras, .h5, .pb, .pbtxt file or a SavedModel directory")
    p.add_argument("--input-shape", type=_shape, action="append", metavar="D1,D2,…",
                   help="shape of one example without the batch dimension (repeat for several inputs)")
    p.add_argument("--unsafe", action="store_true",
                   help="allow Keras Lambda layers and graph ops that touch files or run Python "
                        "(runs code from the file)")
    p.add_argument("--max-model-mb", type=_megabytes, default=None, metavar="MB",
                   help="largest model file (or unpacked archive) to read (default 2048)")


def _add_data_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", metavar="FILE.npz",
                   help="what to calibrate and verify on: a numpy .npz with x_calib (examples, axis 0), "
                        "x_test (default: x_calib) and y_test (class labels, optional); default: a bundled "
                        "sample's own data, else fixed-seed noise (said on stderr)")


def _data(args, graph):
    """What ``graph`` is calibrated and verified on: ``--data``, else :func:`qviz.samples.data_for`
    (noise for a model that is not a sample: said once, since ranges from noise are not
    the model's)."""
    from .samples import data_for, data_from_file, sample_name_of

    if getattr(args, "data", None):
        limit = getattr(args, "max_model_mb", None)
        return data_from_file(graph, args.data, **({} if limit is None else {"max_bytes": int(limit * 2**20)}))
    data = data_for(graph)
    if data.is_noise and not getattr(args, "_said_noise", False):
        args._said_noise = True
        sample = sample_name_of(graph.source) if graph.source else None
        why = f"the {sample} sample ships no data" if sample else "not a bundled sample"
        print(f"note: calibrated and verified on fixed-seed noise ({why}): activation ranges, "
              "errors and a quantized input's scale are the noise's, not your data's; give your data with "
              "--data FILE.npz", file=sys.stderr)
    return data


def _quiet_tensorflow() -> None:
    """Import TensorFlow without its start-up notices (:func:`qviz.runtime.import_quietly`)."""
    from .runtime import import_quietly

    import_quietly()


def _load_options(args) -> dict:
    """:func:`qviz.load`'s options from the command line (--input-shape, --unsafe, --max-model-mb)."""
    shape = args.input_shape
    if shape is not None and len(shape) == 1:
        shape = shape[0]
    limit = getattr(args, "max_model_mb", None)
    return {"input_shape": shape, "safe_mode": not args.unsafe,
            "max_bytes": None if limit is None else int(limit * 2**20)}


def _load(args, note: bool = True):
    """The model of ``args`` (``note``: say on stderr if it is fake-quantized already)."""
    from .importers import load
    from .passes.quant_points import quantized_note

    _check_model_path(args)
    _quiet_tensorflow()
    graph = load(args.model, **_load_options(args))
    said = quantized_note(graph) if note else None
    if said:
        print(f"note: {args.model}: {said}", file=sys.stderr)
    return graph


def _cmd_info(args) -> int:
    from .runtime import tensor_shapes
    from .summary import format_summary, summarize

    graph = _load(args, note=False)   # (the summary says it)
    print(format_summary(summarize(graph, tensor_shapes(graph)), title=f"model: {args.model}"))
    return 0


def _cmd_match(args) -> int:
    from .matcher import explain, explain_layer, find_matches, nowhere
    from .patterns import BUILTIN, parse

    if args.builtin is not None:
        if args.builtin not in BUILTIN:
            raise _UsageError(f"no built-in pattern {args.builtin!r}; choose from {', '.join(BUILTIN)}")
        pattern = BUILTIN[args.builtin]
    else:
        pattern = parse(args.pattern)
    graph = _load(args)
    if args.explain:
        if args.explain in graph:
            print(explain(pattern, graph, args.explain))
        elif args.explain in graph.layers:
            print(explain_layer(pattern, graph, args.explain))
        else:
            raise _UsageError(f"--explain {args.explain!r}: no node or layer of that name in {args.model}")
        return 0
    matches = find_matches(pattern, graph)
    why = nowhere(pattern, graph) if not matches and args.builtin is None else None   # (a typed op type: a typo?)
    print(f"{len(matches)} match(es)" + (f": {why}" if why else ""))
    for i, m in enumerate(matches, 1):
        print(f"{i:>4}. layer {m.root.layer}: {m.root.name} ({m.root.op})")
        for name, node in sorted(m.named().items()):
            print(f"        {name:<16} {node.name} ({node.op}, layer {node.layer})")
    return 0


def _read_recipe(path: str, flag: str = "--recipe"):
    from .importers import LoadError
    from .importers.safety import Limits, check_path, read_bounded
    from .passes import Recipe, RecipeError

    try:   # a regular file of at most 16 MB: no FIFO hangs it, no /dev/zero fills memory
        limits = Limits(max_bytes=16 * 2**20)
        if Path(path).is_dir():
            raise _UsageError(f"{flag} {path}: is a directory; name a recipe file (JSON)")
        check_path(Path(path), path, limits)
        data = read_bounded(Path(path), path, limits)
    except LoadError as exc:
        raise _UsageError(f"{flag} {exc}") from None
    try:
        return Recipe.from_json(data)   # bytes: the reader says which byte is not UTF-8
    except RecipeError as exc:
        raise RecipeError(f"{flag} {path}: {exc}") from None


def _cmd_node_data(args) -> int:
    from .analysis.node_data import on_ops
    from .analysis.weight_stats import weight_metrics

    graph = _load(args)
    data = weight_metrics(graph)[args.metric]
    text = on_ops(data, graph).to_model_explorer()
    if not args.output:
        print(text)
        return 0
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    span = data.span
    print(f"wrote {args.output}: {args.metric} of {len(data.values)} layers"
          + (f", {span[0]:.4g} to {span[1]:.4g}" if span else ""))
    return 0


def _cmd_render(args) -> int:
    from .render.image import graph_svg_of, svg_to_png

    _check_output(args.output, (".svg", ".png"), "images")
    recipe = _read_recipe(args.recipe) if args.recipe else None
    graph = _load(args)
    result = None
    if recipe is not None:
        from .passes import RecipeError
        from .pipeline import apply

        try:
            # calibrated (activation ranges), not verified: the picture needs no error figures
            result = apply(graph, recipe, **_data(args, graph).apply_kwargs(), report=False)
        except RecipeError as exc:
            raise RecipeError(f"--recipe {args.recipe}: {exc}") from None
    name = Path(args.model).name
    title = f"{name}, {args.view} view" + (f", rewritten by {Path(args.recipe).name}" if recipe else "")
    if args.hops is not None and not args.around:    # (it was ignored)
        raise _UsageError(f"--hops {args.hops}: says how far from --around LAYER to draw; give --around")
    args.hops = 2 if args.hops is None else args.hops
    if args.hops < 0:
        raise _UsageError(f"--hops {args.hops}: must be 0 or more")
    if args.around:
        title += f", around {', '.join(args.around)} ({args.hops} step{'s' if args.hops != 1 else ''})"
    try:
        svg = graph_svg_of(graph, result, recipe, view=args.view, direction=args.direction, title=title,
                           around_layers=args.around or (), hops=args.hops)
    except ValueError as exc:
        raise _UsageError(f"--around: {exc}") from None
    if Path(args.output).suffix.lower() == ".svg":
        Path(args.output).write_text(svg, encoding="utf-8")
    else:
        svg_to_png(svg, args.output, scale=args.scale)
    print(f"wrote {args.output} ({args.view} view of {name})")
    return 0


def _cmd_report(args) -> int:

    from .analysis.fold_explainer import foldable_candidate
    from .passes import RecipeError
    from .render.report import make_report

    _check_output(args.output, (".html", ".htm"), "an HTML page")
    recipe = _read_recipe(args.recipe)
    graph = _load(args)
    explain = None if args.explain is None else []
    for layer in args.explain or ():   # said before the seconds of running the model
        if layer not in graph.layers:
            raise _UsageError(f"--explain {layer}: no layer of that name in the model")
        try:   # (a conv, or its batch norm: either explains their fold)
            explain.append(foldable_candidate(graph, layer).layer)
        except ValueError as exc:
            raise _UsageError(f"--explain {layer}: {exc}") from None
    sweep = None
    if args.sensitivity:
        from .analysis.sensitivity import checkpoint_bits, sensitivity

        # the widths the checkpoint holds (a sweep at 8 and 4 bits is not extended to 6, 3 and 2)
        sweep = sensitivity(graph, **_data(args, graph).sweep_kwargs(), progress=_ProgressBar("measuring"),
                            checkpoint=args.sensitivity, bits=checkpoint_bits(args.sensitivity) or SWEEP_BITS)
    try:
        page = make_report(graph, recipe, name=Path(args.model).name,
                           explain=None if explain is None else list(dict.fromkeys(explain)), sensitivity=sweep,
                           target_sqnr_db=args.target_sqnr)
    except RecipeError as exc:
        raise RecipeError(f"--recipe {args.recipe}: {exc}") from None
    Path(args.output).write_text(page, encoding="utf-8")
    print(f"wrote {args.output} ({len(page) / 2**20:.1f} MB; opens from disk, no network)")
    return 0


def _cmd_recipe(args) -> int:
    from dataclasses import replace

    from .passes import LayerBits, Recipe, apply_rules, parse_rule

    if args.float and (args.weight_bits is not None or args.activation_bits is not None):
        raise _UsageError("--float quantizes nothing: give it or --weight-bits/--activation-bits, not both")
    rules = list(args.rule or ())
    for rule in rules:
        parse_rule(rule)   # a typo is said before seconds of loading
    source = None
    if args.rules_from:
        # another model's recipe: its rules, default widths and options carry over, not its
        # layers (read first: its rules come first)
        source = _read_recipe(args.rules_from, "--rules-from")
        if not source.rules:
            raise _UsageError(f"--rules-from {args.rules_from}: the recipe has no rules to carry over")
        rules = [*source.rules, *rules]
    graph = _load(args)
    # the widths the carried rules were written against, each unless this command gives its own
    base = source.quantize_default if source is not None else None
    if args.float:
        bits = None
    elif source is not None and not (args.weight_bits or args.activation_bits):
        bits = base
    else:
        base = base or LayerBits(8, 8)
        bits = LayerBits(args.weight_bits or base.weight_bits, args.activation_bits or base.activation_bits)
    recipe = Recipe.default(graph, bits)
    if source is not None:
        recipe = replace(recipe, **source.options())
    if rules:
        recipe = apply_rules(recipe, rules, graph)
    print(recipe.to_json())
    return 0


def _check_apply_outputs(args) -> None:
    """Refuse outputs that cannot be written before anything is (a SavedModel directory that is
    not empty was found after the .pb was written; a report naming a directory, after the run)."""
    outputs = [p for p in (args.output, args.saved_model, args.report) if p]
    if len(set(map(os.path.abspath, outputs))) < len(outputs):
        raise _UsageError(f"the outputs must be different paths, not {' and '.join(outputs)}")
    for flag, path in (("-o", args.output), ("--report", args.report)):
        if path and Path(path).is_dir():
            raise _UsageError(f"{flag} {path}: is a directory; name a file")
        if path and not Path(path).resolve().parent.is_dir():
            raise _UsageError(f"{flag} {path}: no such directory to write it in")
    sm = Path(args.saved_model) if args.saved_model else None
    if sm is not None and (sm.is_file() or (sm.is_dir() and any(sm.iterdir()))):
        raise _UsageError(f"--saved-model {sm}: {'is a file' if sm.is_file() else 'exists and is not empty'}; "
                          "name a new or empty directory")


def _cmd_apply(args) -> int:

    import json

    from dataclasses import replace

    from .exporters import save_graph_def, save_saved_model
    from .pipeline import apply, report_for

    from .passes import RecipeError

    _check_output(args.output, (".pb", ".pbtxt"), "TensorFlow GraphDefs")
    _check_apply_outputs(args)
    recipe = _read_recipe(args.recipe)
    graph = _load(args)
    data = _data(args, graph)
    try:
        result = apply(graph, recipe, **data.apply_kwargs(), report=not args.local)
        if args.local:   # the report with each layer's own error too
            result = replace(result, report=report_for(graph, recipe, result, data.verification, data.labels,
                                                       local=True))
    except RecipeError as exc:
        raise RecipeError(f"--recipe {args.recipe}: {exc}") from None
    if args.output:
        save_graph_def(result.graph, args.output)
        print(f"wrote {args.output} ({len(result.graph)} ops)")
    if args.saved_model:
        save_saved_model(result.graph, args.saved_model)
        print(f"wrote SavedModel {args.saved_model}")
    c = result.changes
    print(f"changes: {result.change_summary()}")
    for s in result.skipped:
        print(f"skipped {s}")
    from .analysis.deployability import deployability

    for line in deployability(graph, recipe, result).grouped_warnings():
        print(f"qviz: warning: TFLite: {line}", file=sys.stderr)
    print(result.report.format())
    if args.report:
        data = {"report": result.report.to_dict(), "changes": c.to_dict(),
                "skipped": [vars(s) for s in result.skipped]}
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
    return 0


def _cmd_export_tflite(args) -> int:
    from ._text import floor_percent

    from .exporters.tflite import export_tflite

    from .passes import RecipeError

    _check_output(args.output, (".tflite",), "TensorFlow Lite models")
    recipe = _read_recipe(args.recipe)
    graph = _load(args)
    try:
        data = _data(args, graph)
        done = export_tflite(graph, recipe, args.output, int8_io=args.int8_io,
                             calibration=data.calibration, verification=data.verification)
    except RecipeError as exc:
        raise RecipeError(f"--recipe {args.recipe}: {exc}") from None
    d = done.device
    io = "int8" if args.int8_io else "float (QUANTIZE/DEQUANTIZE inside)"
    print(f"wrote {args.output}: {d.size_bytes / 1024:.1f} KB, {sum(d.ops.values())} ops, inputs/outputs {io}")
    print(done.check.summary())
    for line in done.check.grouped_warnings():
        print(f"qviz: warning: TFLite: {line}", file=sys.stderr)
    if d.float_ops:
        print(f"runs in float on the device: {', '.join(d.float_ops)}")
    if d.warning:   # (as qviz apply says it: SQNR 0.00 dB alone read as a result)
        print(f"qviz: warning: {d.warning}", file=sys.stderr)
    print(d.summary())
    worst = d.least_faithful(5)
    if d.faithful_line():
        print(d.faithful_line())
    elif worst:
        print(f"each integer op given the device's own inputs ({len(d.layers)} ops), the least faithful "
              "(within 1 LSB; max LSBs apart; within 1 LSB run from the model input):")
        width = max(len(t.layer) for t in worst)
        for t in worst:
            print(f"  {t.layer:<{width}} {floor_percent(t.within_1_lsb):>6} %  {t.max_lsb:5.1f}  "
                  f"{floor_percent(t.chained_within_1_lsb):>6} %{t.how}")
    return 0


def _cmd_export_qat(args) -> int:

    from .qat import export_qat

    from .passes import RecipeError

    _check_output(args.output, (".keras",), "a Keras 3 model")
    recipe = _read_recipe(args.recipe)
    _check_model_path(args)
    _quiet_tensorflow()
    try:
        qat = export_qat(args.model, recipe, args.output, folding_mode=args.folding_mode,
                         freeze_bn_delay=args.freeze_bn_delay, ema_decay=args.ema_decay,
                         calibration=lambda graph: _data(args, graph).calibration, safe_mode=not args.unsafe)
    except RecipeError as exc:
        raise RecipeError(f"--recipe {args.recipe}: {exc}") from None
    kinds = sum(type(layer).__name__ == "FoldedQuantLayer" for layer in qat.layers)
    quantizers = sum(type(layer).__name__ == "OutputQuantizer" for layer in qat.layers)
    print(f"wrote {args.output}: {kinds} conv/dense layer(s) with fake-quantized weights "
          f"({sum(1 for l in qat.layers if getattr(l, 'bn_config', None))} with a trainable folded batch norm, "
          f"{args.folding_mode}), {quantizers} activation quantizer(s)")
    print("train it with model.fit (it is compiled like the original if that was compiled); "
          "`import qviz.keras_layers` before keras.models.load_model to read it back")
    return 0


def _cmd_export_code(args) -> int:

    from .exporters.code import CODE_TOOLS, export_code
    from .passes import RecipeError

    what = {"tfmot": "a tfmot training script", "qkeras": "a QKeras training script",
            "ai-edge-quantizer": "an AI Edge Quantizer recipe"}[args.tool]
    _check_output(args.output, (CODE_TOOLS[args.tool],), what)
    recipe = _read_recipe(args.recipe)
    _check_model_path(args)
    _quiet_tensorflow()
    try:
        options = _load_options(args)
        done = export_code(args.model, recipe, args.tool, args.output,
                           calibration=lambda graph: _data(args, graph).calibration,
                           safe_mode=options.pop("safe_mode", True), load_options=options)
    except RecipeError as exc:
        raise RecipeError(f"--recipe {args.recipe}: {exc}") from None
    print(f"wrote {', '.join(str(p) for p in done.files)}")
    if done.notes:
        print(f"where {args.tool} does something other than the recipe:")
        for note in done.notes:
            print(f"  - {note}")
    if args.tool == "ai-edge-quantizer":
        print(f"quantize with: ai_edge_quantizer.quantizer.Quantizer({str(done.files[1])!r}, {str(done.files[0])!r})"
              ", then .calibrate(data) and .quantize(result)")
    else:
        build = "qat_model" if args.tool == "tfmot" else "qkeras_model"
        print(f"train with: from {done.files[0].stem} import {build} (run `python {done.files[0]}` to see it)")
    return 0


def _cmd_sensitivity(args) -> int:

    from .analysis.sensitivity import sensitivity

    graph = _load(args)
    checkpoint = args.checkpoint or f"{Path(args.model).stem}.sensitivity.json"
    data = _data(args, graph)
    # (said at the first measurement: a file the sweep refuses is not announced as where it saves)
    saved = (f"qviz: measurements are saved to {checkpoint} as they are made; run the same command again to "
             "resume a stopped sweep")
    result = sensitivity(graph, bits=args.bits, **data.sweep_kwargs(), progress=_ProgressBar("measuring", note=saved),
                         checkpoint=checkpoint)
    print("output SQNR (dB) with one layer quantized: weights (w) or activations (a)")
    print(result.format())
    if args.pareto or args.size_kb is not None or args.bops is not None or args.trade:
        return _pareto(args, graph, result, data)
    recipe = result.suggest(args.target_sqnr)
    if result.warning:
        print(f"qviz: warning: {result.warning}; the recipe below is the widest bits swept, not a suggestion",
              file=sys.stderr)
    short = result.shortfalls(args.target_sqnr)
    if short:
        print(f"qviz: warning: the widths swept cannot reach {args.target_sqnr:g} dB overall; the recipe below "
              f"keeps the widest bits where they fall short: {'; '.join(short)}", file=sys.stderr)
    print(f"\nsuggested recipe for ~{args.target_sqnr:g} dB overall"
          f"{' (not met: see the warning)' if short else ''}:")
    for name, b in recipe.quantize_layers.items():
        print(f"  {name}: weights {b.weight_bits} bits, activations {b.activation_bits} bits")
    if args.recipe_out:
        with open(args.recipe_out, "w", encoding="utf-8") as f:
            f.write(recipe.to_json())
        print(f"wrote {args.recipe_out}")
    return 0


def _pareto(args, graph, sens, data) -> int:
    from .analysis.budget import count_text, layer_macs
    from .analysis.mixed_precision import measure_front, search, weight_counts
    from .runtime import tensor_shapes

    shapes = tensor_shapes(graph)
    by_ops = args.trade == "bit-ops" or (args.trade is None and args.bops is not None)
    try:
        front = search(sens, weight_counts(graph), macs=layer_macs(graph, shapes) if by_ops else None)
    except ValueError as exc:
        raise _UsageError(f"--pareto: {exc}") from None
    front = measure_front(graph, front, **data.sweep_kwargs(), shapes=shapes,
                          progress=_ProgressBar("measuring the recipes"))
    print(f"\nmixed precision (weights narrowed greedily, the least noise per {'bit-op' if by_ops else 'bit'} "
          f"saved first; activations at {front.activation_bits} bits; {len(front.points)} recipes, each measured):")
    print(front.format())
    best = [p.weight_bits for p in front.front()]
    print(f"on the {'bit-ops' if by_ops else 'size'}-vs-SQNR front: {len(best)} of them (marked *)")
    if args.size_kb is not None:
        chosen = front.within(args.size_kb * 1024)
        if chosen is None:
            smallest = min(p.weight_bytes for p in front.points) / 1024
            raise _UsageError(f"--size-kb {args.size_kb:g}: no recipe's weights fit; the smallest is "
                              f"{smallest:.1f} KB")
        what = f"the best recipe within {args.size_kb:g} KB"
    elif args.bops is not None:
        chosen = front.within_bops(args.bops)
        if chosen is None:
            fewest = min((p.bops for p in front.points if p.bops is not None), default=None)
            raise _UsageError(f"--bops {count_text(args.bops)}: no recipe is that cheap; the cheapest takes "
                              f"{count_text(fewest)} bit-ops")
        what = f"the best recipe within {count_text(args.bops)} bit-ops"
    else:
        chosen = front.reaching(args.target_sqnr)
        if chosen is None:
            print(f"\nno recipe of the search reaches {args.target_sqnr:g} dB", file=sys.stderr)
            return 0
        what = f"the {'cheapest' if by_ops else 'smallest'} recipe reaching {args.target_sqnr:g} dB"
    print(f"\n{what}: {chosen.weight_bytes / 1024:.1f} KB, {count_text(chosen.bops)} bit-ops, "
          f"{chosen.measured_sqnr_db:.1f} dB" + (f", accuracy {100 * chosen.accuracy:.2f} %"
                                                  if chosen.accuracy is not None else ""))
    if args.recipe_out:
        with open(args.recipe_out, "w", encoding="utf-8") as f:
            f.write(chosen.recipe.to_json())
        print(f"wrote {args.recipe_out}")
    return 0


def _cmd_serve(args) -> int:
    import logging
    import secrets

    from .app.front import FirstViewCache, listening_socket, start_front
    from .app.guard import LOOPBACK_HOSTS

    if args.model:
        _check_model_path(args)   # before seconds of imports and loading, not after "serving on"
    load_options = _load_options(args) if args.model else None
    token = args.token or os.environ.get("QVIZ_TOKEN")
    public = args.host not in LOOPBACK_HOSTS
    if public and not token:
        token = secrets.token_urlsafe(24)   # reachable from other machines: never without a key
    hosts = set(args.allowed_host or ())
    if public and args.host not in ("0.0.0.0", "::"):
        hosts.add(args.host)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)   # not a line per request
    try:
        sock = listening_socket(args.host, args.port)
    except (OSError, OverflowError) as exc:   # taken, not this machine's address, or not a port number
        raise _UsageError(f"cannot serve on {args.host}:{args.port}: {getattr(exc, 'strerror', None) or exc}; "
                          "pick another --port (or --host)") from None
    port = sock.getsockname()[1]   # --port 0: the one the system chose
    _stop_on_sigterm()
    # The port answers now, before a second of imports: a page with the model's first view
    # (qviz.app.front), which reloads into the app when the app takes the same socket over.
    from .samples import DEFAULT_SAMPLE, sample_path

    # without a model the app opens its default sample: the page shows that one's first view
    model = Path(args.model) if args.model else sample_path(DEFAULT_SAMPLE)
    front = start_front(sock, name=args.model or DEFAULT_SAMPLE, allowed_hosts=hosts, token=token)
    query = f"?token={token}" if token else ""
    print(f"qviz: serving on http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:"
          f"{port}/{query}  (Ctrl-C stops)", flush=True)
    if public and not hosts:
        print("qviz: bound to every interface; pass --allowed-host NAME for each name or address "
              "browsers will use to reach it", file=sys.stderr)
    views = FirstViewCache()
    # a model not seen before is drawn here, before Dash is imported: the page waits for this, not for Dash
    front.show(views.read_or_draw(model, load_options["max_bytes"] if load_options else None))
    return _serve_app(args, sock, front, views, model, hosts=hosts, token=token, load_options=load_options)


def _stop_on_sigterm() -> None:
    """SIGTERM (kill, process managers, docker stop) ends the server the way Ctrl-C does: the
    worker processes are stopped and upload directories are removed (app.qviz_shutdown)."""
    import signal

    def stop(*_):
        # A second SIGTERM (a process manager and `timeout` both sending one) must not
        # interrupt the exit handlers the first one started.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _STOP.set()   # (for when the exit below lands in a callback whose exceptions Python ignores)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)


#: Set by SIGTERM. Its SystemExit is lost when the signal lands while the main thread runs a
#: callback Python ignores exceptions of (an import's module-lock weakref, seen 2 s after
#: start): the server then checks this before it serves and between its polls.
_STOP = threading.Event()


def _stop_if_asked() -> None:
    if _STOP.is_set():
        raise SystemExit(0)


def _serve_app(args, sock, front, views, model, *, hosts, token, load_options) -> int:
    """Build the app, take the socket over from ``front``, serve until Ctrl-C or SIGTERM."""
    import logging
    import signal

    # A server process is never a notebook: keep Dash's Jupyter support from importing IPython
    # (a third of a second before the first answer, where IPython is installed).
    sys.modules.setdefault("IPython", None)
    app = None
    code = 0
    try:
        from werkzeug.serving import make_server

        from .app import create_app

        # The model is opened by the app in the background (TensorFlow is imported there, quietly,
        # leaving a core to the web server). A model that then fails to open is one line on the
        # page and in this log; the server stays up (samples and uploads still work).
        app = create_app(args.model or None, model_name=args.model, max_upload_mb=args.max_upload_mb,
                         allowed_hosts=hosts, token=token, load_options=load_options)
        if app.qviz_first_view is not None:
            views.refresh(model, app.qviz_first_view.entry())   # a stale entry is replaced
        app.enable_dev_tools(False)   # what Dash's app.run() does before serving
        server = make_server(args.host, args.port, app.server, threaded=True, fd=front.hand_over().fileno())
        _stop_if_asked()
        server.service_actions = _stop_if_asked   # (called by serve_forever at each poll, ~0.5 s)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:   # our SIGTERM handler (0)
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception:   # a bug: its traceback, then the same clean exit
        logging.getLogger("qviz").exception("the server stopped on an error")
        code = 1
    finally:
        # A second Ctrl-C or SIGTERM must not cut the clean-up short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            if app is not None:
                app.qviz_shutdown()
        finally:
            # Nothing is left to save. What Python would still do is tear TensorFlow down
            # (seconds, tens of seconds on a loaded machine, past a process manager's grace
            # period) and wait for a model still opening in a thread: end now instead.
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


class _ProgressBar:
    """``progress(done, total)`` on stderr: a redrawn bar with the time left on a
    terminal, a line every tenth of the way in a log."""

    def __init__(self, what: str, stream=None, note: str | None = None):
        import time

        self.what, self.stream, self.clock = what, stream or sys.stderr, time.monotonic
        self.start, self.last_tenth = self.clock(), -1
        self.tty = self.stream.isatty()
        self.note = note   # a line said once, before the first report

    def __call__(self, done: int, total: int) -> None:
        if self.note:
            print(self.note, file=self.stream, flush=True)
            self.note = None
        elapsed = self.clock() - self.start
        left = elapsed / done * (total - done) if done else 0.0
        eta = f"{int(left // 60)}:{int(left % 60):02d} left" if done < total else f"done in {elapsed:.0f} s"
        if self.tty:
            filled = int(30 * done / max(total, 1))
            end = "\n" if done >= total else ""
            print(f"\r{self.what} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}, {eta}  ", end=end,
                  file=self.stream, flush=True)
        elif done * 10 // max(total, 1) > self.last_tenth:
            self.last_tenth = done * 10 // max(total, 1)
            print(f"{self.what}: {done}/{total}, {eta}", file=self.stream, flush=True)


class _UsageError(QvizError):
    """A bad combination of arguments, found after parsing."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="qviz", description="See, match and rewrite TensorFlow/Keras graphs.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="inputs, outputs, op counts, layers and batch norms of a model")
    _add_model_args(p)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("match", help="where a pattern matches, or why it does not match at a node")
    _add_model_args(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--pattern", help="pattern text, e.g. 'Relu(Conv2D(*, *) as conv)'")
    which.add_argument("--builtin", help="a built-in pattern name (see qviz.patterns.BUILTIN)")
    p.add_argument("--explain", metavar="NODE", help="explain why NODE (a node or layer name) does not match")
    p.set_defaults(func=_cmd_match)

    p = sub.add_parser("recipe", help="print the default recipe (JSON): every foldable and quantizable layer")
    _add_model_args(p)
    p.add_argument("--weight-bits", type=_bits, default=None,
                   help="bits for every layer's weights (default 8, or --rules-from's recipe's)")
    p.add_argument("--activation-bits", type=_bits, default=None,
                   help="bits for activations (default 8, or --rules-from's recipe's)")
    p.add_argument("--float", action="store_true", help="list layers but quantize none (not with the two above)")
    p.add_argument("--rule", action="append", metavar="'SELECTORS: ACTIONS'",
                   help="then set layers by rule, later ones winning, e.g. 'name~block_1[0-3]: w4a8', "
                        "'op=DepthwiseConv2dNative: w8a8', 'pattern=conv_bn & name~^block: nofold', "
                        "'between=block_3_expand..block_5_add: w4' (see qviz.passes.rules)")
    p.add_argument("--rules-from", metavar="RECIPE.json",
                   help="first apply the rules recorded in this recipe (made for another model, say), "
                        "then any --rule; its default widths (unless given here) and options carry over too")
    p.set_defaults(func=_cmd_recipe)

    p = sub.add_parser("apply", help="fold and quantize as a recipe says; write the graph and a report")
    _add_model_args(p)
    _add_data_arg(p)
    p.add_argument("--recipe", required=True, help="recipe JSON (see `qviz recipe`)")
    p.add_argument("-o", "--output", help="write the rewritten frozen graph (.pb or .pbtxt)")
    p.add_argument("--saved-model", metavar="DIR", help="also write it as a SavedModel directory")
    p.add_argument("--report", metavar="JSON", help="write the verification report and changes as JSON")
    p.add_argument("--local", action="store_true",
                   help="per-layer error in both modes: accumulated (as the model runs) and local (each layer fed "
                        "the float model's values at its inputs: its own error alone)")
    p.set_defaults(func=_cmd_apply)

    p = sub.add_parser("export-tflite", help="write the recipe's model as .tflite and check it against qviz")
    _add_model_args(p)
    _add_data_arg(p)
    p.add_argument("--recipe", required=True, help="recipe JSON (see `qviz recipe`)")
    p.add_argument("-o", "--output", required=True, help="the TensorFlow Lite model to write (.tflite)")
    p.add_argument("--int8-io", action="store_true",
                   help="int8 inputs and outputs (the first and last layers' activations must be quantized)")
    p.set_defaults(func=_cmd_export_tflite)

    p = sub.add_parser("export-qat", help="write a Keras model for quantization-aware training of a recipe")
    p.add_argument("model", help="a Keras model (.keras or .h5)")
    p.add_argument("--unsafe", action="store_true",
                   help="allow Keras Lambda layers (runs code from the file)")
    _add_data_arg(p)
    p.add_argument("--recipe", required=True, help="recipe JSON (see `qviz recipe`)")
    p.add_argument("-o", "--output", required=True, help="the QAT model to write (.keras)")
    p.add_argument("--folding-mode", choices=["ema_stats_folding", "batch_stats_folding"],
                   default="ema_stats_folding", help="how folded batch norms train (see qviz.passes.fold_training)")
    p.add_argument("--freeze-bn-delay", type=int, default=None, metavar="STEPS",
                   help="training steps after which the moving statistics are used (default: never)")
    p.add_argument("--ema-decay", type=float, default=0.99, help="decay of the activation-range moving average")
    p.set_defaults(func=_cmd_export_qat)

    p = sub.add_parser("export-code", help="write a recipe for tfmot or QKeras (a training script) or AI Edge "
                                           "Quantizer (a recipe JSON and the float .tflite it is for)")
    _add_model_args(p)
    _add_data_arg(p)
    p.add_argument("--recipe", required=True, help="recipe JSON (see `qviz recipe`)")
    p.add_argument("--tool", required=True, choices=["tfmot", "qkeras", "ai-edge-quantizer"],
                   help="the tool to write for")
    p.add_argument("-o", "--output", required=True, help="the script (.py: tfmot, qkeras) or recipe (.json) to write")
    p.set_defaults(func=_cmd_export_code)

    p = sub.add_parser("sensitivity", help="per-layer output SQNR vs bit width, and a suggested recipe")
    _add_model_args(p)
    _add_data_arg(p)
    p.add_argument("--bits", type=_bits, nargs="+", default=list(SWEEP_BITS))
    p.add_argument("--target-sqnr", type=_decibels, default=30.0, help="overall output SQNR to aim for (dB)")
    p.add_argument("--recipe-out", metavar="JSON", help="write the suggested recipe")
    p.add_argument("--pareto", action="store_true",
                   help="search mixed precision too: narrow layers' weights greedily (the least noise per bit "
                        "saved first), measure each recipe, print the size-vs-SQNR front and the smallest recipe "
                        "reaching --target-sqnr")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--size-kb", type=_number("KB"), metavar="KB",
                        help="the recipe is the best measured one whose weights fit in KB (implies --pareto)")
    budget.add_argument("--bops", type=_count, metavar="COUNT",
                        help="the recipe is the best measured one within COUNT bit-operations per example, e.g. "
                             "8M or 2.5G (implies --pareto --trade bit-ops)")
    p.add_argument("--trade", choices=("size", "bit-ops"), default=None,
                   help="what the search narrows weights to save: their size (default) or bit-operations "
                        "(MACs × weight bits × input bits: a conv used at many positions goes first)")
    p.add_argument("--checkpoint", metavar="JSON",
                   help="where measurements are saved as they are made (default: MODEL.sensitivity.json here); "
                        "a rerun resumes from it")
    p.set_defaults(func=_cmd_sensitivity)

    p = sub.add_parser("node-data", help="a per-layer metric of the weights as Model Explorer node-data JSON "
                                         "(no data; the model is loaded, not run): paint it in Model Explorer or qviz")
    _add_model_args(p)
    p.add_argument("--metric", required=True, choices=WEIGHT_METRICS, help="what to measure per layer")
    p.add_argument("-o", "--output", help="the JSON file to write (default: print it)")
    p.set_defaults(func=_cmd_node_data)

    p = sub.add_parser("report", help="one HTML file with the recipe's graph, verification, device check, "
                                      "sensitivity and fold explained (opens from disk, no network)")
    _add_model_args(p)
    _add_data_arg(p)
    p.add_argument("--recipe", required=True, help="the recipe (JSON) to report on")
    p.add_argument("-o", "--output", required=True, help="the .html file to write")
    p.add_argument("--explain", action="append", metavar="LAYER",
                   help="explain this layer's batch-norm fold (repeat; default: the first one the recipe folds)")
    p.add_argument("--sensitivity", metavar="CHECKPOINT.json",
                   help="include the sensitivity sweep saved in this file (qviz sensitivity --checkpoint), "
                        "measuring what it lacks")
    p.add_argument("--target-sqnr", type=_decibels, default=30.0, help="the overall SQNR the heatmap marks (dB)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("render", help="draw the graph (or a recipe's rewrite, changes marked) as SVG or PNG")
    _add_model_args(p)
    _add_data_arg(p)
    p.add_argument("-o", "--output", required=True, help="a .svg (needs nothing) or a .png (drawn by Chromium)")
    p.add_argument("--view", choices=("layer", "op"), default="layer", help="one node a layer, or every op")
    p.add_argument("--direction", choices=("LR", "TB"), default="LR", help="left to right, or top to bottom")
    p.add_argument("--recipe", help="draw this recipe's rewrite, with its changes and bits")
    p.add_argument("--scale", type=_number("PNG pixels per SVG pixel"), default=2.0,
                   help="PNG pixels per SVG pixel (default 2)")
    p.add_argument("--around", action="append", metavar="LAYER",
                   help="draw only this layer and its neighbours (repeat for more layers)")
    p.add_argument("--hops", type=int, default=None,
                   help="how many edges away from --around to draw (default 2)")
    p.set_defaults(func=_cmd_render)

    p = sub.add_parser("serve", help="open the app in the browser (default model: the lenet_digits sample)")
    p.add_argument("model", nargs="?", help="a model file or SavedModel directory")
    p.add_argument("--input-shape", type=_shape, action="append", metavar="D1,D2,…")
    p.add_argument("--unsafe", action="store_true")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8050)
    p.add_argument("--max-upload-mb", type=_megabytes, default=200, help="largest model upload accepted")
    p.add_argument("--allowed-host", action="append", metavar="NAME",
                   help="a Host name browsers may use besides localhost (repeat; '*' for any)")
    p.add_argument("--token", help="require this access token (default: QVIZ_TOKEN; generated when "
                                   "--host is not a loopback address)")
    p.add_argument("--max-model-mb", type=_megabytes, default=None, metavar="MB", help=argparse.SUPPRESS)
    p.set_defaults(func=_cmd_serve)
    return parser


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (2 for any user-facing error)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from ._text import one_line   # a path or name in a message may hold a newline: still one line

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (QvizError, _UsageError) as exc:
        # A pattern's mistake names the option. (Imported only by the commands that read
        # patterns: `qviz serve` answers before numpy and networkx are imported.)
        language = sys.modules.get("qviz.patterns.language")
        option = "--pattern: " if language is not None and isinstance(exc, language.PatternSyntaxError) else ""
        if isinstance(exc, ModelRunError) and getattr(args, "model", None):
            option = f"{args.model}: "   # a model that cannot be run or calibrated: the message names it
        print(one_line(f"qviz: error: {option}{exc}"), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("qviz: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:   # an output that cannot be written: no such folder, disk full, read-only
        where = exc.filename if exc.filename is not None else getattr(args, "output", None) or "output"
        print(one_line(f"qviz: error: {where}: {exc.strerror or exc}"), file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as exc:
        print(one_line(f"qviz: error: {args.model if hasattr(args, 'model') else 'input'}: too large or too "
                       f"deeply nested to process ({type(exc).__name__})"), file=sys.stderr)
        return 2
