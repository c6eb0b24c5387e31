"""Kernel categories by ordered, user-overridable rules (DESIGN.md, Traces).

A category is one of :data:`STANDARD_CATEGORIES` (a user's rules may add more). Rules are tried
in order and the first match wins; the default rules ship as ``rules/default.toml`` beside this
module. On Ascend, the reader's ``accelerator_core`` column (kernel_details.csv's
``Accelerator Core``) decides the category through the rules' ``[accelerator_core]`` table and
wins over names, except that a name matching a *communication* rule stays communication (an MC2
fused kernel runs on the AI cores yet is a collective). Device time no rule matches is
categorised :data:`UNMATCHED` and reported, never hidden; host rows get :data:`NOT_DEVICE`.

Matching runs once per distinct name (``table.names``), then maps to rows by ``name_id``, so
categorising a million kernels costs a few thousand name matches. A regex is searched only in
names holding the text all its matches contain, and with the optional ``ahocorasick_rs`` (the
``fast`` extra) all rules' literal patterns and such texts are found in one pass over a name
(:mod:`parity.trace.literals`); the answer is the same either way.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from parity.model.errors import ParityError
from parity.trace.literals import RuleMatcher, required_literal
from parity.trace.table import ActivityTable, Kind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

COMMUNICATION = "communication"
ATTENTION = "attention"
MATRIX = "matrix"
VECTOR = "vector"
MEMORY = "memory"
OTHER = "other"
UNMATCHED = "unmatched"
NOT_DEVICE = "host"  # host rows (runtime calls, CPU ops, markers): never counted as device time
STANDARD_CATEGORIES = (COMMUNICATION, ATTENTION, MATRIX, VECTOR, MEMORY, OTHER, UNMATCHED)
COMPUTE_EXCLUDED = (COMMUNICATION, MEMORY)  # "compute" = device work in neither of these

_KIND_NAMES = {k.name.lower(): k for k in Kind}
_ON_DEVICE = frozenset(k for k in Kind if k.on_device)
_RULE_KEYS = {"category", "patterns", "kinds"}
_TOP_KEYS = {"rules", "accelerator_core", "replace"}


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One ordered rule: a category, case-insensitive name regexes, and optionally kinds."""

    category: str
    patterns: tuple[str, ...]
    kinds: tuple[Kind, ...] = ()
    regex: re.Pattern | None = field(repr=False, compare=False)  # the non-literal patterns
    literals: tuple[str, ...] = field(default=(), repr=False, compare=False)  # lowercased
    # The same non-literal patterns split for ASCII names: those without capitals, compiled
    # case-sensitively and searched in the lowercased name (same answer; several times faster
    # than one case-insensitive alternation, as each keeps its literal prefix scan), and the rest.
    # A rule built without them (``regex`` only) is searched through ``regex``.
    lowered: tuple[re.Pattern, ...] = field(default=(), repr=False, compare=False)
    rest: re.Pattern | None = field(default=None, repr=False, compare=False)
    # per ``lowered`` pattern, text every match contains (required_literal) or None: without it
    # in the name the pattern is not searched. Empty: no pattern is gated.
    gates: tuple[str | None, ...] = field(default=(), repr=False, compare=False)

    def matches(self, name: str, kind: Kind) -> bool:
        """Whether a pattern is found in ``name`` (literal patterns by a plain substring test on
        the lowercased name, which is much faster than a regex on long C++ kernel names)."""
        return RuleMatcher((self,), one_pass=False).first(name, kind) is not None


def first_match(rules: tuple[Rule, ...], name: str, kind: Kind, *, one_pass: bool = False) -> Rule | None:
    """The first of ``rules`` matching ``name`` (see :class:`RuleMatcher`, which a loop over
    many names should build once, as :class:`Rules` does)."""
    return RuleMatcher(rules, one_pass=one_pass).first(name, kind)


