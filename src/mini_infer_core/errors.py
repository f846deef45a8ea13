"""The error hierarchy: every user-facing failure is a :class:`MiniInferError`.

Each message says what went wrong, where (node, operator, plugin, distribution)
and what the user can do about it.
"""

from __future__ import annotations

__all__ = [
    "MiniInferError",
    "ModelImportError",
    "UnsafeModelPathError",
    "UnsupportedOperatorError",
    "BuildError",
    "PluginInterfaceError",
    "PluginNotFoundError",
    "PluginLoadError",
    "EngineFormatError",
    "EngineIntegrityError",
    "InputError",
    "DeviceError",
    "ExecutionError",
]


class MiniInferError(Exception):
    """Base class of every error mini-infer raises on purpose."""


class ModelImportError(MiniInferError):
    """The ONNX model cannot be read or is malformed."""


class UnsafeModelPathError(ModelImportError):
    """An external-data location escapes the model's folder."""


class BuildError(MiniInferError):
    """The network cannot be built into an engine."""


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


class InputError(MiniInferError):
    """Inputs given to a run do not match the engine (names, dtypes, shapes)."""


class DeviceError(MiniInferError):
    """A device is unknown or unavailable."""


class ExecutionError(MiniInferError):
    """A plugin failed while running."""
