"""The creators' metadata without importing the compiled kernels: the classes this package's
public modules list in ``__all__`` are named like the core schemas they implement, whose
metadata they have (:func:`mini_infer_core.ops.kernel_creators`)."""

from __future__ import annotations

import os

from mini_infer_cpu_plugins.serialization import CpuCreator

from mini_infer_core.ops import kernel_creators
from mini_infer_core.plugin import IPluginCreator, LazyPluginCreator

from . import NAMESPACE, PRIORITY

__all__ = ["NativeCreator", "lazy_creators", "reformat_creator"]


class NativeCreator(CpuCreator):
    """cpu_basic's serialized form (format tag + fields); the plugins name this
    distribution in errors (``package``, set at the end of each kernel module). Defined here so
    that listing plugins imports no kernel module (nor NumPy)."""


def lazy_creators() -> list[IPluginCreator]:
    return kernel_creators(f"{__package__}", os.path.dirname(__file__), namespace=NAMESPACE,
                           devices=("cpu",), priority=PRIORITY, creator_class=NativeCreator)


def reformat_creator() -> IPluginCreator:
    """The creator of the builder's Reformat steps (:mod:`.reformat`), lazy like the kernels'
    (the discovery cache keeps it as data; its module is imported when a build or an engine
    first needs it)."""
    return LazyPluginCreator(f"{__package__}.reformat:CREATOR", name="Reformat",
                             namespace=NAMESPACE, field_names=("src", "dst"),
                             op_type="Reformat", domain="mini_infer.core", devices=("cpu",),
                             priority=PRIORITY, creator_class=NativeCreator)
