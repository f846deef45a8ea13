"""Our int8 products (MatMulInteger, QLinearMatMul on the integer GEMM, ``_qgemm.c``) against
onnxruntime's (MLAS) and against our own float32 MatMul, on transformer-sized linear layers
(M = 1..128 rows, K = 768, N = 768 / 3072), in one process, on the same inputs; and
onnxruntime's ``quantize_dynamic`` of ``x @ W + bias`` (the dynamic-int8 pattern, fused on
both sides) against the float32 model it came from.

    python plugin_packages/cpu_native/benchmarks/qgemm_shapes.py [--threads 1 2] [--isa avx2]

Every side is a one-node model with the weights as an initializer (u8 activations, s8
weights, per-tensor zero points; QLinearMatMul with u8 output), run through its engine's
``InferenceSession.run`` (so the figures include each engine's per-run cost, a few us), with
the thread count given to both (onnxruntime's ``intra_op_num_threads``, our pool's limit).
Each figure is the best of the runs of a time budget, the engines interleaved round by round
so that a busy neighbour slows all alike; the machine is shared and noisy, so read the ratios,
not the microseconds. ``--isa`` caps our integer kernels (plain, avx2, avxvnni, avx512vnni)
for a comparison of the paths on one CPU.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from mini_infer_cpu_native import _qgemm
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core
from mini_infer_core.threads import set_num_threads

SHAPES = [(1, 768, 768), (1, 768, 3072), (8, 768, 768), (32, 768, 768), (32, 768, 3072),
          (128, 768, 768), (128, 768, 3072)]
RNG = np.random.default_rng(0)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8,
        np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32}


def _model(op: str, a: np.ndarray, inits: dict[str, np.ndarray], inputs: list[str],
           out: Any) -> onnx.ModelProto:
    node = helper.make_node(op, inputs, ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", ELEM[a.dtype], list(a.shape))],
        [helper.make_tensor_value_info("y", ELEM[np.dtype(out)], None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _models(m: int, k: int, n: int) -> dict[str, tuple[onnx.ModelProto, np.ndarray]]:
    a8 = RNG.integers(0, 256, (m, k)).astype(np.uint8)
    w8 = RNG.integers(-128, 128, (k, n)).astype(np.int8)
    af = RNG.standard_normal((m, k)).astype(np.float32)
    wf = (RNG.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    scale: dict[str, np.ndarray] = {"as": np.array(0.02, np.float32), "az": np.array(128, np.uint8),
             "bs": np.array(0.01, np.float32), "bz": np.array(0, np.int8),
             "ys": np.array(0.5, np.float32), "yz": np.array(128, np.uint8)}
    return {
        "MatMulInteger": (_model("MatMulInteger", a8, {"b": w8, "az": scale["az"],
                                                       "bz": scale["bz"]},
                                 ["a", "b", "az", "bz"], np.int32), a8),
        "QLinearMatMul": (_model("QLinearMatMul", a8, {**scale, "b": w8},
                                 ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], np.uint8), a8),
        "MatMul f32": (_model("MatMul", af, {"b": wf}, ["a", "b"], np.float32), af),
    }


def _dynamic(m: int, k: int, n: int) -> dict[str, tuple[onnx.ModelProto, np.ndarray]]:
    """x @ W + bias in float32, and quantized by onnxruntime's quantize_dynamic (s8 weights
    per tensor: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul -> Add, which our
    MatMulInteger absorbs after the Cast and onnxruntime turns into DynamicQuantizeMatMul)."""
    import tempfile
    from pathlib import Path

    from onnxruntime.quantization import QuantType, quantize_dynamic

    w = (RNG.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    x = RNG.standard_normal((m, k)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["h"]), helper.make_node("Add", ["h", "bias"],
                                                                           ["y"])],
        "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with tempfile.TemporaryDirectory() as d:
        onnx.save(model, f"{d}/f.onnx")
        quantize_dynamic(f"{d}/f.onnx", f"{d}/q.onnx", weight_type=QuantType.QInt8)
        quantized = onnx.load(str(Path(d) / "q.onnx"))
    return {"dyn int8+bias": (quantized, x), "f32 MatMul+bias": (model, x)}


def _best(fns: dict[str, Callable[[], Any]], seconds: float) -> dict[str, float]:
    """The best time of each, the functions interleaved round by round."""
    best = dict.fromkeys(fns, float("inf"))
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=1.5, help="per shape and thread count")
    parser.add_argument("--isa", choices=_qgemm.ISAS, default=None)
    args = parser.parse_args()
    isa = _qgemm.use_qgemm_isa(args.isa)
    print(f"integer kernels: {isa}; the machine is shared: timings are noisy, compare ratios")
    print(f"{'threads':>7} {'M x K x N':>16} {'op':>14} {'ours us':>9} {'ort us':>9} "
          f"{'ours/ort':>9} {'int8/f32 (ours)':>16}")
    for threads in args.threads:
        set_num_threads(threads)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        for m, k, n in SHAPES:
            runs: dict[str, Callable[[], Any]] = {}
            for name, (model, a) in {**_models(m, k, n), **_dynamic(m, k, n)}.items():
                ours = mini_infer_core.InferenceSession(model, device="cpu")
                theirs = ort.InferenceSession(model.SerializeToString(), opts,
                                              providers=["CPUExecutionProvider"])
                feeds = {"a": a}
                runs[f"ours {name}"] = partial(ours.run, None, feeds)
                runs[f"ort {name}"] = partial(theirs.run, None, feeds)
            best = _best(runs, args.seconds)
            for name in ("MatMulInteger", "QLinearMatMul", "MatMul f32", "dyn int8+bias",
                         "f32 MatMul+bias"):
                o, t = best[f"ours {name}"], best[f"ort {name}"]
                f32 = best["ours f32 MatMul+bias" if name.startswith("dyn") else
                           "ours MatMul f32"]
                vs_f32 = f"{f32 / o:16.2f}" if "f32" not in name else f"{'':>16}"
                print(f"{threads:>7} {f'{m}x{k}x{n}':>16} {name:>14} {o * 1e6:9.1f} "
                      f"{t * 1e6:9.1f} {o / t:9.2f} {vs_f32}")
    set_num_threads(None)


if __name__ == "__main__":
    main()
