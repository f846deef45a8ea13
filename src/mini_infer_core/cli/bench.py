"""``mini-infer bench``: trtexec-style timing of a model or engine, optionally side by side with
onnxruntime or onnx's ReferenceEvaluator on the same inputs, runs interleaved; ``--profile``
adds the time of every node (trtexec's ``--dumpProfile``)."""

from __future__ import annotations

import dataclasses
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..builder import Builder, BuilderConfig
from ..engine.format import is_engine_file
from ..errors import InputError, InputShapesRequired
from ..importer import parse_onnx
from ..registry import PluginRegistry
from ..runtime import Runtime
from ..threads import blas_info, get_num_threads, set_num_threads, thread_choice
from ._args import check_engine_device
from ._report import size_text

__all__ = ["bench", "bench_text", "build_for_shapes"]

#: what ``--compare`` can time beside mini-infer
COMPARE_TARGETS = ("onnxruntime", "reference")


def build_for_shapes(registry: PluginRegistry, model: str | bytes | Any, config: BuilderConfig,
                     shapes: dict[str, tuple[int, ...]]) -> Any:
    """Build ``model``; a model whose control flow needs concrete input shapes (branches of
    different rank) is built again for ``shapes``, the shapes this run feeds."""
    network = parse_onnx(model)
    try:
        return Builder(registry).build_engine(network, config)
    except InputShapesRequired as exc:
        if not shapes:
            raise InputShapesRequired(f"{exc}; give them with --shape NAME=D0,D1,.. or "
                                      f"--input NAME=FILE.npy") from None
        return Builder(registry).build_engine(network, dataclasses.replace(
            config, input_shapes=shapes))


def _stats(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    med = statistics.median(ordered)
    return {"median_ms": med * 1e3, "p90_ms": p90 * 1e3, "mean_ms": statistics.fmean(ordered)
            * 1e3, "min_ms": ordered[0] * 1e3, "throughput_per_s": 1.0 / med if med else 0.0}


def _profile(engine: Any, ctx: Any, runs: int) -> list[dict[str, Any]]:
    """Per node, in engine order: the median over ``runs`` of its step's time, each step
    timed where it runs (the context's steps in order, after the timed runs)."""
    per: list[list[float]] = [[] for _ in ctx.steps]
    for _ in range(runs):
        for i, took in enumerate(ctx.time_steps()):
            per[i].append(took)
    medians = [statistics.median(p) for p in per]
    total = sum(medians) or 1.0
    chosen = engine.build_info.get("tactics") or {}
    return [{"node": nd.name, "op_type": nd.op_type, "device": nd.device,
             "plugin": f"{nd.plugin_namespace}::{nd.plugin_name}",
             "distribution": nd.distribution, "tactic": chosen.get(nd.name, {}).get("chosen"),
             "inputs": [list(getattr(a, "shape", ())) if a is not None else None
                        for a in step.inputs],
             "median_ms": ms * 1e3, "share": ms / total}
            for nd, step, ms in zip(engine.nodes, ctx.steps, medians, strict=True)]


def _profile_text(rows: list[dict[str, Any]], top: int = 20) -> list[str]:
    total = sum(r["median_ms"] for r in rows)
    lines = [f"  profile: {len(rows)} nodes, {total:.2f} ms in their steps; by operator:"]
    by_op: dict[str, list[float]] = {}
    for r in rows:
        by_op.setdefault(r["op_type"], []).append(r["median_ms"])
    for op, ms in sorted(by_op.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"    {op:<22} {len(ms):>4} x {sum(ms):>9.3f} ms {sum(ms) / total:>6.1%}")
    lines.append(f"  slowest {min(top, len(rows))} nodes:")
    for r in sorted(rows, key=lambda r: -r["median_ms"])[:top]:
        tactic = f" [{r['tactic']}]" if r["tactic"] else ""
        lines.append(f"    {r['median_ms']:>9.3f} ms {r['share']:>6.1%}  {r['op_type']:<14} "
                     f"{r['node']} ({r['plugin']}{tactic}) in {r['inputs'][:2]}")
    return lines


def _anchor(name: str, model_path: str, threads: int
            ) -> Callable[[dict[str, Any]], Any] | str:
    if name == "onnxruntime":
        try:
            import onnxruntime as ort
        except ImportError:
            return "onnxruntime is not installed (pip install onnxruntime)"
        options = ort.SessionOptions()
        # idle intra-op threads would otherwise spin after each run and take the cores from
        # the mini-infer run interleaved with it (ResNet-50: 53 -> 81 ms)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # the same thread count as ours: onnxruntime's default (every core) against our one
        # thread would make the ratio say nothing
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            sess = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime refuses the model: say why
            return f"onnxruntime cannot load the model: {_first_line(exc)}"
        return lambda feeds: sess.run(None, feeds)
    if name == "reference":
        from onnx.reference import ReferenceEvaluator

        try:
            ref = ReferenceEvaluator(model_path)
        except Exception as exc:  # noqa: BLE001 - the evaluator refuses the model: say why
            return f"onnx's ReferenceEvaluator cannot load the model: {_first_line(exc)}"
        return lambda feeds: ref.run(None, feeds)
    raise InputError(f"unknown comparison target {name!r} ({', '.join(COMPARE_TARGETS)})")


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:300] + " ...") if len(text) > 300 else text or type(exc).__name__


