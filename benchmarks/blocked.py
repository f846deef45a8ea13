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
    .venv/bin/python benchmarks/blocked.py --layers --rounds 10

``--layers`` times single layers instead (grouped convolutions, BatchNormalization, Split,
Resize, ReduceMean): the node's own time (``time_nodes``) in an engine whose cost model made
it blocked against the same node in an engine kept LINEAR.
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


def _chosen(args: argparse.Namespace) -> Any:
    """The blocked format ``--format`` names (True: the CPU's own choice)."""
    from mini_infer_core.plugin import TensorFormat

    return True if args.format == "auto" else TensorFormat[args.format.upper()]


def bench(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import onnxruntime as ort
    from mini_infer_cpu_native import blocked

    import mini_infer_core as mi

    model, feeds = load(name)
    runs: dict[str, Any] = {}
    info: dict[str, Any] = {}
    for label, offered in (("blocked", _chosen(args)), ("linear", None)):
        blocked.set_offered(offered)
        try:
            engine = mi.Builder().build_engine(mi.parse_onnx(model), mi.BuilderConfig(
                device="cpu", time_tactics=not args.no_timing))
        finally:
            blocked.set_offered(_chosen(args))
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


def _layer_model(target: onnx.NodeProto, x_shape: tuple[int, ...],
                 inits: dict[str, np.ndarray[Any, Any]]) -> onnx.ModelProto:
    """``target`` (reading ``t``) between two Relus before and two after each output, so that
    the builder's cost model keeps the run blocked (a lone node stays LINEAR)."""
    n = helper.make_node
    nodes = [n("Relu", ["x"], ["r0"]), n("Relu", ["r0"], ["t"]), target]
    outs = []
    for o in target.output:
        nodes += [n("Relu", [o], [o + "_r"]), n("Relu", [o + "_r"], [o + "_y"])]
        outs.append(o + "_y")
    graph = helper.make_graph(
        nodes, "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _layers() -> dict[str, tuple[onnx.ModelProto, tuple[int, ...]]]:
    """The kernels of issue 26 item 3's third round, one layer each (its input's shape)."""
    rng = np.random.default_rng(5)
    n = helper.make_node

    def w(*shape: int) -> np.ndarray[Any, Any]:
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    def grouped(c: int, g: int, hw: int) -> tuple[onnx.ModelProto, tuple[int, ...]]:
        shape = (1, c, hw, hw)
        node = n("Conv", ["t", "w"], ["y"], kernel_shape=[3, 3], pads=[1] * 4, group=g)
        return _layer_model(node, shape, {"w": w(c, c // g, 3, 3)}), shape

    c = 256
    bn = {k: v.astype(np.float32) for k, v in (
        ("s", 1 + 0.1 * rng.standard_normal(c)), ("b", rng.standard_normal(c)),
        ("m", rng.standard_normal(c)), ("v", 1 + rng.random(c)))}
    sc = {"sc": np.asarray([1, 1, 2, 2], np.float32)}
    return {
        "grouped 3x3 128 g4 56x56": grouped(128, 4, 56),
        "grouped 3x3 256 g8 28x28": grouped(256, 8, 28),
        "grouped 3x3 512 g32 14x14": grouped(512, 32, 14),
        "BatchNorm 256 56x56": (_layer_model(n("BatchNormalization", ["t", "s", "b", "m", "v"],
                                               ["y"]), (1, c, 56, 56), bn), (1, c, 56, 56)),
        "Split 256->96+160 56x56": (_layer_model(
            n("Split", ["t", "sp"], ["y0", "y1"], axis=1), (1, c, 56, 56),
            {"sp": np.asarray([96, 160], np.int64)}), (1, c, 56, 56)),
        "Resize linear 2x 128 40x40": (_layer_model(
            n("Resize", ["t", "", "sc"], ["y"], mode="linear"), (1, 128, 40, 40), sc),
            (1, 128, 40, 40)),
        "Resize nearest 2x 128 40x40": (_layer_model(
            n("Resize", ["t", "", "sc"], ["y"], mode="nearest"), (1, 128, 40, 40), sc),
            (1, 128, 40, 40)),
        "ReduceMean 512 28x28": (_layer_model(
            n("ReduceMean", ["t"], ["y"], axes=[2, 3]), (1, 512, 28, 28), {}),
            (1, 512, 28, 28)),
    }


def layers(args: argparse.Namespace) -> None:
    """Each layer's node time (``time_nodes``, the minimum and median of ``--rounds`` x
    ``--runs`` runs, the two engines interleaved) in an engine the cost model made blocked
    and in one kept LINEAR (``negotiate_formats=False``): the node alone, no reformats."""
    import mini_infer_core as mi

    print(f"{'layer':28} {'blocked us':>11} {'linear us':>10} {'bl/lin':>7} {'min bl/lin':>10}"
          "  blocked?")
    for name, (model, shape) in _layers().items():
        feeds = {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
        ctxs, at, fmt = {}, {}, ""
        for label, negotiate in (("blocked", True), ("linear", False)):
            engine = mi.Builder().build_engine(mi.parse_onnx(model), mi.BuilderConfig(
                device="cpu", time_tactics=False, negotiate_formats=negotiate))
            at[label] = next(i for i, nd in enumerate(engine.nodes)
                             if nd.op_type not in ("Relu", "Reformat"))
            if negotiate:
                fmt = engine.tensors[engine.nodes[at[label]].outputs[0]].format.name
            ctxs[label] = engine.create_execution_context()
        times: dict[str, list[float]] = {k: [] for k in ctxs}
        for r in range(args.rounds):
            for label in (("blocked", "linear") if r % 2 else ("linear", "blocked")):
                for _ in range(args.runs):
                    times[label].append(ctxs[label].time_nodes(feeds)[at[label]] * 1e6)
        med = {k: statistics.median(v) for k, v in times.items()}
        low = {k: min(v) for k, v in times.items()}
        print(f"{name:28} {med['blocked']:11.1f} {med['linear']:10.1f} "
              f"{med['blocked'] / med['linear']:7.2f} {low['blocked'] / low['linear']:10.2f}"
              f"  {fmt}", flush=True)
        for ctx in ctxs.values():
            ctx.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=MODELS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-timing", action="store_true",
                        help="the builder's cost model chooses the formats, not timing")
    parser.add_argument("--format", choices=["auto", "chw8", "chw16"], default="auto",
                        help="the blocked format offered (chw8 on an AVX-512 CPU: the AVX2 "
                             "kernels); auto: the CPU's")
    parser.add_argument("--layers", action="store_true",
                        help="time single layers (grouped Conv, BatchNormalization, Split, "
                             "Resize, ReduceMean) blocked against LINEAR instead of models")
    args = parser.parse_args(argv)
    from mini_infer_cpu_native import blocked

    import mini_infer_core as mi

    mi.threads.set_num_threads(args.threads)
    blocked.set_offered(_chosen(args))
    print(f"blocked format offered: {blocked.offered()}; threads {args.threads}")
    if args.layers:
        layers(args)
        return 0
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
