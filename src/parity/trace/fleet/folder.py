"""Reading a fleet output folder (``OUT/<table>.parquet`` and ``OUT/fleet.json``) back, and the
headline figures the report, the store and ``parity compare`` show.

The folder is what the reduce wrote; nothing here recomputes a per-collective or per-rank
figure, it only summarises the tables' own columns:

- ``skew_median_ns``, ``skew_p99_ns``: the median and 99th percentile of ``collectives.skew_ns``
  over every matched collective (numpy's linear interpolation between order statistics);
- ``wait_total_ns``: the sum of ``arrivals.wait_ns`` over every rank and collective;
- per op: the same for its collectives, with the median ``comm_ns``, ``busbw_bps`` and ``bytes``;
- ``straggler_ranks``: the ranks whose ``stragglers.straggler`` is true, most often last first;
- ``straggler_ranks_in_doubt``: those of them whose ``stragglers.in_doubt`` is true (named only
  with collectives a clock offset can explain; none for a folder written without the column).

pyarrow is imported inside the functions that read Parquet (the ``fleet`` extra), so this module
imports without it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.fleet.tables import FLEET_TABLES

# the tables the report, the store and compare read (``arrivals`` only for waits and lateness)
READ_TABLES = ("collectives", "arrivals", "ranks", "steps", "stragglers")
# the columns read where not all are needed (arrivals: one row per rank and collective)
READ_COLUMNS = {"arrivals": ("group", "seq", "rank", "wait_ns", "lateness_ns")}
# columns added at a table's end after its first version: shown where a folder has them
OPTIONAL_COLUMNS = frozenset({"median_margin_ns", "mean_step_cost_ns", "window_ns", "held_ns", "fair_held_ns",
                              "clock_suspect_last", "in_doubt"})
# fleet.json's fields that are read, with their JSON type (null where absent is allowed)
SUMMARY_FIELDS = (("ranks", int, "a rank count"), ("ranks_per_node", int, "a rank count"),
                  ("counts", dict, "an object of counts"), ("stragglers", list, "a list of ranks"),
                  ("findings", (dict, list), "an object of findings"), ("methods", dict, "an object"),
                  ("vote", dict, "an object"), ("step_cost", dict, "an object"))
HEADLINE_METHOD = ("median and p99 (numpy linear interpolation) of collectives.skew_ns; "
                   "wait = sum of arrivals.wait_ns; busbw: median of collectives.busbw_bps")


@dataclass(frozen=True, kw_only=True)
class FleetFolder:
    """One fleet output folder: ``summary`` is ``fleet.json``; ``tables`` maps each table name
    to its columns as numpy arrays (strings as object arrays)."""

    out_dir: str
    summary: dict[str, Any]
    tables: dict[str, dict[str, np.ndarray]]

    def table(self, name: str) -> dict[str, np.ndarray]:
        return self.tables[name]

    def rows(self, name: str) -> int:
        columns = self.tables[name]
        return len(next(iter(columns.values()))) if columns else 0

    @property
    def ranks(self) -> int:
        """Ranks in the job: ``fleet.json``'s count, else the ranks table's rows."""
        value = self.summary.get("ranks")
        return int(value) if isinstance(value, int) else self.rows("ranks")

    @property
    def ranks_per_node(self) -> int | None:
        value = self.summary.get("ranks_per_node")
        return int(value) if isinstance(value, int) else None

    @property
    def findings(self) -> list[dict[str, Any]]:
        """``fleet.json``'s findings as ``Finding.to_dict()`` dicts (code, severity, message,
        hint): the reduce writes them as ``{code: {count, examples...}}``; a list of finding
        dicts is taken as it is."""
        found = self.summary.get("findings") or []
        if isinstance(found, dict):
            return [finding_dict(code, details) for code, details in found.items()]
        return [f for f in found if isinstance(f, dict)]


# what each of the reduce's finding codes means (parity.trace.fleet.matching.match_findings)
FINDING_TEXT = {
    "mismatched_op": ("warning", "collectives whose members recorded different ops at one (group, seq): the ranks' "
                                 "numbering drifted apart", "a rank's profile may have started later; profile the same steps"),
    "incomplete": ("warning", "collectives recorded by fewer ranks than their group has", ""),
    "ranks_missing": ("warning", "ranks that a process group names have no trace in the fleet",
                      "add their trace files to the PATHs"),
    "group_ranks_disagree": ("warning", "process groups whose ranks recorded different member lists", ""),
    "p2p_not_matched": ("info", "point-to-point ops (send/recv) were counted, not matched as collectives", ""),
    "clock_offset_suspected": ("warning", "ops ended more than 1 us before the last member of their collective "
                                          "arrived: those ranks' clocks are probably offset, and their arrival "
                                          "figures with them", "take the ranks' traces on one synchronised clock"),
}
MAX_EXAMPLES = 3  # examples of a finding written out in its message


def finding_dict(code: str, details: Any) -> dict[str, Any]:
    """One of the reduce's findings (``code: {count, examples or ranks}``) as a finding dict."""
    severity, text, hint = FINDING_TEXT.get(code, ("warning", code.replace("_", " "), ""))
    details = details if isinstance(details, dict) else {"count": details}
    shown = finding_details(details)
    message = f"{details.get('count', '?')} {text}" + (f"; {shown}" if shown else "")
    return {"code": code, "severity": severity, "message": message, "hint": hint}


