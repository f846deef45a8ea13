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

from ..errors import ExecutionError, MiniInferError
from ..plugin import DataType, IPluginV2
from ..plugin import _adapter as adapter

if TYPE_CHECKING:
    from ..engine.engine import Engine
    from ..plugin import Device, Stream

__all__ = ["run_dynamic", "with_node"]

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
        try:
            dynamic = adapter.dynamic_of(plugin)
            if dynamic is not None:
                outs = dynamic.enqueue_dynamic(ins, None, stream)
                if len(outs) < len(node.outputs):
                    raise ExecutionError(f"{node.describe()} returned {len(outs)} outputs, "
                                         f"expected {len(node.outputs)}")
                for o, arr in zip(node.outputs, outs, strict=False):
                    _bind(tensors[o].dims, tuple(arr.shape), bindings)
                    if arr.dtype != tensors[o].dtype.numpy:
                        raise ExecutionError(
                            f"{node.describe()} returned {arr.dtype} for output {o!r}, "
                            f"declared {tensors[o].dtype.numpy}")
            else:
                in_descs = [(tuple(x.shape), DataType.from_numpy(x.dtype)) if x is not None
                            else None for x in ins]
                out_descs = [(tensors[o].dims.evaluate(bindings), tensors[o].dtype)
                             for o in node.outputs]
                signature = (tuple(in_descs), tuple(out_descs))
                ws = None
                if configured.get(step, (None,))[0] != signature:
                    adapter.configure_concrete(plugin, in_descs, out_descs)
                    size = adapter.workspace_size(plugin, in_descs, out_descs)
                    configured[step] = (signature, size)
                size = configured[step][1]
                if size:
                    ws = device.allocate(size)
                outs = [device.empty(s, t.numpy) for s, t in out_descs]
                plugin.enqueue(ins, outs, ws, stream)
        except MiniInferError as exc:
            raise with_node(exc, node.describe()) from exc
        except KeyError as exc:
            raise ExecutionError(f"{node.describe()}: shape depends on {exc} which is not "
                                 "known yet") from exc
        except Exception as exc:
            raise ExecutionError(f"{node.describe()} failed: {type(exc).__name__}: {exc}"
                                 ) from exc
        for o, arr in zip(node.outputs, outs, strict=False):
            values[o] = arr
            home[o] = node.device
    for stream in streams.values():
        stream.synchronize()
    return values, home


def with_node(exc: MiniInferError, where: str) -> MiniInferError:
    """The same error, its message prefixed with the node it came from (once)."""
    if where in str(exc):
        return exc
    return type(exc)(f"{where}: {exc}")


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
