"""The timing cache: tactic timings kept in a file and reused by later builds (trtexec's
``--timingCacheFile``).

An entry is keyed by what a timing depends on: the plugin (namespace, name, version and the
distribution with its version), a digest of the node's serialized fields (its attributes),
its input shapes and element types, the device (name and :meth:`Device.identity`) and the
host CPU (architecture, model and feature flags). It holds the best time of each tactic in
milliseconds. A build that finds every tunable node in the cache times nothing and chooses
from the cache alone, so two builds with the same cache make the same engine, byte for byte;
nodes missing from it are timed and added (the file is rewritten atomically when something
was added).

File: UTF-8 JSON, ``{"format": "mini-infer-timing-cache", "version": 1, "hosts": {id:
description}, "entries": {key: {tactic: ms}}}``, keys sorted.
"""

from __future__ import annotations

import functools
import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..engine._files import temp_beside
from ..errors import BuildError

__all__ = ["TimingCache", "open_timing_cache", "host_identity"]

_FORMAT = "mini-infer-timing-cache"
_VERSION = 1


@functools.cache
def host_identity() -> tuple[str, str]:
    """``(id, description)`` of this machine's CPU: architecture, model name and feature
    flags (``/proc/cpuinfo`` where there is one). The id is short and stable."""
    import hashlib  # here: OpenSSL's load is a start-up cost a build without timing skips

    machine = platform.machine() or "unknown"
    model, flags = platform.processor() or "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("model name", "cpu model", "hardware") and not model:
                    model = value.strip()
                elif key in ("flags", "features") and not flags:
                    flags = " ".join(sorted(value.split()))
                if model and flags:
                    break
    except OSError:
        pass
    text = f"{machine} | {model} | {flags}"
    ident = f"{machine}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    return ident, f"{machine} {model}".strip()


class TimingCache:
    """Tactic timings by key (see the module doc). ``TimingCache.load(path)`` reads a file (an
    empty cache where it does not exist yet); :meth:`save` writes it back atomically."""

    def __init__(self, entries: Mapping[str, Mapping[str, float]] | None = None, *,
                 path: str | os.PathLike[str] | None = None,
                 hosts: Mapping[str, str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.entries: dict[str, dict[str, float]] = {
            k: dict(v) for k, v in (entries or {}).items()}
        self.hosts: dict[str, str] = dict(hosts or {})
        #: entries found and entries added since this object was made
        self.hits = 0
        self.added = 0

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TimingCache:
        p = Path(path)
        if not p.exists():
            return cls(path=p)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise BuildError(f"timing cache {str(p)!r} cannot be read ({exc}); delete it, or "
                             "give another file: it is rewritten from new timings") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise BuildError(f"{str(p)!r} is not a mini-infer timing cache; give another file")
        if data.get("version") != _VERSION:
            raise BuildError(
                f"timing cache {str(p)!r} has version {data.get('version')!r}; this "
                f"mini-infer-core reads version {_VERSION}: delete it to start a new one")
        entries, hosts = data.get("entries"), data.get("hosts", {})
        ok = isinstance(entries, dict) and isinstance(hosts, dict) and all(
            isinstance(k, str) and isinstance(v, dict) and all(
                isinstance(t, str) and isinstance(ms, (int, float)) and not isinstance(ms, bool)
                for t, ms in v.items()) for k, v in entries.items())
        if not ok:
            raise BuildError(f"timing cache {str(p)!r} is malformed; delete it to start a new "
                             "one")
        return cls(entries, path=p, hosts={str(k): str(v) for k, v in hosts.items()})

    def get(self, key: str, tactics: list[str]) -> dict[str, float] | None:
        """The timings of ``tactics`` under ``key``, or None unless every one is known."""
        entry = self.entries.get(key)
        if entry is None or any(t not in entry for t in tactics):
            return None
        self.hits += 1
        return {t: float(entry[t]) for t in tactics}

    def put(self, key: str, times: Mapping[str, float]) -> None:
        """Add timings (tactics already known under ``key`` keep their time)."""
        entry = self.entries.setdefault(key, {})
        for tactic, ms in times.items():
            entry.setdefault(tactic, float(ms))
        ident, desc = host_identity()
        self.hosts.setdefault(ident, desc)
        self.added += 1

    def to_json(self) -> dict[str, Any]:
        return {"format": _FORMAT, "version": _VERSION,
                "hosts": dict(sorted(self.hosts.items())),
                "entries": {k: dict(sorted(v.items())) for k, v in sorted(self.entries.items())}}

    def save(self, path: str | os.PathLike[str] | None = None) -> None:
        """Write the cache (to ``path``, else where it was loaded from), atomically."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise BuildError("this timing cache has no file: give save() a path")
        text = json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n"
        try:
            fd, tmp = temp_beside(target)  # the mode open() would give, not mkstemp's 0600
        except OSError as exc:
            raise BuildError(f"cannot write the timing cache {str(target)!r}: "
                             f"{exc.strerror or exc}") from exc
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"TimingCache({len(self.entries)} entries, path={str(self.path)!r})"


def open_timing_cache(spec: TimingCache | str | os.PathLike[str] | None) -> TimingCache | None:
    """A config's ``timing_cache``: a :class:`TimingCache`, a file path, or None."""
    if spec is None or isinstance(spec, TimingCache):
        return spec
    return TimingCache.load(spec)
