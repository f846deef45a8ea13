"""The prune pass: nodes whose outputs nobody needs are dropped (their plugins destroyed)."""

from __future__ import annotations

from ..errors import BuildError
from .state import BuildState

__all__ = ["prune"]


def prune(state: BuildState) -> set[str]:
    """Keep the nodes the graph outputs need; returns every tensor they use."""
    for o in state.output_names:
        if o not in state.dims:
            raise BuildError(f"graph output {o!r} is not produced by any node")
    state.nodes.extend(state.precision.finish(state.output_names, state.device.name))
    needed = set(state.output_names)
    kept = []
    for nd in reversed(state.nodes):
        if any(o in needed for o in nd.outputs):
            kept.append(nd)
            needed.update(x for x in nd.inputs if x)
        else:
            nd.plugin.destroy()
    kept.reverse()
    state.nodes = kept
    return needed
