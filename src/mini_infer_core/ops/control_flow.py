"""If, Loop and Scan: attributes, opsets, and the output types and ranks their bodies declare.

The bodies are ``onnx.GraphProto`` attributes (serialized); the importer passes every value a
body reads from enclosing scopes as an extra input, named in the hidden ``__outer_scope__``
field, and the model's opsets in ``__opset_imports__``. Output shapes depend on what the
bodies compute, so the operators are ``data_dependent``: every output dimension is known only
once the node has run (the kernel runs the bodies and returns its outputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InputShapesRequired, PluginInterfaceError
from ..plugin import (
    TENSOR,
    DataType,
    DimsExprs,
    IntLike,
    IUsesSubgraphs,
    Subgraph,
    ValueKind,
    ValueSpec,
)
from ..plugin._kinds import kind_from_proto, type_proto
from ._schema import Op

if TYPE_CHECKING:
    import onnx

__all__ = ["If", "Loop", "Scan"]


def _graph(data: Any) -> onnx.GraphProto:
    import onnx

    graph = onnx.GraphProto()
    graph.ParseFromString(bytes(data))
    return graph


class ControlFlowBase(Op, IUsesSubgraphs):
    """An operator with subgraph bodies (``bodies``: the attributes that hold them).

    A body output that declares no element type or rank is inferred at build time: the body
    is built (through the attached subgraph factory) for the node's input kinds, types and
    ranks, and what it computes is written into the body's output declarations, so the
    engine file carries bodies that declare everything. Outputs that are sequences or
    optionals (``output_kinds``) take their element type and rank from what the body gives
    when it can be built for the node's inputs (``infer_body``), else from what the body
    declares."""

    data_dependent = True
    hidden_fields = ("__outer_scope__", "__opset_imports__", "__outer_constants__")
    bodies: ClassVar[tuple[str, ...]] = ()

    def setup(self) -> None:
        self.graphs = {b: _graph(self.attrs[b]) for b in self.bodies}
        #: the outputs that are no tensors: index -> (kind, element type, rank)
        self.values: dict[int, ValueSpec] = {}
        #: at build time, what the node's inputs are (``output_kinds``; None: not known)
        self.in_specs: list[ValueSpec | None] | None = None

    @property
    def outer_scope(self) -> list[str]:
        """The names of the extra inputs (values the bodies read from enclosing scopes)."""
        return list(self.hidden.get("__outer_scope__", ()))

    @property
    def opset_imports(self) -> str:
        """The model's opsets, ``domain:version`` joined by ``;``."""
        return str(self.hidden.get("__opset_imports__", ""))

    def input_count(self) -> tuple[int, int | None] | None:
        """The operator's own inputs, then one per outer-scope value."""
        counts = super().input_count()
        if counts is None:
            return None
        extra = len(self.outer_scope)
        return counts[0] + extra, None if counts[1] is None else counts[1] + extra

    @property
    def outer_constants(self) -> list[str]:
        """The outer-scope values that were build-time constants (built into the bodies)."""
        return list(self.hidden.get("__outer_constants__", ()))

    def make_body(self, body: str) -> Subgraph:
        """The body ``body`` as a subgraph, from the attached factory."""
        if self.subgraphs is None:
            raise PluginInterfaceError(
                f"{self.op_type} {self.name!r}: no subgraph factory is attached (make the "
                "plugin through mini-infer's builder or runtime)")
        return self.subgraphs(self.attrs[body], self.opset_imports, self.outer_scope,
                              label=f"{self.name}.{body}", constants=self.outer_constants)

    def split(self, inputs: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """The operator's own inputs and the outer-scope values after them."""
        k = len(inputs) - len(self.outer_scope)
        return list(inputs[:k]), list(inputs[k:])

    def body_inputs(self, body: str) -> int:
        return len(self.graphs[body].input)

    def body_outputs(self, body: str) -> int:
        return len(self.graphs[body].output)

    def _where(self, body: str, k: int) -> str:
        return f"{self.op_type} {self.name!r}: output {k} of {body}"

    def declared(self, body: str, k: int) -> ValueSpec:
        """The kind, element type and rank the body declares for its output ``k``."""
        o = self.graphs[body].output[k]
        if o.type.WhichOneof("value") is None:
            return TENSOR, None, None
        try:
            kind, dtype, dims = kind_from_proto(o.type)
        except ValueError as exc:
            raise PluginInterfaceError(f"{self._where(body, k)}: {exc}") from exc
        return kind, dtype, None if dims is None else len(dims)

    # -- what the bodies declare, inferred where they do not --------------------------------
    def formal_inputs(self, body: str, inputs: Sequence[ValueSpec]) -> list[ValueSpec]:
        """Kinds, element types and ranks of the body's own inputs, from the node's."""
        return []

    @staticmethod
    def _declared(o: onnx.ValueInfoProto) -> bool:
        """Whether a body output declares its element type and rank (a sequence, optional
        or map: its kind, the rest is ``output_kinds``' concern)."""
        which = o.type.WhichOneof("value")
        if which is not None and which != "tensor_type":
            return True
        tt = o.type.tensor_type
        return which == "tensor_type" and bool(tt.elem_type) and tt.HasField("shape")

    def _input_specs(self, inputs: Sequence[DimsExprs | None]) -> list[ValueSpec | None]:
        """The node's inputs as kinds, element types and ranks (None where unknown)."""
        assert self.input_types is not None
        types = list(self.input_types) + [None] * (len(inputs) - len(self.input_types))
        kinds = self.in_specs if self.in_specs is not None and \
            len(self.in_specs) == len(inputs) else [None] * len(inputs)
        out: list[ValueSpec | None] = []
        for d, t, spec in zip(inputs, types, kinds, strict=True):
            if spec is not None and not spec[0].is_tensor:
                out.append(spec)
            else:
                out.append(None if d is None or t is None else (TENSOR, t, len(d)))
        return out

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]) -> None:
        """Nothing repacked: every outer-scope value that is a build-time constant, large ones
        too (shape inference sees the contents of small ones only), is added to
        ``__outer_constants__``, so that the bodies are built with the weights they read as
        constants of their own (packed, folded) instead of taking them as inputs on every run
        (silero-vad's If-less export: 26 weights copied into its branch on each run)."""
        n_own = len(constants) - len(self.outer_scope)
        names = set(self.outer_constants) | {
            name for name, value in zip(self.outer_scope, constants[n_own:], strict=True)
            if value is not None}
        if names:
            self.record("__outer_constants__", sorted(names))

    def infer_bodies(self, inputs: Sequence[DimsExprs | None]) -> None:
        """At build time: note which outer-scope values are constants (the bodies are built
        with their values), and fill in each body output that declares no element type or
        rank with what the body computes for this node's input kinds, types and ranks."""
        if self.subgraphs is None or self.input_types is None:
            return  # not at build time: body_dims/body_type say what is missing
        n_own = len(inputs) - len(self.outer_scope)
        constants = {name: d.array for name, d in zip(self.outer_scope, inputs[n_own:],
                                                      strict=True)
                     if d is not None and d.array is not None}
        self.record("__outer_constants__", sorted(constants) or None)
        if all(self._declared(o) for g in self.graphs.values() for o in g.output):
            return
        specs = self._input_specs(inputs)
        outer = [s for s in specs[n_own:] if s is not None]
        if len(outer) != len(self.outer_scope):
            return
        own = [s if s is not None else (TENSOR, None, None) for s in specs[:n_own]]
        for body in self.bodies:
            graph = self.graphs[body]
            if all(self._declared(o) for o in graph.output):
                continue
            runner = self.make_body(body)
            try:
                found = runner.signature([*self.formal_inputs(body, own), *outer], constants)
            finally:
                runner.close()
            from onnx import helper  # a body is parsed: onnx is imported already

            for o, (kind, dtype, rank) in zip(graph.output, found, strict=True):
                if self._declared(o):
                    continue
                tt = o.type.tensor_type
                known = [d.dim_value if d.HasField("dim_value") else None
                         for d in tt.shape.dim] if tt.HasField("shape") else None
                if kind.is_tensor:
                    assert rank is not None
                    o.CopyFrom(helper.make_tensor_value_info(
                        o.name, tt.elem_type or (dtype or DataType.FLOAT).value,
                        known if known is not None and len(known) == rank
                        else [None] * rank))
                elif dtype is not None:
                    o.CopyFrom(helper.make_value_info(o.name, type_proto(
                        kind, dtype, None if rank is None else [None] * rank)))
            self.attrs[body] = graph.SerializeToString()

    def body_type(self, body: str, k: int) -> DataType:
        """The element type the body declares for its output ``k``."""
        dtype = self.declared(body, k)[1]
        if dtype is None:
            raise PluginInterfaceError(f"{self._where(body, k)} has no element type in the "
                                       "model")
        return dtype

    def body_dims(self, body: str, k: int) -> list[int | None]:
        """The dimensions the body declares for its output ``k`` (None: symbolic)."""
        o = self.graphs[body].output[k]
        tt = o.type.tensor_type
        if not (o.type.HasField("tensor_type") and tt.HasField("shape")):
            raise InputShapesRequired(
                f"{self._where(body, k)} declares no rank, and its rank is known only with "
                "the input shapes: build for fixed input shapes (BuilderConfig(input_shapes="
                "...), mini-infer build --shape NAME=D0,D1,..), or run the model through "
                "InferenceSession, which builds for the shapes it is given")
        return [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]

    def empty_scan(self, k: int) -> tuple[tuple[int, ...], DataType]:
        """Shape and type of body output ``k`` stacked over zero iterations: (0, *its
        declared dims, 0 where symbolic)."""
        return (0, *(d or 0 for d in self.body_dims("body", k))), self.body_type("body", k)

    def unknown(self, ranks: Sequence[int]) -> list[list[IntLike]]:
        """Outputs of the given ranks, every dimension known once the node has run."""
        return [[self.dynamic_dim(f"out{k}_d{i}") for i in range(r)]
                for k, r in enumerate(ranks)]

    # -- values that are no tensors -------------------------------------------------------
    def infer_body(self, body: str, inputs: Sequence[ValueSpec]) -> list[ValueSpec | None] | None:
        """What ``body`` gives for inputs of these kinds, element types and ranks (its
        formal inputs, then the outer-scope values); None where it cannot tell. A kernel
        that builds its bodies answers it (mini-infer-cpu-plugins builds the body)."""
        return None

    def value_spec(self, declared: ValueSpec, inferred: Sequence[ValueSpec | None]
                   ) -> ValueSpec:
        """A non-tensor output: the kind and rank the bodies give where they agree, else
        what the body declares (its element type where the body gives none)."""
        got = [s for s in inferred if s is not None and s[0].wrappers == declared[0].wrappers]
        if not got or len(got) != len(inferred):
            return declared
        ranks = {s[2] for s in got}
        rank = ranks.pop() if len(ranks) == 1 else None
        dtype = got[0][1] or declared[1]
        return got[0][0].with_rank(rank is not None), dtype, rank

    def value_outputs(self, ranks: Sequence[int]) -> list[list[IntLike]]:
        """Every output's dimensions: ``ranks`` for tensors, a non-tensor's elements'."""
        out = self.unknown(ranks)
        for k, (_, _, rank) in self.values.items():
            out[k] = [self.dynamic_dim(f"out{k}_d{i}") for i in range(rank or 0)]
        return out

    def value_type(self, k: int, otherwise: DataType) -> DataType:
        if k not in self.values:
            return otherwise
        dtype = self.values[k][1]
        if dtype is None:
            raise PluginInterfaceError(f"{self.op_type} {self.name!r}: output {k} has no "
                                       "element type in the model")
        return dtype

    def kinds(self, n: int) -> list[ValueKind]:
        return [self.values[k][0] if k in self.values else TENSOR for k in range(n)]


