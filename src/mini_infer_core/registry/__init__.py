"""Plugin registry and discovery."""

from ._discovery import (
    ENTRY_POINT_GROUP,
    DuplicatePluginWarning,
    discover,
    get_plugin_registry,
    load_plugin_module,
    reset_plugin_registry,
)
from ._hints import install_hint, not_loaded_note
from ._hookspecs import PLUGIN_API_VERSION, PluginPackage, core_requirement, hookimpl, hookspec
from ._records import Conflict, CreatorRecord, DeviceRecord, DistributionRecord
from ._registry import DuplicateCreatorError, PluginRegistry

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_API_VERSION",
    "Conflict",
    "CreatorRecord",
    "DeviceRecord",
    "DistributionRecord",
    "DuplicateCreatorError",
    "DuplicatePluginWarning",
    "PluginPackage",
    "PluginRegistry",
    "core_requirement",
    "discover",
    "get_plugin_registry",
    "hookimpl",
    "hookspec",
    "install_hint",
    "load_plugin_module",
    "not_loaded_note",
    "reset_plugin_registry",
]
