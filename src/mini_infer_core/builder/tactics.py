"""Tactic timing: the build measures, on the node's own shapes and weights, each way a plugin
offers to compute its node, and keeps the fastest (TensorRT's builder does the same).

A plugin offers tactics with two optional methods:

- ``get_tactics(input_shapes) -> list[str]``: its tactics for these concrete input shapes
  (None for an absent input); fewer than two means there is nothing to choose;
- ``set_tactic(name)``: use that tactic from now on. The plugin keeps the choice among its
  serialized fields, so the engine file (and every context cloned from it) runs it.

Where some plugin has a choice, the builder runs the finished engine once in an execution
context, on random inputs, so that every tensor holds values of the right shape; then, per
tunable node, it runs the node's
step alone with each tactic (one warm-up, then the best of :data:`REPEAT`) and tells the
engine's plugin the winner. ``build_info["tactics"]`` records the times. Timing needs static
input shapes, floating-point inputs and the target device present; otherwise, or if a run
fails, the plugins keep their own default choice. ``BuilderConfig(time_tactics=False)`` (CLI
``--no-tactic-timing``) skips it for a faster build.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from ..engine.engine import Engine

__all__ = ["REPEAT", "time_tactics"]

log = logging.getLogger("mini_infer.builder")

#: timed runs per tactic (the best counts), after one warm-up run
REPEAT = 3


def _tunable(engine: Engine) -> bool:
    tensors = engine.tensors
    return all(tensors[n].dims.is_static() and tensors[n].dtype.numpy.kind == "f"
               for n in engine.input_names) and not any(
        getattr(nd.plugin, "data_dependent", False) for nd in engine.nodes)


def _offers(engine: Engine) -> dict[int, list[str]]:
    """The steps whose plugins offer two or more tactics for their (static) input shapes."""
    offers: dict[int, list[str]] = {}
    for step, nd in enumerate(engine.nodes):
        get = getattr(nd.plugin, "get_tactics", None)
        if get is None:
            continue
        shapes = [engine.tensors[n].dims.to_tuple() if n else None for n in nd.inputs]
        tactics = list(get(shapes))
        if len(tactics) >= 2:
            offers[step] = tactics
    return offers


def time_tactics(engine: Engine) -> dict[str, dict[str, Any]]:
    """Time every tunable node's tactics and set the fastest on the engine's plugins;
    returns ``{node name: {"chosen": tactic, "ms": {tactic: best time}}}``. Nothing runs
    when no plugin has a choice to make."""
    if not any(hasattr(nd.plugin, "get_tactics") for nd in engine.nodes) or not _tunable(
            engine):
        return {}
    offers = _offers(engine)
    if not offers:
        return {}
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(engine.tensors[n].dims.to_tuple()).astype(
        engine.tensors[n].dtype.numpy) for n in engine.input_names}
    report: dict[str, dict[str, Any]] = {}
    try:
        with engine.create_execution_context() as ctx:
            ctx.execute(feeds)  # every tensor now holds values of its shape
            for step, tactics in offers.items():
                plugin, ins, outs, ws, stream = ctx.steps[step]
                node = engine.nodes[step]
                times: dict[str, float] = {}
                for tactic in tactics:
                    plugin.set_tactic(tactic)  # type: ignore[attr-defined]
                    plugin.enqueue(ins, outs, ws, stream)
                    best = float("inf")
                    for _ in range(REPEAT):
                        start = time.perf_counter()
                        plugin.enqueue(ins, outs, ws, stream)
                        stream.synchronize()
                        best = min(best, time.perf_counter() - start)
                    times[tactic] = round(best * 1e3, 4)
                chosen = min(times, key=times.__getitem__)
                node.plugin.set_tactic(chosen)  # type: ignore[attr-defined]
                report[node.name] = {"chosen": chosen, "ms": times}
                log.debug("tactics of %s: %s -> %s", node.describe(), times, chosen)
    except Exception as exc:  # noqa: BLE001 - timing is an optimisation; defaults stay
        log.info("tactic timing skipped: %s: %s", type(exc).__name__, exc)
        return {}
    return report
