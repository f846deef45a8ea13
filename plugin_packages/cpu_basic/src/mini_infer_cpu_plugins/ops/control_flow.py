"""If, Loop and Scan: bodies run as mini-infer engines (``SubgraphRunner``).

Their output shapes depend on what the bodies compute, so they are ``data_dependent``: the
engine calls ``compute`` without ``out`` and binds the shapes they return. The importer passes
every value a body reads from enclosing scopes as an extra input, named in ``__outer_scope__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, IntLike, IUsesSubgraphs, Subgraph

from ..serialization import CpuPlugin

__all__ = ["If", "Loop", "Scan"]

_HIDDEN = {"__outer_scope__": (), "__opset_imports__": ""}


class _ControlFlow(CpuPlugin, IUsesSubgraphs):
    data_dependent = True
    bodies: ClassVar[tuple[str, ...]] = ()

    def setup(self) -> None:
        self._runners: dict[str, Subgraph] | None = None

    @property
    def runners(self) -> dict[str, Subgraph]:
        """The bodies, made by the subgraph factory the core attached."""
        if self._runners is None:
            if self.subgraphs is None:
                raise PluginInterfaceError(
                    f"{self.op_type} {self.name!r}: no subgraph factory is attached (make the "
                    "plugin through mini-infer's builder or runtime)")
            self._runners = {b: self.subgraphs(self.attrs[b], self.attrs["__opset_imports__"],
                                               self.attrs["__outer_scope__"],
                                               label=f"{self.name}.{b}")
                             for b in self.bodies}
        return self._runners

    @property
    def n_outer(self) -> int:
        return len(self.attrs["__outer_scope__"])

    def split(self, inputs: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        k = len(inputs) - self.n_outer
        return list(inputs[:k]), list(inputs[k:])

    def terminate(self) -> None:
        for r in (self._runners or {}).values():
            r.close()

    def _typed(self, body: str, k: int) -> DataType:
        t = self.runners[body].output_types()[k]
        if t is None:
            raise PluginInterfaceError(f"{self.op_type} {self.name!r}: output {k} of {body} "
                                       "has no element type in the model")
        return t

    def _empty_scan(self, k: int) -> Any:
        """A scan output of zero iterations: shape (0, *declared dims of the body output)."""
        out = self.runners["body"].graph.output[k].type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in out.shape.dim]
        return np.zeros((0, *dims), self._typed("body", k).numpy)

    def _rank(self, body: str, k: int) -> int:
        r = self.runners[body].output_ranks()[k]
        if r is None:
            raise PluginInterfaceError(f"{self.op_type} {self.name!r}: output {k} of {body} "
                                       "has no shape (rank) in the model")
        return r


class If(_ControlFlow):
    attributes = {"then_branch": REQUIRED, "else_branch": REQUIRED, **_HIDDEN}
    bodies = ("then_branch", "else_branch")

    @property
    def num_outputs(self) -> int:
        return len(self.runners["then_branch"].output_names)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [[self.dynamic_dim(f"out{k}_d{i}") for i in range(self._rank("then_branch", k))]
                for k in range(self.num_outputs)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self._typed("then_branch", k) for k in range(self.num_outputs)]

    def compute(self, cond: Any, *rest: Any, **_: Any) -> tuple[Any, ...]:
        body = "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch"
        return tuple(self.runners[body].run([], rest))


class Loop(_ControlFlow):
    """Inputs: M (trip count), cond, loop-carried v...; outputs: final v..., scan outputs."""

    attributes = {"body": REQUIRED, **_HIDDEN}
    bodies = ("body",)

    @property
    def n_carried(self) -> int:
        return len(self.runners["body"].input_names) - 2

    @property
    def num_outputs(self) -> int:
        return len(self.runners["body"].output_names) - 1

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        shapes: list[list[IntLike]] = []
        for k in range(self.num_outputs):
            if k < self.n_carried:
                rank = len(inputs[2 + k])
            else:
                rank = 1 + self._rank("body", 1 + k)
            shapes.append([self.dynamic_dim(f"out{k}_d{i}") for i in range(rank)])
        return shapes

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[2 + k] if k < self.n_carried else self._typed("body", 1 + k)
                for k in range(self.num_outputs)]

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
        return (*[np.asarray(c) for c in carried], *stacked)


class Scan(_ControlFlow):
    """Opset 9+: N states then M scan inputs; outputs: final states, then scan outputs."""

    attributes = {"body": REQUIRED, "num_scan_inputs": REQUIRED, "scan_input_axes": None,
                  "scan_input_directions": None, "scan_output_axes": None,
                  "scan_output_directions": None, **_HIDDEN}
    bodies = ("body",)
    min_opset = 9

    @property
    def n_states(self) -> int:
        return len(self.runners["body"].input_names) - int(self.attrs["num_scan_inputs"])

    @property
    def num_outputs(self) -> int:
        return len(self.runners["body"].output_names)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        shapes: list[list[IntLike]] = []
        for k in range(self.num_outputs):
            rank = len(inputs[k]) if k < self.n_states else 1 + self._rank("body", k)
            shapes.append([self.dynamic_dim(f"out{k}_d{i}") for i in range(rank)])
        return shapes

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[k] if k < self.n_states else self._typed("body", k)
                for k in range(self.num_outputs)]

    def compute(self, *inputs: Any, num_scan_inputs: int, scan_input_axes: Any,
                scan_input_directions: Any, scan_output_axes: Any,
                scan_output_directions: Any, **_: Any) -> tuple[Any, ...]:
        formal, outer = self.split(inputs)
        n, m = self.n_states, int(num_scan_inputs)
        states, xs = list(formal[:n]), list(formal[n : n + m])
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
