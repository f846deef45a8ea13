"""Values that are not tensors: sequences, optionals and maps (ONNX's ``sequence_type``,
``optional_type`` and ``map_type``).

Every value of a network keeps its innermost tensor's element type (:class:`DataType`) and
dimensions (:class:`DimsExprs`) where tensors keep theirs; a :class:`ValueKind` says what
wraps that tensor, outermost first: ``seq(tensor(float))`` is ``ValueKind(("sequence",))``
with FLOAT and the elements' dimensions, ``optional(seq(tensor(int64)))`` is
``ValueKind(("optional", "sequence"))``, ZipMap's ``seq(map(string,tensor(float)))`` is
``ValueKind(("sequence", "map"), key=STRING)``. The elements of one sequence may differ in
shape: their dimensions are the ones they share (a symbol where they may differ), and
``ranked`` is False where not even their rank is known.

At run time (onnxruntime's convention) a sequence is a Python list of arrays, an optional
is ``None`` or its value, a map is a dict. Such values have no place in a memory plan: the
nodes that make them return them (``IDataDependentShapes``), like data-dependent outputs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from .._record import record
from ._types import DataType

if TYPE_CHECKING:  # onnx stays off the listing and engine-loading paths (test_onnx_free)
    import onnx

__all__ = ["TENSOR", "WRAPPERS", "ValueKind", "ValueSpec", "check_value", "describe_value",
           "kind_from_proto", "kind_of_value", "map_tensors", "parse_type_string", "spec_of",
           "type_name", "type_proto"]

#: the wrappers a value may have around its innermost tensor
WRAPPERS = ("sequence", "optional", "map")
_SHORT = {"sequence": "seq", "optional": "optional", "map": "map"}
_LONG = {v: k for k, v in _SHORT.items()}

#: a dimension as a model declares it: a number, a name, or None (unknown)
Dim = int | str | None


def type_name(dtype: DataType | None) -> str:
    """ONNX's lower-case element type name: ``float``, ``int64``, ``?`` when unknown."""
    if dtype is None:
        return "?"
    # onnx's TensorProto names (tensor_dtype_to_string) lower-cased; only HALF is named otherwise
    return "float16" if dtype is DataType.HALF else dtype.name.lower()


_BY_NAME = {type_name(t): t for t in DataType}


@record(frozen=True)
class ValueKind:
    """What wraps a value's innermost tensor (nothing: a tensor)."""

    wrappers: tuple[str, ...] = ()
    #: a map's key type (a map is among the wrappers)
    key: DataType | None = None
    #: whether the innermost tensor's rank is known (always, for a tensor)
    ranked: bool = True

    def __post_init__(self) -> None:
        bad = [w for w in self.wrappers if w not in WRAPPERS]
        if bad:
            raise ValueError(f"unknown value wrapper(s) {bad}; known: {list(WRAPPERS)}")

    @property
    def is_tensor(self) -> bool:
        return not self.wrappers

    @property
    def outer(self) -> str:
        """``tensor``, ``sequence``, ``optional`` or ``map``."""
        return self.wrappers[0] if self.wrappers else "tensor"

    def inner(self) -> ValueKind:
        """The kind of what the outermost wrapper holds (an element, the optional's value);
        made once per kind and kept on it (runs ask it for every element of a sequence; a
        look-up by kind hashes its fields, the key's enum among them)."""
        got: ValueKind | None = self.__dict__.get("_inner")
        if got is None:
            got = _INNER.get(self)
            if got is None:
                rest = self.wrappers[1:]
                got = _INNER[self] = ValueKind(rest, self.key if "map" in rest else None,
                                               self.ranked or not rest)
            object.__setattr__(self, "_inner", got)  # not a field: equality stays the same
        return got

    def wrap(self, wrapper: str, key: DataType | None = None) -> ValueKind:
        return ValueKind((wrapper, *self.wrappers), key if wrapper == "map" else self.key,
                         self.ranked)

    def with_rank(self, ranked: bool) -> ValueKind:
        return ValueKind(self.wrappers, self.key, ranked or self.is_tensor)

    def type_string(self, dtype: DataType | None, dims: Sequence[Any] | None = None) -> str:
        """onnxruntime's type text: ``tensor(float)``, ``seq(tensor(float))``,
        ``optional(seq(tensor(int64)))``, ``seq(map(string,tensor(float)))``; with ``dims``
        the tensor's shape follows it in brackets (``tensor(float)[2,?]``)."""
        text = f"tensor({type_name(dtype)})"
        if dims is not None and self.ranked:
            text += "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
        for w in reversed(self.wrappers):
            key = f"{type_name(self.key)}," if w == "map" else ""
            text = f"{_SHORT[w]}({key}{text})"
        return text

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"wrappers": list(self.wrappers)}
        if self.key is not None:
            out["key"] = self.key.name
        if not self.ranked:
            out["ranked"] = False
        return out

    @classmethod
    def from_json(cls, data: Any) -> ValueKind:
        if not isinstance(data, dict) or not isinstance(data.get("wrappers"), list):
            raise ValueError(f"not a value kind: {data!r}")
        key = data.get("key")
        return cls(tuple(str(w) for w in data["wrappers"]),
                   None if key is None else DataType[str(key)], bool(data.get("ranked", True)))

    def __str__(self) -> str:
        return self.type_string(None)


