"""Tree ensembles: TreeEnsembleRegressor, TreeEnsembleClassifier (opsets 1-4 of the domain) and
TreeEnsemble (opset 5), walked by :mod:`._trees`; what they do with the leaf scores follows
onnxruntime exactly, including its rules for binary classifiers (a single class's scores,
``base_values`` of one or two values, the label by a score above 0.5 or 0, the second score
column made as ``1 - p`` or ``-p``).

The ensemble is made into arrays once per plugin, when it is configured (where a malformed one
fails the build) or at its first run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property, partial
from typing import Any

import numpy as np

from mini_infer_core.errors import ExecutionError, PluginInterfaceError
from mini_infer_core.ops import ml
from mini_infer_core.plugin import DynamicPluginTensorDesc
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import MlPlugin
from ._post import (
    TRANSFORMS,
    expand_binary,
    probit,
    transform,
    transform_into,
    transform_scores,
)
from ._trees import (
    AGG_MAX,
    AGG_MIN,
    AGG_SUM,
    Forest,
    ForestError,
    base_values,
    evaluate,
    legacy_forest,
    rows_of,
    v5_forest,
    walk_call,
    walk_into,
)

__all__ = ["TreeEnsemble", "TreeEnsembleClassifier", "TreeEnsembleRegressor"]

try:  # the compiled classifier finish (optional: NumPy otherwise)
    from . import _cml  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a C compiler
    _cml = None

#: the post_transforms ``_cml.classify`` applies
_COMPILED_POST = {"NONE": 0, "LOGISTIC": 1, "SOFTMAX": 2}
#: ``has`` for ``_cml.classify`` where every class is scored
_ALL_SCORED = np.empty(0, np.uint8)

Array = NDArray[Any]
_FLOAT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
_AGGREGATES = {"SUM": AGG_SUM, "AVERAGE": AGG_SUM, "MIN": AGG_MIN, "MAX": AGG_MAX}


class _Trees(MlPlugin):
    _forest: Forest | None = None

    def make_forest(self) -> Forest:
        raise NotImplementedError

    @property
    def forest(self) -> Forest:
        if self._forest is None:
            try:
                self._forest = self.make_forest()
            except ForestError as exc:
                raise PluginInterfaceError(
                    f"{self.op_type} {self.name!r}: {exc}; the model is malformed") from exc
        return self._forest

    def configure_plugin(self, inputs: Sequence[DynamicPluginTensorDesc],  # type: ignore[override]
                         outputs: Sequence[DynamicPluginTensorDesc]) -> None:
        super().configure_plugin(inputs, outputs)
        _ = self.forest  # a malformed ensemble fails the build, not the first run

    @cached_property
    def base(self) -> Sequence[float]:
        """``base_values`` (or ``base_values_as_tensor``) as floats."""
        return base_values(self.attrs)

    def scores(self, x: Array, agg: int, divisor: float = 0.0,
               bases: dict[Any, Array] | None = None) -> tuple[Array, Array]:
        """The aggregated scores and which targets received a weight; each score divided by
        ``divisor`` (where > 0) and the base value of its target added (``bases``: the values
        by the type of the rows)."""
        try:
            rows = rows_of(x, self.forest, f"{self.op_type} {self.name!r}")
        except ValueError as exc:
            raise ExecutionError(str(exc)) from exc
        return evaluate(self.forest, rows, agg, divisor,
                        None if bases is None else bases[rows.dtype])

    def bound_regression(self, inputs: Sequence[Any], outputs: Sequence[Any],
                         aggregate: str, base: Sequence[float]) -> Callable[[], None] | None:
        """A regression with no post_transform over a few rows: the compiled walk made once
        for the step's arrays (scores straight into the output), else None."""
        x, out = inputs[0], outputs[0]
        if len(inputs) != 1 or not isinstance(x, np.ndarray) or not isinstance(out, np.ndarray) \
                or x.dtype not in _FLOAT_TYPES or out.dtype != x.dtype:
            return None
        self.regression_setup(aggregate, base)
        has = np.empty(out.size, np.uint8)
        return walk_call(self.forest, x, _AGGREGATES[aggregate], self._divisor,
                         None if self._bases is None else self._bases.get(x.dtype), out, has)

    def regression_setup(self, aggregate: str, base: Sequence[float]) -> None:
        """The divisor and base values of a regression (the same every run: kept)."""
        forest = self.forest
        key = (aggregate, len(base))
        if getattr(self, "_regression_key", None) != key:
            self._regression_key = key
            self._divisor = float(forest.n_trees) if aggregate == "AVERAGE" else 0.0
            values = np.asarray(base, np.float64)
            self._bases = {np.dtype(t): values.astype(t) for t in (np.float32, np.float64)} \
                if len(base) == forest.n_targets else None

    def regression(self, x: Array, aggregate: str, base: Sequence[float],
                   out: Array | None = None) -> Array | None:
        """onnxruntime's regression: aggregate, average over trees, add the base values (when
        there is one per target). With ``out`` (no post_transform follows): written there by
        the few-row path where it applies (None returned), else returned."""
        forest = self.forest
        self.regression_setup(aggregate, base)
        if out is not None and walk_into(
                forest, x, _AGGREGATES[aggregate], self._divisor,
                None if self._bases is None else self._bases.get(x.dtype), out):
            return None
        s, _ = self.scores(x, _AGGREGATES[aggregate], self._divisor, self._bases)
        return s


