"""Installed distributions, through ``importlib.metadata``, and the discovery cache keyed by
them.

Entry points and versions come from ``importlib.metadata`` (``sys.path`` order, the first
distribution of a name wins). Importing it costs about a tenth of a second (it pulls in the
``email`` package), paid on every start until now; so what discovery learned is kept in a
cache file, valid while the installed distributions are those it was made from: the key is
the name and modification time of every distribution's metadata folder on ``sys.path``
(installing, upgrading, reinstalling or removing a distribution changes them) and the size
and modification time of every file of the packages discovery imported (an editable
install's sources, a rebuilt extension; the core's own files among them; a package installed
in site-packages is covered by its metadata folder, its files are not stat-ed), with the Python
version. A start whose key matches reads that file and nothing else.

- ``MINI_INFER_DISCOVERY_CACHE=0``: never read or write it;
- ``MINI_INFER_CACHE_DIR``: where it lives (default ``$XDG_CACHE_HOME/mini-infer`` or
  ``~/.cache/mini-infer``), one file per Python environment (``sys.prefix``). Writing one
  removes the files of environments whose folder no longer exists (throw-away virtual
  environments would otherwise leave a file each behind).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import zlib
from typing import Any

from ._record import record

__all__ = ["EntryPoint", "cache_path", "distribution_version", "entry_points", "prune_caches",
           "read_cache", "versions_again", "write_cache"]

#: bumped whenever what the cache holds changes shape
_LAYOUT = 1
#: the metadata folders of installed distributions
_META_SUFFIXES = (".dist-info", ".egg-info")


@record(frozen=True)
class EntryPoint:
    """One ``name = module:attr`` line of a group, with its distribution's name and version
    (None: found where no distribution metadata says who installed it)."""

    name: str
    value: str
    group: str
    dist_name: str | None = None
    dist_version: str | None = None

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def load(self) -> Any:
        """Import the module and follow the attribute path after ``:``, if any (what
        ``importlib.metadata.EntryPoint.load`` does, without importing importlib.metadata)."""
        obj: Any = importlib.import_module(self.module)
        attrs = self.value.partition(":")[2].split("[")[0].strip()
        for attr in filter(None, attrs.split(".")):
            obj = getattr(obj, attr)
        return obj

    def to_json(self) -> list[str | None]:
        return [self.name, self.value, self.group, self.dist_name, self.dist_version]


def entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points of every installed distribution (importlib.metadata's)."""
    from importlib import metadata

    found = []
    for ep in metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        found.append(EntryPoint(ep.name, ep.value, group,
                                None if dist is None else dist.name,
                                None if dist is None else dist.version))
    return found


