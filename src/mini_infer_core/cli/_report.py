"""Text and JSON views of the registry and of engines, shared by the CLI commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..threads import thread_choice

if TYPE_CHECKING:  # the engine views import them; listing plugins imports no NumPy
    import numpy as np

    from ..engine.engine import Engine
    from ..engine.schedule import Schedule
    from ..registry import PluginRegistry
    from ..registry._records import Conflict

__all__ = ["plugins_json", "plugins_text", "header_line", "engine_json", "engine_text",
           "size_text", "summary"]


def _conflict_json(conflict: Conflict) -> dict[str, Any]:
    """A conflict with the opsets it is about (an operator with creators per opset range
    has a conflict per range) and ``settled_by``: ``priority`` where the chosen creator
    outranks every rival, ``distribution name`` where a rival has the same priority (the
    registry's tie rule: the distribution whose name sorts first)."""
    data = conflict.to_json()
    chosen = conflict.chosen.creator
    top = chosen.priority
    tie = any(o.creator.priority == top for o in conflict.others)
    return {**data, "opsets": [chosen.min_opset, chosen.max_opset],
            "settled_by": "distribution name" if tie else "priority"}


def plugins_json(reg: PluginRegistry) -> dict[str, Any]:
    threads, why = thread_choice()
    return {
        "threads": {"count": threads, "reason": why},
        "distributions": [d.to_json() for d in reg.distributions],
        "devices": [d.to_json() for d in reg.devices],
        "creators": [c for r in reg.creators for c in r.to_json()],
        "conflicts": [_conflict_json(c) for c in reg.conflicts()],
    }


def header_line(reg: PluginRegistry) -> str:
    parts = []
    for d in reg.distributions:
        label = f"{d.name}-{d.version}"
        if d.status != "loaded":
            label += f" ({d.status})"
        parts.append(label)
    unavailable = [f"{r.device.name} unavailable: {r.device.availability()[1]}"
                   for r in reg.devices if not r.device.availability()[0]]
    listed = ", ".join(parts) if parts else "none (pip install mini-infer-cpu-plugins)"
    text = "plugins: " + listed
    if unavailable:
        text += " (" + "; ".join(unavailable) + ")"
    return text


def plugins_text(reg: PluginRegistry, creators: bool = False) -> str:
    """pytest's header style: the core, each distribution (status, what it provides), the
    devices, and counts; ``creators`` adds the full creator table and the conflicts."""
    from ..registry import PLUGIN_API_VERSION

    data = plugins_json(reg)
    rows = data["creators"]
    loaded = [f"{d['name']}-{d['version']}" for d in data["distributions"]
              if d["status"] == "loaded"]
    out = [f"mini-infer-core {__version__}, plugin API {PLUGIN_API_VERSION}",
           "plugins: " + (", ".join(loaded) if loaded else "none loaded" if
                          data["distributions"] else "none (pip install mini-infer-cpu-plugins)")]
    if data["distributions"]:
        out.append("distributions:")
    width = max((len(f"{d['name']} {d['version']}") for d in data["distributions"]), default=0)
    for d in data["distributions"]:
        label = f"{d['name']} {d['version']}"
        if d["status"] == "loaded":
            n = len(d["creators"])
            what = f"{n} creator{'s' if n != 1 else ''}"
            if d["devices"]:
                what += f", device{'s' if len(d['devices']) > 1 else ''} " + ", ".join(
                    d["devices"])
        else:
            what = {"blocked": "not imported (-p no: / MINI_INFER_BLOCK_PLUGINS)",
                    "disabled": "not loaded (autoload is off; -p NAME loads it)"}.get(
                        d["status"], d["error"] or "")
        if d["rejected"]:
            what += f" ({len(d['rejected'])} rejected as duplicate{'s' * (len(d['rejected']) > 1)})"
        out.append(f"  {label:<{width}}  {d['status']:<12} {what}")
        out += [f"    rejected: {reason}" for reason in d["rejected"]]
    out.append(f"threads: {data['threads']['count']} ({data['threads']['reason']})")
    out.append("devices:")
    if not data["devices"]:
        out.append("  (none)")
    for d in data["devices"]:
        state = "available" if d["available"] else f"unavailable: {d['reason']}"
        out.append(f"  {d['name']:<5} {state} ({d['distribution']})")
    ops = {(c["domain"], c["op_type"]) for c in rows}
    devices = sorted({c["device"] for c in rows})
    per_dev = ", ".join(f"{sum(1 for c in rows if c['device'] == dev)} on {dev}"
                        for dev in devices)
    conflicts = data["conflicts"]
    ties = sum(1 for c in conflicts if c["settled_by"] != "priority")
    settled = "resolved by priority" if not ties else (
        f"{len(conflicts) - ties} resolved by priority, {ties} tie{'s' if ties != 1 else ''} "
        "settled by distribution name")
    summary = (f"creators: {len(rows)}{f' ({per_dev})' if per_dev else ''} for {len(ops)} "
               "operators; "
               f"{len(conflicts)} conflict{'s' if len(conflicts) != 1 else ''} {settled}")
    if not creators:
        out.append(summary + " (the full table: mini-infer plugins --creators, or --json)")
        return "\n".join(out)
    out.append(summary + ":")
    ops_width = max((len(f"{c['domain']}::{c['op_type']}") for c in rows), default=0)
    ns_width = max((len(c["namespace"]) for c in rows), default=0)
    for c in rows:
        opsets = f"{c['min_opset']}-{c['max_opset'] or ''}"
        op = f"{c['domain']}::{c['op_type']}"
        out.append(f"  {op:<{ops_width}} v{c['version']:<3} "
                   f"opsets {opsets:<6} {c['namespace']:<{ns_width}} {c['device']:<5} "
                   f"prio {c['priority']:<3} {c['distribution']}")
    out.append(f"conflicts ({len(conflicts)}):")
    for c in conflicts:
        others = ", ".join(f"{o['namespace']} ({o['distribution']}, prio {o['priority']})"
                           for o in c["others"])
        why = "" if c["settled_by"] == "priority" else \
            " (same priority: settled by distribution name)"
        low, high = c["opsets"]
        out.append(f"  {c['domain']}::{c['op_type']} (opsets {low}-{high or ''}) on "
                   f"{c['device']}: chose "
                   f"{c['chosen']['namespace']} ({c['chosen']['distribution']}, prio "
                   f"{c['chosen']['priority']}) over {others}{why}")
    return "\n".join(out)


def engine_json(engine: Engine, schedule: Schedule | None) -> dict[str, Any]:
    from ..plugin._adapter import interface_level

    def shape(n: str) -> list[Any]:
        if schedule is not None and n in schedule.logical:
            return list(schedule.logical[n])
        return list(engine.tensors[n].shape)

    def tensor(n: str) -> dict[str, Any]:
        spec = engine.tensors[n]
        return {"name": n, "shape": shape(n), "dtype": spec.dtype.name,
                "format": spec.format.value}
    nodes = []
    for step, nd in enumerate(engine.nodes):
        nodes.append({
            "name": nd.name, "op_type": nd.qualified_op, "opset": nd.opset, "device": nd.device,
            "plugin": f"{nd.plugin_namespace}::{nd.plugin_name}", "plugin_version":
            nd.plugin_version, "interface": interface_level(nd.plugin),
            "distribution": nd.distribution, "distribution_version": nd.distribution_version,
            "precision": node_precision([engine.tensors[n].dtype.name for n in
                                         [*nd.inputs, *nd.outputs] if n]),
            "inputs": [tensor(n) for n in nd.inputs if n],
            "outputs": [tensor(n) for n in nd.outputs],
            "arena_offsets": {n: schedule.offsets[n] for n in nd.outputs
                              if schedule and n in schedule.offsets},
            "workspace_bytes": schedule.workspace[step] if schedule else None,
        })
    io = {k: [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype.name} for t in ts]
          for k, ts in (("inputs", engine.inputs), ("outputs", engine.outputs))}
    return {"name": engine.name, "device": engine.device_name, **io, "nodes": nodes,
            "constants": {"count": len(engine.constants),
                          "bytes": int(sum(a.nbytes for a in engine.constants.values()))},
            "memory_plan": schedule.memory_summary() if schedule else None,
            "build_info": {k: v for k, v in engine.build_info.items() if k != "memory_plan"}}


