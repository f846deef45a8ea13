"""The Python cost of mini-infer-cpu-native's compiled calls: chains of small nodes whose
kernels do little (so the time per node is mostly the plugin's Python and the ctypes call),
and the replay of recorded calls (``_native.run_calls``) alone.

    python plugin_packages/cpu_native/benchmarks/call_overhead.py [--nodes 40] [--repeat 300]

Figures are medians in microseconds per node (or per call); compare two versions on the same
machine, in the same conditions (the timings of a shared machine are noisy).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def _chain(op: str, n: int, shape: tuple[int, ...]) -> onnx.ModelProto:
    c = shape[1]
    nodes, inits = [], []
    for i in range(n):
        src, dst = f"t{i}", f"t{i + 1}"
        if op == "depthwise":
            inits.append(numpy_helper.from_array(
                (RNG.standard_normal((c, 1, 3, 3)) * 0.3).astype(np.float32), f"w{i}"))
            nodes.append(helper.make_node("Conv", [src, f"w{i}"], [dst], group=c,
                                          pads=[1, 1, 1, 1]))
        elif op in ("winograd", "pointwise"):
            k = 3 if op == "winograd" else 1
            inits.append(numpy_helper.from_array(
                (RNG.standard_normal((c, c, k, k)) * 0.05).astype(np.float32), f"w{i}"))
            inits.append(numpy_helper.from_array(
                RNG.standard_normal(c).astype(np.float32), f"b{i}"))
            nodes.append(helper.make_node("Conv", [src, f"w{i}", f"b{i}"], [dst],
                                          pads=[k // 2] * 4))
        elif op == "MaxPool":
            nodes.append(helper.make_node("MaxPool", [src], [dst], kernel_shape=[3, 3],
                                          pads=[1, 1, 1, 1]))
        elif op == "LRN":
            nodes.append(helper.make_node("LRN", [src], [dst], size=3))
        elif op == "BatchNormalization":
            for name, val in (("s", 1.0), ("o", 0.0), ("m", 0.0), ("v", 1.0)):
                inits.append(numpy_helper.from_array(np.full(c, val, np.float32), f"{name}{i}"))
            nodes.append(helper.make_node("BatchNormalization",
                                          [src, f"s{i}", f"o{i}", f"m{i}", f"v{i}"], [dst]))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _median(fn: Callable[[], Any], repeat: int) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


CASES = [("depthwise", (1, 8, 6, 6)), ("winograd", (1, 32, 16, 16)),
         ("pointwise", (1, 16, 4, 4)), ("MaxPool", (1, 8, 6, 6)), ("LRN", (1, 8, 6, 6)),
         ("BatchNormalization", (1, 8, 6, 6))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1,
                    help="the compiled kernels' pool (default 1: no hand-off to time)")
    args = ap.parse_args()
    from mini_infer_cpu_native import _native

    import mini_infer_core as mi

    _native.set_pool_threads(args.threads)

    print(f"compiled GEMM (AVX-512) here: {_native.gemm_available()}; pool threads "
          f"{_native.pool_threads()}")
    for op, shape in CASES:
        engine = mi.load(_chain(op, args.nodes, shape),
                         config=mi.BuilderConfig(device="cpu", time_tactics=False))
        native = sum(n.plugin_namespace == "mini_infer.cpu_native" for n in engine.nodes)
        ctx = engine.create_execution_context()
        x = RNG.standard_normal(shape).astype(np.float32)
        t = _median(lambda ctx=ctx, x=x: ctx.execute({"t0": x}), args.repeat)
        print(f"{op:20s} {str(shape):16s} {t / args.nodes * 1e6:7.2f} us per node "
              f"({native}/{args.nodes} nodes compiled)")
        ctx.close()

    # replaying recorded calls alone: a tiny GEMM (on the caller, no pool) and Winograd's
    # transforms of a tiny image
    m = k = n = 8
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    bias = np.zeros(m, np.float32)
    calls = [_native.gemm_call(_native.pack_a(a), m, k, b, c, bias)] * 100
    t = _median(lambda: _native.run_calls(calls), args.repeat)
    print(f"{'replay gemm_call':20s} {'8x8x8':16s} {t / 100 * 1e6:7.2f} us per call")
    xw = RNG.standard_normal((4, 4, 4)).astype(np.float32)
    v = np.empty((16, 4, 4), np.float32)
    rows = np.empty(2 * 4 * (2 * 2 + 2), np.float32)
    y = np.empty((4, 4, 4), np.float32)
    calls = [_native.wino_in_call(xw, v, rows, (1, 1), 2, 0, 2),
             _native.wino_out_call(v, y, None, None, rows, 2, 0, 2, -np.inf, np.inf)] * 50
    t = _median(lambda: _native.run_calls(calls), args.repeat)
    print(f"{'replay wino calls':20s} {'C=4, 4x4':16s} {t / 100 * 1e6:7.2f} us per call")
    t = _median(lambda: _native.gemm_call(_native.pack_a(a), m, k, b, c, bias), args.repeat)
    print(f"{'make gemm_call':20s} {'8x8x8':16s} {t * 1e6:7.2f} us per call (with pack_a)")


if __name__ == "__main__":
    main()
