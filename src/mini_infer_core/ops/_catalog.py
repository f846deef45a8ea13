"""Catalogs of kernel packages built on the core's schemas, made without importing a kernel.

A package whose kernels are named like the schemas they implement (``class Relu(CpuPlugin,
ops.activation.Relu)``, listed in its modules' ``__all__``) needs no catalog of its own: the
names in ``__all__`` are read from the source (no import, so no CuPy), and each one's
metadata -- operator, domain, plugin version, opset range, fields -- is its schema's, read
from the generated table (:func:`._memo.schemas`) where it is current, so that listing plugins
imports no schema module. Adding an operator to a device is then its schema and its kernel,
and nothing else.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..plugin.catalog import lazy_creators
from . import _memo

if TYPE_CHECKING:
    import ast
    from pathlib import Path  # imported where a catalog is made, not to load an engine

    from ..plugin import IPluginCreator
    from ._schema import Op

__all__ = ["declared_kernels", "kernel_catalog", "kernel_creators", "lazy_kernels",
           "package_classes", "schema_kernels", "schema_named", "schemas_by_name"]

_K = TypeVar("_K")


@functools.cache
def schemas_by_name() -> dict[str, type[Op]]:
    """Every operator schema by class name (imports them all)."""
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
    return schemas_by_name().get(name)


@functools.cache
def _metadata() -> dict[str, dict[str, Any]]:
    """Every schema's creator metadata by class name: from the generated table where it is
    current (no schema imported), else from the classes."""
    table = _memo.schemas()
    if table is not None:
        return table
    return {name: _memo.schema_metadata(cls) for name, cls in schemas_by_name().items()}


class _LazyPattern:
    """A regular expression compiled when first used: catalogs are read from sources only
    where the discovery cache is stale, and compiling these when the module is imported
    cost every engine load half a millisecond (issue 30)."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


def _lazy_re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return cast("re.Pattern[str]", _LazyPattern(pattern, flags))


def _all_names(path: Path) -> tuple[str, ...]:
    """The string literals of a module's ``__all__``, read from its source."""
    return _parsed_all(str(path), path.stat().st_mtime_ns)


#: a line that may begin a module-level ``__all__ = ...`` (not ``==``, ``+=`` or annotated)
_ALL_LINE = _lazy_re(r"^__all__[ \t]*=(?!=)", re.MULTILINE)
#: the longest ``__all__`` literal read alone; a longer one is read with the whole module
_MAX_CHARS = 20_000


@functools.lru_cache(maxsize=512)
def _parsed_all(path: str, mtime_ns: int) -> tuple[str, ...]:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    for found in _ALL_LINE.finditer(text):
        names = _statement_all(text, found.start())
        if names is not None:
            return names
    import ast  # the rare module whose __all__ is not read alone

    return _tree_all(ast.parse(text, path))


def _statement_all(text: str, start: int) -> tuple[str, ...] | None:
    """The names of the ``__all__ = [...]`` statement that begins at ``start``, read alone (a
    whole module's parse costs far more): its bracketed literal, up to the matching bracket
    outside strings and comments, evaluated once; None where that is not sure: the line may
    sit in a string, or the statement is not a list or tuple of strings."""
    if text.count('"""', 0, start) % 2 or text.count("'''", 0, start) % 2:
        return None
    opened = _BRACKET.match(text, text.index("=", start) + 1)
    if opened is None:
        return None
    literal = _bracketed(text, opened.end() - 1)
    if literal is None:
        return None
    if not _END.match(text, opened.end() - 1 + len(literal)):
        return None  # more follows (``[...] + other``): the whole module is read
    plain = _COMMENT.sub("", literal)
    if _NAMES.fullmatch(plain):  # the usual case, read without compiling anything
        return tuple(m.group(2) for m in _NAME.finditer(plain)) or None
    import ast

    try:
        value = ast.literal_eval(literal)
    except (SyntaxError, ValueError):
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return None
    return tuple(value) or None


