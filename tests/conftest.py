"""Shared fixtures: tiny ONNX models, wheels installed in a fresh venv."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import CPU_PKG, ROOT, Venv, make_model, make_venv
from onnx import TensorProto, helper


@pytest.fixture
def small_cnn() -> onnx.ModelProto:
    """Conv → Relu → MaxPool → Flatten → Gemm → Softmax with a dynamic batch dimension."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(8).astype(np.float32) * 0.1
    fc = rng.standard_normal((10, 8 * 4 * 4)).astype(np.float32) * 0.1
    fcb = np.zeros(10, np.float32)
    inits = [onnx.numpy_helper.from_array(a, n) for a, n in
             ((w, "w"), (b, "b"), (fc, "fc"), (fcb, "fcb"))]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1, name="softmax"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])
    return make_model(nodes, [x], [y], inits)


@pytest.fixture
def cnn_file(small_cnn: onnx.ModelProto, tmp_path: Path) -> Path:
    """:func:`small_cnn` saved as ``cnn.onnx`` in the test's own folder."""
    path = tmp_path / "cnn.onnx"
    onnx.save(small_cnn, str(path))
    return path


WHEEL_SOURCES = {
    "core": ROOT,
    "cpu": CPU_PKG,
    "cuda": ROOT / "plugin_packages" / "cuda_basic",
    "native": ROOT / "plugin_packages" / "cpu_native",
    "ml": ROOT / "plugin_packages" / "ml_basic",
    "l2norm": ROOT / "examples" / "plugins" / "l2norm",
    **{name: ROOT / "tests" / "data" / "plugins" / name
       for name in ("broken", "oldapi", "marker", "badhook")},
}


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real wheels of every distribution the tests install, built from this checkout."""
    found = {}
    for key, src in WHEEL_SOURCES.items():
        out = tmp_path_factory.mktemp(f"wheel-{key}")
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                        "--no-build-isolation", "-q", "-w", str(out), str(src)], check=True)
        (found[key],) = out.glob("*.whl")
    return found


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory,
               wheels: dict[str, Path]) -> Iterator[Venv]:
    """A new virtual environment with the core and cpu_basic wheels installed."""
    yield make_venv(tmp_path_factory, wheels, "core", "cpu")
