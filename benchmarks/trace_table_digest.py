"""Digest of every table the readers make from the real traces (Kineto files, Nsight Systems
exports, Ascend rank folders), to show a reader change leaves the tables as they were.

Each table's columns (core and extra), name dictionary and meta (less its source path) are
hashed; ``--save`` writes the digests, ``--compare`` reads them back and names every trace and
column that differs. Run it before a reader change (``--save``) and after (``--compare``);
``--workers N`` reads every Kineto file with N processes (the table must not depend on it).

    python benchmarks/trace_table_digest.py --save /tmp/before.json
    python benchmarks/trace_table_digest.py --compare /tmp/before.json --workers 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from parity.trace import load_trace
from parity.trace.table import ActivityTable

TRACES = Path(__file__).resolve().parent.parent.parent / "shared/data/traces"


def trace_units() -> list[Path]:
    """Every trace in the shared data, one rank each: Kineto files, Nsight exports, Ascend
    ``*_ascend_pt`` folders (text and database exports)."""
    kineto = sorted((TRACES / "kineto").rglob("*.json*"))
    nsys = sorted((TRACES / "nsys").rglob("*.sqlite"))
    ascend = sorted((TRACES / "ascend").rglob("*_ascend_pt"))
    return kineto + nsys + ascend


def _hash(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


def digest(table: ActivityTable) -> dict[str, str]:
    """One short hash per column, for the names and for the meta (source path left out)."""
    out = {c: _hash(np.ascontiguousarray(getattr(table, c)).tobytes() + str(getattr(table, c).dtype).encode())
           for c in ActivityTable.COLUMNS}  # fmt: skip
    out["names"] = _hash("\x00".join(table.names).encode())
    for key, values in sorted(table.extra.items()):
        raw = repr(values.tolist()).encode() if values.dtype == object else values.tobytes() + str(values.dtype).encode()
        out[f"extra.{key}"] = _hash(raw)
    meta = {k: v for k, v in table.meta.items() if k != "source"}
    out["meta"] = _hash(json.dumps(meta, sort_keys=True, default=str).encode())
    return out


def digests(workers: int | None = None) -> dict[str, dict[str, str]]:
    out = {}
    for path in trace_units():
        try:
            table = load_trace([path], workers=workers) if workers is not None else load_trace([path])
            out[str(path.relative_to(TRACES))] = digest(table)
        except Exception as exc:  # noqa: BLE001 - a refused trace is recorded with its error
            out[str(path.relative_to(TRACES))] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path)
    group.add_argument("--compare", type=Path)
    parser.add_argument("--workers", type=int, help="processes per Kineto file (default: by size)")
    args = parser.parse_args()
    now = digests(args.workers)
    if args.save:
        args.save.write_text(json.dumps(now, indent=1, sort_keys=True))
        print(f"{len(now)} traces digested into {args.save}")
        return
    before = json.loads(args.compare.read_text())
    differ = {t: sorted(k for k in set(before[t]) | set(now.get(t, {})) if before[t].get(k) != now.get(t, {}).get(k))
              for t in before if before[t] != now.get(t)}  # fmt: skip
    for trace, keys in differ.items():
        print(f"differs: {trace}: {', '.join(keys)}")
    print(f"{len(before) - len(differ)} of {len(before)} traces give the same table: {'PASS' if not differ else 'FAIL'}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
