"""Models exported from PyTorch (scripts/export_test_models.py; the .onnx files are committed),
run at several input shapes through an engine file and compared with onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import ort_run

import mini_infer_core as mi

MODELS = Path(__file__).resolve().parent / "data" / "models"
rng = np.random.default_rng(7)

CASES = {
    "torch_smallcnn.onnx": [{"x": rng.standard_normal(s).astype(np.float32)}
                            for s in ((1, 3, 32, 32), (3, 3, 48, 40), (2, 3, 16, 64))],
    "torch_encoder.onnx": [{"ids": rng.integers(0, 100, s).astype(np.int64)}
                           for s in ((1, 5), (3, 9), (2, 16))],
    "torch_recurrent.onnx": [{"x": rng.standard_normal(s).astype(np.float32)}
                             for s in ((2, 5, 8), (2, 9, 8), (2, 1, 8))],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exported_model_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    model = onnx.load(str(MODELS / name))
    engine_path = tmp_path / "m.engine"
    mi.load(str(MODELS / name)).save(str(engine_path))
    sess = mi.InferenceSession(str(engine_path))
    for feeds in CASES[name]:
        (ours,) = sess.run(None, feeds)
        (ref,) = ort_run(model, feeds)
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-4)
