"""Files written atomically (a temporary file beside the target, renamed when complete) with the
permissions ``open()`` would give them: ``mkstemp`` makes its file mode 0600, which would leave
an engine or a timing cache in a shared folder unreadable to the others the umask allows."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loading an engine needs neither (start-up time): writing imports tempfile
    from pathlib import Path

__all__ = ["file_mode", "temp_beside"]


def _umask() -> int:
    """The process's umask (read from /proc where it can be, which changes nothing)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(target: Path) -> int:
    """The mode a file written at ``target`` should have: an existing file's own mode (as a
    rewrite keeps it), else 0666 less the umask (as ``open()`` creates files)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def temp_beside(target: Path) -> tuple[int, str]:
    """``mkstemp`` in ``target``'s folder, with :func:`file_mode`'s mode: the descriptor and
    the temporary file's path (rename it onto ``target`` when complete)."""
    import tempfile

    mode = file_mode(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                               dir=target.parent)
    try:
        os.fchmod(fd, mode)
    except OSError:  # a file system without permissions (e.g. some mounts): keep mkstemp's
        pass
    return fd, tmp
