"""This package's creators as data, so that listing plugins imports no kernel module.

Every class an ``ops`` module lists in ``__all__`` is the kernel of the core schema of the same
name (:mod:`mini_infer_core.ops.ml`), which gives its metadata; the names are read from the
sources (:func:`mini_infer_core.ops.kernel_catalog`), and a kernel module is imported on its
creator's first use.
"""

from __future__ import annotations

import os

from mini_infer_core.ops import kernel_creators
from mini_infer_core.plugin import IPluginCreator

from . import NAMESPACE

__all__ = ["lazy_creators"]


def lazy_creators() -> list[IPluginCreator]:
    from .serialization import MlCreator

    return kernel_creators(f"{__package__}.ops", os.path.join(os.path.dirname(__file__), "ops"),
                           namespace=NAMESPACE, devices=("cpu",), creator_class=MlCreator)
