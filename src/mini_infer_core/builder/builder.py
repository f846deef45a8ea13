"""Builder and BuilderConfig: Network → Engine, as passes over one build state (state.py
lists them, each lives in a module of its own)."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._debug import LazyLogger
from .._record import field, record, replace
from ..engine.engine import Engine, EngineNode
from ..errors import BuildError
from ..importer import parse_onnx
from ..network import Network
from ..plugin import DataType, DimsExprs, PluginFieldType, SubgraphFactory
from ..plugin import _adapter as adapter
from ..registry import PluginRegistry, get_plugin_registry
from .folding import fold
from .formats import negotiate_formats
from .fusion import Fuser, fuse
from .infer import infer, where_of
from .inline import inline_if
from .packing import pack_constants
from .placement import place
from .plan import check_profiles, make_engine, plan, tensors
from .precision import Precision, precision
from .prune import prune
from .reshape_shape import constant_target
from .rewrite import rewrite
from .selection import Selector
from .state import BuildState, NodeWork
from .tactics import offers_tactics

if TYPE_CHECKING:
    import onnx

    from .timing_cache import TimingCache

__all__ = ["BuilderConfig", "Builder", "OptimizationProfile", "build_engine",
           "subgraph_factory"]

log = LazyLogger("mini_infer.lifecycle")  # logging imported only once something else has
blog = LazyLogger("mini_infer.builder")  # logging imported only once something else has

@record
class OptimizationProfile:
    """Allowed input shapes (TensorRT's IOptimizationProfile): min / opt / max per input."""

    shapes: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=dict)

    def set_shape(self, name: str, min: Sequence[int], opt: Sequence[int],
                  max: Sequence[int]) -> None:
        lo, mid, hi = tuple(min), tuple(opt), tuple(max)
        if not (len(lo) == len(mid) == len(hi)) or any(
                not (a <= b <= c) for a, b, c in zip(lo, mid, hi, strict=True)):
            raise BuildError(f"profile for {name!r}: need min <= opt <= max of one rank, got "
                             f"{lo}, {mid}, {hi}")
        self.shapes[name] = (lo, mid, hi)

    def to_json(self) -> dict[str, dict[str, list[int]]]:
        return {n: {"min": list(a), "opt": list(b), "max": list(c)}
                for n, (a, b, c) in self.shapes.items()}


