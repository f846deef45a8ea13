"""onnxruntime's execution providers as mini-infer devices: ``InferenceSession(path,
providers=[...], provider_options=[...])`` accepts what onnxruntime's does, so that code written
for onnxruntime runs unchanged.

As onnxruntime does, the providers are tried in order and the first one usable here is taken;
a provider that is unknown, or whose device is missing or unavailable here, is skipped with a
``UserWarning`` (onnxruntime's words: "Specified provider ... is not in available provider
names"), and the CPU is what is left. A list that is not a list of names or ``(name, options)``
pairs is an :class:`~mini_infer_core.errors.InputError`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InputError
from .registry import PluginRegistry, get_plugin_registry

__all__ = ["DEVICE_PROVIDERS", "PROVIDER_DEVICES", "Providers", "providers_of", "resolve"]

#: onnxruntime's provider names and the mini-infer device each one runs on
PROVIDER_DEVICES = {"CPUExecutionProvider": "cpu", "CUDAExecutionProvider": "cuda",
                    "TensorrtExecutionProvider": "cuda"}
#: the provider onnxruntime names for each mini-infer device
DEVICE_PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}

#: what ``providers=`` takes: names, or ``(name, options)`` pairs
Providers = Sequence[str | tuple[str, Mapping[str, Any]]]


def _normalized(providers: Providers, provider_options: Sequence[Mapping[str, Any]] | None
                ) -> list[tuple[str, dict[str, str]]]:
    """``(name, options)`` pairs, each name once (onnxruntime's
    ``check_and_normalize_provider_args``, its ValueErrors as InputErrors)."""
    if isinstance(providers, str) or not isinstance(providers, Sequence):
        raise InputError(f"providers={providers!r}: give a list of provider names, e.g. "
                         "['CUDAExecutionProvider', 'CPUExecutionProvider']")
    pairs: list[tuple[Any, Any]]
    if provider_options is not None:
        if isinstance(provider_options, Mapping) or len(provider_options) != len(providers):
            raise InputError("provider_options: give a list of dicts, one per provider (as "
                             "onnxruntime does)")
        pairs = list(zip(providers, provider_options, strict=True))
    else:
        pairs = [p if isinstance(p, tuple) else (p, {}) for p in providers]
    out: dict[str, dict[str, str]] = {}
    for pair in pairs:
        if len(pair) != 2 or not isinstance(pair[0], str) or not isinstance(pair[1], Mapping):
            raise InputError(f"providers: {pair!r} is neither a provider name nor a (name, "
                             "options dict) pair")
        name, options = pair
        if name in out:
            warnings.warn(f"Duplicate provider {name!r} encountered, ignoring.", stacklevel=4)
            continue
        out[name] = {str(k): str(v) for k, v in options.items()}
    return list(out.items())


def _skip(name: str, why: str) -> None:
    warnings.warn(f"Specified provider {name!r} is not in available provider names: {why}; "
                  "mini-infer tries the next one (the CPU when none is left)", stacklevel=4)


def resolve(providers: Providers, provider_options: Sequence[Mapping[str, Any]] | None,
            registry: PluginRegistry | None = None) -> tuple[str, dict[str, dict[str, str]]]:
    """The device the providers ask for (the first one usable here, else ``cpu``) and the
    options given for each provider."""
    pairs = _normalized(providers, provider_options)
    reg = registry if registry is not None else get_plugin_registry()
    for name, _ in pairs:
        device_name = PROVIDER_DEVICES.get(name)
        if device_name is None:
            _skip(name, f"mini-infer maps {', '.join(PROVIDER_DEVICES)} to its devices")
            continue
        device = reg.get_device(device_name)
        if device is None:
            _skip(name, f"its device {device_name!r} comes from a plugin distribution that is "
                        "not installed (mini-infer plugins lists the devices)")
            continue
        ok, reason = device.availability()
        if not ok:
            _skip(name, f"its device {device_name!r} is unavailable here: {reason}")
            continue
        return device_name, dict(pairs)
    return "cpu", dict(pairs)


def providers_of(device: str) -> list[str]:
    """What onnxruntime's ``get_providers()`` would say of a session on ``device``: its
    provider, then the CPU's (the fallback)."""
    name = DEVICE_PROVIDERS.get(device, device)
    return [name] if device == "cpu" else [name, DEVICE_PROVIDERS["cpu"]]
