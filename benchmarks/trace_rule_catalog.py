"""Which default category rule catches which kernels of the shared traces: writes the list in
``docs/trace-rules.md`` (or prints it), so the rules can be checked against every kernel name.

Every device activity of every trace in the shared data (Kineto, Nsight Systems, Ascend) is
matched by name (the task type standing in, as in the analysis); per rule: its operation,
category and patterns, how many distinct kernel names and how much device time it catches, and
the names themselves (shortened to their head, without argument lists), most time first.

    python benchmarks/trace_rule_catalog.py --write docs/trace-rules.md
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace import load_trace
from parity.trace.categories import load_rules
from parity.trace.tokens import signature_head

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_table_digest import trace_units

MAX_NAMES = 12  # names listed per rule; the count gives the rest
HEAD_CHARS = 90


def caught() -> dict[int, dict[str, int]]:
    """Per rule index (-1: no rule), device ns per shortened kernel name, over every trace."""
    rules = load_rules()
    out: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for unit in trace_units():
        try:
            table = load_trace([unit])
        except ParityError:
            continue
        device = np.flatnonzero(table.device_mask())
        types = table.extra.get("task_type")
        for row in device.tolist():
            name = table.names[table.name_id[row]]
            task_type = types[row] if types is not None and isinstance(types[row], str) else None
            rule = rules.rule_of(name, int(table.kind[row]), task_type)
            index = rules.rules.index(rule) if rule is not None else -1
            head = " ".join(signature_head(name).split()).replace("::::", "::")[:HEAD_CHARS]
            out[index][head] += int(table.end_ns[row] - table.start_ns[row])
    return out


def render(found: dict[int, dict[str, int]]) -> str:
    rules = load_rules()
    lines = ["# Default category rules and the kernels they catch", "",
             "Written by `python benchmarks/trace_rule_catalog.py --write docs/trace-rules.md` from every",
             "trace in the shared data (`../shared/data/traces`); rules are in",
             "`src/parity/trace/rules/default.toml`, matched on name tokens (`parity.trace.tokens`).",
             "Names are shortened to their head (no argument list), most device time first. On Ascend",
             "the `Accelerator Core` wins over these rules except for communication.", ""]
    for index in [*range(len(rules.rules)), -1]:
        names = found.get(index, {})
        if index >= 0:
            rule = rules.rules[index]
            kinds = f", kinds {', '.join(k.name.lower() for k in rule.kinds)}" if rule.kinds else ""
            lines.append(f"## {index + 1}. {rule.operation} -> {rule.category}{kinds}")
            lines.append("")
            lines.append("patterns: " + ", ".join(f"`{p}`" if p else "`` (any name)" for p in rule.patterns))
        else:
            lines.append("## no rule (unmatched, unless an Ascend core decides)")
        lines.append("")
        total_ms = sum(names.values()) / 1e6
        lines.append(f"catches {len(names)} distinct kernel names, {total_ms:,.3f} ms of device time")
        lines.append("")
        for name, ns in sorted(names.items(), key=lambda kv: -kv[1])[:MAX_NAMES]:
            lines.append(f"- `{name}` ({ns / 1e6:,.3f} ms)")
        if len(names) > MAX_NAMES:
            lines.append(f"- ... and {len(names) - MAX_NAMES} more")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the markdown here instead of printing it")
    args = parser.parse_args()
    text = render(caught())
    if args.write:
        args.write.write_text(text, encoding="utf-8")
        print(f"wrote {args.write}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
