"""Our MatMulNBits (4-bit weights, ``_qnbits.c``) against onnxruntime's (MLAS SQNBitGemm), at
accuracy_level 0 (float compute) and 4 (int8 compute), and against our own float32 MatMul of
the dequantized weights, on decoder-sized layers (M = 1..128 rows: a decoding step to a
128-token prompt), in one process, on the same inputs.

    python plugin_packages/cpu_native/benchmarks/nbits_shapes.py [--threads 1 2] [--isa avx2]

Every side is a one-node model with the weights as initializers (blocks of 32, symmetric, as
``MatMulNBitsQuantizer`` writes them), run through its engine's ``InferenceSession.run``, with
the thread count given to both. Each figure is the best of the runs of a time budget, the
engines interleaved round by round so that a busy neighbour slows all alike; the machine is
shared and noisy, so read the ratios, not the milliseconds. ``--isa`` caps our kernels
(plain, avx2, avx512vnni) for a comparison of the paths on one CPU.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
from mini_infer_cpu_native import _qnbits
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core
from mini_infer_core.threads import set_num_threads

SHAPES = [(1, 384, 1536), (4, 384, 1536), (32, 384, 1536), (128, 384, 1536), (1, 384, 16384),
          (128, 384, 16384), (128, 1536, 384)]
BLOCK = 32
RNG = np.random.default_rng(0)


def _model(node: onnx.NodeProto, k: int, n: int, inits: dict[str, np.ndarray]
           ) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["M", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", n])],
        [numpy_helper.from_array(v, name) for name, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                   helper.make_opsetid("com.microsoft", 1)],
                             ir_version=10)


def _models(k: int, n: int) -> dict[str, onnx.ModelProto]:
    kb = k // BLOCK
    q = RNG.integers(0, 16, (n, kb * BLOCK)).astype(np.uint8)
    b = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(n, kb, BLOCK // 2)
    scales = RNG.uniform(0.01, 0.1, (n, kb)).astype(np.float32)
    w = ((q.astype(np.float32) - 8) * np.repeat(scales, BLOCK, axis=1)).T.copy()
    out = {}
    for level in (0, 4):
        node = helper.make_node("MatMulNBits", ["a", "b", "s"], ["y"], domain="com.microsoft",
                                K=k, N=n, bits=4, block_size=BLOCK, accuracy_level=level)
        out[f"nbits level {level}"] = _model(node, k, n, {"b": b, "s": scales})
    out["MatMul f32"] = _model(helper.make_node("MatMul", ["a", "w"], ["y"]), k, n, {"w": w})
    return out


def _best(run: Callable[..., object], feeds: dict[str, np.ndarray], budget: float) -> float:
    """The shortest of ``run(None, feeds)`` over ``budget`` seconds."""
    best, end = float("inf"), time.perf_counter() + budget
    while time.perf_counter() < end:
        t = time.perf_counter()
        run(None, feeds)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--isa", choices=_qnbits.ISAS, help="cap our kernels")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per side per round")
    args = parser.parse_args()
    if args.isa:
        print("our kernels:", _qnbits.use_nbits_isa(args.isa))
    for threads in args.threads:
        set_num_threads(threads)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        print(f"\n{threads} thread(s), ms (best of each budget, 3 interleaved rounds)")
        print(f"{'M x K x N':>18} {'what':>14} {'mini':>9} {'ort':>9} {'mini/ort':>9}")
        for m, k, n in SHAPES:
            a = RNG.standard_normal((m, k)).astype(np.float32)
            for what, model in _models(k, n).items():
                ours = mini_infer_core.InferenceSession(model, device="cpu")
                theirs = ort.InferenceSession(model.SerializeToString(), opts,
                                              providers=["CPUExecutionProvider"])
                mine, other = float("inf"), float("inf")
                for _ in range(3):
                    mine = min(mine, _best(ours.run, {"a": a}, args.budget))
                    other = min(other, _best(theirs.run, {"a": a}, args.budget))
                print(f"{f'{m} x {k} x {n}':>18} {what:>14} {mine * 1e3:9.3f} {other * 1e3:9.3f}"
                      f" {mine / other:9.2f}")


if __name__ == "__main__":
    main()
