"""Fuzz targets: the engine loader, the ONNX importer (with the builder behind it) and the
plugin-field decoder, each with seed inputs made here from small models.

A target takes bytes. It may succeed or raise a :class:`~mini_infer_core.errors.MiniInferError`;
any other exception is a finding (as is a crash or a hang, which the fuzzer driving it sees).
``tests/test_fuzz.py`` runs the targets briefly under Hypothesis (derandomized, in the test
suite); ``benchmarks/fuzz.py`` runs them long under atheris (libFuzzer, coverage-guided).

- ``engine``: ``Runtime().deserialize_engine(data)``. The first byte chooses how the rest is
  used: even, as it is; odd, *resealed* (section lengths fitted to the bytes and the checksum
  recomputed), so that mutations get past the checksum into the header and plugin data.
- ``onnx``: ``parse_onnx(data)`` then a build (no tactic timing).
- ``fields``: ``decode_fields(data)``, every field's value, and encoding the result again must
  decode to the same fields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..builder import Builder, BuilderConfig
from ..engine.format import ENGINE_MAGIC, checksum
from ..errors import MiniInferError
from ..importer import parse_onnx
from ..plugin import decode_fields, encode_fields
from ..registry import PluginRegistry, discover
from ..runtime import Runtime

__all__ = ["TARGETS", "Fuzzer", "hypothesis_inputs", "mutate", "reseal", "seed_models"]

TARGETS = ("engine", "onnx", "fields")
_PREAMBLE = struct.Struct("<8sIIQQQQ")


def reseal(data: bytes) -> bytes:
    """``data`` with its data length fitted to its size and its checksum recomputed, where its
    preamble allows (else unchanged): a mutated engine that passes the integrity check."""
    if len(data) < 128 or data[:8] != ENGINE_MAGIC:
        return data
    magic, version, flags, h_off, h_len, d_off, _ = _PREAMBLE.unpack(data[:48])
    if d_off > len(data):
        return data
    pre = _PREAMBLE.pack(magic, version, flags, h_off, h_len, d_off, len(data) - d_off)
    return pre + checksum(pre, [memoryview(data)[128:]]) + data[80:]


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any],
           inits: list[Any] | None = None, domains: tuple[tuple[str, int], ...] = ()
           ) -> onnx.ModelProto:
    model = helper.make_model(
        helper.make_graph(nodes, "fuzz", inputs, outputs, inits or []),
        opset_imports=[helper.make_opsetid("", 17),
                       *(helper.make_opsetid(d, v) for d, v in domains)])
    model.ir_version = 8
    return model


def seed_models() -> dict[str, onnx.ModelProto]:
    """Small models that touch the importer's and builder's main paths: weights, attributes of
    every kind (ints, floats, lists, strings, a tensor, a subgraph), symbolic dimensions,
    shape arithmetic, folding, fusion and control flow."""
    rng = np.random.default_rng(0)
    f32 = TensorProto.FLOAT

    def vi(name: str, shape: list[Any] | None, dtype: int = f32) -> Any:
        return helper.make_tensor_value_info(name, dtype, shape)

    def init(name: str, arr: np.ndarray[Any, Any]) -> Any:
        return numpy_helper.from_array(arr, name)

    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    fc = rng.standard_normal((5, 16)).astype(np.float32)
    cnn = _model([
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["g"], transB=1, alpha=0.5),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ], [vi("x", ["N", 3, 4, 4])], [vi("y", None)], [init("w", w), init("fc", fc)])
    shape = _model([
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i"], ["d"], axis=0),
        helper.make_node("Concat", ["d", "m"], ["t"], axis=0),
        helper.make_node("Reshape", ["x", "t"], ["r"]),
        helper.make_node("Transpose", ["r"], ["tr"], perm=[1, 0]),
        helper.make_node("ReduceSum", ["tr", "ax"], ["y"], keepdims=1),
    ], [vi("x", ["B", 2, 3])], [vi("y", None)],
        [init("i", np.array([0], np.int64)), init("m", np.array([-1], np.int64)),
         init("ax", np.array([1], np.int64))])
    attrs = _model([
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
            np.arange(6, dtype=np.float32).reshape(2, 3), "kv")),
        helper.make_node("Add", ["x", "k"], ["a"]),
        helper.make_node("Resize", ["a", "", "sc"], ["rs"], mode="nearest",
                         coordinate_transformation_mode="asymmetric"),
        helper.make_node("Clip", ["rs", "lo", "hi"], ["cl"]),
        helper.make_node("LeakyRelu", ["cl"], ["y"], alpha=0.2),
    ], [vi("x", [2, 3])], [vi("y", None)],
        [init("sc", np.array([2.0, 1.0], np.float32)), init("lo", np.array(-1, np.float32)),
         init("hi", np.array(1, np.float32))])
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["o"])], "then", [], [vi("o", [3])])
    other = helper.make_graph([helper.make_node("Abs", ["x"], ["o"])], "else", [],
                              [vi("o", [3])])
    control = _model([
        helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
        helper.make_node("Greater", ["mx", "zero"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other),
    ], [vi("x", [3])], [vi("y", None)], [init("zero", np.array(0, np.float32))])
    ints = _model([
        helper.make_node("Cast", ["x"], ["c"], to=TensorProto.INT64),
        helper.make_node("ArgMax", ["c"], ["am"], axis=1, keepdims=0),
        helper.make_node("Where", ["b", "x", "x2"], ["y"]),
        helper.make_node("Expand", ["am", "es"], ["e"]),
    ], [vi("x", [2, 4]), vi("b", [2, 4], TensorProto.BOOL), vi("x2", [2, 4])],
        [vi("y", None), vi("e", None)], [init("es", np.array([3, 2], np.int64))])
    models = {"cnn": cnn, "shape": shape, "attrs": attrs, "control": control, "ints": ints}
    models["l2norm"] = _model(
        [helper.make_node("L2Norm", ["x"], ["y"], domain="com.example", epsilon=1e-6, axis=-1)],
        [vi("x", [2, 5])], [vi("y", None)], domains=(("com.example", 1),))
    return models


def mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """Apply byte edits ``(kind, position, value)``: 0 set, 1 insert, 2 delete, 3 truncate,
    4 add to a byte, 5 copy a run from elsewhere (the mutations a fuzzer makes)."""
    buf = bytearray(data)
    for kind, pos, value in edits:
        at = pos % (len(buf) + 1)
        if kind == 0 and buf:
            buf[at % len(buf)] = value & 0xFF
        elif kind == 1:
            buf[at:at] = bytes([value & 0xFF])
        elif kind == 2 and buf:
            del buf[at % len(buf)]
        elif kind == 3:
            del buf[at:]
        elif kind == 4 and buf:
            i = at % len(buf)
            buf[i] = (buf[i] + value) & 0xFF
        elif kind == 5 and buf:
            src = value % len(buf)
            n = 1 + (value >> 8) % 16
            buf[at:at + n] = buf[src:src + n]
    return bytes(buf)


class Fuzzer:
    """The three targets over one plugin registry (discovered once)."""

    def __init__(self, registry: PluginRegistry | None = None) -> None:
        self.registry = registry if registry is not None else discover()
        self.runtime = Runtime(self.registry, allow_substitutes=False)
        self.builder = Builder(self.registry)
        self._seeds: dict[str, list[bytes]] | None = None

    def target(self, name: str) -> Callable[[bytes], None]:
        return {"engine": self.engine, "onnx": self.onnx, "fields": self.fields}[name]

    def engine(self, data: bytes) -> None:
        body = data[1:]
        if data[:1] and data[0] & 1:
            body = reseal(body)
        self.runtime.deserialize_engine(body)

    def onnx(self, data: bytes) -> None:
        network = parse_onnx(data)
        self.builder.build_engine(network, BuilderConfig(time_tactics=False))

    def fields(self, data: bytes) -> None:
        decoded = decode_fields(data)
        values = decoded.values_dict()
        again = decode_fields(encode_fields(decoded))
        if list(again) != list(decoded) or any(
                a.type is not b.type or a.is_tensor != b.is_tensor or a.data.dtype != b.data.dtype
                or a.data.shape != b.data.shape or a.data.tobytes() != b.data.tobytes()
                for a, b in zip(again.fields, decoded.fields, strict=True)):
            raise AssertionError(f"encode(decode(x)) decodes to other fields: {values!r:.200}")

    def seeds(self) -> dict[str, list[bytes]]:
        """Seed inputs per target: the models, the engines built from them, and the plugin
        fields those engines hold."""
        if self._seeds is not None:
            return self._seeds
        onnx_seeds, engines, fields = [], [], []
        for model in seed_models().values():
            raw = model.SerializeToString()
            onnx_seeds.append(raw)
            try:
                engine = self.builder.build_engine(parse_onnx(raw),
                                                   BuilderConfig(time_tactics=False))
                blob = engine.serialize()
            except MiniInferError:
                continue  # a plugin distribution is missing here (the example plugin)
            engines += [b"\0" + blob, b"\1" + blob]
            for nd in engine.nodes:
                data = nd.plugin.serialize()
                at = data.find(b"MIPF")
                if at >= 0:
                    fields.append(data[at:])
        self._seeds = {"engine": engines, "onnx": onnx_seeds,
                       "fields": list(dict.fromkeys(fields))}
        return self._seeds

    def check(self, name: str, data: bytes) -> BaseException | None:
        """Run a target; return the exception that is a finding (not a MiniInferError)."""
        try:
            self.target(name)(data)
        except MiniInferError:
            return None
        except Exception as exc:  # noqa: BLE001 - anything else is what we look for
            return exc
        return None


def hypothesis_inputs(fuzzer: Fuzzer, name: str) -> Any:
    """A Hypothesis strategy of inputs for a target: random bytes, and the target's seeds
    with fuzzer-like edits (for the engine target, some resealed). Needs hypothesis (the
    core's ``test`` extra)."""
    from hypothesis import strategies as st

    seeds = fuzzer.seeds()[name] or [b""]
    edits = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2**20), st.integers(0, 2**12)),
                     max_size=8)
    mutated = st.builds(mutate, st.sampled_from(seeds), edits)
    if name == "engine":
        mutated = st.builds(lambda d, k: d[:1] + reseal(d[1:]) if k else d, mutated,
                            st.booleans())
    return st.one_of(st.binary(max_size=256), mutated)
