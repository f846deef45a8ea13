"""The main job's result can be checked by a person (issue 17, item 25): Magika's trained model,
shipped inside its wheel, built into an engine file and run in another process, names the type
of files of this repository as they are and as Magika itself (onnxruntime) does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mini_infer_core as mi

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "identify_files.py"
#: files of this repository and what they are
KNOWN = {"README.md": "markdown", "scripts/setup.sh": "shell", "pyproject.toml": "toml",
         "src/mini_infer_core/cli/main.py": "python",
         "plugin_packages/cpu_native/src/mini_infer_cpu_native/_gemm.c": "c"}


def test_the_demo_engine_names_the_type_of_repository_files(tmp_path: Path) -> None:
    model = subprocess.run([sys.executable, str(SCRIPT), "--model"], capture_output=True,
                           text=True, check=True, timeout=300).stdout.strip()
    engine = tmp_path / "magika.engine"
    mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(device="cpu")).save(str(engine))
    proc = subprocess.run([sys.executable, str(SCRIPT), str(engine), *KNOWN], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(KNOWN), proc.stdout
    for line, (name, kind) in zip(lines, KNOWN.items(), strict=True):
        path, label, score, *_ = line.split()
        assert (path, label) == (name, kind), line
        assert float(score) > 0.5, line  # files change as the repository does: the label checks
        assert line.endswith(f"(Magika itself: {kind})"), line


def test_demo_builds_and_runs_the_trained_model() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    for step in ("mini-infer plugins", "identify_files.py --model", "mini-infer build",
                 "identify_files.py \"$OUT/magika.engine\""):
        assert step in demo, step
