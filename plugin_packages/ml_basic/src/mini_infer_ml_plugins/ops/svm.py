"""Support-vector machines: SVMClassifier and SVMRegressor, onnxruntime's semantics.

A model with support vectors (``vectors_per_class`` / ``n_supports``) is libsvm's: kernel
values against every support vector, one decision per pair of classes, the label by votes and,
with ``prob_a``/``prob_b``, probabilities by Platt scaling and pairwise coupling (libsvm's
``multiclass_probability``); without support vectors it is liblinear's, one linear score per
class. Kernels: LINEAR, POLY ((gamma x.y + coef0) ** degree), RBF (exp(-gamma |x - y|^2)),
SIGMOID (tanh(gamma x.y + coef0)); distances are computed in float64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.errors import ExecutionError
from mini_infer_core.ops import ml
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import MlPlugin
from ._post import float32s, float_rows, logistic, transform_scores

__all__ = ["SVMClassifier", "SVMRegressor"]

Array = NDArray[Any]

try:  # the compiled Platt scaling and coupling (optional: the NumPy form below otherwise)
    from . import _cml  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a C compiler
    _cml = None


#: the rows from which the RBF kernel goes through NumPy's BLAS product rather than the
#: compiled scalar loop (300 support vectors x 8 features: the loop is 2x faster at 1 row,
#: 2.5x slower at 200)
_RBF_COMPILED_ROWS = 8


class _Svm(MlPlugin):
    def setup(self) -> None:
        super().setup()
        a = self.attrs
        params = tuple(a["kernel_params"] or ())
        self.gamma, self.coef0, self.degree = (tuple(params) + (0.0, 0.0, 0.0))[:3]
        self.kernel = a["kernel_type"]
        self.coefficients = float32s(a["coefficients"])
        self.rho = float32s(a["rho"])
        self.support = float32s(a["support_vectors"])

    def _vectors64(self, vectors: Array) -> tuple[Array, Array]:
        """``vectors`` in float64 and their squared norms (kept for the support vectors,
        the same every run)."""
        kept = self.__dict__.get("_v64")
        if kept is not None and kept[0] is vectors.base and kept[1].shape == vectors.shape:
            return kept[1], kept[2]
        v64 = vectors.astype(np.float64)
        norms = (v64 * v64).sum(1)
        if vectors.base is not None:
            self.__dict__["_v64"] = (vectors.base, v64, norms)
        return v64, norms

    def kernel_dot(self, x: Array, vectors: Array, kernel: str) -> Array:
        """The kernel of every row of ``x`` with every row of ``vectors``: [N, V] (float64);
        RBF of a few float32 rows by one compiled call (``_cml.rbf``: |x - v|^2 summed
        directly; from :data:`_RBF_COMPILED_ROWS` rows the BLAS product is faster)."""
        v64, v_norms = self._vectors64(vectors)
        if kernel == "RBF" and _cml is not None and x.dtype == np.float32 and x.ndim == 2 \
                and x.shape[0] < _RBF_COMPILED_ROWS and x.flags.c_contiguous \
                and x.shape[1] == v64.shape[1]:
            out: Array = np.empty((x.shape[0], v64.shape[0]), np.float64)
            _cml.rbf(x, x.shape[0], x.shape[1], v64, v64.shape[0], float(self.gamma), out)
            return out
        x64 = x.astype(np.float64)
        if kernel == "RBF":
            d2 = x64 @ v64.T  # (|x|^2 + |v|^2) - 2 x.v, in place: the same values
            d2 *= -2
            d2 += (x64 * x64).sum(1)[:, None] + v_norms
            np.maximum(d2, 0, out=d2)
            d2 *= -self.gamma
            result: Array = np.exp(d2, out=d2)
            return result
        dot = x64 @ v64.T
        if kernel == "LINEAR":
            return dot
        dot = self.gamma * dot + self.coef0
        if kernel in ("POLY", "SIGMOID"):
            result = np.power(dot, self.degree) if kernel == "POLY" else np.tanh(dot)
            return result
        raise ExecutionError(f"{self.op_type} {self.name!r}: kernel_type {kernel!r} is not one "
                             "of LINEAR, POLY, RBF, SIGMOID")

    def rbf_call(self, x: Any, vectors: int) -> tuple[Callable[[], None], Array] | None:
        """``kernel_dot``'s compiled RBF of a few float32 rows made once for ``x`` (an array
        that stays: a plan's bound step) and the kernel values [N, V] it writes; None where
        it does not apply."""
        if self.kernel != "RBF" or _cml is None or vectors <= 0 \
                or not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 2 \
                or not 0 < x.shape[0] < _RBF_COMPILED_ROWS or not x.flags.c_contiguous \
                or x.shape[1] * vectors != self.support.size:
            return None
        v64, _ = self._vectors64(self.support.reshape(vectors, -1))
        kern: Array = np.empty((x.shape[0], vectors), np.float64)
        return partial(_cml.rbf, x, x.shape[0], x.shape[1], v64, vectors, float(self.gamma),
                       kern), kern

    def features(self, x: Array, count: int) -> Array:
        rows = float_rows(x)
        if rows.shape[1] != count:
            raise ExecutionError(f"{self.op_type} {self.name!r}: X has {rows.shape[1]} "
                                 f"features, the model {count}")
        return rows


class SVMRegressor(_Svm, ml.SVMRegressor):
    def compute(self, x: Array, *, out: Array, n_supports: int, one_class: int,
                **_: Any) -> None:
        if n_supports > 0:
            rows = self.features(x, self.support.size // n_supports)
            k = self.kernel_dot(rows, self.support.reshape(n_supports, -1), self.kernel)
            y = k @ self.coefficients.astype(np.float64) + self.rho[0]
        else:
            rows = self.features(x, self.coefficients.size)
            y = self.kernel_dot(rows, self.coefficients.reshape(1, -1), "LINEAR")[:, 0] \
                + self.rho[0]
        if one_class:
            y = np.where(y > 0, 1.0, -1.0)
        np.copyto(out, y.reshape(out.shape), casting="unsafe")

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """An RBF regressor over a few float32 rows: the compiled kernel values and their
        product made once for the step's arrays (``compute`` checked, converted and
        allocated on every run), else ``compute`` bound."""
        n = int(self.attrs["n_supports"])
        made = self.rbf_call(inputs[0], n) if workspace is None and \
            not self.attrs["one_class"] and self.coefficients.size == n else None
        out = outputs[0]
        if made is None or not isinstance(out, np.ndarray) or out.size != made[1].shape[0] \
                or not out.flags.c_contiguous:
            return super().bind_run(inputs, outputs, workspace)
        rbf, kern = made
        return partial(_regress, rbf, kern, self.coefficients.astype(np.float64),
                       float(self.rho[0]), np.empty(kern.shape[0], np.float64),
                       out.reshape(-1))


def _regress(rbf: Callable[[], None], kern: Array, coef: Array, rho: float, y: Array,
             out: Array) -> None:
    """A bound SVMRegressor step: kernel values, their product with the coefficients plus
    rho (float64), stored in the output's type."""
    rbf()
    np.dot(kern, coef, y)
    y += rho
    np.copyto(out, y, casting="unsafe")


