"""What several schema modules share."""

from __future__ import annotations

from typing import Any

__all__ = ["Versioned"]


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
