"""The base of every operator schema: attributes from onnx's own definitions, opset ranges,
and the machinery of shapes that read input values.

A schema is an :class:`~mini_infer_core.plugin.OnnxPlugin` without a kernel: it knows the
operator's attributes and defaults, the opsets it covers and how to infer output shapes,
types and build-time values. A device package makes it a plugin by adding ``compute``::

    class Relu(CpuPlugin, ops.activation.Relu):
        def compute(self, x, *, out, **_):
            np.maximum(x, 0, out=out)

Attributes and their defaults come from ``onnx.defs`` (every version of the operator the
schema's opset range covers; the newest version's default wins), so a schema declares them
only to differ from ONNX (``attributes``) or to add fields of its own (``extra_attributes``).
The opset range starts no earlier than the operator exists. What the schemas read from
``onnx.defs`` is recorded in a generated table (:mod:`._memo`), so that importing them (to
list plugins or load an engine file) does not import onnx.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import PluginInterfaceError
from ..plugin import (
    REQUIRED,
    BroadcastPlugin,
    DataType,
    DimExpr,
    DimsExprs,
    OnnxPlugin,
    UnaryPlugin,
)
from ..plugin.shapes import FLOAT_TYPES, absent, input_values
from . import _memo

if TYPE_CHECKING:  # onnx is imported only for an answer the generated table lacks
    import onnx.defs

__all__ = ["FLOATS", "BroadcastOp", "Op", "UnaryOp", "ValueOp", "onnx_attributes",
           "onnx_input_count", "onnx_since"]

#: the float types of most float operators: activations, pooling, normalizations (bfloat16
#: from opset 13/14)
FLOATS = (*FLOAT_TYPES, DataType.BFLOAT16)

_NEWEST = 10**6


def _domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


@functools.cache
def _versions(op_type: str, domain: str) -> tuple[onnx.defs.OpSchema, ...]:
    """Every version of an operator's ONNX schema, oldest first (none: not an ONNX op)."""
    import onnx.defs

    found: list[onnx.defs.OpSchema] = []
    upto = _NEWEST
    while upto >= 1:
        try:
            schema = onnx.defs.get_schema(op_type, upto, _domain(domain))
        except onnx.defs.SchemaError:
            break
        found.append(schema)
        upto = schema.since_version - 1
    return tuple(reversed(found))


def _default(attr: onnx.defs.OpSchema.Attribute) -> Any:
    import onnx
    from onnx import helper, numpy_helper

    proto = attr.default_value
    if proto is None or proto.type == onnx.AttributeProto.UNDEFINED:
        return REQUIRED if attr.required else None
    value = helper.get_attribute_value(proto)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return tuple(v.decode() if isinstance(v, bytes) else v for v in value)
    return value


def _onnx_since(op_type: str, domain: str) -> int | None:
    versions = _versions(op_type, domain)
    return int(versions[0].since_version) if versions else None


def _onnx_attributes(op_type: str, domain: str, min_opset: int,
                     max_opset: int | None) -> dict[str, Any] | None:
    versions = _versions(op_type, domain)
    if not versions:
        return None
    hi = _NEWEST if max_opset is None else max_opset
    out: dict[str, Any] = {}
    for k, schema in enumerate(versions):
        until = versions[k + 1].since_version - 1 if k + 1 < len(versions) else _NEWEST
        if until < min_opset or schema.since_version > hi:
            continue
        for name, attr in schema.attributes.items():
            out[name] = _default(attr)
    return out


@functools.cache
def onnx_since(op_type: str, domain: str = "") -> int | None:
    """The first opset of ``domain`` that has the operator (None: onnx does not define it)."""
    domain = _domain(domain)
    return _memo.since(op_type, domain, lambda: _onnx_since(op_type, domain))


@functools.cache
def onnx_attributes(op_type: str, domain: str = "", min_opset: int = 1,
                    max_opset: int | None = None) -> dict[str, Any] | None:
    """The attributes of every version of the operator in ``[min_opset, max_opset]``, each
    with its default (``REQUIRED`` where the model must give it, None where it is optional
    without a default); where versions differ, the newest wins. None: onnx does not define
    the operator."""
    domain = _domain(domain)
    return _memo.attributes(  # type: ignore[no-any-return]
        (op_type, domain, min_opset, max_opset),
        lambda: _onnx_attributes(op_type, domain, min_opset, max_opset))


