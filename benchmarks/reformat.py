"""What a Reformat step costs (builder/formats.py inserts one where neighbouring nodes hold a
tensor in different formats): LINEAR -> format and back for CNN-sized activations, against a
plain copy of the same tensor, best of ``--repeat`` runs in this process. The timing of
formats counts these costs against what a blocked kernel saves.

    python benchmarks/reformat.py [--repeat 30]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from mini_infer_core.plugin import TensorFormat, from_format, to_format
from mini_infer_core.testing.bench import best_ms

SHAPES = [(1, 64, 56, 56), (1, 72, 28, 28), (1, 20, 112, 112), (1, 512, 7, 7)]


def best_us(fn: Callable[[], object], repeat: int) -> float:
    """The shortest of ``repeat`` calls in microseconds (testing.bench's minimum)."""
    return best_ms(fn, repeat=repeat) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    print(f"{'shape':<20} {'format':<7} {'to (us)':>8} {'from (us)':>9} {'copy (us)':>9}")
    for shape in SHAPES:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        back = np.empty_like(x)
        copy = best_us(lambda: np.copyto(back, x), args.repeat)  # noqa: B023
        for fmt in (TensorFormat.CHW16, TensorFormat.CHW8, TensorFormat.HWC):
            held = to_format(x, fmt)
            there = best_us(lambda: to_format(x, fmt, held), args.repeat)  # noqa: B023
            home = best_us(lambda: from_format(held, fmt, shape, back), args.repeat)  # noqa: B023
            print(f"{shape!s:<20} {fmt.value:<7} {there:8.0f} {home:9.0f} {copy:9.0f}")


if __name__ == "__main__":
    main()
