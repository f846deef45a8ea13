"""What keeps ``mini-infer plugins`` and ``--help`` short (issue 17, item 24; issue 29, item 23):
entry points read through ``importlib.metadata`` once, then from the discovery cache while the
installed distributions stay the same (no mail parser on later starts), and a parser that
declares only the command it runs. Each is checked against what it replaces."""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import importlib_metadata
import pytest

from mini_infer_core import _distributions as _scan
from mini_infer_core.cli import _parser
from mini_infer_core.cli._parser import HELP, command_of, parser
from mini_infer_core.registry import ENTRY_POINT_GROUP


def _installed(group: str) -> list[tuple[str, str, str | None, str | None]]:
    """The group as importlib_metadata reads it: the oracle."""
    return sorted((ep.name, ep.value, ep.dist.metadata["Name"] if ep.dist else None,
                   ep.dist.metadata["Version"] if ep.dist else None)
                  for ep in importlib_metadata.entry_points(group=group))


def _scanned(group: str) -> list[tuple[str, str, str | None, str | None]]:
    return sorted((ep.name, ep.value, ep.dist_name, ep.dist_version)
                  for ep in _scan.entry_points(group))


@pytest.mark.parametrize("group", [ENTRY_POINT_GROUP, "console_scripts", "pytest11"])
def test_scanned_entry_points_are_importlib_metadatas(group: str) -> None:
    found = _scanned(group)
    assert found == _installed(group)
    if group == ENTRY_POINT_GROUP:
        assert {"mini-infer-cpu-plugins", "mini-infer-cpu-native"} <= {d for _, _, d, _ in found}


def test_versions_are_importlib_metadatas() -> None:
    for name in ("onnx", "pluggy", "mini-infer-core", "mini_infer_cpu_plugins"):
        assert _scan.distribution_version(name) == importlib_metadata.version(name)
    assert _scan.distribution_version("no-such-distribution-here") is None


def _dist(root: Path, name: str, version: str, entry_points: str, egg: bool = False) -> None:
    folder = root / (f"{name.replace('-', '_')}.egg-info" if egg
                     else f"{name.replace('-', '_')}-{version}.dist-info")
    folder.mkdir(parents=True)
    (folder / ("PKG-INFO" if egg else "METADATA")).write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x\n\n"
        "Name: not-this-one\n")
    (folder / "entry_points.txt").write_text(entry_points)


def test_path_order_wins_and_sections_are_kept_apart(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The first distribution of a name on sys.path wins (egg-info too), other groups' lines
    are not taken, and a header's body (``Name:`` after the blank line) is not read."""
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(first, "mi-scan-demo", "2.0",
          "[console_scripts]\nx = y:z\n\n[mini_infer.plugins]\ndemo = demo_hooks\n"
          "# a comment\nother = other.mod:attr.inner\n")
    _dist(second, "mi-scan-demo", "1.0", "[mini_infer.plugins]\nold = old_hooks\n")
    _dist(second, "mi-scan-egg", "0.3", "[mini_infer.plugins]\negg = egg_hooks\n", egg=True)
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    mine = [e for e in _scanned(ENTRY_POINT_GROUP) if e[2] and e[2].startswith("mi-scan")]
    assert mine == [e for e in _installed(ENTRY_POINT_GROUP) if e[2] and
                    e[2].startswith("mi-scan")]
    assert mine == [("demo", "demo_hooks", "mi-scan-demo", "2.0"),
                    ("egg", "egg_hooks", "mi-scan-egg", "0.3"),
                    ("other", "other.mod:attr.inner", "mi-scan-demo", "2.0")]


def test_an_entry_point_loads_its_attribute_path(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mi_scan_target.py").write_text("class A:\n    class B:\n        value = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = _scan.EntryPoint("t", "mi_scan_target:A.B", ENTRY_POINT_GROUP)
    assert ep.module == "mi_scan_target" and ep.load().value == 7


def test_a_zip_on_sys_path_is_read_by_importlib_metadata(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A zipped distribution cannot be listed as a folder: importlib_metadata reads it."""
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("mi_scan_zip-1.5.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: mi-scan-zip\nVersion: 1.5\n")
        zf.writestr("mi_scan_zip-1.5.dist-info/entry_points.txt",
                    "[mini_infer.plugins]\nzipped = zipped_hooks\n")
    monkeypatch.syspath_prepend(str(archive))
    # a cache of its own: the environment's may already record this name from another run
    monkeypatch.setenv("MINI_INFER_CACHE_DIR", str(tmp_path / "cache"))
    assert ("zipped", "zipped_hooks", "mi-scan-zip", "1.5") in _scanned(ENTRY_POINT_GROUP)
    assert _scan.distribution_version("mi-scan-zip") == "1.5"


_ARGVS = [
    ["plugins"], ["plugins", "--json"], ["-p", "no:cpu_native", "plugins", "--creators"],
    ["-p", "build", "run", "m.onnx", "--shape", "x=1,3"], ["--json", "-v", "inspect", "m.onnx"],
    ["build", "m.onnx", "-o", "m.engine", "--pin", "Conv=cpu_basic", "-p", "no:x"],
    ["bench", "m.onnx", "--threads", "1", "--profile"], ["compare", "m.onnx", "--b", "reference"],
    ["batch", "m.onnx", "--input", "i", "--output", "o"], ["run", "m.onnx", "--seed", "3"],
]


@pytest.mark.parametrize("argv", _ARGVS, ids=[" ".join(a) for a in _ARGVS])
def test_the_one_command_parser_parses_as_the_full_one(argv: list[str]) -> None:
    command = command_of(argv)
    assert command in HELP
    assert vars(parser(command).parse_args(argv)) == vars(parser().parse_args(argv))


@pytest.mark.parametrize("argv", [["--help"], ["bogus"], ["-p", "plugins"], []])
def test_no_command_gives_the_full_parser(argv: list[str]) -> None:
    assert command_of(argv) is None


def _help(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser(command_of(argv)).parse_args(argv)
    return out.getvalue()


@pytest.mark.parametrize("columns", ["50", "120", ""])
@pytest.mark.parametrize("argv", [["--help"], ["build", "--help"], ["bench", "--help"]])
def test_help_is_what_argparses_own_formatter_prints(argv: list[str], columns: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The width comes from COLUMNS (else the terminal, else 80) as shutil's would."""
    monkeypatch.setenv("COLUMNS", columns)
    mine = _help(argv)
    monkeypatch.setattr(_parser, "_Formatter", argparse.HelpFormatter)
    assert mine == _help(argv)
    assert "usage: mini-infer" in mine


_PROBE = textwrap.dedent("""
    import io, contextlib, sys
    from mini_infer_core.cli.main import main
    with contextlib.redirect_stdout(io.StringIO()):
        main(["plugins"])
    print(" ".join(sorted(sys.modules)))
""")


def test_listing_imports_neither_importlib_metadata_nor_hashlib() -> None:
    """What made listing slow and it does not need once the discovery cache is written (by
    the first start after the distributions change): the mail parser (through
    importlib.metadata), OpenSSL (hashlib), shutil's compression modules."""
    for _ in range(2):  # the first may find the cache missing or stale, and write it
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
    modules: Any = set(proc.stdout.split())
    assert "mini_infer_cpu_plugins.hooks" in modules
    assert not modules & {"importlib_metadata", "importlib.metadata", "email", "hashlib",
                          "shutil", "pprint"}, sorted(
        modules & {"importlib_metadata", "importlib.metadata", "email", "hashlib", "shutil",
                   "pprint"})
