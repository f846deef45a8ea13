"""Sequences and optionals: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase,
SequenceAt, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
OptionalHasElement, OptionalGetElement.

A sequence (a Python list of arrays at run time) or an optional (None or its value) is no
tensor: its shape and element type here are its elements' (``plugin/_kinds.py``), and what
wraps them is its kind (``output_kinds``, the ``IValueKinds`` capability). The elements of a
sequence may differ in shape, so an element dimension is a constant only where every element
has it, and a symbol of the node's own otherwise; where not even the rank is known (an empty
sequence, elements of mixed ranks) the kind is not ``ranked``. Such values are made and
read by data-dependent nodes only: their kernels return their outputs.

Where a sequence's rank is unknown and a tensor of known rank joins it (SequenceInsert into
SequenceEmpty's result), the sequence takes that rank: a tensor taken out of it later (at,
concatenated) is checked when it is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import PluginInterfaceError
from ..plugin import TENSOR, DataType, DimExpr, DimsExprs, IntLike, ValueKind, ValueSpec
from ..plugin._kinds import parse_type_string
from ..plugin.shapes import norm_axis
from ._schema import Op
from .control_flow import ControlFlowBase, outer_specs

__all__ = ["SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase",
           "SequenceAt", "SequenceLength", "SplitToSequence", "ConcatFromSequence",
           "SequenceMap", "Optional", "OptionalHasElement", "OptionalGetElement"]

SEQUENCE = ValueKind(("sequence",))

Dims = list[IntLike]


class SequenceOp(Op):
    """A schema that takes or gives sequences or optionals: data-dependent, with the kinds
    of its inputs kept for its shape inference (``output_kinds`` is asked first)."""

    data_dependent = True

    def setup(self) -> None:
        self.in_specs: list[ValueSpec | None] = []

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        self.in_specs = list(inputs)
        return self.kinds(inputs)

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        return [SEQUENCE]

    def in_kind(self, index: int) -> ValueKind:
        spec = self.in_specs[index] if index < len(self.in_specs) else None
        return spec[0] if spec is not None else TENSOR

    def free(self, dims: Sequence[IntLike], label: str = "elem") -> Dims:
        """``dims`` with every dimension that is no constant a symbol of this node's."""
        return [d if DimExpr.wrap(d).is_constant() else self.dynamic_dim(f"{label}_d{i}")
                for i, d in enumerate(dims)]

    def merge(self, a: Dims | None, b: Dims | None) -> Dims | None:
        """The dimensions elements of shapes ``a`` and ``b`` share (None: rank unknown,
        or ranks that differ)."""
        if a is None or b is None or len(a) != len(b):
            return None
        out: Dims = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            dx, dy = DimExpr.wrap(x), DimExpr.wrap(y)
            same = dx.is_constant() and dy.is_constant() and \
                dx.get_constant_value() == dy.get_constant_value()
            out.append(dx if same else self.dynamic_dim(f"elem_d{i}"))
        return out

    def element_dims(self, index: int, inputs: Sequence[DimsExprs | None]) -> Dims | None:
        """The dimensions of input ``index``'s elements (None: rank unknown)."""
        dims = inputs[index]
        if dims is None or not self.in_kind(index).ranked:
            return None
        return list(dims)

    def taken_out(self, index: int, inputs: Sequence[DimsExprs | None]) -> Dims:
        """The dimensions of a tensor taken out of input ``index`` (an element)."""
        dims = self.element_dims(index, inputs)
        if dims is None:
            raise PluginInterfaceError(
                f"{self.op_type} {self.name!r}: the rank of the elements of its input "
                f"{index} is not known when the engine is built (an empty sequence, or "
                "elements of several ranks); declare the element shape in the model")
        return self.free(dims, "out")

    def ranked(self, kind: ValueKind, dims: Dims | None) -> tuple[ValueKind, Dims]:
        """``kind`` with its rank known or not, and the dimensions to give."""
        if dims is None:
            return kind.with_rank(False), []
        return kind.with_rank(True), dims


