"""``MINI_INFER_DEBUG=1`` / ``2``: lifecycle logging on stderr without configuring logging.

The core logs on the ``mini_infer`` loggers (``mini_infer.lifecycle``, ``mini_infer.builder``)
at DEBUG; an application that configured logging sees those records through its own handlers
once the level allows them. Set in the environment, ``MINI_INFER_DEBUG`` lowers the level to
DEBUG and, where no handler would show the records, adds one that writes them to stderr
(``2`` also logs every enqueue with its shapes: :mod:`.runtime.context` reads the level)."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["HANDLER_NAME", "LazyLogger", "debug_level", "install_from_env", "lifecycle_logger"]

#: the name of the handler added here (``mini-infer -v`` adds none where it is present)
HANDLER_NAME = "mini_infer_debug"


def debug_level() -> int:
    """``MINI_INFER_DEBUG`` as a number (0 where unset or not a number)."""
    try:
        return int(os.environ.get("MINI_INFER_DEBUG", "0").strip() or 0)
    except ValueError:
        return 0


def install_from_env() -> None:
    """Show the ``mini_infer`` loggers' DEBUG records on stderr when ``MINI_INFER_DEBUG`` is
    1 or more (once per process; nothing to do, and logging not imported, otherwise)."""
    if debug_level() < 1:
        return
    import logging

    logger = logging.getLogger("mini_infer")
    logger.setLevel(logging.DEBUG)
    if any(h.get_name() == HANDLER_NAME for h in logger.handlers) or logger.hasHandlers():
        return  # ours already, or the application's handlers show the records
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    logger.addHandler(handler)


class LazyLogger:
    """A :class:`logging.Logger` by name that imports :mod:`logging` only once something
    else has (a few milliseconds of a cold start, issue 30): until then nothing can have
    configured a handler or lowered a level, so a DEBUG or INFO record would be dropped by
    the logger itself, and is dropped here without being made. Anything else (a warning,
    ``isEnabledFor``, ``setLevel``, ...) goes to the real logger, imported then."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def _real(self) -> Any:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        if self._logger is not None or "logging" in sys.modules:
            self._real().debug(msg, *args, stacklevel=2, **kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        if self._logger is not None or "logging" in sys.modules:
            self._real().info(msg, *args, stacklevel=2, **kwargs)

    def debugging(self) -> bool:
        """Whether a DEBUG record would be emitted: what a caller asks before making an
        argument that costs (a node's description, for every node of a load)."""
        if self._logger is None and "logging" not in sys.modules:
            return False
        return bool(self._real().isEnabledFor(10))  # logging.DEBUG

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)


def lifecycle_logger() -> LazyLogger:
    """The ``mini_infer.lifecycle`` logger, :class:`LazyLogger`'s way."""
    return LazyLogger("mini_infer.lifecycle")
