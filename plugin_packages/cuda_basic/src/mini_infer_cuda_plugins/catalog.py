"""The creators' metadata without importing a kernel module (or CuPy): the kernels an ``ops``
module lists in ``__all__`` are named like the core schemas they implement, whose metadata
they have (:func:`mini_infer_core.ops.kernel_creators`)."""

from __future__ import annotations

from pathlib import Path

from mini_infer_core.ops import kernel_creators
from mini_infer_core.plugin import IPluginCreator

from . import NAMESPACE

__all__ = ["lazy_creators"]


def lazy_creators() -> list[IPluginCreator]:
    """One lazy creator per kernel: its module is imported on first use."""
    from .serialization import CudaCreator

    kernels = Path(__file__).parent / "ops"
    return kernel_creators(f"{__package__}.ops", kernels, creator_class=CudaCreator,
                           namespace=NAMESPACE, devices=("cuda",))
