"""Data movement: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity -- copies
into the pre-allocated output, or nothing where the engine placed the input there
(``in_place_inputs``; schemas in :mod:`mini_infer_core.ops.shape`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.ops import shape as schema
from mini_infer_core.plugin import DimsExprs, Fusion, shapes
from mini_infer_core.plugin.arrays import NDArray

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
    """Fusion: a Mul of its output by one constant value (attention's Q and K scaled by
    ``head_dim ** -0.25`` after their transposes, as PyTorch's exporter writes them) is done in
    the same pass: ``__scale__`` (the constant is the appended input); the same float product
    as the Mul node's."""

    hidden_fields: ClassVar[tuple[str, ...]] = (*schema.Transpose.hidden_fields, "__scale__")
    fusable: ClassVar[frozenset[str]] = frozenset({"Mul"})
    #: from this many elements a transpose that brings the input's last axis to the output's
    #: last but one copies in two passes (below)
    two_pass_from: ClassVar[int] = 4096
    #: output columns per two-pass chunk
    chunk: ClassVar[int] = 128

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[DimsExprs | None], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        if op_type != "Mul" or "__scale__" in self.hidden or len(consumer_dims) != 2:
            return None
        c = consumer_constants[1 - position]
        mine, theirs = consumer_dims[position], consumer_dims[1 - position]
        if (c is None or mine is None or theirs is None or len(theirs) > len(mine)
                or np.asarray(c).size != 1 or np.asarray(c).dtype.kind != "f"):
            return None
        self.record("__scale__", 1)
        return Fusion(constants={len(own_constants): np.asarray(c).reshape(())})

    def compute(self, x: Array, *fused: Array, out: Array, perm: tuple[int, ...] | None
                ) -> None:
        p = self.perm(x.ndim)
        n = x.ndim
        scale = fused[0] if self.hidden.get("__scale__") else None
        # The input's rows (its last axis) become the output's last but one, as attention's
        # K^T (0, 2, 3, 1) does: numpy's one pass reads each output row from values a whole
        # input row apart; where that is a multiple of 1 KiB (8 heads of 64: 2 KiB) they share
        # cache sets, 1.5-8x slower on (1, 128..1500, 4..8, 64). Two passes there, over
        # `chunk` output columns at a time (the temporary stays in cache): the other axes
        # permuted, whole rows copied; then a batch of 2-D transposes. Other strides (6 heads
        # of 64 at 1500 rows) are faster in one pass. The same elements, moved (and scaled
        # once).
        if (n >= 3 and x.size >= self.two_pass_from and p[-2] == n - 1 and out.flags.c_contiguous
                and x.flags.c_contiguous and x.strides[p[-1]] % 1024 == 0
                and tuple(p[:-2]) + (p[-1],) != tuple(range(n - 1))):
            rows = x.transpose((*p[:-2], p[-1], n - 1))
            cols = rows.shape[-2]
            tmp = np.empty((*rows.shape[:-2], min(cols, self.chunk), rows.shape[-1]), x.dtype)
            for c0 in range(0, cols, self.chunk):
                c1 = min(cols, c0 + self.chunk)
                part = tmp[..., : c1 - c0, :]
                _copy_or_scale(part, rows[..., c0:c1, :], scale)
                np.copyto(out[..., c0:c1], part.swapaxes(-1, -2))
            return
        _copy_or_scale(out, x.transpose(p), scale)


def _copy_or_scale(out: Array, x: Array, scale: Array | None) -> None:
    """``out = x`` or, with a fused Mul's constant, ``out = x * scale``."""
    if scale is None:
        np.copyto(out, x)
    else:
        np.multiply(x, scale, out=out)


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
