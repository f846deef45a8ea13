"""The compiled GEMM (``_gemm.c``) against NumPy's BLAS (``np.matmul``, OpenBLAS in NumPy's
wheels) on the shapes of transformers and CNNs, in one process, on the same inputs.

    python plugin_packages/cpu_native/benchmarks/gemm_shapes.py [--threads 1 2] [--conv]

Each figure is the best of many runs (GFLOP/s from the minimum time), the two libraries
interleaved round by round so that a busy neighbour slows both alike; a shared machine's
timings are still noisy, so compare ratios. The compiled GEMM runs with A (the left operand)
read in place and B (the weights) packed by :func:`._native.pack_b`, as the MatMul plugin runs
a product with constant weights; batched shapes read both in place (attention's Q.K^T, P.V).
It also reports the peak of the core's FMA units (12 independent chains of fused multiply-adds
in the kernels' vector width, measured through the cache-resident 8 x 512 x 24 tile)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

SHAPES = [(128, 384, 384), (128, 384, 1536), (128, 1536, 384), (197, 768, 768),
          (3136, 96, 384), (1, 1024, 1000)]
BATCHED = [((12, 128, 64), (12, 64, 128)), ((12, 128, 128), (12, 128, 64))]
#: convolutions as GEMMs (ResNet-50's): weights (M x K) packed in row panels, the im2col
#: columns or input planes (K x N) read in place, as the Conv plugin runs them
CONV = [(64, 576, 3136), (256, 64, 3136), (64, 256, 3136), (128, 1152, 784),
        (512, 4608, 49), (2048, 512, 49)]
RNG = np.random.default_rng(0)


def _best(fn: Callable[[], Any], seconds: float) -> float:
    best = float("inf")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    from mini_infer_cpu_native import _native

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seconds", type=float, default=0.3, help="per case and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--conv", action="store_true",
                    help="also ResNet-50's convolutions as GEMMs (packed weights)")
    args = ap.parse_args()
    print(f"compiled GEMM kernels: {_native.gemm_isa()}")
    cases: list[tuple[str, float, Callable[[], Any], Callable[[], Any]]] = []
    for m, k, n in [(8, 512, 24), *SHAPES]:
        a = RNG.standard_normal((m, k), dtype=np.float32)
        b = RNG.standard_normal((k, n), dtype=np.float32)
        c, c2 = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
        call = _native.matmul_call(a[None, None], _native.pack_b(b), c[None, None], k,
                                   b_packed=True)
        cases.append((f"{m}x{k}x{n}", 2.0 * m * n * k,
                      partial(_native.run_calls, [call]), partial(np.matmul, a, b, out=c2)))
    for sa, sb in BATCHED:
        a = RNG.standard_normal(sa, dtype=np.float32)
        b = RNG.standard_normal(sb, dtype=np.float32)
        shape = (sa[0], sa[1], sb[2])
        c, c2 = np.empty(shape, np.float32), np.empty(shape, np.float32)
        call = _native.matmul_call(a[None], b[None], c[None], sa[2])
        cases.append((f"{list(sa)}x{list(sb)}", 2.0 * sa[0] * sa[1] * sa[2] * sb[2],
                      partial(_native.run_calls, [call]), partial(np.matmul, a, b, out=c2)))
    for m, k, n in CONV if args.conv else []:
        a = RNG.standard_normal((m, k), dtype=np.float32)
        b = RNG.standard_normal((k, n), dtype=np.float32)
        c, c2 = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
        call = _native.gemm_call(_native.pack_a(a), m, k, b, c)
        cases.append((f"conv {m}x{k}x{n}", 2.0 * m * n * k,
                      partial(_native.run_calls, [call]), partial(np.matmul, a, b, out=c2)))
    for threads in args.threads:
        best = {name: [float("inf"), float("inf")] for name, *_ in cases}
        with threadpool_limits(threads):
            for _ in range(args.rounds):
                for name, _, compiled, numpy_blas in cases:
                    best[name][0] = min(best[name][0], _best(compiled, args.seconds / 2))
                    time.sleep(0.05)  # OpenBLAS's workers keep spinning after a call
                    best[name][1] = min(best[name][1], _best(numpy_blas, args.seconds / 2))
                    time.sleep(0.05)
        print(f"\n{threads} thread(s)          compiled GFLOP/s   NumPy/OpenBLAS GFLOP/s  ratio")
        for name, flops, *_ in cases:
            rate, other = (flops / t / 1e9 for t in best[name])
            print(f"  {name:28s} {rate:10.1f} {other:16.1f} {rate / other:12.2f}")


if __name__ == "__main__":
    main()