class TreeEnsembleRegressor(_Trees, ml.TreeEnsembleRegressor):
    def make_forest(self) -> Forest:
        return legacy_forest(self.attrs, "target", int(self.attrs["n_targets"]))

    def compute(self, x: Array, *, out: Array, aggregate_function: str, post_transform: str,
                **_: Any) -> None:
        s = self.regression(x, aggregate_function, self.base,
                            out if post_transform == "NONE" else None)
        if s is not None:
            np.copyto(out, transform_scores(post_transform, s), casting="unsafe")

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The compiled few-row walk straight into the output, made once (no
        post_transform), else ``compute`` bound."""
        a = self.attrs
        bound = self.bound_regression(inputs, outputs, a["aggregate_function"], self.base) \
            if workspace is None and a["post_transform"] == "NONE" else None
        return bound if bound is not None else super().bind_run(inputs, outputs, workspace)


class TreeEnsemble(_Trees, ml.TreeEnsemble):
    def make_forest(self) -> Forest:
        return v5_forest(self.attrs)

    def compute(self, x: Array, *, out: Array, aggregate_function: int, post_transform: int,
                **_: Any) -> None:
        aggregate = ("AVERAGE", "SUM", "MIN", "MAX")[int(aggregate_function)]
        post = TRANSFORMS[int(post_transform)]
        s = self.regression(x, aggregate, (), out if post == "NONE" else None)
        if s is not None:
            np.copyto(out, transform_scores(post, s), casting="unsafe")


class TreeEnsembleClassifier(_Trees, ml.TreeEnsembleClassifier):
    def setup(self) -> None:
        super().setup()
        a = self.attrs
        self.labels = list(a["classlabels_strings"] or a["classlabels_int64s"] or ())
        if len(self.labels) < 2:
            raise PluginInterfaceError(
                f"TreeEnsembleClassifier {self.name!r}: {len(self.labels)} class label(s); "
                "mini-infer needs at least two (classlabels_int64s or classlabels_strings)")
        ids = np.asarray(a["class_ids"] or (), np.int64)
        weights = np.asarray(a.get("class_weights_as_tensor") if a.get(
            "class_weights_as_tensor") is not None else a["class_weights"] or (), np.float64)
        self.binary_case = len(self.labels) == 2 and len(np.unique(ids)) == 1
        self.all_positive = bool((weights >= 0).all())

    def make_forest(self) -> Forest:
        return legacy_forest(self.attrs, "class", len(self.labels))

    def compute(self, x: Array, *, out: tuple[Array, Array], post_transform: str,
                **_: Any) -> None:
        labels_out, scores_out = out
        s, has = self._few_rows(x)
        if s is None:
            s, has = self.scores(x, AGG_SUM)
        base = self.base
        if len(self.labels) > 2:
            nb = min(len(base), s.shape[1])
            if nb:  # each class with a base value: added, and it has a score
                s[:, :nb] += self._base_array(s.dtype, nb)
                has[:, :nb] = True
            compiled = self._finish(s, post_transform, scores_out, has)  # masks in C
            if compiled is not None:
                chosen = compiled
            elif has.all():  # every class scored (a forest's usual case): no masking
                chosen = s.argmax(axis=1)
                transform_into(post_transform, s, scores_out)
            else:
                chosen = np.argmax(np.where(has, s, -np.inf), axis=1)
                np.copyto(scores_out, transform(post_transform, np.where(has, s, 0)),
                          casting="unsafe")
            table = self._table(labels_out.dtype, False)
        else:
            chosen, z, raw = self._binary(s, has, base, post_transform)
            np.copyto(scores_out, z, casting="unsafe")
            table = self._table(labels_out.dtype, raw)
        if labels_out.shape == chosen.shape:
            np.take(table, chosen, out=labels_out)
        else:
            labels_out[...] = table[chosen]

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """Three or more classes over a few float32 rows: the walk, the base values, the
        finish (``_cml.classify``) and the label lookup (``_cml.take``) made once for the
        step's arrays and run as one call; ``compute`` checked and kept nothing less for
        each run (most of a one-row run of a small forest). Otherwise ``compute``, bound."""
        bound = self._bound_few_rows(inputs[0], outputs[0], outputs[1]) \
            if workspace is None and len(inputs) == 1 and len(outputs) == 2 else None
        return bound if bound is not None else super().bind_run(inputs, outputs, workspace)

    def _bound_few_rows(self, x: Any, labels_out: Any, scores_out: Any
                        ) -> Callable[[], None] | None:
        code = _COMPILED_POST.get(self.attrs["post_transform"])
        if _cml is None or code is None or len(self.labels) <= 2 \
                or not all(isinstance(a, np.ndarray) for a in (x, labels_out, scores_out)) \
                or x.ndim != 2 or x.dtype != np.float32 or scores_out.dtype != np.float32 \
                or not scores_out.flags.c_contiguous or not labels_out.flags.c_contiguous:
            return None
        n, k = x.shape[0], self.forest.n_targets
        if scores_out.shape != (n, k) or labels_out.size != n:
            return None
        s, has = np.empty((n, k), np.float32), np.empty((n, k), np.uint8)
        walk = walk_call(self.forest, x, AGG_SUM, 0.0, None, s, has)
        table = self._table(labels_out.dtype, False)
        if walk is None or table.dtype.kind not in "biuf" or table.dtype != labels_out.dtype:
            return None
        nb = min(len(self.base), k)
        chosen = np.empty(n, np.int64)
        return partial(_classify_rows, walk, s[:, :nb] if nb else None,
                       self._base_array(s.dtype, nb) if nb else None,
                       has[:, :nb] if nb else None,
                       partial(_cml.classify, s, n, k, code, scores_out, chosen, has),
                       partial(_cml.take, table, table.size, chosen, table.itemsize,
                               labels_out))

    def _few_rows(self, x: Array) -> tuple[Any, Any]:
        """The scores and which classes received a weight by one compiled call (``walk_into``)
        where it applies, else (None, None)."""
        if x.ndim != 2 or x.dtype not in _FLOAT_TYPES:
            return None, None
        shape = (x.shape[0], self.forest.n_targets)
        kept = self.__dict__.get("_scratch")  # read within this run only: kept for the next
        if kept is None or kept[0].shape != shape or kept[0].dtype != x.dtype:
            has = np.empty(shape, np.uint8)
            kept = self.__dict__["_scratch"] = (np.empty(shape, x.dtype), has, has.view(bool))
        if walk_into(self.forest, x, AGG_SUM, 0.0, None, kept[0], kept[1]):
            return kept[0], kept[2]
        return None, None

    def _finish(self, s: Array, post: str, scores_out: Array, has: Array | None = None
                ) -> Array | None:
        """Each row's class (the first largest score; with ``has``, of the classes scored)
        and its scores under ``post`` (an unscored class as 0) written into ``scores_out``,
        by one compiled call (``_cml.classify``: float32 scores, NONE, LOGISTIC or SOFTMAX);
        None where it does not apply (NumPy's form then)."""
        code = _COMPILED_POST.get(post)
        if _cml is None or code is None or s.dtype != np.float32 or \
                scores_out.dtype != np.float32 or s.shape != scores_out.shape or \
                not s.flags.c_contiguous or not scores_out.flags.c_contiguous or \
                (has is not None and (has.shape != s.shape or not has.flags.c_contiguous)):
            return None
        chosen = np.empty(s.shape[0], np.int64)
        _cml.classify(s, s.shape[0], s.shape[1], code, scores_out, chosen,
                      _ALL_SCORED if has is None else has.view(np.uint8))
        return chosen

    def _base_array(self, dtype: Any, count: int) -> Array:
        """The first ``count`` base values in ``dtype`` (kept: the same every run)."""
        kept: dict[Any, Array] = self.__dict__.setdefault("_base_arrays", {})
        key = (dtype, count)
        if key not in kept:
            kept[key] = np.asarray(self.base[:count], np.float64).astype(dtype)
        return kept[key]

    def _table(self, dtype: Any, raw: bool) -> Array:
        """The labels by index (kept: the same every run); ``raw``: the binary rule's 0/1
        where the labels are integers."""
        key = (dtype, raw)
        tables: dict[Any, Array] = self.__dict__.setdefault("_tables", {})
        if key not in tables:
            strings = np.dtype(dtype).kind == "O"
            tables[key] = np.array(self.labels if strings or not raw else [0, 1], dtype=dtype)
        return tables[key]

    def _binary(self, s: Array, has: Array, base: Sequence[float], post: str
                ) -> tuple[Array, Array, bool]:
        """Two classes: (index of each row's label, scores [N, 2], whether the index is the
        raw label 0/1 rather than a class label's index)."""
        s0, s1, h0, h1 = s[:, 0].copy(), s[:, 1].copy(), has[:, 0], has[:, 1].copy()
        two = np.ones(len(s), bool)  # rows whose predictions keep both classes
        mode = np.full(len(s), -1)
        if len(base) == 2:
            shifted = s.dtype.type(base[1]) + s0
            s1 = np.where(h1, shifted, s1 + s.dtype.type(base[1]))
            s0 = np.where(h1, -shifted, s0 + s.dtype.type(base[0]))
        elif len(base) == 1:
            s0 = s0 + s.dtype.type(base[0])
            two = h1.copy()
        elif not base:
            mode[:] = 3
            two = h1.copy()
        pos = np.where(two & h1, s1, np.where(h0, s0, 0))
        if self.binary_case:
            positive = pos > 0.5 if self.all_positive else pos > 0
            mode = np.where(positive, 0, 1) if self.all_positive else np.where(positive, 2, 3)
        else:
            positive = pos > 0
        v0, v1 = np.where(h0, s0, 0), np.where(h1, s1, 0)
        z = np.zeros((len(s), 2), np.float32)
        if two.any():
            z[two] = transform(post, np.stack([v0[two], v1[two]], axis=1))
        single = ~two
        if single.any():
            v = v0[single]
            if post == "PROBIT":
                z[single, 0] = probit(v)
            else:
                m = mode[single]
                pairs = z[single]
                prob = (m == 0) | (m == 1)
                margin = (m == 2) | (m == 3)
                pairs[prob] = expand_binary(v[prob], post, 0)
                pairs[margin] = expand_binary(v[margin], post, 2)
                pairs[m < 0, 0] = v[m < 0]
                z[single] = pairs
        return positive.astype(np.int64), z, not self.binary_case


def _classify_rows(walk: Callable[[], None], head: Array | None, base: Array | None,
                   head_has: Array | None, classify: Callable[[], None],
                   take: Callable[[], Any]) -> None:
    """A bound TreeEnsembleClassifier step (``TreeEnsembleClassifier._bound_few_rows``):
    scores and which classes were scored (``walk``), the base values added to the first
    classes (``head``: a view of the scores, which then all count as scored), each row's
    class and transformed scores (``classify``), its label (``take``: the chosen indices
    are always those of labels)."""
    walk()
    if head is not None and base is not None and head_has is not None:
        np.add(head, base, head)
        head_has.fill(1)
    classify()
    take()