def bench(model: str, registry: PluginRegistry, feeds_for: Callable[[Any], dict[str, Any]], *,
          device: str | None = None, warmup: int = 3, iterations: int = 20,
          compare: list[str] | None = None, threads: int | None = None,
          time_tactics: bool = True, profile: bool = False, graphs: bool = False,
          input_shapes: dict[str, tuple[int, ...]] | None = None,
          trace: str | None = None) -> dict[str, Any]:
    """Time ``model`` (an ONNX model built for ``device``, default cpu, or an engine file,
    which runs on its own device) and the ``compare`` targets (:data:`COMPARE_TARGETS`)."""
    unknown = [name for name in compare or [] if name not in COMPARE_TARGETS]
    if unknown:
        raise InputError(f"--compare {unknown[0]}: not a target bench can time; the targets "
                         f"are {', '.join(COMPARE_TARGETS)}")
    set_num_threads(threads)
    count, why = thread_choice()
    out: dict[str, Any] = {"model": model, "device": device or "cpu",
                           "threads": get_num_threads(),
                           "thread_choice": {"count": count, "reason": why}}
    is_engine = is_engine_file(model)
    if is_engine:
        t0 = time.perf_counter()
        engine = Runtime(registry).load_engine(model)
        out["load_seconds"] = time.perf_counter() - t0
        check_engine_device(model, engine, device)
        out["device"] = engine.device_name
    else:
        t0 = time.perf_counter()
        built = build_for_shapes(registry, model, BuilderConfig(
            device=device or "cpu", time_tactics=time_tactics), input_shapes or {})
        out["build_seconds"] = time.perf_counter() - t0
        out["tactics"] = built.build_info.get("tactics", {})
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench.engine"
            built.save(str(path))
            out["engine_bytes"] = os.path.getsize(path)
            t0 = time.perf_counter()
            engine = Runtime(registry).load_engine(path)
            out["load_seconds"] = time.perf_counter() - t0
            # the loaded engine keeps its file mapped; on Linux the mapping outlives the name
    feeds = feeds_for(engine)
    t0 = time.perf_counter()  # the first run includes making the execution context
    ctx = engine.create_execution_context()
    ctx.execute(feeds)
    out["first_run_seconds"] = time.perf_counter() - t0
    notes: dict[str, str] = {}
    out["graphs"] = False
    if graphs:  # trtexec's --useCudaGraph: the first run above stays eager
        refused = ctx.graphs_refused
        if refused is not None:
            notes["graphs"] = refused
        else:
            out["graphs"] = ctx.enable_graphs()
            ctx.execute(feeds)  # captures
            if ctx.graph_error is not None:
                notes["graphs"] = f"capture failed, eager instead: {ctx.graph_error}"
                out["graphs"] = False
    if "load_seconds" in out:
        out["load_plus_first_run_seconds"] = out["load_seconds"] + out["first_run_seconds"]
    runners: dict[str, Callable[[dict[str, Any]], Any]] = {"mini-infer": ctx.execute}
    for name in compare or []:
        if is_engine:
            notes[name] = "needs the ONNX model, not an engine file"
            continue
        anchor = _anchor(name, model, out["threads"])
        if not isinstance(anchor, str):
            try:  # a model the anchor loads but cannot run is skipped the same way
                anchor(feeds)
            except Exception as exc:  # noqa: BLE001 - the anchor's failure, reported
                anchor = f"{name} failed to run the model: {_first_line(exc)}"
        if isinstance(anchor, str):
            notes[name] = anchor
        else:
            runners[name] = anchor
    for run in runners.values():
        for _ in range(warmup):
            run(feeds)
    times: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(iterations):
        for name, run in runners.items():  # interleaved: drift hits every engine alike
            t0 = time.perf_counter()
            run(feeds)
            times[name].append(time.perf_counter() - t0)
    out["results"] = {k: _stats(v) for k, v in times.items()}
    base = out["results"]["mini-infer"]["median_ms"]
    out["ratios"] = {f"mini-infer/{k}": base / v["median_ms"]
                     for k, v in out["results"].items() if k != "mini-infer"}
    out["notes"] = notes
    if profile and not ctx.steps:
        notes["profile"] = ("the engine's shapes depend on data: it runs in segments around "
                            "its data-dependent nodes, no per-node profile")
    elif profile:
        out["profile"] = _profile(engine, ctx, max(iterations, 1))
    if trace and not ctx.steps:
        notes["trace"] = ("the engine's shapes depend on data: it runs in segments around "
                          "its data-dependent nodes, no per-node trace")
    elif trace:
        from ._trace import write_trace

        out["trace"] = {"path": trace, "slices": write_trace(trace, engine, ctx, model)}
    sched = ctx.schedule
    out["arena_bytes"] = sched.plan.peak_bytes if sched is not None else None
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["iterations"], out["warmup"] = iterations, warmup
    out["blas"] = blas_info()  # after the run: the pools the plugins loaded are there now
    ctx.close()
    return out