def engine_text(engine: Engine, schedule: Schedule | None) -> str:
    data = engine_json(engine, schedule)
    out = [f"engine {data['name']!r} on {data['device']}"]
    for k in ("inputs", "outputs"):
        for t in data[k]:
            out.append(f"  {k[:-1]:<6} {t['name']} {t['shape']} {t['dtype']}")
    out.append(f"nodes ({len(data['nodes'])}):")
    for n in data["nodes"]:
        ins = ", ".join(_shape_text(t) for t in n["inputs"])
        outs = ", ".join(_shape_text(t) for t in n["outputs"])
        out.append(f"  {n['name']:<28} {n['op_type']:<18} {n['precision']:<5} "
                   f"{n['plugin']} v{n['plugin_version']}"
                   f" [{n['device']}, {n['distribution']}] ({ins}) -> ({outs})")
    counts: dict[str, int] = {}
    for n in data["nodes"]:
        counts[n["precision"]] = counts.get(n["precision"], 0) + 1
    out.append("precision: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
               + int8_text(data["build_info"]))
    out += fallback_lines(data["build_info"])
    c = data["constants"]
    out.append(f"constants: {c['count']} tensors, {size_text(c['bytes'])}")
    formats = data["build_info"].get("formats")
    if formats:
        held = ", ".join(f"{k} {v}" for k, v in formats["tensors"].items())
        out.append(f"formats: {held + ' tensor(s)' if held else 'all linear'}; "
                   f"{formats['reformats']} reformat step(s)"
                   + (" (chosen by timing)" if formats.get("timed") else ""))
    mp = data["memory_plan"]
    if mp:
        out.append(f"memory plan: peak {size_text(mp['planned_peak_bytes'])} for "
                   f"{mp['tensors']} buffers, naive sum {size_text(mp['naive_bytes'])} "
                   f"({mp['saving']:.0%} saved)")
    else:
        out.append("memory plan: made at run time (dynamic input shapes)")
    return "\n".join(out)


