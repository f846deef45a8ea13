"""The Conv fusions every device shares (``ConvFusion``), through the installed cpu plugins,
against onnxruntime on the models of ``mini_infer_core.testing.conv_fusions``."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import mini_infer_core as mi
from mini_infer_core.testing.conv_fusions import conv_fusion_models

MODELS = conv_fusion_models()


@pytest.mark.parametrize("case", MODELS, ids=[m[0] for m in MODELS])
def test_cpu_conv_absorbs_its_consumers_and_matches_onnxruntime(case: tuple) -> None:
    name, model, feeds = case
    engine = mi.load(model, device="cpu")
    convs = [n for n in engine.nodes if n.op_type == "Conv"]
    assert len(engine.nodes) == len(convs), \
        f"{name}: everything after a Conv is fused: {[n.op_type for n in engine.nodes]}"
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = mi.InferenceSession(engine).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
