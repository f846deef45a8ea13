"""The main job's result can be checked by a person (issue 17, item 25): Magika's trained model,
shipped inside its wheel, built into an engine file and run in another process, names the type
of files of this repository as they are and as Magika itself (onnxruntime) does. The README
shows the lines the demo prints (issue 29, item 19), and the demo leaves no temporary folder
behind (item 18)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import mini_infer_core as mi

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "identify_files.py"
DEMO = ROOT / "scripts" / "demo.sh"
#: files of this repository and what they are
KNOWN = {"README.md": "markdown", "scripts/setup.sh": "shell", "pyproject.toml": "toml",
         "src/mini_infer_core/cli/main.py": "python",
         "plugin_packages/cpu_native/src/mini_infer_cpu_native/_gemm.c": "c"}
#: how far a score the README shows may be from the demo's: the scores move a little as the
#: files change (their first and last KiB are the model's input), the labels must not
SCORE_SLACK = 0.05


def _demo_files() -> list[str]:
    """The files scripts/demo.sh names the type of (its identify_files.py command)."""
    text = DEMO.read_text().replace("\\\n", " ")
    (line,) = [x for x in text.splitlines() if 'identify_files.py "$OUT/magika.engine"' in x]
    words = shlex.split(line)
    return words[words.index("$OUT/magika.engine") + 1:]


@pytest.fixture(scope="module")
def demo_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """What the demo's last step prints: the engine built from Magika's model, run in another
    process on the demo's files."""
    model = subprocess.run([sys.executable, str(SCRIPT), "--model"], capture_output=True,
                           text=True, check=True, timeout=300).stdout.strip()
    engine = tmp_path_factory.mktemp("demo") / "magika.engine"
    mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(device="cpu")).save(str(engine))
    proc = subprocess.run([sys.executable, str(SCRIPT), str(engine), *_demo_files()],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_the_demo_engine_names_the_type_of_repository_files(demo_lines: list[str]) -> None:
    assert _demo_files() == list(KNOWN)
    assert len(demo_lines) == len(KNOWN), demo_lines
    for line, (name, kind) in zip(demo_lines, KNOWN.items(), strict=True):
        path, label, score, *_ = line.split()
        assert (path, label) == (name, kind), line
        assert float(score) > 0.5, line  # files change as the repository does: the label checks
        assert line.endswith(f"(Magika itself: {kind})"), line


def test_the_readme_shows_what_the_demo_prints(demo_lines: list[str]) -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"ends the demo with lines.*?\n```\n(.*?)```", readme, flags=re.S)
    assert block is not None, "README.md: no block of the demo's lines"
    shown = block.group(1).splitlines()
    paste = "the demo prints (paste into README.md):\n" + "\n".join(demo_lines)
    assert len(shown) == len(demo_lines), paste
    for ours, theirs in zip(shown, demo_lines, strict=True):
        (path, label, score, rest), (path2, label2, score2, rest2) = (
            x.split(maxsplit=3) for x in (ours, theirs))
        assert (path, label, rest) == (path2, label2, rest2), paste
        assert abs(float(score) - float(score2)) <= SCORE_SLACK, paste
        assert len(ours) == len(theirs), paste  # the same columns


def test_demo_builds_and_runs_the_trained_model() -> None:
    demo = DEMO.read_text()
    for step in ("mini-infer plugins", "identify_files.py --model", "mini-infer build",
                 "identify_files.py \"$OUT/magika.engine\""):
        assert step in demo, step


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """scripts/demo.sh in a copy of the repository's layout whose setup, Python and CLI are
    stubs: the build writes the engine file it is asked for, the rest print a line."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(DEMO, repo / "scripts" / "demo.sh")
    _stub(repo / "scripts" / "setup.sh", "")
    _stub(repo / ".venv" / "bin" / "python", 'echo "python $*"\n')
    _stub(repo / ".venv" / "bin" / "mini-infer",
          'if [ "$1" = build ]; then head -c 3000000 /dev/zero > "$4"; fi\necho "mini-infer $*"\n')
    return repo


def test_the_demo_removes_its_temporary_folder(demo_copy: Path, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("DEMO_DIR", None)
    proc = subprocess.run(["bash", str(demo_copy / "scripts" / "demo.sh")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "magika.engine" in proc.stdout  # it built into a temporary folder ...
    assert list(tmp.iterdir()) == []  # ... and removed it


def test_the_demo_keeps_the_folder_it_is_given(demo_copy: Path, tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    proc = subprocess.run(["bash", str(demo_copy / "scripts" / "demo.sh")],
                          env={**os.environ, "DEMO_DIR": str(keep)}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (keep / "magika.engine").is_file()  # DEMO_DIR: the engine is the user's to keep
