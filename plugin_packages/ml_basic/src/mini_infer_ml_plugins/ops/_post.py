"""The score transforms the ``ai.onnx.ml`` models share (``post_transform``), row by row over
all rows at once, in float32 as onnxruntime computes them (its probit is the erf-inverse
approximation with a = 0.147, which this reproduces rather than the exact function), and
onnxruntime's rule for a single score column: only PROBIT applies to it, or, where the
operator asks for a second class, the column is expanded to two. Also the float32 views of
inputs and attributes that the linear and SVM models share.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

__all__ = ["TRANSFORMS", "expand_binary", "float32s", "float_rows", "logistic", "probit",
           "softmax", "softmax_zero", "transform", "transform_into", "transform_scores"]

Array = NDArray[Any]


def float_rows(x: Array) -> Array:
    """``x`` as float32 rows: [N, F] (a 1-D input is one row; N may be 0)."""
    if x.ndim == 1:
        return np.asarray(x, np.float32).reshape(1, -1)
    return np.asarray(x, np.float32).reshape(x.shape[0], math.prod(x.shape[1:]))


def float32s(values: Iterable[float] | None) -> Array:
    """An attribute's list of floats as a float32 array (empty where it is not set)."""
    return np.asarray(values or (), np.float32)


#: ``post_transform`` names (opsets 1-4) by the integer codes of TreeEnsemble (opset 5)
TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def logistic(x: Array) -> Array:
    """1 / (1 + exp(-x)), computed on |x| so that it never overflows."""
    x = np.asarray(x, np.float32)
    with np.errstate(over="ignore"):
        v = np.float32(1) / (np.float32(1) + np.exp(-np.abs(x)))
    return np.where(x < 0, np.float32(1) - v, v).astype(np.float32)


def probit(x: Array) -> Array:
    """sqrt(2) * erfinv(2x - 1), with onnxruntime's approximation of erfinv."""
    y = np.float32(2) * np.asarray(x, np.float32) - np.float32(1)
    sgn = np.where(y < 0, np.float32(-1), np.float32(1))
    t = (np.float32(1) - y) * (np.float32(1) + y)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log(t)
        v = np.float32(2 / (np.pi * 0.147)) + np.float32(0.5) * lg
        v2 = np.float32(1 / 0.147) * lg
        v3 = -v + np.sqrt(v * v - v2)
        out = sgn * np.sqrt(v3)
    result: Array = (np.float32(np.sqrt(2)) * out).astype(np.float32)
    return result


def softmax(x: Array) -> Array:
    """Softmax of each row."""
    x = np.asarray(x, np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    result: Array = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    return result


def transform_into(name: str, scores: Array, out: Array) -> None:
    """``transform(name, scores)`` written into ``out``: NONE and SOFTMAX of float32 scores
    into a float32 ``out`` in place (the same values, fewer arrays: a few rows' scores cost
    their NumPy calls, not their arithmetic), the others through ``transform``."""
    if name == "NONE":
        np.copyto(out, scores, casting="unsafe")
    elif name == "SOFTMAX" and scores.dtype == out.dtype == np.float32 and \
            out.shape == scores.shape:
        np.subtract(scores, scores.max(axis=1, keepdims=True), out)
        np.exp(out, out)
        out /= out.sum(axis=1, keepdims=True)
    else:
        np.copyto(out, transform(name, scores), casting="unsafe")


def softmax_zero(x: Array) -> Array:
    """Softmax of each row that leaves (almost) zero scores out of the sum, and at zero."""
    x = np.asarray(x, np.float32)
    vmax = x.max(axis=1, keepdims=True)
    nonzero = np.abs(x) > np.float32(1e-7)
    e = np.where(nonzero, np.exp(x - vmax), x * np.exp(-vmax))
    total = np.where(nonzero, e, np.float32(0)).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        result: Array = (e / total).astype(np.float32)
    return result


def transform(name: str, scores: Array) -> Array:
    """``scores`` [N, K] (K >= 2) under the named transform (NONE: unchanged, in their own
    type; the others in float32)."""
    if name == "NONE":
        return scores
    if name == "LOGISTIC":
        return logistic(scores)
    if name == "SOFTMAX":
        return softmax(scores)
    if name == "SOFTMAX_ZERO":
        return softmax_zero(scores)
    if name == "PROBIT":
        return probit(scores)
    raise ValueError(f"unknown post_transform {name!r}")


def expand_binary(score: Array, name: str, mode: int) -> Array:
    """One score per row [N] made two columns [N, 2] as onnxruntime does for binary models:
    mode 0 or 1 (a probability p, the logistic of the score under LOGISTIC): ``1 - p, p``;
    mode 2 or 3 (a margin): ``-s, s``, or their logistic under LOGISTIC."""
    s = np.asarray(score, np.float32)
    if mode in (0, 1):
        p = logistic(s) if name == "LOGISTIC" else s
        return np.stack([np.float32(1) - p, p], axis=1)
    if name == "LOGISTIC":
        return np.stack([logistic(-s), logistic(s)], axis=1)
    return np.stack([-s, s], axis=1)


def transform_scores(name: str, scores: Array, second_class: int = -1) -> Array:
    """onnxruntime's treatment of a batch of scores [N, K]: every transform when K > 1; for one
    column, PROBIT alone applies, else the column becomes two (``expand_binary``) when
    ``second_class`` >= 0, else it stays as it is."""
    if scores.shape[1] > 1:
        return transform(name, scores)
    if name == "PROBIT":
        return probit(scores)
    if second_class >= 0:
        return expand_binary(scores[:, 0], name, second_class)
    return scores
