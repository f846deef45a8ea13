"""NonMaxSuppression (schema: :mod:`mini_infer_core.ops.detection`), vectorised over classes.

Per batch, the candidates (scores above ``score_threshold`` when it is given) are sorted by
class, then score (descending), then box index, and laid out as one row per class. Greedy
suppression then runs on every class at once: each step takes each row's best box still
alive, and kills the boxes of its row whose IoU with it is above ``iou_threshold``. The Python
loop runs as many times as the most boxes one class keeps (at most
``max_output_boxes_per_class``), and each step only looks at the rows still running and the
columns from the first live box on.

IoU is computed as ONNX's reference and onnxruntime compute it, in float32: a pair with no
overlap, an empty box or an empty union never suppresses, and an IoU equal to the threshold
keeps the box.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import detection as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["NonMaxSuppression"]

Array = NDArray[Any]


def _scalar(x: Array | None, default: Any) -> Any:
    if x is None or np.asarray(x).size == 0:
        return default
    return np.asarray(x).reshape(-1)[0]


def corners(boxes: Array, center: bool) -> tuple[Array, ...]:
    """(y_min, x_min, y_max, x_max, area) of ``[..., 4]`` boxes, in float32, computed as
    ONNX's reference computes them. A box of no area can neither suppress nor be
    suppressed: its coordinates become NaN, so that every IoU with it compares false."""
    b = np.asarray(boxes, np.float32)
    if center:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        hw, hh = w / np.float32(2), h / np.float32(2)
        x0, x1, y0, y1 = xc - hw, xc + hw, yc - hh, yc + hh
    else:
        y0 = np.minimum(b[..., 0], b[..., 2])
        y1 = np.maximum(b[..., 0], b[..., 2])
        x0 = np.minimum(b[..., 1], b[..., 3])
        x1 = np.maximum(b[..., 1], b[..., 3])
    area = (x1 - x0) * (y1 - y0)
    out: tuple[Array, ...] = (y0, x0, y1, x1, area)
    empty = ~(area > 0)
    if empty.any():
        out = tuple(np.where(empty, np.float32(np.nan), c) for c in out)
    return out


def _over(a: tuple[Array, ...], b: tuple[Array, ...], thr: np.float32) -> Array:
    """Whether boxes ``a`` and ``b`` (corners and areas, broadcast together) overlap with an
    IoU above ``thr``: intersection and union as the reference computes them (each positive
    where both boxes have an area), the division in float32."""
    y0, x0, y1, x1, area = a
    v0, u0, v1, u1, barea = b
    iw = np.minimum(x1, u1)
    iw -= np.maximum(x0, u0)
    np.maximum(iw, 0, out=iw)
    ih = np.minimum(y1, v1)
    ih -= np.maximum(y0, v0)
    np.maximum(ih, 0, out=ih)
    iw *= ih  # the intersection
    np.add(area, barea, out=ih)
    ih -= iw  # the union
    if thr < 0:  # boxes that do not overlap never suppress, whatever the threshold
        hit: Array = iw > 0
        iw /= ih
        return hit & (iw > thr)
    iw /= ih
    return iw > thr


#: pairs (rows x block x block) one block's IoU matrix holds at most
BLOCK_PAIRS = 1 << 21


def _greedy(hits: Array, valid: Array) -> Array:
    """Greedy selection within a block: ``hits[r, i, j]`` says that candidate i suppresses
    candidate j (i < j, i valid); candidate j is kept when it is valid and no kept candidate
    before it suppresses it. Each round settles every undecided candidate that a kept one
    suppresses (dropped) or that nothing kept or undecided suppresses (kept), at least the
    first undecided one of each row: as many rounds as the longest chain of
    suppressions."""
    if not hits.any():
        return valid
    weights = hits.astype(np.float32)
    kept = np.zeros_like(valid)
    open_ = valid.copy()
    while open_.any():
        kept_hit = np.matmul(kept.astype(np.float32)[:, None, :], weights)[:, 0, :] > 0
        open_ &= ~kept_hit
        maybe = kept | open_
        any_hit = np.matmul(maybe.astype(np.float32)[:, None, :], weights)[:, 0, :] > 0
        settled = open_ & ~any_hit
        kept |= settled
        open_ &= ~settled
    return kept


@functools.cache
def _upper(n: int) -> Array:
    return np.triu(np.ones((n, n), bool), 1)


def _rows(slab: Array, real: Array, box: tuple[Array, ...], quota: int, iou: np.float32
          ) -> list[Array]:
    """Greedy NMS of classes laid out one row each: ``slab`` the box indices, best first,
    padded on the right where ``real`` is false. Blocks of columns are taken for every row
    at once: the candidates the boxes already kept suppress go, the rest are resolved among
    themselves (:func:`_greedy`), until each row keeps ``quota`` boxes or runs out."""
    n_rows, width = slab.shape
    coords = tuple(c[slab] for c in box)
    kept_at = np.zeros((n_rows, quota), np.int64)  # by row, never compacted
    total = np.zeros(n_rows, np.int64)
    kept_box = tuple(np.full((n_rows, quota), np.nan, np.float32) for _ in box)
    n_kept = np.zeros(n_rows, np.int64)
    rows = np.arange(n_rows)
    pos = 0
    while rows.size and pos < width:
        want = int((quota - n_kept).max())
        size = max(16, min(int(np.sqrt(BLOCK_PAIRS / rows.size)), 1 << want.bit_length()))
        stop = min(width, pos + size)
        cand = tuple(c[:, pos:stop] for c in coords)
        valid = real[:, pos:stop].copy()
        most = int(n_kept.max())
        if most:
            old = tuple(k[:, None, :most] for k in kept_box)
            valid &= ~_over(tuple(c[:, :, None] for c in cand), old, iou).any(axis=2)
        n = stop - pos
        hits = _over(tuple(c[:, :, None] for c in cand), tuple(c[:, None, :] for c in cand),
                     iou) if n > 1 else np.zeros((rows.size, 1, 1), bool)
        hits &= _upper(n)
        hits &= valid[:, :, None]
        keep = _greedy(hits, valid)
        order_in_row = np.cumsum(keep, axis=1)
        keep &= order_in_row <= (quota - n_kept)[:, None]
        r, j = np.divmod(np.flatnonzero(keep), keep.shape[1])
        slot = n_kept[r] + order_in_row[r, j] - 1
        kept_at[rows[r], slot] = slab[r, pos + j]
        for k, c in zip(kept_box, cand, strict=True):
            k[r, slot] = c[r, j]
        n_kept += keep.sum(axis=1)
        total[rows] = n_kept
        pos = stop
        going = n_kept < quota
        if not going.all():
            rows, n_kept, slab, real = rows[going], n_kept[going], slab[going], real[going]
            coords = tuple(c[going] for c in coords)
            kept_box = tuple(k[going] for k in kept_box)
    return [kept_at[r, :total[r]] for r in range(n_rows)]


def _ordered(flat: Array, sc: Array, n_boxes: int) -> tuple[Array, Array]:
    """Candidates given as flat ``class * n_boxes + box`` indices in increasing order, with
    their scores: (class, box) sorted by class, best score, lowest box index. Two stable
    sorts (the class one a radix sort on 16 bits) beat ``lexsort``."""
    order = np.argsort(-sc, kind="stable")
    cls = flat[order] // n_boxes
    key = cls.astype(np.int16) if cls.size and cls.max() < 1 << 15 else cls
    order = order[np.argsort(key, kind="stable")]
    return flat[order] // n_boxes, flat[order] % n_boxes


#: pairs of padding a group of classes may add to its IoU matrices, beyond the real ones
SLACK_PAIRS = 1 << 14


def _groups(counts: Array) -> list[Array]:
    """Classes (those with candidates) grouped to share :func:`_rows`: by decreasing number
    of candidates, a group growing while its padded pairs (rows x widest^2) stay within
    twice its real ones plus :data:`SLACK_PAIRS`, so that few groups waste little work."""
    order = np.flatnonzero(counts)[np.argsort(-counts[counts > 0], kind="stable")]
    groups: list[Array] = []
    begin, real, widest = 0, 0, 0
    for k, c in enumerate(counts[order].tolist()):
        if k > begin and (k - begin + 1) * widest * widest > 2 * (real + c * c) + SLACK_PAIRS:
            groups.append(order[begin:k])
            begin, real = k, 0
        if k == begin:
            widest = c
        real += c * c
    groups.append(order[begin:])
    return groups


def _solve(cls: Array, idx: Array, n_classes: int, box: tuple[Array, ...], limit: int,
           iou: np.float32) -> dict[int, Array]:
    """Greedy NMS of sorted candidates (:func:`_ordered`): the boxes each class keeps, its
    classes solved a group (:func:`_groups`) at a time."""
    counts = np.bincount(cls, minlength=n_classes)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(cls.size) - starts[cls]
    kept: dict[int, Array] = {}
    groups = _groups(counts)
    for classes in groups:
        width = int(counts[classes].max())
        row_of = np.full(n_classes, -1)
        row_of[classes] = np.arange(classes.size)
        rows, at, sel = row_of[cls], rank, idx
        if len(groups) > 1:
            mine = rows >= 0
            rows, at, sel = rows[mine], rank[mine], idx[mine]
        slab = np.zeros((classes.size, width), np.int64)
        real = np.zeros((classes.size, width), bool)
        slab[rows, at] = sel
        real[rows, at] = True
        for c, k in zip(classes.tolist(), _rows(slab, real, box, min(limit, width), iou),
                        strict=True):
            kept[c] = k
    return kept


#: candidates per class taken first, in multiples of the boxes a class may keep
FIRST_TAKE = 2


def nms_batch(box: tuple[Array, ...], scores: Array, limit: int, iou: np.float32,
              score_threshold: np.float32 | None) -> list[tuple[int, int]]:
    """Greedy NMS of one batch: ``box`` the corners and areas ``[N]``, ``scores``
    ``[C, N]``; the (class, box) pairs kept, class by class, best first.

    Sorting every candidate costs more than suppressing, when there are many: a class with
    more than a few times ``limit`` candidates first takes only its best (every box scoring
    at least its k-th best score, found by ``argpartition``), and is solved again with all
    of them only if those ran out before it kept ``limit`` boxes."""
    n_classes, n_boxes = scores.shape
    flat_scores = scores.reshape(-1)
    passing = None if score_threshold is None else scores > score_threshold
    counts = (np.full(n_classes, n_boxes) if passing is None else
              np.count_nonzero(passing, axis=1))
    take = max(64, FIRST_TAKE * min(limit, n_boxes))
    big = counts > take
    taken = np.zeros(n_classes, np.int64)
    mask: Array | None
    if big.any():
        rows = np.flatnonzero(big)
        sub = scores[rows] if passing is None else np.where(
            passing[rows], scores[rows], np.float32(-np.inf))
        kth = -np.partition(-sub, take - 1, axis=1)[:, take - 1]
        top = sub >= kth[:, None]
        if passing is not None:
            top &= passing[rows]
        mask = np.zeros_like(scores, dtype=bool) if passing is None else passing.copy()
        mask[rows] = top
        taken[rows] = np.count_nonzero(top, axis=1)
    else:
        mask = passing
    flat = np.arange(scores.size) if mask is None else np.flatnonzero(mask)
    if flat.size == 0:
        return []
    cls, idx = _ordered(flat, flat_scores[flat], n_boxes)
    kept = _solve(cls, idx, n_classes, box, limit, iou)
    short = [c for c in np.flatnonzero(big).tolist()
             if kept[c].size < limit and taken[c] < counts[c]]
    if short:  # ran out of the best candidates: solve those classes again with all
        again = np.zeros_like(scores, dtype=bool)
        again[short] = True if passing is None else passing[short]
        flat = np.flatnonzero(again)
        cls, idx = _ordered(flat, flat_scores[flat], n_boxes)
        kept.update(_solve(cls, idx, n_classes, box, limit, iou))
    return [(c, int(i)) for c in sorted(kept) for i in kept[c]]


class NonMaxSuppression(CpuPlugin, schema.NonMaxSuppression):
    def compute(self, boxes: Array, scores: Array, max_output: Array | None = None,
                iou_threshold: Array | None = None, score_threshold: Array | None = None,
                *, center_point_box: int) -> Array:
        if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or \
                scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
            raise PluginInterfaceError(
                f"NonMaxSuppression {self.name!r}: boxes {boxes.shape} and scores "
                f"{scores.shape} are not [batches, boxes, 4] and [batches, classes, boxes]")
        limit = max(int(_scalar(max_output, 0)), 0)
        iou = np.float32(_scalar(iou_threshold, 0.0))
        thr = _scalar(score_threshold, None)
        thr32 = None if thr is None else np.float32(thr)
        if limit == 0 or boxes.shape[1] == 0:
            return np.zeros((0, 3), np.int64)
        box = corners(boxes, bool(center_point_box))
        scores32 = np.asarray(scores, np.float32)
        found: list[tuple[int, int, int]] = []
        with np.errstate(invalid="ignore", divide="ignore"):
            for b in range(boxes.shape[0]):
                found += [(b, c, i) for c, i in nms_batch(
                    tuple(x[b] for x in box), scores32[b], limit, iou, thr32)]
        return np.array(found, np.int64).reshape(-1, 3)