def _classify(rbf: Callable[[], None], pairwise: Callable[[], None],
              probabilities: Callable[[], None], votes: Array, chosen: Array,
              labels: Callable[[], Any]) -> None:
    """A bound SVMClassifier step: kernel values, pairwise decisions and votes,
    probabilities (into the scores output), the class with most votes and its label."""
    rbf()
    pairwise()
    probabilities()
    votes.argmax(1, chosen)
    labels()


def _coupling(pairwise: Array, k: int) -> Array:
    """libsvm's multiclass_probability for every row at once: class probabilities [N, k] from
    the pairwise ones r[i, j] [N, k, k], in float32 like onnxruntime."""
    r = pairwise.astype(np.float32)
    n = r.shape[0]
    q = np.zeros((n, k, k), np.float32)
    for i in range(k):
        for j in range(k):
            if j != i:
                q[:, i, i] += r[:, j, i] * r[:, j, i]
                q[:, i, j] = -r[:, j, i] * r[:, i, j]
    p = np.full((n, k), 1.0 / k, np.float32)
    eps = np.float32(0.005 / k)
    active = np.ones(n, bool)
    for _ in range(100):
        qp = np.einsum("nij,nj->ni", q, p).astype(np.float32)
        pqp = (p * qp).sum(1).astype(np.float32)
        active &= np.abs(qp - pqp[:, None]).max(1) >= eps
        if not active.any():
            break
        rows = np.flatnonzero(active)
        qa, pa, qpa, pqpa = q[rows], p[rows], qp[rows], pqp[rows]
        for t in range(k):
            diff = (-qpa[:, t] + pqpa) / qa[:, t, t]
            pa[:, t] += diff
            pqpa = (pqpa + diff * (diff * qa[:, t, t] + 2 * qpa[:, t])) / (1 + diff) / (1 + diff)
            qpa = (qpa + diff[:, None] * qa[:, t, :]) / (1 + diff)[:, None]
            pa /= (1 + diff)[:, None]
        p[rows] = pa
    return p


