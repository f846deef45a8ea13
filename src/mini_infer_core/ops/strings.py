"""Strings: StringNormalizer, StringSplit, StringConcat, RegexFullMatch and TfIdfVectorizer,
and onnxruntime's ``com.microsoft`` Tokenizer (what skl2onnx converts text vectorizers with).

String tensors are NumPy object arrays of ``str``. What the kernels of every device share
lives here: the attribute checks (made when the engine is built, so that a malformed model
fails there, naming the node) and the output shapes:

- StringNormalizer keeps ``[C]`` / ``[1, C]``; with stopwords the count of kept elements is
  known only at run time (the node is then data-dependent), at least 1 (a lone ``""`` when
  every element is dropped).
- StringSplit is always data-dependent: its last dimension is the largest number of
  substrings of any element.
- TfIdfVectorizer's n-gram pool is parsed once (:class:`NgramPool`), with onnxruntime's
  checks.
- Tokenizer adds an axis of tokens, as many as the most any element has (data-dependent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PluginInterfaceError
from ..plugin import REQUIRED, DataType, DimExpr, DimsExprs, broadcast_dims
from ..plugin.shapes import Shapes
from ._schema import BroadcastOp, Op, UnaryOp

__all__ = ["StringNormalizer", "StringSplit", "StringConcat", "RegexFullMatch",
           "TfIdfVectorizer", "Tokenizer"]

_CASE_ACTIONS = ("NONE", "LOWER", "UPPER")
_TFIDF_MODES = ("TF", "IDF", "TFIDF")


def _strings_only(op: str, input_types: Sequence[DataType]) -> None:
    bad = [t.name for t in input_types if t is not DataType.STRING]
    if bad:
        raise PluginInterfaceError(f"{op}: inputs must be strings, got {', '.join(bad)}")


class StringNormalizer(Op):
    """Drop the elements equal to a stopword (case-insensitively unless
    ``is_case_sensitive``), then change the case of the rest. Input ``[C]`` or ``[1, C]``."""

    def setup(self) -> None:
        action = self.attrs["case_change_action"]
        if action not in _CASE_ACTIONS:
            raise PluginInterfaceError(
                f"StringNormalizer: case_change_action {action!r} is not one of "
                f"{', '.join(_CASE_ACTIONS)}")
        self.stopwords: tuple[str, ...] = tuple(self.attrs["stopwords"] or ())

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        lead = dims[0] if len(dims) == 2 else None
        if len(dims) not in (1, 2) or (lead is not None and lead.is_constant()
                                       and lead.get_constant_value() != 1):
            raise PluginInterfaceError(
                "StringNormalizer: the input must be [C] or [1, C], got a shape of "
                f"[{', '.join(map(str, dims))}]")
        if not self.runtime_shape():
            return [dims]
        kept = self.dynamic_dim("kept")
        return [[kept] if len(dims) == 1 else [DimExpr.const(1), kept]]

    def runtime_shape(self) -> bool:
        """With stopwords, how many elements remain is known only at run time."""
        return self.mark_data_dependent(bool(self.stopwords))

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        _strings_only("StringNormalizer", input_types)
        return [DataType.STRING]


class StringSplit(Op):
    """Split every element on ``delimiter`` (none or ``""``: runs of spaces, ends trimmed), at
    most ``maxsplit`` times: the substrings padded with ``""`` along a new last axis, and
    how many each element gave (INT64)."""

    data_dependent = True
    n_outputs = 2

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        return [dims + [self.dynamic_dim("substrings")], dims]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        _strings_only("StringSplit", input_types)
        return [DataType.STRING, DataType.INT64]


class StringConcat(BroadcastOp):
    """``X + Y`` elementwise, broadcast together."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [broadcast_dims(*inputs[:2])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        _strings_only("StringConcat", input_types)
        return [DataType.STRING]


class RegexFullMatch(UnaryOp):
    """Whether each element matches ``pattern`` (RE2 syntax) as a whole: a BOOL tensor."""

    def setup(self) -> None:
        if not self.attrs.get("pattern"):
            raise PluginInterfaceError("RegexFullMatch: the pattern attribute is required")

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        _strings_only("RegexFullMatch", input_types)
        return [DataType.BOOL]


