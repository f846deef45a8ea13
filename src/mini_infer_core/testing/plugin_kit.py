"""Checks for plugin authors: run them from your own tests (or through the pytest fixture
``plugin_kit`` that ``mini_infer_core.testing.pytest_plugin`` provides).

- :func:`check_creator_metadata` — identity, operator, devices, fields, opsets are complete;
- :func:`run_plugin` — shape/type inference + enqueue on a device, as the engine does it;
- :func:`check_plugin` — everything at once for one set of fields and inputs: field names
  honoured, declared output shapes and dtypes match what enqueue writes (every element is
  written), inputs left as they were (they are handed over read-only, as an engine's
  constants are), serialize → deserialize gives identical outputs, clones are independent,
  and for standard ONNX operators the outputs agree with onnx's ReferenceEvaluator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..plugin import (
    DataType,
    Device,
    DimsExprs,
    IPluginCreator,
    IPluginV2,
    PluginTensorDesc,
    TensorFormat,
    fields_from_values,
    from_format,
    physical_shape,
    to_format,
)
from ..plugin import _adapter as adapter

__all__ = ["PluginCheckError", "CheckReport", "check_creator_metadata", "check_kernel_catalog",
           "run_plugin", "check_plugin", "reference_outputs", "default_device"]


class PluginCheckError(AssertionError):
    """A plugin broke its contract; the message says which check and how."""


@dataclass
class CheckReport:
    outputs: list[np.ndarray[Any, Any]]
    checks: list[str] = field(default_factory=list)


def default_device(name: str = "cpu") -> Device:
    from ..registry import get_plugin_registry

    dev = get_plugin_registry().get_device(name)
    if dev is None:
        raise PluginCheckError(f"no installed plugin distribution provides device {name!r}")
    return dev


def check_creator_metadata(creator: IPluginCreator) -> None:
    """Identity, operator, devices, fields and opsets are present and well-formed."""
    from ..registry._registry import validate_creator

    try:
        validate_creator(creator, None)
    except Exception as exc:
        raise PluginCheckError(str(exc)) from exc
    problems = []
    if not creator.plugin_namespace:
        problems.append("plugin_namespace is empty: give your plugins a namespace of their own")
    if len(set(creator.field_names)) != len(creator.field_names):
        problems.append(f"field_names has duplicates: {creator.field_names}")
    if creator.min_opset < 1 or (creator.max_opset is not None
                                 and creator.max_opset < creator.min_opset):
        problems.append(f"bad opset range {creator.min_opset}..{creator.max_opset}")
    if problems:
        raise PluginCheckError(f"creator {creator.name!r}: " + "; ".join(problems))


def _sentinel(dtype: np.dtype[Any]) -> Any:
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max if dtype.kind in "iu" else 0


def check_kernel_catalog(creators: Sequence[IPluginCreator], classes: Sequence[Any]) -> None:
    """The (lazy) creators a distribution hands over describe exactly its kernel classes:
    one creator per class, which resolves to it, with its name, version, operator and opset
    range, declaring no field the class does not accept; each passes
    :func:`check_creator_metadata`."""
    by_target = {f"{c.__module__}:{c.__name__}": c for c in classes}
    seen = set()
    for creator in creators:
        check_creator_metadata(creator)
        target = getattr(creator, "target", None)
        if target not in by_target:
            raise PluginCheckError(f"creator {creator!r} names {target!r}, which is not one "
                                   f"of the kernel classes")
        declared = set(creator.field_names)
        real = creator.resolve()  # type: ignore[attr-defined]
        cls = by_target[target]
        got = (real.name, real.plugin_version, real.op_type, real.min_opset, real.max_opset)
        want = (cls.plugin_type, cls.plugin_version, cls.op_type, cls.min_opset, cls.max_opset)
        if got != want or not declared <= set(real.field_names):
            raise PluginCheckError(f"{target}: the catalog says {got} with fields "
                                   f"{sorted(declared)}, the class is {want} with fields "
                                   f"{sorted(real.field_names)}")
        seen.add(target)
    if seen != set(by_target):
        raise PluginCheckError(f"kernel classes without a creator: {sorted(set(by_target) - seen)}")


_NO_WRITES = ("a kernel must never write into its inputs (an engine's constants are "
              "read-only, possibly memory-mapped, and other nodes read the same tensors): "
              "write into `out`, or into scratch memory of its own")


def _read_only(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A read-only copy of an input (the caller's array stays as it was, and writable)."""
    copy = np.array(x, copy=True)
    copy.flags.writeable = False
    return copy


