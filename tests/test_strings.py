"""String tensors and the string operators (StringNormalizer, StringSplit, StringConcat,
RegexFullMatch, TfIdfVectorizer), the other operators on strings, string constants in engine
files, and text classifiers -- against onnxruntime and onnx's ReferenceEvaluator.

Where the two oracles disagree mini-infer follows onnxruntime (see the cpu_basic module
``ops/strings.py``); the reference is then compared on the inputs where it agrees with the
specification and onnxruntime (plain ASCII words, no empty strings).
"""

from __future__ import annotations

import json
import locale
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi
from mini_infer_core.engine import format as engine_format
from mini_infer_core.engine.format import decode_strings, encode_strings, read_engine_file
from mini_infer_core.errors import EngineFormatError, MiniInferError
from mini_infer_core.plugin import _adapter as adapter

STRING, INT64, INT32, FLOAT, BOOL = (TensorProto.STRING, TensorProto.INT64, TensorProto.INT32,
                                     TensorProto.FLOAT, TensorProto.BOOL)


def S(*items: Any) -> np.ndarray[Any, Any]:
    """A string tensor (an object array of str)."""
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


def empty(*shape: int) -> np.ndarray[Any, Any]:
    return np.empty(shape, dtype=object)


def one_node(op: str, inputs: dict[str, tuple[int, np.ndarray[Any, Any]]],
             outputs: dict[str, int], opset: int = 20, domain: str = "",
             lead: int | None = None, **attrs: Any) -> onnx.ModelProto:
    """A model of one node; each input's rank is that of its example array, its dimensions
    free (fixed where an example is empty: symbolic broadcasting takes max(N, M), wrong where
    one of them is 0 at run time); ``lead`` fixes the first dimension of every input."""
    node = helper.make_node(op, list(inputs), list(outputs), domain=domain, **attrs)
    fixed = any(x.size == 0 for _, x in inputs.values())
    graph = helper.make_graph(
        [node], "strings",
        [helper.make_tensor_value_info(n, t, list(x.shape) if fixed else
                                       [lead] + [None] * (x.ndim - 1) if x.ndim else [])
         for n, (t, x) in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()])
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 9
    return model


def feeds_of(inputs: dict[str, tuple[int, np.ndarray[Any, Any]]]) -> dict[str, Any]:
    return {n: x for n, (_, x) in inputs.items()}


