"""The ``ai.onnx.ml`` domain: the operators scikit-learn models become through skl2onnx
(linear models, SVMs, tree ensembles, encoders, scalers).

Shapes and types follow onnxruntime, the reference these models are converted for: an input
X of rank 1 is one row (N = 1), of rank 2 is N rows of features; a classifier's first output
is the label of each row (INT64, or STRING when the model gives ``classlabels_strings``), its
second the scores (FLOAT, one column per class; the SVM without probabilities has one per pair
of classes). ZipMap gives a sequence of maps and DictVectorizer takes a map (values that are
not tensors, ``plugin/_kinds.py``): both are data-dependent, their kernels return their outputs.

Tensor-valued attributes holding strings (LabelEncoder's ``keys_tensor``, ``values_tensor``,
``default_tensor``) are kept as tuples of ``str``, the form plugin fields store, so that every
schema here serializes with the core's field encoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs, IntLike, ValueKind, ValueSpec
from ..plugin.shapes import Shapes, dim_prod
from ._common import Versioned
from ._schema import Op, UnaryOp

__all__ = ["ArrayFeatureExtractor", "Binarizer", "CategoryMapper", "DictVectorizer",
           "FeatureVectorizer", "Imputer", "LabelEncoder_1", "LabelEncoder", "LinearClassifier",
           "LinearRegressor", "Normalizer", "OneHotEncoder", "SVMClassifier", "SVMRegressor",
           "Scaler", "TreeEnsemble", "TreeEnsembleClassifier", "TreeEnsembleRegressor",
           "ZipMap"]

ML_DOMAIN = "ai.onnx.ml"
_NUMERIC = (DataType.FLOAT, DataType.DOUBLE, DataType.INT64, DataType.INT32)


def _strings(value: Any) -> Any:
    """A tensor attribute of strings (object or bytes array) as a tuple of ``str``; any other
    value unchanged."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "OSU":
        return tuple(v.decode() if isinstance(v, bytes) else str(v)
                     for v in value.reshape(-1).tolist())
    return value


class MlOp(Op):
    """An ``ai.onnx.ml`` operator (a private base: its subclasses are the schemas)."""

    domain = ML_DOMAIN

    def setup(self) -> None:
        super().setup()
        for key, value in self.attrs.items():
            self.attrs[key] = _strings(value)

    def rows(self, x: DimsExprs) -> IntLike:
        """N of an input shaped [N, C] (or [C]: one row); refuses other ranks."""
        if len(x) not in (1, 2):
            raise PluginInterfaceError(
                f"{self.op_type} {self.name!r}: X must have rank 1 or 2 ([N, features]), "
                f"got rank {len(x)}; reshape the input")
        return x[0] if len(x) == 2 else 1

    def label_type(self) -> DataType:
        """The type of a classifier's labels: STRING with string class labels, else INT64."""
        return DataType.STRING if self.attrs.get("classlabels_strings") else DataType.INT64


class _Classifier(MlOp):
    """Labels [N] and scores [N, ``score_columns``]."""

    n_outputs = 2
    dtypes = _NUMERIC

    def score_columns(self, x: DimsExprs) -> IntLike:
        raise NotImplementedError

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n = self.rows(inputs[0])
        return [[n], [n, self.score_columns(inputs[0])]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.label_type(), DataType.FLOAT]


def _class_count(attrs: dict[str, Any], ints: str) -> int:
    return len(attrs.get("classlabels_strings") or attrs.get(ints) or ())


# -- elementwise and per-feature transforms ---------------------------------------------------
class Binarizer(MlOp, UnaryOp):
    """1 where X > threshold, else 0, in X's type."""

    dtypes = _NUMERIC


class Imputer(MlOp, UnaryOp):
    """X with the replaced value (NaN by default) replaced per feature."""

    dtypes = _NUMERIC


class _ToFloat(MlOp):
    dtypes = _NUMERIC

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.FLOAT]


class Scaler(_ToFloat):
    """(X - offset) * scale per feature, as FLOAT."""


class Normalizer(_ToFloat):
    """Each row divided by its MAX, L1 or L2 norm, as FLOAT."""