@dataclass(frozen=True, kw_only=True)
class Rules:
    """An ordered rule list plus the Ascend accelerator-core table; build with :func:`load_rules`."""

    rules: tuple[Rule, ...]
    accelerator_core: dict[str, str]
    source: str
    matcher: RuleMatcher = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "matcher", RuleMatcher(self.rules))

    @property
    def labels(self) -> tuple[str, ...]:
        """Every category these rules can give: the standard ones first, then user additions."""
        extra = [r.category for r in self.rules] + list(self.accelerator_core.values())
        seen = list(STANDARD_CATEGORIES)
        for label in extra:
            if label not in seen:
                seen.append(label)
        return (*seen, NOT_DEVICE)

    def category_of(self, name: str, kind: Kind, core: str | None = None, task_type: str | None = None) -> str:
        """The category of one activity: communication names first, then the core, then names.

        ``task_type`` (Ascend's task type) stands in for the name when the name matches no rule.
        """
        if kind not in _ON_DEVICE:
            Kind(kind)  # a value that is no kind raises ValueError
            return NOT_DEVICE
        return self._device_category(name, kind, core, task_type)

    def _device_category(self, name: str, kind: int, core: str | None, task_type: str | None) -> str:
        """:meth:`category_of` for a device kind (``categorize`` calls it once per distinct
        name, kind, core and task type)."""
        first = self.matcher.first(name, kind)
        if first is None and task_type:
            first = self.matcher.first(task_type, kind)
        if first is not None and first.category == COMMUNICATION:
            return COMMUNICATION
        if core and core in self.accelerator_core:
            return self.accelerator_core[core]
        return first.category if first is not None else UNMATCHED


@dataclass(frozen=True, kw_only=True)
class Categorization:
    """Per-row category codes: ``labels[codes[i]]`` is row ``i``'s category."""

    codes: np.ndarray  # int16, one per table row
    labels: tuple[str, ...]
    source: str

    def code(self, label: str) -> int:
        return self.labels.index(label)

    def code_mask(self, *labels: str) -> np.ndarray:
        """Per category code: whether its label is any of ``labels`` (index it with codes)."""
        wanted = np.zeros(len(self.labels), dtype=bool)
        wanted[[self.labels.index(x) for x in labels if x in self.labels]] = True
        return wanted

    def mask(self, *labels: str) -> np.ndarray:
        """Rows whose category is any of ``labels``: one look-up per row by code."""
        return self.code_mask(*labels)[self.codes]

    def compute_codes(self) -> np.ndarray:
        """Per category code: whether it is compute, neither communication, memory nor host."""
        return ~self.code_mask(*COMPUTE_EXCLUDED, NOT_DEVICE)

    def compute_mask(self) -> np.ndarray:
        """Device rows that are compute: neither communication, memory nor host."""
        return self.compute_codes()[self.codes]

    def of_rows(self) -> np.ndarray:
        """Category names per row (object array), for exports."""
        return np.array(self.labels, dtype=object)[self.codes]


def default_rules_path() -> Path:
    return Path(str(resources.files("parity.trace") / "rules" / "default.toml"))


def _read_rules_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParityError(f"cannot read rules file {path}: {exc.strerror}; check the path") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ParityError(f"rules file {path} is YAML but PyYAML is not installed; "
                              "pip install pyyaml or write the rules as TOML") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            line = getattr(getattr(exc, "problem_mark", None), "line", None)
            where = f" at line {line + 1}" if line is not None else ""
            raise ParityError(f"rules file {path} is not valid YAML{where}; fix the syntax") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ParityError(f"rules file {path} is not valid TOML ({exc}); fix the syntax") from None
    if not isinstance(data, dict):
        raise ParityError(f"rules file {path} must hold a table with a 'rules' list")
    return data


