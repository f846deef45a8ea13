"""TensorRT's INT8 build on Magika's trained model (shipped in the ``magika`` wheel): calibrate
on files of this repository, evaluate on at least 500 others (of this repository and of the
installed packages in site-packages), and print how often the INT8 engine's labels agree with
our float32 engine's, and both engines' latency (interleaved runs in one process).

    python benchmarks/int8_magika.py [--calibration-files 128] [--files 600]
        [--calibrator minmax|entropy] [--batch 64] [--rounds 3] [--threads N]

Timings on a shared machine are noisy: the script interleaves the two engines round by round
and prints each round and the median; compare them only with each other.
"""

from __future__ import annotations

import argparse
import json
import site
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import identify_files  # noqa: E402

from mini_infer_core.builder import Builder, BuilderConfig  # noqa: E402
from mini_infer_core.importer import parse_onnx  # noqa: E402

SKIP = {".git", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", "build"}


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
                  and not SKIP & set(p.relative_to(root).parts))


def _run(ctx: Any, x: np.ndarray, batch: int) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    out = [next(iter(ctx.execute({"bytes": x[s:s + batch]}).values()))
           for s in range(0, len(x), batch)]
    return np.concatenate(out), time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration-files", type=int, default=128)
    ap.add_argument("--files", type=int, default=600, help="files to evaluate (>= 500)")
    ap.add_argument("--calibrator", default="minmax", choices=["minmax", "entropy"])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    if args.threads:
        from mini_infer_core.threads import set_num_threads
        set_num_threads(args.threads)
    config = json.loads((identify_files.model_dir() / "config.min.json").read_text())
    labels = config["target_labels_space"]
    model = str(identify_files.model_dir() / "model.onnx")
    rng = np.random.default_rng(0)
    repo = _files(ROOT)
    order = rng.permutation(len(repo))
    calib = [repo[i] for i in order[:args.calibration_files]]
    rest = [repo[i] for i in order[args.calibration_files:]]
    packages = _files(Path(site.getsitepackages()[0]))
    n_repo = min(len(rest), args.files // 2)
    evaluate = rest[:n_repo] + [packages[i] for i in rng.choice(
        len(packages), args.files - n_repo, replace=False)]
    x = np.stack([identify_files.features(f, config) for f in evaluate])
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "calib.npz",
                 bytes=np.stack([identify_files.features(f, config) for f in calib]))
        builder = Builder()
        t0 = time.perf_counter()
        f32 = builder.build_engine(parse_onnx(model), BuilderConfig())
        t1 = time.perf_counter()
        i8 = builder.build_engine(parse_onnx(model), BuilderConfig(
            int8=True, calibration=Path(tmp) / "calib.npz", calibrator=args.calibrator))
        t2 = time.perf_counter()
    info = i8.build_info["int8"]
    print(f"Magika {Path(model).parent.name}: calibrated on {len(calib)} files of this "
          f"repository ({args.calibrator}); evaluating {len(evaluate)} files ({n_repo} of "
          f"this repository, {len(evaluate) - n_repo} of {Path(site.getsitepackages()[0])})")
    print(f"build: float32 {t1 - t0:.1f}s, int8 {t2 - t1:.1f}s; INT8 nodes "
          f"{len(info['int8_nodes'])}, kept FLOAT {len(info['float_nodes'])}")
    times: dict[str, list[float]] = {"float32": [], "int8": []}
    with f32.create_execution_context() as cf, i8.create_execution_context() as c8:
        _run(cf, x[:args.batch], args.batch)  # first runs: allocation, packing
        _run(c8, x[:args.batch], args.batch)
        for r in range(args.rounds):
            want, tf = _run(cf, x, args.batch)
            got, t8 = _run(c8, x, args.batch)
            times["float32"].append(tf)
            times["int8"].append(t8)
            print(f"round {r}: float32 {tf * 1e3 / len(x):.3f} ms/file, int8 "
                  f"{t8 * 1e3 / len(x):.3f} ms/file")
    a, b = want.argmax(1), got.argmax(1)
    agree = float(np.mean(a == b))
    mf, m8 = np.median(times["float32"]), np.median(times["int8"])
    print(f"labels agree on {int(np.sum(a == b))}/{len(a)} files ({agree:.2%}); "
          f"median float32 {mf * 1e3 / len(x):.3f} ms/file, int8 {m8 * 1e3 / len(x):.3f} "
          f"ms/file: int8 {mf / m8:.2f}x the float32 speed")
    for i in np.flatnonzero(a != b)[:10]:
        print(f"  differs: {evaluate[i]}: float32 {labels[a[i]]}, int8 {labels[b[i]]}")
    return 0 if agree >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
