"""``mini-infer bench --trace FILE.json``: one run as a Chrome/Perfetto trace (the Trace Event
Format's JSON object form, complete "X" events), one slice per node, from the same per-step
timing as ``--profile`` (:meth:`ExecutionContext.time_steps`). Open it in ui.perfetto.dev or
chrome://tracing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import InputError

__all__ = ["trace_events", "write_trace"]


def _shape(a: Any) -> list[int] | None:
    return None if a is None else [int(d) for d in getattr(a, "shape", ())]


def _dtype(a: Any) -> str | None:
    return None if a is None else str(getattr(a, "dtype", type(a).__name__))


def trace_events(engine: Any, ctx: Any) -> list[dict[str, Any]]:
    """The events of one more run of every step of ``ctx`` (after ``execute``): slices laid
    end to end in engine order, each as long as its step took, on one track per device."""
    tactics = engine.build_info.get("tactics") or {}
    tids = {dev: k + 1 for k, dev in enumerate(sorted({nd.device for nd in engine.nodes}))}
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
         "args": {"name": f"mini-infer {engine.name}"}}]
    events += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                "args": {"name": f"device {dev}"}} for dev, tid in tids.items()]
    start = time.perf_counter()
    took = ctx.time_steps()
    ts = start * 1e6
    for step, (nd, s, seconds) in enumerate(zip(engine.nodes, ctx.steps, took, strict=True)):
        dur = seconds * 1e6
        events.append({
            "ph": "X", "name": nd.name, "cat": nd.op_type, "pid": 1, "tid": tids[nd.device],
            "ts": round(ts, 3), "dur": round(dur, 3),
            "args": {"step": step, "op": nd.qualified_op, "plugin":
                     f"{nd.plugin_namespace}::{nd.plugin_name} v{nd.plugin_version}",
                     "distribution": nd.distribution, "device": nd.device,
                     "tactic": (tactics.get(nd.name) or {}).get("chosen"),
                     "inputs": [{"name": n, "shape": _shape(a), "dtype": _dtype(a)}
                                for n, a in zip(nd.inputs, s.inputs, strict=False) if n],
                     "outputs": [{"name": n, "shape": _shape(a), "dtype": _dtype(a)}
                                 for n, a in zip(nd.outputs, s.outputs, strict=False)]}})
        ts += dur
    return events


def write_trace(path: str, engine: Any, ctx: Any, model: str) -> int:
    """Write the trace of one run to ``path``; returns the number of node slices."""
    folder = Path(path).parent
    if str(folder) and not folder.is_dir():
        raise InputError(f"--trace {path}: folder {folder} does not exist")
    events = trace_events(engine, ctx)
    doc = {"traceEvents": events, "displayTimeUnit": "ms",
           "otherData": {"model": model, "producer": f"mini-infer-core {__version__}",
                         "timing": "each slice is one step's time in a run of every step in "
                                   "turn, synchronized after each (as --profile)"}}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        Path(tmp).write_text(json.dumps(doc))
        os.replace(tmp, path)
    except OSError as exc:  # the temporary file is ours: the message names the trace's path
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"--trace {path}: cannot write the trace there: "
                         f"{exc.strerror or type(exc).__name__}") from None
    return sum(1 for e in events if e["ph"] == "X")
