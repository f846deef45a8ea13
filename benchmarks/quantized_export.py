"""Generate issue 25's corpus of quantized models, for ``benchmarks/quantized.py``.

Float models are built with random weights (nothing is downloaded: torchvision ``weights=None``,
Hugging Face config classes with small configurations), exported by the TorchScript-based
exporter (``torch.onnx.export(..., dynamo=False)``, a dynamic batch, a dynamic sequence for
text) into ``<cache>/float/``, then quantized by the tools users quantize with:

* ``dynamic``: ``onnxruntime.quantization.quantize_dynamic`` (s8 weights, per tensor) on eight
  transformers, after ``quant_pre_process`` where that succeeds (the JSON's ``preprocess`` says);
* ``qdq`` / ``qop``: ``quantize_static`` in QDQ or QOperator format (u8 activations, s8
  per-channel weights, MinMax calibration on 8 inputs filled as the benchmark fills them, at
  seeds 1000..1007, after ``quant_pre_process``) on ten CNNs (QOperator on two);
* ``nncf``: ``nncf.quantize`` (ONNX backend, its default preset, 16 calibration samples at
  seeds 1000..1015) on two;
* ``nbits4``: onnxruntime's ``MatMulNBitsQuantizer`` (4 bits, blocks of 32, symmetric) on the
  two decoders.

Each model lands in the cache as ``<arch>.<scheme>.onnx`` with ``<arch>.<scheme>.json`` beside
it: the tool and its settings, the float model it came from (``float/<arch>.onnx``, with a JSON
of its own: exporter, source, inputs, onnxruntime against torch, versions), the benchmark
inputs and how to fill them, the ONNX inputs and outputs, opset, nodes, operators, size, time,
and a check (onnxruntime on the quantized model against onnxruntime on the float one, relative
L2).

With the versions ``quantized_requirements.txt`` pins, the output is the same byte for byte
from one run to the next (float weights from ``torch.manual_seed(0)``, fixed calibration seeds);
the float JSONs' ``versions`` list what the venv has installed.

The cache: ``--cache DIR``, else ``$MINI_INFER_QUANT``, else ``~/.cache/mini-infer/quantized``;
never the repository. Each float export and each quantization runs in a child process of its
own (``--timeout`` seconds; its log in ``<cache>/logs/``); a failure is reported, never fatal.

The tools live in a venv of their own (``benchmarks/quantized_requirements.txt``: CPU torch,
torchvision, transformers, onnxruntime, nncf), not in the project's ``.venv``:

    python3 benchmarks/quantized_export.py --setup           # creates .venv-quant
    .venv-quant/bin/python benchmarks/quantized_export.py      # what the cache lacks
    .venv-quant/bin/python benchmarks/quantized_export.py --list
    .venv-quant/bin/python benchmarks/quantized_export.py --models 'resnet18.*' --force
    .venv-quant/bin/python benchmarks/quantized_export.py --schemes dynamic nbits4

and then, in the project's venv: ``.venv/bin/python benchmarks/quantized.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import zoo_export as ze  # noqa: E402 - its builders, checks and venv setup

REPO = ze.REPO
SCHEMES = ("dynamic", "qdq", "qop", "nncf", "nbits4")
RESULT_TAG = "QUANT-RESULT "
# calibration inputs: filled as the benchmark fills its inputs, at seeds 1000, 1001, ... (not
# the benchmark's own seed 0)
CALIBRATION_SEED = 1000
CALIBRATION_SAMPLES = 8  # quantize_static's
NNCF_SUBSET = 16  # nncf.quantize's subset_size (and so its calibration samples)


def default_cache() -> Path:
    env = os.environ.get("MINI_INFER_QUANT")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mini-infer" / "quantized"


# --------------------------------------------------------------------------------------------
# what is exported


def _whisper_encoder_small() -> ze.Prepared:
    ze._prepare_torch()
    import transformers

    config = transformers.WhisperConfig(
        d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
        decoder_layers=1, decoder_attention_heads=6, decoder_ffn_dim=1536, num_mel_bins=80,
        max_source_positions=250)
    model = transformers.WhisperModel(config).get_encoder().eval()
    return ze.Prepared(
        module=ze._wrap(lambda m, x: m(input_features=x).last_hidden_state, model),
        example=(ze._randn(2, 80, 500),),
        inputs=[ze.InputSpec("input_features", "float32", [1, 80, 500],
                             {"kind": "normal", "std": 1.0})],
        output_names=["last_hidden_state"], dynamic={"input_features": {0: "batch"}},
        source="transformers.WhisperModel(WhisperConfig(d_model=384, encoder_layers=4, "
               "heads=6, ffn=1536, 80 mel bins, max_source_positions=250)).get_encoder() "
               "(whisper-tiny-like; 5 s of features: 500 frames)", family="audio")


_BERT_INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
_IDS_MASK = ["input_ids", "attention_mask"]
_NO_CACHE = {"use_cache": False}


def _bert(hidden: int, layers: int, heads: int, ffn: int, source: str
          ) -> Callable[[], ze.Prepared]:
    """A BertModel (``hidden`` wide, ``layers`` layers, ``heads`` heads, feed-forward ``ffn``)
    on ids, mask and token types."""
    return ze._hf_text("BertConfig", "BertModel", _BERT_INPUTS, "last_hidden_state",
                       {"hidden_size": hidden, "num_hidden_layers": layers,
                        "num_attention_heads": heads, "intermediate_size": ffn}, source)


# the float models: name -> (family, builder)
FLOATS: dict[str, tuple[str, Callable[[], ze.Prepared]]] = {
    "albert_small": ("text", ze._hf_text(
        "AlbertConfig", "AlbertModel", _BERT_INPUTS, "last_hidden_state",
        {"embedding_size": 128, "hidden_size": 384, "num_hidden_layers": 4,
         "num_attention_heads": 6, "intermediate_size": 1536},
        "albert-like: embeddings 128, 4 (shared) layers, 384, 6 heads")),
    "bert_small": ("text", _bert(256, 4, 4, 1024, "bert-small-like: 4 layers, 256, 4 heads")),
    "distilbert_small": ("text", ze._hf_text(
        "DistilBertConfig", "DistilBertModel", _IDS_MASK, "last_hidden_state",
        {"n_layers": 3, "dim": 512, "n_heads": 8, "hidden_dim": 2048},
        "distilbert-like: 3 layers, 512, 8 heads")),
    "gpt2_small": ("text", ze._hf_text(
        "GPT2Config", "GPT2LMHeadModel", _IDS_MASK, "logits",
        {"n_layer": 4, "n_embd": 384, "n_head": 6, "vocab_size": 16384},
        "gpt2-like: 4 layers, 384, 6 heads, vocabulary 16384; no past key/values",
        extra=_NO_CACHE)),
    "llama_small": ("text", ze._hf_text(
        "LlamaConfig", "LlamaForCausalLM", _IDS_MASK, "logits",
        {"hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6,
         "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 16384},
        "llama-like: 4 layers, 384, 6 heads, 2 key/value heads (GQA), SwiGLU 1024, "
        "vocabulary 16384; no past key/values", extra=_NO_CACHE)),
    "minilm_l6": ("text", _bert(384, 6, 12, 1536,
                                "all-MiniLM-L6-v2-like: 6 layers, 384, 12 heads")),
    "roberta_small": ("text", ze._hf_text(
        "RobertaConfig", "RobertaModel", _IDS_MASK, "last_hidden_state",
        {"vocab_size": 50265, "hidden_size": 384, "num_hidden_layers": 4,
         "num_attention_heads": 6, "intermediate_size": 1536, "max_position_embeddings": 514,
         "type_vocab_size": 1, "pad_token_id": 1},
        "roberta-like: 4 layers, 384, 6 heads, vocabulary 50265")),
    "whisper_encoder_small": ("audio", _whisper_encoder_small),
    **{name: ("vision/classification", ze._tv_classifier(name)) for name in (
        "densenet121", "efficientnet_b0", "mobilenet_v2", "mobilenet_v3_large",
        "mobilenet_v3_small", "regnet_y_400mf", "resnet18", "resnet50", "shufflenet_v2_x1_0",
        "squeezenet1_1")},
}

_TEXT = ["albert_small", "bert_small", "distilbert_small", "gpt2_small", "llama_small",
         "minilm_l6", "roberta_small", "whisper_encoder_small"]
_CNNS = ["densenet121", "efficientnet_b0", "mobilenet_v2", "mobilenet_v3_large",
         "mobilenet_v3_small", "regnet_y_400mf", "resnet18", "resnet50", "shufflenet_v2_x1_0",
         "squeezenet1_1"]

# the corpus: (float model, scheme), 24 models
MODELS: list[tuple[str, str]] = (
    [(a, "dynamic") for a in _TEXT] + [(a, "qdq") for a in _CNNS]
    + [(a, "qop") for a in ("mobilenet_v2", "resnet18")]
    + [(a, "nncf") for a in ("mobilenet_v2", "resnet18")]
    + [(a, "nbits4") for a in ("gpt2_small", "llama_small")])

TOOLS = {"dynamic": "quantize_dynamic", "qdq": "quantize_static", "qop": "quantize_static",
         "nncf": "nncf.quantize", "nbits4": "MatMulNBitsQuantizer"}


# --------------------------------------------------------------------------------------------
# the children: one float export, or one quantization


def _result(**fields: Any) -> None:
    print(RESULT_TAG + json.dumps(fields), flush=True)


def float_worker(arch: str, cache: Path) -> int:
    """Export ``float/<arch>.onnx`` (TorchScript exporter) and its JSON."""
    family, build = FLOATS[arch]
    out = cache / "float"
    out.mkdir(parents=True, exist_ok=True)
    path, tmp = out / f"{arch}.onnx", cache / "work" / f"{arch}.float.onnx"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        prepared = build()
        reinitialised = ze._no_zero_matrices(prepared.module)
        feeds = ze._make_feeds(prepared.inputs)
        reference = ze._torch_outputs(prepared, feeds)
        ze._export_torchscript(prepared, tmp)
        export_s = time.perf_counter() - start
        outs = ze._ort_outputs(tmp, feeds)
    except Exception as exc:
        traceback.print_exc()
        tmp.unlink(missing_ok=True)
        _result(status="failed", error=ze._short(exc))
        return 0
    check = {"ort_vs_torch_rel_l2": max(
        (ze._rel_l2(o, r) for o, r in zip(outs, reference, strict=False)), default=0.0)}
    os.replace(tmp, path)
    meta: dict[str, Any] = {
        "name": arch, "arch": arch, "family": family, "exporter": "torchscript",
        "source": prepared.source, "file": path.name, "bytes": path.stat().st_size,
        "inputs": [asdict(s) for s in prepared.inputs], **ze._onnx_io(path),
        "export_s": round(export_s, 2), "check": check, "versions": ze._versions(),
    }
    if reinitialised:
        meta["reinitialised"] = reinitialised
    (out / f"{arch}.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    _result(status="ok", exporter="torchscript", check=check)
    return 0


def _samples(inputs: list[ze.InputSpec], count: int) -> list[dict[str, Any]]:
    return [ze._make_feeds(inputs, CALIBRATION_SEED + i) for i in range(count)]


class _Calibration:
    """onnxruntime's CalibrationDataReader: the calibration samples."""

    def __init__(self, inputs: list[ze.InputSpec]) -> None:
        self._feeds = iter(_samples(inputs, CALIBRATION_SAMPLES))

    def get_next(self) -> dict[str, Any] | None:
        return next(self._feeds, None)