def outer_specs(inputs: Sequence[ValueSpec | None], n_outer: int) -> list[ValueSpec] | None:
    """The outer-scope values' specs (None where one is not known)."""
    outer = [s for s in (inputs[len(inputs) - n_outer:] if n_outer else []) if s is not None]
    return outer if len(outer) == n_outer else None


class If(ControlFlowBase):
    """Runs then_branch or else_branch by the boolean condition."""

    bodies = ("then_branch", "else_branch")

    @property
    def num_outputs(self) -> int:
        return self.body_outputs("then_branch")

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        self.values = {}
        self.in_specs = list(inputs)
        inferred: dict[str, list[ValueSpec | None]] = {}
        for k in range(self.num_outputs):
            declared = self.declared("then_branch", k)
            if declared[0].is_tensor:
                continue
            if not inferred:
                outer = outer_specs(inputs, len(self.outer_scope))
                for b in self.bodies:
                    got = self.infer_body(b, outer) if outer is not None else None
                    inferred[b] = got or [None] * self.num_outputs
            self.values[k] = self.value_spec(declared, [inferred[b][k] for b in self.bodies])
        return self.kinds(self.num_outputs)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        self.infer_bodies(inputs)
        ranks = []
        for k in range(self.num_outputs):
            if k in self.values:
                ranks.append(0)
                continue
            then, other = (len(self.body_dims(b, k)) for b in self.bodies)
            if then != other:
                raise InputShapesRequired(
                    f"{self._where('then_branch', k)} has rank {then}, of else_branch rank "
                    f"{other}: the If's output rank is known only once the condition is; "
                    "build for fixed input shapes (BuilderConfig(input_shapes=...), "
                    "mini-infer build --shape NAME=D0,D1,..) if the condition follows from "
                    "them, or run the model through InferenceSession")
            ranks.append(then)
        return self.value_outputs(ranks)

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.value_type(k, self.body_type("then_branch", k))
                for k in range(self.num_outputs)]