class ArrayFeatureExtractor(MlOp):
    """X's last axis gathered at the indices Y (all of them, flattened); a rank-1 X gives one
    row."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x, y = inputs
        count = dim_prod(list(y))
        return [[1, count] if len(x) == 1 else [*x[:-1], count]]


class FeatureVectorizer(_ToFloat):
    """The inputs' features side by side, each cut or zero-padded to its
    ``inputdimensions``: [N, sum of inputdimensions]."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(self.attrs["inputdimensions"] or ())
        if len(dims) != len(inputs):
            raise PluginInterfaceError(
                f"FeatureVectorizer {self.name!r}: {len(inputs)} input(s) but "
                f"inputdimensions has {len(dims)} value(s)")
        x = inputs[0]
        return [[x[0] if len(x) > 1 else 1, int(sum(dims))]]


class OneHotEncoder(MlOp):
    """One FLOAT column per category appended to X's shape."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        cats = self.attrs["cats_strings"] or self.attrs["cats_int64s"] or ()
        return [[*inputs[0], len(cats)]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.FLOAT]


# -- maps between labels ----------------------------------------------------------------------
class _Map(MlOp):
    """Same shape; strings map to integers and integers to strings."""

    dtypes = (DataType.STRING, DataType.INT64)

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64 if input_types[0] is DataType.STRING else DataType.STRING]


class CategoryMapper(_Map):
    """``cats_strings[i]`` <-> ``cats_int64s[i]``, defaults for what is not listed."""


class LabelEncoder_1(Versioned, _Map, opsets=(1, 1)):  # noqa: N801
    """LabelEncoder of opset 1: a string's index in ``classes_strings``, or the string at an
    index."""


_VALUE_TYPES = {"values_strings": DataType.STRING, "values_int64s": DataType.INT64,
                "values_floats": DataType.FLOAT}


class LabelEncoder(Versioned, MlOp, opsets=(2, None)):
    """``keys_*`` -> ``values_*`` (lists from opset 2, tensors from opset 4), the default for
    what is not a key; the output type is the values'."""

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        tensor = self.attrs.get("values_tensor")
        if isinstance(tensor, tuple):
            return [DataType.STRING]
        if isinstance(tensor, np.ndarray):
            return [DataType.from_numpy(tensor.dtype)]
        for key, dtype in _VALUE_TYPES.items():
            if self.attrs.get(key) is not None:
                return [dtype]
        raise PluginInterfaceError(
            f"LabelEncoder {self.name!r}: no values_* attribute, the model must give one")


# -- models -----------------------------------------------------------------------------------
class LinearRegressor(_ToFloat):
    """X @ coefficients.T + intercepts: [N, targets]."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[self.rows(inputs[0]), self.attrs["targets"]]]


class LinearClassifier(_Classifier):
    """One score per coefficient row; two when a single row serves two class labels."""

    def score_columns(self, x: DimsExprs) -> IntLike:
        rows = len(self.attrs["intercepts"] or ())
        if not rows:
            features = x[-1]
            if not features.is_constant():
                raise PluginInterfaceError(
                    f"LinearClassifier {self.name!r}: without intercepts the feature count "
                    "must be known at build time")
            rows = len(self.attrs["coefficients"]) // features.get_constant_value()
        if rows == 1 and _class_count(self.attrs, "classlabels_ints") == 2:
            return 2
        return rows


class SVMClassifier(_Classifier):
    """Scores per class; per pair of classes (two for two classes) for a support-vector model
    without probabilities."""

    def score_columns(self, x: DimsExprs) -> IntLike:
        k = _class_count(self.attrs, "classlabels_ints")
        svc = sum(self.attrs["vectors_per_class"] or ()) > 0
        if svc and not self.attrs["prob_a"]:
            return k * (k - 1) // 2 if k > 2 else 2
        return k


class SVMRegressor(_ToFloat):
    """One FLOAT output per row: [N, 1]."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[self.rows(inputs[0]), 1]]


class TreeEnsembleRegressor(_ToFloat):
    """Tree ensemble (opsets 1-4 of the domain): [N, n_targets] FLOAT."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[self.rows(inputs[0]), self.attrs["n_targets"]]]


class TreeEnsembleClassifier(_Classifier):
    """Tree ensemble classifier (opsets 1-4 of the domain): one score per class."""

    def score_columns(self, x: DimsExprs) -> IntLike:
        return _class_count(self.attrs, "classlabels_int64s")


class TreeEnsemble(MlOp):
    """The tree ensemble of opset 5: [N, n_targets] in X's type."""

    dtypes = (DataType.FLOAT, DataType.DOUBLE, DataType.HALF)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        if self.attrs["n_targets"] is None:
            raise PluginInterfaceError(f"TreeEnsemble {self.name!r}: n_targets is required")
        return [[self.rows(inputs[0]), self.attrs["n_targets"]]]


