"""Formats chosen by timing, the reformat steps counted (TensorRT's builder times each
layer's formats with their reformatting layers; the cost model of formats.py stands in where
nothing can be timed).

With tactic timing on (``BuilderConfig(time_tactics=True)``), the device present, static
float inputs and some plugin taking a format other than LINEAR, the builder runs the engine
twice more on random inputs, as the tactic timing does (one warm-up run, then
:data:`~.tactics.REPEAT` timed runs, each step timed where it runs, a step's best time
counting): once with every tensor LINEAR, once with every group of nodes that takes a format
in it (``FormatPlan.groups``), Reformat steps between. A group keeps its format where its
nodes' times in it plus the times of the Reformat steps that serve it (those that feed its
nodes, or take its outputs back to LINEAR) are below its nodes' LINEAR times. The times go to
``build_info["formats"]["timed"]`` and, with a timing cache, to the cache (one entry per
group: ``{"linear": ms, FORMAT: ms}``, keyed by its nodes' plugins, fields, shapes and
formats, the device and host CPU): a build that finds every group there times nothing, and
builds with the same cache make the same engine. Builds that time without a cache choose by
the machine they run on, as tactics do; ``time_tactics=False`` gives the cost model's
deterministic choice.
"""

from __future__ import annotations

import logging

import numpy as np

from ..engine.engine import Engine
from ..engine.format import plugin_bytes
from ..plugin import TensorFormat
from .formats import Combo, apply_formats
from .plan import make_engine, tensors
from .state import BuildState
from .tactics import REPEAT
from .timing_cache import TimingCache, host_identity

__all__ = ["group_ms", "time_formats"]

log = logging.getLogger("mini_infer.builder")


def time_formats(state: BuildState, used: set[str], cache: TimingCache | None = None
                 ) -> Engine | None:
    """Choose the formats by timing (see the module's text); the engine with the chosen
    formats, or None where nothing was timed (the cost model's choice stays). With a
    ``cache``, groups it knows are not timed, new timings are added, and every choice comes
    from it (builds with the same cache make the same engine)."""
    plan = state.format_plan
    if plan is None or not plan.groups:
        return None
    labels = [("linear", fmt.value) for fmt, _ in plan.groups]
    keys = [_group_key(state, fmt, members) for fmt, members in plan.groups] \
        if cache is not None else []
    times: list[dict[str, float] | None] = [
        cache.get(k, list(t)) for k, t in zip(keys, labels, strict=True)] \
        if cache is not None else [None] * len(labels)
    if any(t is None for t in times):
        measured = _measure(state, used)
        if measured is None:  # the cost model's choice again
            apply_formats(state, plan.chosen)
            tensors(state, set(used))
            return make_engine(state)
        for g, got in enumerate(measured):
            if times[g] is not None:
                continue
            if cache is not None:  # the first group of a key fills its entry
                cache.put(keys[g], got)
                got = {t: cache.entries[keys[g]][t] for t in labels[g]}
            times[g] = got
    report = []
    choice = {}
    for (fmt, members), ms in zip(plan.groups, times, strict=True):
        assert ms is not None
        keep = ms[fmt.value] < ms["linear"]
        if keep:
            choice.update(members)
        report.append({"format": fmt.value, "nodes": [plan.nodes[i].name for i in members],
                       "linear_ms": ms["linear"], "format_ms": ms[fmt.value],
                       "chosen": fmt.value if keep else "linear"})
    apply_formats(state, choice)
    state.info.setdefault("formats", {"reformats": 0, "tensors": {}})["timed"] = report
    tensors(state, set(used))
    return make_engine(state)


def _measure(state: BuildState, used: set[str]) -> list[dict[str, float]] | None:
    """Per group: its nodes' LINEAR time and their time in its format with the Reformat
    steps serving them (ms), from one timed engine of each; None where nothing could run."""
    plan = state.format_plan
    assert plan is not None
    widest = {i: c for _, members in plan.groups for i, c in members.items()}
    runs: list[dict[str, float]] = []
    served: dict[str, int] = {}
    for choice in ({}, widest):
        served = apply_formats(state, choice)
        tensors(state, set(used))
        took = _step_times(make_engine(state))
        if took is None:
            return None
        runs.append(took)
    steps: dict[str, list[str]] = {}
    for name, i in served.items():
        steps.setdefault(plan.nodes[i].name, []).append(name)
    groups = [(fmt.value, [plan.nodes[i].name for i in members]) for fmt, members in plan.groups]
    return group_ms(groups, runs[0], runs[1], steps)


def group_ms(groups: list[tuple[str, list[str]]], linear: dict[str, float],
             in_format: dict[str, float], served: dict[str, list[str]]
             ) -> list[dict[str, float]]:
    """Per group (its format and node names): ``{"linear": ms, FORMAT: ms}``, its nodes'
    LINEAR times (s, in ``linear``) against their times in its format plus those of the
    Reformat steps serving them (``served``: node -> step names), rounded as tactics are."""
    out = []
    for fmt, names in groups:
        there = sum(in_format[n] for n in names) + sum(
            in_format[r] for n in names for r in served.get(n, ()))
        out.append({"linear": round(sum(linear[n] for n in names) * 1e3, 4),
                    fmt: round(there * 1e3, 4)})
    return out


def _group_key(state: BuildState, fmt: TensorFormat, members: dict[int, Combo]) -> str:
    """The timing cache's key of a group: its nodes' plugins, distributions, fields, input
    shapes and types and formats, digested; the format, device and host CPU."""
    import hashlib  # here: OpenSSL's load is a start-up cost a build without timing skips

    plan = state.format_plan
    assert plan is not None
    parts = []
    for i in sorted(members):
        nd = plan.nodes[i]
        ins = ";".join(f"{state.types[n].name}{list(state.dims[n].display())}" if n else "-"
                       for n in nd.inputs)
        parts.append(f"{nd.plugin_namespace}::{nd.plugin_name}/v{nd.plugin_version} "
                     f"{nd.distribution}=={nd.distribution_version} {nd.op_type} "
                     f"{hashlib.sha256(plugin_bytes(nd)).hexdigest()[:16]} {ins} "
                     f"{','.join(f.value for f in members[i])}")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
    device = state.devices[plan.nodes[min(members)].device]
    dev = f"{device.name}[{device.identity()}]" if device.identity() else device.name
    return (f"formats {fmt.value} x{len(members)} {digest} | {dev} | "
            f"{host_identity()[0]}")


def _step_times(engine: Engine) -> dict[str, float] | None:
    """Each step's best time (s) over :data:`REPEAT` runs after a warm-up; None where the
    engine cannot be timed (dynamic or non-float inputs) or a run failed."""
    specs = engine.inputs
    if not all(t.dims.is_static() and t.dtype.numpy.kind == "f" for t in specs):
        return None
    rng = np.random.default_rng(0)
    feeds = {t.name: rng.standard_normal(t.dims.to_tuple()).astype(t.dtype.numpy)
             for t in specs}
    best = [float("inf")] * len(engine.nodes)
    try:
        with engine.create_execution_context() as ctx:
            ctx.execute(feeds)
            for timed in [False] + [True] * REPEAT:
                took = ctx.time_steps()
                if timed:
                    best = [min(b, t) for b, t in zip(best, took, strict=True)]
    except Exception as exc:  # noqa: BLE001 - timing is an optimisation; the model's choice stays
        log.info("format timing skipped: %s: %s", type(exc).__name__, exc)
        return None
    return {nd.name: t for nd, t in zip(engine.nodes, best, strict=True)}