def _parse_rule(path: Path, index: int, raw: Any) -> Rule:
    where = f"rules file {path}, rule {index + 1}"
    if not isinstance(raw, dict):
        raise ParityError(f"{where}: each rule must be a table with 'category' and 'patterns'")
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise ParityError(f"{where}: unknown key {min(unknown)!r}; use {sorted(_RULE_KEYS)}")
    category = raw.get("category")
    if not isinstance(category, str) or not category.strip() or category in (UNMATCHED, NOT_DEVICE):
        raise ParityError(f"{where}: 'category' must be a name such as 'matrix', got {category!r}")
    patterns = raw.get("patterns")
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) for p in patterns):
        raise ParityError(f"{where}: 'patterns' must be a non-empty list of regular expressions")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ParityError(f"{where}: bad regular expression {pattern!r} ({exc}); fix it") from None
    kinds = raw.get("kinds", [])
    if not isinstance(kinds, list) or any(str(k).lower() not in _KIND_NAMES for k in kinds):
        raise ParityError(f"{where}: 'kinds' must list kinds from {sorted(_KIND_NAMES)}, got {kinds!r}")
    literals = _minimal_literals(p.lower() for p in patterns if re.escape(p) == p or p == "")
    others = [p for p in patterns if not (re.escape(p) == p or p == "")]
    regex = re.compile("|".join(f"(?:{p})" for p in others), re.IGNORECASE) if others else None
    lowerable = [p for p in others if _case_free(p)]
    rest = [p for p in others if p not in lowerable]
    return Rule(
        category=category.strip(),
        patterns=tuple(patterns),
        kinds=tuple(_KIND_NAMES[str(k).lower()] for k in kinds),
        regex=regex,
        literals=literals,
        lowered=tuple(re.compile(p) for p in lowerable),
        gates=tuple(required_literal(p) for p in lowerable),
        rest=re.compile("|".join(f"(?:{p})" for p in rest), re.IGNORECASE) if rest else None,
    )


def _minimal_literals(literals: Iterable[str]) -> tuple[str, ...]:
    """The literals a substring test needs, in their order: a repeat, or a literal containing
    another one of the same rule ("sgemm" beside "gemm"), can never decide the rule's match,
    so leaving it out gives the same answer with fewer scans of long kernel names."""
    unique = list(dict.fromkeys(literals))
    return tuple(m for m in unique if not any(other != m and other in m for other in unique))


_PLAIN_ESCAPES = re.compile(r"\\[dswb]|\\[^0-9A-Za-z]")


def _case_free(pattern: str) -> bool:
    """Whether ``pattern`` searched case-sensitively in a lowercased ASCII name finds what it
    finds case-insensitively in the name: no capitals, no inline flags, and no escapes other
    than ``\\d \\s \\w \\b`` and escaped punctuation (``\\x41`` is a capital, ``\\S`` is not ``\\s``)."""
    if not pattern.isascii() or pattern != pattern.lower() or "(?" in pattern:
        return False
    return "\\" not in _PLAIN_ESCAPES.sub("", pattern)


def _parse(path: Path, data: dict[str, Any]) -> tuple[list[Rule], dict[str, str], bool]:
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ParityError(f"rules file {path}: unknown key {min(unknown)!r}; use {sorted(_TOP_KEYS)}")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise ParityError(f"rules file {path}: 'rules' must be a list of tables ([[rules]] in TOML)")
    rules = [_parse_rule(path, i, raw) for i, raw in enumerate(raw_rules)]
    cores = data.get("accelerator_core", {})
    if not isinstance(cores, dict) or not all(isinstance(v, str) and v for v in cores.values()):
        raise ParityError(f"rules file {path}: 'accelerator_core' must map core names to categories")
    replace = data.get("replace", False)
    if not isinstance(replace, bool):
        raise ParityError(f"rules file {path}: 'replace' must be true or false, got {replace!r}")
    return rules, {str(k): v for k, v in cores.items()}, replace


