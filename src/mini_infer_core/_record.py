"""Data classes made without :mod:`dataclasses` (a cold start's cost, issue 30).

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` ... as source text and compiles each (and imports :mod:`inspect` and
:mod:`copy`): a quarter of a millisecond or more per class, and the twenty-odd classes a
process imports to open an engine file cost more than the rest of their modules. ``@record``
gives the same classes -- fields from the annotations, defaults, ``field(default_factory=)``,
``frozen``, ``slots``, ``__post_init__``, the same ``__init__`` signature, ``__repr__``,
``__eq__`` and ``__hash__`` -- compiling only the ``__init__`` (a few lines: constructing
one costs what a dataclass's does), the rest made from closures over the field names.
:func:`dataclasses.replace`, :func:`dataclasses.fields` and :func:`dataclasses.asdict` accept
them (``__dataclass_fields__`` is made, importing :mod:`dataclasses`, when first asked for),
and type checkers see a dataclass (``dataclass_transform``); :func:`replace` is
:func:`dataclasses.replace` for a record without importing :mod:`dataclasses`.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["FrozenInstanceError", "field", "record", "replace"]

_T = TypeVar("_T", bound=type)
_R = TypeVar("_R")
_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record (as :class:`dataclasses.FrozenInstanceError`)."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING) -> Any:
    """A field's default (``default``) or the function that makes one per instance."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Factory(default_factory) if default_factory is not _MISSING else default


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


class _Fields:
    """``__dataclass_fields__``, made when first read (:func:`dataclasses.replace`, ...)."""

    def __get__(self, obj: object, owner: type) -> dict[str, Any]:
        import dataclasses

        out: dict[str, Any] = {}
        for name in owner.__record_fields__:  # type: ignore[attr-defined]
            default = owner.__record_defaults__.get(name, _MISSING)  # type: ignore[attr-defined]
            if isinstance(default, _Factory):
                f = dataclasses.field(default_factory=default.make)
            elif default is _MISSING:
                f = dataclasses.field()
            else:
                f = dataclasses.field(default=default)
            f.name, f.type = name, owner.__annotations__.get(name)
            f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            out[name] = f
        return out


