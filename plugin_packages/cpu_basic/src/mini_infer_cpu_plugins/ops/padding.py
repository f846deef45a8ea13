"""Padding and cropping: Pad (every version), CenterCropPad, Col2Im -- NumPy kernels (schemas
in :mod:`mini_infer_core.ops.padding`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import padding as schema
from mini_infer_core.ops.padding import full_pads
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import as_ints, emit

__all__ = ["Pad_1", "Pad_2", "Pad_11", "Pad", "CenterCropPad", "Col2Im"]

Array = NDArray[Any]

_MODES = ("constant", "reflect", "edge", "wrap")


def pad(x: Array, pads: Sequence[int], mode: str, value: Any) -> Array:
    rank = x.ndim
    begin, end = pads[:rank], pads[rank:]
    crop = tuple(slice(max(-b, 0), x.shape[i] - max(-e, 0))
                 for i, (b, e) in enumerate(zip(begin, end, strict=True)))
    x = x[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=True)]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=value)
    if mode not in _MODES:
        raise PluginInterfaceError(f"Pad: unknown mode {mode!r}")
    return np.pad(x, width, mode=mode)  # type: ignore[call-overload, no-any-return]


#: what :func:`pad_into` does: ``x`` into the middle index, then each border index of ``out``
#: set from another index of ``out`` or (None) to the constant
PadSteps = tuple[tuple[slice, ...], list[tuple[tuple[slice, ...], tuple[slice, ...] | None]]]


def pad_steps(x_shape: Sequence[int], out_shape: Sequence[int], pads: Sequence[int],
              mode: str) -> PadSteps | None:
    """The index copies that pad ``x`` into ``out`` (:func:`pad_into`); None where they do not
    apply (pads below 0, a reflection or wrap longer than the axis, an unknown mode)."""
    rank = len(x_shape)
    begin, end = pads[:rank], pads[rank:]
    if tuple(out_shape) != tuple(n + b + e for n, b, e in zip(x_shape, begin, end,
                                                               strict=True)):
        return None
    for n, b, e in zip(x_shape, begin, end, strict=True):
        if b < 0 or e < 0 or (mode != "constant" and (b or e) and (
                n == 0 or (mode == "reflect" and max(b, e) >= n)
                or (mode == "wrap" and max(b, e) > n))):
            return None
    if mode not in _MODES:
        return None
    inner = tuple(slice(b, b + n) for n, b in zip(x_shape, begin, strict=True))
    steps: list[tuple[tuple[slice, ...], tuple[slice, ...] | None]] = []
    for axis, (n, b, e) in enumerate(zip(x_shape, begin, end, strict=True)):
        if not (b or e):
            continue
        # the padded extent of the axes before this one, the middle of those after it
        lead = (*(slice(None),) * axis,)
        rest = inner[axis + 1:]

        def at(sl: slice, lead: tuple[slice, ...] = lead, rest: tuple[slice, ...] = rest
               ) -> tuple[slice, ...]:
            return (*lead, sl, *rest)

        if mode == "constant":
            steps += [(at(slice(0, b)), None), (at(slice(b + n, b + n + e)), None)]
        elif mode == "edge":
            steps += [(at(slice(0, b)), at(slice(b, b + 1))),
                      (at(slice(b + n, b + n + e)), at(slice(b + n - 1, b + n)))]
        elif mode == "reflect":
            if b:  # out[b - k] = out[b + k], k = 1..b
                steps.append((at(slice(0, b)), at(slice(2 * b, b, -1))))
            if e:  # out[b + n - 1 + k] = out[b + n - 1 - k], k = 1..e
                steps.append((at(slice(b + n, b + n + e)), at(
                    slice(b + n - 2, b + n - 2 - e if b + n - 2 - e >= 0 else None, -1))))
        else:  # wrap
            steps += [(at(slice(0, b)), at(slice(n, n + b))),
                      (at(slice(b + n, b + n + e)), at(slice(b, b + e)))]
    return inner, steps


def run_pad_steps(out: Array, x: Array, steps: PadSteps, value: Any) -> None:
    inner, borders = steps
    out[inner] = x
    for dst, src in borders:
        out[dst] = value if src is None else out[src]


def pad_into(out: Array, x: Array, pads: Sequence[int], mode: str, value: Any) -> bool:
    """``pad`` written straight into ``out`` (no padded copy made, then copied): ``x`` in
    the middle, then each axis's borders from what is there already, axis after axis as
    ``np.pad`` does. For pads >= 0 that a single reflection or wrap covers; False (nothing
    written) otherwise."""
    steps = pad_steps(x.shape, out.shape, pads, mode)
    if steps is None:
        return False
    run_pad_steps(out, x, steps, value)
    return True


class Pad_1(CpuPlugin, schema.Pad_1):  # noqa: N801
    def compute(self, x: Array, *, out: Array, paddings: Sequence[int], mode: str,
                value: float) -> None:
        if not pad_into(out, x, paddings, mode, value):
            np.copyto(out, pad(x, paddings, mode, value))


class Pad_2(CpuPlugin, schema.Pad_2):  # noqa: N801
    def compute(self, x: Array, *, out: Array, pads: Sequence[int], mode: str,
                value: float) -> None:
        if not pad_into(out, x, pads, mode, value):
            np.copyto(out, pad(x, pads, mode, value))


class _PadInputs(CpuPlugin, schema.PadBase):
    def compute(self, x: Array, pads: Array, constant_value: Array | None = None,
                axes: Array | None = None, *, out: Array | None = None, mode: str) -> Any:
        value = 0 if constant_value is None or constant_value.size == 0 else \
            np.asarray(constant_value).reshape(-1)[0]
        full = full_pads(as_ints(pads), x.ndim, None if axes is None else as_ints(axes))
        if out is not None and pad_into(out, x, full, mode, value):
            return None
        return emit(pad(x, full, mode, value), out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The index copies worked out once where pads, value and axes are constants
        (read-only arrays): silero-vad's reflect Pad ~24 -> ~5 us. None otherwise."""
        x, pads, value, axes = [*inputs, None, None][:4]
        out = outputs[0]
        if not all(isinstance(a, np.ndarray) for a in (x, pads, out)) or any(
                a is not None and (not isinstance(a, np.ndarray) or a.flags.writeable)
                for a in (pads, value, axes)) or (value is not None and value.size == 0):
            return None
        full = full_pads(as_ints(pads), x.ndim, None if axes is None else as_ints(axes))
        steps = pad_steps(x.shape, out.shape, full, self.attrs["mode"])
        if steps is None:
            return None
        fill = 0 if value is None else value.reshape(-1)[0]
        return partial(run_pad_steps, out, x, steps, fill)


