"""The infer pass: a node's plugin is created and asked for its outputs' shapes, types and
(small integer tensors) build-time values, through whichever interface level it implements."""

from __future__ import annotations

from .._debug import LazyLogger
from ..errors import BuildError, node_errors
from ..network import Node
from ..plugin import IPluginV2, LazyPluginCreator, PluginField, PluginFieldCollection
from ..plugin import _adapter as adapter
from ..plugin._kinds import spec_of
from ..registry import CreatorRecord
from ._values import output_values
from .state import BuildState, NodeWork

__all__ = ["fields_for", "infer", "where_of"]

log = LazyLogger("mini_infer.lifecycle")  # logging imported only once something else has


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


def where_of(state: BuildState, node: Node, rec: CreatorRecord, dev: str) -> str:
    """How errors name a node: its name, operator, plugin, distribution, placement."""
    return (f"node {node.name!r} ({node.qualified_op}, plugin "
            f"{rec.creator.plugin_namespace}::{rec.creator.name} from {rec.provider}"
            f"{'' if dev == state.device.name else ', fallback to ' + dev})")


def _create(state: BuildState, work: NodeWork) -> IPluginV2:
    """The node's plugin; on the fallback device where the selected one does not take the
    kinds of its inputs (a sequence, an optional) and the fallback's does. The plugin that
    runs the node is checked against its declared input count (``IInputCount``)."""
    node = work.node
    plugin = adapter.create(work.record.creator, node.name, fields_for(work.record, node),
                            state.subgraphs)
    refused = adapter.refused_kind(plugin, work.in_kinds)
    if refused is None:
        adapter.check_input_count(plugin, len(node.inputs), work.where)
        return plugin
    fallback = state.fallback
    rec = None
    if fallback and fallback != work.device and not state.config.strict_device:
        rec = state.selector.candidate(node, fallback)
    if rec is None:
        raise BuildError(f"{work.where}: {refused}; no plugin that takes it runs this node"
                         + (" (strict device placement forbids falling back)"
                            if state.config.strict_device else ""))
    plugin.destroy()
    assert fallback is not None
    work.record, work.device = rec, fallback
    state.devices.setdefault(fallback, state.selector.device(fallback))
    work.where = where_of(state, node, rec, fallback)
    plugin = adapter.create(rec.creator, node.name, fields_for(rec, node), state.subgraphs)
    refused = adapter.refused_kind(plugin, work.in_kinds)
    if refused is not None:
        raise BuildError(f"{work.where}: {refused}")
    adapter.check_input_count(plugin, len(node.inputs), work.where)
    return plugin


def infer(state: BuildState, work: NodeWork) -> None:
    node = work.node
    for name in node.inputs:
        if name and name not in state.dims:
            raise BuildError(f"{work.where}: input {name!r} is not produced by any earlier "
                             "node, initializer or graph input (is the graph sorted?)")
    work.in_kinds = [state.kind(n) if n else None for n in node.inputs]
    with node_errors(lambda: work.where, BuildError, "the plugin failed during build"):
        plugin = _create(state, work)
        log.debug("construct %s", work.where)
        work.plugin = plugin
        work.inputs = list(node.inputs)
        work.in_dims = [state.dims[n] if n else None for n in node.inputs]
        work.in_types = [state.types[n] if n else None for n in node.inputs]
        work.out_kinds = adapter.output_kinds(plugin, [
            spec_of(k, t, d) if k is not None and t is not None and d is not None else None
            for k, t, d in zip(work.in_kinds, work.in_types, work.in_dims, strict=True)])
        work.out_dims, work.out_types = adapter.infer_outputs(plugin, work.in_dims,
                                                              work.in_types, work.where)
        adapter.check_kinds(plugin, work.in_kinds, work.out_kinds, work.where)
        adapter.check_formats(plugin, work.in_types, work.out_types, work.where)
    if len(node.outputs) > plugin.num_outputs:
        raise BuildError(f"{work.where}: the node has {len(node.outputs)} outputs, the "
                         f"plugin produces at most {plugin.num_outputs}: fix the model, or "
                         "pin a provider whose plugin has them (--pin)")
    work.outputs = [node.outputs[k] if k < len(node.outputs) and node.outputs[k]
                    else f"{node.name}:scratch{k}" for k in range(plugin.num_outputs)]
    work.values = output_values(plugin, work.in_dims, work.out_dims, work.out_types)
    for o, od, ot, kv, ok in zip(work.outputs, work.out_dims, work.out_types, work.values,
                                 work.out_kinds, strict=True):
        state.dims[o] = od if kv is None else type(od)(list(od), values=kv)
        state.types[o] = ot
        if ok.is_tensor:
            state.kinds.pop(o, None)
        else:
            state.kinds[o] = ok
