"""Base classes that make an ONNX operator plugin a few lines.

A kernel is named like its ONNX operator, declares its attribute defaults once in
``attributes`` and implements ``compute(*inputs, out=..., **attributes)``::

    class LeakyRelu(UnaryPlugin):
        attributes = {"alpha": 0.01}

        def compute(self, x, *, out, alpha):
            np.multiply(x, alpha, out=out, where=x < 0)
            np.copyto(out, x, where=x >= 0)

Shape inference lives in ``output_shapes`` (dimension expressions, so dynamic shapes work)
and type inference in ``output_types``; both default to "same as the first input".
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from ..errors import PluginInterfaceError
from ._capabilities import EveryCapability
from ._dims import DimExpr, DimsExprs, ExprBuilder, IntLike
from ._fields import (
    PluginFieldCollection,
    as_field_collection,
    decode_fields,
    encode_fields,
    fields_from_values,
)
from ._interfaces import IPluginCreator, IPluginV2, IPluginV2DynamicExt
from ._types import DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat

__all__ = [
    "REQUIRED",
    "OnnxPlugin",
    "UnaryPlugin",
    "BroadcastPlugin",
    "OnnxPluginCreator",
    "broadcast_dims",
]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: marks an attribute without default: the model must give it
REQUIRED: Any = _Required()

#: serialized field marking an instance that turned data-dependent at build time
_DATA_DEPENDENT = "__data_dependent__"


def _unversioned(name: str) -> str:
    r"""A class name without its opset suffix: a class named like ``Clip_11`` implements
    ``Clip`` (from opset 11). What ``re.sub(r"_\d+$", "", name)`` gives, without a pattern
    compiled at import."""
    base, sep, tail = name.rpartition("_")
    return base if sep and tail.isdecimal() else name


def broadcast_dims(*shapes: Sequence[IntLike]) -> list[DimExpr]:
    """NumPy broadcasting over dimension expressions."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[DimExpr] = []
    for i in range(ndim):
        dim: DimExpr | None = None
        for s in shapes:
            k = i - (ndim - len(s))
            if k < 0:
                continue
            d = DimExpr.wrap(s[k])
            if dim is None or (dim.is_constant() and dim.get_constant_value() == 1):
                dim = d
            elif d.is_constant() and d.get_constant_value() == 1:
                continue
            elif dim.is_constant() and d.is_constant():
                if dim.get_constant_value() != d.get_constant_value():
                    raise PluginInterfaceError(
                        f"shapes {[list(map(str, x)) for x in shapes]} do not broadcast")
            elif not dim.same_as(d):
                dim = dim.max(d)
        out.append(dim if dim is not None else DimExpr.const(1))
    return out


@functools.cache
def _numbers() -> tuple[type, ...]:
    """The types an int/float/bool attribute accepts (NumPy's scalars too; NumPy imported
    when an attribute is first checked, not when the plugin API is)."""
    import numpy as np

    return (int, float, np.integer, np.floating, np.bool_)


def _kind(default: Any) -> tuple[str, tuple[type, ...]] | None:
    """What a value must be, judged by the attribute's default: (described, accepted)."""
    if isinstance(default, bool):
        return "a bool (0 or 1)", _numbers()
    if isinstance(default, (int, float)):
        return ("a float" if isinstance(default, float) else "an int"), _numbers()
    if isinstance(default, str):
        return "a string", (str,)
    return None


def _check(plugin: str, name: str, default: Any, value: Any) -> None:
    """Raise if ``value`` cannot be what the attribute's default says it is."""
    if isinstance(default, tuple):
        items = value if isinstance(value, tuple) else (value,)
        kinds = [k for k in map(_kind, default) if k is not None]
        if not kinds or len({accepted for _, accepted in kinds}) != 1:
            return
        what, accepted = kinds[0]
        bad = [v for v in items if not isinstance(v, accepted)]
        if bad:
            raise PluginInterfaceError(
                f"{plugin}: attribute {name!r} must be {what} or a list of them (its default "
                f"is {default!r}), got {type(bad[0]).__name__} {bad[0]!r}; fix the model's "
                "attribute")
        return
    kind = _kind(default)
    if kind is not None and not isinstance(value, kind[1]):
        raise PluginInterfaceError(
            f"{plugin}: attribute {name!r} must be {kind[0]} (its default is {default!r}), got "
            f"{type(value).__name__} {value!r:.80}; fix the model's attribute")