def ours(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    return mi.InferenceSession(model).run(None, feeds)


def ort(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    import onnxruntime

    so = onnxruntime.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"]).run(None, feeds)


def reference(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    return list(ReferenceEvaluator(model).run(None, feeds))


def same(got: Any, want: Any, what: str = "") -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "OUS":
        assert got.dtype == object, f"{what}: dtype {got.dtype}"
        assert got.tolist() == want.astype(object).tolist(), f"{what}: {got} != {want}"
    elif want.dtype.kind == "f":
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
        assert np.array_equal(got, want), f"{what}: {got} != {want}"


def check(model: onnx.ModelProto, feeds: dict[str, Any], oracles: tuple[str, ...] = ("ort",)
          ) -> list[Any]:
    got = ours(model, feeds)
    for oracle in oracles:
        want = ort(model, feeds) if oracle == "ort" else reference(model, feeds)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            same(g, w, f"{oracle}, output {k}")
    return got


UNICODE = S("héllo wörld", "", "Ωμέγα ΣΟΦΙΑ", "日本語 テキスト", "straße", "a  b", " ✓ ")


# -- StringConcat ----------------------------------------------------------------------------
@pytest.mark.parametrize("x, y", [
    (S("a", "é", ""), np.array([["x"], ["ÿ✓"]], dtype=object)),
    (UNICODE, S("!")),
    (S("", ""), S("", "")),
    (np.array("zero-d", dtype=object), np.array("✓", dtype=object)),
    (empty(0), S("x")),
    (empty(2, 0), np.array([["a"], ["b"]], dtype=object)),
])
def test_string_concat_broadcasts_like_onnxruntime_and_the_reference(x: Any, y: Any) -> None:
    inputs = {"x": (STRING, x), "y": (STRING, y)}
    check(one_node("StringConcat", inputs, {"z": STRING}), feeds_of(inputs), ("ort", "ref"))


# -- StringSplit -----------------------------------------------------------------------------
SPLIT_INPUTS = [
    S("abc.com", "def.net", "a..b", ".x.", "", "no-dot"),
    S("  a  b  c ", "a\tb c", "", " ", "é ✓ 日本", "x-y--z-", "\u3000wide\u3000space"),
    np.array([["hello world", "def.net"], ["o n n x", "the quick brown fox"]], dtype=object),
    empty(0), empty(2, 0),
]
PLAIN = [S("abc.com", "def.net", "a.b.c.d"), S("one two", "three", "four five six"),
         np.array([["a-b", "c"], ["d-e-f", "g-h"]], dtype=object)]


@pytest.mark.parametrize("delimiter", [None, "", " ", ".", "-", "ab", "é"])
@pytest.mark.parametrize("maxsplit", [None, 0, 1, 2, -1])
def test_string_split_matches_onnxruntime(delimiter: str | None, maxsplit: int | None) -> None:
    attrs = {k: v for k, v in (("delimiter", delimiter), ("maxsplit", maxsplit))
             if v is not None}
    for x in SPLIT_INPUTS:
        inputs = {"x": (STRING, x)}
        model = one_node("StringSplit", inputs, {"y": STRING, "n": INT64}, **attrs)
        check(model, feeds_of(inputs))


@pytest.mark.parametrize("delimiter", [None, ".", "-", " "])
@pytest.mark.parametrize("maxsplit", [None, 1])
def test_string_split_matches_the_reference_on_plain_words(delimiter: str | None,
                                                           maxsplit: int | None) -> None:
    attrs = {k: v for k, v in (("delimiter", delimiter), ("maxsplit", maxsplit))
             if v is not None}
    for x in PLAIN:
        inputs = {"x": (STRING, x)}
        model = one_node("StringSplit", inputs, {"y": STRING, "n": INT64}, **attrs)
        check(model, feeds_of(inputs), ("ort", "ref"))


# -- RegexFullMatch --------------------------------------------------------------------------
PATTERNS = [r"\d+", r"[a-z]+@\w+\.com", r"(?i)straSSe", r"a$", r"\w+", r"a{,3}",
            r"[[:alpha:]]+", r"\pL+", r".*", r"ab|a", r"\x{e9}", r"\Qa.b\E", r"(?s).+",
            r"\p{Greek}+", r"[^a-z]*", r"\bword\b.*", r"(?U)a+"]
REGEX_INPUTS = S("123", "١٢٣", "a@b.com", "a@é.com", "strasse", "STRASSE", "straße", "a",
                 "a\n", "aaa", "a{,3}", "éa", "", "a.b", "ab", "é", "ΩΣ", "word up",
                 "wordy", "\n")


def _re2() -> None:
    pytest.importorskip("re2", reason="RegexFullMatch needs google-re2 "
                                      "(mini-infer-cpu-plugins[regex])")


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_full_match_is_re2_as_in_onnxruntime(pattern: str) -> None:
    _re2()
    for x in (REGEX_INPUTS, REGEX_INPUTS[:6].reshape(2, 3), empty(0), empty(3, 0)):
        inputs = {"x": (STRING, x)}
        check(one_node("RegexFullMatch", inputs, {"y": BOOL}, pattern=pattern),
              feeds_of(inputs))


@pytest.mark.parametrize("pattern", [r"[a-z]+@[a-z]+\.(com|org)", r"(ab|cd)*e?", r"a.c",
                                     r"[0-9]{2,3}-x"])
def test_regex_full_match_agrees_with_the_reference_where_re_and_re2_agree(pattern: str
                                                                           ) -> None:
    _re2()
    x = S("me@site.org", "me@site.net", "ababcde", "abc", "a\nc", "12-x", "1234-x", "", "e")
    inputs = {"x": (STRING, x)}
    check(one_node("RegexFullMatch", inputs, {"y": BOOL}, pattern=pattern),
          feeds_of(inputs), ("ort", "ref"))


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)a", r"a\Z", r"(?<!b)a", r"[a-"])
def test_regex_patterns_re2_refuses_fail_the_build_naming_the_node(pattern: str) -> None:
    _re2()
    inputs = {"x": (STRING, S("a"))}
    model = one_node("RegexFullMatch", inputs, {"y": BOOL}, pattern=pattern)
    model.graph.node[0].name = "email_check"
    with pytest.raises(MiniInferError, match=r"(?s)email_check.*not a valid RE2"):
        mi.InferenceSession(model)


def test_regex_without_google_re2_says_what_to_install(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setitem(sys.modules, "re2", None)  # `import re2` now raises ImportError
    inputs = {"x": (STRING, S("a"))}
    with pytest.raises(MiniInferError, match=r"mini-infer-cpu-plugins\[regex\]"):
        mi.InferenceSession(one_node("RegexFullMatch", inputs, {"y": BOOL}, pattern="a"))


# -- StringNormalizer ------------------------------------------------------------------------
def locale_installed(name: str) -> bool:
    """Whether the C library has locale ``name`` (onnxruntime's StringNormalizer needs it)."""
    saved = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, name)
        return True
    except locale.Error:
        return False
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)


def needs_locale(name: str) -> None:
    if not locale_installed(name):
        pytest.skip(f"onnxruntime's StringNormalizer needs the {name} locale, which this "
                    "machine lacks (`locale -a`; install it, e.g. the locales package and "
                    "locale-gen)")


NORMALIZER_INPUTS = [
    S("Monday", "", "tuesday", "a monday", "ÉCOLE straße", "İstanbul", "ǅ", "Ωmega ﬁ",
      "MONDAY", "ΟΔΟΣ", "ᾳ"),
    np.array([["monday", "Monday", "x"]], dtype=object),
    S("monday"),
]
STOPWORDS = [None, ["monday", "Straße"], ["MONDAY", "ǆ"]]


@pytest.mark.parametrize("action", ["NONE", "LOWER", "UPPER"])
@pytest.mark.parametrize("case_sensitive", [0, 1])
@pytest.mark.parametrize("stopwords", STOPWORDS)
@pytest.mark.parametrize("where", ["C.UTF-8", "C", "default"])
def test_string_normalizer_matches_onnxruntime(action: str, case_sensitive: int,
                                               stopwords: list[str] | None,
                                               where: str) -> None:
    attrs: dict[str, Any] = {"case_change_action": action, "is_case_sensitive": case_sensitive}
    if stopwords:
        attrs["stopwords"] = stopwords
    if where == "default":
        needs_locale("en_US.UTF-8")  # onnxruntime's default locale
    else:
        needs_locale(where)
        attrs["locale"] = where
    for x in NORMALIZER_INPUTS:
        inputs = {"x": (STRING, x)}  # onnxruntime wants a [1, C] input declared so
        check(one_node("StringNormalizer", inputs, {"y": STRING}, opset=10,
                       lead=1 if x.ndim == 2 else None, **attrs), feeds_of(inputs))


@pytest.mark.parametrize("action", ["LOWER", "UPPER"])
def test_string_normalizer_changes_the_case_of_every_letter_as_onnxruntime(action: str
                                                                           ) -> None:
    needs_locale("C.UTF-8")
    letters = S(*(chr(c) for c in range(0x80, 0x10000)
                  if not 0xD800 <= c < 0xE000 and chr(c).isalpha()))
    inputs = {"x": (STRING, letters)}
    check(one_node("StringNormalizer", inputs, {"y": STRING}, opset=10,
                   case_change_action=action, locale="C.UTF-8"), feeds_of(inputs))


@pytest.mark.parametrize("action, case_sensitive", [
    ("NONE", 1), ("LOWER", 0), ("LOWER", 1), ("UPPER", 0), ("UPPER", 1)])
def test_string_normalizer_matches_the_reference_on_plain_words(action: str,
                                                                case_sensitive: int) -> None:
    """(Not NONE case-insensitively: the reference then compares case-sensitively.)"""
    attrs = {"case_change_action": action, "is_case_sensitive": case_sensitive,
             "stopwords": ["monday", "Friday"]}
    for x in (S("Monday", "tuesday", "monday", "FRIDAY", "Friday"),
              np.array([["monday", "Monday", "x"]], dtype=object), S("monday", "Friday")):
        inputs = {"x": (STRING, x)}
        # no locale attribute: the reference would set the process's locale
        check(one_node("StringNormalizer", inputs, {"y": STRING}, opset=10,
                       lead=1 if x.ndim == 2 else None, **attrs), feeds_of(inputs), ("ref",))


def test_string_normalizer_empty_input_gives_one_empty_string() -> None:
    """onnxruntime refuses an empty input; mini-infer answers as the specification says for
    an input whose elements are all dropped (the reference's answer too)."""
    for shape, want in (((0,), S("")), ((1, 0), np.array([[""]], dtype=object))):
        inputs = {"x": (STRING, empty(*shape))}
        model = one_node("StringNormalizer", inputs, {"y": STRING}, opset=10,
                         case_change_action="LOWER", stopwords=["a"])
        same(ours(model, feeds_of(inputs))[0], want)
        assert reference(model, feeds_of(inputs))[0].tolist() == want.tolist()


def test_string_normalizer_refuses_other_shapes_when_built() -> None:
    inputs = {"x": (STRING, np.array([["a"], ["b"]], dtype=object))}
    model = one_node("StringNormalizer", inputs, {"y": STRING}, opset=10)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    with pytest.raises(MiniInferError, match=r"\[C\] or \[1, C\]"):
        mi.InferenceSession(model)


# -- TfIdfVectorizer -------------------------------------------------------------------------
def tfidf_model(x: np.ndarray[Any, Any], elem: int, **attrs: Any) -> tuple[onnx.ModelProto,
                                                                           dict[str, Any]]:
    inputs = {"x": (elem, x)}
    return one_node("TfIdfVectorizer", inputs, {"y": FLOAT}, opset=9, **attrs), {"x": x}


POOL = dict(ngram_counts=[0, 4], pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])
IDS = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int64)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("grams, skip", [((1, 1), 0), ((1, 2), 0), ((2, 2), 5), ((1, 2), 3)])
@pytest.mark.parametrize("elem", [INT64, INT32])
def test_tfidf_on_integers_matches_onnxruntime_and_the_reference(mode: str, grams: Any,
                                                                 skip: int, elem: int) -> None:
    attrs = dict(POOL, mode=mode, min_gram_length=grams[0], max_gram_length=grams[1],
                 max_skip_count=skip, ngram_indexes=list(range(7)))
    if mode != "TF":
        attrs["weights"] = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    x = IDS.astype(np.int32 if elem == INT32 else np.int64)
    for rows in (x, x.reshape(-1), x[:, :0], x.reshape(-1)[:0]):
        model, feeds = tfidf_model(rows, elem, **attrs)
        check(model, feeds, ("ort", "ref"))


