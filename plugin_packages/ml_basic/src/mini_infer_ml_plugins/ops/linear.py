"""Linear models: LinearClassifier and LinearRegressor, in float32 (the input is converted, as
onnxruntime does), with onnxruntime's labels and score columns: a single coefficient row
serving two class labels gives the label by the sign of its score and two score columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import ml
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import MlPlugin
from ._post import float32s, float_rows, transform_scores

__all__ = ["LinearClassifier", "LinearRegressor"]

Array = NDArray[Any]

try:  # the compiled few-row path (optional: NumPy and its BLAS otherwise)
    from . import _cml  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a C compiler
    _cml = None

#: the post_transforms the compiled path applies (the others take the NumPy path)
_COMPILED_POST = {"NONE": 0, "LOGISTIC": 1, "SOFTMAX": 2}
#: multiply-adds (rows x targets x features) up to which the compiled loop beats the BLAS call
_COMPILED_UP_TO = 1 << 18


def _compiled(rows: Array, w: Array, intercepts: Array, post: str, expand: bool,
              out: Array, chosen: Array | None) -> bool:
    """Scores into ``out`` (and classes into ``chosen``) by ``_cml.linear`` where it applies;
    False where the NumPy path must run instead."""
    code = _COMPILED_POST.get(post)
    k = w.shape[0]
    if _cml is None or code is None or rows.size * k > _COMPILED_UP_TO:
        return False
    if out.dtype != np.float32 or not out.flags.c_contiguous or intercepts.size not in (0, k) \
            or out.size != rows.shape[0] * (2 if expand and k == 1 else k):
        return False
    _cml.linear(np.ascontiguousarray(rows), rows.shape[0], w, w.shape[0], intercepts, code,
                int(expand), out, _NO_CLASSES if chosen is None else chosen)
    return True


#: the class choice a regressor's call leaves out
_NO_CLASSES = np.empty(0, np.int64)


def _linear_call(x: Any, w: Array, intercepts: Array, post: str, expand: bool, out: Any,
                 chosen: Array | None) -> Callable[[], None] | None:
    """``_compiled``'s call made once for arrays that stay (a plan's bound step): float32
    rows [N, F], C-contiguous, as given; None where it does not apply."""
    code = _COMPILED_POST.get(post)
    k = w.shape[0]
    if _cml is None or code is None or not isinstance(x, np.ndarray) or x.ndim != 2 \
            or x.dtype != np.float32 or not x.flags.c_contiguous or x.shape[1] != w.shape[1] \
            or x.size * k > _COMPILED_UP_TO or not isinstance(out, np.ndarray) \
            or out.dtype != np.float32 or not out.flags.c_contiguous \
            or intercepts.size not in (0, k) \
            or out.size != x.shape[0] * (2 if expand and k == 1 else k):
        return None
    return partial(_cml.linear, x, x.shape[0], w, k, intercepts, code, int(expand), out,
                   _NO_CLASSES if chosen is None else chosen)


def _classified(linear: Callable[[], None], labels: Callable[[], Any]) -> None:
    """A bound LinearClassifier step: scores and classes, then their labels."""
    linear()
    labels()


def _strings_into(table: Array, chosen: Array, labels_out: Array) -> None:
    labels_out[...] = table[chosen]


class _Linear(MlPlugin):
    def setup(self) -> None:
        super().setup()
        self.intercepts = float32s(self.attrs["intercepts"])
        self.coefficients = float32s(self.attrs["coefficients"])

    def scores(self, x: Array, targets: int) -> Array:
        """X @ coefficients.T + intercepts, [N, targets] float32."""
        rows = float_rows(x)
        w = self.coefficients.reshape(targets, rows.shape[1])
        s = rows @ w.T
        if self.intercepts.size:
            s += self.intercepts
        return s


class LinearRegressor(_Linear, ml.LinearRegressor):
    def compute(self, x: Array, *, out: Array, targets: int, post_transform: str,
                **_: Any) -> None:
        rows = float_rows(x)
        if self.coefficients.size == targets * rows.shape[1] and _compiled(
                rows, self.coefficients.reshape(targets, -1), self.intercepts, post_transform,
                False, out, None):
            return
        np.copyto(out, transform_scores(post_transform, self.scores(x, targets)))

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The compiled few-row call made once for the step's arrays (``compute`` checked,
        converted and reshaped on every run), else ``compute`` bound."""
        x, targets = inputs[0], int(self.attrs["targets"])
        call = None
        if workspace is None and isinstance(x, np.ndarray) and x.ndim == 2 and \
                self.coefficients.size == targets * x.shape[1]:
            call = _linear_call(x, self.coefficients.reshape(targets, -1), self.intercepts,
                                self.attrs["post_transform"], False, outputs[0], None)
        return call if call is not None else super().bind_run(inputs, outputs, workspace)


