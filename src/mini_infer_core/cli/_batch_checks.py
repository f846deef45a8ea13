"""``mini-infer batch``: what can be checked before Ray starts (which takes seconds, and whose
failures come back from the workers as pages of tracebacks): the output folder, the input,
the device, the engine itself (built or loaded here, with this command's plugins) and the
columns its inputs read."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DeviceError, InputError
from ..registry import PluginRegistry
from . import _args

__all__ = ["Checked", "check_before_ray"]


@dataclass(frozen=True)
class Checked:
    """The engine, built or loaded once here, and what each of its inputs reads."""

    engine: Any
    input_columns: dict[str, str] | str | None


def _output(output: str) -> None:
    if "://" in output:
        return  # object storage: written by the workers, checked there
    path = Path(output)
    if path.is_dir() and any(path.iterdir()):
        raise InputError(f"--output {output}: the folder is not empty; choose a new one")
    _args.check_output_dir(output, "--output", "Parquet files")


def _input_kind(where: str) -> tuple[str, Path] | None:
    """("parquet" or "npy", the local path), or None for a URI (read by the workers)."""
    if "://" in where:
        return None
    path = Path(where)
    if not path.exists():
        raise InputError(f"--input {path}: no such file or folder")
    if path.is_file():
        return ("npy" if path.suffix == ".npy" else "parquet"), path
    if any(path.rglob("*.parquet")):
        return "parquet", path
    if any(path.rglob("*.npy")):
        return "npy", path
    raise InputError(f"--input {path}: the folder holds neither .parquet nor .npy files")


def _parquet_columns(path: Path) -> list[str] | None:
    """The columns of a local Parquet file or folder (hive partitions included), from the
    footers; None where pyarrow cannot tell (the workers' read says why)."""
    try:
        import pyarrow.dataset

        return list(pyarrow.dataset.dataset(str(path), format="parquet",
                                            partitioning="hive").schema.names)
    except Exception:  # noqa: BLE001 - not readable here: Ray Data's read reports it
        return None


def _device(args: argparse.Namespace, reg: PluginRegistry) -> None:
    """``--device cuda`` on a local instance: the device of this machine (on a cluster,
    ``--address``, the cluster's GPUs are counted once Ray has joined it)."""
    if args.device != "cuda" or args.address:
        return
    dev = reg.get_device("cuda")
    ok, reason = dev.availability() if dev is not None else (
        False, "no installed plugin distribution provides it (pip install "
        "mini-infer-cuda-plugins)")
    if not ok:
        raise DeviceError(f"--device cuda: device 'cuda', which is unavailable here: {reason}; "
                          "run on a machine with a GPU, join a cluster with GPUs (--address), "
                          "or leave --device out (cpu)")


def _columns(args: argparse.Namespace, inputs: list[str], kind: tuple[str, Path] | None
             ) -> dict[str, str] | str | None:
    columns: dict[str, str] = {}
    for item in args.column:
        name, _, column = item.partition("=")
        if not name or not column:
            raise InputError(f"--column {item!r}: expected INPUT=COLUMN (e.g. "
                             f"--column {inputs[0] if inputs else 'x'}=image)")
        if name not in inputs:
            raise InputError(f"--column {item!r}: {name!r} is not an input of the engine; "
                             f"its inputs are {', '.join(map(repr, inputs))}")
        columns[name] = column
    if kind is not None and kind[0] == "npy":
        if len(inputs) != 1:
            raise InputError(f"--input {kind[1]}: .npy files fill one column ('data'), the "
                             f"engine has {len(inputs)} inputs {inputs}; use Parquet with "
                             "one column per input")
        return columns or "data"
    if kind is not None:
        present = _parquet_columns(kind[1])
        if present is not None:
            for name in inputs:
                column = columns.get(name, name)
                if column not in present:
                    raise InputError(
                        f"--input {kind[1]}: engine input {name!r} reads column {column!r}, "
                        f"which the data lacks (its columns: {', '.join(present)}); choose "
                        f"the column with --column {name}=COLUMN")
    return columns or None


def check_before_ray(args: argparse.Namespace, reg: PluginRegistry) -> Checked:
    """Every check that needs no Ray, in the order of their cost; the engine is built (an
    ONNX model) or loaded (an engine file) here, with this command's plugins (``-p``), so
    that a missing or blocked plugin is one error line, not a failure on every worker."""
    from ..session import load

    if args.workers < 1 or args.batch_size < 1:
        raise InputError("--workers and --batch-size must be at least 1")
    if args.cpus_per_worker <= 0:
        raise InputError(f"--cpus-per-worker {args.cpus_per_worker:g}: must be more than 0")
    _output(args.output)
    kind = _input_kind(args.input)
    _device(args, reg)
    engine = load(args.model, args.device or "cpu", registry=reg)
    inputs = [t.name for t in engine.inputs]
    return Checked(engine, _columns(args, inputs, kind))
