"""Tactic timing: the build measures, on the node's own shapes and weights, each way a plugin
offers to compute its node, and keeps the fastest (TensorRT's builder does the same).

A plugin offers tactics with two optional methods:

- ``get_tactics(input_shapes) -> list[str]``: its tactics for these concrete input shapes
  (None for an absent input); fewer than two means there is nothing to choose;
- ``set_tactic(name)``: use that tactic from now on. The plugin keeps the choice among its
  serialized fields, so the engine file (and every context cloned from it) runs it.

Where some plugin has a choice, the builder runs the finished engine in an execution context,
on random inputs, once per tactic index: in pass ``k`` every tunable node runs its ``k``-th
tactic, and each step is timed where it really runs, between its neighbours in the engine's
order, so the caches hold what they will hold at inference (a node timed alone, over and over,
finds its weights in L2 and favours tactics with larger weights: ResNet-50's 7x7-map layers
took Winograd at 1.4 ms alone and ran it at 2.2-2.5 ms in the network). One warm-up pass per
index, then :data:`REPEAT` rounds of all passes interleaved; a tactic's time is its best.
The winners are told to the engine's plugins and ``build_info["tactics"]`` records the times.
Timing needs static input shapes, floating-point inputs and the target device present;
otherwise, or if a run fails, the plugins keep their own default choice.
``BuilderConfig(time_tactics=False)`` (CLI ``--no-tactic-timing``) skips it for a faster build.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..engine.engine import Engine
from ..plugin import _adapter as adapter

__all__ = ["REPEAT", "time_tactics"]

log = logging.getLogger("mini_infer.builder")

#: timed rounds of the passes (a tactic's best time counts), after one warm-up round
REPEAT = 3


def _tunable(engine: Engine) -> bool:
    tensors = engine.tensors
    return all(tensors[n].dims.is_static() and tensors[n].dtype.numpy.kind == "f"
               for n in engine.input_names) and not any(
        adapter.is_data_dependent(nd.plugin) for nd in engine.nodes)


def _offers(engine: Engine) -> dict[int, list[str]]:
    """The steps whose plugins offer two or more tactics for their (static) input shapes."""
    offers: dict[int, list[str]] = {}
    for step, nd in enumerate(engine.nodes):
        ability = adapter.tactics_of(nd.plugin)
        if ability is None:
            continue
        shapes = [engine.tensors[n].dims.to_tuple() if n else None for n in nd.inputs]
        tactics = list(ability.get_tactics(shapes))
        if len(tactics) >= 2:
            offers[step] = tactics
    return offers


def time_tactics(engine: Engine) -> dict[str, dict[str, Any]]:
    """Time every tunable node's tactics and set the fastest on the engine's plugins;
    returns ``{node name: {"chosen": tactic, "ms": {tactic: best time}}}``. Nothing runs
    when no plugin has a choice to make."""
    if not any(adapter.tactics_of(nd.plugin) for nd in engine.nodes) or not _tunable(engine):
        return {}
    offers = _offers(engine)
    if not offers:
        return {}
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(engine.tensors[n].dims.to_tuple()).astype(
        engine.tensors[n].dtype.numpy) for n in engine.input_names}
    passes = max(len(t) for t in offers.values())
    best = {step: [float("inf")] * len(t) for step, t in offers.items()}
    try:
        with engine.create_execution_context() as ctx:
            ctx.execute(feeds)  # every tensor now holds values of its shape
            steps = ctx.steps
            for timed in [False] + [True] * REPEAT:
                for k in range(passes):
                    for step, tactics in offers.items():
                        ability = adapter.tactics_of(steps[step].plugin)
                        assert ability is not None
                        ability.set_tactic(tactics[k if k < len(tactics) else 0])
                    took = ctx.time_steps()
                    if timed:
                        for step, tactics in offers.items():
                            if k < len(tactics):
                                best[step][k] = min(best[step][k], took[step])
    except Exception as exc:  # noqa: BLE001 - timing is an optimisation; defaults stay
        log.info("tactic timing skipped: %s: %s", type(exc).__name__, exc)
        return {}
    report: dict[str, dict[str, Any]] = {}
    for step, tactics in offers.items():
        node = engine.nodes[step]
        times = {t: round(s * 1e3, 4) for t, s in zip(tactics, best[step], strict=True)}
        chosen = min(times, key=times.__getitem__)
        ability = adapter.tactics_of(node.plugin)
        assert ability is not None
        ability.set_tactic(chosen)
        report[node.name] = {"chosen": chosen, "ms": times}
        log.debug("tactics of %s: %s -> %s", node.describe(), times, chosen)
    return report
