"""The fold pass: a node whose outputs are known at build time becomes constants.

Either value inference already knows every output value (shape arithmetic: nothing runs), or
every input is a constant and the node runs once here, on its device or -- when that device
is absent (cross-building for a GPU on a machine without one) -- through a host plugin for
the same operator. A plugin that declares its outputs differ from run to run
(:class:`~mini_infer_core.plugin.INondeterministic`: the random operators) is never folded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._debug import LazyLogger
from ..errors import BuildError, node_errors
from ..plugin import Device, DimsExprs, IPluginV2
from ..plugin import _adapter as adapter
from ._values import constant_values
from .infer import fields_for
from .state import BuildState, NodeWork

__all__ = ["fold"]

blog = LazyLogger("mini_infer.builder")  # logging imported only once something else has


def fold(state: BuildState, work: NodeWork) -> bool:
    """Replace the node by constants where its outputs are known; True if it was."""
    plugin = work.plugin
    assert plugin is not None
    if not state.config.fold_constants or not adapter.may_fold(plugin):
        return False
    if any(k is not None and not k.is_tensor for k in [*work.in_kinds, *work.out_kinds]):
        return False  # sequences, optionals, maps are never constants
    if all(constant_values(kv) for kv in work.values):
        for o, kv in zip(work.outputs, work.values, strict=True):
            state.constants[o] = np.array([v.get_constant_value() for v in kv or ()],
                                          dtype=state.types[o].numpy
                                          ).reshape(state.dims[o].to_tuple())
            state.dims[o] = DimsExprs.of_constant(state.constants[o])
        return _folded(state, plugin)
    inputs_const = all(n == "" or n in state.constants for n in work.inputs)
    runnable = adapter.is_data_dependent(plugin) or all(d.is_static() for d in work.out_dims)
    if not (inputs_const and runnable):
        return False
    folder = _folder(state, work)
    if folder is None:
        return False
    host_plugin, device = folder
    values = _run(host_plugin, device, state, work)
    if host_plugin is not plugin:
        host_plugin.destroy()
    for o, v in zip(work.outputs, values, strict=True):
        state.constants[o] = v
        state.dims[o] = DimsExprs.of_constant(v)
    return _folded(state, plugin)


def _folded(state: BuildState, plugin: IPluginV2) -> bool:
    state.folded += 1
    plugin.destroy()
    return True


def _folder(state: BuildState, work: NodeWork) -> tuple[IPluginV2, Device] | None:
    """What folds a node: its own plugin, or a host plugin when its device is absent."""
    assert work.plugin is not None
    device = state.devices[work.device]
    if device.availability()[0]:
        return work.plugin, device
    for name in ([state.fallback] if state.fallback else []) + ["cpu"]:
        dev = state.registry.get_device(name)
        rec = state.selector.candidate(work.node, name) if dev is not None else None
        if rec is not None and dev is not None and dev.availability()[0]:
            return adapter.create(rec.creator, work.node.name, fields_for(rec, work.node),
                                  state.subgraphs), dev
    return None


def _run(plugin: IPluginV2, device: Device, state: BuildState, work: NodeWork
         ) -> list[np.ndarray[Any, Any]]:
    constants, types = state.constants, state.types
    in_descs = [(tuple(constants[n].shape), types[n]) if n else None for n in work.inputs]
    with node_errors(work.where, BuildError, "constant folding failed"):
        plugin.initialize()
        try:
            ins = [device.to_device(constants[n]) if n else None for n in work.inputs]
            dynamic = adapter.dynamic_of(plugin)
            if dynamic is not None:
                results = list(dynamic.enqueue_dynamic(ins, None, device.create_stream()))
            else:
                out_descs = [(state.dims[o].to_tuple(), types[o]) for o in work.outputs]
                adapter.configure_concrete(plugin, in_descs, out_descs)
                ws_size = adapter.workspace_size(plugin, in_descs, out_descs)
                ws = device.allocate(ws_size) if ws_size else None
                results = [device.empty(s, t.numpy) for s, t in out_descs]
                plugin.enqueue(ins, results, ws, device.create_stream())
            device.synchronize()
        finally:
            plugin.terminate()
    blog.debug("folded %s", work.where)
    return [np.asarray(device.to_host(r)) for r in results]