def _init(cls: type, names: list[str], defaults: dict[str, Any], assign: bool,
          post: bool) -> Callable[..., None]:
    """The class's ``__init__``: the one function compiled per class (a few lines, a
    fraction of what dataclass compiles), so that constructing one costs what a
    dataclass's does. ``assign``: plain assignments (neither frozen nor slots... nor a
    ``__setattr__`` to go round)."""
    params, lines = ["self"], []
    env: dict[str, Any] = {"_set": object.__setattr__, "_FACTORY": _MISSING}
    for name in names:
        default = defaults.get(name, _MISSING)
        if isinstance(default, _Factory):
            env[f"_f_{name}"] = default.make
            params.append(f"{name}=_FACTORY")
            lines.append(f"    if {name} is _FACTORY: {name} = _f_{name}()")
        elif default is not _MISSING:
            env[f"_d_{name}"] = default
            params.append(f"{name}=_d_{name}")
        else:
            params.append(name)
        lines.append(f"    self.{name} = {name}" if assign else
                     f"    _set(self, {name!r}, {name})")
    if post:
        lines.append("    self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n" + "\n".join(lines or ["    pass"]) + "\n"
    exec(source, env)  # noqa: S102 - made from the class's own field names (identifiers)
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _methods(names: tuple[str, ...], frozen: bool) -> dict[str, Any]:
    """``__repr__``, ``__eq__`` (and for a frozen class ``__hash__``): dataclass's, made
    with one C getter of every field, nothing compiled."""
    if len(names) > 1:
        get: Callable[[Any], tuple[Any, ...]] = attrgetter(*names)
    else:
        def get(o: Any) -> tuple[Any, ...]:
            return tuple(getattr(o, n) for n in names)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={v!r}" for n, v in zip(names, get(self), strict=True))
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return get(self) == get(other)

    def __hash__(self: Any) -> int:
        return hash(get(self))

    out: dict[str, Any] = {"__repr__": __repr__, "__eq__": __eq__}
    out["__hash__"] = __hash__ if frozen else None
    return out


def _frozen(cls: type, names: tuple[str, ...]) -> dict[str, Callable[..., None]]:
    """``__setattr__`` and ``__delattr__`` of a frozen class: as dataclass's, any attribute
    of an instance of ``cls`` itself, the fields of a subclass's."""

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    return {"__setattr__": __setattr__, "__delattr__": __delattr__}


def _make(cls: _T, frozen: bool, slots: bool) -> _T:
    names: list[str] = []
    defaults: dict[str, Any] = {}
    for base in reversed(cls.__mro__[1:]):
        names += [n for n in getattr(base, "__record_fields__", ()) if n not in names]
        defaults.update(getattr(base, "__record_defaults__", {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        if name not in names:
            names.append(name)
        if name in cls.__dict__:
            defaults[name] = cls.__dict__[name]
    seen_default = False
    for name in names:
        if name in defaults:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
    own = cls.__dict__
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    fields = tuple(names)
    methods = _methods(fields, frozen)
    if explicit_hash:
        del methods["__hash__"]
    body: dict[str, Any] = {
        "__record_fields__": fields, "__record_defaults__": defaults,
        "__match_args__": fields, "__dataclass_fields__": _Fields(),
        "__init__": _init(cls, names, defaults, not frozen, hasattr(cls, "__post_init__")),
        **methods}
    if slots:
        namespace = {k: v for k, v in cls.__dict__.items()
                     if k not in names and k not in ("__dict__", "__weakref__")}
        namespace.update({k: v for k, v in body.items()
                          if k not in ("__init__", "__repr__", "__eq__") or k not in own},
                         __slots__=tuple(n for n in names
                                               if n not in getattr(cls, "__slots__", ())))
        new = type(cls)(cls.__name__, cls.__bases__, namespace)
        new.__qualname__ = cls.__qualname__
        if frozen:
            for name, value in _frozen(new, tuple(names)).items():
                setattr(new, name, value)
        return new
    for name, value in body.items():
        if name in ("__init__", "__repr__", "__eq__") and name in own:
            continue  # the class's own, as dataclass leaves it
        setattr(cls, name, value)
    if frozen:
        for name, value in _frozen(cls, tuple(names)).items():
            setattr(cls, name, value)
    for name in names:  # the defaults live in __record_defaults__, as instance attributes
        if name in cls.__dict__ and isinstance(cls.__dict__[name], _Factory):
            delattr(cls, name)
    return cls


@overload
def record(cls: _T, /) -> _T: ...


@overload
def record(*, frozen: bool = False, slots: bool = False) -> Callable[[_T], _T]: ...


@dataclass_transform(field_specifiers=(field,))
def record(cls: Any = None, /, *, frozen: bool = False, slots: bool = False) -> Any:
    """``@dataclass``, ``@dataclass(frozen=True)``, ``@dataclass(slots=True)``: see the
    module's text."""
    if cls is None:
        return lambda c: _make(c, frozen, slots)
    return _make(cls, frozen, slots)


def replace(obj: _R, /, **changes: Any) -> _R:
    """:func:`dataclasses.replace` for a record (a new one, ``changes`` for some fields),
    without importing :mod:`dataclasses`: the build of an .onnx file replaces engine nodes
    and networks (a cold start's cost, issue 30)."""
    names: tuple[str, ...] = type(obj).__record_fields__  # type: ignore[attr-defined]
    unknown = [n for n in changes if n not in names]
    if unknown:
        raise TypeError(f"{type(obj).__qualname__}.__init__() got an unexpected keyword "
                        f"argument {unknown[0]!r}")
    return type(obj)(**{n: changes[n] if n in changes else getattr(obj, n) for n in names})