def finding_details(details: Any) -> str:
    """A reduce finding's details in words, as the terminal and the report write them: its
    other counts (``ranks 2``), then up to :data:`MAX_EXAMPLES` examples, each ``key value``
    (``rank 0, ops 4, max_early_end_ns 116539000``), and how many more there are."""
    if not isinstance(details, dict):
        return ""
    counts = [f"{k} {v}" for k, v in details.items() if k not in ("count", "examples")]
    examples = details.get("examples") if isinstance(details.get("examples"), list) else []
    shown = [", ".join(f"{k} {v}" for k, v in e.items()) if isinstance(e, dict) else str(e)
             for e in examples[:MAX_EXAMPLES]]
    more = [f"{len(examples) - MAX_EXAMPLES} more"] if len(examples) > MAX_EXAMPLES else []
    return "; ".join(counts + shown + more)


def read_fleet_folder(out_dir: str | Path) -> FleetFolder:
    """``OUT/fleet.json`` and the fleet tables, each checked for the columns of
    :data:`parity.trace.fleet.tables.FLEET_TABLES` (extra columns are kept)."""
    out = Path(out_dir)
    hint = "run parity trace fleet PATH... --out DIR first, or give the DIR it wrote"
    summary_path = out / "fleet.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParityError(f"{out} has no fleet.json; {hint}") from None
    except (OSError, ValueError) as exc:
        raise ParityError(f"{summary_path}: cannot read it as JSON ({exc}); {hint}") from exc
    if not isinstance(summary, dict):
        raise ParityError(f"{summary_path} is not a JSON object; {hint}")
    for key, kind, what in SUMMARY_FIELDS:
        value = summary.get(key)
        if value is not None and not (isinstance(value, kind) and not isinstance(value, bool)):
            raise ParityError(f"{summary_path}: {key} is {json.dumps(value)[:60]}, not {what}; write the folder "
                              "again with parity trace fleet")
    tables = {name: read_table(out / f"{name}.parquet", name) for name in READ_TABLES}
    return FleetFolder(out_dir=str(out.resolve()), summary=summary, tables=tables)


