"""Checks of the CLI's own arguments (--shape, --input, --pin, -o): a mistake is an
:class:`InputError` that says what was expected and lists the valid names, never a traceback."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["check_engine_device", "check_input_names", "check_numbers", "check_output_dir",
           "check_output_path", "check_pins", "feeds", "load_npy", "parse_pins", "parse_shapes"]


#: the first bytes of every .npy file (numpy.lib.format.MAGIC_PREFIX)
_NPY_MAGIC = b"\x93NUMPY"


def parse_shapes(items: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """``--shape NAME=D0,D1,..`` options: whole numbers >= 0, each input once."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, eq, dims = item.partition("=")
        name = name.strip()
        want = "expected NAME=D0,D1,.. (e.g. x=1,3,224,224)"
        if not eq or not name:
            raise InputError(f"--shape {item!r}: {want}")
        parts = [d.strip() for d in dims.split(",")] if dims.strip() else []
        bad = [d for d in parts if not d.lstrip("+").isdigit()]
        if bad:
            raise InputError(f"--shape {item!r}: {bad[0]!r} is not a dimension; every "
                             f"dimension is a whole number >= 0; {want}")
        if name in shapes:
            raise InputError(f"--shape {item!r}: input {name!r} is given twice")
        shapes[name] = tuple(int(d) for d in parts)
    return shapes


def load_npy(item: str) -> tuple[str, np.ndarray[Any, Any]]:
    """``--input NAME=FILE.npy``: the name and the array (read without pickle)."""
    name, _, path = item.partition("=")
    if not name or not path:
        raise InputError(f"--input {item!r}: expected NAME=FILE.npy")
    try:
        with open(path, "rb") as fh:
            magic = fh.read(len(_NPY_MAGIC))
        if magic != _NPY_MAGIC:  # np.load would try a pickle and advise allow_pickle
            raise InputError(f"--input {item!r}: {path} is not a NumPy .npy file (it does not "
                             "begin with .npy's magic bytes); write the array with numpy.save")
        return name, np.load(path, allow_pickle=False)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(f"--input {item!r}: no such file {path}") from None
    except IsADirectoryError:
        raise InputError(f"--input {item!r}: {path} is a folder, not a .npy file") from None
    except (OSError, ValueError) as exc:
        why = ("it holds Python objects, which are never unpickled: save a numeric array"
               if "pickle" in str(exc) else f"{type(exc).__name__}: {exc}")
        raise InputError(f"--input {item!r}: {path} is not a NumPy .npy file that can be "
                         f"read ({why})") from None