class SVMClassifier(_Svm, ml.SVMClassifier):
    def setup(self) -> None:
        super().setup()
        a = self.attrs
        self.labels = list(a["classlabels_strings"] or a["classlabels_ints"] or ())
        self.per_class = [int(v) for v in a["vectors_per_class"] or ()]
        self.prob_a = float32s(a["prob_a"])
        self.prob_b = float32s(a["prob_b"])
        self.all_positive = bool((self.coefficients >= 0).all())
        vectors = sum(self.per_class)
        k = len(self.labels)
        #: what every run of the pairwise decision reads: the coefficients in float64, where
        #: each class's support vectors start
        self.coef64 = self.coefficients.astype(np.float64).reshape(k - 1, vectors) \
            if vectors > 0 and k > 1 and self.coefficients.size == (k - 1) * vectors else None
        self.starts = np.concatenate([[0], np.cumsum(self.per_class)]).astype(np.int64)
        self._tables: dict[Any, Array] = {}

    def table(self, dtype: Any) -> Array:
        """The labels as an array of the output's type (kept)."""
        table = self._tables.get(dtype)
        if table is None:
            table = self._tables[dtype] = np.array(self.labels, dtype=dtype)
        return table

    def compute(self, x: Array, *, out: tuple[Array, Array], post_transform: str,
                **_: Any) -> None:
        labels_out, scores_out = out
        k = len(self.labels)
        vectors = sum(self.per_class)
        have_proba = self.prob_a.size > 0
        second = -1
        if vectors > 0:
            rows = self.features(x, self.support.size // vectors)
            kern = self.kernel_dot(rows, self.support.reshape(vectors, -1), self.kernel)
            scores, votes = self._pairwise(kern, k, vectors)
            if have_proba:
                scores = self._probabilities(scores, k)
            elif k <= 2:
                second = 2 if post_transform == "NONE" else 0
            maxclass = np.argmax(votes, axis=1)
            max_weight = np.zeros(len(rows), np.float32)
        else:
            rows = self.features(x, self.coefficients.size // k)
            scores = (self.kernel_dot(rows, self.coefficients.reshape(k, -1), "LINEAR")
                      + self.rho[0]).astype(np.float32)
            maxclass = np.argmax(scores, axis=1)
            max_weight = scores[np.arange(len(rows)), maxclass]
        chosen = maxclass
        if k == 2 and not have_proba:
            positive = (max_weight >= 0.5) if self.all_positive else (max_weight > 0)
            chosen = np.where(positive, 1, maxclass)
        labels_out[...] = self.table(labels_out.dtype)[chosen]
        np.copyto(scores_out, transform_scores(post_transform, scores, second))

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """libsvm's RBF classifier with probabilities over a few float32 rows: kernel values,
        pairwise decisions, Platt scaling and coupling, votes and labels made once for the
        step's arrays (all compiled; ``compute`` checked, converted and allocated on every
        run), else ``compute`` bound."""
        bound = self._bound(inputs[0], outputs) if workspace is None and \
            len(outputs) == 2 else None
        return bound if bound is not None else super().bind_run(inputs, outputs, workspace)

    def _bound(self, x: Any, outputs: Sequence[Any]) -> Callable[[], None] | None:
        labels_out, scores_out = outputs
        k, vectors = len(self.labels), sum(self.per_class)
        pairs = k * (k - 1) // 2
        if self.attrs["post_transform"] != "NONE" or self.coef64 is None or k < 2 \
                or self.rho.size < pairs or len(self.per_class) != k \
                or min(self.prob_a.size, self.prob_b.size) < pairs \
                or not isinstance(labels_out, np.ndarray) \
                or not isinstance(scores_out, np.ndarray) \
                or scores_out.dtype != np.float32 or not scores_out.flags.c_contiguous \
                or not labels_out.flags.c_contiguous:
            return None
        made = self.rbf_call(x, vectors)
        if made is None:
            return None
        rbf, kern = made
        n = kern.shape[0]
        table = self.table(labels_out.dtype)
        if scores_out.size != n * k or labels_out.size != n or table.dtype.kind not in "biuf":
            return None
        scores, votes = np.empty((n, pairs), np.float32), np.empty((n, k), np.int64)
        chosen = np.empty(n, np.int64)
        return partial(
            _classify, rbf,
            partial(_cml.svm_pairwise, kern, n, self.coef64, self.starts, self.rho, k, scores,
                    votes),
            partial(_cml.svm_probabilities, scores, self.prob_a, self.prob_b, k, scores_out),
            votes, chosen,
            partial(_cml.take, table, table.size, chosen, table.itemsize, labels_out))

    def _pairwise(self, kern: Array, k: int, vectors: int) -> tuple[Array, Array]:
        """One decision value per pair of classes [N, k(k-1)/2] and the votes [N, k]."""
        coef = self.coef64 if self.coef64 is not None else \
            self.coefficients.astype(np.float64).reshape(k - 1, vectors)
        starts = self.starts
        n = kern.shape[0]
        if _cml is not None and k >= 2 and self.rho.size >= k * (k - 1) // 2 \
                and len(self.per_class) == k:
            scores = np.empty((n, k * (k - 1) // 2), np.float32)
            votes = np.empty((n, k), np.int64)
            _cml.svm_pairwise(np.ascontiguousarray(kern, np.float64), n, coef, starts,
                              self.rho, k, scores, votes)
            return scores, votes
        scores = np.empty((n, k * (k - 1) // 2), np.float32)
        votes = np.zeros((n, k), np.int64)
        c = 0
        for i in range(k - 1):
            si = slice(starts[i], starts[i + 1])
            for j in range(i + 1, k):
                sj = slice(starts[j], starts[j + 1])
                s = kern[:, si] @ coef[j - 1, si] + kern[:, sj] @ coef[i, sj] + self.rho[c]
                scores[:, c] = s
                votes[np.arange(n), np.where(s > 0, i, j)] += 1
                c += 1
        return scores, votes

    def _probabilities(self, scores: Array, k: int) -> Array:
        """Platt-scaled pairwise probabilities coupled into one per class [N, k]."""
        n = scores.shape[0]
        if _cml is not None and k >= 2 and \
                min(self.prob_a.size, self.prob_b.size) >= scores.shape[1]:
            out = np.empty((n, k), np.float32)
            _cml.svm_probabilities(np.ascontiguousarray(scores, np.float32), self.prob_a,
                                   self.prob_b, k, out)
            return out
        pairwise = np.zeros((n, k, k), np.float32)
        c = 0
        for i in range(k - 1):
            for j in range(i + 1, k):
                v = np.float32(1) - logistic(scores[:, c] * self.prob_a[c] + self.prob_b[c])
                v = np.clip(v, np.float32(1e-7), np.float32(1 - 1e-7))
                pairwise[:, i, j] = v
                pairwise[:, j, i] = 1 - v
                c += 1
        return _coupling(pairwise, k)
