"""The fusions every device shares (``ConvFusion``, ``BatchNormFusion``), through the installed
cpu plugins, against onnxruntime on the models of ``mini_infer_core.testing.fusions``."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

import mini_infer_core as mi
from mini_infer_core.testing.fusions import fusion_models

MODELS = fusion_models()


@pytest.mark.parametrize("case", MODELS, ids=[m[0] for m in MODELS])
def test_cpu_plugins_absorb_their_consumers_and_match_onnxruntime(case: Any) -> None:
    name, model, feeds, fused = case
    engine = mi.load(model, device="cpu")
    # the formats pass may put Reformat nodes around a fused node when its timing picks a
    # channel-blocked format (a blocked BatchNormalization sometimes wins): not a fusion's
    assert [n.op_type for n in engine.nodes if n.op_type != "Reformat"] == fused, name
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = mi.InferenceSession(engine).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
