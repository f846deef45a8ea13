"""``mini-infer plugins new NAME``: a plugin distribution that passes its own tests as made."""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from ..errors import MiniInferError

__all__ = ["RESERVED", "check_name", "scaffold"]

_PYPROJECT = '''[build-system]
requires = ["hatchling>=1.20"]
build-backend = "hatchling.build"

[project]
name = "{dist}"
version = "0.1.0"
description = "A mini-infer plugin: {domain}::Scale"
readme = "README.md"
requires-python = ">=3.11"
# the mini-infer-core releases that speak plugin API {api} (a compatible-release range: see
# "Versions" in mini-infer's docs/plugin-authoring.md); the cpu device comes from
# mini-infer-cpu-plugins
dependencies = ["{core_req}", "{cpu_req}", "numpy>=1.24"]

[project.optional-dependencies]
test = ["pytest>=8", "onnx>=1.15"]

[project.entry-points."mini_infer.plugins"]
{entry} = "{pkg}.hooks"

[tool.hatch.build.targets.wheel]
packages = ["src/{pkg}"]
'''

_README = '''# {dist}

A mini-infer plugin distribution, made by `mini-infer plugins new`. It provides the operator
`{domain}::Scale` (`y = alpha * x`) on the `cpu` device. Replace it with your own kernels;
docs/plugin-authoring.md in mini-infer explains every part.

```bash
pip install -e ".[test]"
mini-infer plugins          # lists {dist} and {domain}::Scale
pytest
```
'''

_HOOKS = '''"""Entry point of ``mini_infer.plugins``: cheap to import (no kernels here)."""

from __future__ import annotations

from typing import Any

from mini_infer_core.plugin import LazyPluginCreator
from mini_infer_core.registry import hookimpl


@hookimpl
def mini_infer_plugin_api_version() -> str:
    return "{api}"


@hookimpl
def mini_infer_creators() -> list[Any]:
    return [LazyPluginCreator("{pkg}.plugin:Scale", name="Scale", op_type="Scale",
                              domain="{domain}", plugin_version="1", namespace="{domain}",
                              field_names=("alpha",), devices=("cpu",))]
'''

_PLUGIN = '''"""The kernels of {dist}."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin import UnaryPlugin

__all__ = ["Scale"]


class Scale(UnaryPlugin):
    """y = alpha * x"""

    domain = "{domain}"
    attributes = {{"alpha": 1.0}}

    def compute(self, x: Any, *, out: Any, alpha: float) -> None:
        np.multiply(x, np.asarray(alpha, dtype=x.dtype), out=out)
'''

_TEST = '''"""{dist} checked by mini-infer's plugin test kit, and end to end through an engine."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
from onnx import TensorProto, helper

import mini_infer_core as mi


def test_scale_passes_the_plugin_kit(plugin_kit: ModuleType, creator_for: Any) -> None:
    creator = creator_for("Scale", domain="{domain}", distribution="{dist}")
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    report = plugin_kit.check_plugin(creator, {{"alpha": 2.5}}, [x])
    np.testing.assert_allclose(report.outputs[0], 2.5 * x, rtol=1e-6)


def test_scale_in_a_model_through_an_engine_file(tmp_path: Any) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    node = helper.make_node("Scale", ["x"], ["y"], domain="{domain}", alpha=-2.0)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("{domain}", 1)])
    mi.load(model).save(str(tmp_path / "m.engine"))
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = mi.InferenceSession(str(tmp_path / "m.engine")).run(None, {{"x": xv}})
    np.testing.assert_allclose(out, -2.0 * xv)
'''


#: mini-infer's own distributions (and the planned ones): a scaffold must never replace them
RESERVED = ("mini-infer", "mini-infer-core", "mini-infer-cpu-plugins", "mini-infer-cpu-native",
            "mini-infer-cuda-plugins", "mini-infer-ml-plugins")
#: a valid distribution name (PEP 508), which also makes a valid import name below
_VALID = re.compile(r"[A-Za-z][A-Za-z0-9]*([-_.][A-Za-z0-9]+)*")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_name(name: str) -> tuple[str, str]:
    """The distribution and import names for ``plugins new NAME``, or a :class:`MiniInferError`
    that says why NAME cannot be used: not a valid distribution name, one of mini-infer's
    own, or a distribution or module that is already installed (the new package would
    replace or shadow it)."""
    if not _VALID.fullmatch(name):
        raise MiniInferError(
            f"{name!r} is not a valid distribution name: use letters, digits and single '-', "
            "'_' or '.' between them, starting with a letter (e.g. acme-l2norm)")
    dist = _normalize(name)
    pkg = dist.replace("-", "_")
    if dist in RESERVED or dist.startswith("mini-infer-core"):
        raise MiniInferError(
            f"{dist!r} is one of mini-infer's own distributions; installing a package made "
            "under that name would replace it. Choose a name of your own (e.g. "
            f"acme-{dist.removeprefix('mini-infer-')})")
    import importlib.util

    import importlib_metadata

    try:
        installed = importlib_metadata.distribution(dist)
    except importlib_metadata.PackageNotFoundError:
        installed = None
    if installed is not None:
        raise MiniInferError(
            f"a distribution named {installed.metadata['Name']!r} "
            f"({installed.version}) is already installed; a package made under that name "
            "would replace it: choose another name")
    try:
        taken = importlib.util.find_spec(pkg) is not None
    except (ImportError, ValueError):
        taken = True
    if taken or keyword.iskeyword(pkg):
        raise MiniInferError(
            f"the import name {pkg!r} (from {name!r}) is already taken by an installed module "
            "or is a Python keyword: choose another name")
    return dist, pkg


def _cpu_requirement() -> str:
    """mini-infer-cpu-plugins, at least the release installed here (if one is)."""
    import importlib_metadata

    try:
        return f"mini-infer-cpu-plugins>={importlib_metadata.version('mini-infer-cpu-plugins')}"
    except importlib_metadata.PackageNotFoundError:
        return "mini-infer-cpu-plugins"


def scaffold(name: str, where: Path) -> Path:
    dist, pkg = check_name(name)
    if where.exists() and not where.is_dir():
        raise MiniInferError(f"--dir {where}: is a file, not a folder; give the folder to "
                             "create the package in")
    target = where / dist
    if target.exists():
        raise MiniInferError(f"{str(target)!r} already exists; choose another name or --dir")
    from ..registry import PLUGIN_API_VERSION, core_requirement

    values = {"dist": dist, "pkg": pkg, "entry": pkg, "domain": f"com.{pkg}",
              "core_req": core_requirement(), "cpu_req": _cpu_requirement(),
              "api": PLUGIN_API_VERSION}
    files = {
        "pyproject.toml": _PYPROJECT, "README.md": _README,
        f"src/{pkg}/__init__.py": '"""{dist}: a mini-infer plugin distribution."""\n',
        f"src/{pkg}/py.typed": "", f"src/{pkg}/hooks.py": _HOOKS,
        f"src/{pkg}/plugin.py": _PLUGIN, "tests/test_plugin.py": _TEST,
    }
    for rel, template in files.items():
        path = target / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template.format(**values))
        except OSError as exc:
            raise MiniInferError(f"--dir {where}: cannot create {path}: "
                                 f"{exc.strerror or type(exc).__name__}") from None
    return target
