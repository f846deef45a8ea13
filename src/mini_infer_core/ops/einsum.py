"""Einsum: the equation parsed once, symbolic output shapes."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DimExpr, DimsExprs, IntLike, broadcast_dims
from ..plugin.shapes import Shapes
from ._schema import Op

__all__ = ["Einsum"]


def parse_equation(equation: str, n_inputs: int) -> tuple[list[str], str]:
    """The input terms and the output term (implicit output: the letters used once, in
    alphabetical order, after the ellipsis). ``...`` is kept as ``.`` (one character)."""
    eq = equation.replace(" ", "").replace("...", ".")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = eq, "", False
    terms = lhs.split(",")
    if len(terms) != n_inputs:
        raise PluginInterfaceError(
            f"Einsum: equation {equation!r} has {len(terms)} operand(s), the node {n_inputs}")
    for t in [*terms, out]:
        bad = [c for c in t if not (c.isalpha() or c == ".")]
        if bad or t.count(".") > 1:
            raise PluginInterfaceError(f"Einsum: invalid equation {equation!r}")
    if not explicit:
        letters = "".join(terms).replace(".", "")
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        out = ("." if any("." in t for t in terms) else "") + "".join(once)
    return terms, out


class Einsum(Op):
    """Einstein summation over the inputs as ``equation`` says (``"ij,jk->ik"``; ``...``
    broadcasts; without ``->`` the output holds the letters used once, alphabetically)."""

    def setup(self) -> None:
        #: the equation without blanks
        self.equation = str(self.attrs["equation"]).replace(" ", "")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        terms, out = parse_equation(self.equation, len(inputs))
        sizes: dict[str, DimExpr] = {}
        ellipses: list[list[DimExpr]] = []
        for term, dims in zip(terms, inputs, strict=True):
            d = list(dims)
            n_named = len(term.replace(".", ""))
            if len(d) < n_named or ("." not in term and len(d) != n_named):
                raise PluginInterfaceError(
                    f"Einsum: term {term!r} does not fit an input of rank {len(d)}")
            n_ell = len(d) - n_named
            k = 0
            for c in term:
                if c == ".":
                    ellipses.append(d[k:k + n_ell])
                    k += n_ell
                    continue
                prev = sizes.get(c)
                if prev is None or (prev.is_constant() and prev.get_constant_value() == 1):
                    sizes[c] = d[k]
                k += 1
        shape: list[IntLike] = []
        for c in out:
            if c == ".":
                shape.extend(broadcast_dims(*ellipses))
            elif c not in sizes:
                raise PluginInterfaceError(
                    f"Einsum: output letter {c!r} does not appear in the inputs")
            else:
                shape.append(sizes[c])
        return [shape]
