"""Export the small PyTorch models that tests/test_exported_models.py checks against
onnxruntime. Needs torch (the CPU wheel) and torchvision: the .onnx files are committed, so
the tests do not.

    python3 -m venv .venv-export
    .venv-export/bin/pip install torch==2.13.0 onnx onnxscript
    .venv-export/bin/pip install --no-deps torchvision==0.28.0
    .venv-export/bin/python scripts/export_test_models.py

Two of them are what real exporters write around detection and audio models:

* ``torch_ssd.onnx``: a torchvision SSD detector (random weights, a tiny backbone, 3 classes)
  with its pre- and post-processing, exported by the TorchScript exporter: resizing and
  normalisation, box decoding, per-class score thresholds (NonZero, Gather), TopK, and
  ``torchvision.ops.batched_nms`` as ONNX ``NonMaxSuppression``. PyPI's torchvision is built
  against CUDA torch, so its compiled operators do not load next to the CPU torch; the
  ``torchvision::nms`` operator is then defined here with a Python kernel (torchvision's own
  ONNX symbolic does the export, the kernel only runs while tracing).
* ``torch_logmel.onnx``: a Whisper-style log-mel front-end (``torch.stft`` with a Hann window
  as ONNX ``STFT``, power, a mel filterbank matmul, clamped log10, dynamic range and scale),
  with a symbolic audio length.
"""

from __future__ import annotations

import argparse
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "models"


class SmallCNN(nn.Module):
    """Conv/BN/ReLU blocks with a residual, depthwise and grouped convs, pooling, upsampling."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.pw = nn.Conv2d(16, 32, 1, groups=4)
        self.bn = nn.BatchNorm2d(32)
        self.skip = nn.Conv2d(16, 32, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(32, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.stem(x)
        y = torch.relu(self.bn(self.pw(torch.relu(self.dw(s)))) + self.skip(s))
        y = nn.functional.max_pool2d(y, 2)
        y = self.up(y)
        return torch.sigmoid(self.head(y)).flatten(2).transpose(1, 2)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                                activation="gelu")
        self.out = nn.Linear(32, 10)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.layer(self.emb(ids))).softmax(-1)


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(32, 8, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        z, _ = self.gru(y)
        return z


# -- a detector with NMS in the graph --------------------------------------------------------


#: the Python-defined operator libraries (they must stay alive)
_LIBS: list[Any] = []


def _import_torchvision() -> Any:
    """Import torchvision. Where its compiled operators do not load (PyPI's wheel next to the
    CPU torch), let its fake registrations skip the operators that are missing and define
    ``torchvision::nms`` with a Python kernel, so that ``batched_nms`` can be traced."""
    original = torch.library.register_fake

    def tolerant(op: Any, func: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        def apply(f: Any) -> Any:
            try:
                return original(op, f, *args, **kwargs)
            except RuntimeError:  # an operator whose compiled library did not load
                return f

        return apply(func) if func is not None else apply

    torch.library.register_fake = tolerant
    try:
        import torchvision
        import torchvision.extension
    finally:
        torch.library.register_fake = original
    if not torchvision.extension._has_ops():
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.impl("nms", _nms_kernel, "CompositeExplicitAutograd")
        _LIBS.append(lib)
        torchvision.extension._has_ops = _has_ops
    return torchvision


def _has_ops() -> bool:  # TorchScript compiles it (torchvision scripts nms while tracing)
    return True


def _nms_kernel(dets: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
    """Greedy NMS of xyxy boxes, best score first: the indices kept."""
    order = torch.argsort(scores, descending=True, stable=True)
    x0, y0, x1, y1 = dets.unbind(1)
    area = (x1 - x0) * (y1 - y0)
    alive = torch.ones(len(order), dtype=torch.bool)
    keep = []
    for n, i in enumerate(order.tolist()):
        if not alive[n]:
            continue
        keep.append(i)
        rest = order[n + 1:]
        w = (torch.minimum(x1[rest], x1[i]) - torch.maximum(x0[rest], x0[i])).clamp(min=0)
        h = (torch.minimum(y1[rest], y1[i]) - torch.maximum(y0[rest], y0[i])).clamp(min=0)
        inter = w * h
        alive[n + 1:] &= ~(inter / (area[rest] + area[i] - inter) > iou)
    return torch.tensor(keep, dtype=torch.int64)


class TinyBackbone(nn.Module):
    """Two feature maps (strides 8 and 16) for the SSD head."""

    def __init__(self) -> None:
        super().__init__()
        def block(i: int, o: int) -> nn.Module:
            return nn.Sequential(nn.Conv2d(i, o, 3, 2, 1), nn.BatchNorm2d(o), nn.ReLU())
        self.body = nn.Sequential(block(3, 8), block(8, 16), block(16, 24))
        self.down = block(24, 32)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        f8 = self.body(x)
        return OrderedDict([("0", f8), ("1", self.down(f8))])


class Detector(nn.Module):
    """One CHW image in; boxes (xyxy, in the input image's pixels), scores and labels of the
    detections that survive the score threshold and NMS out."""

    def __init__(self) -> None:
        super().__init__()
        tv = _import_torchvision()
        from torchvision.models.detection import ssd
        from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
        anchors = DefaultBoxGenerator([[2], [2, 3]], min_ratio=0.2, max_ratio=0.9)
        self.ssd = ssd.SSD(TinyBackbone(), anchors, (96, 96), num_classes=3,
                           score_thresh=SSD_SCORE_THRESH, nms_thresh=0.45,
                           detections_per_img=30, topk_candidates=40)
        del tv
        # random weights score every class about 1/3: a sharper classifier spreads the
        # scores, so that some boxes pass the threshold, more or fewer from image to image
        with torch.no_grad():
            for conv in self.ssd.head.classification_head.modules():
                if isinstance(conv, nn.Conv2d):
                    conv.weight.mul_(SSD_CLS_GAIN)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, ...]:
        (det,) = self.ssd([image])
        return det["boxes"], det["scores"], det["labels"]


SSD_SCORE_THRESH = 0.8
SSD_CLS_GAIN = 8.0


# -- an audio front-end with STFT -------------------------------------------------------------


def mel_filters(sr: int, n_fft: int, n_mels: int) -> np.ndarray:
    """librosa's ``filters.mel(sr, n_fft, n_mels)`` (Slaney's mel scale and area
    normalisation), as Whisper's front-end uses it."""
    def hz_to_mel(f: np.ndarray) -> np.ndarray:
        f = np.asarray(f, np.float64)
        mel = f / (200.0 / 3)
        log_t = f >= 1000.0
        return np.where(log_t, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0)
                        / (np.log(6.4) / 27.0), mel)

    def mel_to_hz(m: np.ndarray) -> np.ndarray:
        f = m * (200.0 / 3)
        return np.where(m >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0)), f)

    fft_freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]
    return weights.astype(np.float32)