@functools.cache
def _compute_input_count(cls: type[OnnxPlugin]) -> tuple[int, int | None] | None:
    """The input counts ``compute`` can be called with, as ``enqueue`` calls it: inputs
    positionally, attributes (and ``out``) by keyword. None where there is no ``compute``."""
    raw = inspect.getattr_static(cls, "compute", None)
    if raw is None:
        return None
    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if not isinstance(raw, staticmethod):
        params = params[1:]  # self (or cls)
    keywords = {"out", *cls.attributes}
    lo = hi = 0
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return lo, None
        if p.kind not in (inspect.Parameter.POSITIONAL_ONLY,
                          inspect.Parameter.POSITIONAL_OR_KEYWORD) or p.name in keywords:
            break
        hi += 1
        if p.default is inspect.Parameter.empty:
            lo = hi
    return lo, hi


def _coerce(plugin: str, name: str, default: Any, value: Any) -> Any:
    """A field's value as the attribute's default types it, checked first (a string given
    for a float attribute is a creation error naming the attribute, not a failure later)."""
    import numpy as np
    if default is REQUIRED or default is None or isinstance(value, np.ndarray):
        return value
    _check(plugin, name, default, value)
    if isinstance(default, bool):
        return bool(value)
    number = (int, float, np.integer, np.floating, np.bool_)
    if isinstance(default, float) and isinstance(value, number):
        return float(value)
    if isinstance(default, int) and isinstance(value, number):
        return int(value)
    if isinstance(default, tuple) and not isinstance(value, tuple):
        return (value,)
    return value