def test_tfidf_weights_belong_to_ngrams_not_output_positions() -> None:
    """Permuted, sparse ngram_indexes: each n-gram's weight goes with it (onnxruntime; the
    reference reads the weight of the output position and fails here)."""
    attrs = dict(POOL, mode="TFIDF", min_gram_length=1, max_gram_length=2,
                 max_skip_count=1, ngram_indexes=[9, 4, 3, 0, 1, 7, 2],
                 weights=[0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    model, feeds = tfidf_model(IDS, INT64, **attrs)
    y = check(model, feeds)[0]
    assert y.shape == (2, 10)


def test_tfidf_on_strings_with_unicode_and_empty_tokens() -> None:
    pool = ["chat", "", "日本", "straße", "chat", "", "日本", "chat", "straße", "日本", "chat"]
    attrs = dict(mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=2,
                 ngram_counts=[0, 4, 8], ngram_indexes=list(range(6)) + [8],
                 pool_strings=pool)
    x = np.array([["chat", "", "日本", "chat", "straße"], ["日本", "chat", "", "x", "chat"]],
                 dtype=object)
    for rows in (x, x[0], x[:, :0]):
        model, feeds = tfidf_model(rows, STRING, **attrs)
        check(model, feeds)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_tfidf_on_a_vocabulary_of_single_strings(mode: str) -> None:
    """A text model's pool (single tokens, each its own output index, permuted and sparse;
    the one-pass count of cpu_basic): repeated, unknown, empty and non-ASCII tokens, weights
    that are no round numbers, 2 rows, one row, no tokens, no rows."""
    pool = ["cat", "dog", "日本", "", "straße", "vet"]
    attrs: dict[str, Any] = dict(mode=mode, min_gram_length=1, max_gram_length=1,
                                 max_skip_count=0, ngram_counts=[0],
                                 ngram_indexes=[7, 0, 3, 5, 1, 8], pool_strings=pool)
    if mode != "TF":
        attrs["weights"] = [0.3, 1.7, 2.1, 0.9, 1e-3, 3.3]
    x = np.array([["cat", "cat", "日本", "", "x", "vet"], ["dog", "straße", "cat", "cat", "cat",
                                                          "日本"]], dtype=object)
    for rows in (x, x[0], x[:, :0]):
        model, feeds = tfidf_model(rows, STRING, **attrs)
        check(model, feeds)
    model, feeds = tfidf_model(x[:0], STRING, **attrs)  # onnxruntime refuses no rows
    assert mi.InferenceSession(model).run(None, feeds)[0].shape == (0, 9)


@pytest.mark.parametrize("mode", ["TF", "TFIDF"])
def test_tfidf_vocabulary_counted_in_python_and_in_numpy(mode: str) -> None:
    """A vocabulary pool counted by the few-token Python loop (up to ``_FEW_TOKENS`` tokens)
    and by the NumPy pass (more): the same as onnxruntime on both sides of the bound, with
    unknown and repeated tokens, pad values and rows of one token."""
    from mini_infer_cpu_plugins.ops.strings import _FEW_TOKENS

    rng = np.random.default_rng(3)
    pool = ["cat", "dog", "日本", "straße", "vet", "a", "bb"]
    attrs: dict[str, Any] = dict(mode=mode, min_gram_length=1, max_gram_length=1,
                                 max_skip_count=0, ngram_counts=[0],
                                 ngram_indexes=[9, 0, 4, 2, 7, 1, 5], pool_strings=pool,
                                 weights=rng.uniform(0.1, 3, 7).tolist())
    words = np.array([*pool, "#", "zz", ""], dtype=object)
    for rows, cols in ((1, 1), (1, _FEW_TOKENS), (2, _FEW_TOKENS // 2 + 1), (40, 9)):
        x = words[rng.integers(0, len(words), (rows, cols))]
        model, feeds = tfidf_model(x, STRING, **attrs)
        check(model, feeds)


@pytest.mark.parametrize("seed", range(12))
def test_tfidf_random_pools_match_onnxruntime(seed: int) -> None:
    rng = np.random.default_rng(seed)
    longest = int(rng.integers(1, 5))
    counts, pool = [], []
    for n in range(1, longest + 1):
        counts.append(len(pool))
        grams = {tuple(rng.integers(0, 6, n).tolist()) for _ in range(int(rng.integers(1, 8)))}
        for g in sorted(grams):
            pool.extend(g)
    ends = counts[1:] + [len(pool)]
    n_grams = sum((e - s) // (k + 1) for k, (s, e) in enumerate(zip(counts, ends, strict=True)))
    lo = int(rng.integers(1, longest + 1))
    attrs: dict[str, Any] = dict(
        mode=str(rng.choice(["TF", "IDF", "TFIDF"])), min_gram_length=lo,
        max_gram_length=int(rng.integers(lo, longest + 1)),
        max_skip_count=int(rng.integers(0, 4)), ngram_counts=counts, pool_int64s=pool,
        ngram_indexes=rng.permutation(n_grams + 2)[:n_grams].tolist())
    if rng.random() < 0.7:
        attrs["weights"] = rng.uniform(0.1, 3, n_grams).round(3).tolist()
    x = rng.integers(0, 7, (int(rng.integers(1, 5)), int(rng.integers(1, 12)))).astype(np.int64)
    model, feeds = tfidf_model(x, INT64, **attrs)
    check(model, feeds)


def test_tfidf_pool_too_wide_for_integer_keys() -> None:
    """300 distinct tokens and 8-grams: keys of 8 digits in base 301 overflow 63 bits, so
    the n-grams are looked up as tuples."""
    rng = np.random.default_rng(7)
    unigrams = list(range(1000, 1300))
    eights = rng.integers(1000, 1010, (6, 8)).tolist()
    pool = unigrams + [t for g in eights for t in g]
    counts = [0] + [len(unigrams)] * 7
    attrs = dict(mode="TF", min_gram_length=1, max_gram_length=8, max_skip_count=1,
                 ngram_counts=counts, pool_int64s=pool, ngram_indexes=list(range(306)))
    x = np.concatenate([np.array(eights[:3]).reshape(-1), rng.integers(990, 1310, 40)])
    model, feeds = tfidf_model(np.tile(x, (2, 1)).astype(np.int64), INT64, **attrs)
    y = check(model, feeds, ("ort", "ref"))[0]
    assert y[:, 300:303].min() >= 1  # the three 8-grams were found


@pytest.mark.parametrize("attrs, match", [
    (dict(ngram_counts=[0, 2], pool_int64s=[1, 2, 1, 2, 1, 2]), "twice in the pool"),
    (dict(ngram_counts=[0, 1], pool_int64s=[1, 2, 3, 4]), "whole 2-grams"),
    (dict(ngram_counts=[0], pool_int64s=[1, 2], pool_strings=["a"]), "exactly one"),
])
def test_tfidf_malformed_pools_fail_the_build(attrs: dict[str, Any], match: str) -> None:
    full = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0,
                ngram_indexes=[0, 1, 2, 3], **attrs)
    model, _ = tfidf_model(IDS, INT64, **full)
    with pytest.raises(MiniInferError, match=match):
        mi.InferenceSession(model)


def test_tfidf_string_pool_refuses_integer_input_when_built() -> None:
    model, _ = tfidf_model(IDS, INT64, mode="TF", min_gram_length=1, max_gram_length=1,
                           max_skip_count=0, ngram_counts=[0], ngram_indexes=[0],
                           pool_strings=["a"])
    with pytest.raises(MiniInferError, match="needs a STRING input"):
        mi.InferenceSession(model)


# -- Tokenizer (com.microsoft, onnxruntime's) -----------------------------------------------
TEXTS = S("Hello, world! How are you?", "", "a", "  ab  cd ", "é✓ x.y", "one;two::three",
          "xaby", "xbay", "héllo wörld", "a  b")
SKL2ONNX_SEPARATORS = [" ", "[.]", "\\?", ",", ";", ":", "\\!"]


@pytest.mark.parametrize("attrs", [
    {"tokenexp": "[a-zA-Z0-9_]+"},
    {"tokenexp": "[a-zA-Z0-9_]+", "mincharnum": 3},
    {"tokenexp": "[a-z]+"},
    {"tokenexp": "[0-9A-F_]+", "mark": 1},
    {"tokenexp": "\\w+", "mark": 1},
    {"tokenexp": "x*"},
    {"separators": SKL2ONNX_SEPARATORS},
    {"separators": [" "], "mincharnum": 2},
    {"separators": ["a", "ab"]},
    {"separators": ["ab", "b"], "mark": 1, "pad_value": "<pad>"},
    {"separators": [""]},
    {"separators": [""], "mark": 1},
    {"separators": [" "], "tokenexp": "\\w+"},
])
def test_tokenizer_matches_onnxruntime(attrs: dict[str, Any]) -> None:
    _re2()
    full = {"mark": 0, "mincharnum": 1, "pad_value": "#", **attrs}
    for x in (TEXTS, TEXTS.reshape(2, 5), S("", ""), S("x")):
        inputs = {"x": (STRING, x)}
        check(one_node("Tokenizer", inputs, {"y": STRING}, opset=17, domain="com.microsoft",
                       **full), feeds_of(inputs))


@pytest.mark.parametrize("attrs", [
    {"tokenexp": "[a-zA-Z0-9_]+"}, {"tokenexp": "[a-z]+", "mark": 1, "pad_value": "<p>"},
    {"tokenexp": "[a-z]+", "mincharnum": 2}, {"separators": [" "]},
])
def test_tokenizer_pads_many_rows_as_onnxruntime(attrs: dict[str, Any]) -> None:
    """Many rows of different token counts (rows without tokens, a row of only
    separators), padded to the longest at once: as onnxruntime, as [N] and [N, 1]."""
    _re2()
    rng = np.random.default_rng(5)
    words = ["cat", "a", "dog_1", "Δx", "", " ", "..", "ab cd"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 7)))) for _ in range(30)]
    full = {"mark": 0, "mincharnum": 1, "pad_value": "#", **attrs}
    x = np.array(texts, dtype=object)
    for shaped in (x, x.reshape(-1, 1)):
        inputs = {"x": (STRING, shaped)}
        check(one_node("Tokenizer", inputs, {"y": STRING}, opset=17, domain="com.microsoft",
                       **full), feeds_of(inputs))


