"""Cold start: a fresh process's time to its first result, against onnxruntime (issue 30), and
the start-up of the commands that must not import onnx (issue 17, item 24).

Models (``--models``, the default): for each of 12 models -- the ones exported from PyTorch
that ship in ``tests/data/models``, four of the light CNNs that ship inside onnx, and four
built here with onnx's helper; nothing is downloaded -- a fresh process imports the runtime,
opens the model and runs it once, timed from after ``import numpy`` and reading its inputs
to the first result: onnxruntime from the ``.onnx``, mini-infer from the ``.onnx`` (parse and
build) and from an engine file built beforehand (``InferenceSession`` both). Each is run
``--repeat`` times, interleaved, after one untimed warm-up run (which also writes the
discovery cache, as the first start after installing does); the best time is kept. The ratios'
geometric means close the table; ``--phases`` adds where mini-infer's time goes (import,
plugin discovery, load or build, first run). ``--zoo PATTERN`` adds the models of
``benchmarks/zoo.py``'s and ``benchmarks/quantized.py``'s caches whose names match (models
exported by their export scripts, not shipped: e.g. ``--zoo mobilenet_v3_small.dynamo --zoo
gpt2_small.dynamic``), with a geometric mean of their own.

They run in a virtual environment installed from the wheels of this checkout (core, cpu
plugins, cpu-native, ml plugins) and onnxruntime, made under ``--venv`` (kept and reused;
``--rebuild`` makes it again), or with ``--python`` an existing interpreter (its packages'
byte code compiled first, as pip does when it installs a wheel).

Commands (``--commands``): ``--help``, ``plugins`` and loading an engine file, beside a bare
interpreter, ``import numpy`` and ``import onnx``.

    python benchmarks/startup.py [--repeat 5] [--phases] [--venv DIR | --python PY]
                                 [--model NAME ...] [--zoo PATTERN ...] [--baseline PY]
    python benchmarks/startup.py --commands

``--python .venv/bin/python`` (the development venv, editable installs) is the quick way: no
wheels are built. ``--baseline PY`` times an earlier checkout's .onnx start and its start
from the same engine file (its own venv, e.g. one made by this script from that checkout;
the engine format must be one it reads) in the same interleaved rounds.

On a busy machine (the development machine is shared) take the figures as relative: the
three columns of a row are measured interleaved, in the same conditions.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
import venv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WHEEL_SOURCES = [ROOT, ROOT / "plugin_packages" / "cpu_basic",
                 ROOT / "plugin_packages" / "cpu_native", ROOT / "plugin_packages" / "ml_basic"]

# -- the models -------------------------------------------------------------------------------


def _helper_models() -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    """Models built with onnx's helper, each with its inputs."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(0)

    def init(name: str, *shape: int, scale: float = 0.1) -> Any:
        return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    def model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any]
              ) -> onnx.ModelProto:
        g = h.make_graph(nodes, "g", inputs, outputs, inits)
        return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])

    def vi(name: str, shape: list[Any]) -> Any:
        return h.make_tensor_value_info(name, T.FLOAT, shape)

    out: dict[str, tuple[Any, dict[str, np.ndarray]]] = {}
    out["mlp"] = (model(
        [h.make_node("Gemm", ["x", "w1", "b1"], ["a"], transB=1),
         h.make_node("Relu", ["a"], ["r"]),
         h.make_node("Gemm", ["r", "w2", "b2"], ["l"], transB=1),
         h.make_node("Softmax", ["l"], ["y"], axis=1)],
        [vi("x", ["N", 256])], [vi("y", ["N", 10])],
        [init("w1", 512, 256), init("b1", 512), init("w2", 10, 512), init("b2", 10)]),
        {"x": rng.standard_normal((4, 256)).astype(np.float32)})
    d, s = 64, 16  # one transformer encoder layer, 4 heads
    shape4 = nh.from_array(np.array([1, s, 4, d // 4], np.int64), "shape4")
    shape3 = nh.from_array(np.array([1, s, d], np.int64), "shape3")
    nodes = [h.make_node("LayerNormalization", ["x", "g1", "z1"], ["n"], axis=-1)]
    for k in "qkv":
        nodes += [h.make_node("MatMul", ["n", f"w{k}"], [f"{k}0"]),
                  h.make_node("Reshape", [f"{k}0", "shape4"], [f"{k}1"]),
                  h.make_node("Transpose", [f"{k}1"], [k],
                              perm=[0, 2, 3, 1] if k == "k" else [0, 2, 1, 3])]
    nodes += [h.make_node("MatMul", ["q", "k"], ["att0"]),
              h.make_node("Mul", ["att0", "scale"], ["att1"]),
              h.make_node("Softmax", ["att1"], ["att"], axis=-1),
              h.make_node("MatMul", ["att", "v"], ["c0"]),
              h.make_node("Transpose", ["c0"], ["c1"], perm=[0, 2, 1, 3]),
              h.make_node("Reshape", ["c1", "shape3"], ["c"]),
              h.make_node("MatMul", ["c", "wo"], ["o"]),
              h.make_node("Add", ["x", "o"], ["res"]),
              h.make_node("LayerNormalization", ["res", "g2", "z2"], ["n2"], axis=-1),
              h.make_node("MatMul", ["n2", "wf1"], ["f0"]),
              h.make_node("Gelu", ["f0"], ["f1"], domain=""),
              h.make_node("MatMul", ["f1", "wf2"], ["f2"]),
              h.make_node("Add", ["res", "f2"], ["y"])]
    ones, zeros = np.ones(d, np.float32), np.zeros(d, np.float32)
    inits = [init(f"w{k}", d, d) for k in "qkvo"] + [
        init("wf1", d, 4 * d), init("wf2", 4 * d, d), shape4, shape3,
        nh.from_array(np.array(0.25, np.float32), "scale"),
        nh.from_array(ones, "g1"), nh.from_array(zeros, "z1"),
        nh.from_array(ones.copy(), "g2"), nh.from_array(zeros.copy(), "z2")]
    enc = model(nodes, [vi("x", [1, s, d])], [vi("y", [1, s, d])], inits)
    enc.opset_import[0].version = 20  # Gelu
    out["transformer_layer"] = (enc, {"x": rng.standard_normal((1, s, d)).astype(np.float32)})
    out["resnet_block"] = (model(
        [h.make_node("Conv", ["x", "c1", "cb1"], ["a"], pads=[1, 1, 1, 1]),
         h.make_node("BatchNormalization", ["a", "bs", "bb", "bm", "bv"], ["b"]),
         h.make_node("Relu", ["b"], ["r"]),
         h.make_node("Conv", ["r", "c2", "cb2"], ["c"], pads=[1, 1, 1, 1]),
         h.make_node("Add", ["x", "c"], ["s"]),
         h.make_node("Relu", ["s"], ["t"]),
         h.make_node("GlobalAveragePool", ["t"], ["y"])],
        [vi("x", [1, 32, 28, 28])], [vi("y", [1, 32, 1, 1])],
        [init("c1", 32, 32, 3, 3), init("cb1", 32), init("c2", 32, 32, 3, 3), init("cb2", 32),
         nh.from_array(np.ones(32, np.float32), "bs"), init("bb", 32),
         init("bm", 32), nh.from_array(np.ones(32, np.float32), "bv")]),
        {"x": rng.standard_normal((1, 32, 28, 28)).astype(np.float32)})
    out["lstm"] = (model(
        [h.make_node("LSTM", ["x", "W", "R", "B"], ["ys", "yh"], hidden_size=32),
         h.make_node("Squeeze", ["yh", "axes"], ["y"])],
        [vi("x", [20, 1, 16])], [vi("y", [1, 32])],
        [init("W", 1, 128, 16), init("R", 1, 128, 32), init("B", 1, 256),
         nh.from_array(np.array([0], np.int64), "axes")]),
        {"x": rng.standard_normal((20, 1, 16)).astype(np.float32)})
    return out


def _repo_models() -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    """The models exported from PyTorch that ship with the tests, and four of onnx's light
    CNNs (their weights made at run time by ConstantOfShape, as they ship)."""
    import onnx

    from mini_infer_core.testing.light_models import (
        default_inputs,
        load_light_model,
        strip_initializer_inputs,
    )

    rng = np.random.default_rng(1)
    data = ROOT / "tests" / "data" / "models"
    t = np.arange(16000, dtype=np.float32) / 16000
    out: dict[str, tuple[Any, dict[str, np.ndarray]]] = {
        "torch_smallcnn": (onnx.load(str(data / "torch_smallcnn.onnx")),
                           {"x": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}),
        "torch_encoder": (onnx.load(str(data / "torch_encoder.onnx")),
                          {"ids": rng.integers(0, 100, (2, 16)).astype(np.int64)}),
        "torch_recurrent": (onnx.load(str(data / "torch_recurrent.onnx")),
                            {"x": rng.standard_normal((2, 9, 8)).astype(np.float32)}),
        "torch_logmel": (onnx.load(str(data / "torch_logmel.onnx")),
                         {"audio": np.sin(2 * np.pi * 440 * t)[None].astype(np.float32)}),
    }
    for name in ("squeezenet", "shufflenet", "inception_v1", "resnet50"):
        m = strip_initializer_inputs(load_light_model(name))
        out[f"light_{name}"] = (m, default_inputs(m))
    return out


# -- the environment -------------------------------------------------------------------------

def _zoo_models(patterns: list[str]) -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    """Models of ``benchmarks/zoo.py``'s and ``benchmarks/quantized.py``'s caches (exported
    there, never here) whose names match ``patterns``: (the .onnx path, its inputs)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import zoo

    found: dict[str, tuple[Any, dict[str, np.ndarray]]] = {}
    for cache in (zoo.default_cache(), zoo.default_cache().parent / "quantized"):
        if not cache.is_dir():
            continue
        for name, path, meta in zoo.list_models(cache, patterns):
            found[name] = (path, zoo.make_feeds(zoo._input_specs(path, meta), 0))
    missing = [p for p in patterns if not any(p in n for n in found)]
    if missing:
        raise SystemExit(f"no zoo or quantized model matches {missing} (export them with "
                         "benchmarks/zoo_export.py or benchmarks/quantized_export.py)")
    return found


def wheel_venv(folder: Path, rebuild: bool) -> str:
    """A virtual environment with this checkout's wheels and onnxruntime; its python."""
    python = folder / "bin" / "python"
    if python.exists() and not rebuild:
        return str(python)
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    wheels = folder / "wheels"
    for src in WHEEL_SOURCES:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                        "--no-build-isolation", "-q", "-w", str(wheels), str(src)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *map(str, sorted(wheels.glob("*.whl"))), "onnxruntime"], check=True)
    return str(python)


def compile_packages(python: str) -> None:
    """Compile the byte code of the core and the plugin packages (pip does at install)."""
    code = ("import importlib.util, compileall, sys\n"
            "for m in ('mini_infer_core', 'mini_infer_cpu_plugins', 'mini_infer_cpu_native',"
            " 'mini_infer_ml_plugins'):\n"
            "    spec = importlib.util.find_spec(m)\n"
            "    if spec and spec.submodule_search_locations:\n"
            "        compileall.compile_dir(list(spec.submodule_search_locations)[0], quiet=1)\n")
    subprocess.run([python, "-c", code], check=True)


# -- one fresh process ------------------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    what, model, feeds_file, out_file = sys.argv[1:5]
    feeds = dict(np.load(feeds_file))
    marks = [("start", time.perf_counter())]
    if what == "ort":
        import onnxruntime as ort
        marks.append(("import", time.perf_counter()))
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        marks.append(("load", time.perf_counter()))
    else:
        import mini_infer_core.session as mi
        marks.append(("import", time.perf_counter()))
        from mini_infer_core.registry import get_plugin_registry
        get_plugin_registry()
        marks.append(("discover", time.perf_counter()))
        sess = mi.InferenceSession(model)
        marks.append(("load", time.perf_counter()))
    out = sess.run(None, feeds)
    marks.append(("run", time.perf_counter()))
    np.save(out_file, np.asarray(out[0]))
    print(json.dumps({n: t - marks[i][1] for i, (n, t) in enumerate(marks[1:])}))
""")

_BUILD = textwrap.dedent("""
    import sys
    import numpy as np
    import mini_infer_core as mi
    feeds = dict(np.load(sys.argv[2]))
    shapes = {k: v.shape for k, v in feeds.items()}
    config = mi.BuilderConfig(device="cpu", input_shapes=shapes)
    mi.load(sys.argv[1], config=config).save(sys.argv[3])
""")


def _child(python: str, what: str, model: Path, feeds: Path, out: Path) -> dict[str, float]:
    proc = subprocess.run([python, "-c", _CHILD, what, str(model), str(feeds), str(out)],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} {model.name}: {proc.stderr[-2000:]}")
    found: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def _verdict(name: str, distance: float) -> str:
    """A float model beyond 1e-2 of onnxruntime is flagged; a quantized one is held to
    ``benchmarks/quantized.py``'s bound (its dynamic-int8 GPT-2 differs by ~1e-2 where
    onnxruntime's fused kernels round the activations' quantization differently)."""
    quantized = any(f".{s}" in name for s in ("dynamic", "qdq", "qop", "nncf", "nbits4"))
    if quantized:
        return "  (int8: bound in quantized.py)"
    return "" if distance <= 1e-2 else "  DIFFERS"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def run_models(python: str, repeat: int, phases: bool, only: list[str] | None,
               baseline: str | None = None, zoo: list[str] | None = None) -> None:
    models = {**_repo_models(), **_helper_models()}
    if only:
        models = {k: v for k, v in models.items() if k in only}
    zoo_models = _zoo_models(zoo) if zoo else {}
    models.update(zoo_models)
    kinds: tuple[str, ...] = ("ort", "onnx", "engine",
                              *(("base", "base_engine") if baseline else ()))
    rows: list[tuple[str, dict[str, dict[str, float]], float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, feeds) in models.items():
            folder = Path(tmp) / name
            folder.mkdir()
            path, feeds_file, engine = folder / "m.onnx", folder / "in.npz", folder / "m.engine"
            if isinstance(model, Path):  # a zoo model: its own file
                path.symlink_to(model)
            else:
                path.write_bytes(model.SerializeToString())
            np.savez(feeds_file, **feeds)
            subprocess.run([python, "-c", _BUILD, str(path), str(feeds_file), str(engine)],
                           check=True, capture_output=True, timeout=900)
            # the baseline's column runs the .onnx through the baseline's interpreter
            runs = {"ort": (python, "ort", path), "onnx": (python, "onnx", path),
                    "engine": (python, "engine", engine), "base": (baseline, "onnx", path),
                    "base_engine": (baseline, "engine", engine)}
            best: dict[str, dict[str, float]] = {}
            for k in kinds:  # warm-up: page cache, discovery cache
                py, what, src = runs[k]
                _child(str(py), what, src, feeds_file, folder / f"{k}.npy")
            for _ in range(repeat):
                for k in kinds:
                    py, what, src = runs[k]
                    got = _child(str(py), what, src, feeds_file, folder / f"{k}.npy")
                    got["total"] = sum(got.values())
                    if k not in best or got["total"] < best[k]["total"]:
                        best[k] = got
            ref = np.load(folder / "ort.npy").astype(np.float64)
            # the largest relative L2 distance of our outputs from onnxruntime's: float
            # models agree to ~1e-6; dynamic-int8 transformers to a few 1e-3, where the two
            # round DynamicQuantizeLinear differently (docs/performance.md, quantized models)
            same = max(float(np.linalg.norm(np.load(folder / f"{k}.npy") - ref)
                             / max(float(np.linalg.norm(ref)), 1e-30))
                       for k in kinds if k != "ort")
            rows.append((name, best, same))
            print(f"  {name}: done", file=sys.stderr)
    extra = (f" {'baseline .onnx':>14s} {'ratio':>6s} {'baseline engine':>15s} {'ratio':>6s}"
             if baseline else "")
    print(f"{'model':22s} {'onnxruntime':>11s} {'.onnx':>8s} {'ratio':>6s} {'engine':>8s} "
          f"{'ratio':>6s}{extra}  rel L2 vs ort")
    for name, best, same in rows:
        o, m, e = (best[k]["total"] * 1000 for k in ("ort", "onnx", "engine"))
        more = ""
        if baseline:
            t = best["base"]["total"] * 1000
            te = best["base_engine"]["total"] * 1000
            more = f" {t:11.0f} ms {t / o:6.2f} {te:12.0f} ms {te / o:6.2f}"
        print(f"{name:22s} {o:8.0f} ms {m:5.0f} ms {m / o:6.2f} {e:5.0f} ms {e / o:6.2f}"
              f"{more}  {same:.1e}{_verdict(name, same)}")
    groups = [("geometric mean", [r for r in rows if r[0] not in zoo_models])]
    if zoo_models:
        groups.append(("zoo geometric mean", [r for r in rows if r[0] in zoo_models]))
    for title, group in groups:
        if not group:
            continue
        onnx_ratio = _geomean([b["onnx"]["total"] / b["ort"]["total"] for _, b, _ in group])
        engine_ratio = _geomean([b["engine"]["total"] / b["ort"]["total"] for _, b, _ in group])
        more = ""
        if baseline:
            base = _geomean([b["base"]["total"] / b["ort"]["total"] for _, b, _ in group])
            base_e = _geomean([b["base_engine"]["total"] / b["ort"]["total"]
                               for _, b, _ in group])
            more = f" {'':14s} {base:6.2f} {'':15s} {base_e:6.2f}"
        print(f"{title:22s} {'':11s} {'':8s} {onnx_ratio:6.2f} {'':8s} "
              f"{engine_ratio:6.2f}{more}")
    if phases:
        print("\nphases (ms): import, discover, load or build, first run")
        for name, best, _ in rows:
            cols = []
            for k in kinds:
                b = best[k]
                parts = [b.get(p, 0.0) * 1000 for p in ("import", "discover", "load", "run")]
                cols.append(f"{k} " + "/".join(f"{v:.0f}" for v in parts))
            print(f"{name:22s} " + "   ".join(cols))


# -- the commands ------------------------------------------------------------------------------

def best(argv: list[str], repeat: int) -> tuple[float, float]:
    """The best wall time and the best CPU time (user + system) of the child: on a busy
    machine the CPU time is the steadier figure."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def run_commands(py: str, repeat: int) -> None:
    cli = [py, "-m", "mini_infer_core.cli.main"]
    with tempfile.TemporaryDirectory() as tmp:
        engine = Path(tmp) / "relu.engine"
        subprocess.run([py, "-c", (
            "import onnx, mini_infer_core as mi; from onnx import helper as h, TensorProto as T;"
            "v = lambda n: h.make_tensor_value_info(n, T.FLOAT, [1, 8]);"
            "g = h.make_graph([h.make_node('Relu', ['x'], ['y'])], 'g', [v('x')], [v('y')]);"
            f"mi.build_engine(mi.parse_onnx(h.make_model(g))).save({str(engine)!r})")],
            check=True)
        rows: dict[str, list[str]] = {
            "python -c pass": [py, "-c", "pass"],
            "import numpy": [py, "-c", "import numpy"],
            "import onnx": [py, "-c", "import onnx"],
            "mini-infer --help": [*cli, "--help"],
            "mini-infer plugins": [*cli, "plugins"],
            "load an engine file": [py, "-c", "import mini_infer_core as mi; "
                                    f"mi.Runtime().load_engine({str(engine)!r})"],
        }
        subprocess.run([*cli, "plugins"], check=True, capture_output=True)  # the cache
        print(f"{'':22s} {'wall':>7s}    {'CPU':>7s}")
        for name, argv in rows.items():
            wall, cpu = best(argv, repeat)
            print(f"{name:22s} {wall * 1000:7.0f} ms {cpu * 1000:7.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--commands", action="store_true",
                        help="time the commands (--help, plugins, loading an engine file)")
    parser.add_argument("--phases", action="store_true", help="each phase of each start")
    parser.add_argument("--model", action="append", help="only these models (repeatable)")
    parser.add_argument("--zoo", action="append", metavar="PATTERN",
                        help="also the models of benchmarks/zoo.py's and quantized.py's caches "
                             "matching PATTERN (repeatable; a geometric mean of their own)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--venv", type=Path,
                       default=Path(tempfile.gettempdir()) / "mini-infer-startup-venv",
                       help="the wheels' virtual environment (made if missing)")
    where.add_argument("--python", help="an existing interpreter instead of the wheels' venv")
    parser.add_argument("--rebuild", action="store_true", help="make the venv again")
    parser.add_argument("--baseline", metavar="PY",
                        help="another interpreter (e.g. a venv of an earlier checkout's "
                             "wheels): its .onnx start is timed in the same rounds, a column "
                             "of its own, for a before/after on a busy machine")
    args = parser.parse_args()
    if args.python:
        python = args.python
        compile_packages(python)
    else:
        python = wheel_venv(args.venv, args.rebuild)
    job: Callable[[], None] = (
        (lambda: run_commands(python, args.repeat)) if args.commands
        else (lambda: run_models(python, args.repeat, args.phases, args.model,
                                 args.baseline, args.zoo)))
    job()


if __name__ == "__main__":
    main()
