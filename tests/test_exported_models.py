"""Models exported from PyTorch (scripts/export_test_models.py; the .onnx files are committed),
run at several input shapes through an engine file and compared with onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import ort_run
from onnx import numpy_helper

import mini_infer_core as mi

MODELS = Path(__file__).resolve().parent / "data" / "models"
rng = np.random.default_rng(7)


def _audio(batch: int, samples: int) -> np.ndarray:
    """A tone, a chirp, noise and a stretch of silence (the log's clamp), per row."""
    t = np.arange(samples) / 16000.0
    rows = []
    for b in range(batch):
        tone = 0.3 * np.sin(2 * np.pi * (220.0 * (b + 1)) * t)
        chirp = 0.2 * np.sin(2 * np.pi * (100.0 + 2000.0 * t) * t)
        row = tone + chirp + 0.05 * rng.standard_normal(samples)
        row[samples // 3: samples // 2] = 0.0
        rows.append(row)
    return np.stack(rows).astype(np.float32)


CASES = {
    "torch_smallcnn.onnx": [{"x": rng.standard_normal(s).astype(np.float32)}
                            for s in ((1, 3, 32, 32), (3, 3, 48, 40), (2, 3, 16, 64))],
    "torch_encoder.onnx": [{"ids": rng.integers(0, 100, s).astype(np.int64)}
                           for s in ((1, 5), (3, 9), (2, 16))],
    "torch_recurrent.onnx": [{"x": rng.standard_normal(s).astype(np.float32)}
                             for s in ((2, 5, 8), (2, 9, 8), (2, 1, 8))],
    # Whisper's log-mel front-end: STFT (400-point frames every 160 samples) of 1 s, 0.25 s
    # and a length that is no multiple of the hop
    "torch_logmel.onnx": [{"audio": _audio(b, n)} for b, n in ((1, 16000), (2, 4000), (3, 1234))],
}


#: onnxruntime's STFT is float32: the log of the weak mel bins amplifies its rounding (up to
#: 6e-4 from float64 NumPy on these inputs; ours, float64 inside, 7e-6)
TOLERANCE = {"torch_logmel.onnx": {"rtol": 1e-3, "atol": 2e-3}}


def _ops(model: onnx.ModelProto) -> set[str]:
    """The operators of a graph and of its subgraphs (If/Loop bodies)."""
    ops: set[str] = set()
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            ops.add(node.op_type)
            graphs += [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    return ops


def _session(name: str, tmp_path: Path) -> mi.InferenceSession:
    engine_path = tmp_path / "m.engine"
    mi.load(str(MODELS / name)).save(str(engine_path))
    return mi.InferenceSession(str(engine_path))


@pytest.mark.parametrize("name", sorted(CASES))
def test_exported_model_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    model = onnx.load(str(MODELS / name))
    sess = _session(name, tmp_path)
    for feeds in CASES[name]:
        (ours,) = sess.run(None, feeds)
        (ref,) = ort_run(model, feeds)
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, **TOLERANCE.get(name, {"rtol": 1e-3, "atol": 1e-4}))


def _logmel_float64(model: onnx.ModelProto, audio: np.ndarray) -> np.ndarray:
    """Whisper's log-mel spectrogram in float64 NumPy, with the model's mel filterbank."""
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    consts |= {n.output[0]: numpy_helper.to_array(a.t) for n in model.graph.node
               if n.op_type == "Constant" for a in n.attribute if a.name == "value"}
    (matmul,) = (n for n in model.graph.node if n.op_type == "MatMul")
    filters = consts[matmul.input[0]].astype(np.float64)  # (n_mels, n_fft // 2 + 1)
    n_fft, hop = 400, 160
    signal = np.pad(audio.astype(np.float64), ((0, 0), (n_fft // 2, n_fft // 2)), "reflect")
    frames = 1 + (signal.shape[1] - n_fft) // hop
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)  # periodic Hann
    spec = np.fft.rfft(signal[:, np.arange(frames)[:, None] * hop + np.arange(n_fft)] * window)
    power = np.abs(spec.transpose(0, 2, 1)[..., :-1]) ** 2
    log_spec = np.log10(np.maximum(filters @ power, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max(axis=(1, 2), keepdims=True) - 8.0)
    return (log_spec + 4.0) / 4.0


def test_logmel_matches_float64_numpy(tmp_path: Path) -> None:
    """The audio front-end's ONNX STFT (a rank-2 real signal, as PyTorch's exporter writes
    it), checked more tightly than onnxruntime's float32 allows."""
    name = "torch_logmel.onnx"
    model = onnx.load(str(MODELS / name))
    assert "STFT" in _ops(model)
    sess = _session(name, tmp_path)
    for feeds in CASES[name]:
        (ours,) = sess.run(None, feeds)
        np.testing.assert_allclose(ours, _logmel_float64(model, feeds["audio"]), atol=1e-4)


def _images() -> dict[str, np.ndarray]:
    """CHW images of several sizes and kinds of content. The detector's random classifier
    likes some textures better: it keeps none of the boxes of one image, tens of others
    (every score is at least 1e-4 from the threshold, so rounding decides nothing)."""
    yy, xx = np.mgrid[0:120, 0:90] / 40.0
    waves = np.stack([np.sin(xx), np.cos(yy), np.sin(xx + yy)]) * 0.5 + 0.5
    yy, xx = np.mgrid[0:96, 0:128] / 10.0
    stripes = np.stack([np.sin(xx), np.sin(yy), np.sin(xx * yy / 8)]) * 0.5 + 0.5
    blocks = np.random.default_rng(2).random((3, 6, 6)).repeat(16, 1).repeat(16, 2)
    return {
        "noise": np.random.default_rng(3).random((3, 64, 96)),  # 5 kept
        "waves": waves,  # 23
        "bright": 0.7 + np.random.default_rng(4).random((3, 100, 75)) * 0.3,  # none
        "stripes": stripes,  # 30 (the most it keeps), of both classes
        "blocks": blocks,  # 18
    }


def test_ssd_detector_with_nms_matches_onnxruntime(tmp_path: Path) -> None:
    """torchvision's SSD with its post-processing: score thresholds (NonZero), TopK, and
    batched NMS (NonMaxSuppression inside an If), kept boxes differing per image."""
    name = "torch_ssd.onnx"
    model = onnx.load(str(MODELS / name))
    assert {"NonMaxSuppression", "NonZero", "TopK", "If"} <= _ops(model)
    sess = _session(name, tmp_path)
    kept = {}
    for what, image in _images().items():
        feeds = {"image": image.astype(np.float32)}
        boxes, scores, labels = sess.run(None, feeds)
        ref_boxes, ref_scores, ref_labels = ort_run(model, feeds)
        kept[what] = len(ref_scores)
        assert boxes.shape == ref_boxes.shape, what
        assert scores.shape == labels.shape == (len(ref_scores),), what
        np.testing.assert_array_equal(labels, ref_labels, err_msg=what)
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-4, atol=1e-5, err_msg=what)
        np.testing.assert_allclose(boxes, ref_boxes, rtol=1e-4, atol=1e-3, err_msg=what)
    # the images are chosen so that the check means something: none kept, a few, tens
    assert sorted(kept.values()) == [0, 5, 18, 23, 30], kept
