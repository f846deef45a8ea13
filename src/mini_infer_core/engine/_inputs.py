"""An execution context's input checks: names, dtypes, ranks, fixed dimensions, symbols bound
consistently, optimization profiles; sequences, optionals and maps by their kind.

The dtypes and shapes of the last inputs that passed are kept: inputs like them pass without
the checks again (they depend on nothing else).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..plugin._kinds import check_value, describe_value

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["InputCheck"]


def _fits(profile: Mapping[str, Any], feeds: Mapping[str, Any]) -> bool:
    for name, r in profile.items():
        shape = tuple(feeds[name].shape)
        if len(shape) != len(r["min"]) or any(
                not (lo <= x <= hi) for lo, x, hi in zip(r["min"], shape, r["max"], strict=True)):
            return False
    return True


class InputCheck:
    """Checks a run's inputs against ``engine`` and binds its symbolic dimensions."""

    def __init__(self, engine: Engine, values: set[str]) -> None:
        self.engine = engine
        #: the inputs that are sequences, optionals or maps: never cached
        self._values = values
        #: the (dtype, shape) of each input of the last run that passed the checks, and the
        #: dimension values it bound
        self._checked: tuple[tuple[Any, ...] | None, dict[str, int]] = (None, {})

    def bind(self, feeds: Mapping[str, Any]) -> dict[str, int]:
        """The inputs checked against the engine (names, dtypes, shapes, profiles); the
        values of the symbolic dimensions. Inputs of the dtypes and shapes of the last
        checked run pass without the checks again."""
        eng = self.engine
        key: tuple[Any, ...] | None = None
        if not self._values and len(feeds) == len(eng.input_names):
            try:
                key = tuple((feeds[n].dtype, feeds[n].shape) for n in eng.input_names)
            except (KeyError, AttributeError):
                key = None
            if key is not None and key == self._checked[0]:
                return dict(self._checked[1])
        bindings = self.check(feeds)
        if key is not None:
            self._checked = (key, dict(bindings))
        return bindings

    def same_as_last(self, feeds: Mapping[str, Any]) -> bool:
        """Whether ``feeds`` have the names, dtypes and shapes of the last inputs that passed
        the checks (then they pass, and bind the same dimensions)."""
        last = self._checked[0]
        names = self.engine.input_names
        if last is None or len(feeds) != len(names):
            return False
        try:
            if len(names) == 1:
                x = feeds[names[0]]
                return ((x.dtype, x.shape),) == last
            return tuple((feeds[n].dtype, feeds[n].shape) for n in names) == last
        except (KeyError, AttributeError):
            return False

    def check(self, feeds: Mapping[str, Any]) -> dict[str, int]:
        eng = self.engine
        missing = [n for n in eng.input_names if n not in feeds]
        unknown = [n for n in feeds if n not in eng.input_names]
        if missing or unknown:
            raise InputError(
                f"engine {eng.name!r} takes inputs {list(eng.input_names)}; "
                + (f"missing {missing}" if missing else "")
                + ("; " if missing and unknown else "")
                + (f"unknown {unknown}" if unknown else ""))
        bindings: dict[str, int] = {}
        for name in eng.input_names:
            spec, arr = eng.tensors[name], feeds[name]
            if not spec.is_tensor:
                dims = [d.get_constant_value() if d.is_constant() else None for d in spec.dims]
                problem = check_value(arr, spec.value_kind, spec.dtype, dims)
                if problem:
                    raise InputError(f"input {name!r} is a {spec.type_string}: {problem}")
                continue
            want = spec.dtype.numpy
            if not hasattr(arr, "shape") or not hasattr(arr, "dtype"):
                raise InputError(f"input {name!r} is a {spec.type_string} of shape "
                                 f"{spec.shape}: pass an array (got {describe_value(arr)})")
            if getattr(arr, "dtype", None) != want:
                raise InputError(
                    f"input {name!r} has dtype {getattr(arr, 'dtype', type(arr).__name__)}, the "
                    f"engine expects {want} (convert with .astype(np.{want}))")
            shape = tuple(arr.shape)
            if len(shape) != len(spec.dims):
                raise InputError(f"input {name!r} has shape {shape}, the engine expects rank "
                                 f"{len(spec.dims)} {spec.shape}")
            for axis, (d, actual) in enumerate(zip(spec.dims, shape, strict=True)):
                if d.is_constant():
                    if d.get_constant_value() != actual:
                        raise InputError(
                            f"input {name!r} has shape {shape}, the engine expects "
                            f"{spec.shape} (axis {axis} is fixed at {d.get_constant_value()})")
                else:
                    sym = str(d)
                    if bindings.setdefault(sym, actual) != actual:
                        raise InputError(
                            f"input {name!r} axis {axis} is {actual}, but dimension {sym!r} "
                            f"is {bindings[sym]} in another input")
        profiles = eng.build_info.get("profiles") or []
        if profiles and not any(_fits(p, feeds) for p in profiles):
            ranges = "; ".join(", ".join(f"{n}: min {tuple(r['min'])} max {tuple(r['max'])}"
                                         for n, r in p.items()) for p in profiles)
            got = ", ".join(f"{n} {tuple(feeds[n].shape)}" for n in eng.input_names)
            raise InputError(f"input shapes ({got}) are outside every optimization profile of "
                             f"engine {eng.name!r} ({ranges}); rebuild with a profile that "
                             "covers them")
        return bindings