def _preprocess(src: Path, dst: Path) -> tuple[Path, str]:
    """``quant_pre_process`` into ``dst``; where it fails, the float model as it is."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    try:
        quant_pre_process(str(src), str(dst))
        return dst, "quant_pre_process"
    except Exception as exc:
        traceback.print_exc()
        dst.unlink(missing_ok=True)
        return src, f"none (quant_pre_process failed: {ze._short(exc)})"


def _ort_version() -> str:
    import onnxruntime

    return f"onnxruntime {onnxruntime.__version__}"


def _quantize_ort(scheme: str, src: Path, dst: Path, work: Path,
                  inputs: list[ze.InputSpec]) -> tuple[str, dict[str, Any]]:
    from onnxruntime import quantization as q

    tool = f"{_ort_version()} {TOOLS[scheme]}"
    if scheme == "nbits4":
        import onnx
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        settings = {"bits": 4, "block_size": 32, "is_symmetric": True, "accuracy_level": None}
        quantizer = MatMulNBitsQuantizer(onnx.load(str(src)), **settings)
        quantizer.process()
        quantizer.model.save_model_to_file(str(dst), use_external_data_format=False)
        return tool, settings
    model, preprocess = _preprocess(src, work / f"{src.stem}.pre.onnx")
    if scheme == "dynamic":
        q.quantize_dynamic(str(model), str(dst), weight_type=q.QuantType.QInt8,
                           per_channel=False)
        return tool, {"weight_type": "QInt8", "per_channel": False, "preprocess": preprocess}
    fmt = q.QuantFormat.QDQ if scheme == "qdq" else q.QuantFormat.QOperator
    q.quantize_static(str(model), str(dst), _Calibration(inputs), quant_format=fmt,
                      activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                      per_channel=True, calibrate_method=q.CalibrationMethod.MinMax)
    return tool, {"quant_format": fmt.name, "activation_type": "QUInt8", "weight_type": "QInt8",
                  "per_channel": True, "calibrate_method": "MinMax",
                  "calibration": f"{CALIBRATION_SAMPLES} seeded inputs as the benchmark "
                                 "fills them", "preprocess": preprocess}


def _quantize_nncf(src: Path, dst: Path, inputs: list[ze.InputSpec]
                   ) -> tuple[str, dict[str, Any]]:
    from importlib import metadata

    import nncf
    import onnx

    quantized = nncf.quantize(onnx.load(str(src)), nncf.Dataset(_samples(inputs, NNCF_SUBSET)),
                              subset_size=NNCF_SUBSET)
    onnx.save(quantized, str(dst))
    return f"nncf {metadata.version('nncf')} nncf.quantize", {
        "preset": "PERFORMANCE (default: symmetric s8 activations and weights)",
        "subset_size": NNCF_SUBSET, "backend": "ONNX"}


def quant_worker(arch: str, scheme: str, cache: Path) -> int:
    """Quantize ``float/<arch>.onnx`` with ``scheme``; write the model, its JSON and a check."""
    name = f"{arch}.{scheme}"
    src, work = cache / "float" / f"{arch}.onnx", cache / "work"
    work.mkdir(parents=True, exist_ok=True)
    try:
        fmeta = json.loads((cache / "float" / f"{arch}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _result(status="failed", error=f"no float model: {ze._short(exc)}")
        return 0
    inputs = [ze.InputSpec(**spec) for spec in fmeta["inputs"]]
    path, tmp = cache / f"{name}.onnx", work / f"{name}.onnx"
    start = time.perf_counter()
    try:
        if scheme == "nncf":
            tool, settings = _quantize_nncf(src, tmp, inputs)
        else:
            tool, settings = _quantize_ort(scheme, src, tmp, work, inputs)
        export_s = time.perf_counter() - start
        feeds = ze._make_feeds(inputs)
        got, expected = ze._ort_outputs(tmp, feeds), ze._ort_outputs(src, feeds)
    except Exception as exc:
        traceback.print_exc()
        tmp.unlink(missing_ok=True)
        _result(status="failed", error=ze._short(exc))
        return 0
    finally:
        (work / f"{arch}.pre.onnx").unlink(missing_ok=True)
    check = {"ort_int8_vs_float_rel_l2": max(
        (ze._rel_l2(g, e) for g, e in zip(got, expected, strict=False)), default=0.0)}
    os.replace(tmp, path)
    meta = {
        "name": name, "arch": arch, "family": fmeta["family"], "scheme": scheme, "tool": tool,
        "settings": settings, "source": fmeta["source"], "float_source": f"float/{src.name}",
        "float_exporter": fmeta["exporter"], "file": path.name, "bytes": path.stat().st_size,
        "float_bytes": src.stat().st_size, "inputs": fmeta["inputs"], **ze._onnx_io(path),
        "export_s": round(export_s, 2), "check": check,
    }
    (cache / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    _result(status="ok", tool=tool, settings=settings, check=check)
    return 0


# --------------------------------------------------------------------------------------------
# the parent: selection, one child per step, the summary


@dataclass
class Step:
    name: str  # "float.<arch>" or "<arch>.<scheme>"
    worker: list[str]  # the child's --worker arguments
    outputs: list[Path]


def _child(step: Step, cache: Path, timeout: float) -> dict[str, Any]:
    """Run one step in a child process; its QUANT-RESULT line, or why there is none."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--cache", str(cache),
           "--worker", *step.worker]
    log_path = cache / "logs" / f"{step.name}.log"
    (cache / "work").mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # in a directory of its own, removed after: quant_pre_process's symbolic shape inference
    # leaves temporary files (sym_shape_infer_temp.onnx, *.data) in the current directory
    with tempfile.TemporaryDirectory(dir=cache / "work") as cwd:
        output, rc = ze.run_logged(cmd, log_path, timeout, cwd)
    found = [line for line in output.splitlines() if line.startswith(RESULT_TAG)]
    if found:
        result: dict[str, Any] = json.loads(found[-1][len(RESULT_TAG):])
    else:
        why = (f"timed out after {timeout:.0f} s" if rc is None
               else f"the process ended (exit {rc}) without a result")
        result = {"status": "failed", "error": why}
    result.update(name=step.name, seconds=round(time.perf_counter() - start, 1),
                  log=str(log_path))
    return result


