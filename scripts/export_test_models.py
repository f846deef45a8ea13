"""Export the small PyTorch models that tests/test_exported_models.py checks against
onnxruntime. Needs torch (the CPU wheel): the .onnx files are committed, so the tests do not.

    pip install torch==2.13.0 onnx onnxscript && python scripts/export_test_models.py
"""

from __future__ import annotations

from pathlib import Path

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


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
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


if __name__ == "__main__":
    main()
