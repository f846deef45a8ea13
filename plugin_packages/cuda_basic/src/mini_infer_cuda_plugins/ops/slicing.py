"""Shape, Gather and Slice: the operators of shape computations, with build-time values.

``Shape`` gives its input's dimensions as values, ``Gather`` and ``Slice`` pick from known
values, so ``Shape -> Gather/Slice -> Concat -> Reshape`` chains are known while the engine is
built, even with dynamic dimensions. At run time nothing is read back from the GPU: Shape
copies a device-resident table made on its first run, and Slice uses the starts/ends/axes/
steps it recorded at build time -- or, for starts computed from dynamic shapes, gathers with
indices computed on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, shapes
from mini_infer_core.plugin.shapes import Shapes, Values

from ..serialization import CudaPlugin
from ._common import Scratch, array_module, host_ints, shape_values

__all__ = ["Shape", "Gather", "Slice_1", "Slice"]


class Shape(CudaPlugin):
    """The input's shape as INT64; ``start``/``end`` (opset 15) take a part of it."""

    attributes: ClassVar[dict[str, Any]] = {"start": 0, "end": None}

    def setup(self) -> None:
        self.scratch = Scratch()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        s, e = shapes.shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [[max(e - s, 0)]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        s, e = shapes.shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [list(inputs[0])[s:e]]

    def compute(self, x: Any, *, out: Any, start: int, end: int | None) -> None:
        xp = array_module(x, out)
        s, e = shapes.shape_range(x.ndim, start, end)
        table = np.array(x.shape[s:e], np.int64).reshape(out.shape)
        xp.copyto(out, self.scratch.constant(xp, "shape", table))


class Gather(CudaPlugin):
    """``take`` along ``axis``: out = data.shape[:axis] + indices.shape +
    data.shape[axis+1:]; negative indices count from the end."""

    attributes: ClassVar[dict[str, Any]] = {"axis": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.gather_dims(inputs[0], inputs[1], self.attrs["axis"])]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.gather_values(inputs[0], inputs[1], self.attrs["axis"])

    def compute(self, data: Any, indices: Any, *, out: Any, axis: int) -> None:
        xp = array_module(data, indices, out)
        xp.take(data, indices, axis=shapes.norm_axis(axis, data.ndim), out=out)


class Slice_1(CudaPlugin):  # noqa: N801
    """Slice before opset 10: ``starts``, ``ends``, ``axes`` attributes (step 1)."""

    op_type = "Slice"
    plugin_version = "1"
    max_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"starts": REQUIRED, "ends": REQUIRED, "axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        a = self.attrs
        return [list(shapes.slice_dims(list(inputs[0]), a["starts"], a["ends"], a["axes"], None))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        a = self.attrs
        return shapes.slice_values(inputs[0], a["starts"], a["ends"], a["axes"])

    def compute(self, x: Any, *, out: Any, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None) -> None:
        array_module(x, out).copyto(out, x[shapes.slice_index(x.ndim, starts, ends, axes, None)])


class Slice(CudaPlugin):
    """Slice from opset 10: ``starts``, ``ends``, optional ``axes`` and ``steps`` inputs, all
    known when the engine is built (``shape_inputs``; starts/ends may be symbolic, computed
    from dynamic shapes). At run time only the starts matter (the output shape gives each
    length): constant ones are recorded with the plugin, symbolic ones are read on the device
    (a gather whose indices the GPU computes; that path allocates)."""

    plugin_version = "10"
    min_opset = 10
    shape_inputs = (1, 2, 3, 4)
    hidden_fields = ("__starts__", "__axes__", "__steps__")

    @property
    def graph_safe(self) -> bool:
        return "__starts__" in self.hidden

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        starts = shape_values(inputs, 1, "Slice", "starts")
        ends = shape_values(inputs, 2, "Slice", "ends")
        axes = None if shapes.absent(inputs, 3) else \
            shapes.const_ints(shape_values(inputs, 3, "Slice", "axes"), "Slice", "axes")
        steps = None if shapes.absent(inputs, 4) else \
            shapes.const_ints(shape_values(inputs, 4, "Slice", "steps"), "Slice", "steps")
        dims = shapes.slice_dims(list(inputs[0]), starts, ends, axes, steps)
        known = all(v.is_constant() for v in starts)
        self.record("__starts__", [v.get_constant_value() for v in starts] if known else None)
        self.record("__axes__", axes)
        self.record("__steps__", steps)
        return [list(dims)]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        params = (None if shapes.absent(inputs, k) else inputs[k].values for k in (1, 2, 3, 4))
        return shapes.slice_values(inputs[0], *params)

    def compute(self, x: Any, starts: Any, ends: Any, axes: Any | None = None,
                steps: Any | None = None, *, out: Any) -> None:
        xp = array_module(x, out)
        rec = self.hidden
        ax = rec.get("__axes__", None if axes is None else host_ints(axes))
        st = rec.get("__steps__", None if steps is None else host_ints(steps))
        first = rec.get("__starts__", host_ints(starts) if xp is np else None)
        if first is not None:
            ax, st = shapes.slice_axes(x.ndim, len(first), ax, st)
            index = [slice(None)] * x.ndim
            for s, a, k in zip(first, ax, st, strict=True):
                n = x.shape[a]
                s = min(max(s + n if s < 0 else s, 0), n if k > 0 else n - 1)
                stop = s + out.shape[a] * k
                index[a] = slice(s, None if stop < 0 else stop, k)
            xp.copyto(out, x[tuple(index)])
            return
        ax, st = shapes.slice_axes(x.ndim, starts.size, ax, st)
        picked = x
        for k, (a, step) in enumerate(zip(ax, st, strict=True)):
            n = x.shape[a]
            s = starts.reshape(-1)[k].astype(xp.int64)
            s = xp.where(s < 0, s + n, s)
            s = xp.clip(s, 0, n if step > 0 else n - 1)
            idx = s + step * xp.arange(out.shape[a], dtype=xp.int64)
            picked = xp.take(picked, idx, axis=a)
        xp.copyto(out, picked)
