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
took Winograd at 1.4 ms alone and ran it at 2.2-2.5 ms in the network). Per index: one
warm-up run, then :data:`REPEAT` timed runs; a tactic's time is its best. The warm-up after
each switch is where a plugin prepares for its new tactic (a Conv keeps only the current
Winograd tile size's transformed weights, so that the build does not hold them all at once:
rounds that switched tactic on every run charged that preparation to Winograd's time and
chose the GEMM for 5 of ResNet-50's 13 timed convolutions).
The winners are told to the engine's plugins and ``build_info["tactics"]`` records the times.
Timing needs static input shapes, floating-point inputs and the target device present;
otherwise, or if a run fails, the plugins keep their own default choice.
``BuilderConfig(time_tactics=False)`` (CLI ``--no-tactic-timing``) skips it for a faster build.
``BuilderConfig(timing_cache=FILE)`` (CLI ``--timing-cache FILE``) reads timings from a file
and adds the new ones (timing_cache.py): a build that finds every node there times nothing,
and builds with the same cache make the same engine, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._debug import LazyLogger
from ..engine.engine import Engine, EngineNode
from ..engine.format import plugin_bytes
from ..plugin import DimsExprs, TensorFormat
from ..plugin import _adapter as adapter

if TYPE_CHECKING:  # imported where tactics are timed (a one-off build times none)
    from .timing_cache import TimingCache

__all__ = ["REPEAT", "offers_tactics", "time_tactics"]

log = LazyLogger("mini_infer.builder")  # logging imported only once something else has

#: timed runs of each pass (a tactic's best time counts), after one warm-up run
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


def offers_tactics(nd: EngineNode, dims: Mapping[str, DimsExprs]) -> bool:
    """Whether the node's plugin offers two or more tactics for its input shapes (those
    known now: a symbolic one is given as None)."""
    ability = adapter.tactics_of(nd.plugin)
    if ability is None:
        return False
    shapes = [dims[n].to_tuple() if n and dims[n].is_static() else None for n in nd.inputs]
    return len(list(ability.get_tactics(shapes))) >= 2


def _key(engine: Engine, step: int) -> str:
    """The timing cache's key of a step: plugin and distribution, a digest of its fields,
    input shapes and types, device and host CPU (see timing_cache.py)."""
    import hashlib  # here: OpenSSL's load is a start-up cost a build without timing skips

    from .timing_cache import host_identity

    nd = engine.nodes[step]
    device = engine.devices[nd.device]
    # a failing serialize() is the error writing the engine would give, naming the node
    fields = hashlib.sha256(plugin_bytes(nd)).hexdigest()[:16]
    ins = ";".join(f"{engine.tensors[n].dtype.name}{list(engine.tensors[n].dims.to_tuple())}"
                   + _format_key(engine.tensors[n].format)
                   if n else "-" for n in nd.inputs)
    dist = f"{nd.distribution}=={nd.distribution_version}" if nd.distribution else "in-process"
    dev = f"{device.name}[{device.identity()}]" if device.identity() else device.name
    return (f"{nd.plugin_namespace}::{nd.plugin_name}/v{nd.plugin_version} {dist} | "
            f"{nd.op_type} fields:{fields} | in {ins} | {dev} | {host_identity()[0]}")


def _format_key(fmt: TensorFormat) -> str:
    """A key's mark of an input's format (none for LINEAR: keys made before formats hold)."""
    return "" if fmt is TensorFormat.LINEAR else f"@{fmt.value}"


def cache_hits(engine: Engine, cache: TimingCache) -> dict[str, Any]:
    """How many of ``engine``'s nodes with recorded tactics ``cache`` holds timings for (the
    engine report's timing-cache line): ``{"path", "nodes", "hits"}``."""
    tactics = engine.build_info.get("tactics") or {}
    steps = [i for i, nd in enumerate(engine.nodes) if nd.name in tactics]
    hits = sum(1 for i in steps if _key(engine, i) in cache.entries)
    return {"path": str(cache.path), "nodes": len(steps), "hits": hits}


def time_tactics(engine: Engine, cache: TimingCache | None = None
                 ) -> dict[str, dict[str, Any]]:
    """Time every tunable node's tactics and set the fastest on the engine's plugins;
    returns ``{node name: {"chosen": tactic, "ms": {tactic: best time}}}``. Nothing runs
    when no plugin has a choice to make. With a ``cache``, nodes it knows are not timed (they
    run their cached choice while the others are timed) and new timings are added to it;
    every choice then comes from the cache, so a build that times nothing makes the same
    engine as the build that filled the cache."""
    if not any(adapter.tactics_of(nd.plugin) for nd in engine.nodes) or not _tunable(engine):
        return {}
    offers = _offers(engine)
    if not offers:
        return {}
    keys = {step: _key(engine, step) for step in offers} if cache is not None else {}
    known: dict[int, dict[str, float]] = {}
    if cache is not None:
        for step, tactics in offers.items():
            hit = cache.get(keys[step], tactics)
            if hit is not None:
                known[step] = hit
    todo = {step: t for step, t in offers.items() if step not in known}
    measured = _measure(engine, todo, {s: min(t, key=t.__getitem__) for s, t in known.items()}
                        ) if todo else {}
    if todo and measured is None:
        return {}
    timings = dict(known)
    filled: set[str] = set()
    for step, times in (measured or {}).items():
        if cache is not None:
            if keys[step] not in filled:  # the first node of a signature fills its entry
                filled.add(keys[step])
                cache.put(keys[step], times)
            entry = cache.entries[keys[step]]
            times = {t: entry[t] for t in offers[step]}
        timings[step] = times
    report: dict[str, dict[str, Any]] = {}
    for step in sorted(offers):
        node, times = engine.nodes[step], timings[step]
        chosen = min(times, key=times.__getitem__)
        ability = adapter.tactics_of(node.plugin)
        assert ability is not None
        ability.set_tactic(chosen)
        report[node.name] = {"chosen": chosen, "ms": times}
        log.debug("tactics of %s: %s -> %s%s", node.describe(), times, chosen,
                  " (timing cache)" if step in known else "")
    if cache is not None:
        log.info("timing cache: %d node(s) found, %d timed", len(known), len(todo))
    return report


def _measure(engine: Engine, offers: dict[int, list[str]], fixed: dict[int, str]
             ) -> dict[int, dict[str, float]] | None:
    """Each offered tactic's best time (ms, rounded as the report and the cache keep it),
    with the ``fixed`` steps running their given tactic; None if a run failed."""
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(engine.tensors[n].dims.to_tuple()).astype(
        engine.tensors[n].dtype.numpy) for n in engine.input_names}
    passes = max(len(t) for t in offers.values())
    best = {step: [float("inf")] * len(t) for step, t in offers.items()}
    try:
        with engine.create_execution_context() as ctx:
            ctx.execute(feeds)  # every tensor now holds values of its shape
            steps = ctx.steps
            for step, tactic in fixed.items():
                ability = adapter.tactics_of(steps[step].plugin)
                assert ability is not None
                ability.set_tactic(tactic)
            for k in range(passes):
                for step, tactics in offers.items():
                    ability = adapter.tactics_of(steps[step].plugin)
                    assert ability is not None
                    ability.set_tactic(tactics[k if k < len(tactics) else 0])
                for timed in [False] + [True] * REPEAT:
                    took = ctx.time_steps()
                    if timed:
                        for step, tactics in offers.items():
                            if k < len(tactics):
                                best[step][k] = min(best[step][k], took[step])
    except Exception as exc:  # noqa: BLE001 - timing is an optimisation; defaults stay
        log.info("tactic timing skipped: %s: %s", type(exc).__name__, exc)
        return None
    return {step: {t: round(s * 1e3, 4) for t, s in zip(tactics, best[step], strict=True)}
            for step, tactics in offers.items()}
