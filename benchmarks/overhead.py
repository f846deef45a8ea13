"""The engine's own cost per run and per node: chains of Add nodes on a 1×1 tensor, where the
kernels do almost nothing, so what a run costs is the run path's overhead. onnxruntime runs
the same models in the same process for comparison.

    python benchmarks/overhead.py [--nodes 1 5 1000] [--repeat 200] [--loop]

For each chain length: the best microseconds per ``InferenceSession.run(None, feeds)`` of
mini-infer and of onnxruntime (graph optimizations off, so that it runs every node), timed
interleaved (``mini_infer_core.testing.bench.interleaved``: a sample of each in turn, the
least disturbed kept); then the cost per node (the slope between the shortest and the longest
chain) and the fixed cost of a run (the shortest chain's time less its nodes at that slope).
``--loop`` adds, in the same interleaving, mini-infer with ``MINI_INFER_DIRECT_RUN=0``: the
plan's steps run by the context's loop rather than by the plan's generated function
(``engine/_direct.py``), the run path before the small-model path.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from mini_infer_core.testing.bench import session_with_env


def chain(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Add", [f"t{i}", "one"], [f"t{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 1])],
        [onnx.numpy_helper.from_array(np.ones((1, 1), np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _session(model: onnx.ModelProto, direct: bool) -> Any:
    # the variable is read when the session's context is made (its first run)
    return session_with_env(model, {"t0": np.zeros((1, 1), np.float32)},
                            {"MINI_INFER_DIRECT_RUN": "1" if direct else "0"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 5, 1000])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--loop", action="store_true",
                    help="also time the steps run by the context's loop (no generated run)")
    args = ap.parse_args()
    from mini_infer_core.testing.bench import interleaved

    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    x = np.zeros((1, 1), np.float32)
    labels = ["mini-infer"] + (["mini-infer, loop"] if args.loop else []) + \
        (["onnxruntime"] if ort is not None else [])
    times: dict[int, list[float]] = {}
    for n in sorted(set(args.nodes)):
        model = chain(n)
        calls: list[Callable[[], Any]] = []
        sess = _session(model, direct=True)
        assert float(sess.run(None, {"t0": x})[0][0, 0]) == n
        calls.append(partial(sess.run, None, {"t0": x}))
        if args.loop:
            calls.append(partial(_session(model, direct=False).run, None, {"t0": x}))
        if ort is not None:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.intra_op_num_threads = so.inter_op_num_threads = 1
            theirs = ort.InferenceSession(model.SerializeToString(), so,
                                          providers=["CPUExecutionProvider"])
            calls.append(partial(theirs.run, None, {"t0": x}))
        times[n] = interleaved(calls, args.repeat)
        cells = ", ".join(f"{label} {t * 1e6:,.2f} us" for label, t in
                          zip(labels, times[n], strict=True))
        print(f"{n} Add node{'s' * (n != 1)} on 1x1, per run: {cells}", flush=True)
    if len(times) > 1:
        lo, hi = min(times), max(times)
        for k, label in enumerate(labels):
            per_node = (times[hi][k] - times[lo][k]) / (hi - lo)
            fixed = times[lo][k] - lo * per_node
            print(f"{label}: {per_node * 1e6:.2f} us per node, {fixed * 1e6:.2f} us per run "
                  f"besides its nodes")
    if ort is None:
        print("onnxruntime not installed")


if __name__ == "__main__":
    main()