def test_tokenizer_takes_pythons_re_only_for_one_ascii_class() -> None:
    """The patterns Tokenizer runs with Python's re instead of RE2 (the same matches, found
    faster): one class of ASCII letters, digits and underscores, repeated; the cases above
    compare both kinds with onnxruntime."""
    from mini_infer_cpu_plugins.ops.strings import _ONE_ASCII_CLASS

    for pattern in ("[a-zA-Z0-9_]+", "[a-z]+", "[0-9A-F_]+", "[x]+"):
        assert _ONE_ASCII_CLASS.fullmatch(pattern), pattern
    for pattern in ("\\w+", "[^a]+", "[a-z]*", "[a-z]+?", "[a-z]+[0-9]+", "[.]+", "[é]+",
                    "[a-z]+|x", "(?i)[a-z]+", "[\\w]+"):
        assert not _ONE_ASCII_CLASS.fullmatch(pattern), pattern


@pytest.mark.parametrize(("shape", "axis", "fused"), [((6,), 1, True), ((6,), -1, True),
                                                     ((6,), 0, False), ((3, 2), 1, False)])
def test_tokenizer_absorbs_the_flatten_of_its_tokens(shape: tuple[int, ...], axis: int,
                                                     fused: bool) -> None:
    """skl2onnx's text pipelines flatten the tokens at axis 1: of [N, T] that is the tokens
    themselves, so the Tokenizer writes the Flatten's output (no Flatten step); another
    axis or tokens of rank 3 keep their Flatten. Against onnxruntime at 1 and 6 texts (no
    text: onnxruntime's Tokenizer drops the token axis, then flattens another shape)."""
    _re2()
    nodes = [helper.make_node("Tokenizer", ["x"], ["t"], domain="com.microsoft", mark=0,
                              mincharnum=1, pad_value="#", tokenexp="[a-zA-Z0-9_]+"),
             helper.make_node("Flatten", ["t"], ["y"], axis=axis)]
    dims: list[Any] = ["N", *shape[1:]]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", STRING, dims)],
                              [helper.make_tensor_value_info("y", STRING, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    engine = mi.load(model)
    assert ("Flatten" not in [n.op_type for n in engine.nodes]) == fused
    texts = TEXTS[:6].reshape(shape)
    for n in (1, len(texts), 1):
        feeds = {"x": texts[:n]}
        same(ours(model, feeds), ort(model, feeds))


@pytest.mark.parametrize("mode", ["tfidf", "count"])
def test_tokenizer_counts_the_tfidf_vectorizer_after_it(mode: str) -> None:
    """skl2onnx's text pipeline (StringNormalizer, Tokenizer, Flatten, TfIdfVectorizer, a
    linear model): the Tokenizer absorbs the Flatten and counts the TfIdfVectorizer's
    n-grams itself, so no node is data-dependent any more (one plan, no segments). Against
    scikit-learn and onnxruntime at 1, 3 and 0 texts, and again from an engine file."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from mini_infer_core.runtime import Runtime

    rng = np.random.default_rng(11)
    words = "cat dog Bird fish bank loan cash the an of tax".split()
    docs = [" ".join(rng.choice(words, size=int(rng.integers(1, 9)))) for _ in range(60)]
    labels = [int("bank" in d or "loan" in d) for d in docs]
    vec = TfidfVectorizer() if mode == "tfidf" else CountVectorizer(ngram_range=(1, 2))
    pipe = make_pipeline(vec, LogisticRegression(max_iter=300)).fit(docs[:50], labels[:50])
    model = to_onnx(pipe, initial_types=[("input", StringTensorType([None, 1]))],
                    options={id(pipe.steps[-1][1]): {"zipmap": False}},
                    target_opset={"": 17, "ai.onnx.ml": 3})
    for node in model.graph.node:  # onnxruntime's default locale is often not installed
        if node.op_type == "StringNormalizer":
            del node.attribute[:]
            node.attribute.extend([helper.make_attribute("case_change_action", "LOWER"),
                                   helper.make_attribute("locale", "C.UTF-8")])
    engine = mi.load(model)
    kinds = [n.op_type for n in engine.nodes]
    assert "TfIdfVectorizer" not in kinds and "Flatten" not in kinds and "Tokenizer" in kinds
    assert not any(adapter.is_data_dependent(n.plugin) for n in engine.nodes)
    again = Runtime().deserialize_engine(engine.serialize())
    held = np.array(docs[50:], dtype=object).reshape(-1, 1)
    for eng in (engine, again):
        with eng.create_execution_context() as ctx:
            for n in (1, 3, 0, 1):
                feeds = {"input": held[:n]}
                got = ctx.execute(feeds)
                ours_ = [got[o.name] for o in model.graph.output]
                if not n:  # scikit-learn and onnxruntime refuse no texts
                    assert ours_[0].shape == (0,) and ours_[1].shape == (0, 2)
                    continue
                for k, (g, w) in enumerate(zip(ours_, ort(model, feeds), strict=True)):
                    same(g, w, f"output {k}")
                assert ours_[0].tolist() == pipe.predict(held[:n, 0]).tolist()
                np.testing.assert_allclose(ours_[1], pipe.predict_proba(held[:n, 0]),
                                           atol=1e-5)


def test_tokenizer_without_tokens_or_separators_fails_the_build() -> None:
    inputs = {"x": (STRING, S("a"))}
    model = one_node("Tokenizer", inputs, {"y": STRING}, opset=17, domain="com.microsoft",
                     mark=0, mincharnum=1, pad_value="#")
    with pytest.raises(MiniInferError, match="tokenexp or at least one separator"):
        mi.InferenceSession(model)


@pytest.mark.parametrize("kind, options", [
    ("tfidf", {"norm": None}), ("tfidf", {"norm": None, "ngram_range": (1, 2)}),
    ("count", {"ngram_range": (1, 2)}), ("tfidf", {"norm": None, "lowercase": False}),
])
def test_skl2onnx_text_vectorizers(kind: str, options: dict[str, Any]) -> None:
    """scikit-learn's TfidfVectorizer / CountVectorizer converted by skl2onnx (StringNormalizer,
    com.microsoft Tokenizer, TfIdfVectorizer): vs scikit-learn and onnxruntime."""
    pytest.importorskip("skl2onnx", reason="skl2onnx converts the vectorizer")
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    _re2()
    vec = (TfidfVectorizer if kind == "tfidf" else CountVectorizer)(**options).fit(DOCS)
    model = convert_sklearn(vec, initial_types=[("input", StringTensorType([None, 1]))])
    x = np.array([[q] for q in QUERIES + ["The cat, the DOG! stock?"]], dtype=object)
    got = ours(model, {"input": x})[0]
    np.testing.assert_allclose(got, vec.transform(x.ravel()).toarray(), rtol=1e-5, atol=1e-6)
    if any(n.op_type == "StringNormalizer" for n in model.graph.node):
        needs_locale("en_US.UTF-8")  # onnxruntime's StringNormalizer default
    same(got, ort(model, {"input": x})[0])



def test_skl2onnx_tfidf_pipeline_with_string_labels_and_zipmap() -> None:
    """A text classifier as users convert it: scikit-learn's Pipeline(TfidfVectorizer,
    LogisticRegression) through skl2onnx, ZipMap left in (string input, a label tensor and a
    list of dicts out): labels and probabilities vs scikit-learn and onnxruntime."""
    pytest.importorskip("skl2onnx", reason="skl2onnx converts the pipeline")
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    _re2()
    names = ["pets" if y == 0 else "money" for y in LABELS]
    pipe = Pipeline([("tfidf", TfidfVectorizer(ngram_range=(1, 2))),
                     ("clf", LogisticRegression())]).fit(DOCS, names)
    model = convert_sklearn(pipe, initial_types=[("input", StringTensorType([None, 1]))],
                            target_opset={"": 17, "ai.onnx.ml": 3})
    assert any(n.op_type == "ZipMap" for n in model.graph.node)
    x = np.array([[q] for q in QUERIES], dtype=object)
    labels, probs = ours(model, {"input": x})
    assert labels.tolist() == pipe.predict(x.ravel()).tolist()
    want = pipe.predict_proba(x.ravel())
    assert [sorted(row) for row in probs] == [sorted(pipe.classes_)] * len(QUERIES)
    got = np.array([[row[c] for c in pipe.classes_] for row in probs])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if any(n.op_type == "StringNormalizer" for n in model.graph.node):
        needs_locale("en_US.UTF-8")  # onnxruntime's StringNormalizer default
    ref_labels, ref_probs = ort(model, {"input": x})
    assert labels.tolist() == ref_labels.tolist()
    assert [sorted(row) for row in ref_probs] == [sorted(row) for row in probs]
    ref = np.array([[row[c] for c in pipe.classes_] for row in ref_probs])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)

# -- the other operators on strings ----------------------------------------------------------
WORDS = np.array([["héllo", "", "日本"], ["x", "Ω", "straße"]], dtype=object)


def _graph_case(case: str) -> tuple[onnx.ModelProto, dict[str, Any]]:
    make, vi = helper.make_node, helper.make_tensor_value_info
    const = numpy_helper.from_array
    x = vi("x", STRING, [2, 3])
    feeds: dict[str, Any] = {"x": WORDS}
    inits: list[Any] = []
    outs = [vi("y", STRING, None)]
    if case == "Identity":
        nodes = [make("Identity", ["x"], ["y"])]
    elif case == "Reshape":
        inits = [const(np.array([3, 2], np.int64), "shape")]
        nodes = [make("Reshape", ["x", "shape"], ["y"])]
    elif case == "Unsqueeze":
        inits = [const(np.array([0, 3], np.int64), "axes")]
        nodes = [make("Unsqueeze", ["x", "axes"], ["y"])]
    elif case == "Gather":
        inits = [const(np.array([2, 0, 2], np.int64), "idx")]
        nodes = [make("Gather", ["x", "idx"], ["y"], axis=1)]
    elif case == "Concat":
        inits = [const(S("α", "β", "").reshape(1, 3), "more")]
        nodes = [make("Concat", ["x", "more"], ["y"], axis=0)]
    elif case == "Where":
        inits = [const(np.array([True, False, True]), "c"), const(S("-"), "dash")]
        nodes = [make("Where", ["c", "x", "dash"], ["y"])]
    elif case == "Equal":
        inits = [const(S("x", "", "straße"), "row")]
        nodes = [make("Equal", ["x", "row"], ["y"])]
        outs = [vi("y", BOOL, None)]
    elif case == "Constant":
        nodes = [make("Constant", [], ["c"], value_strings=["a", "ß", ""]),
                 make("Constant", [], ["e"], value_string="✓"),
                 make("Constant", [], ["d"], value=const(S("t", "ü", "v"), "d")),
                 make("StringConcat", ["c", "d"], ["cd0"]),
                 make("StringConcat", ["cd0", "e"], ["cd"]),
                 make("StringConcat", ["x", "cd"], ["y"])]
    elif case == "Cast":
        x = vi("x", FLOAT, [6])
        feeds = {"x": np.array([1.5, 0.1, -0.0, np.inf, np.nan, 123456789.0], np.float32)}
        nodes = [make("Cast", ["x"], ["s"], to=STRING), make("Cast", ["s"], ["f"], to=FLOAT),
                 make("Cast", ["x"], ["i"], to=INT64), make("Cast", ["i"], ["y"], to=STRING)]
        outs = [vi("s", STRING, None), vi("f", FLOAT, None), vi("y", STRING, None)]
    elif case == "CastParse":
        x = vi("x", STRING, [7])
        feeds = {"x": S("1.5", " 2", "1e3", "-0.25", "INF", "-inf", "NaN")}
        nodes = [make("Cast", ["x"], ["y"], to=FLOAT)]
        outs = [vi("y", FLOAT, None)]
    else:  # pragma: no cover
        raise AssertionError(case)
    graph = helper.make_graph(nodes, case, [x], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model, feeds


@pytest.mark.parametrize("case", ["Identity", "Reshape", "Unsqueeze", "Gather", "Concat",
                                  "Where", "Equal", "Constant", "Cast", "CastParse"])
def test_other_operators_on_strings_match_onnxruntime(case: str) -> None:
    model, feeds = _graph_case(case)
    got = check(model, feeds)
    if case == "Cast":
        assert got[0].tolist() == ["1.5", "0.1", "-0", "INF", "NaN", "1.2345679e+08"]


# -- engine files ----------------------------------------------------------------------------
def _vocabulary_model() -> onnx.ModelProto:
    """Strings in, three outputs read from string constants the builder cannot fold."""
    make, vi = helper.make_node, helper.make_tensor_value_info
    vocab = S("héllo", "", "日本語", "a" * 300, "straße", "✓")
    nodes = [make("Equal", ["x", "vocab"], ["hit"]),
             make("StringConcat", ["x", "suffix"], ["tagged"]),
             make("Where", ["hit", "vocab", "miss"], ["kept"])]
    graph = helper.make_graph(
        nodes, "vocabulary", [vi("x", STRING, [6])],
        [vi("hit", BOOL, None), vi("tagged", STRING, None), vi("kept", STRING, None)],
        [numpy_helper.from_array(vocab, "vocab"),
         numpy_helper.from_array(S("·ok", "", "✗", "!", "", "🙂"), "suffix"),
         numpy_helper.from_array(np.array("<miss>", dtype=object), "miss")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model


QUERY = S("héllo", "x", "日本語", "a" * 300, "strasse", "✓")

_LOAD_AND_RUN = """
import json, sys
import numpy as np
import mini_infer_core as mi
sess = mi.InferenceSession(sys.argv[1])
x = np.array(json.loads(sys.argv[2]), dtype=object)
print(json.dumps([o.tolist() for o in sess.run(None, {"x": x})]))
"""


def test_engine_with_string_constants_runs_in_another_process(tmp_path: Path) -> None:
    model = _vocabulary_model()
    path = tmp_path / "vocab.engine"
    mi.InferenceSession(model).save_engine(path)
    header = read_engine_file(path).header
    strings = [c for c in header["constants"] if c.get("encoding")]
    assert {c["name"] for c in strings} == {"vocab", "suffix", "miss"}
    assert all(c["encoding"] == engine_format.STRING_ENCODING and c["offset"] % 64 == 0
               for c in strings)
    raw = path.read_bytes()
    assert b"\x80\x04\x95" not in raw and b"pickle" not in raw
    proc = subprocess.run([sys.executable, "-c", _LOAD_AND_RUN, str(path),
                           json.dumps(QUERY.tolist())], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    want = ort(model, {"x": QUERY})
    assert got == [w.tolist() for w in want]


def _rewrite_constant(path: Path, name: str, patch: Any) -> None:
    """Change the bytes of constant ``name`` with ``patch(bytearray)`` and make the
    checksum right again, so that only the string section's own checks can object."""
    ef = read_engine_file(path)
    entry = next(c for c in ef.header["constants"] if c["name"] == name)
    raw = bytearray(path.read_bytes())
    data_at = len(raw) - len(ef.data)
    start, end = data_at + entry["offset"], data_at + entry["offset"] + entry["nbytes"]
    del ef
    blob = bytearray(raw[start:end])
    patch(blob)
    raw[start:end] = blob
    raw[48:80] = engine_format.checksum(bytes(raw[:48]), [memoryview(raw)[128:]])
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("corruption", ["offset", "utf8", "first"])
def test_corrupt_string_section_names_the_tensor(tmp_path: Path, corruption: str) -> None:
    path = tmp_path / "vocab.engine"
    mi.InferenceSession(_vocabulary_model()).save_engine(path)

    def patch(blob: bytearray) -> None:
        table = 7 * 8  # six elements: seven offsets
        if corruption == "offset":
            blob[8:16] = (10**6).to_bytes(8, "little")
        elif corruption == "utf8":
            blob[table] = 0xFF  # "héllo" starts with an invalid byte
        else:
            blob[0:8] = (1).to_bytes(8, "little")

    _rewrite_constant(path, "vocab", patch)
    with pytest.raises(EngineFormatError, match="string constant 'vocab' is corrupt"):
        mi.InferenceSession(str(path))


