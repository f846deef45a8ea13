"""Ray is an optional extra: the check that it is there, and the error when it is not."""

from __future__ import annotations

from ..errors import MiniInferError

__all__ = ["PIP_LINE", "RayNotInstalledError", "require_ray"]

PIP_LINE = "pip install 'mini-infer-core[ray]'"


class RayNotInstalledError(MiniInferError, ImportError):
    """``mini_infer_core.ray`` was imported where Ray Data is not installed (also an
    ``ImportError``, so ``except ImportError`` catches it)."""


def require_ray() -> None:
    """Import Ray Data or raise :class:`RayNotInstalledError` with the line that installs it."""
    try:
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise RayNotInstalledError(
            f"mini_infer_core.ray needs Ray Data, which is not installed in this environment "
            f"({type(exc).__name__}: {exc}); install the extra: {PIP_LINE}") from exc