#: a plain tensor
TENSOR = ValueKind()

#: a value as a build sees it: its kind, element type and rank (None: unknown)
ValueSpec = tuple[ValueKind, DataType | None, int | None]


def spec_of(kind: ValueKind, dtype: DataType | None, dims: Sequence[Any]) -> ValueSpec:
    return kind, dtype, len(dims) if kind.ranked else None

@functools.cache
def _token() -> re.Pattern[str]:
    """The tokens of a type string (compiled when first read: an engine start reads none)."""
    return re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\(|\)|,|\[[^\]]*\])")


def parse_type_string(text: str) -> tuple[ValueKind, DataType | None, list[Dim] | None]:
    """What :meth:`ValueKind.type_string` wrote: the kind, element type and dimensions."""
    tokens = [m.group(1) for m in _token().finditer(text)]
    if "".join(tokens) != "".join(text.split()):
        raise ValueError(f"not a type: {text!r}")
    pos = 0

    def take(want: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens) or (want is not None and tokens[pos] != want):
            raise ValueError(f"not a type: {text!r}")
        pos += 1
        return tokens[pos - 1]

    wrappers: list[str] = []
    key: DataType | None = None
    closing = 0
    while True:
        head = take()
        take("(")
        closing += 1
        if head == "tensor":
            name = take()
            dtype = None if name == "?" else _BY_NAME.get(name)
            if name != "?" and dtype is None:
                raise ValueError(f"unknown element type {name!r} in {text!r}")
            take(")")
            closing -= 1
            dims: list[Dim] | None = None
            if pos < len(tokens) and tokens[pos].startswith("["):
                inside = take()[1:-1].strip()
                dims = [None if d.strip() == "?" else int(d) if d.strip().lstrip("-").isdigit()
                        else d.strip() for d in inside.split(",")] if inside else []
            break
        if head not in _LONG:
            raise ValueError(f"unknown type {head!r} in {text!r}")
        wrappers.append(_LONG[head])
        if head == "map":
            key = _BY_NAME.get(take())
            take(",")
    for _ in range(closing):
        take(")")
    if pos != len(tokens):
        raise ValueError(f"not a type: {text!r}")
    kind = ValueKind(tuple(wrappers), key, dims is not None or not wrappers)
    return kind, dtype, dims


def kind_from_proto(tp: onnx.TypeProto) -> tuple[ValueKind, DataType | None, list[Dim] | None]:
    """A model's declared type: its kind, innermost element type (None: not declared) and
    dimensions (None: rank unknown; entries are numbers, names or None)."""
    wrappers: list[str] = []
    key: DataType | None = None
    while True:
        which = tp.WhichOneof("value")
        if which == "sequence_type":
            wrappers.append("sequence")
            tp = tp.sequence_type.elem_type
        elif which == "optional_type":
            wrappers.append("optional")
            tp = tp.optional_type.elem_type
        elif which == "map_type":
            wrappers.append("map")
            key = DataType(tp.map_type.key_type)
            tp = tp.map_type.value_type
        else:
            break
    if which not in ("tensor_type", None):
        raise ValueError(f"{which.replace('_type', '')} values are not supported")
    dtype: DataType | None = None
    dims: list[Dim] | None = None
    if which == "tensor_type":
        tt = tp.tensor_type
        dtype = DataType(tt.elem_type) if tt.elem_type else None
        if tt.HasField("shape"):
            dims = [int(d.dim_value) if d.HasField("dim_value") and d.dim_value >= 0
                    else d.dim_param if d.HasField("dim_param") else None for d in tt.shape.dim]
    return ValueKind(tuple(wrappers), key, dims is not None or not wrappers), dtype, dims


def type_proto(kind: ValueKind, dtype: DataType, dims: Sequence[Dim] | None) -> onnx.TypeProto:
    """The ONNX type of a value of this kind (``dims`` None: rank unknown)."""
    from onnx import helper

    tp = helper.make_tensor_type_proto(dtype.value, None if dims is None else list(dims))
    for w in reversed(kind.wrappers):
        if w == "sequence":
            tp = helper.make_sequence_type_proto(tp)
        elif w == "optional":
            tp = helper.make_optional_type_proto(tp)
        else:
            assert kind.key is not None
            tp = helper.make_map_type_proto(kind.key.value, tp)
    return tp


#: ValueKind.inner's results
_INNER: dict[ValueKind, ValueKind] = {}


# -- values at run time ---------------------------------------------------------------------
def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


