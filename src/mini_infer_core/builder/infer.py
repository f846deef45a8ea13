"""The infer pass: a node's plugin is created and asked for its outputs' shapes, types and
(small integer tensors) build-time values, through whichever interface level it implements."""

from __future__ import annotations

import logging

from ..errors import BuildError, node_errors
from ..network import Node
from ..plugin import LazyPluginCreator, PluginField, PluginFieldCollection
from ..plugin import _adapter as adapter
from ..registry import CreatorRecord
from ._values import output_values
from .state import BuildState, NodeWork

__all__ = ["fields_for", "infer"]

log = logging.getLogger("mini_infer.lifecycle")


def fields_for(rec: CreatorRecord, node: Node) -> PluginFieldCollection:
    """The node's fields, plus ``__num_outputs__`` for creators that declare it (a plugin
    whose work depends on how many outputs the node uses, e.g. Split, MaxPool's Indices). A
    lazy creator is asked once its class is loaded: its ``hidden_fields`` count, whether or not
    its distribution declared them."""
    creator = rec.creator
    names = creator.resolve().field_names if isinstance(creator, LazyPluginCreator) else \
        creator.field_names
    if "__num_outputs__" in names and "__num_outputs__" not in node.fields:
        return PluginFieldCollection([*node.fields.fields, PluginField.from_value(
            "__num_outputs__", len(node.outputs))])
    return node.fields


def infer(state: BuildState, work: NodeWork) -> None:
    node = work.node
    for name in node.inputs:
        if name and name not in state.dims:
            raise BuildError(f"{work.where}: input {name!r} is not produced by any earlier "
                             "node, initializer or graph input (is the graph sorted?)")
    with node_errors(work.where, BuildError, "the plugin failed during build"):
        plugin = adapter.create(work.record.creator, node.name, fields_for(work.record, node),
                                state.subgraphs)
        log.debug("construct %s", work.where)
        adapter.check_input_count(plugin, len(node.inputs), work.where)
        work.plugin = plugin
        work.inputs = list(node.inputs)
        work.in_dims = [state.dims[n] if n else None for n in node.inputs]
        work.in_types = [state.types[n] if n else None for n in node.inputs]
        work.out_dims, work.out_types = adapter.infer_outputs(plugin, work.in_dims,
                                                              work.in_types, work.where)
        adapter.check_formats(plugin, work.in_types, work.out_types, work.where)
    if len(node.outputs) > plugin.num_outputs:
        raise BuildError(f"{work.where}: the node has {len(node.outputs)} outputs, the "
                         f"plugin produces at most {plugin.num_outputs}: fix the model, or "
                         "pin a provider whose plugin has them (--pin)")
    work.outputs = [node.outputs[k] if k < len(node.outputs) and node.outputs[k]
                    else f"{node.name}:scratch{k}" for k in range(plugin.num_outputs)]
    work.values = output_values(plugin, work.in_dims, work.out_dims, work.out_types)
    for o, od, ot, kv in zip(work.outputs, work.out_dims, work.out_types, work.values,
                             strict=True):
        state.dims[o] = od if kv is None else type(od)(list(od), values=kv)
        state.types[o] = ot
