"""Kernel names as tokens, and the token patterns category rules are written in.

A rule must match a *word* of a kernel name, never any run of letters: ``mma`` (matrix
multiply-accumulate) is inside ``GammaBeta`` (LayerNorm backward), ``linear`` inside
``linearize_index``, ``gemm`` inside ``fbgemm``. So a name is split into tokens and patterns
match whole tokens.

Tokens (:func:`name_tokens`): the name is cut before its argument list (the first ``(`` outside
template brackets, ``(anonymous namespace)`` removed first), then split into runs of capitals
(``NLL``), capitalised or lower-case words (``Loss``, ``gemm``) and digits (``1688``),
lowercased: ``cutlass_80_tensorop_s1688gemm`` -> ``cutlass 80 tensorop s 1688 gemm``,
``GammaBetaBackward`` -> ``gamma beta backward``, ``MatMulV2`` -> ``mat mul v 2``.

Patterns (:class:`TokenPattern`): one or more terms separated by spaces, all of which must be
found. A term is found when some run of consecutive tokens, joined, spells it (letters and
digits only; ``_`` and ``-`` in a term are ignored): ``matmul`` is found in ``matmul_kernel``
and in ``MatMulV2``, ``allreduce`` in ``AllReduce`` and ``all_reduce``. A run of several tokens
never starts with a one-character token, so ``dgrad`` is not found in ``Pool3dGrad``. ``^term`` must start at
the first token, ``term$`` end at the last. The empty pattern matches every name. A pattern
written ``re:REGEX`` is a case-insensitive regular expression searched in the whole name, for a
user's rules that need one; the default rules have none.
"""

from __future__ import annotations

import re
from functools import lru_cache

import msgspec

_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ANONYMOUS = "(anonymous namespace)"
_BRACKETS = re.compile(r"[<>(]")
_TERM_TEXT = re.compile(r"[^0-9a-z]")
REGEX_PREFIX = "re:"


def signature_head(name: str) -> str:
    """``name`` without its argument list: up to the first ``(`` outside ``<...>`` (kept whole
    when that ``(`` opens the name)."""
    depth = 0
    name = name.replace(_ANONYMOUS, "")
    for match in _BRACKETS.finditer(name):  # only the brackets are visited
        char = match.group()
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            head = name[: match.start()]
            return head if head.strip() else name
    return name


@lru_cache(maxsize=1 << 16)
def name_tokens(name: str) -> tuple[str, ...]:
    """The lowercased tokens of a kernel name (see the module docstring); remembered per name,
    since a process reading many ranks of one job meets the same names in every rank."""
    return tuple(map(str.lower, _TOKEN.findall(signature_head(name))))


class Term(msgspec.Struct, frozen=True, kw_only=True):
    """One term of a pattern: the text a run of tokens must spell, and its anchors."""

    text: str
    at_start: bool = False
    at_end: bool = False


def parse_term(raw: str) -> Term | None:
    """``"^notify_wait$"`` -> Term("notifywait", at_start, at_end); ``None`` when no letter or
    digit is left."""
    at_start, at_end = raw.startswith("^"), raw.endswith("$") and len(raw) > 1
    text = _TERM_TEXT.sub("", raw.lower())
    return Term(text=text, at_start=at_start, at_end=at_end) if text else None


class NameTokens:
    """A name's tokens joined, with the offsets where tokens begin and end, for term tests."""

    __slots__ = ("bounds", "joined", "single", "words")

    def __init__(self, name: str) -> None:
        tokens = name_tokens(name)
        self.words = frozenset(tokens)
        self.joined = "".join(tokens)
        bounds, single, offset = {0}, set(), 0
        for token in tokens:
            if len(token) == 1:
                single.add(offset)
            offset += len(token)
            bounds.add(offset)
        self.bounds = bounds
        self.single = single  # offsets of one-character tokens

    def _run_at(self, pos: int, length: int) -> bool:
        """Whether ``joined[pos:pos+length]`` is a run of whole tokens that does not start with
        a one-character token (the ``d`` of ``3d`` does not join ``grad`` into ``dgrad``)."""
        if pos not in self.bounds or pos + length not in self.bounds:
            return False
        return length == 1 or pos not in self.single

    def has(self, term: Term) -> bool:
        """Whether a run of consecutive tokens spells ``term`` (honouring its anchors)."""
        text, joined = term.text, self.joined
        if not (term.at_start or term.at_end) and text in self.words:
            return True
        if term.at_start:
            return joined.startswith(text) and self._run_at(0, len(text)) and (not term.at_end or len(text) == len(joined))
        if term.at_end:
            pos = len(joined) - len(text)
            return pos >= 0 and joined.endswith(text) and self._run_at(pos, len(text))
        pos = joined.find(text)
        while pos >= 0:
            if self._run_at(pos, len(text)):
                return True
            pos = joined.find(text, pos + 1)
        return False


class TokenPattern(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed pattern: every term must be found (no terms: always matches), or a regex."""

    source: str
    terms: tuple[Term, ...] = ()
    regex: re.Pattern | None = None

    def matches(self, name: str, tokens: NameTokens) -> bool:
        """Whether every term is found in ``tokens`` (the tokens of ``name``), or the regex in
        ``name``. A term whose text is nowhere in the joined tokens cannot be found: that one
        substring test settles most (name, pattern) pairs before :meth:`NameTokens.has`."""
        if self.regex is not None:
            return self.regex.search(name) is not None
        joined = tokens.joined
        for term in self.terms:
            if term.text not in joined or not tokens.has(term):
                return False
        return True


def parse_pattern(raw: str) -> TokenPattern:
    """A pattern from its text (see the module docstring); ``re.error`` for a bad ``re:``
    regex, ``ValueError`` for a term with no letter or digit."""
    if raw.startswith(REGEX_PREFIX):
        return TokenPattern(source=raw, regex=re.compile(raw[len(REGEX_PREFIX):], re.IGNORECASE))
    terms = []
    for word in raw.split():
        term = parse_term(word)
        if term is None:
            raise ValueError(f"term {word!r} has no letter or digit")
        terms.append(term)
    return TokenPattern(source=raw, terms=tuple(terms))
