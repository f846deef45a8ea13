"""The lazy catalog matches the plugin classes, and every creator passes the plugin kit."""

from __future__ import annotations

from types import ModuleType

from mini_infer_cpu_plugins.catalog import CATALOG, lazy_creators
from mini_infer_cpu_plugins.ops import catalog_entries


def test_catalog_is_up_to_date() -> None:
    assert CATALOG == catalog_entries(), (
        "catalog.py is stale: run `python -m mini_infer_cpu_plugins.catalog --write`")


def test_every_lazy_creator_resolves_to_its_class_and_has_complete_metadata(
        plugin_kit: ModuleType) -> None:
    for creator in lazy_creators():
        plugin_kit.check_creator_metadata(creator)
        real = creator.resolve()  # type: ignore[attr-defined]
        assert real.name == creator.name and real.field_names == creator.field_names
