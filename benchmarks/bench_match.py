"""Matcher throughput: every built-in pattern on real and synthetic graphs.

    python benchmarks/bench_match.py [--sizes 10000 100000 1000000] [--nets DenseNet121 NASNetMobile]

Prints, per graph and built-in, the time to run ``GraphMatcher.match_graph``
over every node (raw TF semantics) and ``find_matches`` (maximal matches), the
match count, and ops/s. Target: >= 1M ops/s per built-in on one core, cost
linear in graph size.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_graph  # noqa: E402

from qviz.matcher import GraphMatcher, find_matches  # noqa: E402
from qviz.patterns import BUILTIN  # noqa: E402


def _time(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        out = None  # the last run's matches go before the next run starts
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench(label: str, graph, repeat: int) -> None:
    n = len(graph)
    # The producer index is the graph's (built once, cached, shared by every
    # pattern and pass); it is timed on its own, not charged to the first pattern.
    index_s, _ = _time(graph.producer_index, 1)
    # Building a 1M-op graph leaves a full collection pending, which would
    # otherwise fire inside whichever timing allocates first: collect once here.
    # (Not before every run: that would also evict the graph from the caches.)
    # The collector stays on while timing.
    gc.collect()
    print(f"{label:<14}{n:>9}  {'(graph index, once)':<24}{'':>7}{index_s * 1e3:>10.1f}", flush=True)
    for name, pattern in BUILTIN.items():
        raw_s, raw = _time(lambda: list(GraphMatcher(pattern).match_graph(graph)), repeat)
        max_s, maximal = _time(lambda: find_matches(pattern, graph), repeat)
        print(f"{label:<14}{n:>9}  {name:<24}{len(maximal):>7}{raw_s * 1e3:>10.1f}{max_s * 1e3:>10.1f}"
              f"{n / raw_s / 1e6:>10.2f}{n / max_s / 1e6:>10.2f}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--nets", nargs="*", default=["DenseNet121", "NASNetMobile"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"{'graph':<14}{'ops':>9}  {'built-in':<24}{'matches':>7}{'raw ms':>10}{'max ms':>10}"
          f"{'raw Mop/s':>10}{'max Mop/s':>10}")
    if args.nets:
        import keras

        import qviz

        for net in args.nets:
            graph = qviz.load(getattr(keras.applications, net)(weights=None, input_shape=(224, 224, 3)))
            bench(net, graph, args.repeat)
    for size in args.sizes:
        bench("synthetic", synthetic_graph(size), min(2, args.repeat) if size >= 1_000_000 else args.repeat)


if __name__ == "__main__":
    main()
