"""Det (schema: :mod:`mini_infer_core.ops.linalg`): LAPACK's LU through NumPy, float16
computed in float32."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import linalg as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["Det"]

Array = NDArray[Any]


class Det(CpuPlugin, schema.Det):
    def compute(self, x: Array, *, out: Array) -> None:
        if x.shape[-1] != x.shape[-2]:
            raise PluginInterfaceError(f"Det {self.name!r}: matrices must be square, got "
                                       f"{x.shape[-2]} x {x.shape[-1]}")
        work = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
        np.copyto(out, np.linalg.det(work), casting="unsafe")