class Loop(ControlFlowBase):
    """Inputs: M (trip count), cond, loop-carried v...; outputs: final v..., scan outputs
    (the body's outputs after cond and the carried values, stacked). A carried value may be
    a sequence or an optional."""

    bodies = ("body",)

    @property
    def n_carried(self) -> int:
        return self.body_inputs("body") - 2

    @property
    def num_outputs(self) -> int:
        return self.body_outputs("body") - 1

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        self.values = {}
        self.in_specs = list(inputs)
        n = self.n_carried
        carried = list(inputs[2 : 2 + n])
        inferred: list[ValueSpec | None] | None = None
        for k, spec in enumerate(carried):
            if spec is None or spec[0].is_tensor:
                continue
            if inferred is None:
                outer = outer_specs(inputs, len(self.outer_scope))
                counter: ValueSpec = (TENSOR, DataType.INT64, 0)
                cond: ValueSpec = (TENSOR, DataType.BOOL, 0)
                formal = [s for s in [counter, cond, *carried] if s is not None]
                got = self.infer_body("body", [*formal, *outer]) if outer is not None and \
                    len(formal) == 2 + n else None
                inferred = got or [None] * (1 + self.num_outputs)
            body = self.declared("body", 1 + k)
            declared = (spec[0].with_rank(body[2] is not None), body[1] or spec[1], body[2])
            self.values[k] = self.value_spec(declared, [inferred[1 + k]])
        return self.kinds(self.num_outputs)

    def formal_inputs(self, body: str, inputs: Sequence[ValueSpec]) -> list[ValueSpec]:
        carried = [(kind, t or DataType.FLOAT, r if r is not None or not kind.is_tensor
                    else 0) for kind, t, r in inputs[2:]]
        return [(TENSOR, DataType.INT64, 0), (TENSOR, DataType.BOOL, 0), *carried]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        self.infer_bodies(inputs)
        return self.value_outputs([0 if k in self.values else len(inputs[2 + k])
                                   if k < self.n_carried
                                   else 1 + len(self.body_dims("body", 1 + k))
                                   for k in range(self.num_outputs)])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.value_type(k, input_types[2 + k]) if k < self.n_carried
                else self.body_type("body", 1 + k) for k in range(self.num_outputs)]


class Scan(ControlFlowBase):
    """Opset 9+: N states then M scan inputs; outputs: final states, then scan outputs."""

    bodies = ("body",)
    min_opset = 9  # Scan-8 (a batch axis and sequence_lens) is not implemented

    @property
    def n_states(self) -> int:
        return self.body_inputs("body") - int(self.attrs["num_scan_inputs"])

    @property
    def num_outputs(self) -> int:
        return self.body_outputs("body")

    def formal_inputs(self, body: str, inputs: Sequence[ValueSpec]) -> list[ValueSpec]:
        return [(TENSOR, t or DataType.FLOAT, (r or 0) - (k >= self.n_states))
                for k, (_, t, r) in enumerate(inputs)]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        self.infer_bodies(inputs)
        return self.unknown([len(inputs[k]) if k < self.n_states
                             else 1 + len(self.body_dims("body", k))
                             for k in range(self.num_outputs)])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[k] if k < self.n_states else self.body_type("body", k)
                for k in range(self.num_outputs)]
