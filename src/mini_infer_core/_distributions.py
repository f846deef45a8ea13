"""Installed distributions' entry points and versions, read straight from their metadata
folders on ``sys.path`` (``NAME-VERSION.dist-info``, ``NAME.egg-info``).

Listing plugins and loading an engine happen on every command: ``importlib_metadata`` costs
about a tenth of a second more to import (it pulls in the ``email`` package) and parses each
distribution's whole metadata as a mail message to learn its name and version. Here only the
header lines ``Name:`` and ``Version:`` are read, and only of the distributions whose
``entry_points.txt`` has the group asked for. The semantics are ``importlib_metadata``'s:
``sys.path`` order, the first distribution of a name wins. A ``sys.path`` entry that is not a
folder (a zipped egg, a wheel on the path) is left to ``importlib_metadata``, which reads it.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["EntryPoint", "distribution_version", "entry_points"]

_META_SUFFIXES = (".dist-info", ".egg-info")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
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
        """Import the module and follow the attribute path after ``:``, if any."""
        obj: Any = importlib.import_module(self.module)
        attrs = self.value.partition(":")[2].split("[")[0].strip()
        for attr in filter(None, attrs.split(".")):
            obj = getattr(obj, attr)
        return obj


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """The ``name = value`` lines of ``[group]`` in an entry_points.txt."""
    found: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.strip()))
    return found


def _header(folder: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the metadata file's header (METADATA or PKG-INFO)."""
    name = version = None
    for file in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, file), encoding="utf-8") as fh:
                for line in fh:
                    if not line.strip():
                        break  # the header ends at the first empty line
                    if line.startswith("Name:"):
                        name = line[5:].strip()
                    elif line.startswith("Version:"):
                        version = line[8:].strip()
                    if name and version:
                        break
        except OSError:
            continue
        return name, version
    return None, None


def _metadata_folders() -> list[str] | None:
    """Every distribution metadata folder on ``sys.path``, in path order; None where an entry
    is not a folder we can list (importlib_metadata must read it)."""
    folders: list[str] = []
    for entry in sys.path:
        path = entry or "."
        if not os.path.isdir(path):
            if os.path.exists(path):
                return None  # a zip on sys.path
            continue
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        folders += [os.path.join(path, n) for n in names if n.endswith(_META_SUFFIXES)]
    return folders


def _folder_name(folder: str) -> str:
    """The distribution name a metadata folder's own name gives (``a_b-1.0.dist-info``)."""
    base = os.path.basename(folder).rsplit(".", 1)[0]
    return _normalize(base.split("-")[0])


def entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points of every installed distribution, the first of each name."""
    folders = _metadata_folders()
    if folders is None:
        return _fallback(group)
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for folder in folders:
        ident = _folder_name(folder)
        if ident in seen:
            continue
        seen.add(ident)
        try:
            with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            continue
        if f"[{group}]" not in text.replace(" ", ""):
            continue
        lines = _section(text, group)
        if lines:
            name, version = _header(folder)
            found += [EntryPoint(n, v, group, name, version) for n, v in lines]
    return found


def _fallback(group: str) -> list[EntryPoint]:
    import importlib_metadata

    return [EntryPoint(ep.name, ep.value, group,
                       None if ep.dist is None else ep.dist.metadata["Name"],
                       None if ep.dist is None else ep.dist.metadata["Version"])
            for ep in importlib_metadata.entry_points(group=group)]


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None: not installed)."""
    folders = _metadata_folders()
    if folders is None:
        import importlib_metadata

        try:
            return str(importlib_metadata.version(name))
        except importlib_metadata.PackageNotFoundError:
            return None
    wanted = _normalize(name)
    for folder in folders:
        if _folder_name(folder) == wanted:
            found_name, version = _header(folder)
            if found_name is not None and _normalize(found_name) == wanted:
                return version
    return None
