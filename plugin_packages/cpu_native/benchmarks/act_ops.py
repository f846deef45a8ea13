"""Elementwise activations, Softmax and LayerNormalization on transformer and ConvNeXt shapes:
one-node engines with mini-infer-cpu-native's compiled kernels, the same engines with the
node pinned to cpu_basic's NumPy kernel, and onnxruntime (spinning off), in one process on
the same input, interleaved, at 1 and 2 threads.

    python plugin_packages/cpu_native/benchmarks/act_ops.py [--repeat 40] [--threads 1 2]

Each figure is the minimum over ``--repeat`` runs (the machine is shared; the minimum is the
least disturbed), in milliseconds, with the ratios native / cpu_basic and native /
onnxruntime.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from threadpoolctl import threadpool_limits

import mini_infer_core
from mini_infer_core.testing.bench import best_ms, ort_session

RNG = np.random.default_rng(0)

# name, op, attributes, opset, shape, initializers (LayerNormalization's scale and bias)
CASES: list[tuple[str, str, dict[str, Any], int, tuple[int, ...]]] = [
    ("Erf ConvNeXt MLP", "Erf", {}, 13, (1, 3136, 384)),
    ("Gelu ConvNeXt MLP", "Gelu", {}, 20, (1, 3136, 384)),
    ("Gelu BERT FFN", "Gelu", {}, 20, (1, 128, 3072)),
    ("Gelu-tanh BERT FFN", "Gelu", {"approximate": "tanh"}, 20, (1, 128, 3072)),
    ("Sigmoid ConvNeXt MLP", "Sigmoid", {}, 13, (1, 3136, 384)),
    ("Swish ConvNeXt MLP", "Swish", {}, 24, (1, 3136, 384)),
    ("Tanh BERT FFN", "Tanh", {}, 13, (1, 128, 3072)),
    ("HardSwish ConvNeXt MLP", "HardSwish", {}, 14, (1, 3136, 384)),
    ("Softmax attention", "Softmax", {"axis": -1}, 13, (12, 128, 128)),
    ("LogSoftmax attention", "LogSoftmax", {"axis": -1}, 13, (12, 128, 128)),
    ("LayerNorm BERT", "LayerNormalization", {"axis": -1}, 17, (1, 128, 768)),
    ("LayerNorm ConvNeXt", "LayerNormalization", {"axis": -1}, 17, (1, 3136, 96)),
]


def _model(op: str, attrs: dict[str, Any], opset: int, shape: tuple[int, ...]
           ) -> onnx.ModelProto:
    inits = []
    inputs = ["x"]
    if op == "LayerNormalization":
        for name in ("scale", "bias"):
            inits.append(numpy_helper.from_array(
                RNG.standard_normal(shape[-1:]).astype(np.float32), name))
            inputs.append(name)
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


def _mini(model: onnx.ModelProto, pins: dict[str, str]) -> Callable[[np.ndarray], Any]:
    sess = mini_infer_core.InferenceSession(mini_infer_core.load(
        model, config=mini_infer_core.BuilderConfig(device="cpu", time_tactics=False,
                                                    pins=pins)))
    return lambda x: sess.run(None, {"x": x})


def _ort(model: onnx.ModelProto, threads: int) -> Callable[[np.ndarray], Any]:
    sess = ort_session(model, threads)
    return lambda x: sess.run(None, {"x": x})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    print(f"{'case':24} {'thr':>3} {'native ms':>10} {'cpu_basic':>10} {'ort ms':>8} "
          f"{'basic/nat':>9} {'nat/ort':>8}")
    for threads in args.threads:
        for name, op, attrs, opset, shape in CASES:
            model = _model(op, attrs, opset, shape)
            x = (RNG.standard_normal(shape) * 3).astype(np.float32)
            with threadpool_limits(threads):
                runners = {"native": _mini(model, {}),
                           "basic": _mini(model, {op: "mini_infer.cpu"}),
                           "ort": _ort(model, threads)}
                best = {k: float("inf") for k in runners}
                block = max(1, args.repeat // 4)
                for _ in range(4):  # interleaved blocks
                    for k, fn in runners.items():
                        time.sleep(0.05)
                        best[k] = min(best[k], best_ms(partial(fn, x), repeat=block, warmup=1))
            print(f"{name:24} {threads:>3} {best['native']:>10.3f} {best['basic']:>10.3f} "
                  f"{best['ort']:>8.3f} {best['basic'] / best['native']:>9.1f} "
                  f"{best['native'] / best['ort']:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
