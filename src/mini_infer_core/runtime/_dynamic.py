"""Execution of engines with data-dependent shapes (NonZero, Unique, If, Loop, ...).

Such engines cannot plan all memory before the first run: a node's output shape is known only
once an upstream node has run. Here each output is allocated when its node runs (shapes are
evaluated with the symbols bound so far), data-dependent nodes return their outputs and bind
their fresh symbols, and plugins are re-configured only when their shapes change.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ExecutionError, node_errors
from ..plugin import DataType, Device, IPluginV2, Stream
from ..plugin import _adapter as adapter

if TYPE_CHECKING:
    from ..engine.engine import Engine

__all__ = ["run_dynamic"]

log = logging.getLogger("mini_infer.lifecycle")


def run_dynamic(engine: Engine, plugins: list[IPluginV2], devices: Mapping[str, Device],
                streams: Mapping[str, Stream], constants: Mapping[str, Mapping[str, Any]],
                inputs: Mapping[str, Any], bindings: dict[str, int],
                configured: dict[int, Any], debug: int) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = dict(inputs)
    home = {n: engine.device.name for n in inputs}
    tensors = engine.tensors
    for step, (node, plugin) in enumerate(zip(engine.nodes, plugins, strict=True)):
        device, stream = devices[node.device], streams[node.device]
        local = constants[node.device]
        ins = [(local[n] if n in local else values[n]) if n else None for n in node.inputs]
        if debug >= 2:
            log.debug("enqueue   %s in=%s", node.describe(),
                      [getattr(x, "shape", None) for x in ins])
        with node_errors(node.describe, ExecutionError, "the plugin failed while running"):
            try:
                outs = _step(node, plugin, step, ins, device, stream, tensors, bindings,
                             configured)
            except KeyError as exc:
                raise ExecutionError(f"shape depends on {exc} which is not known yet"
                                     ) from exc
        for o, arr in zip(node.outputs, outs, strict=False):
            values[o] = arr
            home[o] = node.device
    for stream in streams.values():
        stream.synchronize()
    return values, home


def _step(node: Any, plugin: IPluginV2, step: int, ins: list[Any], device: Device,
          stream: Stream, tensors: Mapping[str, Any], bindings: dict[str, int],
          configured: dict[int, Any]) -> list[Any]:
    """Run one node: a data-dependent one returns its outputs (and binds their symbols),
    any other gets outputs allocated for the shapes known so far."""
    dynamic = adapter.dynamic_of(plugin)
    if dynamic is not None:
        outs = dynamic.enqueue_dynamic(ins, None, stream)
        if len(outs) < len(node.outputs):
            raise ExecutionError(f"it returned {len(outs)} outputs, expected "
                                 f"{len(node.outputs)}")
        for o, arr in zip(node.outputs, outs, strict=False):
            _bind(tensors[o].dims, tuple(arr.shape), bindings)
            if arr.dtype != tensors[o].dtype.numpy:
                raise ExecutionError(f"it returned {arr.dtype} for output {o!r}, declared "
                                     f"{tensors[o].dtype.numpy}")
        return list(outs)
    in_descs = [(tuple(x.shape), DataType.from_numpy(x.dtype)) if x is not None else None
                for x in ins]
    out_descs = [(tensors[o].dims.evaluate(bindings), tensors[o].dtype) for o in node.outputs]
    signature = (tuple(in_descs), tuple(out_descs))
    if configured.get(step, (None,))[0] != signature:
        adapter.configure_concrete(plugin, in_descs, out_descs)
        configured[step] = (signature, adapter.workspace_size(plugin, in_descs, out_descs))
    size = configured[step][1]
    ws = device.allocate(size) if size else None
    outs = [device.empty(s, t.numpy) for s, t in out_descs]
    plugin.enqueue(ins, outs, ws, stream)
    return outs


def _bind(dims: Any, shape: tuple[int, ...], bindings: dict[str, int]) -> None:
    if len(dims) != len(shape):
        raise ExecutionError(f"an output has rank {len(shape)}, declared {len(dims)}")
    for d, actual in zip(dims, shape, strict=True):
        if d.is_constant():
            if d.get_constant_value() != actual:
                raise ExecutionError(f"an output has shape {shape}, declared "
                                     f"{dims.display()}")
        elif len(d.symbols) == 1 and str(d) in d.symbols:
            bindings[str(d)] = actual