def _cached(paths: list[Path]) -> bool:
    return all(p.exists() for p in paths)


def _describe(r: dict[str, Any]) -> str:
    if r["status"] != "ok":
        return f"{r['status']}{': ' + r['error'] if r.get('error') else ''}"
    check = ", ".join(f"{k} {v:.1e}" for k, v in r.get("check", {}).items())
    return f"ok, {r['seconds']:.0f} s" + (f", {check}" if check else "")


def run_exports(args: argparse.Namespace, cache: Path) -> list[dict[str, Any]]:
    (cache / "logs").mkdir(parents=True, exist_ok=True)
    chosen = [(a, s) for a, s in MODELS
              if s in args.schemes and ze._selected(f"{a}.{s}", args.models)]
    results: list[dict[str, Any]] = []
    floats_done: dict[str, dict[str, Any]] = {}
    for arch, scheme in chosen:
        name = f"{arch}.{scheme}"
        outputs = [cache / f"{name}.onnx", cache / f"{name}.json"]
        if _cached(outputs) and not args.force:
            results.append({"name": name, "status": "cached"})
            continue
        if arch not in floats_done:
            fpaths = [cache / "float" / f"{arch}.onnx", cache / "float" / f"{arch}.json"]
            if _cached(fpaths) and not args.force:
                floats_done[arch] = {"name": f"float.{arch}", "status": "cached"}
            else:
                print(f"[float.{arch}] exporting ...", flush=True)
                floats_done[arch] = _child(Step(f"float.{arch}", ["float", arch], fpaths),
                                           cache, args.timeout)
                print(f"  float.{arch}: {_describe(floats_done[arch])}", flush=True)
                results.append(floats_done[arch])
        if floats_done[arch]["status"] == "failed":
            results.append({"name": name, "status": "failed",
                            "error": f"its float model failed: {floats_done[arch]['error']}"})
            continue
        print(f"[{name}] quantizing ...", flush=True)
        r = _child(Step(name, [arch, scheme], outputs), cache, args.timeout)
        print(f"  {name}: {_describe(r)}", flush=True)
        results.append(r)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = ze.export_parser(__doc__, "$MINI_INFER_QUANT or ~/.cache/mini-infer/quantized",
                              "models to make, NAME.SCHEME")
    parser.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=SCHEMES,
                        help="which schemes (default: all)")
    parser.add_argument("--force", action="store_true",
                        help="make again what is cached (the selected models and their float "
                             "originals)")
    ze.export_options(parser, "per float export and per quantization", "the corpus",
                      ".venv-quant")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.setup:
        return ze.setup_venv(args.setup, "quantized_requirements.txt", Path(__file__))
    cache = (args.cache or default_cache()).expanduser().resolve()
    if cache == REPO or REPO in cache.parents:
        parser.error(f"the cache {cache} is inside the repository; the models are not committed")
    cache.mkdir(parents=True, exist_ok=True)
    if args.worker:
        if args.worker[0] == "float":
            return float_worker(args.worker[1], cache)
        return quant_worker(args.worker[0], args.worker[1], cache)
    if args.list:
        for arch, scheme in MODELS:
            name = f"{arch}.{scheme}"
            print(f"{name:<32} {FLOATS[arch][0]:<22} {TOOLS[scheme]:<22} {ze.cached(cache, name)}")
        print(f"cache: {cache}")
        return 0
    print(f"cache: {cache}", flush=True)
    results = run_exports(args, cache)
    models = [r for r in results if not r["name"].startswith("float.")]
    ok = [r for r in models if r["status"] != "failed"]
    print(f"\n{len(ok)} quantized model(s) in the cache from this selection, "
          f"{len(models) - len(ok)} failed")
    ze.report_failures(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
