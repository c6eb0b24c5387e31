"""Kernel categories by ordered, user-overridable rules (docs/definitions.md, Traces).

A category is one of :data:`STANDARD_CATEGORIES` (a user's rules may add more). Each default
rule names an *operation* (GEMM, convolution, attention, normalization, reduction, copy,
elementwise, communication, ...) and gives the category that operation's work is; rules are
tried in order and the first match wins. The default rules ship as ``rules/default.toml``
beside this module. Patterns match whole tokens of a kernel name (:mod:`parity.trace.tokens`),
so ``mma`` is not found in ``GammaBeta`` and ``gemm`` not in ``fbgemm``; a library name alone
(cuDNN, cuBLAS, CUTLASS, NCCL...) decides nothing, and normalization is vector work.

On Ascend, the reader's ``accelerator_core`` column (kernel_details.csv's ``Accelerator Core``)
decides the category through the rules' ``[accelerator_core]`` table and wins over names,
except that a name matching a *communication* rule stays communication (an MC2 fused kernel
runs on the AI cores yet is a collective). A core the table does not know (``N/A``: the
profiler did not record the unit) leaves the decision to the names. Device time no rule
matches is categorised :data:`UNMATCHED` and reported, never hidden; host rows get
:data:`NOT_DEVICE`.

Matching runs once per distinct name (``table.names``), then maps to rows by ``name_id``, so
categorising a million kernels costs a few thousand name matches.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parity.model.errors import ParityError
from parity.trace.table import ActivityTable, Kind
from parity.trace.tokens import NameTokens, TokenPattern, parse_pattern

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
_RULE_KEYS = {"category", "patterns", "kinds", "operation"}
_TOP_KEYS = {"rules", "accelerator_core", "replace"}


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One ordered rule: the operation it names, its category, token patterns (any one
    matching suffices), optionally kinds. ``regex`` (searched case-insensitively in the whole
    name) serves rules built in code from regular expressions."""

    category: str
    patterns: tuple[str, ...]
    kinds: tuple[Kind, ...] = ()
    operation: str = ""
    regex: re.Pattern | None = field(default=None, repr=False, compare=False)
    tokens: tuple[TokenPattern, ...] = field(default=(), repr=False, compare=False)

    def matches(self, name: str, kind: Kind, tokens: NameTokens | None = None) -> bool:
        """Whether ``kind`` is among the rule's kinds (when it names any) and a pattern is
        found in ``name`` (``tokens``: the name's tokens, when the caller has them)."""
        if self.kinds and kind not in self.kinds:
            return False
        if self.regex is not None and self.regex.search(name) is not None:
            return True
        if not self.tokens:
            return False
        tokens = tokens if tokens is not None else NameTokens(name)
        return any(p.matches(name, tokens) for p in self.tokens)


def first_match(rules: tuple[Rule, ...], name: str, kind: Kind) -> Rule | None:
    """The first of ``rules`` matching ``name`` under ``kind``, or ``None``."""
    tokens = NameTokens(name)
    return next((rule for rule in rules if rule.matches(name, kind, tokens)), None)


@dataclass(frozen=True, kw_only=True)
class Rules:
    """An ordered rule list plus the Ascend accelerator-core table; build with :func:`load_rules`."""

    rules: tuple[Rule, ...]
    accelerator_core: dict[str, str]
    source: str
    # (name, kind, core, task type) -> category, filled by _device_category: the rules never
    # change once built, so a process that categorises many traces with one Rules (a fleet
    # worker's ranks share their kernel names) matches each name once
    _decided: dict[tuple, str] = field(default_factory=dict, repr=False, compare=False)

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

    def rule_of(self, name: str, kind: Kind, task_type: str | None = None) -> Rule | None:
        """The rule deciding ``name`` by names alone (the task type standing in when the name
        matches none), or ``None``."""
        first = first_match(self.rules, name, kind)
        if first is None and task_type:
            first = first_match(self.rules, task_type, kind)
        return first

    def _device_category(self, name: str, kind: int, core: str | None, task_type: str | None) -> str:
        """:meth:`category_of` for a device kind (``categorize`` calls it once per distinct
        name, kind, core and task type; each combination is matched once per Rules)."""
        key = (name, kind, core, task_type)
        decided = self._decided.get(key)
        if decided is None:
            decided = self._decided[key] = self._decide(name, kind, core, task_type)
        return decided

    def _decide(self, name: str, kind: int, core: str | None, task_type: str | None) -> str:
        first = self.rule_of(name, kind, task_type)
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
    """The shipped rules file: package data beside this module (``importlib.resources`` would
    find the same file in an installed tree, and costs a trace command some 7 ms of imports)."""
    return Path(__file__).resolve().parent / "rules" / "default.toml"


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
        raise ParityError(f"{where}: 'patterns' must be a non-empty list of token patterns")
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(parse_pattern(pattern))
        except re.error as exc:
            raise ParityError(f"{where}: bad regular expression {pattern!r} ({exc}); fix it") from None
        except ValueError as exc:
            raise ParityError(f"{where}: bad pattern {pattern!r} ({exc}); write name tokens such as 'batch norm'") from None
    kinds = raw.get("kinds", [])
    if not isinstance(kinds, list) or any(str(k).lower() not in _KIND_NAMES for k in kinds):
        raise ParityError(f"{where}: 'kinds' must list kinds from {sorted(_KIND_NAMES)}, got {kinds!r}")
    operation = raw.get("operation", category)
    if not isinstance(operation, str) or not operation.strip():
        raise ParityError(f"{where}: 'operation' must be a name such as 'gemm', got {operation!r}")
    return Rule(
        category=category.strip(),
        patterns=tuple(patterns),
        kinds=tuple(_KIND_NAMES[str(k).lower()] for k in kinds),
        operation=operation.strip(),
        tokens=tuple(compiled),
    )


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
