"""Which mini-infer-core made an engine, and what to do when this one cannot read it.

The header's ``producer`` (``"mini-infer-core X"``) is checked on load: an engine made by a
newer core than this one is refused (it may rely on what this core does not know); older
cores' engines load when their format version is the one this core reads. A format version
mismatch names the core that made the file where its header can still be read.
"""

from __future__ import annotations

import json
from typing import Any

from .._version import __version__
from ..errors import EngineFormatError

__all__ = ["release", "check_producer", "producer_of", "format_advice"]

_PRODUCER = "mini-infer-core "


def release(version: str) -> tuple[int, ...] | None:
    """The numeric release of a version string (``"0.1.0.dev3"`` → ``(0, 1, 0)``), padded to
    three numbers; None when it does not start with one."""
    nums: tuple[int, ...] = ()
    for part in version.strip().split("."):  # what (\d+(?:\.\d+)*) matches at the start
        n = 0
        while n < len(part) and part[n].isdecimal():
            n += 1
        if n == 0:
            break
        nums += (int(part[:n]),)
        if n < len(part) or len(nums) == 8:
            break
    if not nums:
        return None
    return nums + (0,) * (3 - len(nums))


def check_producer(label: str, producer: Any) -> str:
    """The version of the core that made an engine (from ``header["producer"]``); raises
    :class:`EngineFormatError` when it is missing, unreadable or newer than this core."""
    if not isinstance(producer, str) or not producer.startswith(_PRODUCER):
        raise EngineFormatError(
            f"{label}: the header does not name the mini-infer-core that made the engine "
            f"(producer {str(producer)[:80]!r}); rebuild it with `mini-infer build`")
    made = producer.removeprefix(_PRODUCER)
    made_release, ours = release(made), release(__version__)
    if made_release is None:
        raise EngineFormatError(
            f"{label}: the header names an unreadable producer version {made[:80]!r}; "
            "rebuild the engine with `mini-infer build`")
    if ours is not None and made_release > ours:
        raise EngineFormatError(
            f"{label}: the engine was made by mini-infer-core {made}, newer than this one "
            f"({__version__}); upgrade mini-infer-core (pip install "
            f"'mini-infer-core>={made}') or rebuild the engine with this version "
            "(`mini-infer build`)")
    return made


def producer_of(header: Any) -> str | None:
    """Best effort: the core version named by a header this core does not otherwise read
    (another format version), to say which mini-infer-core to install; None if unknown."""
    if header is None or len(header) > 1 << 26:
        return None
    try:
        parsed = json.loads(bytes(header).decode())
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    producer = parsed.get("producer") if isinstance(parsed, dict) else None
    if isinstance(producer, str) and producer.startswith(_PRODUCER):
        made = producer.removeprefix(_PRODUCER)
        if release(made) is not None and len(made) < 64:
            return made
    return None


def format_advice(label: str, version: int, reads: int, made: str | None) -> str:
    """The message for an engine of format ``version`` when this core reads ``reads``."""
    by = f" (made by mini-infer-core {made})" if made else ""
    if made is not None and release(made) == release(__version__):
        made = None  # a development build of this release: its number says nothing more
    if version > reads:
        want = f"'mini-infer-core>={made}'" if made else "-U mini-infer-core"
        return (f"{label}: engine format version {version}{by} is newer than the version "
                f"{reads} this mini-infer-core ({__version__}) reads; upgrade mini-infer-core "
                f"(pip install {want}), or rebuild the engine with this version "
                "(`mini-infer build`)")
    core = f"mini-infer-core {made}" if made else "the mini-infer-core release"
    return (f"{label}: engine format version {version}{by} is older than the version {reads} "
            f"this mini-infer-core ({__version__}) reads; rebuild the engine with this version "
            f"(`mini-infer build`), or install {core} that reads format {version}")
