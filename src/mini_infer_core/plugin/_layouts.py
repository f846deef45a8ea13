"""Tensor formats in memory: the physical shape of each :class:`TensorFormat` and converters
between LINEAR and the others (padding a blocked format's last channel block with zeros).

Only array methods, slicing and ``[...] =`` are used, so the converters work on NumPy and
CuPy arrays alike. A tensor in a format has rank 3 or more: ``(N, C, *spatial)`` logically.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._types import TensorFormat

__all__ = ["physical_shape", "to_format", "from_format", "reformat", "may_take"]


def may_take(shape: Sequence[int | None], fmt: TensorFormat) -> bool:
    """Whether a tensor of this logical shape (None: a dimension unknown at build time) can
    be held in ``fmt``: LINEAR always; the others from rank 3 on, a blocked format only with
    a known channel count."""
    if fmt is TensorFormat.LINEAR:
        return True
    if len(shape) < 3:
        return False
    return not fmt.block or shape[1] is not None


def physical_shape(shape: Sequence[int], fmt: TensorFormat) -> tuple[int, ...]:
    """The array shape that holds a tensor of logical ``shape`` in ``fmt``."""
    shape = tuple(int(d) for d in shape)
    if fmt is TensorFormat.LINEAR:
        return shape
    if len(shape) < 3:
        raise ValueError(f"format {fmt.name} needs rank 3 or more, got shape {shape}")
    if fmt is TensorFormat.HWC:
        return (shape[0], *shape[2:], shape[1])
    k = fmt.block
    return (shape[0], -(-shape[1] // k), *shape[2:], k)


def _to_last(rank: int) -> tuple[int, ...]:
    """Axes moving axis 1 (channels) to the end."""
    return (0, *range(2, rank), 1)


def _from_last(rank: int) -> tuple[int, ...]:
    """Axes moving the last axis (channels) to position 1."""
    return (0, rank - 1, *range(1, rank - 1))


def to_format(x: Any, fmt: TensorFormat, out: Any = None) -> Any:
    """``x`` (LINEAR, logical shape) in ``fmt``: written into ``out`` (of the physical
    shape) when given, else into a new array."""
    if out is None:
        out = _empty_like(x, physical_shape(x.shape, fmt))
    if fmt is TensorFormat.LINEAR:
        out[...] = x
        return out
    rank = x.ndim
    if fmt is TensorFormat.HWC:
        out[...] = x.transpose(_to_last(rank))
        return out
    k, c = fmt.block, x.shape[1]
    full, rest = divmod(c, k)
    if full:
        blocks = x[:, : full * k].reshape((x.shape[0], full, k, *x.shape[2:]))
        out[:, :full] = blocks.transpose((0, 1, *range(3, rank + 1), 2))
    if rest:
        out[:, full, ..., :rest] = x[:, full * k:].transpose(_to_last(rank))
        out[:, full, ..., rest:] = 0
    return out


def from_format(x: Any, fmt: TensorFormat, shape: Sequence[int], out: Any = None) -> Any:
    """The LINEAR tensor of logical ``shape`` that ``x`` holds in ``fmt`` (written into
    ``out`` when given, else into a new array). The padding channels are dropped."""
    shape = tuple(int(d) for d in shape)
    if out is None:
        out = _empty_like(x, shape)
    if fmt is TensorFormat.LINEAR:
        out[...] = x.reshape(shape)
        return out
    rank = len(shape)
    if fmt is TensorFormat.HWC:
        _hwc_into(out)[...] = x
        return out
    k, c = fmt.block, shape[1]
    for lo, hi in _row_chunks(x, rank):
        _unblock(x[:, :, lo:hi], out[:, :, lo:hi], k, c, rank)
    return out


#: bytes of a blocked tensor read per pass of :func:`from_format` (all its blocks, some rows)
CHUNK_BYTES = 512 * 1024


def _row_chunks(x: Any, rank: int) -> list[tuple[int, int]]:
    """Ranges of the first spatial axis that :func:`from_format` takes in turn: a NumPy
    tensor of several blocks' rows larger than :data:`CHUNK_BYTES` in parts of about that
    size, so that the k reads of each input line hit the cache (a 21-class 512x512
    segmentation map: 13 ms in one pass, 5 in parts of 8 rows); else all at once."""
    rows = int(x.shape[2]) if rank >= 3 else 1
    if rank < 4 or type(x).__module__.split(".")[0] != "numpy":
        return [(0, rows)]
    per_row = x.nbytes // max(rows, 1)
    step = max(1, CHUNK_BYTES // max(per_row, 1))
    return [(lo, min(rows, lo + step)) for lo in range(0, rows, step)]


def _unblock(x: Any, out: Any, k: int, c: int, rank: int) -> None:
    """``out`` (N, C, *S) = the blocked ``x`` (N, ceil(C/k), *S, k) (views of some rows)."""
    full, rest = divmod(c, k)
    if full:
        # (N, full, *S, k) -> (N, full, k, *S), written in one pass through a view of ``out``
        blocks = x[:, :full].transpose((0, 1, rank, *range(2, rank)))
        into = _split_channels(out[:, : full * k], full, k)
        if into is not None:
            into[...] = blocks
        else:
            out[:, : full * k] = blocks.reshape((out.shape[0], full * k, *out.shape[2:]))
    if rest:
        out[:, full * k:] = x[:, full, ..., :rest].transpose(_from_last(rank))


def _split_channels(view: Any, full: int, k: int) -> Any:
    """``view`` (N, full * k, *S) as (N, full, k, *S) without a copy, or None where that
    cannot be (setting ``shape`` on a view refuses rather than copying)."""
    split = view.view()
    try:
        split.shape = (view.shape[0], full, k, *view.shape[2:])
    except (AttributeError, ValueError):
        return None
    return split


def _hwc_into(out: Any) -> Any:
    """``out`` (N, C, *S) seen as (N, *S, C): the view a channels-last tensor is written
    through in one pass."""
    return out.transpose(_to_last(out.ndim))


def reformat(x: Any, src: TensorFormat, dst: TensorFormat, shape: Sequence[int],
             out: Any = None) -> Any:
    """``x`` (a tensor of logical ``shape`` held in ``src``) held in ``dst``."""
    if src is dst:
        if out is None:
            return x.copy()
        out[...] = x
        return out
    if src is TensorFormat.LINEAR:
        return to_format(x, dst, out)
    if dst is TensorFormat.LINEAR:
        return from_format(x, src, shape, out)
    return to_format(from_format(x, src, shape), dst, out)


def _empty_like(x: Any, shape: tuple[int, ...]) -> Any:
    """A new array of ``x``'s kind (NumPy, CuPy) and type."""
    module = type(x).__module__.split(".")[0]
    if module == "numpy":
        import numpy as np

        return np.empty(shape, dtype=x.dtype)
    import importlib

    return importlib.import_module(module).empty(shape, dtype=x.dtype)
