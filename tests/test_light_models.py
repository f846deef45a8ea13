"""The nine onnx "light" CNNs, end to end.

Per model: ``mini-infer build`` writes an engine file in one process, ``mini-infer run``
loads it in another; outputs must match the expected output onnx ships and onnxruntime's, be
bit-identical to running the same engine file in this process, and close to a fresh build
from the ONNX file (a build times its tactics, so two builds may pick different kernels).
Because the shipped weights are constants (so most outputs are a near-uniform softmax), each
model also runs with random, well-scaled weights and its logits (before the final Softmax)
are compared with onnxruntime's.
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

#: squeezenet's constant weights make every logit about 9.5e9 and all of them equal in exact
#: arithmetic: its softmax then turns on the last bit of each channel's sum (one ulp there is
#: 1024), which any summation order (a Winograd or GEMM tactic) flips. Its engine file is
#: checked on the logits, against onnxruntime's.
LOGITS_ONLY = frozenset({"squeezenet"})


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_engine_file_in_another_process(name: str, tmp_path: Path) -> None:
    path = light_model_path(name)
    model = onnx.load(str(path))
    if name in LOGITS_ONLY:
        model = logits_model(model)
        path = tmp_path / f"{name}_logits.onnx"
        onnx.save(model, str(path))
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
    ref = ort_run(model, feeds)[0]
    if name in LOGITS_ONLY:
        rel = np.linalg.norm(ours - ref) / np.linalg.norm(ref)
        assert rel <= 1e-5, f"{name}: logits' relative L2 error {rel:.2e}"
    else:
        np.testing.assert_allclose(ours, expected_output(name), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-4)
    same_file = mi.InferenceSession(str(engine)).run(None, feeds)[0]
    assert same_file.tobytes() == ours.tobytes(), "the engine file runs differently here"
    rebuilt = mi.InferenceSession(str(path)).run(None, feeds)[0]
    np.testing.assert_allclose(rebuilt, ours, rtol=1e-3, atol=1e-4)


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
