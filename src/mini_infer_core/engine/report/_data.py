"""What an engine report shows, as one JSON-able dict: the graph as built (with the ONNX nodes
each fused node replaced), a profiled run's time per node (and onnxruntime's beside it), the
memory plan's lifetimes, the build's facts and, against a second engine, what changed."""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["diff_data", "engine_data", "memory_data", "onnxruntime_profile", "profile_data"]

_FUSED = re.compile(r"^(?P<op>\S+) '(?P<name>.*)' into (?P<into_op>\S+) '(?P<into>.*)'$")


def _fused_into(engine: Engine) -> dict[str, list[dict[str, str]]]:
    """Engine node name -> the ONNX nodes folded into it by plugin-declared fusions."""
    into: dict[str, list[dict[str, str]]] = {}
    for line in engine.build_info.get("fused") or []:
        m = _FUSED.match(str(line))
        if m:
            into.setdefault(m["into"], []).append({"op_type": m["op"], "name": m["name"]})
    # a node fused into one that was itself fused later belongs to the survivor
    names = {nd.name for nd in engine.nodes}
    for name in [n for n in into if n not in names]:
        for parts in into.values():
            if any(p["name"] == name for p in parts):
                parts.extend(into[name])
    return {n: parts for n, parts in into.items() if n in names}


def _tensor(engine: Engine, name: str) -> dict[str, Any]:
    spec = engine.tensors[name]
    return {"name": name, "shape": [d if isinstance(d, int) else str(d) for d in spec.shape],
            "dtype": spec.dtype.name, "kind": spec.kind}


def engine_data(engine: Engine) -> dict[str, Any]:
    """The graph (nodes, edges between them and the graph's inputs and outputs) and the
    build facts."""
    fused = _fused_into(engine)
    tactics = engine.build_info.get("tactics") or {}
    producer = {o: nd.name for nd in engine.nodes for o in nd.outputs}
    nodes, edges = [], []
    for nd in engine.nodes:
        nodes.append({
            "name": nd.name, "op_type": nd.qualified_op, "device": nd.device,
            "plugin": f"{nd.plugin_namespace}::{nd.plugin_name}",
            "plugin_version": nd.plugin_version,
            "distribution": nd.distribution or "(none)",
            "distribution_version": nd.distribution_version or "",
            "inputs": [_tensor(engine, n) for n in nd.inputs if n],
            "outputs": [_tensor(engine, n) for n in nd.outputs],
            "precision": sorted({engine.tensors[n].dtype.name for n in nd.outputs}),
            "format": sorted({engine.tensors[n].format.value for n in nd.outputs}),
            "fused": fused.get(nd.name, []),
            "tactic": (tactics.get(nd.name) or {}).get("chosen")})
        for n in nd.inputs:
            if not n or engine.tensors[n].kind == "constant":
                continue
            src = producer.get(n, f"input:{n}")
            src_device = next((m.device for m in engine.nodes if m.name == src), nd.device)
            edges.append({"source": src, "target": nd.name, "tensor": n,
                          "copy": src_device != nd.device})
    for t in engine.outputs:
        if t.name in producer:
            edges.append({"source": producer[t.name], "target": f"output:{t.name}",
                          "tensor": t.name, "copy": False})
    info = engine.build_info
    build = {
        "nodes_imported": info.get("nodes_imported"), "nodes_folded": info.get("nodes_folded"),
        "nodes_pruned": info.get("nodes_pruned"), "fused": list(info.get("fused") or []),
        "rewritten": list(info.get("rewritten") or []), "placement": info.get("placement"),
        "copies": info.get("copies"), "fp16_nodes": info.get("fp16_nodes"),
        "constants_packed": info.get("constants_packed"),
        "tactics": [{"node": n, "chosen": t.get("chosen"), "ms": t.get("ms")}
                    for n, t in tactics.items()],
        "opsets": info.get("opsets"),
        "distributions": [{"name": d, "version": v} for d, v in sorted(
            {(nd.distribution, nd.distribution_version or "") for nd in engine.nodes
             if nd.distribution})]}
    return {"engine": {"name": engine.name, "device": engine.device_name,
                       "inputs": [_tensor(engine, t.name) for t in engine.inputs],
                       "outputs": [_tensor(engine, t.name) for t in engine.outputs]},
            "nodes": nodes, "edges": edges, "build": build}


