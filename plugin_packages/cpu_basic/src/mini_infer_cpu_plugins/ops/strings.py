"""Strings: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer and
onnxruntime's com.microsoft Tokenizer (schemas in :mod:`mini_infer_core.ops.strings`). String
tensors are object arrays of ``str``.

Where onnxruntime and onnx's reference implementation disagree, these kernels do as
onnxruntime does (the reference is looser than the specification in places):

- StringNormalizer drops the elements *equal* to a stopword (the reference drops words
  inside elements, drops empty strings and strips accents); the case changes character by
  character with Unicode's simple case mapping (``"ß"`` stays ``"ß"`` in upper case, as C's
  ``towupper``), or ASCII only for the plain ``C`` / ``POSIX`` locales (not ``C.UTF-8``). No
  locale needs to be installed: every other locale name gets the Unicode mapping (no
  Turkish dotless i).
- StringSplit without a delimiter splits on runs of spaces (``" "`` only, as onnxruntime)
  and trims them at both ends; an empty string gives no substrings.
- RegexFullMatch uses RE2 itself (the ``google-re2`` package: ``pip install
  "mini-infer-cpu-plugins[regex]"``), so that a pattern means what it means in onnxruntime;
  Python's ``re`` differs from RE2 silently in places (``\\d`` matches other digits,
  ``[[:alpha:]]``, ``a{,3}``) and is not used.
- TfIdfVectorizer weights the count of the i-th n-gram of the pool by ``weights[i]`` (as
  onnxruntime 1.20+; the reference reads the weight of the output position).
- Tokenizer (no reference in onnx) runs its expressions with RE2 as RegexFullMatch does. An
  input without elements gives an axis of 0 tokens (onnxruntime drops the axis then).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import strings as schema
from mini_infer_core.plugin import DataType, DimExpr, DimsExprs, Fusion
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import emit

__all__ = ["StringNormalizer", "StringSplit", "StringConcat", "RegexFullMatch",
           "TfIdfVectorizer", "Tokenizer"]

Array = NDArray[Any]

_DEFAULT_LOCALE = "en_US.UTF-8"  # onnxruntime's default on Linux and macOS
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


@functools.cache
def _lower_char(c: str) -> str:
    """Unicode's simple lowercase mapping (one character to one, as ``towlower``)."""
    full = c.lower()
    return full if len(full) == 1 else full[0]  # only U+0130 lowers to two: "i" + dot


@functools.cache
def _upper_char(c: str) -> str:
    """Unicode's simple uppercase mapping: the full mapping where it is one character, else
    the titlecase one where that is (Greek with ypogegrammeni), else unchanged (``ß``)."""
    full = c.upper()
    if len(full) == 1:
        return full
    title = c.title()
    return title if len(title) == 1 else c


def _case_mapper(action: str, locale: str) -> Any:
    """``str -> str`` changing the case as ``action`` says (None for NONE)."""
    if action == "NONE":
        return None
    base, _, codeset = locale.partition(".")
    ascii_only = base.upper() in ("C", "POSIX") and codeset.upper().replace("-", "") != "UTF8"
    table = _ASCII_LOWER if action == "LOWER" else _ASCII_UPPER
    per_char = _lower_char if action == "LOWER" else _upper_char

    ascii_case = str.lower if action == "LOWER" else str.upper

    def change(s: str) -> str:
        if s.isascii():  # str.lower/upper change only A-Z/a-z in ASCII text: the table's map
            return ascii_case(s)
        if ascii_only:
            return s.translate(table)
        return "".join(map(per_char, s))
    return change


class StringNormalizer(CpuPlugin, schema.StringNormalizer):
    def setup(self) -> None:
        super().setup()
        locale = self.attrs["locale"] or _DEFAULT_LOCALE
        self.change = _case_mapper(self.attrs["case_change_action"], locale)
        if self.attrs["is_case_sensitive"]:
            self.fold = None
            self.stops = frozenset(self.stopwords)
        else:  # onnxruntime compares in lower case
            self.fold = _case_mapper("LOWER", locale)
            self.stops = frozenset(map(self.fold, self.stopwords))

    def compute(self, x: Array, *, out: Array | None = None, **_: Any) -> Any:
        items = x.reshape(-1).tolist()
        if self.stops:
            key = self.fold or (lambda s: s)
            items = [s for s in items if key(s) not in self.stops] or [""]
        if self.change is not None:
            items = list(map(self.change, items))
        if out is not None and out.flags.c_contiguous and len(items) == out.size:
            out.reshape(-1)[:] = items  # a planned step: straight into its output
            return None
        y = np.empty(len(items), dtype=object)
        y[:] = items
        return emit(y.reshape((1, -1) if x.ndim == 2 else (-1,)), out)