def run_plugin(plugin: IPluginV2, inputs: Sequence[np.ndarray[Any, Any] | None],
               device: Device | None = None, *, check_written: bool = True,
               formats: Sequence[TensorFormat] | None = None
               ) -> list[np.ndarray[Any, Any]]:
    """Infer shapes and types, configure, initialize, enqueue, terminate — as the engine does.

    ``formats`` (one per position, inputs then outputs; LINEAR where None) runs the plugin
    in those tensor formats, as a negotiated engine would: the plugin must accept the
    combination (``supports_format_combination``), gets its inputs converted (``to_format``)
    and its outputs in their physical shapes; the outputs come back LINEAR, and the padding
    channels of a blocked output must be zero. Inputs are given LINEAR, as always.

    With ``check_written`` every output is pre-filled with a sentinel (NaN, or the dtype's
    maximum) and must be fully overwritten (for float outputs; NaN outputs that the reference
    also has are the caller's business). Inputs are handed over as read-only copies (an
    engine's constants are read-only, possibly memory-mapped), and must be unchanged after
    ``enqueue``: a kernel that writes into one is reported as such.
    """
    device = device or default_device()
    # as the builder hands constants to plugins (small ones carry their values and contents)
    in_dims = [None if x is None else DimsExprs.of_constant(x) for x in inputs]
    in_types = [None if x is None else DataType.from_numpy(x.dtype) for x in inputs]
    where = f"plugin {plugin.plugin_namespace}::{plugin.plugin_type}"
    out_dims, out_types = adapter.infer_outputs(plugin, in_dims, in_types, where)
    in_descs = [None if x is None else (tuple(x.shape), t)
                for x, t in zip(inputs, in_types, strict=True)]
    out_descs = [(d.to_tuple(), t) for d, t in zip(out_dims, out_types, strict=True)]
    fmts = list(formats) if formats is not None else \
        [TensorFormat.LINEAR] * (len(inputs) + len(out_descs))
    if len(fmts) != len(inputs) + len(out_descs):
        raise ValueError(f"formats: {len(fmts)} given for {len(inputs)} input(s) and "
                         f"{len(out_descs)} output(s)")
    if formats is None:
        adapter.check_formats(plugin, in_types, out_types, where)
    else:
        _check_combination(plugin, [*in_descs, *out_descs], fmts, len(inputs), where)
    in_fmts, out_fmts = fmts[: len(inputs)], fmts[len(inputs):]
    adapter.configure_concrete(plugin, in_descs, out_descs,  # type: ignore[arg-type]
                               in_fmts, out_fmts)
    plugin.initialize()
    try:
        ws_size = adapter.workspace_size(plugin, in_descs, out_descs)  # type: ignore[arg-type]
        ws = device.allocate(ws_size) if ws_size else None
        outs = []
        for (shape, t), f in zip(out_descs, out_fmts, strict=True):
            host = np.full(physical_shape(shape, f), _sentinel(t.numpy), dtype=t.numpy)
            outs.append(device.to_device(host) if device.name != "cpu" else host)
        inputs = [x if x is None or f is TensorFormat.LINEAR else to_format(x, f)
                  for x, f in zip(inputs, in_fmts, strict=True)]
        dev_in = [None if x is None else device.to_device(_read_only(x)) for x in inputs]
        try:
            plugin.enqueue(dev_in, outs, ws, device.create_stream())
        except ValueError as exc:
            if "read-only" not in str(exc):
                raise
            raise PluginCheckError(
                f"{where}: enqueue wrote into one of its inputs, which the kit hands over "
                f"read-only ({exc}): {_NO_WRITES}") from exc
        device.synchronize()
        for k, (x, d) in enumerate(zip(inputs, dev_in, strict=True)):
            if x is not None and np.asarray(device.to_host(d)).tobytes() != \
                    np.ascontiguousarray(x).tobytes():
                raise PluginCheckError(f"{where}: enqueue changed input {k}: {_NO_WRITES}")
    finally:
        plugin.terminate()
    result = [np.asarray(device.to_host(o)) for o in outs]
    for k, ((shape, _), f) in enumerate(zip(out_descs, out_fmts, strict=True)):
        if f is TensorFormat.LINEAR:
            continue
        r = result[k]
        rest = shape[1] % f.block if f.block else 0
        if rest and r.shape == physical_shape(shape, f) and r[:, -1, ..., rest:].any():
            raise PluginCheckError(
                f"{where}: output {k} ({f.name}) has non-zero padding channels (channels "
                f"{shape[1]} to {-(-shape[1] // f.block) * f.block - 1} of the last block): "
                "write zeros there, the next node may read them")
        if r.shape == physical_shape(shape, f):
            result[k] = from_format(r, f, shape)
    for k, (r, (shape, t)) in enumerate(zip(result, out_descs, strict=True)):
        if r.shape != shape or r.dtype != t.numpy:
            raise PluginCheckError(
                f"{where}: output {k} is {r.shape} {r.dtype}, declared {shape} {t.numpy}")
        if check_written and r.dtype.kind == "f" and np.isnan(r).any():
            raise PluginCheckError(
                f"{where}: output {k} has {int(np.isnan(r).sum())} element(s) enqueue did not "
                "write (or NaN results): the declared shape is larger than what is computed")
    return result


def _check_combination(plugin: IPluginV2, descs: Sequence[Any],
                       fmts: Sequence[TensorFormat], num_inputs: int, where: str) -> None:
    """The plugin takes ``fmts`` at every position (as the builder would have asked)."""
    given = [PluginTensorDesc(d[0], d[1], f) if d is not None else
             PluginTensorDesc((), DataType.FLOAT) for d, f in zip(descs, fmts, strict=True)]
    for pos, d in enumerate(descs):
        if d is not None and not adapter.supports_at(plugin, pos, given, num_inputs):
            raise PluginCheckError(
                f"{where}: supports_format_combination refuses {fmts[pos].name} at position "
                f"{pos} of the combination {[f.name for f in fmts]}")


