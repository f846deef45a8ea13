"""If, Loop and Scan: bodies run as mini-infer engines, through the subgraph factory the core
attaches (``IUsesSubgraphs``); attributes and the outputs' types and ranks are the schemas'
(:mod:`mini_infer_core.ops.control_flow`).

The engine calls ``compute`` without ``out`` (the operators are data-dependent) and binds the
shapes it returns. If and Loop also carry sequences and optionals (lists, None): their
bodies are built for the kinds they are called with.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import control_flow as schema
from mini_infer_core.plugin import Subgraph, ValueSpec

from ..serialization import CpuPlugin
from ._scan_cdist import distance_body, scan_distances

__all__ = ["If", "Loop", "Scan"]


class _ControlFlow(CpuPlugin, schema.ControlFlowBase):
    def setup(self) -> None:
        super().setup()
        self._runners: dict[str, Subgraph] | None = None

    @property
    def runners(self) -> dict[str, Subgraph]:
        """The bodies, made (on first use) by the subgraph factory the core attached."""
        if self._runners is None:
            self._runners = {b: self.make_body(b) for b in self.bodies}
        return self._runners

    def infer_body(self, body: str, inputs: Any) -> list[ValueSpec | None] | None:
        """What the body gives for these inputs, from building it (at build time, where the
        subgraph factory is attached)."""
        if self.subgraphs is None:
            return None
        return self.runners[body].infer(inputs)

    def terminate(self) -> None:
        for r in (self._runners or {}).values():
            r.close()

    def destroy(self) -> None:
        self.terminate()
        self._runners = None

    def _empty_scan(self, k: int) -> Any:
        """Body output ``k`` stacked over zero iterations."""
        shape, dtype = self.empty_scan(k)
        return np.zeros(shape, dtype.numpy)


def _tensor_or_value(v: Any) -> Any:
    """An array as an array; a sequence (list), empty optional (None) or map as it is."""
    return v if v is None or isinstance(v, (list, tuple, dict)) else np.asarray(v)


class If(_ControlFlow, schema.If):
    input_kinds = ("tensor", "any")

    def compute(self, cond: Any, *rest: Any, out: Any = None, **_: Any) -> tuple[Any, ...] | None:
        """The branch's outputs; written into ``out`` where the engine planned them (an If
        step of a keyed plan run through ``enqueue``: profiles, per-node comparisons)."""
        body = "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch"
        result = self.runners[body].run([], rest)
        if out is None:
            return tuple(result)
        for k, (dst, got) in enumerate(zip(out if isinstance(out, tuple) else (out,), result,
                                           strict=False)):
            if dst is None:
                continue
            if np.shape(got) != dst.shape:
                raise ValueError(f"{body} gave output {k} of shape {np.shape(got)}, the "
                                 f"plan holds {dst.shape}")
            np.copyto(dst, got)
        return None


class Loop(_ControlFlow, schema.Loop):
    input_kinds = ("tensor", "tensor", "any")

    def compute(self, *inputs: Any, **_: Any) -> tuple[Any, ...]:
        formal, outer = self.split(inputs)
        trip, cond, carried = formal[0], formal[1], list(formal[2:])
        max_trip = None if trip is None else int(np.asarray(trip).reshape(-1)[0])
        keep = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
        cond_dtype = np.bool_ if cond is None else np.asarray(cond).dtype
        scans: list[list[Any]] = [[] for _ in range(self.num_outputs - self.n_carried)]
        i = 0
        while keep and (max_trip is None or i < max_trip):
            out = self.runners["body"].run(
                [np.array(i, np.int64), np.array(keep, cond_dtype), *carried], outer)
            keep = bool(np.asarray(out[0]).reshape(-1)[0]) if cond is not None else True
            carried = out[1 : 1 + self.n_carried]
            for s, v in zip(scans, out[1 + self.n_carried :], strict=True):
                s.append(v)
            i += 1
        stacked = []
        for k, s in enumerate(scans):
            stacked.append(np.stack(s) if s else
                           self._empty_scan(1 + self.n_carried + k))
        return (*[_tensor_or_value(c) for c in carried], *stacked)


class Scan(_ControlFlow, schema.Scan):
    def compute(self, *inputs: Any, num_scan_inputs: int, scan_input_axes: Any,
                scan_input_directions: Any, scan_output_axes: Any,
                scan_output_directions: Any, **_: Any) -> tuple[Any, ...]:
        formal, outer = self.split(inputs)
        n, m = self.n_states, int(num_scan_inputs)
        states, xs = list(formal[:n]), list(formal[n : n + m])
        if n == m == 1 and not outer and not any(
                (scan_input_axes or (), scan_input_directions or (), scan_output_axes or (),
                 scan_output_directions or ())):
            distances = self._distances(states[0], xs[0])
            if distances is not None:  # skl2onnx's pairwise distances, all rows at once
                return np.array(states[0]), distances
        in_axes = list(scan_input_axes or [0] * m)
        in_dirs = list(scan_input_directions or [0] * m)
        xs = [np.moveaxis(x, ax % x.ndim, 0) for x, ax in zip(xs, in_axes, strict=True)]
        xs = [x[::-1] if d else x for x, d in zip(xs, in_dirs, strict=True)]
        steps = xs[0].shape[0] if xs else 0
        n_out = self.num_outputs - n
        ys: list[list[Any]] = [[] for _ in range(n_out)]
        for t in range(steps):
            out = self.runners["body"].run([*states, *[x[t] for x in xs]], outer)
            states = out[:n]
            for y, v in zip(ys, out[n:], strict=True):
                y.append(v)
        out_axes = list(scan_output_axes or [0] * n_out)
        out_dirs = list(scan_output_directions or [0] * n_out)
        results = []
        for k, y in enumerate(ys):
            stacked = np.stack(y) if y else self._empty_scan(n + k)
            if out_dirs[k]:
                stacked = stacked[::-1]
            results.append(np.ascontiguousarray(np.moveaxis(stacked, 0,
                                                            out_axes[k] % stacked.ndim)))
        return (*[np.asarray(s) for s in states], *results)

    def _distances(self, state: Any, xs: Any) -> Any:
        """The stacked output of skl2onnx's squared-distance body (:mod:`._scan_cdist`),
        else None."""
        kind = getattr(self, "_distance_kind", ...)
        if kind is ...:
            kind = self._distance_kind = distance_body(self.graphs["body"])
        if kind is None:
            return None
        return scan_distances(np.asarray(state), np.asarray(xs), kind)