def versions_again() -> dict[str, str | None]:
    """The versions the cache file recorded (valid or not), each asked of importlib.metadata
    again: what discovery afresh writes with its new cache, so that the first start after an
    install does not ask for them (and rewrite the file) once more."""
    path = cache_path()
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            old = json.load(fh).get("versions", {})
    except (OSError, ValueError, AttributeError):
        return {}
    from importlib import metadata

    found: dict[str, str | None] = {}
    for name in old if isinstance(old, dict) else ():
        try:
            found[str(name)] = metadata.version(str(name))
        except metadata.PackageNotFoundError:
            found[str(name)] = None
    return found


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None: not installed): from the
    discovery cache where it is valid and knows it, else from importlib.metadata."""
    recent = _recent
    cached = recent[1] if recent is not None and recent[0] == cache_path() else read_cache()
    versions: dict[str, str | None] = {} if cached is None else cached.get("versions", {})
    if name in versions:
        return versions[name]
    from importlib import metadata

    try:
        found: str | None = metadata.version(name)
    except metadata.PackageNotFoundError:
        found = None
    if cached is not None:  # the next start asks the cache
        write_cache({**cached, "versions": {**versions, name: found}}, cached["watch"])
    return found


# -- the cache ------------------------------------------------------------------------------

def cache_path() -> str | None:
    """This environment's cache file (None: the cache is off)."""
    if os.environ.get("MINI_INFER_DISCOVERY_CACHE", "").strip().lower() in {"0", "false",
                                                                              "no", "off"}:
        return None
    folder = os.environ.get("MINI_INFER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "mini-infer")
    prefix = zlib.crc32(os.path.realpath(sys.prefix).encode())
    return os.path.join(folder, f"discovery-{prefix:08x}.json")


def _files(folder: str, crc: int) -> int:
    """``crc`` chained with the name, size and modification time of every file under
    ``folder`` (byte code excepted), or of ``folder`` itself where it is a file."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except NotADirectoryError:  # a module of its own
        st = os.stat(folder)
        return zlib.crc32(f"{folder}\0{st.st_size}\0{st.st_mtime_ns}\n".encode(), crc)
    except OSError:
        return zlib.crc32(f"{folder}\0missing".encode(), crc)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                crc = _files(entry.path, crc)
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        crc = zlib.crc32(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode(), crc)
    return crc


def _key(watch: list[str]) -> str:
    """What the cache is valid for: the interpreter, the metadata folders of the
    distributions on ``sys.path`` (name and modification time: installing, upgrading,
    reinstalling or removing one changes them), and the files of the ``watch`` folders."""
    crc = zlib.crc32(f"{_LAYOUT}\0{sys.version}\0{sys.prefix}".encode())
    for entry in sys.path:
        path = entry or "."
        try:
            names = sorted(n for n in os.listdir(path) if n.endswith(_META_SUFFIXES))
        except NotADirectoryError:  # a zip on sys.path: its own modification time
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                mtime = -1
            crc = zlib.crc32(f"{os.path.abspath(path)}\0zip\0{mtime}\n".encode(), crc)
            continue
        except OSError:
            continue
        for name in names:
            try:
                mtime = os.stat(os.path.join(path, name)).st_mtime_ns
            except OSError:
                mtime = -1
            crc = zlib.crc32(f"{os.path.abspath(path)}\0{name}\0{mtime}\n".encode(), crc)
    for folder in watch:
        if not _installed(folder):
            crc = _files(folder, crc)
    return f"{crc:08x}"


#: the folders installers put distributions in: a package there changes with its metadata
#: folder (installing, upgrading or reinstalling rewrites both)
_INSTALL_FOLDERS = ("site-packages", "dist-packages")


def _installed(folder: str) -> bool:
    """Whether ``folder`` (a watched package) was put where it is by an installer, so that
    the key's metadata folders already cover its files: stat-ing each of them (400 files of
    the core and the plugins installed from wheels) was most of a cached start's discovery
    (issue 30). An editable install's sources (or a folder on ``PYTHONPATH``) are watched
    file by file; a file edited in place under site-packages is not seen (reinstall, or
    ``MINI_INFER_DISCOVERY_CACHE=0``)."""
    return os.path.basename(os.path.dirname(folder)) in _INSTALL_FOLDERS


#: the path and content of the cache this process last found valid or wrote: what
#: :func:`distribution_version` asks (the schemas ask it onnx's version when an engine's first
#: kernel module loads; reading and checking the file again cost 2-5 ms of that load)
_recent: tuple[str, dict[str, Any]] | None = None


def read_cache() -> dict[str, Any] | None:
    """The cache's content where it is valid now, else None (a millisecond or two: the
    key is worked out again on each call)."""
    global _recent
    path = cache_path()
    if path is None:
        return None
    data: dict[str, Any] | None = None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict) or data.get("key") != _key(list(data.get("watch", []))):
            data = None
    except (OSError, ValueError):
        data = None
    _recent = None if data is None else (path, data)
    return data


def write_cache(data: dict[str, Any], watch: list[str]) -> None:
    """Store ``data`` (JSON) for the distributions installed now; ``watch``: the folders
    whose files it was made from. A folder that cannot be written is no error."""
    path = cache_path()
    if path is None:
        return
    global _recent
    # the environment first: prune_caches reads it from a file's first bytes
    data = {"prefix": os.path.realpath(sys.prefix), **data, "watch": sorted(set(watch)),
            "key": _key(sorted(set(watch)))}
    _recent = (path, data)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    prune_caches(os.path.dirname(path))


#: the environment at the start of a cache file (compiled where caches are pruned)
_PREFIX = r'^\{"prefix": ("(?:[^"\\]|\\.)*")'


def prune_caches(folder: str) -> list[str]:
    """Remove the cache files in ``folder`` whose environment (``sys.prefix``) no longer
    exists; the removed paths. Files of an older layout, without the environment, stay."""
    import glob  # where a cache is written, not where one is read

    removed = []
    for other in glob.glob(os.path.join(glob.escape(folder), "discovery-*.json")):
        try:
            with open(other, encoding="utf-8") as fh:
                match = re.match(_PREFIX, fh.read(4096))
            if match is None or os.path.isdir(json.loads(match.group(1))):
                continue
            os.unlink(other)
            removed.append(other)
        except (OSError, ValueError):
            continue
    return removed