def reference_outputs(op_type: str, attrs: Mapping[str, Any],
                      inputs: Sequence[np.ndarray[Any, Any] | None], n_outputs: int,
                      opset: int, domain: str = "") -> list[np.ndarray[Any, Any]]:
    """Outputs of onnx's ReferenceEvaluator on a one-node model."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"in{k}" if x is not None else "" for k, x in enumerate(inputs)]
    outs = [f"out{k}" for k in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, domain=domain, **dict(attrs))
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
          for n, x in zip(names, inputs, strict=True) if x is not None]
    ovi = [helper.make_empty_tensor_value_info(o) for o in outs]
    graph = helper.make_graph([node], "check", vi, ovi)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, opset)])
    ref = ReferenceEvaluator(model)
    feeds = {n: x for n, x in zip(names, inputs, strict=True) if x is not None}
    return [np.asarray(r) for r in ref.run(None, feeds)]


def check_plugin(creator: IPluginCreator, attrs: Mapping[str, Any],
                 inputs: Sequence[np.ndarray[Any, Any] | None], *, opset: int | None = None,
                 device: Device | None = None, reference: bool | None = None,
                 rtol: float = 1e-4, atol: float = 1e-5) -> CheckReport:
    """Run every contract check on one case; returns the outputs and the checks that ran."""
    device = device or default_device(creator.devices[0])
    report = CheckReport(outputs=[])
    check_creator_metadata(creator)
    report.checks.append("metadata")
    unknown = sorted(set(attrs) - set(creator.field_names))
    if unknown:
        raise PluginCheckError(f"{creator.name}: the case uses fields {unknown} the creator "
                               f"does not declare in field_names {creator.field_names}")
    try:
        creator.create_plugin("kit_bogus", fields_from_values({"__not_a_field__": 1}))
    except Exception:  # noqa: BLE001 - any clear refusal is fine
        report.checks.append("unknown field refused")
    else:
        raise PluginCheckError(f"{creator.name}: create_plugin accepted an unknown field; it "
                               "must refuse fields it does not understand")
    plugin = creator.create_plugin("kit", fields_from_values(dict(attrs)))
    if not isinstance(plugin, IPluginV2):
        raise PluginCheckError(f"{creator.name}: create_plugin returned {plugin!r}")
    ident = (plugin.plugin_type, plugin.plugin_version)
    if ident != (creator.name, creator.plugin_version):
        raise PluginCheckError(f"plugin identity {ident} differs from its creator's "
                               f"{(creator.name, creator.plugin_version)}")
    outputs = run_plugin(plugin, inputs, device)
    report.outputs = outputs
    report.checks.append("declared shapes and dtypes match enqueue")

    data = plugin.serialize()
    if plugin.get_serialization_size() != len(data):
        raise PluginCheckError(f"{creator.name}: get_serialization_size() is "
                               f"{plugin.get_serialization_size()}, serialize() gave {len(data)}")
    twin = creator.deserialize_plugin("kit", data)
    again = run_plugin(twin, inputs, device)
    for k, (a, b) in enumerate(zip(outputs, again, strict=True)):
        if a.tobytes() != b.tobytes():
            raise PluginCheckError(f"{creator.name}: output {k} after serialize → "
                                   "deserialize differs from the original plugin's")
    report.checks.append("serialize round trip")

    clone = plugin.clone()
    if clone is plugin:
        raise PluginCheckError(f"{creator.name}: clone() returned the same object")
    first = run_plugin(clone, inputs, device)
    clone.destroy()
    after = run_plugin(plugin, inputs, device)
    for k, (a, b, c) in enumerate(zip(outputs, first, after, strict=True)):
        if a.tobytes() != b.tobytes() or a.tobytes() != c.tobytes():
            raise PluginCheckError(f"{creator.name}: output {k} differs between the plugin and "
                                   "its clone, or after destroying the clone")
    report.checks.append("clones independent")

    if reference is None:
        reference = creator.domain in ("", "ai.onnx")
    if reference:
        op_opset = opset or max(creator.min_opset, min(creator.max_opset or 21, 21))
        expected = reference_outputs(creator.op_type, attrs, inputs, len(outputs), op_opset,
                                     creator.domain)
        for k, (ours, ref) in enumerate(zip(outputs, expected, strict=False)):
            if ours.shape != ref.shape:
                raise PluginCheckError(f"{creator.name}: output {k} shape {ours.shape}, "
                                       f"ReferenceEvaluator {ref.shape}")
            if not np.allclose(ours.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True):
                err = float(np.max(np.abs(ours.astype(np.float64) - ref)))
                raise PluginCheckError(f"{creator.name}: output {k} differs from onnx's "
                                       f"ReferenceEvaluator (max abs error {err:.3g})")
        report.checks.append(f"agrees with ReferenceEvaluator (opset {op_opset})")
    plugin.destroy()
    twin.destroy()
    return report
