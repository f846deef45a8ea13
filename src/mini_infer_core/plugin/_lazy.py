"""Creators described by metadata, whose plugin class is imported only when first used.

Listing plugins (``mini-infer plugins``) must not import kernels or heavy dependencies such as
CuPy. A distribution therefore hands over ``LazyPluginCreator``s: name, version, operator,
fields and devices are plain data; the kernel module is imported on the first
``create_plugin`` / ``deserialize_plugin``, and its class is checked against the metadata.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import PluginLoadError
from ._base import OnnxPlugin, OnnxPluginCreator
from ._fields import PluginFieldCollection, as_field_collection
from ._interfaces import IPluginCreator, IPluginV2

__all__ = ["LazyPluginCreator"]


class LazyPluginCreator(IPluginCreator):
    def __init__(self, target: str, *, name: str, namespace: str, field_names: tuple[str, ...],
                 op_type: str | None = None, domain: str = "", plugin_version: str = "1",
                 devices: tuple[str, ...] = ("cpu",), priority: int = 0, min_opset: int = 1,
                 max_opset: int | None = None,
                 creator_class: Callable[..., IPluginCreator] = OnnxPluginCreator) -> None:
        self.target = target
        self.name = name
        self.op_type = op_type or name
        self.domain = domain
        self.plugin_version = plugin_version
        self.plugin_namespace = namespace
        self.devices = tuple(devices)
        self.priority = priority
        self.min_opset = min_opset
        self.max_opset = max_opset
        self._field_names = tuple(field_names)
        self._creator_class = creator_class
        self._real: IPluginCreator | None = None
        self._lock = threading.Lock()

    @property
    def field_names(self) -> tuple[str, ...]:
        """The declared fields; once the plugin class is loaded, the fields it accepts."""
        real = self._real
        return tuple(real.field_names) if real is not None else self._field_names

    @property
    def loaded(self) -> bool:
        return self._real is not None

    def resolve(self) -> IPluginCreator:
        """Import the plugin class and check it matches the declared metadata."""
        with self._lock:
            if self._real is None:
                self._real = self._load()
            return self._real

    def _load(self) -> IPluginCreator:
        module_name, _, attr = self.target.partition(":")
        try:
            obj: Any = getattr(importlib.import_module(module_name), attr)
        except Exception as exc:
            raise PluginLoadError(
                f"plugin {self.plugin_namespace}::{self.name}: cannot import {self.target}: "
                f"{type(exc).__name__}: {exc}") from exc
        if isinstance(obj, type) and issubclass(obj, OnnxPlugin):
            real = self._creator_class(obj, namespace=self.plugin_namespace,
                                       devices=self.devices, priority=self.priority,
                                       min_opset=self.min_opset, max_opset=self.max_opset)
        elif isinstance(obj, IPluginCreator):
            real = obj
        else:
            raise PluginLoadError(f"{self.target} is neither an OnnxPlugin class nor a creator")
        declared = (self.name, self.plugin_version, self.op_type, self.domain, self.min_opset,
                    self.max_opset)
        actual = (real.name, real.plugin_version, real.op_type, real.domain, real.min_opset,
                  real.max_opset)
        missing = sorted(set(self._field_names) - set(real.field_names))
        if declared != actual or missing:
            raise PluginLoadError(
                f"{self.target}: declared metadata {declared} (fields {self._field_names}) "
                f"does not match the plugin class {actual} (fields {tuple(real.field_names)}"
                f"{', lacking ' + str(missing) if missing else ''}); the distribution's "
                "catalog is stale or its kernel does not accept what its schema declares")
        return real

    def create_plugin(self, name: str,
                      fields: PluginFieldCollection | Mapping[str, Any]) -> IPluginV2:
        fields = as_field_collection(fields, f"{self.plugin_namespace}::{self.name} "
                                             "create_plugin")
        return self.resolve().create_plugin(name, fields)

    def deserialize_plugin(self, name: str, data: bytes) -> IPluginV2:
        return self.resolve().deserialize_plugin(name, data)

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else "not imported"
        return (f"LazyPluginCreator({self.domain or 'ai.onnx'}::{self.op_type} "
                f"v{self.plugin_version} ns={self.plugin_namespace!r} -> {self.target}, {state})")
