"""Helpers shared by the tests (importable as ``helpers`` thanks to pytest's pythonpath)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper

ROOT = Path(__file__).resolve().parents[1]
CPU_PKG = ROOT / "plugin_packages" / "cpu_basic"


def make_model(nodes: list[Any], inputs: list[Any], outputs: list[Any],
               initializers: list[Any] | None = None, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def quantize_qdq(model: onnx.ModelProto, folder: Path, batches: list[np.ndarray], *,
                 per_channel: bool, extra_options: dict[str, Any] | None = None
                 ) -> onnx.ModelProto:
    """onnxruntime's ``quantize_static`` of ``model`` (QDQ format, u8 activations, s8 weights),
    calibrated on ``batches`` fed to its input ``x``; the float and quantized files in
    ``folder``."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Data(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": b} for b in batches])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    src, dst = folder / "f.onnx", folder / "q.onnx"
    onnx.save(model, src)
    quantize_static(str(src), str(dst), Data(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=per_channel, extra_options=extra_options)
    return onnx.load(dst)


def qdq_output_scale(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear that makes the graph's (first) output."""
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    (last,) = [n for n in model.graph.node if n.output[0] == model.graph.output[0].name]
    assert last.op_type == "DequantizeLinear"
    return float(inits[last.input[1]])


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_cli(*args: str, python: str = sys.executable, env: dict[str, str] | None = None,
            check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """Run ``mini-infer`` in another process."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([python, "-m", "mini_infer_core.cli.main", *args],
                          capture_output=True, text=True, env=full_env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"mini-infer {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def install_plugin_module(site: Path, dist: str, version: str, entry: str, source: str) -> None:
    """Install into the folder ``site`` a distribution ``dist`` ``version`` made of one module
    (``dist`` with ``_`` for ``-``, holding the dedented ``source``) that registers the plugin
    entry point ``entry`` (mini_infer.plugins) naming that module."""
    module = dist.replace("-", "_")
    info = site / f"{module}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\n"
                                   f"Version: {version}\n")
    (info / "entry_points.txt").write_text(f"[mini_infer.plugins]\n{entry} = {module}\n")
    (site / f"{module}.py").write_text(textwrap.dedent(source))


def l2norm_hooks(namespace: str, extra: str = "") -> str:
    """The source of a plugin module (for :func:`install_plugin_module`) whose
    ``mini_infer_creators`` hook gives the example's L2Norm creator, lazily, under
    ``namespace``; ``extra`` is more of the module (other hooks; ``os`` is imported)."""
    return f'''
import os
from mini_infer_core.plugin import LazyPluginCreator
from mini_infer_core.registry import hookimpl
{extra}
@hookimpl
def mini_infer_creators():
    return [LazyPluginCreator("mini_infer_l2norm.plugin:L2NormCreator", name="L2Norm",
                              op_type="L2Norm", domain="com.example", plugin_version="1",
                              namespace={namespace!r}, field_names=("epsilon", "axis"),
                              devices=("cpu",))]
'''


class Venv:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.python = str(path / "bin" / "python")

    def pip(self, *args: str) -> None:
        subprocess.run([self.python, "-m", "pip", "-q", "--disable-pip-version-check", *args],
                       check=True, timeout=900)

    def cli(self, *args: str, check: bool = True, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, python=self.python, check=check, env=env)


def make_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path],
              *keys: str) -> Venv:
    path = tmp_path_factory.mktemp("venv") / "env"
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    env = Venv(path)
    env.pip("install", *(str(wheels[k]) for k in keys))
    return env


BAD_RELU = '''
import numpy as np
from mini_infer_core.ops import activation
from mini_infer_core.plugin import OnnxPluginCreator
from mini_infer_core.registry import hookimpl


class Relu(activation.Relu):
    def compute(self, x, *, out, **_):
        np.maximum(x, 0, out=out)
        out *= 1.5  # the bug the comparison must find


@hookimpl
def mini_infer_creators():
    return [OnnxPluginCreator(Relu, namespace="com.test.bad", devices=("cpu",), priority=100)]
'''


def install_bad_relu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A third-party distribution ``mi-test-badrelu`` whose Relu (priority 100) is wrong by a
    factor 1.5, importable from this process; returns its site folder (for PYTHONPATH)."""
    site = tmp_path / "site"
    install_plugin_module(site, "mi-test-badrelu", "0.0.1", "badrelu", BAD_RELU)
    monkeypatch.syspath_prepend(str(site))
    return site
