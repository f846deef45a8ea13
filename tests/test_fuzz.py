"""A short fuzz run in the test suite (issue 17): the engine loader, the ONNX importer with the
builder, and the plugin-field decoder, driven by Hypothesis with a fixed seed (derandomized).
Only ``MiniInferError`` may escape. The long, coverage-guided run is benchmarks/fuzz.py; the
inputs it found are replayed here (regressions)."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is in the core's test extra: "
                    "pip install -e '.[test]'")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from mini_infer_core.engine.format import checksum  # noqa: E402
from mini_infer_core.errors import (  # noqa: E402
    EngineFormatError,
    MiniInferError,
    PluginFieldsError,
)
from mini_infer_core.plugin import decode_fields, encode_fields, fields_from_values  # noqa: E402
from mini_infer_core.testing.fuzz import TARGETS, Fuzzer, hypothesis_inputs, reseal  # noqa: E402

FUZZER = Fuzzer()
SHORT = settings(max_examples=120, derandomize=True, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))


def _only_mini_infer_errors(target: str, data: bytes) -> None:
    try:
        FUZZER.target(target)(data)
    except MiniInferError:
        pass


@pytest.mark.parametrize("target", TARGETS)
def test_every_seed_is_accepted(target: str) -> None:
    """The seeds are valid inputs (else the fuzzer would start from errors only)."""
    seeds = FUZZER.seeds()[target]
    assert len(seeds) >= 5
    for data in seeds:
        FUZZER.target(target)(data)


@pytest.mark.parametrize("target", [
    "engine",  # the engine loader
    "onnx",    # the ONNX importer and the builder
    "fields",  # the plugin-field decoder
])
def test_short_fuzz(target: str) -> None:
    @SHORT
    @given(hypothesis_inputs(FUZZER, target))
    def run(data: bytes) -> None:
        _only_mini_infer_errors(target, data)
    run()


def test_reseal_gets_a_mutated_header_past_the_checksum() -> None:
    """What makes the engine target reach the header: a changed byte fails the checksum,
    the same change resealed fails (or passes) on its meaning."""
    blob = FUZZER.seeds()["engine"][0][1:]
    at = blob.index(b'"producer"')
    changed = blob[:at] + b'"producex"' + blob[at + 10:]
    with pytest.raises(EngineFormatError, match="checksum"):
        FUZZER.runtime.deserialize_engine(changed)
    with pytest.raises(EngineFormatError, match="does not name the mini-infer-core"):
        FUZZER.runtime.deserialize_engine(reseal(changed))


# -- the plugin-field decoder's own checks (what the fuzzer found, made explicit) -----------
def _encoded(table: list[dict[str, Any]], body: bytes = b"") -> bytes:
    head = json.dumps(table).encode()
    return b"MIPF" + struct.pack("<HI", 1, len(head)) + head + body


GOOD = {"name": "a", "type": "int64", "dtype": "<i8", "shape": [2], "tensor": False,
        "offset": 0, "nbytes": 16}


@pytest.mark.parametrize(("change", "body", "message"), [
    ({"shape": [3]}, bytes(16), "do not hold"),
    ({"shape": [10**12, 10**12]}, bytes(16), "do not hold"),
    ({"shape": [-2]}, bytes(16), "not a list of sizes"),
    ({"dtype": "O"}, bytes(16), "not allowed"),
    ({"dtype": "(1000,1000)f8"}, bytes(16), "not allowed"),
    ({"dtype": "V16", "shape": [1]}, bytes(16), "not allowed"),
    ({"dtype": "banana"}, bytes(16), "field 'a'"),
    ({"dtype": "(,)i8"}, bytes(16), "SyntaxError"),  # found by the fuzzer: numpy's parser
    ({"type": "float32"}, bytes(16), "type float32 holds <i8"),
    ({"type": "char", "dtype": "<i8"}, bytes(16), "a string field holds"),
    ({"type": "char", "dtype": "S8"}, b"\xff" * 16, "not UTF-8"),
    ({"type": "graph"}, bytes(16), "a graph is bytes"),
    ({"offset": -1}, bytes(16), "not sizes"),
    ({"offset": 8}, bytes(16), "runs past the end"),
    ({"tensor": "yes"}, bytes(16), "'tensor'"),
    ({"name": 7}, bytes(16), "not a string"),
])
def test_malformed_field_tables_are_plugin_fields_errors(change: dict[str, Any], body: bytes,
                                                          message: str) -> None:
    with pytest.raises(PluginFieldsError, match=message) as err:
        decode_fields(_encoded([{**GOOD, **change}], body))
    assert isinstance(err.value, ValueError)  # what decode_fields always promised


@pytest.mark.parametrize("data", [b"MIPF\x01\x00\xff\xff\xff\xff[]",
                                  b"MIPF\x01\x00\x02\x00\x00\x00{}",
                                  b"MIPF\x01\x00\x05\x00\x00\x00[[[[[", b"MIPF",
                                  b"MIPF\x01\x00" + struct.pack("<I", 4000) + b"[" * 4000])
def test_malformed_field_headers_are_plugin_fields_errors(data: bytes) -> None:
    with pytest.raises(PluginFieldsError):
        decode_fields(data)


def test_fields_round_trip_with_every_kind_of_value() -> None:
    import numpy as np

    fields = fields_from_values({"f": 1.5, "i": (1, 2), "s": "text", "ss": ("a", "bc"),
                                 "t": np.arange(6, dtype=np.int32).reshape(2, 3),
                                 "g": b"\x08\x01", "e": ()})
    back = decode_fields(encode_fields(fields)).values_dict()
    assert back["f"] == 1.5 and back["i"] == (1, 2) and back["s"] == "text"
    assert back["ss"] == ("a", "bc") and back["g"] == b"\x08\x01" and back["e"] == ()
    assert back["t"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_checksum_helper_is_what_the_loader_checks() -> None:
    blob = FUZZER.seeds()["engine"][0][1:]
    assert checksum(blob[:48], [memoryview(blob)[128:]]) == blob[48:80]


# -- inputs the long run (benchmarks/fuzz.py) found, replayed ---------------------------------
def _graph(nodes: list[Any], inputs: list[Any], inits: list[Any] | None = None) -> bytes:
    from onnx import helper

    model = helper.make_model(helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info("y", 1, None)], inits or []),
        opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    raw: bytes = model.SerializeToString()
    return raw


def test_an_unknown_element_type_code_is_a_model_import_error() -> None:
    from onnx import helper

    raw = _graph([helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", 1, [2])])
    raw = raw.replace(b"\x08\x01\x12", b"\x08\x3d\x12")  # elem_type 1 -> 61
    with pytest.raises(MiniInferError, match="element type code 61"):
        FUZZER.onnx(raw)


def test_a_negative_dimension_computed_at_build_time_is_a_build_error() -> None:
    """Resize by a negative scale: the planner saw a negative shape (ValueError)."""
    import numpy as np
    from onnx import helper, numpy_helper

    raw = _graph([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest")],
                 [helper.make_tensor_value_info("x", 1, [4, 2])],
                 [numpy_helper.from_array(np.array([1.0, -1.0], np.float32), "s")])
    with pytest.raises(MiniInferError, match="negative"):
        FUZZER.onnx(raw)


def test_a_constant_without_output_is_a_model_import_error() -> None:
    """Found by the long run: IndexError from the Constant's missing output."""
    import numpy as np
    from onnx import helper, numpy_helper

    raw = _graph([helper.make_node("Constant", [], [], value=numpy_helper.from_array(
        np.ones(2, np.float32), "v")), helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", 1, [2])])
    with pytest.raises(MiniInferError, match="Constant must have exactly one output, it has 0"):
        FUZZER.onnx(raw)


def test_a_weight_of_an_unsupported_element_type_is_a_model_import_error() -> None:
    """Found by the long run: a FLOAT6E3M2 initializer reached the builder (ValueError)."""
    from onnx import helper

    hi = helper.make_tensor("hi", 1, [], [1.0])
    hi.data_type = 28  # FLOAT6E3M2 (onnx reads it as ml_dtypes' float6_e3m2fn)
    hi.ClearField("float_data")
    hi.int32_data.append(0)
    raw = _graph([helper.make_node("Add", ["x", "hi"], ["y"])],
                 [helper.make_tensor_value_info("x", 1, [2])], [hi])
    with pytest.raises(MiniInferError, match="tensor 'hi' has element type FLOAT6E3M2"):
        FUZZER.onnx(raw)


def test_a_name_in_a_body_that_is_not_text_is_a_model_import_error() -> None:
    """Found by the long run: a body's outer-scope name that is not UTF-8 reached numpy
    (UnicodeDecodeError) when it became the If node's input."""
    import numpy as np
    from onnx import helper, numpy_helper

    vi = helper.make_tensor_value_info
    then = helper.make_graph([helper.make_node("Neg", ["OUTERX"], ["o"])], "then", [],
                             [vi("o", 1, [3])])
    other = helper.make_graph([helper.make_node("Abs", ["OUTERX"], ["o"])], "else", [],
                              [vi("o", 1, [3])])
    raw = _graph([helper.make_node("Greater", ["c", "zero"], ["cond"]),
                  helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
                 [vi("c", 1, []), vi("OUTERX", 1, [3])],
                 [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    at = raw.rindex(b"OUTERX", 0, raw.index(b"Neg"))  # the Neg's input (written before it)
    raw = raw[:at] + b"\x8fUTERX" + raw[at + 6:]
    with pytest.raises(MiniInferError, match="body 'then' node 0: an input name is not valid"):
        FUZZER.onnx(raw)


def test_an_unreadable_constant_element_type_is_an_engine_format_error() -> None:
    """Found by the long run: numpy's dtype parser raised SyntaxError for a constant's element
    type "(,)" in a resealed header."""
    blob = next(s[1:] for s in FUZZER.seeds()["engine"] if b'"dtype":"<f4"' in s
                or b'"dtype": "<f4"' in s)
    at = blob.index(b'"<f4"')
    bad = reseal(blob[:at] + b'"(,)"' + blob[at + 5:])
    with pytest.raises(EngineFormatError, match="unreadable element type"):
        FUZZER.runtime.deserialize_engine(bad)
