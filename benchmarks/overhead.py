"""The engine's own cost per node: a chain of N Add nodes on a 1×1 tensor, where the kernels
do almost nothing, so the time per node is the execution loop's overhead. onnxruntime runs the
same model in the same process for comparison.

    python benchmarks/overhead.py [--nodes 1000] [--repeat 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def chain(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Add", [f"t{i}", "one"], [f"t{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 1])],
        [onnx.numpy_helper.from_array(np.ones((1, 1), np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def median_seconds(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    import mini_infer_core as mi

    model = chain(args.nodes)
    x = np.zeros((1, 1), np.float32)
    ctx = mi.load(model).create_execution_context()
    ours = ctx.execute({"t0": x})[f"t{args.nodes}"]
    assert float(ours[0, 0]) == args.nodes
    t_ours = median_seconds(lambda: ctx.execute({"t0": x}), args.repeat)
    line = (f"{args.nodes} Add nodes on 1x1: mini-infer {t_ours * 1e3:.2f} ms per run, "
            f"{t_ours / args.nodes * 1e6:.2f} us per node")
    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        t_ort = median_seconds(lambda: sess.run(None, {"t0": x}), args.repeat)
        line += (f"; onnxruntime {t_ort * 1e3:.2f} ms ({t_ort / args.nodes * 1e6:.2f} us per "
                 f"node, graph optimizations off)")
    except ImportError:
        line += "; onnxruntime not installed"
    print(line)


if __name__ == "__main__":
    main()
