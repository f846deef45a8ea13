"""The compiled GEMM (``_gemm.c``) against onnxruntime's MatMul (MLAS) and NumPy's BLAS
(``np.matmul``, OpenBLAS in NumPy's wheels) on the shapes of transformers and CNNs, in one
process, on the same inputs, at each thread count.

    python plugin_packages/cpu_native/benchmarks/gemm_shapes.py [--threads 1 2] [--conv]

Each figure is the best of many runs (GFLOP/s from the minimum time), the libraries
interleaved round by round so that a busy neighbour slows all alike; a shared machine's
timings are still noisy, so compare ratios. The compiled GEMM runs with A (the left operand)
read in place and B (the weights) packed by :func:`._native.pack_b`, as the MatMul plugin runs
a product with constant weights; onnxruntime runs a one-node MatMul model whose B is an
initializer (which it pre-packs), with ``intra_op_num_threads`` set to the thread count, and
our pool gets the same count. Batched shapes (attention's Q.K^T, P.V) have both operands as
inputs. Convolutions as GEMMs (``--conv``, ResNet-50's): the compiled side with the weights
packed in row panels and the im2col columns read in place, as the Conv plugin runs them;
onnxruntime a MatMul whose constant is the left operand. A one-row product (batch 1) is
dominated by reading the weights, and onnxruntime's figure there includes its per-run cost
(some microseconds), as an engine's node does. The first row, 8 x 512 x 24, is one
cache-resident tile: the kernel's peak."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from threadpoolctl import threadpool_limits

#: (M, K, N): BERT-base / GPT-2 small linear layers at 128 tokens and at 1 token (decoding),
#: ViT-B/16 at 197 tokens, a Swin stage, a classifier at batch 1
SHAPES = [(128, 768, 768), (128, 768, 3072), (128, 3072, 768), (128, 768, 2304),
          (197, 768, 768), (197, 768, 3072), (1, 768, 768), (1, 768, 3072), (1, 3072, 768),
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


def _ort_matmul(a: np.ndarray, b: np.ndarray, const: str) -> Callable[[int], Callable[[], Any]]:
    """A one-node MatMul model, ``const`` ("a", "b" or "") its initializer; returns, per thread
    count, a run on the other operand(s)."""
    names = {"a": a, "b": b}
    inits = [numpy_helper.from_array(names[const], const)] if const else []
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(v.shape))
              for n, v in names.items() if n != const]
    shape = list(np.matmul(a[..., :1, :], b[..., :, :1]).shape[:-2]) + [a.shape[-2], b.shape[-1]]
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "mm", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              inits)
    opsets = [helper.make_opsetid("", 17)]
    model = helper.make_model(graph, opset_imports=opsets).SerializeToString()
    feeds = {n: v for n, v in names.items() if n != const}

    def session(threads: int) -> Callable[[], Any]:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        return partial(sess.run, None, feeds)

    return session


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
    Case = tuple[str, float, Callable[[], Any], Callable[[int], Callable[[], Any]],
                 Callable[[], Any]]
    cases: list[Case] = []
    for m, k, n in [(8, 512, 24), *SHAPES]:
        a = RNG.standard_normal((m, k), dtype=np.float32)
        b = RNG.standard_normal((k, n), dtype=np.float32)
        c, c2 = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
        call = _native.matmul_call(a[None, None], _native.pack_b(b), c[None, None], k,
                                   b_packed=True)
        cases.append((f"{m}x{k}x{n}", 2.0 * m * n * k,
                      partial(_native.run_calls, [call]), _ort_matmul(a, b, "b"),
                      partial(np.matmul, a, b, out=c2)))
    for sa, sb in BATCHED:
        a = RNG.standard_normal(sa, dtype=np.float32)
        b = RNG.standard_normal(sb, dtype=np.float32)
        shape = (sa[0], sa[1], sb[2])
        c, c2 = np.empty(shape, np.float32), np.empty(shape, np.float32)
        call = _native.matmul_call(a[None], b[None], c[None], sa[2])
        cases.append((f"{list(sa)}x{list(sb)}", 2.0 * sa[0] * sa[1] * sa[2] * sb[2],
                      partial(_native.run_calls, [call]), _ort_matmul(a, b, ""),
                      partial(np.matmul, a, b, out=c2)))
    for m, k, n in CONV if args.conv else []:
        a = RNG.standard_normal((m, k), dtype=np.float32)
        b = RNG.standard_normal((k, n), dtype=np.float32)
        c, c2 = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
        call = _native.gemm_call(_native.pack_a(a), m, k, b, c)
        cases.append((f"conv {m}x{k}x{n}", 2.0 * m * n * k,
                      partial(_native.run_calls, [call]), _ort_matmul(a, b, "a"),
                      partial(np.matmul, a, b, out=c2)))
    for threads in args.threads:
        _native.set_pool_threads(threads)
        runs = [(name, (compiled, session(threads), numpy_blas))
                for name, _, compiled, session, numpy_blas in cases]
        best = {name: [float("inf")] * 3 for name, _ in runs}
        with threadpool_limits(threads):
            for _ in range(args.rounds):
                for name, fns in runs:
                    for i, fn in enumerate(fns):
                        best[name][i] = min(best[name][i], _best(fn, args.seconds / 3))
                        time.sleep(0.05)  # OpenBLAS's workers keep spinning after a call
        print(f"\n{threads} thread(s), GFLOP/s    compiled  onnxruntime  NumPy  compiled/ort")
        for name, flops, *_ in cases:
            rate, anchor, other = (flops / t / 1e9 for t in best[name])
            print(f"  {name:28s} {rate:8.1f} {anchor:10.1f} {other:8.1f} {rate / anchor:9.2f}")
    _native.set_pool_threads(0)


if __name__ == "__main__":
    main()