def load_rules(path: str | Path | None = None) -> Rules:
    """The default rules, or a user's rules file (TOML, or YAML with the same keys).

    A user's rules are tried before the defaults and its ``[accelerator_core]`` entries override
    the default ones; with ``replace = true`` only the user's rules are used.
    """
    default = _default_rules()
    if path is None:
        return default
    rules, cores = list(default.rules), dict(default.accelerator_core)
    user_path = Path(path)
    user_rules, user_cores, replace = _parse(user_path, _read_rules_file(user_path))
    if replace:
        if not user_rules:
            raise ParityError(f"rules file {user_path} sets replace = true but has no rules")
        return Rules(rules=tuple(user_rules), accelerator_core=user_cores, source=str(user_path))
    return Rules(
        rules=tuple(user_rules + rules),
        accelerator_core={**cores, **user_cores},
        source=f"{user_path} + default",
    )


@functools.lru_cache(maxsize=1)
def _default_rules() -> Rules:
    """The shipped rules, parsed once per process (the file is package data and never changes
    while the process runs; parsing the TOML takes longer than analysing a small trace)."""
    path = default_rules_path()
    rules, cores, _ = _parse(path, _read_rules_file(path))
    return Rules(rules=tuple(rules), accelerator_core=cores, source="default")


def categorize(table: ActivityTable, rules: Rules | None = None) -> Categorization:
    """Categorise every row of ``table`` (host rows get ``"host"``).

    Names are matched once per distinct ``(name, kind, accelerator core)`` combination present.
    """
    rules = rules or load_rules()
    labels = rules.labels
    index = {label: i for i, label in enumerate(labels)}
    n = len(table)
    codes = np.full(n, index[NOT_DEVICE], dtype=np.int16)
    device = np.flatnonzero(table.device_mask())  # host rows are never device time
    # key = ((task type * cores + core) * kinds + kind) * names + name id, built term by term
    n_names, n_kinds = max(len(table.names), 1), len(Kind)
    key = table.kind[device].astype(np.int64) * n_names + table.name_id[device]
    span = n_kinds * n_names
    core_values, core_codes = _codes(table.extra.get("accelerator_core"), device)
    if core_codes is not None:
        key += core_codes * span
    span *= len(core_values)
    type_values, type_codes = _codes(table.extra.get("task_type"), device)
    if type_codes is not None:
        key += type_codes * span
    unique_keys, inverse = _unique(key, span * len(type_values))
    names, n_cores, category = table.names or [""], len(core_values), rules._device_category
    found = []
    for k in unique_keys.tolist():  # kinds stay ints: a rule's kinds compare equal to them
        rest, name_id = divmod(k, n_names)
        rest, kind = divmod(rest, n_kinds)
        rest, core = divmod(rest, n_cores)
        found.append(index[category(names[name_id], kind, core_values[core], type_values[rest])])
    lookup = np.array(found, dtype=np.int16)
    if len(device):
        codes[device] = lookup[inverse]
    return Categorization(codes=codes, labels=labels, source=rules.source)


def _unique(key: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` for keys in ``[0, span)``: through a table of
    ``span`` slots when that is small beside ``key`` (a few array passes instead of a sort)."""
    if span > 4 * len(key) + 65536:
        unique_keys, inverse = np.unique(key, return_inverse=True)
        return unique_keys, inverse.reshape(-1)
    present = np.zeros(span, dtype=bool)
    present[key] = True
    unique_keys = np.flatnonzero(present)
    slot = np.empty(span, dtype=np.intp)
    slot[unique_keys] = np.arange(len(unique_keys))
    return unique_keys, slot[key]


def _codes(column: np.ndarray | None, rows: np.ndarray) -> tuple[list[str | None], np.ndarray | None]:
    """Dictionary-encode an optional string column at ``rows``: ``(values, int64 codes)``, in
    first-seen order (a dict, not a sort of Python strings); anything but a non-empty string
    is ``None``. Codes are ``None`` (all zero) without the column."""
    if column is None:
        return [None], None
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(c if isinstance(c, str) else "", len(index)) for c in column[rows].tolist()),
                        dtype=np.int64, count=len(rows))
    return [v or None for v in index] or [None], codes