_QUANTIZED = frozenset({"INT8", "UINT8", "INT4", "UINT4"})
_FLOATS = frozenset({"FLOAT", "DOUBLE"})


def node_precision(dtypes: list[str]) -> str:
    """What a node computes in, from its tensors' types (DataType names): INT8 where any is
    an 8-bit (or 4-bit) quantized type, else HALF where any is HALF, else FLOAT where any is
    a float, else the first type (INT64 for shape arithmetic, BOOL, ...)."""
    found = set(dtypes)
    if found & _QUANTIZED:
        return "INT8"
    if "HALF" in found or "BFLOAT16" in found:
        return "HALF"
    if found & _FLOATS:
        return "FLOAT"
    return dtypes[0] if dtypes else "-"


def int8_text(build_info: Mapping[str, Any], from_cache: bool = False) -> str:
    """The INT8 build's line: how many nodes were quantized, and each one kept float."""
    info = build_info.get("int8")
    if not info:
        return ""
    kept = info.get("float_nodes", {})
    lines = [f"; INT8 build: {len(info.get('int8_nodes', []))} node(s) quantized "
             f"({info.get('calibrator')} calibration"
             f"{', from the cache' if from_cache else ''}), {len(kept)} kept "
             "FLOAT"]
    lines += [f"\n  FLOAT {name}: {why}" for name, why in kept.items()]
    return "".join(lines)


def fallback_lines(build_info: Mapping[str, Any]) -> list[str]:
    """The placement report: each node placed on the fallback device, and why."""
    found = build_info.get("fallbacks") or []
    if not found:
        return []
    return [f"fallback: {len(found)} node(s) not on the target device"] + [
        f"  {f['node']}: {f['reason']}" for f in found]


def _shape_text(t: dict[str, Any]) -> str:
    """A tensor's shape, with its format where that is not LINEAR: ``[1, 20, 8, 8] chw16``."""
    return f"{t['shape']}" + (f" {t['format']}" if t.get("format", "linear") != "linear"
                              else "")


def summary(arr: np.ndarray[Any, Any]) -> dict[str, Any]:
    import numpy as np

    out: dict[str, Any] = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
    if arr.size and arr.dtype.kind in "fiub":
        a = arr.astype(np.float64)
        out.update(min=float(a.min()), max=float(a.max()), mean=float(a.mean()),
                   std=float(a.std()))
        if arr.ndim >= 1 and arr.shape[-1] > 1 and arr.dtype.kind == "f":
            out["argmax"] = np.argmax(arr.reshape(-1, arr.shape[-1]), axis=-1)[:8].tolist()
    return out


def size_text(nbytes: float) -> str:
    """A size as a person reads it: ``512 bytes``, ``12.3 KiB``, ``4.56 MiB``, ``1.20 GiB``
    (a small engine is not "0.0 MiB")."""
    if nbytes < 1024:
        return f"{int(nbytes)} bytes"
    value, unit = nbytes / 2**10, "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1000:
            break
        value, unit = value / 2**10, bigger
    return f"{value:.2f} {unit}" if value < 10 else f"{value:.1f} {unit}"
