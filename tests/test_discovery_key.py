"""The discovery cache's key (issue 30): a package installed in site-packages is covered by its
distribution's metadata folder (installing, upgrading or reinstalling rewrites both), so a
cached start stats none of its files; an editable install's sources are watched file by file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mini_infer_core import _distributions as dist


def test_a_package_installed_in_site_packages_is_keyed_by_its_metadata_not_its_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys: dict[str, list[str]] = {}
    for where in ("site-packages", "src"):
        root = tmp_path / where
        package = root / "pkg"
        package.mkdir(parents=True)
        module = package / "kernels.py"
        module.write_text("X = 1\n")
        monkeypatch.setattr(sys, "path", [str(root)])
        found = [dist._key([str(package)])]
        module.write_text("X = 22\n")  # edited in place
        os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 10**9))
        found.append(dist._key([str(package)]))
        (root / "pkg-2.0.dist-info").mkdir()  # installed again, another version
        found.append(dist._key([str(package)]))
        keys[where] = found
    installed, editable = keys["site-packages"], keys["src"]
    assert installed[0] == installed[1] != installed[2]
    assert len(set(editable)) == 3