def _split(s: str, delimiter: str, limit: int) -> list[str]:
    """``s`` split at most ``limit`` times (-1: no limit), as onnxruntime splits it."""
    if delimiter:
        return s.split(delimiter, limit) if s else []
    s = s.strip(" ")
    if not s:
        return []
    return [s] if limit == 0 else re.split(" +", s, maxsplit=max(limit, 0))


class StringSplit(CpuPlugin, schema.StringSplit):
    def compute(self, x: Array, *, out: Any = None, delimiter: str | None,
                maxsplit: int | None) -> Any:
        limit = -1 if maxsplit is None or maxsplit < 0 else int(maxsplit)
        parts = [_split(s, delimiter or "", limit) for s in x.reshape(-1).tolist()]
        counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
        width = int(counts.max(initial=0))
        y = np.full((len(parts), width), "", dtype=object)
        for k, p in enumerate(parts):
            y[k, :len(p)] = p
        return emit((y.reshape(*x.shape, width), counts), out)


class StringConcat(CpuPlugin, schema.StringConcat):
    def compute(self, x: Array, y: Array, *, out: Array) -> None:
        np.add(x.astype(object), y.astype(object), out=out)


def _re2(op: str, pattern: str) -> Any:
    """``pattern`` compiled by RE2 (a build-time error naming ``op`` if it cannot be)."""
    try:
        import re2
    except ImportError as exc:
        raise PluginInterfaceError(
            f"{op} needs RE2 (onnx specifies RE2 syntax, which Python's re does not "
            "follow): pip install \"mini-infer-cpu-plugins[regex]\" (the google-re2 "
            "package)") from exc
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise PluginInterfaceError(
            f"{op}: pattern {pattern!r} is not a valid RE2 expression: {exc}") from exc


class RegexFullMatch(CpuPlugin, schema.RegexFullMatch):
    def setup(self) -> None:
        super().setup()
        self.regex = _re2("RegexFullMatch", self.attrs["pattern"])

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        match = self.regex.fullmatch
        out[...] = np.fromiter((match(s) is not None for s in x.reshape(-1).tolist()),
                               dtype=bool, count=x.size).reshape(x.shape)


#: up to how many tokens TfIdfVectorizer counts a vocabulary in a Python loop (beyond: NumPy)
_FEW_TOKENS = 48


