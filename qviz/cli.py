"""The ``qviz`` command line. Each subcommand is a thin shell over the library."""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main"]


def _shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"input shape {text!r} must be integers separated by commas, "
                                         "e.g. 28,28,1") from None
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"input shape {text!r} must be positive integers, e.g. 28,28,1")
    return dims


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .keras, .h5, .pb, .pbtxt file or a SavedModel directory")
    p.add_argument("--input-shape", type=_shape, action="append", metavar="D1,D2,…",
                   help="shape of one example without the batch dimension (repeat for several inputs)")
    p.add_argument("--unsafe", action="store_true",
                   help="allow Lambda layers in .keras files (runs code from the file)")


def _load(args):
    from .importers import load

    shape = args.input_shape
    if shape is not None and len(shape) == 1:
        shape = shape[0]
    return load(args.model, input_shape=shape, safe_mode=not args.unsafe)


def _cmd_info(args) -> int:
    from .runtime import tensor_shapes
    from .summary import format_summary, summarize

    graph = _load(args)
    print(format_summary(summarize(graph, tensor_shapes(graph)), title=f"model: {args.model}"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qviz", description="See, match and rewrite TensorFlow/Keras graphs.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="inputs, outputs, op counts, layers and batch norms of a model")
    _add_model_args(p)
    p.set_defaults(func=_cmd_info)
    return parser


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (2 for any user-facing error)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from .importers import LoadError
    from .ir import GraphError
    from .runtime import RunError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (LoadError, GraphError, RunError) as exc:
        print(f"qviz: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
