"""What another CPU distribution that builds on these kernels may use, besides the kernel
modules themselves (``mini_infer_cpu_plugins.ops.<family>``, whose operator classes it may
subclass): the kernel families behind several opsets' classes (``SoftmaxKernel``,
``ReduceKernel``) and the helpers the kernels share.

Public: its names keep their meaning within a minor release, so a distribution that imports
them declares ``mini-infer-cpu-plugins>=X.Y,<X.Y+1`` (mini-infer-cpu-native does). The
modules behind them (``ops._util``, ``ops._blas``, ``ops._dynamic``) are private and may change
in any release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ops._blas import available as blas_available
from .ops._blas import gemm as blas_gemm
from .ops._dynamic import as_ints
from .ops._util import Scratch, in_place

if TYPE_CHECKING:
    from .ops.reduce import _Reduce as ReduceKernel
    from .ops.softmax import _Softmax as SoftmaxKernel

__all__ = ["ReduceKernel", "Scratch", "SoftmaxKernel", "as_ints", "blas_available", "blas_gemm",
           "in_place"]

#: the kernel families, each imported with its module on first use (PEP 562): a module's
#: operator classes are most of what loading an engine costs, and a distribution that uses
#: the helpers above need not pay for the reductions' 50 classes (issue 30)
_FAMILIES = {"SoftmaxKernel": (".ops.softmax", "_Softmax"),
             "ReduceKernel": (".ops.reduce", "_Reduce")}


def __getattr__(name: str) -> Any:
    if name not in _FAMILIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, attr = _FAMILIES[name]
    found = getattr(importlib.import_module(module, __package__), attr)
    globals()[name] = found
    return found
