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
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BuildError
from ..plugin import DataType
from ..plugin._kinds import ValueSpec as Spec
from ..plugin._kinds import kind_from_proto, kind_of_value, type_proto

if TYPE_CHECKING:  # imported where a body is built: a model without one never needs onnx
    import onnx

__all__ = ["SubgraphRunner"]


def _opset_imports(text: str) -> list[onnx.OperatorSetIdProto]:
    import onnx.defs
    import onnx.helper

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
        import onnx

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
        #: what the body declares its formal inputs are (None: no type)
        self._declared: list[Spec | None] = [
            _declared(i.type) for i in self.graph.input]
        #: what each input was when the body was built for the enclosing build (``infer``):
        #: the element type of an empty sequence, the kind of an outer-scope value
        self._hints: dict[int, Spec] = {}
        self._contexts: dict[tuple[Any, ...], Any] = {}
        #: signatures whose body builds only for concrete shapes
        self._concrete_only: set[tuple[Any, ...]] = set()
        self._lock = threading.Lock()
        #: the (dtype, shape) of each array of the last call and the context that ran it
        self._last: tuple[tuple[Any, ...], Any] | None = None
        #: the positions and names of the values a run feeds (formal inputs, then the outer
        #: ones that are no constants): the constants are the body's own, the same on every
        #: run (silero-vad's If-less export: 41 of its 43 values)
        names = [*self.input_names, *self.outer_names]
        self._fed = [(k, n) for k, n in enumerate(names) if n not in self.constants]

    # -- declared types of the body's outputs (for build-time type inference) ---------------
    def output_types(self) -> list[DataType | None]:
        return [(_declared(o.type) or (None, None, None))[1] for o in self.graph.output]

    def output_ranks(self) -> list[int | None]:
        return [(_declared(o.type) or (None, None, None))[2] for o in self.graph.output]

    # -- building ---------------------------------------------------------------------------
    def _specs(self, values: Sequence[Any]) -> list[Spec]:
        """What the values the body is called with are (a sequence's or an optional's kind
        from the body's declaration, or from the build)."""
        specs: list[Spec] = []
        for k, value in enumerate(values):
            declared = self._declared[k] if k < len(self._declared) else None
            hint = self._hints.get(k)
            guide = next((s[0] for s in (declared, hint) if s is not None
                          and not s[0].is_tensor), None)
            kind, dtype, rank = kind_of_value(value, guide)
            if dtype is None:
                dtype = next((s[1] for s in (declared, hint) if s is not None and s[1]), None)
            if dtype is None:
                raise BuildError(f"{self.label}: input {k} is an empty {kind} whose element "
                                 "type the model does not declare")
            specs.append((kind, dtype, rank))
        return specs

    def _engine(self, specs: Sequence[Spec], constants: Mapping[str, Any],
                shapes: Sequence[Any] | None = None) -> Any:
        """The body built for inputs (formal, then outer) of these kinds, element types and
        ranks (every dimension symbolic, so one engine serves every shape), or -- ``shapes``
        -- for the tensors' very shapes; the outer constants in ``constants`` built in with
        their values."""
        import onnx.helper
        import onnx.numpy_helper

        g = onnx.GraphProto()
        g.CopyFrom(self.graph)
        del g.input[:]
        names = [*self.input_names, *self.outer_names]
        for k, (name, (kind, dtype, rank)) in enumerate(zip(names, specs, strict=True)):
            if name in self.constants and name in constants:
                g.initializer.append(onnx.numpy_helper.from_array(
                    np.asarray(constants[name]), name))
                continue
            if dtype is None:
                raise BuildError(f"{self.label}: input {name!r} has no known element type")
            dims: list[Any] | None = None if rank is None else [
                f"{self.label}_in{k}_d{i}" for i in range(rank)]
            if shapes is not None and kind.is_tensor:
                dims = list(shapes[k])
            g.input.append(onnx.helper.make_value_info(name, type_proto(kind, dtype, dims)))
        for o in g.output:  # shapes inside a body may differ per call: keep only the type
            if o.type.HasField("tensor_type"):
                o.type.tensor_type.ClearField("shape")
        model = onnx.helper.make_model(g, opset_imports=self.opsets)
        try:
            return self._build_engine(model, self.device)
        except BuildError as exc:  # keeps the kind (InputShapesRequired stays one)
            raise type(exc)(f"{self.label}: {exc}") from exc

    def _outputs(self, engine: Any) -> list[Spec]:
        tensors = engine.tensors
        return [(t.value_kind, t.dtype, len(t.dims) if t.value_kind.ranked else None)
                for t in (tensors[n] for n in self.output_names)]

    def signature(self, inputs: Sequence[Spec],
                  constants: Mapping[str, Any] | None = None) -> list[Spec]:
        return self._outputs(self._engine(inputs, constants or {}))

    def _build(self, specs: Sequence[Spec], values: Sequence[Any] | None = None,
               shapes: Sequence[Any] | None = None) -> Any:
        """An execution context for the body, built for inputs of these kinds, types and
        ranks, or -- ``shapes`` -- for the tensors' very shapes; the outer constants taken
        from ``values`` (the inputs it is called with)."""
        names = [*self.input_names, *self.outer_names]
        constants = {n: v for n, v in zip(names, values or (), strict=False)
                     if n in self.constants}
        return self._engine(specs, constants, shapes).create_execution_context()

    def infer(self, specs: Sequence[Spec]) -> list[Spec | None]:
        """What the body gives for inputs of these kinds, element types and ranks, worked
        out by building it (kept for the runs where the body has no outer constants); None
        for each output where it does not build for them."""
        for k, spec in enumerate(specs):
            self._hints.setdefault(k, spec)
        sig = tuple(specs)
        with self._lock:
            ctx = self._contexts.get(sig)
            if ctx is None:
                try:
                    engine = self._engine(specs, {})
                except BuildError:
                    return [None] * len(self.output_names)
                if self.constants:  # built without their values: not for the runs
                    return list(self._outputs(engine))
                ctx = self._contexts[sig] = engine.create_execution_context()
        return list(self._outputs(ctx.engine))

    # -- running --------------------------------------------------------------------------
    def run(self, formal: Sequence[Any], outer: Sequence[Any]) -> list[Any]:
        if len(formal) != len(self.input_names):
            raise BuildError(f"{self.label}: body takes {len(self.input_names)} inputs, "
                             f"got {len(formal)}")
        values = list(formal) + list(outer)
        names = [*self.input_names, *self.outer_names]
        # arrays fed of the dtypes and shapes of the last call: its context again (a Loop's
        # iterations, a model's If on every run), without working the kinds out anew
        fed = [values[k] for k, _ in self._fed]
        key = tuple((v.dtype, v.shape) for v in fed) if all(
            type(v) is np.ndarray for v in fed) else None
        last = self._last
        if key is not None and last is not None and last[0] == key:
            result = last[1].execute({n: values[k] for k, n in self._fed})
            return [result[n] for n in self.output_names]
        specs = self._specs(values)
        values = [np.asarray(v) if s[0].is_tensor else v for v, s in zip(values, specs,
                                                                           strict=True)]
        sig = tuple(specs)
        with self._lock:
            ctx = self._contexts.get(sig)
            if ctx is None and sig not in self._concrete_only:
                try:
                    ctx = self._contexts[sig] = self._build(specs, values)
                except BuildError:
                    # a body whose inner control flow settles only with known shapes (an If
                    # on a dimension whose branches differ in rank): built per shape
                    self._concrete_only.add(sig)
            if ctx is None:
                shapes = [np.shape(v) if s[0].is_tensor else None
                          for v, s in zip(values, specs, strict=True)]
                exact = (sig, tuple(shapes))
                ctx = self._contexts.get(exact)
                if ctx is None:
                    ctx = self._contexts[exact] = self._build(specs, values, shapes)
        result = ctx.execute({n: v for n, v in zip(names, values, strict=True)
                              if n not in self.constants})
        if key is not None:  # contexts of bodies with outer constants hold their values
            self._last = (key, ctx)
        return [result[n] for n in self.output_names]

    def last_context(self) -> Any:
        """The execution context of the last run, where the run kept it (None otherwise):
        what a keyed plan's If step runs directly (:mod:`..engine.branch_step`)."""
        last = self._last
        return None if last is None else last[1]

    def close(self) -> None:
        for ctx in self._contexts.values():
            ctx.close()
        self._contexts.clear()
        self._last = None


def _declared(tp: onnx.TypeProto) -> Spec | None:
    if tp.WhichOneof("value") is None:
        return None
    try:
        kind, dtype, dims = kind_from_proto(tp)
    except ValueError:
        return None
    return kind, dtype, None if dims is None else len(dims)
