"""One script for a GPU machine: does mini-infer's ``cuda`` device work, and how fast is it?

Needs CuPy for the installed CUDA (``mini-infer-cuda-plugins[cuda13]``) and this repository
(its ``.venv`` or the packages installed); no package registry, no network. Run from anywhere:

    python benchmarks/gpu_check.py [--models NAME ...] [--repeat N] [--budget SECONDS]

Sections, each reporting its own failures and going on with the next:

1. availability: CuPy, driver and GPU (exits with status 2 and the reason when there is none);
2. ``pytest plugin_packages/cuda_basic -m gpu -q``: every kernel with CuPy against its NumPy
   path, float32 and float16, and a CUDA-graph capture;
3. the nine light models (random, well-scaled weights, logits output, onnx's default input):
   built for ``cuda`` in float32 and compared with the cpu plugins (relative L2 <= 1e-3);
   in float16 (``BuilderConfig(fp16=True)`` when the core has that option, else the model
   converted to float16) with its error reported; median latency of the cuda engine eager,
   with CUDA graphs when ``ExecutionContext`` offers an option for them (float32 and
   float16), of the cpu engine, and of onnxruntime on the same inputs (its best provider:
   CUDA where onnxruntime-gpu is installed, else its CPU) as the anchor.

The whole run stays under ``--budget`` seconds (default 540): a section that would start past
it is skipped and says so. The summary table is printed last.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
RTOL_FP32 = 1e-3
#: ExecutionContext attributes a CUDA-graph switch might have (probed at run time)
GRAPH_OPTIONS = ("enable_graphs", "use_cuda_graph", "use_cuda_graphs", "enable_cuda_graph",
                 "enable_graph", "cuda_graph", "use_graphs")


@dataclasses.dataclass
class Row:
    model: str
    fp32_err: float | None = None
    fp32_ok: bool | None = None
    fallback: int | None = None
    fp16_err: float | None = None
    fp16_how: str = ""
    eager_ms: float | None = None
    graph_ms: float | None = None
    graph_note: str = "n/a"
    cpu_ms: float | None = None
    fp16_ms: float | None = None
    ort_ms: float | None = None
    ort_on: str = "not run"
    notes: list[str] = dataclasses.field(default_factory=list)


class Clock:
    def __init__(self, budget: float) -> None:
        self.start = time.perf_counter()
        self.budget = budget

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)


def say(text: str = "") -> None:
    print(text, flush=True)


def short(exc: BaseException) -> str:
    line = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return line if len(line) <= 160 else line[:157] + "..."


def section(title: str) -> None:
    say()
    say(f"== {title} " + "=" * max(0, 74 - len(title)))


def rel_l2(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if g.shape != w.shape:
        return math.inf
    norm = float(np.linalg.norm(w))
    return float(np.linalg.norm(g - w)) / (norm if norm else 1.0)


# -- 1. availability --------------------------------------------------------------------------

def check_availability() -> bool:
    section("1. CUDA availability")
    try:
        from mini_infer_cuda_plugins.device import CudaDevice, probe_cuda
    except Exception as exc:  # noqa: BLE001
        say(f"cannot import mini-infer-cuda-plugins: {short(exc)}")
        return False
    ok, reason = probe_cuda()
    if not ok:
        say(f"no usable GPU: {reason}")
        return False
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        say(f"GPU 0: {name}, compute capability {props['major']}.{props['minor']}, "
            f"{props['totalGlobalMem'] / 2**30:.0f} GiB")
        say(f"CuPy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
            f"driver {cupy.cuda.runtime.driverGetVersion()}")
        say(f"CUDA graphs supported by the device: {CudaDevice().supports_graphs()}")
        x = cupy.arange(8, dtype=cupy.float32)
        assert float((x * 2).sum()) == 56.0
    except Exception as exc:  # noqa: BLE001
        say(f"the GPU does not work with CuPy: {short(exc)}")
        return False
    return True


# -- 2. the gpu-marked tests ------------------------------------------------------------------

def run_gpu_tests(clock: Clock) -> str:
    section("2. pytest plugin_packages/cuda_basic -m gpu -q")
    timeout = max(30.0, min(300.0, clock.left() - 200.0))
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "plugin_packages" / "cuda_basic"),
           "-m", "gpu", "-q", "-p", "no:cacheprovider", "--no-header", "-rfE"]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        say(f"timed out after {timeout:.0f} s")
        return f"timed out after {timeout:.0f} s"
    except Exception as exc:  # noqa: BLE001
        say(f"could not run pytest: {short(exc)}")
        return f"not run: {short(exc)}"
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    failures = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    for ln in failures[:40]:
        say(ln)
    if len(failures) > 40:
        say(f"... {len(failures) - 40} more")
    summary = lines[-1] if lines else f"pytest exited {proc.returncode} without output"
    say(summary)
    return summary


# -- 3. models --------------------------------------------------------------------------------

def median_ms(run: Callable[[], Any], repeat: int, budget: float) -> float:
    """Median wall time of ``run`` over up to ``repeat`` runs within ``budget`` seconds
    (at least 3 runs)."""
    times: list[float] = []
    spent = 0.0
    while len(times) < repeat and (len(times) < 3 or spent < budget):
        t0 = time.perf_counter()
        run()
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    return 1e3 * statistics.median(times)


def to_fp16(model: Any) -> Any:
    """A copy of ``model`` computing in float16: float initializers, Constant and
    ConstantOfShape values, float graph inputs/outputs/value_infos and Cast-to-float."""
    import onnx
    from onnx import TensorProto, numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(init).astype(np.float16), init.name))
    for node in g.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == TensorProto.FLOAT:
                attr.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(attr.t).astype(np.float16), attr.t.name))
            if node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.FLOAT16
    for vi in [*g.input, *g.output, *g.value_info]:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    return m


def graph_context(engine: Any) -> tuple[Any | None, str]:
    """An execution context with CUDA graphs switched on, if the core offers a switch."""
    import mini_infer_core as mi

    for name in GRAPH_OPTIONS:
        if not hasattr(mi.ExecutionContext, name):
            continue
        ctx = engine.create_execution_context()
        attr = getattr(ctx, name)
        if callable(attr):
            try:
                on = attr(True)
            except TypeError:
                on = attr()
        else:
            setattr(ctx, name, True)
            on = getattr(ctx, name)
        if on is False:
            ctx.close()
            return None, f"ExecutionContext.{name}: not possible for this engine"
        return ctx, f"ExecutionContext.{name}"
    return None, "n/a (ExecutionContext has no CUDA-graph option)"


def check_model(name: str, args: argparse.Namespace, clock: Clock) -> Row:
    import mini_infer_core as mi
    from mini_infer_core.testing.light_models import (
        default_inputs,
        load_light_model,
        logits_model,
        randomize_weights,
    )

    row = Row(name)
    say(f"-- {name}")
    model = logits_model(randomize_weights(load_light_model(name), seed=args.seed))
    feeds = default_inputs(model)

    want: np.ndarray | None = None
    try:
        cpu = mi.InferenceSession(model, "cpu")
        want = cpu.run(None, feeds)[0]
        row.cpu_ms = median_ms(lambda: cpu.run(None, feeds), args.cpu_repeat,
                               min(15.0, max(1.0, clock.left() / 20)))
        cpu.close()
    except Exception as exc:  # noqa: BLE001
        row.notes.append(f"cpu: {short(exc)}")
        say(f"   cpu reference failed: {short(exc)}")

    try:
        t0 = time.perf_counter()
        engine = mi.load(model, config=mi.BuilderConfig(device="cuda"))
        row.fallback = sum(1 for n in engine.nodes if n.device != "cuda")
        ctx = engine.create_execution_context()
        got = ctx.execute(feeds)[engine.output_names[0]]
        say(f"   fp32 built in {time.perf_counter() - t0:.1f} s, {len(engine.nodes)} nodes, "
            f"{row.fallback} on the cpu fallback")
        if want is not None:
            row.fp32_err = rel_l2(got, want)
            row.fp32_ok = bool(np.allclose(got, want, rtol=RTOL_FP32, atol=1e-4)
                               or row.fp32_err <= RTOL_FP32)
            say(f"   fp32 vs cpu: relative L2 {row.fp32_err:.2e} "
                f"({'ok' if row.fp32_ok else 'MISMATCH'})")
        for _ in range(3):
            ctx.execute(feeds)
        row.eager_ms = median_ms(lambda: ctx.execute(feeds), args.repeat, 10.0)
        gctx, row.graph_note = graph_context(engine)
        if gctx is not None:
            gctx.execute(feeds)
            gout = gctx.execute(feeds)[engine.output_names[0]]
            if want is not None and rel_l2(gout, want) > RTOL_FP32:
                row.notes.append(f"graph output differs: rel L2 {rel_l2(gout, want):.2e}")
            failed = getattr(gctx, "graph_error", None)
            if failed:
                row.notes.append(f"graph capture failed, eager instead: {failed[:120]}")
            else:
                row.graph_ms = median_ms(lambda: gctx.execute(feeds), args.repeat, 10.0)
            gctx.close()
        ctx.close()
    except Exception as exc:  # noqa: BLE001
        row.notes.append(f"cuda fp32: {short(exc)}")
        say(f"   cuda fp32 failed: {short(exc)}")
        if args.verbose:
            traceback.print_exc()

    try:
        fields = {f.name for f in dataclasses.fields(mi.BuilderConfig)}
        if "fp16" in fields:
            row.fp16_how = "BuilderConfig(fp16=True)"
            engine16 = mi.load(model, config=mi.BuilderConfig(device="cuda", fp16=True))
            feeds16 = feeds
        else:
            row.fp16_how = "model converted to float16 (BuilderConfig has no fp16)"
            engine16 = mi.load(to_fp16(model), config=mi.BuilderConfig(device="cuda"))
            feeds16 = {k: v.astype(np.float16) for k, v in feeds.items()}
        ctx16 = engine16.create_execution_context()
        got16 = ctx16.execute(feeds16)[engine16.output_names[0]]
        if want is not None:
            row.fp16_err = rel_l2(got16.astype(np.float32), want)
            say(f"   fp16 ({row.fp16_how}) vs cpu fp32: relative L2 {row.fp16_err:.2e}")
        ctx16.close()
        g16, _ = graph_context(engine16)
        if g16 is not None:
            g16.execute(feeds16)
            if not getattr(g16, "graph_error", None):
                row.fp16_ms = median_ms(lambda: g16.execute(feeds16), args.repeat, 10.0)
            g16.close()
    except Exception as exc:  # noqa: BLE001
        row.notes.append(f"fp16: {short(exc)}")
        say(f"   fp16 failed: {short(exc)}")
    try:
        import onnxruntime as ort

        wanted = ("CUDAExecutionProvider", "CPUExecutionProvider")
        providers = [p for p in wanted if p in ort.get_available_providers()]
        sess = ort.InferenceSession(model.SerializeToString(), providers=providers[:1])
        sess.run(None, feeds)
        row.ort_ms = median_ms(lambda: sess.run(None, feeds), args.cpu_repeat,
                               min(10.0, max(1.0, clock.left() / 20)))
        row.ort_on = f"onnxruntime {ort.__version__}, {providers[0]}"
    except Exception as exc:  # noqa: BLE001
        row.notes.append(f"onnxruntime: {short(exc)}")
    return row


def fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_table(rows: list[Row], tests: str) -> None:
    section("summary")
    say(f"gpu tests: {tests}")
    head = (f"{'model':<14}{'fp32 relL2':>11} {'ok':<4}{'fallbk':>7}{'fp16 relL2':>11}"
            f"{'eager ms':>10}{'graph ms':>10}{'fp16 gr':>9}{'cpu ms':>8}{'ort ms':>8}")
    say(head)
    say("-" * len(head))
    for r in rows:
        ok = "-" if r.fp32_ok is None else ("yes" if r.fp32_ok else "NO")
        say(f"{r.model:<14}{fmt(r.fp32_err, '.2e'):>11} {ok:<4}{fmt(r.fallback, 'd'):>7}"
            f"{fmt(r.fp16_err, '.2e'):>11}{fmt(r.eager_ms, '.2f'):>10}"
            f"{fmt(r.graph_ms, '.2f'):>10}{fmt(r.fp16_ms, '.2f'):>9}"
            f"{fmt(r.cpu_ms, '.1f'):>8}{fmt(r.ort_ms, '.1f'):>8}")
    notes = [f"{r.model}: {n}" for r in rows for n in r.notes]
    if rows:
        say(f"graphs: {rows[0].graph_note}; fp16: {rows[0].fp16_how or 'not run'} "
            f"(fp16 gr: with graphs); ort: {rows[0].ort_on}")
    for n in notes:
        say(f"note: {n}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--repeat", type=int, default=30, help="timed cuda runs per mode")
    parser.add_argument("--cpu-repeat", type=int, default=5, help="timed cpu runs")
    parser.add_argument("--budget", type=float, default=540.0, help="seconds in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    clock = Clock(args.budget)
    if not check_availability():
        say("\ngpu_check: no usable CUDA GPU here; nothing else to check.")
        return 2
    tests = "skipped (--skip-tests)"
    if not args.skip_tests:
        try:
            tests = run_gpu_tests(clock)
        except Exception as exc:  # noqa: BLE001
            tests = f"error: {short(exc)}"
    section("3. light models: cuda fp32 / fp16 vs cpu, latency")
    rows: list[Row] = []
    try:
        from mini_infer_core.testing.light_models import LIGHT_MODELS

        names = args.models or list(LIGHT_MODELS)
    except Exception as exc:  # noqa: BLE001
        say(f"cannot list the light models: {short(exc)}")
        names = []
    for name in names:
        if clock.left() < 30:
            say(f"-- {name}: skipped (time budget)")
            rows.append(Row(name, notes=["skipped: time budget"]))
            continue
        try:
            rows.append(check_model(name, args, clock))
        except Exception as exc:  # noqa: BLE001
            say(f"-- {name}: failed: {short(exc)}")
            rows.append(Row(name, notes=[short(exc)]))
    print_table(rows, tests)
    bad = [r.model for r in rows if r.fp32_ok is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