def read_table(path: Path, name: str) -> dict[str, np.ndarray]:
    """One fleet table as numpy columns, refused in one line when missing or short of columns."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ParityError("reading a fleet folder needs pyarrow: pip install 'parity[fleet]'") from exc
    if not path.is_file():
        raise ParityError(f"{path} is missing; run parity trace fleet again to write every table")
    try:
        names = pq.read_schema(path).names
        missing = [c for c, _, _ in FLEET_TABLES[name] if c not in names and c not in OPTIONAL_COLUMNS]
        if missing:
            raise ParityError(f"{path} lacks columns {', '.join(missing)}; write it again with parity trace fleet")
        # the file's own reader: pq.read_table goes through pyarrow's dataset layer, whose
        # import outweighs reading a fleet table
        table = pq.ParquetFile(path).read(columns=list(READ_COLUMNS.get(name, names)), use_threads=False)
    except ParityError:
        raise
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise ParityError(f"{path}: cannot read it as Parquet ({one_line(exc)}); run parity trace fleet again") from exc
    check_columns(path, table, FLEET_TABLES[name])
    return {c: table.column(c).to_numpy() for c in table.column_names}


def check_columns(path: Path, table: Any, columns: tuple) -> None:
    """A ParityError naming the first declared column of ``table`` whose values are not of its
    declared kind (an integer column of any width, a float column of floats or integers, text,
    booleans) or that holds a null: the reduce writes neither, and a figure read from one would
    be wrong (a null skew read back as NaN) rather than refused."""
    import pyarrow.types as pat

    kinds = {"int32": pat.is_integer, "int64": pat.is_integer, "bool": pat.is_boolean,
             "float64": lambda t: pat.is_floating(t) or pat.is_integer(t),
             "string": lambda t: pat.is_string(t) or pat.is_large_string(t)}
    for column, kind, _ in columns:
        if column not in table.column_names:
            continue
        values = table.column(column)
        if not kinds[kind](values.type):
            raise ParityError(f"{path}: column {column} holds {values.type} values where {kind} belong; "
                              "write the folder again with parity trace fleet")
        if values.null_count:
            first = next(i for i, v in enumerate(values.is_null().to_pylist()) if v)
            raise ParityError(f"{path}: column {column} is null in row {first} ({values.null_count} null of "
                              f"{len(values)}); write the folder again with parity trace fleet")


def percentile(values: np.ndarray, q: float) -> float | None:
    """The ``q``-th percentile (numpy's linear interpolation); None for no values."""
    return float(np.percentile(values, q)) if len(values) else None


def median(values: np.ndarray) -> float | None:
    return percentile(values, 50.0)


def arrival_index(folder: FleetFolder) -> np.ndarray:
    """Per row of the arrivals table: the row of its collective (same group and seq) in the
    collectives table, -1 where none matches. Vectorised: groups become integer codes, each
    (code, seq) one int64 key, looked up by binary search in the collectives' sorted keys."""
    coll, arr = folder.table("collectives"), folder.table("arrivals")
    if not len(coll["seq"]) or not len(arr["seq"]):
        return np.full(len(arr["seq"]), -1, dtype=np.int64)
    _, codes = np.unique(np.concatenate([coll["group"], arr["group"]]).astype(str), return_inverse=True)
    span = int(max(coll["seq"].max(), arr["seq"].max())) + 1
    keys = codes.astype(np.int64) * span + np.concatenate([coll["seq"], arr["seq"]]).astype(np.int64)
    coll_keys, arr_keys = keys[: len(coll["seq"])], keys[len(coll["seq"]):]
    order = np.argsort(coll_keys, kind="stable")
    pos = np.clip(np.searchsorted(coll_keys[order], arr_keys), 0, len(order) - 1)
    found = coll_keys[order][pos] == arr_keys
    return np.where(found, order[pos], -1).astype(np.int64)


def collective_waits_ns(folder: FleetFolder) -> np.ndarray:
    """Per row of the collectives table: the sum of its members' ``wait_ns`` (from arrivals)."""
    index = arrival_index(folder)
    known = index >= 0
    waits = folder.table("arrivals")["wait_ns"].astype(np.int64)
    out = np.zeros(folder.rows("collectives"), dtype=np.int64)
    np.add.at(out, index[known], waits[known])
    return out


def op_rows(folder: FleetFolder) -> list[dict[str, Any]]:
    """Per collective op (sorted by name): how many matched, skew median and p99, total wait,
    median comm time, bytes and bus bandwidth (positive finite ``busbw_bps`` only)."""
    coll = folder.table("collectives")
    waits = collective_waits_ns(folder)
    rows = []
    for op in sorted(set(coll["op"].tolist())):
        mask = coll["op"] == op
        skew = coll["skew_ns"][mask].astype(np.float64)
        busbw = coll["busbw_bps"][mask].astype(np.float64)
        busbw = busbw[np.isfinite(busbw) & (busbw > 0)]
        sizes = coll["bytes"][mask].astype(np.float64)
        sizes = sizes[sizes >= 0]  # -1: the trace recorded no size
        rows.append({"op": op, "collectives": int(mask.sum()), "skew_median_ns": median(skew),
                     "skew_p99_ns": percentile(skew, 99.0), "skew_max_ns": float(skew.max()),
                     "wait_total_ns": int(waits[mask].sum()),
                     "comm_median_ns": median(coll["comm_ns"][mask].astype(np.float64)),
                     "bytes_median": median(sizes),
                     "busbw_median_bps": median(busbw)})
    return rows


def straggler_rows(folder: FleetFolder) -> list[dict[str, Any]]:
    """The stragglers table as it is (the reduce's order: most often last first)."""
    table = folder.table("stragglers")
    names = [c for c, _, _ in FLEET_TABLES["stragglers"] if c in table]
    return [{c: _plain(table[c][i]) for c in names} for i in range(folder.rows("stragglers"))]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def fleet_headline(folder: FleetFolder) -> dict[str, Any]:
    """The figures a fleet is remembered and compared by (module doc), as one JSON-ready dict."""
    coll = folder.table("collectives")
    skew = coll["skew_ns"].astype(np.float64)
    stragglers = folder.table("stragglers")
    flagged = stragglers["straggler"].astype(bool)
    doubted = flagged & stragglers["in_doubt"].astype(bool) if "in_doubt" in stragglers else np.zeros_like(flagged)
    return {"ranks": folder.ranks, "ranks_per_node": folder.ranks_per_node, "collectives": int(len(skew)),
            "skew_median_ns": median(skew), "skew_p99_ns": percentile(skew, 99.0),
            "wait_total_ns": int(folder.table("arrivals")["wait_ns"].astype(np.int64).sum()),
            "straggler_ranks": [int(r) for r in stragglers["rank"][flagged]],
            "straggler_ranks_in_doubt": [int(r) for r in stragglers["rank"][doubted]],
            "ops": op_rows(folder), "method": HEADLINE_METHOD}


def rank_paths(out_dir: str | Path, summary: dict[str, Any]) -> list[str]:
    """The rank files a fleet was made of: ``fleet.json``'s ``paths`` or ``sources`` when it
    lists them, else the ``source`` column of the map's ``rank_info`` files, else none."""
    for key in ("paths", "sources"):
        if isinstance(summary.get(key), list):
            return [str(p) for p in summary[key]]
    folder = Path(out_dir) / "map" / "rank_info"
    if not folder.is_dir():
        return []
    import pyarrow.parquet as pq

    sources: list[str] = []
    for path in sorted(folder.glob("rank-*.parquet")):
        table = pq.ParquetFile(path).read(columns=["source"]) if "source" in pq.read_schema(path).names else None
        sources += [str(s) for s in (table.column("source").to_pylist() if table is not None else []) if s]
    return sources