#: the opening bracket of an ``__all__`` literal, after ``=``
_BRACKET = _lazy_re(r"[ \t]*[\[(]")


#: the end of a statement after its literal: blanks, a comment, the line's end
_END = _lazy_re(r"[ \t]*(?:#[^\n]*)?(?:\n|$)")
#: a comment in an ``__all__`` literal
_COMMENT = _lazy_re(r"#[^\n]*")
#: one quoted identifier
_NAME = _lazy_re(r"""(["'])([A-Za-z_][A-Za-z0-9_]*)\1""")
#: a list or tuple of quoted identifiers and nothing else
_NAMES = _lazy_re(r"""[\[(]\s*(?:(["'])[A-Za-z_][A-Za-z0-9_]*\1\s*,\s*)*"""
                    r"""(?:(["'])[A-Za-z_][A-Za-z0-9_]*\2\s*)?[\])]""")
#: what matters when looking for the closing bracket: strings, comments and brackets
_TOKEN = _lazy_re(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|#[^\n]*|[\[\]()]""")


def _bracketed(text: str, at: int) -> str | None:
    """``text[at:]`` up to the bracket that closes the one at ``at`` (strings and comments
    skipped), or None (no close within :data:`_MAX_CHARS`)."""
    depth = 0
    for token in _TOKEN.finditer(text, at, min(len(text), at + _MAX_CHARS)):
        kind = token.group()
        if kind in ("[", "("):
            depth += 1
        elif kind in ("]", ")"):
            depth -= 1
            if depth == 0:
                return text[at:token.end()]
    return None


def _tree_all(tree: ast.Module) -> tuple[str, ...]:
    """The string literals of the first module-level ``__all__`` list or tuple."""
    import ast

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
    schemas = _metadata()
    return [(module, name) for module, path in _modules(package, directory)
            for name in _all_names(path) if name in schemas]


def kernel_catalog(package: str, directory: str | Path) -> list[dict[str, Any]]:
    """The catalog entries (``target``, ``name``, ``op_type``, ``domain``, ``version``, opset
    range, ``fields``) of the kernels ``package`` declares, from their schemas, for
    :func:`mini_infer_core.plugin.catalog.lazy_creators`."""
    schemas = _metadata()
    return [{"target": f"{module}:{name}", **schemas[name]}
            for module, name in declared_kernels(package, _path(directory))]


def _path(directory: str | Path) -> Path:
    from pathlib import Path

    return Path(directory)


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
    import pkgutil

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


def lazy_kernels(module: str, kernels: dict[str, tuple[type[Any], str]],
                 made: Callable[[type[Any]], None] | None = None) -> Callable[[str], Any]:
    """A ``__getattr__`` (PEP 562) for ``module`` that makes the kernel class ``name`` on
    first access, as :func:`schema_kernels` does, from ``kernels[name]``: ``(kernel, base)``,
    ``base`` written ``"package.module:Class"`` and imported only then (``made`` is called
    with each class made)::

        __getattr__ = lazy_kernels(__name__, {
            "Erf": (_Elementwise, "mini_infer_cpu_plugins.ops.erf:Erf")})

    The module lists the names in ``__all__`` like its other kernels; its catalog and its
    lazy creators are unchanged. An engine that names none of them then imports none of
    their bases' modules: a module's operator classes (its schemas' and its kernels', about
    0.1 ms each) are most of what loading an engine costs (issue 30)."""
    lock = threading.Lock()

    def __getattr__(name: str) -> Any:
        if name not in kernels:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        with lock:
            namespace = sys.modules[module].__dict__
            if name not in namespace:
                kernel, target = kernels[name]
                where, _, attr = target.partition(":")
                base = getattr(importlib.import_module(where), attr)
                (cls,) = schema_kernels(kernel, base, module=module)
                if made is not None:
                    made(cls)
                namespace[name] = cls
            return namespace[name]

    return __getattr__