def bench_text(r: dict[str, Any]) -> str:
    lines = [f"model {r['model']} on {r['device']}, {r['threads']} thread(s), thread pools "
             + ", ".join(f"{b['internal_api']} {b['version']} x{b['num_threads']}"
                         for b in r["blas"])]
    if r.get("thread_choice"):
        lines.append(f"  threads: {r['thread_choice']['count']} "
                     f"({r['thread_choice']['reason']})")
    for key in ("build_seconds", "load_seconds", "first_run_seconds"):
        if key in r:  # "build: 243.2 ms", not "build seconds: 243.2 ms"
            lines.append(f"  {key.removesuffix('_seconds').replace('_', ' ')}: "
                         f"{r[key] * 1e3:.1f} ms")
    if r.get("tactics"):
        chosen = [t["chosen"] for t in r["tactics"].values()]
        lines.append(f"  tactics timed for {len(chosen)} node(s): " + ", ".join(
            f"{name} x{chosen.count(name)}" for name in sorted(set(chosen))))
    if r.get("graphs"):
        lines.append("  runs replay a device graph (captured after the first run)")
    lines.append(f"  {'engine':<12} {'median ms':>10} {'p90 ms':>10} {'per s':>8}")
    for name, s in r["results"].items():
        lines.append(f"  {name:<12} {s['median_ms']:>10.2f} {s['p90_ms']:>10.2f} "
                     f"{s['throughput_per_s']:>8.1f}")
    for k, v in r["ratios"].items():
        lines.append(f"  {k}: {v:.2f}")
    for k, v in r["notes"].items():
        lines.append(f"  {k}: skipped: {v}")
    if r.get("arena_bytes") is not None:
        lines.append(f"  arena {size_text(r['arena_bytes'])}, peak RSS "
                     f"{r['peak_rss_mib']:.0f} MiB")
    if r.get("profile"):
        lines += _profile_text(r["profile"])
    if r.get("trace"):
        lines.append(f"  trace of one run ({r['trace']['slices']} node slices) written to "
                     f"{r['trace']['path']} (open in ui.perfetto.dev or chrome://tracing)")
    return "\n".join(lines)
