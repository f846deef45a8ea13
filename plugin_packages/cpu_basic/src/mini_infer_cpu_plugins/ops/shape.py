"""Data movement: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity -- copies
into the pre-allocated output, or nothing where the engine placed the input there
(``in_place_inputs``; schemas in :mod:`mini_infer_core.ops.shape`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.ops import shape as schema
from mini_infer_core.plugin import shapes

from ..serialization import CpuPlugin
from ._dynamic import as_ints
from ._util import SameBytes, copy_into, in_place

__all__ = ["Reshape_1", "Reshape_5", "Flatten", "Transpose", "Concat", "Unsqueeze_1",
           "Unsqueeze_13", "Squeeze_1", "Squeeze_13", "Identity"]

Array = NDArray[Any]


class _Copy(SameBytes, CpuPlugin, schema.CopyBase):
    """The input's elements into ``out``. A data-dependent call (a target or axes computed
    at run time) returns the input in the shape :meth:`shaped` gives it."""

    def shaped(self, x: Array, *values: Array | None, **attrs: Any) -> Array:
        raise NotImplementedError

    def compute(self, x: Array, *values: Array | None, out: Array | None = None,
                **attrs: Any) -> Any:
        if out is None:
            return self.shaped(x, *values, **attrs).copy()
        copy_into(out, x)
        return None

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The copy into a contiguous output not placed over the input, bound."""
        x, out = inputs[0], outputs[0]
        if not isinstance(x, np.ndarray) or not isinstance(out, np.ndarray) or \
                not out.flags.c_contiguous or out.size != x.size or in_place(x, out):
            return None
        return partial(np.copyto, out.reshape(x.shape), x)


# the operators that never turn data-dependent: a copy
Reshape_1, Flatten, Unsqueeze_1, Squeeze_1 = (
    type(op.__name__, (_Copy, op), {"__module__": __name__}) for op in (
        schema.Reshape_1, schema.Flatten, schema.Unsqueeze_1, schema.Squeeze_1))


class Identity(_Copy, schema.Identity):
    """Tensors, and sequences and optionals (lists, None: a new list of copies, so that
    the caller owns what it gets)."""

    input_kinds = ("any",)

    def compute(self, x: Any, *values: Array | None, out: Array | None = None,
                **attrs: Any) -> Any:
        if out is None:
            return (_copied(x),)
        copy_into(out, x)
        return None


def _copied(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_copied(v) for v in value]
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    return np.array(value)


class Reshape_5(_Copy, schema.Reshape_5):  # noqa: N801
    def shaped(self, x: Array, *values: Array | None, **attrs: Any) -> Array:
        target = shapes.reshape_target(x.shape, as_ints(values[0]), attrs.get("allowzero", 0))
        return x.reshape(target)


class Unsqueeze_13(_Copy, schema.Unsqueeze_13):  # noqa: N801
    def shaped(self, x: Array, *values: Array | None, **attrs: Any) -> Array:
        return np.expand_dims(x, tuple(as_ints(values[0])))


class Squeeze_13(_Copy, schema.Squeeze_13):  # noqa: N801
    def shaped(self, x: Array, *values: Array | None, **attrs: Any) -> Array:
        axes = values[0] if values else None
        return np.squeeze(x, None if axes is None else tuple(as_ints(axes)))


class Transpose(CpuPlugin, schema.Transpose):
    #: from this many elements a transpose that brings the input's last axis to the output's
    #: last but one copies in two passes (below)
    two_pass_from: int = 4096

    def compute(self, x: Array, *, out: Array, perm: tuple[int, ...] | None) -> None:
        p = self.perm(x.ndim)
        n = x.ndim
        # The input's rows (its last axis) become the output's last but one, as attention's
        # K^T (0, 2, 3, 1) does: numpy's one pass reads each output row from values a whole
        # row apart, 10-30x slower on (1, 128, 8, 64) (rows 2 KiB apart share cache sets).
        # Two passes instead: the other axes permuted, whole rows copied; then a batch of
        # 2-D transposes. Results are the same elements, moved.
        if (n >= 3 and x.size >= self.two_pass_from and p[-2] == n - 1 and out.flags.c_contiguous
                and tuple(p[:-2]) + (p[-1],) != tuple(range(n - 1))):
            rows = x.transpose((*p[:-2], p[-1], n - 1))
            tmp = np.empty(rows.shape, x.dtype)
            np.copyto(tmp, rows)
            np.copyto(out, tmp.swapaxes(-1, -2))
            return
        np.copyto(out, x.transpose(p))


class Concat(CpuPlugin, schema.Concat):
    #: every input placed in its output (``in_place_inputs``): nothing left to copy
    in_place_only = True

    def in_place_inputs(self, inputs: Sequence[Any], outputs: Sequence[Any]
                        ) -> dict[int, tuple[int, int]]:
        """Where every dimension before ``axis`` is 1, each input is a contiguous run of the
        output: the engine may place it there (its producer then writes it in place)."""
        shape = outputs[0][0]
        ax = shapes.norm_axis(self.attrs["axis"], len(shape))
        if any(d != 1 for d in shape[:ax]):
            return {}
        inner = math.prod(shape[ax + 1:])
        places, pos = {}, 0
        for i, desc in enumerate(inputs):
            places[i] = (0, pos * inner)
            pos += desc[0][ax]
        return places

    def compute(self, *xs: Array, out: Array, axis: int) -> None:
        ax = shapes.norm_axis(axis, out.ndim)
        if len(xs) == 1 or not out.flags.c_contiguous:
            np.concatenate(xs, axis=ax, out=out)
            return
        lead, pos = (slice(None),) * ax, 0
        for x in xs:
            part = out[(*lead, slice(pos, pos + x.shape[ax]))]
            pos += x.shape[ax]
            if not in_place(x, part):  # the engine may have put it there already
                np.copyto(part, x)
