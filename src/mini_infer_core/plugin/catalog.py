"""Catalogs: a plugin distribution's creator metadata as plain data.

Listing plugins must not import kernels (or CuPy). A distribution with many kernels keeps, in a
module of its own, a generated ``CATALOG`` list (one dict per plugin class: target, name,
op_type, version, opset range, fields), hands :func:`lazy_creators` of it to mini-infer from its
``mini_infer_creators`` hook, and regenerates it with :func:`write_catalog` after changing a
kernel (a test comparing ``CATALOG`` with :func:`catalog_entries` keeps it honest).

The generated block sits between ``# BEGIN GENERATED`` and ``# END GENERATED`` lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ._base import OnnxPlugin, OnnxPluginCreator
from ._interfaces import IPluginCreator
from ._lazy import LazyPluginCreator

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["catalog_entries", "lazy_creators", "render_catalog", "write_catalog"]

_BEGIN, _END = "# BEGIN GENERATED\n", "# END GENERATED"


def catalog_entries(classes: Iterable[type[OnnxPlugin]]) -> list[dict[str, Any]]:
    """The metadata of each plugin class, as its creator would declare it."""
    return [{"target": f"{cls.__module__}:{cls.__name__}", "name": cls.plugin_type,
             "op_type": cls.op_type, "version": cls.plugin_version,
             "min_opset": cls.min_opset, "max_opset": cls.max_opset,
             "fields": (*cls.attributes, *cls.hidden_fields)}
            for cls in classes]


def lazy_creators(catalog: Iterable[dict[str, Any]], *, namespace: str,
                  devices: tuple[str, ...], domain: str = "", priority: int = 0,
                  creator_class: Callable[..., IPluginCreator] = OnnxPluginCreator
                  ) -> list[IPluginCreator]:
    """One creator per entry; the kernel module is imported on the creator's first use."""
    return [LazyPluginCreator(e["target"], name=e["name"], op_type=e["op_type"],
                              plugin_version=e["version"], namespace=namespace,
                              domain=e.get("domain", domain), field_names=tuple(e["fields"]),
                              devices=devices, priority=priority, min_opset=e["min_opset"],
                              max_opset=e["max_opset"], creator_class=creator_class)
            for e in catalog]


def render_catalog(entries: Iterable[dict[str, Any]]) -> str:
    """The generated block: one entry per line."""
    import pprint

    lines = [f"    {pprint.pformat(e, width=1000, sort_dicts=False)}," for e in entries]
    return "CATALOG: list[dict[str, Any]] = [\n" + "\n".join(lines) + "\n]\n"


def write_catalog(module_file: str | Path, entries: Iterable[dict[str, Any]]) -> None:
    """Rewrite the generated block of ``module_file`` with ``entries``."""
    from pathlib import Path  # writing a catalog only (start-up time)

    path = Path(module_file)
    text = path.read_text()
    start = text.index(_BEGIN) + len(_BEGIN)
    end = text.index(_END)
    path.write_text(text[:start] + render_catalog(entries) + text[end:])