class OnnxPlugin(IPluginV2DynamicExt, EveryCapability):
    """An IPluginV2DynamicExt for one ONNX operator, configured by ONNX attributes.

    It carries every optional capability interface with its default ("nothing to do"), so a
    subclass declares an ability by overriding its method: ``output_values`` (value
    inference), ``fusable``/``fuse``, ``pack_constants``, ``get_tactics``/``set_tactic``,
    ``data_dependent``/``compute`` returning outputs, ``in_place_inputs``, ``graph_safe``.
    The operator's schema (attributes, opsets, shape/type/value inference) usually comes
    from :mod:`mini_infer_core.ops`; a device package adds the kernel (``compute``).
    """

    #: ONNX operator type; defaults to the class name without a ``_<opset>`` suffix
    #: (``Clip_11`` implements ``Clip``)
    op_type: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    #: attribute name -> default value (or REQUIRED); the single place defaults live
    attributes: ClassVar[dict[str, Any]] = {}
    #: fields besides the ONNX attributes that the plugin accepts and keeps through clone
    #: and serialize (names ``__like_this__``): what the importer tells it
    #: (``__num_outputs__``) and what it records at build time (``record``)
    hidden_fields: ClassVar[tuple[str, ...]] = ()
    #: number of outputs (override ``num_outputs`` for a count that depends on attributes)
    n_outputs: ClassVar[int] = 1
    #: how many inputs a node may give it: at least ``min_inputs``, at most ``max_inputs``
    #: (None: any number); those past ``min_inputs`` are optional and an absent one arrives
    #: as None. Checked at build time (``input_count``). Left undeclared (``min_inputs``
    #: None), an operator schema takes the counts from onnx.defs and any other plugin from
    #: the positional parameters of its ``compute``.
    min_inputs: ClassVar[int | None] = None
    max_inputs: ClassVar[int | None] = None
    #: input dtypes accepted (None: any)
    dtypes: ClassVar[tuple[DataType, ...] | None] = None
    #: the kernel: ``compute(*inputs, out=..., **attributes)`` (declared, not defined, so
    #: subclasses may name their inputs and attributes precisely). A ``data_dependent``
    #: plugin's ``compute`` is called WITHOUT ``out`` and returns its output(s).
    compute: Callable[..., Any]
    #: ONNX opset range this kernel implements (max None: up to the newest)
    min_opset: ClassVar[int] = 1
    max_opset: ClassVar[int | None] = None
    #: first byte(s) of the serialized form: a package's layout tag, checked when read back
    format_tag: ClassVar[bytes] = b""
    #: the distribution named in errors about this plugin's serialized data
    package: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if not cls.__dict__.get("op_type"):
            cls.op_type = _unversioned(cls.__name__)
        if not cls.__dict__.get("plugin_type"):
            cls.plugin_type = cls.op_type

    def __init__(self, name: str = "", **attrs: Any) -> None:
        self.name = name
        #: the ``hidden_fields`` given (absent ones are simply unknown)
        self.hidden: dict[str, Any] = {k: attrs.pop(k) for k in list(attrs)
                                       if k in self.hidden_fields}
        if attrs.pop(_DATA_DEPENDENT, 0):
            self.data_dependent = True
        unknown = sorted(set(attrs) - set(self.attributes))
        if unknown:
            raise PluginInterfaceError(
                f"{self.plugin_type}: attribute(s) {unknown} not understood "
                f"(known: {sorted(self.attributes)})")
        values: dict[str, Any] = {}
        for key, default in self.attributes.items():
            if key in attrs and attrs[key] is not None:
                values[key] = _coerce(self.plugin_type, key, default, attrs[key])
            elif default is REQUIRED:
                raise PluginInterfaceError(
                    f"{self.plugin_type}: required attribute {key!r} is missing")
            else:
                values[key] = default
        self.attrs: dict[str, Any] = values
        self.input_descs: list[PluginTensorDesc | None] = []
        self.output_descs: list[PluginTensorDesc] = []
        self.workspace: Any = None
        self.setup()

    def setup(self) -> None:
        """Hook for subclasses: derive state from ``self.attrs`` once."""

    def record(self, key: str, value: Any | None) -> None:
        """Remember (or, with None, forget) a build-time fact in a declared hidden field."""
        if key not in self.hidden_fields:
            raise PluginInterfaceError(f"{self.plugin_type}: {key!r} is not one of its "
                                       f"hidden fields {self.hidden_fields}")
        if value is None:
            self.hidden.pop(key, None)
        else:  # as decoding gives it back: sequences as tuples
            self.hidden[key] = tuple(value) if isinstance(value, list) else value

    def mark_data_dependent(self, dynamic: bool = True) -> bool:
        """Record that this instance's output shapes are known only at run time (its shapes
        read input values that are computed at run time); kept through clone and serialize.
        Returns ``dynamic``."""
        self.data_dependent = dynamic or type(self).data_dependent
        return dynamic

    # -- shapes and types -----------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        return self.n_outputs

    def input_count(self) -> tuple[int, int | None] | None:
        """The declared ``(min_inputs, max_inputs)``, else what ``compute`` takes."""
        if self.min_inputs is not None:
            return self.min_inputs, self.max_inputs
        return _compute_input_count(type(self))

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Sequence[Sequence[IntLike]]:
        """Shapes of every output. Default: one output shaped as the first input."""
        return [list(inputs[0])] * self.num_outputs

    def output_types(self, input_types: Sequence[DataType]) -> Sequence[DataType]:
        return [input_types[0]] * self.num_outputs

    def dynamic_dim(self, label: str) -> DimExpr:
        """A dimension known only once this node has run (see ``data_dependent``)."""
        return DimExpr.sym(f"{self.name}#{label}")

    def get_output_dimensions(self, index: int, inputs: Sequence[DimsExprs],
                              expr_builder: ExprBuilder) -> DimsExprs:
        return DimsExprs(self.output_shapes(inputs)[index])

    def get_output_data_type(self, index: int, input_types: Sequence[DataType]) -> DataType:
        return self.output_types(input_types)[index]

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        desc = in_out[pos]
        if desc.format is not TensorFormat.LINEAR:
            return False
        return self.dtypes is None or pos >= num_inputs or desc.dtype in self.dtypes

    def configure_plugin(self, inputs: Sequence[DynamicPluginTensorDesc],  # type: ignore[override]
                         outputs: Sequence[DynamicPluginTensorDesc]) -> None:
        self.input_descs = [d.desc if d is not None else None for d in inputs]
        self.output_descs = [d.desc for d in outputs]

    # -- execution ------------------------------------------------------------------------
    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        self.workspace = workspace
        out = outputs[0] if len(outputs) == 1 else tuple(outputs)
        self.compute(*inputs, out=out, **self.attrs)

    def enqueue_dynamic(self, inputs: Sequence[Any], workspace: Any, stream: Any
                        ) -> list[Any]:
        """For ``data_dependent`` plugins: compute and return the outputs."""
        self.workspace = workspace
        result = self.compute(*inputs, **self.attrs)
        return list(result) if isinstance(result, (tuple, list)) else [result]

    # -- serialization --------------------------------------------------------------------
    def fields_to_serialize(self) -> dict[str, Any]:
        """What ``serialize`` writes and ``clone`` passes on: the attributes that are set,
        the hidden fields, and whether this instance turned data-dependent."""
        fields = {k: v for k, v in self.attrs.items() if v is not None}
        fields.update(self.hidden)
        if self.data_dependent and not type(self).data_dependent:
            fields[_DATA_DEPENDENT] = 1
        return fields

    def serialize(self) -> bytes:
        return self.format_tag + encode_fields(fields_from_values(self.fields_to_serialize()))

    def clone(self) -> IPluginV2:
        twin = type(self)(self.name, **self.fields_to_serialize())
        twin.plugin_namespace = self.plugin_namespace
        return twin

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.attrs})"


