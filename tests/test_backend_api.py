"""onnx's own backend test runner (onnx.backend.test.BackendTest) against mini-infer's
implementation of onnx.backend.base.Backend, on a sample of node cases and the light models."""

from __future__ import annotations

import unittest

import onnx.backend.test

from mini_infer_core.backend import MiniInferBackend

_SAMPLE = [
    r"test_abs_cpu", r"test_relu_cpu", r"test_conv_with_strides_padding_cpu",
    r"test_maxpool_2d_pads_cpu", r"test_gemm_default_single_elem_vector_bias_cpu",
    r"test_reshape_reordered_all_dims_cpu", r"test_softmax_axis_1_cpu",
    r"test_if_cpu", r"test_scan9_sum_cpu", r"test_nonzero_example_cpu",
    r"test_layer_normalization_2d_axis0_cpu", r"test_lstm_defaults_cpu",
    r"test_gather_0_cpu", r"test_slice_cpu", r"test_resize_upsample_scales_nearest_cpu",
]


def _suite() -> unittest.TestSuite:
    runner = onnx.backend.test.BackendTest(MiniInferBackend, __name__)
    for pattern in _SAMPLE:
        runner.include(pattern)
    return runner.test_suite


def test_onnx_backend_test_runner_passes_a_sample_of_node_cases() -> None:
    suite = _suite()
    assert suite.countTestCases() >= len(_SAMPLE)
    result = unittest.TextTestRunner(verbosity=0).run(suite)
    assert result.wasSuccessful(), [str(e[1])[:300] for e in result.failures + result.errors]
    assert result.testsRun - len(result.skipped) >= len(_SAMPLE)


def test_run_node_and_supports_device() -> None:
    import numpy as np
    from onnx import helper

    node = helper.make_node("Add", ["a", "b"], ["c"])
    (out,) = MiniInferBackend.run_node(node, [np.ones(3, np.float32), np.ones(3, np.float32)])
    np.testing.assert_array_equal(out, [2, 2, 2])
    assert MiniInferBackend.supports_device("CPU")
    assert not MiniInferBackend.supports_device("TPU")
