"""Cold start from an .onnx in CPU time: a fresh process's CPU time per phase, for the models of
``startup.py``, several interpreters interleaved (issue 30's before/after on a busy machine).

Wall times on a shared machine move by ±50% from run to run (``startup.py`` says so); the
CPU time a process spends (``time.process_time``: all its threads) moves much less. Each
round starts, for every model, one process per interpreter in turn: onnxruntime's from the
first interpreter (``ort``), then mini-infer's ``InferenceSession`` on the .onnx from each
``NAME=PYTHON`` given; the first round is a warm-up (page cache, discovery cache), the best of
the ``--repeat`` others is kept. Phases: import (and plugin discovery), load or build, first
run. The ratios to onnxruntime's total close the table, with their geometric means.

    python benchmarks/startup_cpu.py base=/tmp/base-venv/bin/python new=/tmp/new-venv/bin/python
                                     [--repeat 5] [--model NAME ...]

Each interpreter needs mini-infer and onnxruntime installed (e.g. ``startup.py``'s venv of a
checkout's wheels).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import _helper_models, _repo_models  # noqa: E402

_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    model, feeds_file, what = sys.argv[1:4]
    feeds = dict(np.load(feeds_file))
    marks = [time.process_time()]
    if what == "ort":
        import onnxruntime as ort
        marks.append(time.process_time())
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    else:
        import mini_infer_core.session as mi
        from mini_infer_core.registry import get_plugin_registry
        get_plugin_registry()
        marks.append(time.process_time())
        sess = mi.InferenceSession(model)
    marks.append(time.process_time())
    sess.run(None, feeds)
    marks.append(time.process_time())
    print(json.dumps([1000 * (b - a) for a, b in zip(marks, marks[1:])]))
""")


def _phases(python: str, what: str, model: Path, feeds: Path) -> list[float]:
    proc = subprocess.run([python, "-c", _CHILD, str(model), str(feeds), what],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} {model.name}: {proc.stderr[-2000:]}")
    found: list[float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pythons", nargs="+", metavar="NAME=PYTHON")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--model", action="append", help="only these models (repeatable)")
    args = parser.parse_args()
    pythons = dict(p.split("=", 1) for p in args.pythons)
    runs = {"ort": ("ort", next(iter(pythons.values())))}
    runs.update({name: ("onnx", py) for name, py in pythons.items()})
    models = {**_repo_models(), **_helper_models()}
    if args.model:
        models = {k: v for k, v in models.items() if k in args.model}
    ratios: dict[str, list[float]] = {name: [] for name in pythons}
    print(f"{'model':20s} " + " ".join(f"{k:>22s}" for k in runs)
          + "   (CPU ms: total, import/build/first run)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, feeds) in models.items():
            path, feeds_file = Path(tmp) / f"{name}.onnx", Path(tmp) / f"{name}.npz"
            path.write_bytes(model.SerializeToString())
            np.savez(feeds_file, **feeds)
            best: dict[str, list[float]] = {}
            for r in range(args.repeat + 1):
                for key, (what, py) in runs.items():
                    got = _phases(py, what, path, feeds_file)
                    if r and (key not in best or sum(got) < sum(best[key])):
                        best[key] = got
            cells = [f"{sum(b):6.1f} ({'/'.join(f'{x:.0f}' for x in b)})" for b in best.values()]
            print(f"{name:20s} " + " ".join(f"{c:>22s}" for c in cells), flush=True)
            for key in pythons:
                ratios[key].append(sum(best[key]) / sum(best["ort"]))
    for key, values in ratios.items():
        mean = math.exp(sum(math.log(v) for v in values) / len(values))
        print(f"geometric mean of {key}/onnxruntime (CPU time): {mean:.2f}")


if __name__ == "__main__":
    main()
