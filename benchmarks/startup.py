"""Start-up time of the commands that must not import onnx (issue 17, item 24): each is run in
a fresh process, best of ``--repeat`` wall and CPU times, beside a bare interpreter,
``import numpy`` (which the core needs) and ``import onnx`` (what listing no longer pays).

    python benchmarks/startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


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


def _package_folders() -> list[str]:
    """The folders of the core and of every installed plugin distribution's package."""
    from mini_infer_core import registry

    folders = {str(Path(registry.__file__).parents[1])}
    for rec in registry.discover().distributions:
        module = rec.entry_point.partition("=")[2].strip().partition(":")[0].split(".")[0]
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            folders.add(str(Path(spec.origin).parent))
    return sorted(folders)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-compile", action="store_true",
                        help="time as the tree is (by default the packages' byte code is "
                             "compiled first, as pip does when it installs a wheel: an "
                             "editable install under PYTHONDONTWRITEBYTECODE=1 otherwise "
                             "compiles every module on every start)")
    args = parser.parse_args()
    py, cli = sys.executable, [sys.executable, "-m", "mini_infer_core.cli.main"]
    if not args.no_compile:
        subprocess.run([py, "-m", "compileall", "-q", *_package_folders()], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Path(tmp) / "relu.engine"
        subprocess.run([py, "-c", (
            "import onnx, mini_infer_core as mi; from onnx import helper as h, TensorProto as T;"
            "v = lambda n: h.make_tensor_value_info(n, T.FLOAT, [1, 8]);"
            "g = h.make_graph([h.make_node('Relu', ['x'], ['y'])], 'g', [v('x')], [v('y')]);"
            f"mi.build_engine(mi.parse_onnx(h.make_model(g))).save({str(engine)!r})")],
            check=True)
        rows = {
            "python -c pass": [py, "-c", "pass"],
            "import numpy": [py, "-c", "import numpy"],
            "import onnx": [py, "-c", "import onnx"],
            "mini-infer --help": [*cli, "--help"],
            "mini-infer plugins": [*cli, "plugins"],
            "load an engine file": [py, "-c", "import mini_infer_core as mi; "
                                    f"mi.Runtime().load_engine({str(engine)!r})"],
        }
        print(f"{'':22s} {'wall':>7s}    {'CPU':>7s}")
        for name, argv in rows.items():
            wall, cpu = best(argv, args.repeat)
            print(f"{name:22s} {wall * 1000:7.0f} ms {cpu * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
