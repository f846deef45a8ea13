"""LpPool and GlobalLpPool: p-norms over windows (:class:`.pool.PoolBase`'s geometry) and
over every spatial axis, in a module of their own so that an engine of the other pools makes
none of their classes (issue 30)."""

from __future__ import annotations

from typing import ClassVar

from ._schema import FLOATS
from .pool import GlobalPoolBase, PoolBase

__all__ = ["LpPool_1", "LpPool", "GlobalLpPool_1", "GlobalLpPool"]


class PFloat:
    """Opset 1 of LpPool and GlobalLpPool: ``p`` is a float."""

    plugin_version = "1"
    max_opset: ClassVar[int | None] = 1


class PInt:
    """LpPool and GlobalLpPool from opset 2: ``p`` is an int."""

    plugin_version = "2"
    min_opset: ClassVar[int] = 2


class LpPoolBase(PoolBase):
    """(sum over the window of |x|^p)^(1/p); pads count as zeros."""

    dtypes = FLOATS
    kind = "lp"


class LpPool_1(PFloat, LpPoolBase):  # noqa: N801
    pass


class LpPool(PInt, LpPoolBase):
    pass


class GlobalLpPoolBase(GlobalPoolBase):
    """(sum over the spatial axes of |x|^p)^(1/p)."""

    dtypes = FLOATS


class GlobalLpPool_1(PFloat, GlobalLpPoolBase):  # noqa: N801
    pass


class GlobalLpPool(PInt, GlobalLpPoolBase):
    pass
