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

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PluginInterfaceError
from ._dims import DimExpr, DimsExprs, ExprBuilder, IntLike
from ._fields import PluginFieldCollection, decode_fields, encode_fields, fields_from_values
from ._fusion import Fusion
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


def _coerce(name: str, default: Any, value: Any) -> Any:
    if default is REQUIRED or default is None or isinstance(value, np.ndarray):
        return value
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, float) and isinstance(value, (int, float)):
        return float(value)
    if isinstance(default, int) and isinstance(value, (int, float)):
        return int(value)
    if isinstance(default, tuple) and not isinstance(value, tuple):
        return (value,)
    return value


class OnnxPlugin(IPluginV2DynamicExt):
    """An IPluginV2DynamicExt for one ONNX operator, configured by ONNX attributes."""

    #: ONNX operator type; defaults to the class name
    op_type: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    #: attribute name -> default value (or REQUIRED); the single place defaults live
    attributes: ClassVar[dict[str, Any]] = {}
    #: number of outputs (override ``num_outputs`` for a count that depends on attributes)
    n_outputs: ClassVar[int] = 1
    #: input dtypes accepted (None: any)
    dtypes: ClassVar[tuple[DataType, ...] | None] = None
    #: the kernel: ``compute(*inputs, out=..., **attributes)`` (declared, not defined, so
    #: subclasses may name their inputs and attributes precisely)
    compute: Callable[..., Any]
    #: True when output shapes depend on input *values* known only at run time (NonZero,
    #: Unique, If, Loop): ``output_shapes`` uses ``self.dynamic_dim(label)`` for the unknown
    #: dimensions, and ``compute(*inputs, **attributes)`` is called WITHOUT ``out`` and returns
    #: the output array (a tuple of arrays for several outputs).
    data_dependent: ClassVar[bool] = False
    #: operators this plugin can absorb when they consume its output (see ``fuse``)
    fusable: ClassVar[frozenset[str]] = frozenset()
    #: ONNX opset range this kernel implements (max None: up to the newest)
    min_opset: ClassVar[int] = 1
    max_opset: ClassVar[int | None] = None

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if not cls.__dict__.get("op_type"):
            cls.op_type = cls.__name__
        if not cls.__dict__.get("plugin_type"):
            cls.plugin_type = cls.op_type

    def __init__(self, name: str = "", **attrs: Any) -> None:
        self.name = name
        unknown = sorted(set(attrs) - set(self.attributes))
        if unknown:
            raise PluginInterfaceError(
                f"{self.plugin_type}: attribute(s) {unknown} not understood "
                f"(known: {sorted(self.attributes)})")
        values: dict[str, Any] = {}
        for key, default in self.attributes.items():
            if key in attrs and attrs[key] is not None:
                values[key] = _coerce(key, default, attrs[key])
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

    # -- shapes and types -----------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        return self.n_outputs

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Sequence[Sequence[IntLike]]:
        """Shapes of every output. Default: one output shaped as the first input."""
        return [list(inputs[0])] * self.num_outputs

    def output_types(self, input_types: Sequence[DataType]) -> Sequence[DataType]:
        return [input_types[0]] * self.num_outputs

    def output_values(self, inputs: Sequence[DimsExprs]
                      ) -> Sequence[Sequence[IntLike] | None] | None:
        """Build-time *values* of small integer outputs (flattened), for shape computations.

        Shape returns its input's dims, Gather/Concat/Slice/Unsqueeze/Cast/Add/Mul... combine
        ``inputs[i].values``. Return None (or None per output) when unknown. Values that are
        all constants let the builder fold the node without running it.
        """
        return None

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[DimsExprs | None], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        """Absorb the consumer (an ``op_type`` in ``fusable``) of this plugin's output, or
        return None. ``consumer_constants``/``own_constants`` hold the constant inputs' values
        (None for runtime inputs), ``consumer_dims`` the consumer's input shapes; ``position``
        is where this output enters the consumer. Record the fusion in ``self.attrs`` so it
        survives serialization."""
        return None

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
    def serialize(self) -> bytes:
        return encode_fields(fields_from_values(
            {k: v for k, v in self.attrs.items() if v is not None}))

    def clone(self) -> IPluginV2:
        twin = type(self)(self.name, **{k: v for k, v in self.attrs.items() if v is not None})
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
        if not callable(getattr(plugin_cls, "compute", None)) and \
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
        return (*self.plugin_cls.attributes, *getattr(self.plugin_cls, "hidden_fields", ()))

    def create_plugin(self, name: str, fields: PluginFieldCollection) -> IPluginV2:
        plugin = self.plugin_cls(name, **fields.values_dict())
        plugin.plugin_namespace = self.plugin_namespace
        return plugin

    def deserialize_plugin(self, name: str, data: bytes) -> IPluginV2:
        try:
            fields = decode_fields(data)
        except ValueError as exc:
            raise PluginInterfaceError(
                f"{self.plugin_namespace}::{self.name} cannot read its serialized data: {exc}"
            ) from exc
        return self.create_plugin(name, fields)

    def __repr__(self) -> str:
        return (f"OnnxPluginCreator({self.domain or 'ai.onnx'}::{self.op_type} "
                f"v{self.plugin_version} ns={self.plugin_namespace!r} devices={self.devices})")