@pytest.mark.parametrize("arr", [S("a", "ü", ""), empty(0), empty(3, 0),
                                 np.array("✓", dtype=object),
                                 np.array([["x", ""], ["日本", "\u0000z"]], dtype=object)])
def test_string_encoding_round_trips(arr: Any) -> None:
    raw = encode_strings("t", arr)
    back = decode_strings("t", memoryview(raw), list(arr.shape), "file")
    assert back.shape == arr.shape and back.tolist() == arr.tolist()
    assert not back.flags.writeable


@pytest.mark.parametrize("raw, shape, why", [
    (b"", [2], "cannot hold the offsets"),
    ((0).to_bytes(8, "little") + (5).to_bytes(8, "little") + b"abc", [1], "offsets"),
    ((0).to_bytes(8, "little") + (2).to_bytes(8, "little") + (1).to_bytes(8, "little")
     + b"ab", [2], "offsets"),
    ((0).to_bytes(8, "little") + (1).to_bytes(8, "little") + b"\xc3", [1], "UTF-8"),
])
def test_corrupt_string_sections_are_refused(raw: bytes, shape: list[int], why: str) -> None:
    with pytest.raises(EngineFormatError, match=rf"'t' is corrupt.*{why}"):
        decode_strings("t", memoryview(raw), shape, "file")