@dataclass(frozen=True)
class NgramPool:
    """TfIdfVectorizer's pool: each n-gram (a tuple of tokens) of a length between
    ``min_gram_length`` and ``max_gram_length`` mapped to its number in the pool (n-grams
    of other lengths are numbered too, and never counted)."""

    ids: dict[tuple[Any, ...], int]
    count: int  # n-grams in the pool, of every length

    @classmethod
    def parse(cls, attrs: dict[str, Any]) -> NgramPool:
        def bad(why: str) -> PluginInterfaceError:
            return PluginInterfaceError(f"TfIdfVectorizer: {why}")

        strings, ints = attrs.get("pool_strings") or (), attrs.get("pool_int64s") or ()
        if bool(strings) == bool(ints):
            raise bad("exactly one of pool_strings and pool_int64s must be given, non-empty")
        pool: tuple[Any, ...] = tuple(strings) if strings else tuple(int(v) for v in ints)
        counts = [int(v) for v in attrs["ngram_counts"]]
        lo, hi = int(attrs["min_gram_length"]), int(attrs["max_gram_length"])
        if not counts:
            raise bad("ngram_counts must not be empty")
        if not 1 <= lo <= hi <= len(counts):
            raise bad(f"need 1 <= min_gram_length ({lo}) <= max_gram_length ({hi}) <= "
                      f"len(ngram_counts) ({len(counts)})")
        ids: dict[tuple[Any, ...], int] = {}
        number = 0
        for k, start in enumerate(counts):
            size = k + 1
            end = counts[k + 1] if k + 1 < len(counts) else len(pool)
            if not 0 <= start <= end <= len(pool) or (end - start) % size:
                raise bad(f"ngram_counts {counts} do not cut the pool of {len(pool)} items "
                          f"into whole {size}-grams")
            for at in range(start, end, size):
                gram = pool[at:at + size]
                if lo <= size <= hi:
                    if gram in ids:
                        raise bad(f"the {size}-gram {list(gram)} is twice in the pool")
                    ids[gram] = number
                number += 1
        return cls(ids, number)


class TfIdfVectorizer(Op):
    """Counts of the pool's n-grams (with up to ``max_skip_count`` tokens skipped between
    items) in a ``[C]`` or ``[B, C]`` input of strings or integers, weighted by ``mode``:
    FLOAT ``[max(ngram_indexes) + 1]`` or ``[B, ...]``."""

    def setup(self) -> None:
        a = self.attrs
        if a["mode"] not in _TFIDF_MODES:
            raise PluginInterfaceError(f"TfIdfVectorizer: mode {a['mode']!r} is not one of "
                                       f"{', '.join(_TFIDF_MODES)}")
        if int(a["max_skip_count"]) < 0:
            raise PluginInterfaceError("TfIdfVectorizer: max_skip_count must be >= 0")
        self.pool = NgramPool.parse(a)
        self.indexes = tuple(int(i) for i in a["ngram_indexes"])
        if len(self.indexes) < self.pool.count or min(self.indexes, default=-1) < 0:
            raise PluginInterfaceError(
                f"TfIdfVectorizer: ngram_indexes needs one index >= 0 for each of the pool's "
                f"{self.pool.count} n-grams, got {len(self.indexes)}")
        self.weights = tuple(float(w) for w in a["weights"] or ())
        if self.weights and len(self.weights) != len(self.indexes):
            raise PluginInterfaceError(
                f"TfIdfVectorizer: {len(self.weights)} weights for {len(self.indexes)} "
                "ngram_indexes (one weight per n-gram)")
        self.width = max(self.indexes) + 1

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        if len(dims) > 2:
            raise PluginInterfaceError(
                f"TfIdfVectorizer: the input must be [C] or [B, C], got rank {len(dims)}")
        return [dims[:1] + [DimExpr.const(self.width)] if len(dims) == 2 else [self.width]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        want = (DataType.STRING,) if self.attrs.get("pool_strings") else (
            DataType.INT32, DataType.INT64)
        if input_types[0] not in want:
            kind = "pool_strings" if want[0] is DataType.STRING else "pool_int64s"
            raise PluginInterfaceError(
                f"TfIdfVectorizer: a model with {kind} needs a "
                f"{' or '.join(t.name for t in want)} input, got {input_types[0].name}")
        return [DataType.FLOAT]


class Tokenizer(Op):
    """onnxruntime's ``com.microsoft`` Tokenizer (opset 1): each element of a ``[C]`` or
    ``[N, C]`` string tensor cut into tokens -- the text between matches of the
    ``separators`` (RE2 expressions, the first listed winning where two match at one place;
    ``[""]`` cuts into characters), or without separators the matches of ``tokenexp`` --
    keeping those of at least ``mincharnum`` characters, between ``\\x02`` and ``\\x03``
    when ``mark``, padded with ``pad_value``: a new last axis as long as the most tokens of
    any element (0 when no element has one)."""

    domain = "com.microsoft"
    data_dependent = True
    attributes = {"mark": REQUIRED, "pad_value": REQUIRED, "mincharnum": REQUIRED,
                  "separators": None, "tokenexp": None}

    def setup(self) -> None:
        self.separators: tuple[str, ...] = tuple(self.attrs["separators"] or ())
        if not self.attrs["tokenexp"] and not self.separators:
            raise PluginInterfaceError("Tokenizer: give tokenexp or at least one separator")
        if self.separators == ("",) and int(self.attrs["mincharnum"]) > 1:
            raise PluginInterfaceError(
                "Tokenizer: a separator \"\" cuts into characters; mincharnum must then be 1")
        if "" in self.separators and len(self.separators) > 1:
            raise PluginInterfaceError("Tokenizer: an empty separator must be the only one")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        if len(dims) not in (1, 2):
            raise PluginInterfaceError(
                f"Tokenizer: the input must be [C] or [N, C], got rank {len(dims)}")
        return [dims + [self.dynamic_dim("tokens")]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        _strings_only("Tokenizer", input_types)
        return [DataType.STRING]
