"""``mini-infer compare``: run a model on two backends on the same inputs and compare their
outputs (polygraphy's ``run --compare``); ``--per-node`` finds the first node whose output
diverges.

Side ``a`` is a mini-infer device; side ``b`` a mini-infer device, ``onnxruntime`` or
``reference`` (onnx's ReferenceEvaluator). A mini-infer side builds the model into an engine
file, loads it back and runs it; its per-node values are read after each step of the loaded
engine as it runs (an engine whose shapes depend on data, which runs in segments, is built
again from a copy of the model that marks every tensor as an output). The other backends get
that copy of the model.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DeviceError, InputError, MiniInferError
from ..plugin import TensorFormat, from_format
from ..registry import PluginRegistry
from . import _args

__all__ = ["command", "tensor_error"]

_ANCHORS = ("onnxruntime", "reference")


@dataclass
class _Side:
    label: str
    run: Callable[[Mapping[str, Any]], dict[str, np.ndarray[Any, Any]]]
    #: every tensor's value for these inputs, and who made it (for a mini-infer side)
    tensors: Callable[[Mapping[str, Any]], dict[str, np.ndarray[Any, Any]]]
    makers: dict[str, str] = field(default_factory=dict)
    close: Callable[[], None] = lambda: None


def tensor_error(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], rtol: float,
                 atol: float) -> dict[str, Any]:
    """How far ``a`` is from ``b`` (the reference side): max abs and rel error, and whether
    every element satisfies |a-b| <= atol + rtol*|b| (NaN where both are NaN is equal)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return {"match": False, "why": f"shapes differ: {a.shape} vs {b.shape}",
                "max_abs": None, "max_rel": None}
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        x, y = a.astype(np.float64), b.astype(np.float64)
        nan_x, nan_y = np.isnan(x), np.isnan(y)
        with np.errstate(invalid="ignore"):  # inf - inf
            diff = np.abs(x - y)
        # NaN on both sides is equal, on one side infinitely far; equal infinities are equal
        diff = np.where(nan_x & nan_y | (x == y), 0.0, np.where(np.isnan(diff), np.inf, diff))
        with np.errstate(invalid="ignore"):  # 0 * inf
            ok = bool(np.all((diff == 0) | (diff <= atol + rtol * np.abs(y))))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(diff == 0, 0.0, diff / np.abs(y))
        rel = np.where(np.isnan(rel), np.inf, rel)
        why = None if ok else "values differ beyond the tolerances"
        if a.dtype != b.dtype and ok:
            why = f"dtypes differ ({a.dtype} vs {b.dtype}); values match"
        return {"match": ok, "why": why,
                "max_abs": float(diff.max()) if a.size else 0.0,
                "max_rel": float(rel.max()) if a.size else 0.0}
    same = bool(np.array_equal(a, b))
    diff_count = int(np.count_nonzero(a != b)) if a.size else 0
    return {"match": same, "why": None if same else f"{diff_count} element(s) differ",
            "max_abs": None, "max_rel": None}


def _marked_copy(model: Any) -> Any:
    """A copy of the model in which every node output of the main graph is a graph output."""
    import onnx

    marked = onnx.ModelProto()
    marked.CopyFrom(model)
    have = {o.name for o in marked.graph.output}
    for node in marked.graph.node:
        for name in node.output:
            if name and name not in have:
                marked.graph.output.append(onnx.ValueInfoProto(name=name))
                have.add(name)
    return marked


def _anchor(name: str, model: Any, path: str) -> _Side:
    marked: list[Any] = []

    def marked_model() -> Any:
        if not marked:
            marked.append(_marked_copy(model))
        return marked[0]

    if name == "onnxruntime":
        try:
            import onnxruntime as ort
        except ImportError:
            raise MiniInferError("--b onnxruntime: onnxruntime is not installed "
                                 "(pip install onnxruntime)") from None

        def session(m: Any) -> Any:
            try:
                return ort.InferenceSession(m.SerializeToString(),
                                            providers=["CPUExecutionProvider"])
            except Exception as exc:  # noqa: BLE001 - onnxruntime's own refusal, reported
                raise MiniInferError(f"onnxruntime cannot load {path}: "
                                     f"{_first_line(exc)}") from None

        def run_with(m: Any) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
            sess = session(m)
            names = [o.name for o in sess.get_outputs()]
            return lambda feeds: dict(zip(names, _guarded("onnxruntime", sess.run, None,
                                                          dict(feeds)), strict=True))
    else:
        from onnx.reference import ReferenceEvaluator

        def run_with(m: Any) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
            try:
                ref = ReferenceEvaluator(m)
            except Exception as exc:  # noqa: BLE001 - the evaluator's own refusal, reported
                raise MiniInferError(f"onnx's ReferenceEvaluator cannot load {path}: "
                                     f"{_first_line(exc)}") from None
            names = list(ref.output_names)
            return lambda feeds: dict(zip(names, _guarded("the ReferenceEvaluator", ref.run,
                                                          None, dict(feeds)), strict=True))

    run = run_with(model)
    return _Side(name, run, lambda feeds: run_with(marked_model())(feeds))


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:400] + " ...") if len(text) > 400 else text or type(exc).__name__


