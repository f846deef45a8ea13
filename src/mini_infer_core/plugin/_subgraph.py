"""Subgraphs (the bodies of If, Loop and Scan) as a service the core hands to the plugins that
run them.

A control-flow plugin declares :class:`IUsesSubgraphs`; the core attaches a
:class:`SubgraphFactory` to it wherever it makes the plugin (builder, runtime, every
execution context's clone). The factory turns a serialized ``onnx.GraphProto`` into a
:class:`Subgraph` that builds the body into an engine for the element types and ranks it is
called with and runs it. So a plugin package never imports the builder or the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
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

    def run(self, formal: Sequence[Any], outer: Sequence[Any]) -> list[Any]:
        """Run the body on its formal inputs and the outer-scope values it reads."""
        ...

    def close(self) -> None: ...


class SubgraphFactory(Protocol):
    def __call__(self, graph: bytes, opset_imports: str, outer_names: Sequence[str],
                 device: str = "cpu", label: str = "subgraph") -> Subgraph: ...


class IUsesSubgraphs:
    """A plugin that runs subgraphs; ``subgraphs`` is attached by the core before use."""

    subgraphs: SubgraphFactory | None = None

    def attach_subgraphs(self, factory: SubgraphFactory) -> None:
        self.subgraphs = factory
