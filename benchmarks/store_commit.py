"""What committing every case costs, side by side with the alternatives a store could take.

The results store commits each case as soon as it is measured (WAL, ``synchronous=NORMAL``),
so a killed run loses at most the case in flight. This script times, in one run and on the same
disk, per-case ``Store.add_case`` against two references writing the same rows:

- ``wal-full``: a commit per case with ``synchronous=FULL`` (an fsync per case, which also
  survives power loss);
- ``one-transaction``: every row in one transaction (a killed run loses everything).

It prints the median seconds per case over repeats and the ratio of parity's path to each.
The bar: a per-case commit stays under 2 ms, far below the shortest case a suite measures (a
GEMM shape or a transfer size takes ~0.1 s or more with warm-up and its time budget).

    python benchmarks/store_commit.py
    python benchmarks/store_commit.py --cases 500 --repeats 5 --dir /mnt/fast
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from parity.model import CaseResult, Samples
from parity.store import Store

BAR_S = 2e-3


def _case(i: int) -> CaseResult:
    values = tuple(1e-3 + 1e-6 * j for j in range(200))
    return CaseResult(
        suite="bench",
        key=f"case-{i:05d}",
        params={"i": i},
        samples={"main": Samples(values_s=values, method="host-clock")},
        metrics={"median_s": 1.1e-3},
        check={"passed": True},
    )


def time_store(folder: Path, cases: list[CaseResult]) -> float:
    """Seconds per case through ``Store.add_case`` (a committed transaction each)."""
    with Store.open(folder / "store.sqlite") as store:
        run_id = store.create_run(config={}, provenance={}).run_id
        start = time.perf_counter()
        for case in cases:
            store.add_case(run_id, case)
        return (time.perf_counter() - start) / len(cases)


def time_reference(folder: Path, cases: list[CaseResult], *, per_case: bool) -> float:
    """Seconds per case for the same rows in the same schema: a commit per case with
    ``synchronous=FULL``, or all rows in one transaction."""
    path = folder / f"ref-{per_case}.sqlite"
    Store.open(path).close()  # same schema
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {'FULL' if per_case else 'NORMAL'}")
    conn.execute("INSERT INTO runs VALUES ('r', 't', 't', 'running', '{}', '{}', '{}')")
    from parity.store.database import _dumps

    start = time.perf_counter()
    if not per_case:
        conn.execute("BEGIN")
    for case in cases:
        if per_case:
            conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO cases (run_id, suite, key, params, samples, metrics, check_result,"
            " findings, telemetry, error, ok, created_at) VALUES"
            " ('r', ?, ?, ?, ?, ?, ?, '[]', '{}', NULL, 1, 't')",
            (
                case.suite,
                case.key,
                _dumps(case.params),
                _dumps({n: s.to_dict() for n, s in case.samples.items()}),
                _dumps(case.metrics),
                _dumps(case.check),
            ),
        )
        if per_case:
            conn.execute("COMMIT")
    if not per_case:
        conn.execute("COMMIT")
    elapsed = (time.perf_counter() - start) / len(cases)
    conn.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="folder on the disk to test")
    args = parser.parse_args()
    cases = [_case(i) for i in range(args.cases)]
    results: dict[str, list[float]] = {"parity": [], "wal-full": [], "one-transaction": []}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            folder = Path(tmp)
            results["parity"].append(time_store(folder, cases))
            results["wal-full"].append(time_reference(folder, cases, per_case=True))
            results["one-transaction"].append(time_reference(folder, cases, per_case=False))
    ours = statistics.median(results["parity"])
    print(f"{args.cases} cases x {args.repeats} repeats, median seconds per case")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:16s} {median * 1e3:8.3f} ms   parity/this = {ours / median:6.2f}")
    passed = ours < BAR_S
    print(f"bar: per-case commit < {BAR_S * 1e3:.0f} ms: {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