#: the types of a map's plain Python values (ZipMap's floats), which no device holds
_PLAIN = frozenset({float, int, str, bool})


def _plain_maps(value: Any) -> bool:
    """Whether ``value`` is a list of dicts whose values are all plain Python scalars (one
    pass in C: ZipMap's hundreds of rows cost microseconds, not a call per value)."""
    try:
        return set(map(type, chain.from_iterable(map(dict.values, value)))) <= _PLAIN
    except TypeError:  # an element that is not a dict
        return False


def map_tensors(fn: Callable[[Any], Any], value: Any, kind: ValueKind) -> Any:
    """``value`` with ``fn`` applied to every tensor inside it (a map's plain Python keys and
    scalar values stay as they are)."""
    if kind.is_tensor:
        return fn(value)
    inner = kind.inner()
    if kind.outer == "sequence":
        if inner.outer == "map" and inner.inner().is_tensor and _plain_maps(value):
            return list(value)  # maps of plain values (ZipMap's rows): nothing to map
        return [map_tensors(fn, v, inner) for v in value]
    if kind.outer == "optional":
        return None if value is None else map_tensors(fn, value, inner)
    if inner.is_tensor and not any(_is_array(v) for v in value.values()):
        return value  # plain Python values (ZipMap's floats): nothing to map
    return {k: map_tensors(fn, v, inner) if _is_array(v) or not inner.is_tensor else v
            for k, v in value.items()}


def describe_value(value: Any) -> str:
    """How an error names what it was given: ``a list of 2 values``, ``None``, ``an
    ndarray of float32 (2, 3)``."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} value(s)"
    if isinstance(value, dict):
        return f"a dict of {len(value)} item(s)"
    if _is_array(value):
        return f"an array of {value.dtype} {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def check_value(value: Any, kind: ValueKind, dtype: DataType,
                dims: Sequence[Any] | None) -> str | None:
    """Why ``value`` is no value of this kind and element type, with these dimensions
    (constants are checked, anything else is free; ``dims`` None: shapes are not checked);
    None when it is one."""
    if kind.is_tensor:
        if not _is_array(value):
            return f"got {describe_value(value)}, expected an array of {dtype.numpy}"
        if value.dtype != dtype.numpy:
            return f"got {describe_value(value)}, expected dtype {dtype.numpy}"
        if dims is None:
            return None
        if len(dims) != value.ndim:
            return f"got {describe_value(value)}, expected rank {len(dims)}"
        for axis, (d, actual) in enumerate(zip(dims, value.shape, strict=True)):
            if isinstance(d, int) and d != actual:
                return f"got {describe_value(value)}, axis {axis} must be {d}"
        return None
    inner = kind.inner()
    dims = dims if kind.ranked else None
    if kind.outer == "sequence":
        if not isinstance(value, (list, tuple)):
            return (f"got {describe_value(value)}, expected a {kind.type_string(dtype)}: a "
                    "list of arrays")
        if inner.outer == "map" and set(map(type, value)) <= {dict}:
            return None  # every element a dict, all a map is checked for (below)
        for k, v in enumerate(value):
            problem = check_value(v, inner, dtype, dims)
            if problem:
                return f"element {k}: {problem}"
        return None
    if kind.outer == "optional":
        return None if value is None else check_value(value, inner, dtype, dims)
    if not isinstance(value, dict):
        return f"got {describe_value(value)}, expected a {kind.type_string(dtype)}: a dict"
    return None


def kind_of_value(value: Any, declared: ValueKind | None = None
                  ) -> tuple[ValueKind, DataType | None, int | None]:
    """The kind, element type and rank of a run-time value (a subgraph's inputs are typed
    from what it is called with); ``declared`` says what None and empty lists stand for."""
    import numpy as np
    if declared is not None and not declared.is_tensor:
        tensors: list[Any] = []
        _collect(value, declared, tensors)
        ranks = {t.ndim for t in tensors}
        dtypes = {t.dtype for t in tensors}
        dtype = DataType.from_numpy(next(iter(dtypes))) if len(dtypes) == 1 else None
        rank = next(iter(ranks)) if len(ranks) == 1 else None
        return declared.with_rank(rank is not None), dtype, rank
    if isinstance(value, (list, tuple)):
        return kind_of_value(value, ValueKind(("sequence",)))
    if isinstance(value, dict):
        return ValueKind(("map",), None, True), None, 0
    arr = np.asarray(value)
    return TENSOR, DataType.from_numpy(arr.dtype), arr.ndim


def _collect(value: Any, kind: ValueKind, out: list[Any]) -> None:
    if kind.is_tensor:
        if _is_array(value):
            out.append(value)
        return
    if kind.outer == "sequence":
        for v in value or ():
            _collect(v, kind.inner(), out)
    elif kind.outer == "optional":
        if value is not None:
            _collect(value, kind.inner(), out)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, kind.inner(), out)
