"""Linear models: LinearClassifier and LinearRegressor, in float32 (the input is converted, as
onnxruntime does), with onnxruntime's labels and score columns: a single coefficient row
serving two class labels gives the label by the sign of its score and two score columns."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.ops import ml

from ..serialization import MlPlugin
from ._post import float32s, float_rows, transform_scores

__all__ = ["LinearClassifier", "LinearRegressor"]

Array = NDArray[Any]


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
        np.copyto(out, transform_scores(post_transform, self.scores(x, targets)))


class LinearClassifier(_Linear, ml.LinearClassifier):
    def compute(self, x: Array, *, out: tuple[Array, Array], post_transform: str,
                classlabels_strings: Any, classlabels_ints: Any, **_: Any) -> None:
        labels_out, scores_out = out
        classes = self.intercepts.size or self.coefficients.size // float_rows(x).shape[1]
        s = self.scores(x, classes)
        labels = list(classlabels_strings or classlabels_ints or ())
        if classes == 1:
            if len(labels) == 2:
                negative, positive = labels
            else:
                negative, positive = ("0", "1") if classlabels_strings else (0, 1)
            chosen = np.where(s[:, 0] > 0, 1, 0)
            table = np.array([negative, positive], dtype=labels_out.dtype)
        else:
            chosen = np.argmax(s, axis=1)
            table = np.array(labels, dtype=labels_out.dtype)
        labels_out[...] = table[chosen]
        second = 1 if classes == 1 and len(labels) == 2 else -1
        np.copyto(scores_out, transform_scores(post_transform, s, second))