@functools.cache
def onnx_input_count(op_type: str, domain: str = "", min_opset: int = 1,
                     max_opset: int | None = None) -> tuple[int, int | None] | None:
    """The fewest and most inputs (None: any number) of every version of the operator in
    ``[min_opset, max_opset]``: the fewest any of them needs, the most any of them takes.
    None: onnx does not define the operator."""
    domain = _domain(domain)
    return _memo.input_counts(  # type: ignore[no-any-return]
        (op_type, domain, min_opset, max_opset),
        lambda: _onnx_input_count(op_type, domain, min_opset, max_opset))


def _onnx_input_count(op_type: str, domain: str, min_opset: int,
                      max_opset: int | None) -> tuple[int, int | None] | None:
    versions = _versions(op_type, domain)
    if not versions:
        return None
    hi = _NEWEST if max_opset is None else max_opset
    counts = []
    for k, schema in enumerate(versions):
        until = versions[k + 1].since_version - 1 if k + 1 < len(versions) else _NEWEST
        if until >= min_opset and schema.since_version <= hi:
            counts.append((schema.min_input, schema.max_input))
    if not counts:
        return None
    most = max(c[1] for c in counts)
    return min(c[0] for c in counts), None if most >= 2**31 - 1 else most


class Op(OnnxPlugin):
    """The schema of one ONNX operator (or of a family, in a private base class)."""

    #: fields of this project's own, beside the ONNX attributes (build-time choices a plugin
    #: records, e.g. a fused ``__relu__``), with their defaults
    extra_attributes: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        since = onnx_since(cls.op_type, cls.domain)
        if since is None:
            return  # a family's private base, or an operator onnx does not define
        if cls.min_opset < since:
            cls.min_opset = since
        # Op in c.__mro__, not issubclass: the ABC machinery's subclass check costs ~0.1 ms a
        # class, and a kernel module defines hundreds of classes while it is imported
        declared = any("attributes" in c.__dict__ for c in cls.__mro__
                       if c is not Op and Op in c.__mro__)
        if not declared:
            derived = onnx_attributes(cls.op_type, cls.domain, cls.min_opset, cls.max_opset)
            cls.attributes = {**(derived or {}), **cls.extra_attributes}

    def input_count(self) -> tuple[int, int | None] | None:
        """The declared ``(min_inputs, max_inputs)``, else onnx's counts for the operator over
        the schema's opset range, else what ``compute`` takes."""
        if self.min_inputs is None:
            counts = onnx_input_count(self.op_type, self.domain, self.min_opset,
                                      self.max_opset)
            if counts is not None:
                return counts
        return super().input_count()


class UnaryOp(Op, UnaryPlugin):
    """One input, one output of the same shape and type."""


class BroadcastOp(Op, BroadcastPlugin):
    """Elementwise over inputs broadcast together."""


class ValueOp(Op):
    """A schema whose output shapes read the *values* of some inputs (axes, pads, K...).

    Those values arrive in ``DimsExprs.values`` when they are known at build time
    (constants, or computed from shapes only); the output shapes are then exact. When they
    are not, instead of refusing the model the plugin turns data-dependent
    (``runtime()``): the dimensions it cannot tell become fresh symbols
    (``unknown_dims``) and its kernel returns its outputs. An input also in
    ``shape_inputs`` stays required at build time.
    """

    #: inputs whose values the output shapes need
    value_inputs: ClassVar[tuple[int, ...]] = ()

    def values(self, inputs: Sequence[DimsExprs | None], index: int
               ) -> tuple[DimExpr, ...] | None:
        """The build-time values of input ``index`` (``()`` for an empty one), else None."""
        if absent(inputs, index):
            return None
        vals = input_values(inputs, index)
        if vals is None and index in self.shape_inputs:
            raise PluginInterfaceError(
                f"{self.op_type}: the values of input {index} must be known when the engine "
                "is built (a constant or computed from shapes only)")
        return vals

    def ints(self, inputs: Sequence[DimsExprs | None], index: int) -> list[int] | None:
        """The values of input ``index`` when they are all build-time constants, else None."""
        vals = self.values(inputs, index)
        if vals is None or not all(v.is_constant() for v in vals):
            return None
        return [v.get_constant_value() for v in vals]

    def runtime(self, dynamic: bool = True) -> bool:
        """Record whether the output shapes are known only at run time; returns ``dynamic``."""
        return self.mark_data_dependent(dynamic)

    def unknown_dims(self, rank: int, label: str = "d") -> list[DimExpr]:
        """``rank`` dimensions known only once the node has run."""
        return [self.dynamic_dim(f"{label}{i}") for i in range(rank)]

