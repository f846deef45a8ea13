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
from ..plugin import DataType, DimsExprs, IntLike, IUsesSubgraphs, Subgraph
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
    is built (through the attached subgraph factory) for the node's input types and ranks,
    and what it computes is written into the body's output declarations, so the engine file
    carries bodies that declare everything."""

    data_dependent = True
    hidden_fields = ("__outer_scope__", "__opset_imports__", "__outer_constants__")
    bodies: ClassVar[tuple[str, ...]] = ()

    def setup(self) -> None:
        self.graphs = {b: _graph(self.attrs[b]) for b in self.bodies}

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

    # -- what the bodies declare, inferred where they do not --------------------------------
    def formal_inputs(self, body: str, types: Sequence[DataType | None],
                      ranks: Sequence[int | None]) -> list[tuple[DataType, int]]:
        """Element types and ranks of the body's own inputs, from the node's inputs."""
        return []

    @staticmethod
    def _declared(o: onnx.ValueInfoProto) -> bool:
        tt = o.type.tensor_type
        return o.type.HasField("tensor_type") and bool(tt.elem_type) and tt.HasField("shape")

    def infer_bodies(self, inputs: Sequence[DimsExprs | None]) -> None:
        """At build time: note which outer-scope values are constants (the bodies are built
        with their values), and fill in each body output that declares no element type or
        rank with what the body computes for this node's input types and ranks."""
        if self.subgraphs is None or self.input_types is None:
            return  # not at build time: body_dims/body_type say what is missing
        n_own = len(inputs) - len(self.outer_scope)
        constants = {name: d.array for name, d in zip(self.outer_scope, inputs[n_own:],
                                                      strict=True)
                     if d is not None and d.array is not None}
        self.record("__outer_constants__", sorted(constants) or None)
        if all(self._declared(o) for g in self.graphs.values() for o in g.output):
            return
        ranks = [None if d is None else len(d) for d in inputs]
        types = list(self.input_types) + [None] * (len(ranks) - len(self.input_types))
        outer = []
        for t, r in zip(types[n_own:], ranks[n_own:], strict=True):
            if t is None or r is None:
                return
            outer.append((t, r))
        for body in self.bodies:
            graph = self.graphs[body]
            if all(self._declared(o) for o in graph.output):
                continue
            runner = self.make_body(body)
            try:
                found = runner.signature([*self.formal_inputs(body, types[:n_own],
                                                              ranks[:n_own]), *outer],
                                         constants)
            finally:
                runner.close()
            from onnx import helper  # a body is parsed: onnx is imported already

            for o, (dtype, rank) in zip(graph.output, found, strict=True):
                if not self._declared(o):
                    tt = o.type.tensor_type
                    known = [d.dim_value if d.HasField("dim_value") else None
                             for d in tt.shape.dim] if tt.HasField("shape") else None
                    o.CopyFrom(helper.make_tensor_value_info(
                        o.name, tt.elem_type or dtype.value,
                        known if known is not None and len(known) == rank else [None] * rank))
            self.attrs[body] = graph.SerializeToString()

    def body_type(self, body: str, k: int) -> DataType:
        """The element type the body declares for its output ``k``."""
        o = self.graphs[body].output[k]
        code = o.type.tensor_type.elem_type if o.type.HasField("tensor_type") else 0
        if not code:
            raise PluginInterfaceError(f"{self._where(body, k)} has no element type in the "
                                       "model")
        return DataType(code)

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


class If(ControlFlowBase):
    """Runs then_branch or else_branch by the boolean condition."""

    bodies = ("then_branch", "else_branch")

    @property
    def num_outputs(self) -> int:
        return self.body_outputs("then_branch")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        self.infer_bodies(inputs)
        ranks = []
        for k in range(self.num_outputs):
            then, other = (len(self.body_dims(b, k)) for b in self.bodies)
            if then != other:
                raise InputShapesRequired(
                    f"{self._where('then_branch', k)} has rank {then}, of else_branch rank "
                    f"{other}: the If's output rank is known only once the condition is; "
                    "build for fixed input shapes (BuilderConfig(input_shapes=...), "
                    "mini-infer build --shape NAME=D0,D1,..) if the condition follows from "
                    "them, or run the model through InferenceSession")
            ranks.append(then)
        return self.unknown(ranks)

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.body_type("then_branch", k) for k in range(self.num_outputs)]


class Loop(ControlFlowBase):
    """Inputs: M (trip count), cond, loop-carried v...; outputs: final v..., scan outputs
    (the body's outputs after cond and the carried values, stacked)."""

    bodies = ("body",)

    @property
    def n_carried(self) -> int:
        return self.body_inputs("body") - 2

    @property
    def num_outputs(self) -> int:
        return self.body_outputs("body") - 1

    def formal_inputs(self, body: str, types: Sequence[DataType | None],
                      ranks: Sequence[int | None]) -> list[tuple[DataType, int]]:
        carried = [(t or DataType.FLOAT, r or 0) for t, r in zip(types[2:], ranks[2:],
                                                                   strict=True)]
        return [(DataType.INT64, 0), (DataType.BOOL, 0), *carried]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        self.infer_bodies(inputs)
        return self.unknown([len(inputs[2 + k]) if k < self.n_carried
                             else 1 + len(self.body_dims("body", 1 + k))
                             for k in range(self.num_outputs)])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[2 + k] if k < self.n_carried else self.body_type("body", 1 + k)
                for k in range(self.num_outputs)]


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

    def formal_inputs(self, body: str, types: Sequence[DataType | None],
                      ranks: Sequence[int | None]) -> list[tuple[DataType, int]]:
        return [(t or DataType.FLOAT, (r or 0) - (k >= self.n_states))
                for k, (t, r) in enumerate(zip(types, ranks, strict=True))]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        self.infer_bodies(inputs)
        return self.unknown([len(inputs[k]) if k < self.n_states
                             else 1 + len(self.body_dims("body", k))
                             for k in range(self.num_outputs)])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[k] if k < self.n_states else self.body_type("body", k)
                for k in range(self.num_outputs)]
