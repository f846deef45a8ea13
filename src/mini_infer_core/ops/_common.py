"""What several schema modules share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs

__all__ = ["Versioned", "ranked"]


def ranked(op: str, inputs: Sequence[DimsExprs | None], index: int, rank: int,
           layout: str) -> DimsExprs:
    """Input ``index``'s dimensions, refused unless it has ``rank`` of them (``layout`` says
    which, for the message)."""
    x = inputs[index]
    assert x is not None
    if len(x) != rank:
        raise PluginInterfaceError(f"{op}: input {index} must be {layout}, it has rank "
                                   f"{len(x)}")
    return x


class Versioned:
    """A schema family whose versions say their opset range in the class line::

        class Attention_23(AttentionBase, opsets=(23, 24)): ...
        class Attention(AttentionBase, opsets=(25, None)): ...

    sets ``min_opset``/``max_opset`` and ``plugin_version`` (the first opset) before
    :class:`~mini_infer_core.ops.Op` derives the attributes of that range. List it before
    ``Op`` among the bases."""

    def __init_subclass__(cls, opsets: tuple[int, int | None] | None = None,
                          **kw: Any) -> None:
        if opsets is not None:
            cls.min_opset, cls.max_opset = opsets  # type: ignore[attr-defined]
            cls.plugin_version = str(opsets[0])  # type: ignore[attr-defined]
        super().__init_subclass__(**kw)