class UnaryPlugin(OnnxPlugin):
    """One input, one output of the same shape and type."""


class BroadcastPlugin(OnnxPlugin):
    """Elementwise over inputs broadcast together (Add, Mul, Sum, ...)."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Sequence[Sequence[IntLike]]:
        return [broadcast_dims(*inputs)]


class OnnxPluginCreator(IPluginCreator):
    """The creator for an :class:`OnnxPlugin` subclass; its fields are the ONNX attributes."""

    def __init__(self, plugin_cls: type[OnnxPlugin], *, namespace: str,
                 devices: tuple[str, ...] = ("cpu",), priority: int = 0,
                 min_opset: int | None = None, max_opset: int | None = None) -> None:
        if not any(callable(c.__dict__.get("compute")) for c in plugin_cls.__mro__) and \
                plugin_cls.enqueue is OnnxPlugin.enqueue:
            raise PluginInterfaceError(
                f"{plugin_cls.__module__}.{plugin_cls.__name__} defines neither compute() nor "
                "enqueue()")
        self.plugin_cls = plugin_cls
        self.name = plugin_cls.plugin_type
        self.plugin_version = plugin_cls.plugin_version
        self.plugin_namespace = namespace
        self.domain = plugin_cls.domain
        self.op_type = plugin_cls.op_type
        self.devices = tuple(devices)
        self.priority = priority
        self.min_opset = plugin_cls.min_opset if min_opset is None else min_opset
        self.max_opset = plugin_cls.max_opset if max_opset is None else max_opset

    @property
    def field_names(self) -> tuple[str, ...]:
        """The ONNX attributes, plus any extra fields the class accepts (``hidden_fields``,
        e.g. ``__num_outputs__``, which the builder then provides)."""
        return (*self.plugin_cls.attributes, *self.plugin_cls.hidden_fields)

    def create_plugin(self, name: str,
                      fields: PluginFieldCollection | Mapping[str, Any]) -> IPluginV2:
        """A plugin from its fields: a PluginFieldCollection, or a mapping of field names to
        values (``{"alpha": 2.0}``)."""
        fields = as_field_collection(fields, f"{self.plugin_namespace}::{self.name} "
                                             "create_plugin")
        plugin = self.plugin_cls(name, **fields.values_dict())
        plugin.plugin_namespace = self.plugin_namespace
        return plugin

    def deserialize_plugin(self, name: str, data: bytes) -> IPluginV2:
        """Read what ``OnnxPlugin.serialize`` wrote: the class's ``format_tag``, then its
        fields. A wrong tag means another package or layout wrote the bytes."""
        cls = self.plugin_cls
        who = f"{self.plugin_namespace}::{self.name}"
        package = f" ({cls.package})" if cls.package else ""
        tag = cls.format_tag
        if data[:len(tag)] != tag:
            raise PluginInterfaceError(
                f"{who}: serialized data has format tag {data[:max(len(tag), 1)]!r}, this "
                f"plugin{package} reads {tag!r}; the engine was written by another plugin "
                "package or version: rebuild it with the installed one")
        try:
            fields = decode_fields(data[len(tag):])
        except ValueError as exc:
            raise PluginInterfaceError(
                f"{who}: corrupt serialized data{package}: {exc}") from exc
        return self.create_plugin(name, fields)

    def __repr__(self) -> str:
        return (f"OnnxPluginCreator({self.domain or 'ai.onnx'}::{self.op_type} "
                f"v{self.plugin_version} ns={self.plugin_namespace!r} devices={self.devices})")
