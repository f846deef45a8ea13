"""Subgraphs (the bodies of If, Loop and Scan) as a service the core hands to the plugins that
run them.

A control-flow plugin declares :class:`IUsesSubgraphs`; the core attaches a
:class:`SubgraphFactory` to it wherever it makes the plugin (builder, runtime, every
execution context's clone). The factory turns a serialized ``onnx.GraphProto`` into a
:class:`Subgraph` that builds the body into an engine for the element types and ranks it is
called with and runs it. So a plugin package never imports the builder or the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ._types import DataType

if TYPE_CHECKING:  # onnx is imported where a body is parsed, not to list or load plugins
    import onnx

__all__ = ["IUsesSubgraphs", "Subgraph", "SubgraphFactory"]


class Subgraph(Protocol):
    """A body, built on demand and run as an engine of its own."""

    #: the body as parsed from the field
    graph: onnx.GraphProto
    input_names: list[str]
    output_names: list[str]

    def output_types(self) -> list[DataType | None]:
        """The element types the body declares for its outputs (None: not declared)."""
        ...

    def output_ranks(self) -> list[int | None]:
        """The ranks the body declares for its outputs (None: not declared)."""
        ...

    def signature(self, inputs: Sequence[tuple[DataType, int]],
                  constants: Mapping[str, Any] | None = None) -> list[tuple[DataType, int]]:
        """The element types and ranks of the body's outputs when it is built for inputs
        (formal, then outer-scope) of these element types and ranks, the outer-scope
        constants' arrays given in ``constants``: what the body computes, whatever it
        declares. Raises ``InputShapesRequired`` where an output's rank depends on the
        inputs' dimensions."""
        ...

    def run(self, formal: Sequence[Any], outer: Sequence[Any]) -> list[Any]:
        """Run the body on its formal inputs and the outer-scope values it reads."""
        ...

    def close(self) -> None: ...


class SubgraphFactory(Protocol):
    """``constants``: the outer-scope names that are build-time constants of the enclosing
    graph; the body is built with their values (so that, e.g., ``axes`` read from the outer
    scope are known inside)."""

    def __call__(self, graph: bytes, opset_imports: str, outer_names: Sequence[str],
                 device: str = "cpu", label: str = "subgraph", *,
                 constants: Sequence[str] = ()) -> Subgraph: ...


class IUsesSubgraphs:
    """A plugin that runs subgraphs; ``subgraphs`` is attached by the core before use, and at
    build time ``input_types`` (the element types of the node's inputs, None where absent) is
    bound before the plugin is asked for its output shapes, so that it can infer what its
    bodies produce (:meth:`Subgraph.signature`) where they declare nothing."""

    subgraphs: SubgraphFactory | None = None
    input_types: list[DataType | None] | None = None

    def attach_subgraphs(self, factory: SubgraphFactory) -> None:
        self.subgraphs = factory

    def bind_input_types(self, types: Sequence[DataType | None]) -> None:
        self.input_types = list(types)
