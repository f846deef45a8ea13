"""An If step of a keyed plan that runs its taken branch's plan in place.

A keyed plan (:mod:`.keyed`) knows, per key, which branch each If takes, and the branch's
inputs are the plan's own arrays (the same objects, of the same shapes, on every run). The
generic step (:func:`.keyed.run_into`) still goes through the If plugin, the subgraph runner
(its signature check, the branch context's ``execute``: input checks, a result dict, fresh
output arrays) and then copies the result into the plan: 40-50 us a run of silero-vad's
If-less export, whose whole network is the branch (~110 us), on the 2-core dev machine.

:class:`BranchStep` runs that way once, and then learns where the run went -- the branch
context the runner used and its plan, whose every input and output is staged in buffers of
its own (:data:`.plans.STAGE_BYTES`) -- and from then on copies the If's inputs into the
branch plan's input buffers, runs the branch plan's steps and copies its output buffers into
the If's planned outputs: the branch's steps inlined into the keyed plan's run. Each run
checks what the shortcut assumes (the condition still picks the learnt branch, the branch
context still has that plan, that plan's staged buffers) and otherwise takes the generic
path and learns again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._record import record
from ..plugin import Device, IPluginV2, Stream
from ..plugin import _adapter as adapter
from .keyed import run_into

__all__ = ["BranchStep"]


@record(slots=True)
class _Learnt:
    taken: bool
    context: Any
    plan: Any
    #: (branch plan's input buffer, the If step's input array)
    copies_in: list[tuple[Any, Any]]
    #: (the If step's output array, branch plan's output buffer)
    copies_out: list[tuple[Any, Any]]


class BranchStep:
    """The keyed plan's call for an If step (see the module's doc)."""

    __slots__ = ("_generic", "_ins", "_learnt", "_outs", "_owner")

    def __init__(self, plugin: IPluginV2, device: Device, ins: Sequence[Any],
                 outs: Sequence[Any], workspace: Any, stream: Stream) -> None:
        self._generic: Callable[[], None] = lambda: run_into(plugin, device, ins, outs,
                                                             workspace, stream)
        self._owner = adapter.subgraphs_of(plugin)
        self._ins, self._outs = ins, outs
        self._learnt: _Learnt | None = None

    def __call__(self) -> None:
        learnt = self._learnt
        if learnt is not None:
            ctx, plan = learnt.context, learnt.plan
            if ctx._plan is plan and ctx._repeat is plan and not ctx._closed and \
                    bool(self._ins[0].reshape(-1)[0]) is learnt.taken:
                with ctx._lock:
                    for dst, src in learnt.copies_in:
                        np.copyto(dst, src)
                    ctx._enqueue_all()
                    for dst, src in learnt.copies_out:
                        np.copyto(dst, src)
                return
        self._generic()
        self._learnt = self._learn()

    def _learn(self) -> _Learnt | None:
        """Where the generic run just went, where the shortcut can take it; None otherwise."""
        ins, outs = self._ins, self._outs
        cond = ins[0] if ins else None
        if not isinstance(cond, np.ndarray) or cond.size != 1:
            return None
        taken = bool(cond.reshape(-1)[0])
        runners = getattr(self._owner, "runners", None)
        runner: Any = runners.get("then_branch" if taken else "else_branch") \
            if isinstance(runners, dict) else None
        last = getattr(runner, "last_context", None)  # the builder's SubgraphRunner
        if last is None or runner.input_names:
            return None
        ctx = last()
        plan = getattr(ctx, "_plan", None)
        if ctx is None or plan is None or ctx._dynamic or ctx._use_graphs or \
                ctx._repeat is not plan or not plan.staged_checked or \
                plan.staged_results is None or any(b is None for _, b in plan.staged_results):
            return None
        values = {n: ins[1 + k] for k, n in enumerate(runner.outer_names)}
        copies_in = []
        for name, buf in plan.staged_in:
            src = values.get(name)
            if not _fits(src, buf):
                return None
            copies_in.append((buf, src))
        staged = dict(plan.staged_results)
        copies_out = []
        for k, name in enumerate(runner.output_names):
            dst = outs[k] if k < len(outs) else None
            if dst is None:
                continue
            buf = staged.get(name)
            if not _fits(dst, buf):
                return None
            copies_out.append((dst, buf))
        return _Learnt(taken, ctx, plan, copies_in, copies_out)


def _fits(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
        a.shape == b.shape and a.dtype == b.dtype