class LinearClassifier(_Linear, ml.LinearClassifier):
    def setup(self) -> None:
        super().setup()
        a = self.attrs
        self.labels = list(a["classlabels_strings"] or a["classlabels_ints"] or ())
        self.tables: dict[tuple[Any, int], Array] = {}

    def table(self, dtype: Any, classes: int) -> Array:
        """The label of each class index (kept: the same every run). A single coefficient
        row serves two labels (or "0"/"1", 0/1 without them): its index is the score > 0."""
        key = (dtype, classes)
        table = self.tables.get(key)
        if table is None:
            labels = self.labels
            if classes == 1:
                labels = labels if len(labels) == 2 else \
                    ["0", "1"] if self.attrs["classlabels_strings"] else [0, 1]
            table = self.tables[key] = np.array(labels, dtype=dtype)
        return table

    def compute(self, x: Array, *, out: tuple[Array, Array], post_transform: str,
                **_: Any) -> None:
        labels_out, scores_out = out
        rows = float_rows(x)
        classes = self.intercepts.size or self.coefficients.size // max(rows.shape[1], 1)
        table = self.table(labels_out.dtype, classes)
        expand = classes == 1 and len(self.labels) == 2
        if self.coefficients.size == classes * rows.shape[1] and \
                (classes > 1 or post_transform != "PROBIT"):
            chosen = np.empty(rows.shape[0], np.int64)
            if _compiled(rows, self.coefficients.reshape(classes, -1), self.intercepts,
                         post_transform, expand, scores_out, chosen):
                if labels_out.shape == chosen.shape:
                    np.take(table, chosen, out=labels_out)
                else:
                    labels_out[...] = table[chosen]
                return
        s = self.scores(x, classes)
        chosen = np.where(s[:, 0] > 0, 1, 0) if classes == 1 else np.argmax(s, axis=1)
        labels_out[...] = table[chosen]
        np.copyto(scores_out, transform_scores(post_transform, s, 1 if expand else -1))

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """Scores, classes (``_cml.linear``) and labels (``_cml.take``; strings by NumPy)
        made once for the step's arrays, else ``compute`` bound."""
        bound = self._bound(inputs[0], outputs) if workspace is None and \
            len(outputs) == 2 else None
        return bound if bound is not None else super().bind_run(inputs, outputs, workspace)

    def _bound(self, x: Any, outputs: Sequence[Any]) -> Callable[[], None] | None:
        labels_out, scores_out = outputs
        if not isinstance(x, np.ndarray) or x.ndim != 2 or not x.shape[1] \
                or not isinstance(labels_out, np.ndarray) or not labels_out.flags.c_contiguous:
            return None
        classes = self.intercepts.size or self.coefficients.size // x.shape[1]
        post = self.attrs["post_transform"]
        if self.coefficients.size != classes * x.shape[1] or labels_out.size != x.shape[0] \
                or (classes == 1 and post == "PROBIT"):
            return None
        chosen = np.empty(x.shape[0], np.int64)
        linear = _linear_call(x, self.coefficients.reshape(classes, -1), self.intercepts,
                              post, classes == 1 and len(self.labels) == 2, scores_out, chosen)
        if linear is None:
            return None
        table = self.table(labels_out.dtype, classes)
        if table.dtype.kind in "biuf":
            labels = partial(_cml.take, table, table.size, chosen, table.itemsize, labels_out)
        else:
            labels = partial(_strings_into, table, chosen, labels_out.reshape(-1))
        return partial(_classified, linear, labels)
