"""Catalogs of kernel packages built on the core's schemas, made without importing a kernel.

A package whose kernels are named like the schemas they implement (``class Relu(CpuPlugin,
ops.activation.Relu)``, listed in its modules' ``__all__``) needs no catalog of its own: the
names in ``__all__`` are read from the source (no import, so no CuPy), and each one's
metadata -- operator, domain, plugin version, opset range, fields -- is its schema's. Adding
an operator to a device is then its schema and its kernel, and nothing else.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..plugin import IPluginCreator
from ..plugin.catalog import lazy_creators
from ._schema import Op

__all__ = ["declared_kernels", "kernel_catalog", "kernel_creators", "package_classes",
           "schema_kernels", "schema_named"]

_K = TypeVar("_K")


@functools.cache
def _schemas_by_name() -> dict[str, type[Op]]:
    from . import schema_classes

    found: dict[str, type[Op]] = {}
    for cls in schema_classes():
        if cls.__name__ in found:
            raise TypeError(f"two operator schemas are named {cls.__name__}: "
                            f"{found[cls.__name__].__module__} and {cls.__module__}")
        found[cls.__name__] = cls
    return found


def schema_named(name: str) -> type[Op] | None:
    """The operator schema whose class is called ``name`` (``Conv``, ``Softmax_13``)."""
    return _schemas_by_name().get(name)


def _all_names(path: Path) -> tuple[str, ...]:
    """The string literals of a module's ``__all__``, read from its source."""
    return _parsed_all(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=512)
def _parsed_all(path: str, mtime_ns: int) -> tuple[str, ...]:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)):
                return tuple(e.value for e in value.elts
                             if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return ()


def _modules(package: str, directory: Path) -> list[tuple[str, Path]]:
    if directory.is_file():
        return [(package, directory)]
    return [(f"{package}.{p.stem}", p) for p in sorted(directory.glob("*.py"))
            if not p.stem.startswith("_")]


def declared_kernels(package: str, directory: Path) -> list[tuple[str, str]]:
    """``(module, class name)`` for every name a public module of ``package`` (or the module
    ``directory`` itself, when it is a file) lists in ``__all__`` that names a schema."""
    return [(module, name) for module, path in _modules(package, directory)
            for name in _all_names(path) if schema_named(name) is not None]


def kernel_catalog(package: str, directory: str | Path) -> list[dict[str, Any]]:
    """The catalog entries (``target``, ``name``, ``op_type``, ``domain``, ``version``, opset
    range, ``fields``) of the kernels ``package`` declares, from their schemas, for
    :func:`mini_infer_core.plugin.catalog.lazy_creators`."""
    entries = []
    for module, name in declared_kernels(package, Path(directory)):
        schema = schema_named(name)
        assert schema is not None
        entries.append({"target": f"{module}:{name}", "name": schema.plugin_type,
                        "op_type": schema.op_type, "domain": schema.domain,
                        "version": schema.plugin_version, "min_opset": schema.min_opset,
                        "max_opset": schema.max_opset,
                        "fields": (*schema.attributes, *schema.hidden_fields)})
    return entries


def kernel_creators(package: str, directory: str | Path, *, namespace: str,
                    devices: tuple[str, ...], priority: int = 0,
                    creator_class: Callable[..., IPluginCreator] | None = None
                    ) -> list[IPluginCreator]:
    """A lazy creator for every kernel ``package`` declares (see :func:`kernel_catalog`):
    what a distribution's ``mini_infer_creators`` hook returns. The kernel module is imported
    on the creator's first use."""
    kw: dict[str, Any] = {} if creator_class is None else {"creator_class": creator_class}
    return lazy_creators(kernel_catalog(package, directory), namespace=namespace,
                         devices=devices, priority=priority, **kw)


def package_classes(package: str) -> list[Any]:
    """The classes every public module of ``package`` lists in ``__all__`` that implement a
    schema (imports the modules: for tests and for creators made eagerly)."""
    pkg = importlib.import_module(package)
    classes: list[Any] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{package}.{info.name}")
        classes.extend(getattr(mod, name) for name in mod.__all__
                       if schema_named(name) is not None)
    return classes


def schema_kernels(kernel: type[_K], *bases: type[Any], module: str) -> tuple[type[_K], ...]:
    """One kernel class per class of ``bases``: ``kernel`` (the shared ``compute``) mixed
    with that base, named like it and placed in ``module``, for the operator versions one
    kernel serves alike::

        Softmax_1, Softmax_13 = schema_kernels(_Softmax, schema.Softmax_1, schema.Softmax_13,
                                               module=__name__)

    A base is a schema or another package's kernel of one named like it (a faster kernel
    whose ``compute`` falls back to it through ``super()``), so that the module's ``__all__``
    declares the classes to :func:`kernel_catalog`."""
    made = []
    for base in bases:
        name = base.__name__
        if not any(c.__name__ == name and c.__module__.startswith(f"{__package__}.")
                   and name in getattr(sys.modules[c.__module__], "__all__", ())
                   for c in base.__mro__):
            raise TypeError(f"schema_kernels: {base.__module__}.{name} is not named like an "
                            "operator schema; subclass it with a class statement instead")

        def body(ns: dict[str, Any], name: str = name) -> None:
            ns.update(__module__=module, __qualname__=name)

        made.append(types.new_class(name, (kernel, base), exec_body=body))
    return tuple(made)
