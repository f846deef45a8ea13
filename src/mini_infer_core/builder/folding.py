"""Constant folding: run a node whose inputs are all constants once, at build time."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import BuildError, MiniInferError
from ..plugin import DataType, Device, DimsExprs, IPluginV2
from ..plugin import _adapter as adapter

__all__ = ["fold_node"]

blog = logging.getLogger("mini_infer.builder")


def fold_node(plugin: IPluginV2, inputs: Sequence[str], device: Device,
              constants: dict[str, np.ndarray[Any, Any]], dims: dict[str, DimsExprs],
              types: dict[str, DataType], outs: list[str], where: str
              ) -> list[np.ndarray[Any, Any]]:
    in_descs = [(tuple(constants[n].shape), types[n]) if n else None for n in inputs]
    try:
        plugin.initialize()
        try:
            ins = [device.to_device(constants[n]) if n else None for n in inputs]
            dynamic = adapter.dynamic_of(plugin)
            if dynamic is not None:
                results = list(dynamic.enqueue_dynamic(ins, None, device.create_stream()))
            else:
                out_descs = [(dims[o].to_tuple(), types[o]) for o in outs]
                adapter.configure_concrete(plugin, in_descs, out_descs)
                ws_size = adapter.workspace_size(plugin, in_descs, out_descs)
                ws = device.allocate(ws_size) if ws_size else None
                results = [device.empty(s, t.numpy) for s, t in out_descs]
                plugin.enqueue(ins, results, ws, device.create_stream())
            device.synchronize()
        finally:
            plugin.terminate()
    except MiniInferError:
        raise
    except Exception as exc:
        raise BuildError(f"{where}: constant folding failed: {type(exc).__name__}: {exc}"
                         ) from exc
    blog.debug("folded %s", where)
    return [np.asarray(device.to_host(r)) for r in results]