def memory_data(engine: Engine, bindings: Mapping[str, int]) -> dict[str, Any] | None:
    """Each planned tensor's lifetime (first and last step), size and arena offset; the plan's
    peak against the naive sum. None where the shapes depend on data."""
    from ..schedule import Schedule

    try:
        sched = Schedule(engine, bindings)
    except Exception:  # noqa: BLE001 - shapes that need a run (data-dependent): no plan here
        return None
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for step, nd in enumerate(engine.nodes):
        for o in nd.outputs:
            first.setdefault(o, step)
            last[o] = max(last.get(o, step), step)
        for n in nd.inputs:
            if n and n in first:
                last[n] = step
    rows = []
    for name in sched.arena_tensors:
        if name not in first:
            continue
        rows.append({"tensor": name, "start": first[name], "end": last[name] + 1,
                     "bytes": int(sched.nbytes(name, engine.tensors[name].dtype)),
                     "offset": sched.offsets.get(name), "device": sched.home.get(name),
                     "aliased": name in sched.aliases})
    summary = sched.memory_summary()
    return {"tensors": rows, "steps": len(engine.nodes),
            "peak_bytes": summary.get("planned_peak_bytes"),
            "naive_bytes": summary.get("naive_bytes")}


def profile_data(engine: Engine, feeds: Mapping[str, Any], runs: int = 10
                 ) -> list[dict[str, Any]]:
    """The median time of each node over ``runs`` after one warm-up run, each node timed on
    its own (:meth:`ExecutionContext.time_nodes`, segments included)."""
    with engine.create_execution_context() as ctx:
        ctx.execute(dict(feeds))
        per: list[list[float]] = [[] for _ in engine.nodes]
        for _ in range(max(1, runs)):
            for i, took in enumerate(ctx.time_nodes(dict(feeds))):
                per[i].append(took)
    return [{"node": nd.name, "op_type": nd.qualified_op, "device": nd.device,
             "plugin": f"{nd.plugin_namespace}::{nd.plugin_name}",
             "distribution": nd.distribution or "(none)",
             "ms": statistics.median(p) * 1e3}
            for nd, p in zip(engine.nodes, per, strict=True)]


def onnxruntime_profile(model: bytes, feeds: Mapping[str, Any], runs: int = 10
                        ) -> list[dict[str, Any]]:
    """onnxruntime's own per-node profile of the same model (its ``enable_profiling`` trace):
    the median over ``runs`` of each node's kernel time."""
    import json
    import os
    import tempfile

    import onnxruntime as ort

    with tempfile.TemporaryDirectory(prefix="mini-infer-ort-profile-") as tmp:
        opts = ort.SessionOptions()
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        data = {k: np.asarray(v) for k, v in feeds.items() if k in names}
        sess.run(None, data)  # warm-up, also profiled: dropped below
        for _ in range(max(1, runs)):
            sess.run(None, data)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    times: dict[str, list[float]] = {}
    ops: dict[str, str] = {}
    for ev in events:
        args = ev.get("args") or {}
        if ev.get("cat") != "Node" or not str(ev.get("name", "")).endswith("_kernel_time"):
            continue
        node = str(ev["name"])[: -len("_kernel_time")]
        times.setdefault(node, []).append(float(ev.get("dur", 0)) / 1e3)
        ops[node] = str(args.get("op_name", ""))
    return [{"node": n, "op_type": ops[n], "ms": statistics.median(t[1:] or t)}
            for n, t in times.items()]


def diff_data(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What changed from engine ``a`` to engine ``b`` (both :func:`engine_data`): nodes added
    and removed, and for nodes in both, a changed plugin, distribution, device, tactic or
    fused set; the build facts that differ."""
    na = {n["name"]: n for n in a["nodes"]}
    nb = {n["name"]: n for n in b["nodes"]}
    changed = []
    for name in [n for n in na if n in nb]:
        x, y = na[name], nb[name]
        for key in ("op_type", "plugin", "plugin_version", "distribution",
                    "distribution_version", "device", "tactic", "precision", "format"):
            if x.get(key) != y.get(key):
                changed.append({"node": name, "what": key, "a": x.get(key), "b": y.get(key)})
        fa = sorted(p["name"] for p in x["fused"])
        fb = sorted(p["name"] for p in y["fused"])
        if fa != fb:
            changed.append({"node": name, "what": "fused", "a": fa, "b": fb})
    facts = [{"fact": k, "a": a["build"].get(k), "b": b["build"].get(k)}
             for k in ("nodes_imported", "nodes_folded", "nodes_pruned", "placement", "copies",
                       "fp16_nodes", "constants_packed", "distributions")
             if a["build"].get(k) != b["build"].get(k)]
    return {"removed": [n for n in na if n not in nb], "added": [n for n in nb if n not in na],
            "changed": changed, "facts": facts}