@record
class BuilderConfig:
    """How to build. ``pins`` maps an operator ("Conv", "com.example::L2Norm") to the plugin
    namespace or distribution that must provide it; ``profiles`` bound dynamic inputs."""

    device: str = "cpu"
    fold_constants: bool = True
    pins: dict[str, str] = field(default_factory=dict)
    profiles: list[OptimizationProfile] = field(default_factory=list)
    #: where nodes without a plugin for ``device`` run (None: nowhere, an error)
    fallback_device: str | None = "cpu"
    #: forbid any fallback: every node must run on ``device``
    strict_device: bool = False
    #: run nodes on ``device`` in HALF where their plugins accept it, casting at boundaries
    fp16: bool = False
    #: let plugins absorb the nodes that consume their outputs (see builder/fusion.py)
    fuse: bool = True
    #: time the tactics plugins offer on the real shapes and keep the fastest
    #: (see builder/tactics.py); off: each plugin's own default, a faster build
    time_tactics: bool = True
    #: input shapes to build for (onnxruntime's free dimension overrides, trtexec's
    #: --shapes): the model's symbolic dimensions of those inputs become these numbers, so
    #: everything that depends on them is computed now (an If on a shape is settled)
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: a timing cache (trtexec's --timingCacheFile): a file path or a TimingCache. Tactic
    #: timings are read from it and the new ones added (the file is rewritten); builds with
    #: the same cache make the same engine, byte for byte (see timing_cache.py)
    timing_cache: TimingCache | str | os.PathLike[str] | None = None
    #: negotiate tensor formats with the plugins (formats.py: CHW16, CHW8, CHW4, HWC where
    #: plugins take them, Reformat steps between); off: every tensor LINEAR
    negotiate_formats: bool = True
    #: quantize the float model at build time (TensorRT's INT8 build; see builder/int8/):
    #: Conv, MatMul and Gemm with constant weights whose plugins take INT8 run on the
    #: integer plugins, with per-channel s8 weights and u8 activations whose ranges come
    #: from ``calibration`` batches or the ``calibration_cache``
    int8: bool = False
    #: calibration data: a .npz file (arrays named by input, a leading batch axis), a folder
    #: of .npz / .npy files (one batch each), or an iterable of {input name: array} batches
    calibration: Any = None
    #: a calibration cache file (JSON): read instead of calibrating where it exists and was
    #: made for this model, written after calibrating otherwise
    calibration_cache: str | os.PathLike[str] | None = None
    #: "minmax" (TensorRT's IInt8MinMaxCalibrator: the ranges seen) or "entropy"
    #: (IInt8EntropyCalibrator2: KL-divergence thresholds, which clip outliers: better for
    #: some CNNs, worse where extremes matter -- max pooling, logits; Magika's labels agree
    #: 100/100 with minmax, 93/100 with entropy)
    calibrator: str = "minmax"
    #: quantize a node only where it does at least this many multiply-adds per value of its
    #: input (or that input is quantized already): below, quantizing the input costs about
    #: what the integer product saves
    int8_min_work: float = 128
    #: rows per calibration batch where one .npz holds them all
    calibration_batch_size: int = 32
    #: also write the quantized model (QuantizeLinear/DequantizeLinear pairs) as ONNX here
    save_qdq: str | os.PathLike[str] | None = None

    def add_optimization_profile(self, profile: OptimizationProfile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1


class Builder:
    """TensorRT's IBuilder: ``Builder(registry).build_engine(network, config)``.

    A build is a sequence of passes over one :class:`~.state.BuildState` (see state.py):
    select; per node infer, fold, fuse, precision, keep; then prune, place, formats,
    tensors, tactics, pack, plan."""

    def __init__(self, registry: PluginRegistry | None = None) -> None:
        self.registry = registry if registry is not None else get_plugin_registry()
        #: what control-flow plugins build and run their bodies with (this registry)
        self.subgraphs: SubgraphFactory = subgraph_factory(self.registry)

    def create_builder_config(self, **kw: Any) -> BuilderConfig:
        return BuilderConfig(**kw)

    def build_engine(self, network: Network, config: BuilderConfig | None = None, *,
                     release_network: bool = False) -> Engine:
        """Build ``network`` into an engine.

        ``release_network=True`` hands the network over: the build empties its constants as
        it takes them, so that a weight is not held both as imported and as packed for its
        kernel (a large model's peak memory). The network cannot be built again after that;
        :func:`mini_infer_core.load` and ``mini-infer build`` pass it."""
        t0 = time.perf_counter()
        config = config or BuilderConfig()
        imported = len(network.nodes)
        given = network
        rewritten: list[str] = []
        int8_report: dict[str, Any] | None = None
        if config.int8:  # Q/DQ pairs where plugins take INT8; the rewrite fuses them
            from .int8 import quantize_network
            network, int8_report = quantize_network(network, config, self)
        if config.fuse:  # QDQ chains become integer operators where the device has them
            network, rewritten = rewrite(network, integer=lambda op: any(
                self.registry.candidates(*_domain_op(op), dev, 10)
                for dev in _integer_devices(config)))
        state = self._select(_constants_first(network), config)
        if release_network:  # the state's own dict holds every constant from here on
            given.constants.clear()
            network.constants.clear()
        state.info["rewritten"] = rewritten
        if int8_report is not None:
            state.info["int8"] = int8_report
        for count, work in enumerate(self._work(state), 1):
            self._node_passes(state, work)
            if count % SWEEP_EVERY == 0:
                _sweep(state, work.index)
        _sweep(state, len(state.network.nodes))
        used = prune(state)
        place(state)
        negotiate_formats(state)
        tensors(state, used)
        state.info.update(_summary(state), nodes_imported=imported)
        state.info["profiles"] = check_profiles(state)
        # Constants are packed for the kernel each node will really run: those of nodes with
        # nothing to time now, so that the timing runs read their packed forms rather than
        # each making its own (VGG-19's fully connected weights: 0.5 GB more at the peak);
        # those of nodes with tactics once the tactics are chosen
        done: set[str] = set()
        timing = bool(state.config.time_tactics and state.info["device_available"])
        # which nodes offer tactics, asked once per node where nothing is timed (the
        # plugins' choices cannot change between the two packs then)
        offers: dict[int, bool] | None = None if timing else {}
        engine = self._pack(state, done, tuned=False, collect=False, offers=offers)
        timed = None
        if timing:
            # imported here: a build that times nothing (a one-off session's) never needs them
            from .format_timing import time_formats
            from .tactics import time_tactics
            from .timing_cache import open_timing_cache

            cache = open_timing_cache(config.timing_cache)
            timed = time_formats(state, used, cache)
            if timed is not None:
                engine = timed
            state.info["tactics"] = time_tactics(engine, cache)
            if cache is not None and cache.path is not None and (
                    cache.added or not cache.path.exists()):  # "created if missing"
                cache.save()
        # the engine the timing ran and what its runs left in cycles go first, so that each
        # imported layout is freed as its packed one is made
        del engine
        # formats chosen by timing: a node packed nothing for the format it had then (a
        # blocked candidate keeps ONNX's order) is asked again for the one it has now, or its
        # first run would pack its weights (SqueezeNet's 1x1 convolutions: ~10 ms, issue 30)
        engine = self._pack(state, done, tuned=True, collect=release_network, offers=offers,
                            again=timed is not None)
        state.info["memory_plan"] = plan(state)
        # the build time is logged, not kept: an engine file holds nothing that depends on
        # when, where or how fast it was built (reproducible builds)
        blog.info("built %r: %d nodes (%d folded) on %s in %.3fs", network.name,
                  len(state.nodes), state.folded, state.device.name,
                  time.perf_counter() - t0)
        return engine

    @staticmethod
    def _pack(state: BuildState, done: set[str], tuned: bool, collect: bool,
              offers: dict[int, bool] | None = None, again: bool = False) -> Engine:
        """Pack the constants of the nodes whose plugins offer tactics to time (``tuned``) or
        of the others (packing.py), and make the engine again. ``offers`` keeps each node's
        answer (by ``id``) from one call to the next; None: asked again each time.
        ``again``: also the other nodes none of whose constants is packed yet (their formats
        may have changed since they were asked)."""
        state.engine = None
        if collect and state.info.get("tactics") and sum(
                a.nbytes for a in state.kept_constants.values()) >= COLLECT_FROM:
            gc.collect()  # ~0.1 s in a large process: only where the weights are large
        state.info["constants_packed"] += pack_constants(
            state.nodes, state.kept_constants, state.dims, state.types, state.output_names,
            also=[state.constants], packed=done,
            which=lambda nd: _offers(nd, state, offers) is tuned or (
                again and not any(n in done for n in nd.inputs)))
        return make_engine(state)

    # -- passes ---------------------------------------------------------------------------
    def _select(self, network: Network, config: BuilderConfig) -> BuildState:
        """The select pass: a creator and a device per node; the inputs and constants."""
        selector = Selector(self.registry, config.pins)
        device = selector.device(config.device)
        fallback = config.fallback_device
        if fallback is not None and self.registry.get_device(fallback) is None:
            fallback = None
        selected = selector.select(network.nodes, device.name, fallback, config.strict_device)
        devices = {device.name: device}
        for _, dev_name in selected:
            devices.setdefault(dev_name, selector.device(dev_name))
        constants: dict[str, np.ndarray[Any, Any]] = dict(network.constants)
        dims = {n: DimsExprs.of_constant(a) for n, a in constants.items()}
        types = {n: DataType.from_numpy(a.dtype) for n, a in constants.items()}
        state = BuildState(
            network=network, config=config, registry=self.registry, subgraphs=self.subgraphs,
            selector=selector, device=device, devices=devices, fallback=fallback,
            selected=selected,
            fuser=Fuser(network, [d for _, d in selected], config.fuse, constants, dims, types),
            precision=Precision(config.fp16, device.name, dims, types, constants),
            dims=dims, types=types, constants=constants,
            output_names=[t.name for t in network.outputs])
        for ti in network.inputs:
            if ti.value_kind.is_tensor and (ti.dtype is None or ti.shape is None):
                raise BuildError(f"graph input {ti.name!r} has no element type or rank in the "
                                 "model; add them (onnx.tools.update_model_dims helps)")
            if ti.dtype is None:
                raise BuildError(f"graph input {ti.name!r} "
                                 f"({ti.value_kind.type_string(None)}) has no element type in "
                                 "the model; declare it")
            if not ti.value_kind.is_tensor:
                if ti.name in config.input_shapes:
                    raise BuildError(f"a fixed shape is given for input {ti.name!r}, a "
                                     f"{ti.value_kind.type_string(ti.dtype)}: only tensor "
                                     "inputs take fixed shapes")
                state.add_input(ti.name, ti.dtype, ti.shape, ti.value_kind)
                continue
            assert ti.shape is not None
            state.add_input(ti.name, ti.dtype, _fixed(ti.name, list(ti.shape),
                                                      config.input_shapes.get(ti.name)))
        unknown = sorted(set(config.input_shapes) - {ti.name for ti in network.inputs})
        if unknown:
            raise BuildError(f"a fixed shape is given for unknown input(s) {unknown}; the "
                             f"model's inputs are {[ti.name for ti in network.inputs]}")
        return state

    @staticmethod
    def _work(state: BuildState) -> Iterator[NodeWork]:
        """Each network node, in order, as the node passes see it (nodes a fusion absorbed
        are skipped)."""
        for index, (node, (rec, dev)) in enumerate(zip(state.network.nodes, state.selected,
                                                       strict=True)):
            if index not in state.fuser.skipped:
                yield NodeWork(index, node, rec, dev, where_of(state, node, rec, dev))

    def _node_passes(self, state: BuildState, work: NodeWork) -> None:
        """infer, fold, fuse, precision, keep -- or, for an If whose condition is known now,
        the same for each node of the branch it takes (inline.py)."""
        inlined = inline_if(state, work.node) if state.config.fold_constants else None
        if inlined is not None:
            state.info.setdefault("inlined", []).append(work.node.name)
            for node in inlined:
                ((rec, dev),) = state.selector.select(
                    [node], state.device.name, state.fallback, state.config.strict_device)
                state.devices.setdefault(dev, state.selector.device(dev))
                self._node_passes(state, NodeWork(-1, node, rec, dev,
                                                  where_of(state, node, rec, dev)))
            return
        infer(state, work)
        constant_target(state, work)
        if fold(state, work):
            return
        if work.index >= 0:  # fusion looks at the network's consumers of a network node
            fuse(state, work)
        precision(state, work)
        _keep(state, work)


#: constants (bytes) from which a build handed its network collects the timing runs'
#: garbage before packing, so that their references to the imported weights go first
COLLECT_FROM = 16 << 20
#: network nodes between two sweeps of the constants no node reads any more
SWEEP_EVERY = 32


def _sweep(state: BuildState, done: int) -> None:
    """Drop the constants that nothing reads any more: those a fold or fusion replaced (a
    Conv's weights and its BatchNormalization's once folded into new ones). Without this an
    imported model's weights were held twice until the build ended (Inception v2: 94 MB
    after import, 188 MB after the node passes)."""
    live = set(state.output_names)
    for nd in state.nodes:
        live.update(nd.inputs)
    for index in range(done + 1, len(state.network.nodes)):
        if index not in state.fuser.skipped:
            live.update(state.network.nodes[index].inputs)
    for name in [n for n in state.constants if n not in live]:
        del state.constants[name]


def _offers(nd: EngineNode, state: BuildState, known: dict[int, bool] | None) -> bool:
    """Whether the node's plugin offers tactics to time, from ``known`` where it holds it."""
    if known is None:
        return offers_tactics(nd, state.dims)
    found = known.get(id(nd))
    if found is None:
        found = known[id(nd)] = offers_tactics(nd, state.dims)
    return found


def _fixed(name: str, declared: list[int | str | None], shape: tuple[int, ...] | None
           ) -> list[int | str | None]:
    """The declared shape, or ``shape`` where the config fixes it (checked against it)."""
    if shape is None:
        return declared
    if len(shape) != len(declared) or any(
            isinstance(d, int) and d != x for d, x in zip(declared, shape, strict=False)):
        raise BuildError(f"input {name!r} is given the fixed shape {tuple(shape)}, which "
                         f"does not fit the shape the model declares, {declared}: give "
                         f"{len(declared)} dimensions, the fixed ones as declared")
    return [int(x) for x in shape]


def _keep(state: BuildState, work: NodeWork) -> None:
    """The node stays in the engine: configured with its build-time descriptions."""
    plugin, node = work.plugin, work.node
    assert plugin is not None
    adapter.configure_build(
        plugin, [(state.dims[n], state.types[n]) if n else None for n in work.inputs],
        [(state.dims[o], state.types[o]) for o in work.outputs])
    log.debug("configure %s", work.where)
    rec = work.record
    state.nodes.append(EngineNode(
        node.name, node.op_type, node.domain, node.opset, work.device, plugin,
        rec.creator.name, rec.creator.plugin_version, rec.creator.plugin_namespace,
        rec.distribution, rec.distribution_version, tuple(work.inputs), tuple(work.outputs)))


def _integer_devices(config: BuilderConfig) -> list[str]:
    """Where the QDQ rewrite's integer operators may run: the target device, and the
    fallback device unless placement is strict (a device with no integer kernels, CUDA
    today, leaves them to the CPU, with the reason in ``build_info["fallbacks"]``)."""
    fallback = config.fallback_device
    return [config.device] + ([fallback] if fallback and fallback != config.device
                              and not config.strict_device else [])


def _summary(state: BuildState) -> dict[str, Any]:
    nodes, network = state.nodes, state.network
    ok, reason = state.device.availability()
    names = {nd.name for nd in nodes}
    return {
        # the model's file name without its folder: an engine holds no path of the machine
        # that built it (reproducible builds)
        "source": os.path.basename(str(network.source)), "opsets": dict(network.opsets),
        "nodes_imported": len(network.nodes), "nodes_folded": state.folded,
        "nodes_pruned": len(network.nodes) - state.folded - len(state.fuser.skipped) - sum(
            1 for nd in nodes if nd.domain != "mini_infer.core"),
        "device_available": ok, "device_reason": reason,
        "placement": {d: sum(1 for nd in nodes if nd.device == d and nd.op_type != "Copy")
                      for d in state.devices},
        "copies": sum(1 for nd in nodes if nd.op_type == "Copy"),
        # the nodes placed on the fallback device, and why (the placement report)
        "fallbacks": [{"node": node.name, "op": node.qualified_op, "reason": why}
                      for node, why in state.selector.fell_back
                      if node.name in names],
        "fp16_nodes": state.precision.half_nodes,
        "fused": list(state.fuser.fused),
        "constants_packed": 0,
    }


def subgraph_factory(registry: PluginRegistry) -> SubgraphFactory:
    """Body runners that build with ``registry``'s plugins (attached to control-flow plugins
    by the builder and the runtime)."""
    def build(model: onnx.ModelProto, device: str) -> Engine:
        return Builder(registry).build_engine(parse_onnx(model), BuilderConfig(device=device),
                                              release_network=True)

    def runner(*args: Any, **kwargs: Any) -> Any:
        # imported with the first body: a model without If, Loop or Scan never needs it
        from .subgraph import SubgraphRunner

        return SubgraphRunner(*args, build=build, **kwargs)

    return runner


def _constants_first(network: Network) -> Network:
    """The same graph with every node computable from constants alone moved to the front
    (order otherwise kept), so that folding has happened before fusion looks at consumers."""
    known = set(network.constants)
    early, late = [], []
    for node in network.nodes:
        if not any(g.type is PluginFieldType.GRAPH for g in node.fields.values()) and all(
                not x or x in known for x in node.inputs):
            early.append(node)
            known.update(o for o in node.outputs if o)
        else:
            late.append(node)
    if not early or len(early) == len(network.nodes):
        return network
    return replace(network, nodes=early + late)


def _domain_op(op: str) -> tuple[str, str]:
    """``"domain::Op"`` (or ``"Op"``, the ONNX domain) as (domain, Op)."""
    domain, _, name = op.rpartition("::")
    return domain, name


def build_engine(network: Network, config: BuilderConfig | None = None,
                 registry: PluginRegistry | None = None, *,
                 release_network: bool = False) -> Engine:
    return Builder(registry).build_engine(network, config, release_network=release_network)
