"""pytest plugin (entry point ``pytest11``: ``mini_infer``) for plugin authors.

Fixtures:

- ``plugin_kit``: the module :mod:`mini_infer_core.testing.plugin_kit` (``check_plugin``,
  ``check_creator_metadata``, ``run_plugin``, ``reference_outputs``);
- ``plugin_registry``: the registry discovered from the installed distributions;
- ``creator_for``: ``creator_for("Conv", opset=13, device="cpu", distribution=None)`` finds the
  creator the builder would pick.

The header of a pytest run shows the discovered mini-infer plugins.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from ..plugin import IPluginCreator
from ..registry import PluginRegistry


def pytest_report_header(config: pytest.Config) -> str | None:
    try:
        from ..cli._report import header_line
        from ..registry import get_plugin_registry

        return "mini-infer " + header_line(get_plugin_registry())
    except Exception as exc:  # noqa: BLE001 - a header must never break a test run
        return f"mini-infer plugins: discovery failed: {exc}"


@pytest.fixture
def plugin_kit() -> ModuleType:
    from . import plugin_kit as kit

    return kit


@pytest.fixture
def plugin_registry() -> PluginRegistry:
    from ..registry import get_plugin_registry

    return get_plugin_registry()


@pytest.fixture
def creator_for(plugin_registry: PluginRegistry) -> Callable[..., IPluginCreator]:
    def find(op_type: str, *, opset: int | None = None, device: str = "cpu",
             domain: str = "", distribution: str | None = None) -> IPluginCreator:
        cands: list[Any] = plugin_registry.candidates(domain, op_type, device, opset)
        if distribution is not None:
            cands = [c for c in cands if c.distribution == distribution]
        if not cands:
            pytest.fail(f"no installed creator for {domain or 'ai.onnx'}::{op_type} "
                        f"(opset {opset}) on {device}"
                        + (f" from {distribution}" if distribution else ""))
        creator: IPluginCreator = cands[0].creator
        return creator

    return find
