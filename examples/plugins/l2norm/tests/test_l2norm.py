"""The example plugin, checked with mini-infer's plugin test kit and against NumPy."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from mini_infer_l2norm.plugin import L2NormCreator


def _numpy_l2norm(x: np.ndarray, epsilon: float, axis: int) -> np.ndarray:
    return x / np.sqrt(np.sum(x * x, axis=axis, keepdims=True) + epsilon)


@pytest.mark.parametrize("attrs", [{}, {"epsilon": 1e-3}, {"axis": 1}, {"axis": 0,
                                                                         "epsilon": 0.5}])
def test_l2norm_passes_the_plugin_kit(plugin_kit: ModuleType, attrs: dict[str, Any]) -> None:
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    report = plugin_kit.check_plugin(L2NormCreator, attrs, [x])
    assert "serialize round trip" in report.checks and "clones independent" in report.checks
    eps, axis = attrs.get("epsilon", 1e-12), attrs.get("axis", -1)
    np.testing.assert_allclose(report.outputs[0], _numpy_l2norm(x, eps, axis), rtol=1e-5)


def test_the_installed_creator_is_the_lazy_one_from_the_entry_point(creator_for: Any) -> None:
    creator = creator_for("L2Norm", domain="com.example",
                          distribution="mini-infer-example-l2norm")
    assert creator.field_names == ("epsilon", "axis")


def test_corrupt_record_is_refused() -> None:
    with pytest.raises(Exception, match="not an L2Norm record"):
        L2NormCreator.deserialize_plugin("n", b"junk")