def _guarded(who: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - another backend's failure, reported as ours
        raise MiniInferError(f"{who} failed to run the model: {_first_line(exc)}") from None


def _mini_infer(device: str, reg: PluginRegistry, model: Any, args: argparse.Namespace,
                tmp: str) -> tuple[_Side, Any]:
    from ..builder import BuilderConfig
    from ..runtime import Runtime
    from .bench import build_for_shapes

    dev = reg.get_device(device)
    if dev is None:
        known = ", ".join(reg.device_names()) or "none"
        raise DeviceError(f"unknown device {device!r}; mini-infer devices here: {known}, or "
                          f"compare against {' or '.join(_ANCHORS)}")
    ok, reason = dev.availability()
    if not ok:
        raise DeviceError(f"device {device!r} is unavailable here: {reason}; compare on a "
                          f"machine that has it, or against {' or '.join(_ANCHORS)}")
    config = BuilderConfig(device=device, time_tactics=not args.no_tactic_timing)
    built = build_for_shapes(reg, args.model, config, _args.parse_shapes(args.shape))
    path = Path(tmp) / f"{device}.engine"
    built.save(str(path))
    engine = Runtime(reg).load_engine(path)
    ctx = engine.create_execution_context()
    makers = {out: f"node {nd.name!r} ({nd.op_type}) ran {nd.plugin_namespace}::"
                   f"{nd.plugin_name} v{nd.plugin_version} from {nd.distribution} on "
                   f"{nd.device}"
              for nd in engine.nodes for out in nd.outputs}

    def tensors(feeds: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        values = dict(feeds)
        values.update(ctx.execute(feeds))
        if not ctx.steps:  # runs in segments: an engine of the marked copy gives them all
            marked = build_for_shapes(reg, _marked_copy(model), config,
                                      {n: tuple(np.shape(v)) for n, v in feeds.items()})
            with marked.create_execution_context() as mctx:
                values.update(mctx.execute(feeds))
            return values
        sched = ctx.schedule
        for nd, step in zip(engine.nodes, ctx.steps, strict=True):
            step.plugin.enqueue(step.inputs, step.outputs, step.workspace, step.stream)
            step.stream.synchronize()
            host = ctx.devices[nd.device]
            for name, arr in zip(nd.outputs, step.outputs, strict=False):
                if arr is not None:
                    values[name] = np.array(host.to_host(arr))
                    fmt = engine.tensors[name].format
                    if fmt is not TensorFormat.LINEAR and sched is not None:  # NCHW16c...
                        values[name] = from_format(values[name], fmt, sched.logical[name])
        return values

    side = _Side(f"mini-infer {device}", ctx.execute, tensors, makers, ctx.close)
    return side, engine


def _side(spec: str, reg: PluginRegistry, model: Any, args: argparse.Namespace,
          tmp: str) -> tuple[_Side, Any]:
    if spec in _ANCHORS:
        return _anchor(spec, model, args.model), None
    return _mini_infer(spec, reg, model, args, tmp)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def _per_node(model: Any, a: _Side, b: _Side, feeds: Mapping[str, Any], rtol: float,
              atol: float) -> dict[str, Any]:
    """The first node (in the model's order) whose output differs; outputs that no node reads
    and that are no model output (e.g. Dropout's mask) are listed apart, after it."""
    va, vb = a.tensors(feeds), b.tensors(feeds)
    used = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}
    compared, unused = 0, []
    first: dict[str, Any] | None = None
    for node in model.graph.node:
        for out in (o for o in node.output if o and o in va and o in vb):
            compared += 1
            err = tensor_error(va[out], vb[out], rtol, atol)
            if err["match"]:
                continue
            if out not in used:
                unused.append(out)
            elif first is None:
                inputs = [i for i in node.input if i and i in va and i in vb]
                first = {"node": node.name or f"<{node.op_type} making {out}>",
                         "op_type": node.op_type, "output": out, **err,
                         "inputs_match": all(tensor_error(va[i], vb[i], rtol, atol)["match"]
                                             for i in inputs),
                         "a": a.makers.get(out), "b": b.makers.get(out)}
    return {"compared_tensors": compared, "first_divergence": first,
            "unused_outputs_differing": unused}


def command(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    """Run ``mini-infer compare``; the result's ``text`` is what the CLI prints and its
    ``exit_status`` is 1 where the outputs differ."""
    import onnx

    from ..engine.format import is_engine_file

    for option, tol in (("--rtol", args.rtol), ("--atol", args.atol)):
        if not tol >= 0:  # NaN too
            raise InputError(f"{option} {tol:g}: a tolerance is a number >= 0 (|a-b| <= atol "
                             "+ rtol*|b|); 0 asks for equal values")
    if is_engine_file(args.model):
        raise InputError(f"{args.model} is an engine file; compare needs the ONNX model it was "
                         "built from (each side builds its own)")
    if args.a in _ANCHORS:
        raise InputError(f"--a {args.a}: side a is a mini-infer device (cpu, cuda, ...); "
                         f"put {args.a} on side b")
    if not os.path.exists(args.model):
        raise InputError(f"{args.model}: no such file")
    try:
        model = onnx.load(args.model)
    except Exception as exc:  # noqa: BLE001 - not an ONNX file
        raise InputError(f"{args.model} is not an ONNX model: {_first_line(exc)}") from None
    with tempfile.TemporaryDirectory() as tmp:
        a, engine = _side(args.a, reg, model, args, tmp)
        b, _ = _side(args.b, reg, model, args, tmp)
        try:
            feeds = _args.feeds(args, engine)
            out_a, out_b = a.run(feeds), b.run(feeds)
            rows = []
            for name in out_a:
                if name not in out_b:
                    rows.append({"output": name, "match": False, "why": f"{b.label} has no "
                                 "output of that name", "max_abs": None, "max_rel": None})
                    continue
                rows.append({"output": name, "shape": list(np.shape(out_a[name])),
                             **tensor_error(out_a[name], out_b[name], args.rtol, args.atol)})
            per_node = _per_node(model, a, b, feeds, args.rtol, args.atol) \
                if args.per_node else None
        finally:
            a.close()
            b.close()
    passed = all(r["match"] for r in rows)
    result: dict[str, Any] = {
        "model": args.model, "a": a.label, "b": b.label, "rtol": args.rtol, "atol": args.atol,
        "inputs": {n: {"shape": list(v.shape), "dtype": str(v.dtype)} for n, v in feeds.items()},
        "outputs": rows, "match": passed, "exit_status": 0 if passed else 1}
    if per_node is not None:
        result["per_node"] = per_node
    result["text"] = _text(result)
    return result


def _text(r: dict[str, Any]) -> str:
    ins = ", ".join(f"{n} {tuple(v['shape'])} {v['dtype']}" for n, v in r["inputs"].items())
    lines = [f"compare {r['model']}: a = {r['a']}, b = {r['b']} (rtol {r['rtol']:g}, atol "
             f"{r['atol']:g}); inputs {ins}",
             f"  {'output':<24} {'max abs err':>12} {'max rel err':>12}  result"]
    for row in r["outputs"]:
        verdict = "PASS" if row["match"] else "FAIL"
        why = f" ({row['why']})" if row.get("why") else ""
        lines.append(f"  {row['output']:<24} {_fmt(row['max_abs']):>12} "
                     f"{_fmt(row['max_rel']):>12}  {verdict}{why}")
    n_ok = sum(1 for row in r["outputs"] if row["match"])
    lines.append(f"{'PASS' if r['match'] else 'FAIL'}: {n_ok} of {len(r['outputs'])} "
                 "output(s) match")
    pn = r.get("per_node")
    if pn is not None:
        first = pn["first_divergence"]
        if first is None:
            lines.append(f"per node: the {pn['compared_tensors']} tensors both sides computed "
                         "match" + (" (but for unused outputs below)"
                                    if pn["unused_outputs_differing"] else ""))
        else:
            lines.append(f"per node: first divergence at node {first['node']!r} "
                         f"({first['op_type']}), output {first['output']!r}: max abs "
                         f"{_fmt(first['max_abs'])}, max rel {_fmt(first['max_rel'])}"
                         + (f" ({first['why']})" if first.get("why") else ""))
            lines.append("  its inputs match on both sides: the node itself computes "
                         "differently" if first["inputs_match"] else
                         "  some of its inputs already differ (made where the values were not "
                         "compared, e.g. inside a fused node)")
            for side in ("a", "b"):
                if first.get(side):
                    lines.append(f"  {side}: {first[side]}")
        if pn["unused_outputs_differing"]:
            lines.append("  outputs no node reads (not compared further) that differ: "
                         + ", ".join(pn["unused_outputs_differing"][:10]))
    return "\n".join(lines)
