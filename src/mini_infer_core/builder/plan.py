"""The last passes: the engine's tensors (inputs, constants kept, activations, outputs) and,
once tactics are chosen and constants packed, the memory plan where shapes allow one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..engine.engine import Engine, TensorSpec
from ..engine.schedule import Schedule
from ..errors import BuildError, InputError
from ..plugin import TensorFormat
from ..plugin import _adapter as adapter
from .state import BuildState

__all__ = ["check_profiles", "make_engine", "plan", "tensors"]


def tensors(state: BuildState, used: set[str]) -> None:
    """What each tensor of the engine is: input, constant, activation, scratch, output."""
    dims, types = state.dims, state.types
    used |= {o for nd in state.nodes for o in nd.outputs}
    specs: dict[str, TensorSpec] = {n: TensorSpec(n, types[n], dims[n], "input", state.kind(n))
                                    for n in state.input_names}
    # in the constants' own order (a set's order changes with the hash seed: reproducible
    # builds need the same file from the same model)
    kept = {n: np.asarray(a, order="C") for n, a in state.constants.items() if n in used}
    for n in kept:
        specs[n] = TensorSpec(n, types[n], dims[n], "constant")
    consumed = {x for nd in state.nodes for x in nd.inputs if x}
    for nd in state.nodes:
        for o in nd.outputs:
            specs[o] = TensorSpec(o, types[o], dims[o],
                                  "activation" if o in consumed else "scratch", state.kind(o),
                                  state.formats.get(o, TensorFormat.LINEAR))
    for o in state.output_names:
        if o in specs and specs[o].kind in ("activation", "scratch"):
            specs[o] = TensorSpec(o, types[o], dims[o], "output", state.kind(o))
        elif o not in specs:
            specs[o] = TensorSpec(o, types[o], dims[o], "constant")
            kept[o] = np.asarray(state.constants[o], order="C")
    state.tensors, state.kept_constants = specs, kept


def make_engine(state: BuildState) -> Engine:
    state.engine = Engine(name=state.network.name, device=state.device,
                          inputs=state.input_names, outputs=state.output_names,
                          tensors=state.tensors, constants=state.kept_constants,
                          nodes=state.nodes, build_info=state.info, devices=state.devices)
    return state.engine


def check_profiles(state: BuildState) -> list[dict[str, dict[str, list[int]]]]:
    out = []
    inputs = state.input_names
    for k, prof in enumerate(state.config.profiles):
        unknown = sorted(set(prof.shapes) - set(inputs))
        if unknown:
            raise BuildError(f"optimization profile {k} names unknown input(s) {unknown}; "
                             f"inputs are {inputs}")
        for name, shapes in prof.shapes.items():
            dims = state.tensors[name].dims
            for shape in shapes:
                if len(shape) != len(dims) or any(
                        d.is_constant() and d.get_constant_value() != x
                        for d, x in zip(dims, shape, strict=False)):
                    raise BuildError(f"optimization profile {k}: shape {shape} does not fit "
                                     f"input {name!r} of shape {state.tensors[name].shape}")
        out.append(prof.to_json())
    return out


def plan(state: BuildState) -> dict[str, Any] | None:
    """The memory plan of the engine where its shapes are known now: static inputs, or the
    ``opt`` shapes of the first profile; None where it is made at run time (dynamic or
    data-dependent shapes) or on the device's own machine (the device is absent here)."""
    engine = state.engine
    assert engine is not None
    if not state.info["device_available"]:
        return None
    if any(adapter.is_data_dependent(nd.plugin) for nd in engine.nodes):
        return None
    specs = state.tensors
    if any(not spec.is_tensor for spec in specs.values()):
        return None  # values that are no tensors: made and planned at run time
    try:
        if all(specs[n].dims.is_static() for n in state.input_names):
            return Schedule(engine, {}).memory_summary()
        if state.info["profiles"]:
            opt = {n: tuple(p["opt"]) for n, p in state.info["profiles"][0].items()}
            sched = Schedule(engine, _bindings(specs, state.input_names, opt))
            return {**sched.memory_summary(), "at": "opt shapes of profile 0"}
    except InputError as exc:  # the model's own shapes, not a caller's inputs
        raise BuildError(str(exc)) from exc
    return None


def _bindings(specs: Mapping[str, TensorSpec], inputs: list[str],
              shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    bindings: dict[str, int] = {}
    for name in inputs:
        for d, x in zip(specs[name].dims, shapes.get(name, ()), strict=False):
            if not d.is_constant():
                bindings.setdefault(str(d), x)
    return bindings
