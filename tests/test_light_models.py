"""The nine onnx "light" CNNs, end to end.

Per model: ``mini-infer build`` writes an engine file in one process, ``mini-infer run``
loads it in another; outputs must match the expected output onnx ships and onnxruntime's, and
be bit-identical to running from the ONNX file. Because the shipped weights are constants
(so most outputs are a near-uniform softmax), each model also runs with random, well-scaled
weights and its logits (before the final Softmax) are compared with onnxruntime's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import ort_run, run_cli

import mini_infer_core as mi
from mini_infer_core.testing.light_models import (
    LIGHT_MODELS,
    default_inputs,
    expected_output,
    light_model_path,
    logits_model,
    randomize_weights,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_engine_file_in_another_process(name: str, tmp_path: Path) -> None:
    path = light_model_path(name)
    model = onnx.load(str(path))
    feeds = default_inputs(model)
    engine = tmp_path / f"{name}.engine"
    run_cli("build", str(path), "-o", str(engine))
    args = []
    for k, (iname, arr) in enumerate(feeds.items()):
        np.save(tmp_path / f"in{k}.npy", arr)
        args += ["--input", f"{iname}={tmp_path / f'in{k}.npy'}"]
    out_dir = tmp_path / "out"
    run_cli("run", str(engine), *args, "--output-dir", str(out_dir))
    out_name = model.graph.output[0].name
    ours = np.load(out_dir / f"{out_name.replace('/', '_')}.npy")
    np.testing.assert_allclose(ours, expected_output(name), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ours, ort_run(model, feeds)[0], rtol=1e-3, atol=1e-4)
    in_process = mi.InferenceSession(str(path)).run(None, feeds)[0]
    assert in_process.tobytes() == ours.tobytes(), "engine file run differs from ONNX run"


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_random_weights_logits_match_onnxruntime(name: str) -> None:
    model = logits_model(randomize_weights(onnx.load(str(light_model_path(name))), seed=1))
    rng = np.random.default_rng(2)
    feeds = {k: rng.standard_normal(v.shape).astype(np.float32)
             for k, v in default_inputs(model).items()}
    ref = ort_run(model, feeds)[0]
    assert ref.std() > 0.1, "the random-weight model should not be near-uniform"
    ours = mi.InferenceSession(model).run(None, feeds)[0]
    assert ours.shape == ref.shape
    rel = np.linalg.norm(ours - ref) / np.linalg.norm(ref)
    assert rel <= 1e-4, f"{name}: relative L2 error {rel:.2e}"
