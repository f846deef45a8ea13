"""The documentation a user installs from: the site builds with warnings as errors, the API page
is generated from the docstrings, every page is on the map, and the install page's commands
(wheels into a folder, pip from there) give a working engine."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import ROOT, Venv, ort_run

DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent


def test_site_builds_strictly_with_the_api_reference(tmp_path: Path) -> None:
    mkdocs = BIN / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed in this environment (scripts/setup.sh installs "
                    "the [docs] extra)")
    site = tmp_path / "site"
    proc = subprocess.run([str(mkdocs), "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    api = (site / "api" / "index.html").read_text()
    for name in ("session.InferenceSession", "builder.Builder", "runtime.Runtime",
                 "registry.PluginRegistry", "errors.MiniInferError"):
        assert f'id="mini_infer_core.{name}"' in api, name
    # the class docs carry their docstrings, not only their names
    assert "onnxruntime" in api
    # every public object of the package and every CLI command is in the site
    import mini_infer_core
    from mini_infer_core.cli._parser import HELP

    missing = [n for n in mini_infer_core.__all__ if not n.startswith("__")
               and not re.search(rf'id="mini_infer_core\.[a-z_.]*\b{n}"', api)]
    assert not missing, f"not in the API reference: {missing}"
    cli = (site / "cli" / "index.html").read_text()
    assert not [c for c in HELP if f"mini-infer {c}" not in cli], "a command lacks its section"


def test_every_page_is_on_the_index_and_in_the_navigation() -> None:
    index = (DOCS / "index.md").read_text()
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in sorted(DOCS.glob("*.md")):
        if page.name == "index.md":
            continue
        assert f"({page.name})" in index, f"docs/index.md does not link {page.name}"
        assert f": {page.name}" in nav, f"mkdocs.yml's nav lacks {page.name}"


def test_repository_has_license_and_changelog() -> None:
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version and f"## {version.group(1)}" in changelog


@pytest.mark.slow
def test_install_page_commands_give_a_working_engine(
        tmp_path: Path, small_cnn: onnx.ModelProto) -> None:
    """docs/install.md's user path: scripts/build_wheels.sh, then ``pip install --find-links
    dist 'mini-infer-core[cpu,native]'`` in a fresh environment, then a model runs there and
    matches onnxruntime."""
    dist = tmp_path / "dist"
    subprocess.run(["bash", str(ROOT / "scripts" / "build_wheels.sh"), str(dist)], check=True,
                   capture_output=True, timeout=900)
    names = sorted(p.name for p in dist.glob("*.whl"))
    assert len(names) == 6, names
    assert any(n.startswith("mini_infer_cpu_native-") and "manylinux" in n for n in names), names
    env_path = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_path)
    env = Venv(env_path)
    env.pip("install", "--find-links", str(dist), "mini-infer-core[cpu,native]")
    listing = env.cli("plugins").stdout
    assert "mini-infer-cpu-native 0.1.0" in listing and "mini-infer-cpu-plugins" in listing
    model, out = tmp_path / "m.onnx", tmp_path / "out"
    onnx.save(small_cnn, str(model))
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    env.cli("run", str(model), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(out))
    (got,) = [np.load(p) for p in sorted(out.glob("*.npy"))]
    np.testing.assert_allclose(got, ort_run(small_cnn, {"x": x})[0], rtol=1e-4, atol=1e-5)