def test_non_string_objects_are_refused_when_written() -> None:
    with pytest.raises(EngineFormatError, match=r"'odd'.*element 1 is a int"):
        encode_strings("odd", np.array(["a", 3], dtype=object))


# -- text classifiers ------------------------------------------------------------------------
DOCS = ["the cat sat on the mat", "dogs bark at the cat", "a cat and a dog play",
        "the dog chased the cat", "stock prices rose today", "markets fell sharply today",
        "investors sold stock", "prices of bonds rose", "my cat likes the dog",
        "the market for stock rose"]
LABELS = [0, 0, 0, 0, 1, 1, 1, 1, 0, 1]
QUERIES = ["The Cat and the dog", "stock markets ROSE", "", "unknown words only",
           "cat stock cat stock dog", "the  cat"]


def _tfidf_classifier_model(nodes: list[onnx.NodeProto], clf: Any) -> onnx.ModelProto:
    """The graph of ``nodes`` from the string tensor ``docs`` to the probability ``p1``, with the
    logistic regression's coefficients ``coef`` and ``bias`` as initializers (opset 20)."""
    vi, const = helper.make_tensor_value_info, numpy_helper.from_array
    graph = helper.make_graph(
        nodes, "tfidf_classifier", [vi("docs", STRING, [None])], [vi("p1", FLOAT, None)],
        [const(clf.coef_.T.astype(np.float32), "coef"),
         const(clf.intercept_.astype(np.float32), "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model


def test_tfidf_text_classifier_built_from_scikit_learn() -> None:
    """Lower-case, split on spaces, TF-IDF of unigrams and bigrams, L2 norm, a logistic
    regression: mini-infer vs onnxruntime vs scikit-learn's own predict_proba."""
    sklearn = pytest.importorskip("sklearn", reason="scikit-learn builds the classifier")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    assert sklearn
    vec = TfidfVectorizer(tokenizer=lambda s: s.split(" "), token_pattern=None,
                          ngram_range=(1, 2))
    clf = LogisticRegression().fit(vec.fit_transform(DOCS), LABELS)
    grams = sorted(vec.vocabulary_, key=lambda g: (len(g.split(" ")), vec.vocabulary_[g]))
    uni = [g for g in grams if " " not in g]
    bi = [g for g in grams if " " in g]
    pool = uni + [w for g in bi for w in g.split(" ")]
    indexes = [vec.vocabulary_[g] for g in uni + bi]
    make = helper.make_node
    nodes = [
        make("StringNormalizer", ["docs"], ["lower"], case_change_action="LOWER"),
        make("StringSplit", ["lower"], ["tokens", "n"], delimiter=" "),
        make("TfIdfVectorizer", ["tokens"], ["tf"], mode="TFIDF", min_gram_length=1,
             max_gram_length=2, max_skip_count=0, ngram_counts=[0, len(uni)],
             ngram_indexes=indexes, pool_strings=pool,
             weights=[float(vec.idf_[i]) for i in indexes]),
        make("LpNormalization", ["tf"], ["unit"], axis=1, p=2),
        make("MatMul", ["unit", "coef"], ["logit"]),
        make("Add", ["logit", "bias"], ["score"]),
        make("Sigmoid", ["score"], ["p1"]),
    ]
    model = _tfidf_classifier_model(nodes, clf)
    docs = S(*QUERIES)
    got = ours(model, {"docs": docs})[0]
    want = clf.predict_proba(vec.transform([q.lower() for q in QUERIES]))[:, 1:]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    needs_locale("en_US.UTF-8")  # onnxruntime's StringNormalizer default
    same(got, ort(model, {"docs": docs})[0])


def test_tfidf_text_classifier_engine_without_locale_dependence(tmp_path: Path) -> None:
    """The same kind of classifier without StringNormalizer, built once into an engine file
    and compared with scikit-learn (no locale needed)."""
    pytest.importorskip("sklearn", reason="scikit-learn builds the classifier")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    docs = [d.lower() for d in DOCS]
    vec = TfidfVectorizer(tokenizer=lambda s: s.split(" "), token_pattern=None,
                          lowercase=False)
    clf = LogisticRegression().fit(vec.fit_transform(docs), LABELS)
    words = sorted(vec.vocabulary_, key=vec.vocabulary_.__getitem__)
    make = helper.make_node
    nodes = [
        make("StringSplit", ["docs"], ["tokens", "n"], delimiter=" "),
        make("TfIdfVectorizer", ["tokens"], ["tf"], mode="TFIDF", min_gram_length=1,
             max_gram_length=1, max_skip_count=0, ngram_counts=[0],
             ngram_indexes=list(range(len(words))), pool_strings=words,
             weights=vec.idf_.astype(float).tolist()),
        make("LpNormalization", ["tf"], ["unit"], axis=1, p=2),
        make("Gemm", ["unit", "coef", "bias"], ["score"]),
        make("Sigmoid", ["score"], ["p1"]),
    ]
    model = _tfidf_classifier_model(nodes, clf)
    path = tmp_path / "classifier.engine"
    mi.InferenceSession(model).save_engine(path)
    queries = [q.lower() for q in QUERIES]
    got = mi.InferenceSession(str(path)).run(None, {"docs": S(*queries)})[0]
    want = clf.predict_proba(vec.transform(queries))[:, 1:]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    same(got, ort(model, {"docs": S(*queries)})[0])


def _missing_plugins(model: onnx.ModelProto) -> list[str]:
    from mini_infer_core.registry import get_plugin_registry

    registry = get_plugin_registry()
    return sorted({f"{n.domain or 'ai.onnx'}::{n.op_type}" for n in model.graph.node
                   if not registry.candidates(n.domain, n.op_type, "cpu")})


def test_skl2onnx_tfidf_logistic_regression_pipeline() -> None:
    """scikit-learn's TfidfVectorizer + LogisticRegression converted by skl2onnx, on string
    input, vs onnxruntime and scikit-learn. It classifies with ai.onnx.ml operators: the test
    runs where plugins for them are installed."""
    pytest.importorskip("sklearn", reason="scikit-learn builds the classifier")
    pytest.importorskip("skl2onnx", reason="skl2onnx converts the pipeline")
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    pipe = Pipeline([("tfidf", TfidfVectorizer()), ("clf", LogisticRegression())])
    pipe.fit(DOCS, LABELS)
    model = convert_sklearn(pipe, initial_types=[("input", StringTensorType([None, 1]))],
                            options={LogisticRegression: {"zipmap": False}})
    missing = _missing_plugins(model)
    if missing:
        pytest.skip(f"no installed plugin runs {', '.join(missing)} (ai.onnx.ml: install "
                    "the mini-infer-ml-plugins wheel)")
    _re2()
    x = np.array([[q] for q in QUERIES], dtype=object)
    got = ours(model, {"input": x})
    np.testing.assert_array_equal(got[0], pipe.predict(x.ravel()))
    np.testing.assert_allclose(got[1], pipe.predict_proba(x.ravel()), rtol=1e-4, atol=1e-5)
    needs_locale("en_US.UTF-8")  # onnxruntime's StringNormalizer default
    check(model, {"input": x})
