"""cpu_native's channel-blocked kernels (``blocked.py``: CHW16 on AVX-512, CHW8 on AVX2)
against the same engine kept LINEAR, and onnxruntime, all in one process on the same inputs.

Per model, three engines are built from the same ``onnx.ModelProto``: mini-infer with the
blocked formats offered (the builder chooses where they pay, by timing unless
``--no-timing``), mini-infer with none offered (``blocked.set_offered(None)``: every tensor
LINEAR, as before the blocked kernels), and onnxruntime (``CPUExecutionProvider``, no
spinning). After a warm-up, ``--rounds`` rounds run each engine ``--runs`` times, the order
rotating from round to round so that the machine's drifts hit all alike; the table gives each
engine's median and minimum per-run time and the ratios blocked/linear and blocked/ort of
the medians. On a shared machine compare the ratios, not the milliseconds.

Models: onnx's light CNNs (``light_<name>``, random well-scaled weights, logits), a
MobileNetV2-shaped net made here (``mobilenet_v2_like``: inverted residual blocks, ReLU6,
random weights; its widths are MobileNetV2's, 224x224) and ``resnext_neck_like`` (grouped
convolutions, standalone BatchNormalization, Split, Resize, ReduceMean: see its function).

    .venv/bin/python benchmarks/blocked.py
    .venv/bin/python benchmarks/blocked.py --models squeezenet mobilenet_v2_like --threads 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MODELS = ["mobilenet_v2_like", "resnext_neck_like", "squeezenet", "shufflenet", "resnet50",
          "inception_v1"]


def mobilenet_v2_like(seed: int = 0) -> onnx.ModelProto:
    """MobileNetV2's layer shapes (BatchNormalization folded away), random weights."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: dict[str, np.ndarray[Any, Any]] = {}

    def conv(x: str, c: int, m: int, k: int, s: int, group: int = 1, act: bool = True) -> str:
        i = len(nodes)
        w, b, y = f"w{i}", f"b{i}", f"c{i}"
        fan = c // group * k * k
        inits[w] = (rng.standard_normal((m, c // group, k, k)) / np.sqrt(fan)).astype(
            np.float32)
        inits[b] = (rng.standard_normal(m) * 0.1).astype(np.float32)
        nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k],
                                      strides=[s, s], pads=[k // 2] * 4, group=group))
        if not act:
            return y
        nodes.append(helper.make_node("Clip", [y, "zero", "six"], [y + "r"]))
        return y + "r"

    inits["zero"], inits["six"] = np.array(0, np.float32), np.array(6, np.float32)
    x, c = conv("x", 3, 32, 3, 2), 32
    for t, m, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            h = conv(x, c, c * t, 1, 1) if t != 1 else x
            h = conv(h, c * t, c * t, 3, stride, group=c * t)
            h = conv(h, c * t, m, 1, 1, act=False)
            if stride == 1 and c == m:
                nodes.append(helper.make_node("Add", [h, x], [h + "a"]))
                h += "a"
            x, c = h, m
    x = conv(x, c, 1280, 1, 1)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["g"]))
    nodes.append(helper.make_node("Flatten", ["g"], ["f"]))
    inits["fc"] = (rng.standard_normal((1280, 1000)) * 0.03).astype(np.float32)
    nodes.append(helper.make_node("MatMul", ["f", "fc"], ["y"]))
    graph = helper.make_graph(
        nodes, "mobilenet_v2_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def resnext_neck_like(seed: int = 0) -> onnx.ModelProto:
    """The kernels of issue 26 item 3's third round together: ResNeXt-style bottlenecks
    (grouped 3x3 convolutions of 4 groups of whole blocks), standalone pre-activation
    BatchNormalization + Relu, a feature-pyramid neck (Split on channels, linear and nearest
    2x Resize, Add) and a ReduceMean head; 160x160, random weights."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: dict[str, np.ndarray[Any, Any]] = {}
    n = helper.make_node

    def const(name: str, v: Any) -> str:
        inits[name] = np.asarray(v)
        return name

    def conv(x: str, c: int, m: int, k: int, s: int = 1, group: int = 1) -> str:
        i = len(nodes)
        fan = c // group * k * k
        w = const(f"w{i}", (rng.standard_normal((m, c // group, k, k)) / np.sqrt(fan)
                            ).astype(np.float32))
        b = const(f"b{i}", (rng.standard_normal(m) * 0.1).astype(np.float32))
        nodes.append(n("Conv", [x, w, b], [f"c{i}"], kernel_shape=[k, k], strides=[s, s],
                       pads=[k // 2] * 4, group=group))
        return f"c{i}"

    def bn_relu(x: str, c: int) -> str:
        i = len(nodes)
        args = [const(f"bn{i}{p}", v.astype(np.float32)) for p, v in (
            ("s", 1 + 0.1 * rng.standard_normal(c)), ("b", 0.1 * rng.standard_normal(c)),
            ("m", 0.1 * rng.standard_normal(c)), ("v", 1 + 0.1 * rng.random(c)))]
        nodes.append(n("BatchNormalization", [x, *args], [f"bn{i}"]))
        nodes.append(n("Relu", [f"bn{i}"], [f"r{i}"]))
        return f"r{i}"

    x, c = conv("x", 3, 64, 3, 2), 64
    feats = []
    for width, m, stride in [(128, 128, 1), (256, 256, 2), (256, 256, 1)]:
        h = bn_relu(x, c)
        h = conv(h, c, width, 1)
        h = bn_relu(h, width)
        h = conv(h, width, width, 3, stride, group=4)
        h = bn_relu(h, width)
        h = conv(h, width, m, 1)
        sc = x if stride == 1 and c == m else conv(x, c, m, 1, stride)
        nodes.append(n("Add", [h, sc], [h + "a"]))
        x, c = h + "a", m
        feats.append((x, c))
    top, ct = feats[-1]
    low, cl = feats[0]
    parts = const("split", np.asarray([96, ct - 96], np.int64))
    nodes.append(n("Split", [top, parts], ["sp0", "sp1"], axis=1))
    scales = const("scales", np.asarray([1, 1, 2, 2], np.float32))
    nodes.append(n("Resize", ["sp1", "", scales], ["up1"], mode="linear"))
    nodes.append(n("Resize", ["sp0", "", scales], ["up0"], mode="nearest"))
    lat = conv(low, cl, ct - 96, 1)
    nodes.append(n("Add", ["up1", lat], ["p1"]))
    nodes.append(n("ReduceMean", ["p1"], ["g1"], axes=[2, 3]))
    nodes.append(n("ReduceMean", ["up0"], ["g0"], axes=[2, 3]))
    nodes.append(n("Concat", ["g0", "g1"], ["g"], axis=1))
    nodes.append(n("Flatten", ["g"], ["f"]))
    fc = const("fc", (rng.standard_normal((ct, 100)) * 0.05).astype(np.float32))
    nodes.append(n("MatMul", ["f", fc], ["y"]))
    graph = helper.make_graph(
        nodes, "resnext_neck_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 160, 160])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def load(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray[Any, Any]]]:
    if name == "resnext_neck_like":
        rng = np.random.default_rng(2)
        return resnext_neck_like(), {"x": rng.standard_normal((1, 3, 160, 160)).astype(
            np.float32)}
    if name == "mobilenet_v2_like":
        rng = np.random.default_rng(1)
        return mobilenet_v2_like(), {"x": rng.standard_normal((1, 3, 224, 224)).astype(
            np.float32)}
    from mini_infer_core.testing.light_models import (
        default_inputs,
        light_model_path,
        logits_model,
        randomize_weights,
    )

    model = randomize_weights(logits_model(onnx.load(str(light_model_path(name)))))
    return model, default_inputs(model)


def bench(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import onnxruntime as ort
    from mini_infer_cpu_native import blocked

    import mini_infer_core as mi

    model, feeds = load(name)
    runs: dict[str, Any] = {}
    info: dict[str, Any] = {}
    for label, offered in (("blocked", True), ("linear", None)):
        blocked.set_offered(offered)
        try:
            engine = mi.Builder().build_engine(mi.parse_onnx(model), mi.BuilderConfig(
                device="cpu", time_tactics=not args.no_timing))
        finally:
            blocked.set_offered(True)
        ctx = engine.create_execution_context()
        runs[label] = lambda ctx=ctx: list(ctx.execute(feeds).values())
        info[label] = engine.build_info.get("formats", {})
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    runs["ort"] = lambda: sess.run(None, feeds)
    want = np.asarray(runs["ort"]()[0])
    err = {k: float(np.linalg.norm(np.asarray(runs[k]()[0]) - want) / np.linalg.norm(want))
           for k in ("blocked", "linear")}
    times: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for r in range(args.rounds):
        for k in order[r % 3:] + order[: r % 3]:
            for _ in range(args.runs):
                t0 = time.perf_counter()
                runs[k]()
                times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    low = {k: min(v) * 1e3 for k, v in times.items()}
    formats = info["blocked"]
    summary = (f"{formats.get('reformats', 0)} reformats, "
               f"{sum(formats.get('tensors', {}).values())} blocked tensors")
    return {"model": name, "median_ms": med, "min_ms": low, "rel_l2": err,
            "blocked_formats": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=MODELS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-timing", action="store_true",
                        help="the builder's cost model chooses the formats, not timing")
    args = parser.parse_args(argv)
    from mini_infer_cpu_native import blocked

    import mini_infer_core as mi

    mi.threads.set_num_threads(args.threads)
    print(f"blocked format offered: {blocked.offered()}; threads {args.threads}")
    print(f"{'model':20} {'blocked ms':>11} {'linear ms':>10} {'ort ms':>8} "
          f"{'bl/lin':>7} {'bl/ort':>7} {'lin/ort':>7}  min bl/lin  rel L2   formats")
    for name in args.models:
        r = bench(name, args)
        m, lo = r["median_ms"], r["min_ms"]
        print(f"{name:20} {m['blocked']:11.2f} {m['linear']:10.2f} {m['ort']:8.2f} "
              f"{m['blocked'] / m['linear']:7.2f} {m['blocked'] / m['ort']:7.2f} "
              f"{m['linear'] / m['ort']:7.2f}  {lo['blocked'] / lo['linear']:10.2f}  "
              f"{max(r['rel_l2'].values()):.1e}  {r['blocked_formats']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
