"""An execution context's device graphs: a whole run captured once (CUDA graphs) and replayed
while the input shapes repeat, inputs and outputs going through buffers the context owns; a
capture that fails is followed by an eager run, after which the context stays eager and says
why (``graph_error``).

Functions of the context (``ctx``), imported by :class:`~.context.ExecutionContext` only when
graphs are asked for (a plain run does not import this module: issue 30).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._debug import lifecycle_logger
from ..plugin import _adapter as adapter
from .schedule import Schedule

if TYPE_CHECKING:
    from .context import ExecutionContext

__all__ = ["enable", "execute_graph", "refused"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)


def refused(ctx: ExecutionContext) -> str | None:
    """Why ``ctx`` cannot run as a device graph (None: it can)."""
    if len(ctx.devices) != 1:
        return f"the engine runs on several devices ({', '.join(sorted(ctx.devices))})"
    if ctx._dynamic:
        return "its shapes depend on data: it runs in segments around data-dependent nodes"
    if ctx._planned_values:
        return "it returns values (lists, dicts) that its nodes make in Python"
    if not ctx.device.supports_graphs():
        return f"device {ctx.device.name!r} cannot capture graphs"
    unsafe = [node.describe() for node, p in zip(ctx.engine.nodes, ctx.plugins, strict=True)
              if not adapter.graph_safe(p)]
    if unsafe:
        return f"{unsafe[0]} allocates while it runs (graph_safe is False)"
    return None


def enable(ctx: ExecutionContext, enabled: bool) -> bool:
    """``ctx.enable_graphs(enabled)``: whether graphs are in use now."""
    ctx._use_graphs = bool(enabled) and refused(ctx) is None
    ctx._graph = None
    ctx.graph_error = None
    ctx._plan = None  # inputs and outputs move to buffers of the context's own
    ctx._plans.clear()
    ctx._plans.stage_io = not ctx._use_graphs
    return ctx._use_graphs


def execute_graph(ctx: ExecutionContext, feeds: Mapping[str, Any], sched: Schedule
                  ) -> dict[str, np.ndarray[Any, Any]]:
    """A run of ``ctx`` as a device graph: captured for new shapes, then replayed."""
    engine, device = ctx.engine, ctx.device
    tensors = engine.tensors
    if ctx._graph is None:  # new shapes: fixed IO buffers, then capture
        ctx._io = {n: device.empty(sched.shapes[n], tensors[n].dtype.numpy)
                   for n in (*engine.input_names, *engine.output_names)
                   if n in engine.input_names or tensors[n].kind == "output"}
        assert ctx._plan is not None
        for name, lst, k in ctx._plan.patches:
            lst[k] = ctx._io[name]
    for n in engine.input_names:
        device.copy(ctx._io[n], device.to_device(np.asarray(feeds[n], order="C")), ctx.stream)
    if ctx._graph is None:
        try:
            ctx._graph = device.capture_graph(ctx._enqueue_all_async, ctx.stream)
        except Exception as exc:  # noqa: BLE001 - an eager run below says if it was real
            return _failed(ctx, exc, sched)
        log.debug("captured a graph of %d steps", len(ctx.steps))
    device.launch_graph(ctx._graph, ctx.stream)
    ctx.stream.synchronize()
    return ctx._results(ctx._io, sched.home)


def _failed(ctx: ExecutionContext, exc: Exception, sched: Schedule
            ) -> dict[str, np.ndarray[Any, Any]]:
    """A capture failed: run eagerly (an error there is the run's own and propagates); if
    that works, the context stays eager and says why (``graph_error``, a warning)."""
    ctx._enqueue_all()
    ctx._use_graphs = False
    ctx.graph_error = f"{type(exc).__name__}: {exc}"
    warnings.warn(f"mini-infer: CUDA-graph capture failed, this context runs eagerly "
                  f"from now on ({ctx.graph_error})", RuntimeWarning, stacklevel=3)
    return ctx._results(ctx._io, sched.home)