class TfIdfVectorizer(CpuPlugin, schema.TfIdfVectorizer):
    """The pool's tokens are numbered from 1 (0: a token not in the pool); an n-gram is then
    one integer, its tokens' numbers as digits in base (tokens + 1), looked up in its
    length's sorted keys for every window of the input at every skip -- NumPy over all rows
    at once. A pool too large for 63-bit keys is looked up as tuples in a dict instead.
    N-grams sharing an output index add up."""

    def setup(self) -> None:
        super().setup()
        grams = self.pool.ids
        ordered = sorted({t for gram in grams for t in gram})  # integers: searchsorted
        tokens = {t: k + 1 for k, t in enumerate(ordered)}
        self.tokens = tokens
        self.base = len(tokens) + 1
        self.lengths = sorted({len(g) for g in grams})
        self.packed = self.base ** max(self.lengths, default=1) < 2**63
        self.tables: dict[int, tuple[Array, Array]] = {}
        self.tuples: dict[tuple[int, ...], int] = {}
        if self.packed:
            for n in self.lengths:
                keyed = sorted((self._key(g), i) for g, i in grams.items() if len(g) == n)
                self.tables[n] = (np.array([k for k, _ in keyed], np.int64),
                                  np.array([i for _, i in keyed], np.int64))
        else:
            self.tuples = {tuple(tokens[t] for t in g): i for g, i in grams.items()}
        n = self.pool.count
        self.weight = np.array(self.weights[:n] or [1.0] * n, np.float32)
        self.dest = np.array(self.indexes[:n], np.int64)
        self.int_tokens = None if isinstance(next(iter(ordered), ""), str) else \
            np.array(ordered, np.int64)
        #: a pool of single string tokens, each with an output index of its own (a text
        #: model's vocabulary): token -> (output index, weight), counted in one pass over
        #: the rows (the NumPy windows cost more than a few rows' tokens)
        self.unigram_index: dict[str, int] | None = None
        if self.lengths == [1] and self.int_tokens is None and n and \
                len(set(self.dest.tolist())) == n:
            self.unigram_index = {g[0]: int(self.dest[i]) for g, i in grams.items() if i < n}
            #: each output index's weight (float64 of the float32 weight)
            self.unigram_weight = np.zeros(self.width, np.float64)
            self.unigram_weight[self.dest] = self.weight
            #: the same as Python floats (the few-token path sums them without NumPy)
            self.unigram_weights: list[float] = self.unigram_weight.tolist()

    def _key(self, gram: tuple[Any, ...]) -> int:
        key = 0
        for t in gram:
            key = key * self.base + self.tokens[t]
        return key

    def numbered(self, x: Array) -> Array:
        """Each token's number (0: not in the pool), int64 of x's shape."""
        if self.int_tokens is None:
            get = self.tokens.get
            return np.fromiter((get(t, 0) for t in x.reshape(-1).tolist()), np.int64,
                               count=x.size).reshape(x.shape)
        keys = self.int_tokens
        flat = x.astype(np.int64)
        at = np.minimum(np.searchsorted(keys, flat), len(keys) - 1)
        return np.where(keys[at] == flat, at + 1, 0)

    def counts(self, ids: Array) -> Array:
        """How often each n-gram of the pool occurs in each row: int64 [rows, n-grams].
        Unigrams are counted once; longer n-grams at every skip up to max_skip_count."""
        rows, width = ids.shape
        counts = np.zeros((rows, self.pool.count), np.int64)
        row = np.arange(rows)[:, None]
        skips = int(self.attrs["max_skip_count"]) + 1
        for n in self.lengths:
            for d in range(1, 2 if n == 1 else skips + 1):
                span = (n - 1) * d
                if span >= width:
                    break
                windows = [ids[:, k * d: width - span + k * d] for k in range(n)]
                if self.packed:
                    keys = np.zeros_like(windows[0])
                    for w in windows:
                        keys = keys * self.base + w
                    table, gram_ids = self.tables[n]
                    at = np.minimum(np.searchsorted(table, keys), len(table) - 1)
                    hit = table[at] == keys
                    np.add.at(counts, (np.broadcast_to(row, hit.shape)[hit],
                                       gram_ids[at[hit]]), 1)
                    continue
                stacked = np.stack(windows, -1).tolist()
                for r, grams in enumerate(stacked):
                    for gram in grams:
                        found = self.tuples.get(tuple(gram))
                        if found is not None:
                            counts[r, found] += 1
        return counts

    def compute(self, x: Array, *, out: Array, mode: str, **_: Any) -> None:
        rows = x.reshape(1, -1) if x.ndim < 2 else x
        if self.unigram_index is not None and mode in ("TF", "TFIDF") and rows.dtype == object:
            self._unigram_counts(rows, out, mode == "TFIDF")
            return
        counts = self.counts(self.numbered(rows))
        if mode == "TF":
            values = counts.astype(np.float32)
        elif mode == "IDF":
            values = (counts > 0).astype(np.float32) * self.weight
        else:
            values = counts.astype(np.float32) * self.weight
        y = np.zeros((rows.shape[0], self.width), np.float32)
        np.add.at(y.T, self.dest, values.T)  # n-grams sharing an output index add up
        out[...] = y.reshape(out.shape)


    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """``compute`` bound to the step's arrays (it keeps nothing tied to them): a text
        model's one-row step pays no ``enqueue`` on top of its counting."""
        if workspace is not None or len(inputs) != 1:
            return None
        return functools.partial(self.compute, inputs[0], out=outputs[0],
                                 mode=self.attrs["mode"])

    def _unigram_counts(self, rows: Array, out: Array, weighted: bool) -> None:
        """TF (or TF x weight) of a pool of single tokens with distinct output indexes:
        each token's output index looked up in one C-level pass (``map`` of ``dict.get``;
        -1 for a token not in the pool), its weight gathered by that index, summed by
        ``np.bincount`` (in float64: k times a float32 weight is exact there, so the one
        rounding to float32 gives what count x weight in float32 gives)."""
        index, width = self.unigram_index, self.width
        assert index is not None
        n_rows, cols = rows.shape
        flat = rows.reshape(-1).tolist()
        if len(flat) <= _FEW_TOKENS and out.flags.c_contiguous:  # a few rows' tokens (one
            # request's text): summed in Python floats (float64, in token order, as bincount
            # sums), written into the zeroed output: two NumPy calls, not five
            sums: dict[int, float] = {}
            weight_of = self.unigram_weights
            for k, token in enumerate(flat):
                d = index.get(token, -1)
                if d >= 0:
                    at_ = k // cols * width + d
                    sums[at_] = sums.get(at_, 0.0) + (weight_of[d] if weighted else 1.0)
            dst = out.reshape(-1)
            dst.fill(0)
            for at_, value in sums.items():
                dst[at_] = value
            return
        if len(flat) <= _FEW_TOKENS:  # a few rows' tokens: Python costs less than NumPy calls
            at, weights, weight = [], [], self.unigram_weight
            for k, token in enumerate(flat):
                d = index.get(token, -1)
                if d >= 0:
                    at.append(k // cols * width + d)
                    weights.append(weight[d])
            y = np.bincount(np.asarray(at, np.int64), weights if weighted else None,
                            minlength=n_rows * width)
            np.copyto(out, y.reshape(out.shape), casting="unsafe")
            return
        dest = np.fromiter(map(index.get, flat, itertools.repeat(-1)), np.int64,
                           count=len(flat))
        hit = dest >= 0
        found = dest[hit]
        at = found + (np.flatnonzero(hit) // max(cols, 1)) * width
        y = np.bincount(at, self.unigram_weight[found] if weighted else None,
                        minlength=n_rows * width)
        np.copyto(out, y.reshape(out.shape), casting="unsafe")


#: a pattern that means the same to RE2 and to Python's re: one bracketed class of ASCII
#: letters, digits and underscores (single characters or ranges), repeated with +
_ONE_ASCII_CLASS = re.compile(r"\[(?:[A-Za-z0-9_](?:-[A-Za-z0-9_])?)+\]\+")


class Tokenizer(CpuPlugin, schema.Tokenizer):
    """Fusions (skl2onnx's text pipelines: StringNormalizer, Tokenizer, Flatten,
    TfIdfVectorizer): a Flatten of the tokens at axis 1 is the tokens themselves (of
    [N, T]), so the Tokenizer writes its output; a TfIdfVectorizer of the [N, T] tokens is
    counted by the Tokenizer itself, whose output is then the counts [N, width], float32:
    no longer data-dependent, so the whole model is planned once and runs without segments
    (its attributes are kept in ``__tfidf__``, JSON, for the engine file)."""

    fusable: ClassVar[frozenset[str]] = frozenset({"Flatten", "TfIdfVectorizer"})
    hidden_fields: ClassVar[tuple[str, ...]] = ("__tfidf__",)
    #: the TfIdfVectorizer absorbed (None: the tokens are the output)
    counts: TfIdfVectorizer | None = None

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[DimsExprs | None], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        dims = consumer_dims[position] if position < len(consumer_dims) else None
        if self.counts is not None or dims is None or len(dims) != 2:
            return None
        if op_type == "Flatten":
            return Fusion() if int(attrs.get("axis", 1)) in (1, -1) else None
        if op_type != "TfIdfVectorizer":
            return None
        fields = {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()
                  if v is not None}
        try:
            counts = TfIdfVectorizer(f"{self.name}:TfIdfVectorizer", **fields)
            kept = json.dumps(fields, sort_keys=True)
        except (PluginInterfaceError, TypeError, ValueError):
            return None  # a malformed pool fails as the TfIdfVectorizer node, named as such
        if counts.int_tokens is not None:  # a pool of integers never matches a token
            return None
        self.record("__tfidf__", kept)
        self._fused(counts)
        return Fusion(output_type=DataType.FLOAT,
                      output_dims=DimsExprs([dims[0], DimExpr.const(counts.width)]))

    def _fused(self, counts: TfIdfVectorizer) -> None:
        self.counts = counts
        self.data_dependent = False  # its output is [N, width] now

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Any:
        if self.counts is None:
            return super().output_shapes(inputs)
        return [[inputs[0][0], DimExpr.const(self.counts.width)]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        types = super().output_types(input_types)
        return types if self.counts is None else [DataType.FLOAT]

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """Fused with a TfIdfVectorizer: tokens and counts, bound to the step's arrays."""
        if self.counts is None or workspace is not None or len(inputs) != 1:
            return None
        a = self.attrs
        return functools.partial(self.compute, inputs[0], out=outputs[0], mark=a["mark"],
                                 pad_value=a["pad_value"])

    def setup(self) -> None:
        super().setup()
        a = self.attrs
        if self.hidden.get("__tfidf__"):  # an engine's fused Tokenizer, read back
            self._fused(TfIdfVectorizer(f"{self.name}:TfIdfVectorizer",
                                        **json.loads(self.hidden["__tfidf__"])))
        self.least = max(int(a["mincharnum"]), 1)
        self.chars = self.separators == ("",)
        self.plain: re.Pattern[str] | None = None
        if not self.separators:  # separators win over tokenexp, as in onnxruntime
            self.tokens = _re2("Tokenizer", a["tokenexp"])
            if _ONE_ASCII_CLASS.fullmatch(a["tokenexp"] or ""):
                # one class of ASCII characters repeated (skl2onnx's "[a-zA-Z0-9_]+"): the
                # same matches under Python's re, whose findall is many times faster than
                # the RE2 wrapper's match objects
                self.plain = re.compile(a["tokenexp"])
        elif not self.chars:  # one alternation: the leftmost match, the first listed at a tie
            self.cuts = _re2("Tokenizer", "|".join(f"(?:{s})" for s in self.separators))

    def split(self, s: str) -> list[str]:
        if self.chars:
            return list(s)
        if self.plain is not None:
            found = self.plain.findall(s)
        elif not self.separators:
            found = [m.group() for m in self.tokens.finditer(s)]
        else:
            found, at = [], 0
            for m in self.cuts.finditer(s):
                found.append(s[at:m.start()])
                at = m.end()
            found.append(s[at:])
        return [t for t in found if len(t) >= self.least]

    def compute(self, x: Array, *, out: Array | None = None, mark: int, pad_value: str,
                **_: Any) -> Any:
        tokens = self.tokens_of(x, mark, pad_value)
        if self.counts is None:
            return tokens
        assert out is not None
        self.counts.compute(tokens, out=out, mode=self.counts.attrs["mode"])  # [N, T]
        return None

    def tokens_of(self, x: Array, mark: int, pad_value: str) -> Array:
        """The tokens of every element of ``x``: ``x``'s shape plus an axis of tokens."""
        items = x.reshape(-1).tolist()
        if self.plain is not None and self.least == 1:
            # X+ never matches an empty string: findall's tokens need no filter
            rows = list(map(self.plain.findall, items))
        else:
            rows = list(map(self.split, items))
        most = max(map(len, rows), default=0)
        if most == 0:
            return np.empty((*x.shape, 0), dtype=object)
        if mark:
            rows = [["\x02", *tokens, "\x03"] for tokens in rows]
            most += 2
        if len(rows) == 1:
            flat = rows[0]  # one row: as long as the longest
        else:  # every row padded to the longest, into one flat list assigned at once
            pad, flat = [pad_value] * most, []
            for r in rows:
                flat += r
                flat += pad[len(r):]
        y = np.empty(len(flat), dtype=object)
        y[:] = flat
        return y.reshape(*x.shape, most)
