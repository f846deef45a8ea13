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
``build_info["formats"]["timed"]``. Builds that time choose by the machine they run on, as
tactics do; ``time_tactics=False`` gives the cost model's deterministic choice.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..engine.engine import Engine
from .formats import apply_formats
from .plan import make_engine, tensors
from .state import BuildState
from .tactics import REPEAT

__all__ = ["decide", "time_formats"]

log = logging.getLogger("mini_infer.builder")


def time_formats(state: BuildState, used: set[str]) -> Engine | None:
    """Choose the formats by timing (see the module's text); the engine with the chosen
    formats, or None where nothing was timed (the cost model's choice stays)."""
    plan = state.format_plan
    if plan is None or not plan.groups:
        return None
    widest = {i: c for _, members in plan.groups for i, c in members.items()}
    times: list[dict[str, float]] = []
    served: dict[str, int] = {}
    for choice in ({}, widest):
        served = apply_formats(state, choice)
        tensors(state, set(used))
        took = _step_times(make_engine(state))
        if took is None:  # the cost model's choice again
            apply_formats(state, plan.chosen)
            tensors(state, set(used))
            return make_engine(state)
        times.append(took)
    linear, blocked = times
    groups = [(fmt.value, [plan.nodes[i].name for i in members]) for fmt, members in plan.groups]
    extra: dict[str, list[str]] = {}
    for name, i in served.items():
        extra.setdefault(plan.nodes[i].name, []).append(name)
    kept, report = decide(groups, linear, blocked, extra)
    choice = {i: c for (_, members), ok in zip(plan.groups, kept, strict=True) if ok
              for i, c in members.items()}
    apply_formats(state, choice)
    state.info.setdefault("formats", {"reformats": 0, "tensors": {}})["timed"] = report
    tensors(state, set(used))
    return make_engine(state)


def decide(groups: list[tuple[str, list[str]]], linear: dict[str, float],
           blocked: dict[str, float], served: dict[str, list[str]]
           ) -> tuple[list[bool], list[dict[str, Any]]]:
    """Per group (its format and node names): whether it keeps its format, its nodes' times
    in it plus those of the Reformat steps that serve them (``served``: node -> step names)
    being below their LINEAR times; and the report of each (ms)."""
    kept, report = [], []
    for fmt, names in groups:
        in_format = sum(blocked[n] for n in names) + sum(
            blocked[r] for n in names for r in served.get(n, ()))
        as_linear = sum(linear[n] for n in names)
        kept.append(in_format < as_linear)
        report.append({"format": fmt, "nodes": names, "linear_ms": round(as_linear * 1e3, 4),
                       "format_ms": round(in_format * 1e3, 4),
                       "chosen": fmt if kept[-1] else "linear"})
    return kept, report


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
