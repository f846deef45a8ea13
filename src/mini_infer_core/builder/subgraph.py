"""Subgraphs of control-flow operators (If, Loop, Scan), built and run as engines.

Control-flow plugins receive their bodies as serialized ``onnx.GraphProto`` fields and the
values the bodies read from enclosing scopes as extra inputs (the importer adds them and names
them in the ``__outer_scope__`` field). A :class:`SubgraphRunner` (the core's
:class:`~mini_infer_core.plugin.SubgraphFactory`, attached to such plugins where they are made)
turns a body into an engine for the element types and ranks it is called with (dimensions stay
symbolic, so one engine serves every shape), caches it, and runs it in its own execution
context.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnx.numpy_helper

from ..errors import BuildError
from ..plugin import DataType

__all__ = ["SubgraphRunner"]


def _opset_imports(text: str) -> list[onnx.OperatorSetIdProto]:
    out = []
    for item in filter(None, text.split(";")):
        domain, _, version = item.rpartition(":")
        out.append(onnx.helper.make_opsetid(domain, int(version)))
    return out or [onnx.helper.make_opsetid("", onnx.defs.onnx_opset_version())]


class SubgraphRunner:
    def __init__(self, graph: bytes, opset_imports: str, outer_names: Sequence[str],
                 device: str = "cpu", label: str = "subgraph", *,
                 build: Callable[[onnx.ModelProto, str], Any],
                 constants: Sequence[str] = ()) -> None:
        #: builds an engine from a model for a device (the enclosing build's builder)
        self._build_engine = build
        self.graph = onnx.GraphProto()
        self.graph.ParseFromString(graph)
        self.opsets = _opset_imports(opset_imports)
        self.outer_names = list(outer_names)
        #: outer-scope values that are constants: built into the body with their values
        self.constants = set(constants) & set(self.outer_names)
        self.input_names = [i.name for i in self.graph.input]
        self.output_names = [o.name for o in self.graph.output]
        self.device = device
        self.label = label
        self._contexts: dict[tuple[Any, ...], Any] = {}
        #: signatures whose body builds only for concrete shapes
        self._concrete_only: set[tuple[Any, ...]] = set()
        self._lock = threading.Lock()

    # -- declared types of the body's outputs (for build-time type inference) ---------------
    def output_types(self) -> list[DataType | None]:
        out: list[DataType | None] = []
        for o in self.graph.output:
            code = o.type.tensor_type.elem_type if o.type.HasField("tensor_type") else 0
            out.append(DataType(code) if code else None)
        return out

    def output_ranks(self) -> list[int | None]:
        out: list[int | None] = []
        for o in self.graph.output:
            tt = o.type.tensor_type
            out.append(len(tt.shape.dim) if o.type.HasField("tensor_type")
                       and tt.HasField("shape") else None)
        return out

    # -- building -------------------------------------------------------------------------
    def _engine(self, inputs: Sequence[tuple[DataType, Sequence[int] | int]],
                constants: Mapping[str, Any]) -> Any:
        """The body built for inputs (formal, then outer) of these element types and shapes
        (a rank: every dimension symbolic, so one engine serves every shape), the outer
        constants with their values."""
        g = onnx.GraphProto()
        g.CopyFrom(self.graph)
        del g.input[:]
        names = [*self.input_names, *self.outer_names]
        for k, (name, (dtype, shape)) in enumerate(zip(names, inputs, strict=True)):
            if name in self.constants and name in constants:
                g.initializer.append(onnx.numpy_helper.from_array(
                    np.asarray(constants[name]), name))
                continue
            dims: list[Any] = [f"{self.label}_in{k}_d{i}" for i in range(shape)] \
                if isinstance(shape, int) else list(shape)
            g.input.append(onnx.helper.make_tensor_value_info(name, dtype.value, dims))
        for o in g.output:  # shapes inside a body may differ per call: keep only the type
            if o.type.HasField("tensor_type"):
                o.type.tensor_type.ClearField("shape")
        model = onnx.helper.make_model(g, opset_imports=self.opsets)
        try:
            return self._build_engine(model, self.device)
        except BuildError as exc:  # keeps the kind (InputShapesRequired stays one)
            raise type(exc)(f"{self.label}: {exc}") from exc

    def signature(self, inputs: Sequence[tuple[DataType, int]],
                  constants: Mapping[str, Any] | None = None) -> list[tuple[DataType, int]]:
        engine = self._engine(inputs, constants or {})
        return [(spec.dtype, len(spec.shape)) for spec in engine.outputs]

    # -- running --------------------------------------------------------------------------
    def _build(self, arrays: Sequence[np.ndarray[Any, Any]], concrete: bool = False) -> Any:
        """An execution context for the body, built for the arrays' types and ranks, or --
        ``concrete`` -- for their very shapes."""
        names = [*self.input_names, *self.outer_names]
        return self._engine([(DataType.from_numpy(a.dtype), a.shape if concrete else a.ndim)
                             for a in arrays],
                            {n: a for n, a in zip(names, arrays, strict=True)
                             if n in self.constants}).create_execution_context()

    def run(self, formal: Sequence[Any], outer: Sequence[Any]) -> list[np.ndarray[Any, Any]]:
        arrays = [np.asarray(a) for a in [*formal, *outer]]
        if len(formal) != len(self.input_names):
            raise BuildError(f"{self.label}: body takes {len(self.input_names)} inputs, "
                             f"got {len(formal)}")
        sig = tuple((a.dtype.str, a.ndim) for a in arrays)
        with self._lock:
            ctx = self._contexts.get(sig)
            if ctx is None and sig not in self._concrete_only:
                try:
                    ctx = self._contexts[sig] = self._build(arrays)
                except BuildError:
                    # a body whose inner control flow settles only with known shapes (an If
                    # on a dimension whose branches differ in rank): built per shape
                    self._concrete_only.add(sig)
            if ctx is None:
                exact = tuple((a.dtype.str, a.shape) for a in arrays)
                ctx = self._contexts.get(exact)
                if ctx is None:
                    ctx = self._contexts[exact] = self._build(arrays, concrete=True)
        names = [*self.input_names, *self.outer_names]
        result = ctx.execute({n: a for n, a in zip(names, arrays, strict=True)
                              if n not in self.constants})
        return [result[n] for n in self.output_names]

    def close(self) -> None:
        for ctx in self._contexts.values():
            ctx.close()
        self._contexts.clear()