# -- sequences and maps -----------------------------------------------------------------------
class ZipMap(MlOp):
    """Each row of X [N, C] (a rank-1 X is one row) as a map from the C class labels
    (``classlabels_strings`` or ``classlabels_int64s``) to its scores: the sequence of N maps
    ``seq(map(string or int64, tensor(float)))``, at run time a list of dicts of Python floats
    (onnxruntime's form). The map values are scalars, so the dimensions kept are ``[]``."""

    data_dependent = True
    dtypes = (DataType.FLOAT,)

    def labels(self) -> tuple[Any, ...]:
        strings, ints = self.attrs["classlabels_strings"], self.attrs["classlabels_int64s"]
        if bool(strings) == bool(ints):
            raise PluginInterfaceError(
                f"ZipMap {self.name!r}: exactly one of classlabels_strings and "
                "classlabels_int64s must be given")
        return tuple(strings or ints)

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        key = DataType.STRING if self.attrs["classlabels_strings"] else DataType.INT64
        return [ValueKind(("sequence", "map"), key=key)]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        self.rows(inputs[0])
        columns, labels = inputs[0][-1], len(self.labels())
        if columns.is_constant() and columns.get_constant_value() != labels:
            raise PluginInterfaceError(
                f"ZipMap {self.name!r}: X has {columns.get_constant_value()} columns but "
                f"there are {labels} class labels; they must match")
        return [[]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.FLOAT]


#: DictVectorizer's map value types and the element types of its output (onnxruntime's)
_DICT_VALUES = (DataType.FLOAT, DataType.DOUBLE, DataType.INT64, DataType.STRING)


class DictVectorizer(MlOp):
    """A map (a dict at run time) as a row of the values of the vocabulary's keys
    (``string_vocabulary`` or ``int64_vocabulary``), zero (an empty string) for a key the map
    lacks: [1, vocabulary size] in the map's value type (onnxruntime's shape; the ONNX text
    calls it 1-D). Keys the vocabulary lacks are ignored."""

    data_dependent = True
    input_kinds = ("map",)
    #: the output's element type, recorded when the engine is built (the kernel returns its
    #: output without being configured, and Python's numbers do not tell FLOAT from DOUBLE)
    hidden_fields = ("__value_type__",)

    def vocabulary(self) -> tuple[Any, ...]:
        strings, ints = self.attrs["string_vocabulary"], self.attrs["int64_vocabulary"]
        if bool(strings) == bool(ints):
            raise PluginInterfaceError(
                f"DictVectorizer {self.name!r}: exactly one of string_vocabulary and "
                "int64_vocabulary must be given")
        return tuple(strings or ints)

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        spec = inputs[0] if inputs else None
        if spec is None or spec[0].wrappers != ("map",):
            raise PluginInterfaceError(
                f"DictVectorizer {self.name!r}: X must be a map (a dict), got "
                f"{'nothing' if spec is None else spec[0].type_string(spec[1])}")
        want = DataType.STRING if self.attrs["string_vocabulary"] else DataType.INT64
        if spec[0].key is not None and spec[0].key is not want:
            raise PluginInterfaceError(
                f"DictVectorizer {self.name!r}: the map's keys are {spec[0].key.name} but the "
                f"vocabulary holds {want.name} keys")
        return [ValueKind()]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[1, len(self.vocabulary())]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        value = input_types[0]
        if value not in _DICT_VALUES:
            raise PluginInterfaceError(
                f"DictVectorizer {self.name!r}: map values of type {value.name} are not "
                f"supported (supported: {', '.join(t.name for t in _DICT_VALUES)})")
        self.record("__value_type__", value.value)
        return [value]

    def value_type(self) -> DataType:
        """The output's element type (FLOAT before the engine is built)."""
        return DataType(int(self.hidden.get("__value_type__", DataType.FLOAT.value)))
