"""Plain text that decides kernel-category rules quickly (used by categories.py).

Two kinds of text stand in for regular-expression work on long C++ kernel names:

* a rule's *literal patterns* (``"gemm"``): the rule matches a name that contains one;
* a regex's *gate* (:func:`required_literal`): text every match of the regex contains
  (``"reduce"`` for ``all_?reduce``), so a name without it cannot match and the regex is not run.

:class:`RuleMatcher` applies an ordered rule tuple to a name. With the optional
``ahocorasick_rs`` (the ``fast`` extra) every literal and gate of every rule is found in one
pass over the lowered name; without it each is tested with a substring search, in rule order,
only as far as the first matching rule. The answer is the same either way, and the same as
running every regex. In one-pass mode an answer that took no regex search depends only on
which texts the name holds and its kind, so it is kept under those for the next name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

try:  # optional: finds all literals of all rules in one pass over a name
    import ahocorasick_rs
except ImportError:  # pragma: no cover - depends on the install
    ahocorasick_rs = None

try:  # the standard library's regex parser (private; see required_literal)
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

if TYPE_CHECKING:
    from parity.trace.categories import Rule

MIN_GATE_CHARS = 2  # a one-character gate is in most names: it would save little, cost a scan
MAX_DECIDED = 65536  # answers kept per matcher, by found-mask and kind
_ALWAYS = 1  # bit 0 of a name's found-mask: set for every name (ungated regexes, empty literals)


def required_literal(pattern: str) -> str | None:
    """The longest run of plain characters in the top-level sequence of ``pattern``, which
    every match of the (case-sensitive) regex contains; ``None`` when there is none.

    ``all_?reduce`` -> ``"reduce"``, ``\\.gemm`` -> ``".gemm"``, ``\\d+x`` -> ``"x"``;
    ``a|b``, ``(ab)+`` and ``[ab]`` have no such run. Read from the standard parser's tree: a
    top-level item that is not a single literal character (an alternation, quantifier, class,
    group or anchor) ends the run. A case-insensitive pattern, or one the parser rejects, gets
    ``None`` (no shortcut is then taken).
    """
    try:
        parsed = _sre_parse.parse(pattern)
        items = list(parsed.data)
        flags = parsed.state.flags
    except Exception:  # noqa: BLE001 - a private API: when unsure, no gate
        return None
    if flags & re.IGNORECASE:
        return None
    best, run = "", ""
    for op, value in items:
        if op == _sre_parse.LITERAL:
            run += chr(value)
            continue
        best, run = max(best, run, key=len), ""
    best = max(best, run, key=len)
    return best or None


class RuleMatcher:
    """``matcher.first(name, kind)``: the first of ``rules`` matching an activity's name.

    A rule matches when ``kind`` is among its kinds (if it names any) and a pattern is found,
    case-insensitively, anywhere in the name: a literal pattern by a substring test on the
    lowered name; for an ASCII name, a case-free regex (``Rule.lowered``) searched in the
    lowered name when its gate (``Rule.gates``) is there, and the other regexes (``Rule.rest``)
    in the name; for any other name, the rule's combined case-insensitive ``Rule.regex``.
    ``one_pass`` finds the literals and gates with one Aho-Corasick pass over the name when
    ``ahocorasick_rs`` is installed (Aho-Corasick is linear in the name, where a scan per
    literal costs a pass each).
    """

    def __init__(self, rules: Sequence[Rule], *, one_pass: bool = True) -> None:
        self.rules = tuple(rules)
        self._always = _ALWAYS
        self._bits: dict[str, int] = {}
        self._find = None
        # (found-mask, kind) -> first rule, for answers that took no regex search: a pure
        # function of the key, and a trace's names share a few dozen masks at most
        self._decided: dict[tuple[int, int], Rule | None] = {}
        gate_bits: dict[str, int] = {}  # gate text -> its bit, above the rules' bits
        plan, fast = [], []
        for i, rule in enumerate(self.rules):
            gated = []
            for gate, pattern in zip(rule.gates or (None,) * len(rule.lowered), rule.lowered):
                if gate is not None and len(gate) >= MIN_GATE_CHARS:
                    gate_bits.setdefault(gate, 1 << (len(self.rules) + 1 + len(gate_bits)))
                    gated.append((gate_bits[gate], gate, pattern))
                else:
                    gated.append((_ALWAYS, None, pattern))
            split = bool(rule.lowered) or rule.rest is not None
            kinds, rule_bit = frozenset(rule.kinds), 1 << (i + 1)
            plan.append((rule, kinds, rule.literals, tuple(gated), rule.rest, rule.regex, split))
            # for an ASCII name: the regex searched in the name itself, and the bits without
            # any of which (in the found-mask) the rule cannot match
            in_name = rule.rest if split else rule.regex
            need = rule_bit | (_ALWAYS if in_name is not None else 0)
            for bit, _, _ in gated:
                need |= bit
            fast.append((rule, kinds, rule_bit, need, tuple((b, p) for b, _, p in gated), in_name))
        self._plan, self._fast = tuple(plan), tuple(fast)
        if one_pass and ahocorasick_rs is not None:
            self._build_automaton(gate_bits)
        self.first = self._first_one_pass if self._find is not None else self._first_scanning

    @property
    def one_pass(self) -> bool:
        """Whether literals and gates are found in one Aho-Corasick pass."""
        return self._find is not None

    def _build_automaton(self, gate_bits: dict[str, int]) -> None:
        """The automaton over every distinct literal and gate text, with the bits each sets:
        the bit of every rule having it as a literal, and its own bit as a gate. A DFA: slower
        to build than the default NFA (a fraction of a millisecond, once per rule set) and about
        twice as fast to search."""
        bits: dict[str, int] = {}
        for i, rule in enumerate(self.rules):
            rule_bit = 1 << (i + 1)
            for literal in rule.literals:
                if literal:
                    bits[literal] = bits.get(literal, 0) | rule_bit
                else:  # an empty literal is in every name
                    self._always |= rule_bit
        for gate, bit in gate_bits.items():
            bits[gate] = bits.get(gate, 0) | bit
        self._bits = bits
        if not bits:
            self._find = lambda lowered, overlapping: ()
            return
        automaton = ahocorasick_rs.AhoCorasick(
            list(bits), matchkind=ahocorasick_rs.MatchKind.Standard,
            implementation=ahocorasick_rs.Implementation.DFA, store_patterns=True,
        )
        self._find = automaton.find_matches_as_strings

    def found(self, lowered: str) -> int:
        """Bit mask of what ``lowered`` contains (one-pass mode): bit 0 always, bit ``i + 1``
        when a literal of rule ``i`` is in it, higher bits for gates. Every occurrence is
        reported, overlapping ones included, so nothing is missed."""
        found = self._always
        bits = self._bits
        for text in self._find(lowered, overlapping=True):
            found |= bits[text]
        return found

    def _first_one_pass(self, name: str, kind: int) -> Rule | None:
        if not name.isascii():  # rare: the rules' case-insensitive regexes, literal by literal
            return self._first_scanning(name, kind)
        lowered = name.lower()
        found = self.found(lowered)
        key = (found, kind)
        decided = self._decided.get(key, self)  # self: not decided yet
        if decided is not self:
            return decided
        searched = False  # whether a regex was run: then the answer depends on more than the key
        for rule, kinds, rule_bit, need, gated, in_name in self._fast:
            if not found & need or (kinds and kind not in kinds):
                continue
            if found & rule_bit:
                break
            for bit, pattern in gated:
                if found & bit:
                    if pattern.search(lowered) is not None:
                        return rule
                    searched = True
            if in_name is not None:
                if in_name.search(name) is not None:
                    return rule
                searched = True
        else:
            rule = None
        if not searched and len(self._decided) < MAX_DECIDED:
            self._decided[key] = rule
        return rule

    def _first_scanning(self, name: str, kind: int) -> Rule | None:
        lowered = name.lower()
        contains = lowered.__contains__
        ascii_name = name.isascii()
        for rule, kinds, literals, gated, rest, regex, split in self._plan:
            if kinds and kind not in kinds:
                continue
            if literals and any(map(contains, literals)):
                return rule
            if ascii_name and split:
                for _, gate, pattern in gated:
                    if (gate is None or gate in lowered) and pattern.search(lowered) is not None:
                        return rule
                if rest is not None and rest.search(name) is not None:
                    return rule
            elif regex is not None and regex.search(name) is not None:
                return rule
        return None