class LogMel(nn.Module):
    """Whisper's log-mel spectrogram: (batch, samples) audio -> (batch, n_mels, frames)."""

    def __init__(self, n_fft: int = 400, hop: int = 160, n_mels: int = 80) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("filters", torch.from_numpy(mel_filters(16000, n_fft, n_mels)))

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(audio, self.n_fft, self.hop, window=self.window, center=True,
                          return_complex=False)  # (batch, freq, frames, 2)
        power = spec.pow(2).sum(-1)[..., :-1]
        mel = self.filters @ power
        log_spec = torch.clamp(mel, min=1e-10).log10()
        peak = log_spec.amax(dim=(-2, -1), keepdim=True)
        log_spec = torch.maximum(log_spec, peak - 8.0)
        return (log_spec + 4.0) / 4.0


def _has_op(path: Path, op: str) -> None:
    model = onnx.load(str(path))
    ops = {n.op_type for n in model.graph.node}
    for node in model.graph.node:  # Loop and If bodies
        for attr in node.attribute:
            if attr.g is not None:
                ops |= {n.op_type for n in attr.g.node}
    if op not in ops:
        raise SystemExit(f"{path.name}: the exported graph has no {op} ({sorted(ops)})")


def export_detector() -> None:
    torch.manual_seed(0)
    model = Detector().eval()
    path = OUT / "torch_ssd.onnx"
    image = torch.rand(3, 80, 112)
    torch.onnx.export(model, (image,), str(path), input_names=["image"],
                      output_names=["boxes", "scores", "labels"],
                      dynamic_axes={"image": {1: "height", 2: "width"}, "boxes": {0: "n"},
                                    "scores": {0: "n"}, "labels": {0: "n"}},
                      opset_version=17, dynamo=False)
    _has_op(path, "NonMaxSuppression")
    print("wrote", path, path.stat().st_size, "bytes")


def export_logmel() -> None:
    model = LogMel().eval()
    path = OUT / "torch_logmel.onnx"
    audio = torch.randn(2, 4000)
    torch.onnx.export(model, (audio,), str(path), input_names=["audio"], output_names=["mel"],
                      dynamic_axes={"audio": {0: "batch", 1: "samples"},
                                    "mel": {0: "batch", 2: "frames"}},
                      opset_version=17, dynamo=False)
    _has_op(path, "STFT")
    print("wrote", path, path.stat().st_size, "bytes")


def export_small() -> None:
    torch.manual_seed(0)
    specs = [
        (SmallCNN(), (torch.randn(2, 3, 32, 32),), ["x"],
         {"x": {0: "batch", 2: "height", 3: "width"}}),
        (Encoder(), (torch.randint(0, 100, (2, 7)),), ["ids"], {"ids": {0: "batch", 1: "seq"}}),
        (Recurrent(), (torch.randn(2, 5, 8),), ["x"], {"x": {0: "batch", 1: "seq"}}),
    ]
    for model, args, names, axes in specs:
        model.eval()
        path = OUT / f"torch_{type(model).__name__.lower()}.onnx"
        # the TorchScript exporter bakes some traced sizes into attention (a key length of 7);
        # the dynamo exporter keeps them symbolic
        dynamo = isinstance(model, Encoder)
        shapes = {names[0]: {k: torch.export.Dim(v, min=1, max=64) for k, v in axes[names[0]]
                             .items()}} if dynamo else None
        torch.onnx.export(model, args, str(path), input_names=names, output_names=["y"],
                          dynamic_axes=None if dynamo else {**axes, "y": {0: "batch"}},
                          dynamic_shapes=shapes, opset_version=18 if dynamo else 17,
                          dynamo=dynamo, external_data=False)
        print("wrote", path, path.stat().st_size, "bytes")


EXPORTS = {"small": export_small, "ssd": export_detector, "logmel": export_logmel}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", nargs="*", help="what to export (default: all): small "
                        "(torch_smallcnn, torch_encoder, torch_recurrent), ssd, logmel")
    which = parser.parse_args().which or list(EXPORTS)
    for name in which:
        if name not in EXPORTS:
            parser.error(f"unknown export {name!r}: pick from {', '.join(EXPORTS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    for name in which:
        EXPORTS[name]()


if __name__ == "__main__":
    main()
