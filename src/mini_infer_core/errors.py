"""The error hierarchy: every user-facing failure is a :class:`MiniInferError`.

Each message says what went wrong, where (node, operator, plugin, distribution)
and what the user can do about it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = [
    "MiniInferError",
    "ModelImportError",
    "UnsafeModelPathError",
    "UnsupportedOperatorError",
    "BuildError",
    "InputShapesRequired",
    "CalibrationError",
    "PluginInterfaceError",
    "PluginNotFoundError",
    "PluginLoadError",
    "EngineFormatError",
    "EngineIntegrityError",
    "PluginSubstituteError",
    "PluginFieldsError",
    "InputError",
    "DeviceError",
    "ExecutionError",
    "PluginSubstituteWarning",
]


class MiniInferError(Exception):
    """Base class of every error mini-infer raises on purpose."""


class ModelImportError(MiniInferError):
    """The ONNX model cannot be read or is malformed."""


class UnsafeModelPathError(ModelImportError):
    """An external-data location escapes the model's folder."""


class BuildError(MiniInferError):
    """The network cannot be built into an engine."""


class InputShapesRequired(BuildError):
    """The model's shapes cannot be worked out for every input shape at once (control flow
    whose branches differ in output rank, on a condition that depends on the inputs'
    dimensions): build it for given input shapes (``BuilderConfig(input_shapes=...)``,
    ``mini-infer build --shape``), or run it through ``InferenceSession``, which builds for
    the shapes it is given."""


class CalibrationError(BuildError):
    """An INT8 build's calibration data or cache does not fit the model (names, shapes,
    types, another model's cache), or gives no range for a tensor to quantize."""


class UnsupportedOperatorError(BuildError):
    """No installed plugin serves one or more operators of the model."""


class PluginInterfaceError(BuildError):
    """A plugin breaks its interface contract (wrong level, bad shapes, ...)."""


class PluginNotFoundError(MiniInferError):
    """An engine names a plugin creator that is not registered."""


class PluginLoadError(MiniInferError):
    """A plugin distribution failed to load (strict mode) or a creator is invalid."""


class EngineFormatError(MiniInferError):
    """An engine file is not an engine, or of an unsupported format version."""


class EngineIntegrityError(EngineFormatError):
    """An engine file's checksum does not match: it is corrupt or truncated."""


class PluginSubstituteError(EngineFormatError):
    """An engine's plugin is now provided by another distribution than the one that built
    it (the original blocked or uninstalled, another wheel registering the same plugin):
    it may compute different results, so loading refuses unless substitutes are allowed."""


class PluginFieldsError(EngineFormatError, ValueError):
    """Serialized plugin fields (``decode_fields``) are malformed: the plugin's bytes in an
    engine file are corrupt or were written by something else. Also a ``ValueError``, which
    is what ``decode_fields`` documented before."""


class InputError(MiniInferError):
    """Inputs given to a run do not match the engine (names, dtypes, shapes)."""


class DeviceError(MiniInferError):
    """A device is unknown or unavailable."""


class ExecutionError(MiniInferError):
    """A plugin failed while running."""


class PluginSubstituteWarning(UserWarning):
    """An engine was loaded with a plugin from another distribution than the one that built
    it, because substitutes were allowed (``Runtime(allow_substitutes=True)``)."""


@contextlib.contextmanager
def node_errors(where: str | Callable[[], str], error: type[MiniInferError], doing: str
                ) -> Iterator[None]:
    """Every error raised inside names the node it came from: a :class:`MiniInferError` gets
    ``where`` in front of its message (once), any other exception becomes an ``error`` that
    says what was being ``doing``. ``where`` may be a function, called only on an error (a
    loop over nodes keeps its current node in a variable the function reads)."""
    try:
        yield
    except MiniInferError as exc:
        text = where() if callable(where) else where
        if text in str(exc):
            raise
        raise type(exc)(f"{text}: {exc}") from exc
    except Exception as exc:
        text = where() if callable(where) else where
        raise error(f"{text}: {doing}: {type(exc).__name__}: {exc}") from exc
