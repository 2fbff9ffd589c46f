"""Server-side cost of the quantization-grid histogram (figure built and serialized).

    python benchmarks/bench_histogram.py
"""

import time

import numpy as np
import plotly.io as pio

from qviz.render.figure import histogram_figure


def main(repeat: int = 5) -> None:
    values = np.random.default_rng(0).normal(size=20_000)
    histogram_figure(values, "warm-up", np.linspace(-1, 1, 16)).to_json()
    print("bits  levels  best ms  (build + JSON)")
    for bits in (2, 4, 8, 12, 16):
        levels = np.linspace(-4, 4, 2**bits)
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            pio.to_json(histogram_figure(values, "w", levels))
            best = min(best, time.perf_counter() - t)
        print(f"{bits:>4}  {2**bits:>6}  {best * 1000:7.1f}")


if __name__ == "__main__":
    main()