class SequenceEmpty(SequenceOp):
    """An empty sequence of ``dtype`` (float by default); its elements' rank is unknown."""

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        return [SEQUENCE.with_rank(False)]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        return [[]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        dtype = self.attrs.get("dtype")
        return [DataType.FLOAT if dtype is None else DataType(int(dtype))]


class SequenceConstruct(SequenceOp):
    """The sequence of its inputs (tensors of one element type)."""

    input_kinds = ("tensor",)

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        ranks = {s[2] for s in inputs if s is not None}
        return [SEQUENCE.with_rank(len(ranks) == 1)]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        dims: Dims | None = list(inputs[0])
        for d in inputs[1:]:
            dims = self.merge(dims, list(d))
        return [dims or []]


class SequenceInsert(SequenceOp):
    """The sequence with ``tensor`` inserted at ``position`` (at the end by default)."""

    input_kinds = ("sequence", "tensor", "tensor")

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        seq, tensor = inputs[0], inputs[1]
        assert seq is not None and tensor is not None
        return [seq[0].with_rank(seq[2] is None or seq[2] == tensor[2])]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        elements = self.element_dims(0, inputs)
        if elements is None:  # rank unknown: it takes the tensor's (see module doc)
            return [self.free([DimExpr.sym("?")] * len(inputs[1]))]
        return [self.merge(elements, list(inputs[1])) or []]


class SequenceErase(SequenceOp):
    """The sequence without the element at ``position`` (the last by default)."""

    input_kinds = ("sequence", "tensor")

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        assert inputs[0] is not None
        return [inputs[0][0]]


class SequenceAt(SequenceOp):
    """The element at ``position`` (negative: from the end)."""

    input_kinds = ("sequence", "tensor")

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        return [TENSOR]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        return [self.taken_out(0, inputs)]


class _ScalarOp(SequenceOp):
    """A schema whose one output is a tensor scalar of the type ``output_type``."""

    output_type: ClassVar[DataType]

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        return [TENSOR]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        return [[]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.output_type]


class SequenceLength(_ScalarOp):
    """The number of elements, an int64 scalar."""

    input_kinds = ("sequence",)
    output_type = DataType.INT64


class SplitToSequence(SequenceOp):
    """``input`` split along ``axis`` into a sequence: into pieces of the sizes ``split``
    gives (a scalar: pieces of that size, the last one smaller), or of size 1 without it
    (``keepdims=0`` then drops the axis)."""

    input_kinds = ("tensor",)

    def axis(self, rank: int) -> int:
        return norm_axis(int(self.attrs.get("axis") or 0), rank, "SplitToSequence axis")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        dims: Dims = list(inputs[0])
        a = self.axis(len(dims))
        if len(inputs) < 2 or inputs[1] is None:
            if not int(self.attrs.get("keepdims", 1)):
                return [dims[:a] + dims[a + 1:]]
            return [dims[:a] + [1] + dims[a + 1:]]
        return [dims[:a] + [self.dynamic_dim("elem_split")] + dims[a + 1:]]


class ConcatFromSequence(SequenceOp):
    """The elements concatenated along ``axis``, or stacked along a new one (``new_axis``)."""

    input_kinds = ("sequence",)

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        return [TENSOR]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        dims = self.taken_out(0, inputs)
        new = bool(self.attrs.get("new_axis", 0))
        a = norm_axis(int(self.attrs["axis"]), len(dims) + int(new),
                      "ConcatFromSequence axis")
        joined = self.dynamic_dim("joined")
        return [dims[:a] + [joined] + dims[a + int(not new):]]


class Optional(SequenceOp):
    """An optional holding ``input``, or an empty one of the type the ``type`` attribute
    gives."""

    input_kinds = ("tensor|sequence",)

    def setup(self) -> None:
        super().setup()
        self.declared: tuple[ValueKind, DataType | None, list[Any] | None] | None = None
        if self.attrs.get("type"):
            try:
                self.declared = parse_type_string(str(self.attrs["type"]))
            except ValueError as exc:
                raise PluginInterfaceError(f"Optional {self.name!r}: {exc}") from exc

    def _empty(self, inputs: Sequence[Any]) -> bool:
        return not inputs or inputs[0] is None

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        if not self._empty(inputs):
            assert inputs[0] is not None
            return [inputs[0][0].wrap("optional")]
        if self.declared is None:
            raise PluginInterfaceError(f"Optional {self.name!r}: no input and no 'type' "
                                       "attribute: the optional's type is unknown")
        return [self.declared[0].wrap("optional")]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        if not self._empty(inputs):
            return [list(inputs[0])]
        assert self.declared is not None
        dims = self.declared[2]
        return [self.free([d if isinstance(d, int) else DimExpr.sym("?") for d in dims or []])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        if not self._empty(self.in_specs):
            return [input_types[0]]
        assert self.declared is not None
        if self.declared[1] is None:
            raise PluginInterfaceError(f"Optional {self.name!r}: its 'type' has no element "
                                       "type")
        return [self.declared[1]]


class OptionalHasElement(_ScalarOp):
    """Whether the optional holds a value (a tensor or sequence given: true; no input:
    false), a bool scalar."""

    input_kinds = ("any",)
    output_type = DataType.BOOL


class OptionalGetElement(SequenceOp):
    """The optional's value (an error when it is empty); a tensor or sequence given is
    returned as it is."""

    input_kinds = ("any",)

    def kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        kind = inputs[0][0] if inputs and inputs[0] is not None else TENSOR
        return [kind.inner() if kind.outer == "optional" else kind]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        inner = self.kinds(self.in_specs)[0]
        if inner.is_tensor:
            return [self.taken_out(0, inputs)]
        return [list(inputs[0]) if inner.ranked else []]


class SequenceMap(ControlFlowBase):
    """Runs ``body`` once per element of ``input_sequence``; each additional input is a
    sequence (its element at the same index) or a tensor (the same each time). Every body
    output becomes a sequence."""

    bodies = ("body",)
    input_kinds = ("sequence", "any")

    @property
    def num_outputs(self) -> int:
        return self.body_outputs("body")

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        own = len(inputs) - len(self.outer_scope)
        elements: list[ValueSpec] = []
        for spec in inputs[:own]:
            if spec is None:
                raise PluginInterfaceError(f"SequenceMap {self.name!r}: an input is absent")
            kind, dtype, rank = spec
            elements.append((kind.inner(), dtype, rank) if kind.outer == "sequence" else spec)
        outer = outer_specs(inputs, len(self.outer_scope))
        got = self.infer_body("body", [*elements, *outer]) if outer is not None else None
        self.values = {}
        for k in range(self.num_outputs):
            kind, dtype, rank = self.declared("body", k)
            declared = (kind.wrap("sequence").with_rank(rank is not None), dtype, rank)
            inferred = got[k] if got else None
            if inferred is not None:
                inferred = (inferred[0].wrap("sequence").with_rank(inferred[2] is not None),
                            inferred[1], inferred[2])
            self.values[k] = self.value_spec(declared, [inferred])
        return self.kinds(self.num_outputs)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[Dims]:
        return self.value_outputs([0] * self.num_outputs)

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.value_type(k, DataType.FLOAT) for k in range(self.num_outputs)]