Pad_11, Pad = (type(op.__name__, (_PadInputs, op), {"__module__": __name__})
               for op in (schema.Pad_11, schema.Pad))


class CenterCropPad(CpuPlugin, schema.CenterCropPad):
    def compute(self, x: Array, shape: Array, *, out: Array | None = None,
                axes: Sequence[int] | None) -> Any:
        target = list(x.shape)
        for a, s in zip(self.axes(x.ndim), as_ints(shape), strict=True):
            target[a] = s
        res = np.zeros(target, x.dtype)
        src, dst = [], []
        for d, t in zip(x.shape, target, strict=True):
            if t <= d:
                o = (d - t) // 2
                src.append(slice(o, o + t))
                dst.append(slice(0, t))
            else:
                o = (t - d) // 2
                src.append(slice(0, d))
                dst.append(slice(o, o + d))
        res[tuple(dst)] = x[tuple(src)]
        return emit(res, out)


class Col2Im(CpuPlugin, schema.Col2Im):
    def compute(self, x: Array, image_shape: Array, block_shape: Array, *,
                out: Array | None = None, dilations: Sequence[int] | None,
                pads: Sequence[int] | None, strides: Sequence[int] | None) -> Any:
        image, block = as_ints(image_shape), as_ints(block_shape)
        nd = len(image)
        dil = list(dilations or [1] * nd)
        st = list(strides or [1] * nd)
        pd = list(pads or [0] * (2 * nd))
        n, ck, _ = x.shape
        c = ck // math.prod(block)
        nblocks = [(image[i] + pd[i] + pd[i + nd] - dil[i] * (block[i] - 1) - 1) // st[i] + 1
                   for i in range(nd)]
        cols = x.reshape(n, c, *block, *nblocks)
        acc = np.zeros([n, c] + [image[i] + pd[i] + pd[i + nd] for i in range(nd)], x.dtype)
        for k in itertools.product(*(range(b) for b in block)):
            where = tuple(slice(k[i] * dil[i], k[i] * dil[i] + st[i] * (nblocks[i] - 1) + 1,
                                st[i]) for i in range(nd))
            acc[(slice(None), slice(None)) + where] += cols[(slice(None), slice(None)) + k]
        crop = tuple(slice(pd[i], pd[i] + image[i]) for i in range(nd))
        return emit(acc[(slice(None), slice(None)) + crop], out)