def check_input_names(option: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """Every name given to ``option`` is an input of the model."""
    valid = list(valid)
    unknown = [n for n in given if n not in valid]
    if unknown:
        raise InputError(f"{option} names {', '.join(map(repr, unknown))}, not an input of the "
                         f"model; its inputs are {', '.join(map(repr, valid)) or 'none'}")


def parse_pins(items: Iterable[str]) -> dict[str, str]:
    pins: dict[str, str] = {}
    for item in items:
        op, _, prov = item.partition("=")
        if not op.strip() or not prov.strip():
            raise InputError(f"--pin {item!r}: expected OP=PROVIDER (e.g. "
                             "Conv=mini_infer.cpu, a namespace or a distribution name)")
        pins[op.strip()] = prov.strip()
    return pins


def check_pins(pins: dict[str, str], operators: Iterable[str]) -> None:
    """Every pinned operator (``Conv`` or ``domain::Op``) occurs in the model."""
    ops = set(operators)
    bare = {o.rsplit("::", 1)[-1] for o in ops}
    unknown = [op for op in pins if op not in ops and op not in bare]
    if unknown:
        raise InputError(f"--pin names operator(s) {', '.join(map(repr, unknown))} that the "
                         f"model does not use; its operators are {', '.join(sorted(ops))}")


def _cannot_write_in(folder: Path) -> str | None:
    """Why no file can be created in ``folder`` (None where one can): tried with a file that
    is removed at once, as permission bits do not tell for root or a read-only mount."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".mini-infer-probe-")
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    os.unlink(probe)
    return None


def check_output_path(path: str, option: str = "-o", what: str = "engine") -> None:
    """The folder of a file to write (an engine, a trace) exists and is writable (checked
    before a build that may take minutes)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise InputError(f"{option} {path}: is a folder; give the {what} file's path in it")
    if not folder.is_dir():
        raise InputError(f"{option} {path}: cannot write the {what} there: folder {folder} "
                         "does not exist (create it first)")
    why = _cannot_write_in(folder)
    if why is not None:
        raise InputError(f"{option} {path}: cannot write the {what} there: folder {folder} is "
                         f"not writable ({why})")


def check_output_dir(path: str, option: str, what: str) -> None:
    """A folder to write ``what`` into (created later where missing) is not a file, and its
    nearest existing folder takes new files: checked before any work, so that a run of
    minutes does not end in an error about where its results go."""
    target = Path(path)
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        named = "is a file" if existing == target else f"lies under {existing}, a file"
        raise InputError(f"{option} {path}: {named}, not a folder; give a folder for the "
                         f"{what} (created if missing)")
    why = _cannot_write_in(existing)
    if why is not None:
        where = "the folder" if existing == target else f"folder {existing}"
        raise InputError(f"{option} {path}: cannot write the {what} there: {where} is not "
                         f"writable ({why}); give a folder you can write to")


def check_numbers(args: Any) -> None:
    """The counts and seeds a command takes (those it declares): ``--iterations`` and
    ``--threads`` at least 1, ``--warmup`` and ``--seed`` at least 0."""
    least = {"iterations": 1, "threads": 1, "warmup": 0, "seed": 0}
    for name, low in least.items():
        value = getattr(args, name, None)
        if value is not None and value < low:
            why = " (NumPy's random generator takes seeds >= 0)" if name == "seed" else ""
            raise InputError(f"--{name} {value}: must be at least {low}{why}")


def feeds(args: Any, engine: Any) -> dict[str, np.ndarray[Any, Any]]:
    """The inputs of a run: ``--input`` files, the rest random (``--seed``), shaped by
    ``--shape``, else by the engine's first optimization profile, else with dynamic dimensions
    set to 1 (a note on stderr says so)."""
    given = dict(load_npy(item) for item in args.input)
    shapes = parse_shapes(args.shape)
    names = [t.name for t in engine.inputs]
    check_input_names("--input", given, names)
    check_input_names("--shape", shapes, names)
    rng = np.random.default_rng(args.seed)
    profiles = engine.build_info.get("profiles") or []
    for spec in engine.inputs:
        if spec.name in given:
            continue
        shape = shapes.get(spec.name)
        if shape is None and profiles and spec.name in profiles[0]:
            shape = tuple(profiles[0][spec.name]["opt"])
        if shape is None:
            shape = tuple(d if isinstance(d, int) else 1 for d in spec.shape)
            if any(not isinstance(d, int) for d in spec.shape):
                print(f"note: random input {spec.name!r}: dynamic dimensions set to 1 "
                      f"{shape}; choose them with --shape {spec.name}=D0,D1,...",
                      file=sys.stderr)
        dt = spec.dtype.numpy
        given[spec.name] = (rng.random(shape, dtype=np.float32).astype(dt) if dt.kind == "f"
                            else rng.integers(0, 2, shape).astype(dt))
    return given


def check_engine_device(path: str, engine: Any, device: str | None) -> None:
    """An engine file runs on the device it was built for: a ``--device`` naming another is
    an error, not silently ignored."""
    if device is not None and device != engine.device_name:
        raise InputError(
            f"--device {device}: {path} is an engine built for device "
            f"{engine.device_name!r}, and an engine runs on the device it was built for; "
            f"build one for {device} from the ONNX model (mini-infer build MODEL.onnx "
            f"--device {device} -o FILE), or leave out --device")
