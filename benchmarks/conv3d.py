"""3-D convolutions (video networks) against onnxruntime: the layers of R3D-18 (its stem, the
3x3x3 convolutions of its four stages, a strided one and a 1x1x1 downsample) and R(2+1)D's
factored (1, 3, 3) and (3, 1, 1) ones, each a one-node model (Conv + Relu, random weights)
built with ``onnx.helper``; nothing is downloaded.

Per layer and thread count, in one process on the same input: mini-infer (a session's build:
no tactic timing, so the path an untimed build picks) and onnxruntime (``intra_op_num_threads``,
no spinning), each timed in blocks of runs after a pause, alternating, the median of the block
medians; the ratio mini/ort per layer and its geometric mean, and the largest relative L2
difference of the outputs.

    .venv/bin/python benchmarks/conv3d.py                  # 1 and 2 threads
    .venv/bin/python benchmarks/conv3d.py --threads 2 --blocks 5
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.threads import set_num_threads

#: (C in, C out, T, H, W, kernel, strides, pads (begin = end))
LAYERS = [
    (3, 64, 16, 112, 112, (3, 7, 7), (1, 2, 2), (1, 3, 3)),
    (64, 64, 16, 56, 56, (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    (64, 128, 16, 56, 56, (3, 3, 3), (2, 2, 2), (1, 1, 1)),
    (128, 128, 8, 28, 28, (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    (256, 256, 4, 14, 14, (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    (512, 512, 2, 7, 7, (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    (64, 128, 16, 56, 56, (1, 1, 1), (2, 2, 2), (0, 0, 0)),
    (64, 64, 16, 56, 56, (1, 3, 3), (1, 1, 1), (0, 1, 1)),
    (64, 64, 16, 56, 56, (3, 1, 1), (1, 1, 1), (1, 0, 0)),
]


def layer(spec: tuple[Any, ...], rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    cin, cout, t, h, w, k, s, p = spec
    weights = (rng.standard_normal((cout, cin, *k)) * 0.05).astype(np.float32)
    bias = rng.standard_normal(cout).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=list(k),
                              strides=list(s), pads=list(p) * 2),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(
        nodes, "conv3d", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                         [1, cin, t, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.standard_normal((1, cin, t, h, w)).astype(np.float32)


def block(session: Any, feeds: dict[str, np.ndarray], runs: int, pause: float) -> float:
    """The median of ``runs`` runs after a pause (the other engine's threads settle)."""
    time.sleep(pause)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--runs", type=int, default=6, help="runs per block")
    parser.add_argument("--pause", type=float, default=0.3)
    args = parser.parse_args(argv)
    for threads in args.threads:
        set_num_threads(threads)
        ratios, worst = [], 0.0
        print(f"== {threads} thread(s): ms (median of block medians)")
        for spec in LAYERS:
            model, x = layer(spec, np.random.default_rng(0))
            opts = ort.SessionOptions()
            opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            theirs = ort.InferenceSession(model.SerializeToString(), opts,
                                          providers=["CPUExecutionProvider"])
            ours = mi.InferenceSession(model, device="cpu")
            want, got = theirs.run(None, {"x": x})[0], ours.run(None, {"x": x})[0]
            worst = max(worst, float(np.linalg.norm(got - want) / np.linalg.norm(want)))
            mine, ort_ms = [], []
            for _ in range(args.blocks):
                mine.append(block(ours, {"x": x}, args.runs, args.pause))
                ort_ms.append(block(theirs, {"x": x}, args.runs, args.pause))
            a, b = float(np.median(mine)) * 1e3, float(np.median(ort_ms)) * 1e3
            ratios.append(a / b)
            cin, cout, t, h, w, k, s, _ = spec
            print(f"{cin:>4}->{cout:<4} {t}x{h}x{w} k{k} s{s}: mini {a:7.1f}  ort {b:7.1f}  "
                  f"mini/ort {a / b:.2f}", flush=True)
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geomean mini/ort {geo:.2f} over {len(ratios)} layers; largest rel L2 "
              f"{worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
