"""The import paths fuzzed: random mutations of a valid run export (``parity runs import``), of
valid vllm and InferenceX results (``parity decode import``) and of a comparison file (``parity
report --comparison``), run through the command line.
Every outcome is a clean import (exit 0, exactly one run more, with all its cases) or one line
``parity: ...`` with exit 2 and the store as it was: never a traceback, an internal error or a
partial write. Seeded, with a bounded count and time."""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from run_exports import valid_document

from parity.cli.main import main
from parity.store import Store

SEED = 31
MUTANTS = 150  # per document kind
TIME_LIMIT_S = 60.0  # per document kind: the loop stops early rather than slow the suite
ODD_VALUES: tuple[Any, ...] = (None, "", "x", "../../etc/passwd", "a/b", -1, 0, 1, -0.5, 1e308, 2**63, True, [], {},
                               [None], {"x": 1}, "inf", "NaN", "2026-13-45", "x" * 300)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into the document (keys and list indices), the root excluded."""
    out: list[tuple[Any, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        out.append(prefix + (key,))
        out.extend(_paths(child, prefix + (key,)))
    return out


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


def mutate(document: Any, rng: random.Random) -> bytes:
    """One to three structural mutations, then sometimes a cut or a flipped byte of the text."""
    changed = copy.deepcopy(document)
    for _ in range(rng.randint(1, 3)):
        paths = _paths(changed)
        if not paths:
            break
        path = rng.choice(paths)
        parent, key = _parent(changed, path), path[-1]
        action = rng.choice(("replace", "replace", "replace", "delete", "add", "negate", "duplicate"))
        if action == "replace":
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif action == "delete":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[rng.choice(("extra", "colour", str(key) + "_x"))] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif action == "negate" and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = -parent[key] if parent[key] else -1
        elif action == "duplicate" and isinstance(parent[key], list) and parent[key]:
            parent[key].append(copy.deepcopy(parent[key][0]))
    raw = json.dumps(changed).encode()  # json, not orjson: NaN and Infinity reach the parser too
    roll = rng.random()
    if roll < 0.08:
        raw = raw[: rng.randrange(len(raw))]
    elif roll < 0.16:
        at = rng.randrange(len(raw))
        raw = raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1:]
    return raw


def _counts(db: Path) -> tuple[int, int]:
    if not db.exists():
        return (0, 0)
    with Store.open(db, read_only=True) as store:
        return store.query("SELECT count(*) FROM runs")[0][0], store.query("SELECT count(*) FROM cases")[0][0]


def _mutants(document: Any) -> Iterator[tuple[int, bytes]]:
    """``(index, text)`` of up to ``MUTANTS`` seeded mutants of ``document``, until ``TIME_LIMIT_S``."""
    rng = random.Random(SEED)
    started = time.perf_counter()
    for index in range(MUTANTS):
        if time.perf_counter() - started > TIME_LIMIT_S:
            return
        yield index, mutate(document, rng)


def _fuzz(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: Any, command: list[str]) -> dict[str, int]:
    """Import ``MUTANTS`` mutants of ``document`` with ``command`` (its PATH last); the outcomes."""
    db, path = tmp_path / "fuzz.sqlite", tmp_path / "mutant.json"
    outcomes = {"imported": 0, "refused": 0}
    for index, text in _mutants(document):
        path.write_bytes(text)
        before = _counts(db)
        with pytest.raises(SystemExit) as info:
            main([*command, str(path), "--db", str(db)])
        out, err = capsys.readouterr()
        after = _counts(db)
        where = f"mutant {index} (seed {SEED}): {path.read_bytes()[:300]!r}"
        if info.value.code in (0, None):
            assert after[0] == before[0] + 1 and after[1] >= before[1], where  # a run may have no cases
            outcomes["imported"] += 1
        else:
            assert info.value.code == 2, f"{where}: exit {info.value.code}: {err}"
            assert err.startswith("parity: ") and err.count("\n") == 1, f"{where}: {err}"
            assert "internal error" not in err and "Traceback" not in err, f"{where}: {err}"
            assert after == before, f"{where}: a refused import wrote {after} over {before}"
            outcomes["refused"] += 1
    return outcomes


def test_runs_import_fuzz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = _fuzz(tmp_path, capsys, valid_document(tmp_path), ["runs", "import", "--as-new"])
    assert outcomes["refused"] > 0 and sum(outcomes.values()) >= 50, outcomes


@pytest.mark.parametrize("fmt", ["vllm", "inferencex"])
def test_decode_import_fuzz(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    from test_decode_import import INFERENCEX, VLLM

    document = VLLM if fmt == "vllm" else INFERENCEX
    outcomes = _fuzz(tmp_path, capsys, document, ["decode", "import", "--format", fmt])
    assert outcomes["refused"] > 0 and sum(outcomes.values()) >= 50, outcomes


def test_report_comparison_fuzz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``parity report --comparison FILE`` on mutants of a comparison file: a report, or one line
    naming what the file lacks; never an error from inside the drawing."""
    from report_rows import comparison_dict

    document = {"schema_version": 1, "kind": "compare", **comparison_dict()}
    path, out = tmp_path / "mutant.json", tmp_path / "report.html"
    outcomes = {"drawn": 0, "refused": 0}
    for index, text in _mutants(document):
        path.write_bytes(text)
        with pytest.raises(SystemExit) as info:
            main(["report", "--comparison", str(path), "-o", str(out)])
        err = capsys.readouterr().err
        where = f"mutant {index} (seed {SEED}): {path.read_bytes()[:300]!r}"
        if info.value.code in (0, None):
            outcomes["drawn"] += 1
        else:
            assert info.value.code == 2 and err.startswith("parity: ") and err.count("\n") == 1, f"{where}: {err}"
            assert "internal error" not in err, f"{where}: {err}"
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and outcomes["drawn"] > 0, outcomes


def test_the_mutations_are_seeded() -> None:
    document = {"a": [1, 2, {"b": "c"}], "d": 1.5}
    first = [mutate(document, random.Random(SEED)) for _ in range(3)]
    assert first == [mutate(document, random.Random(SEED)) for _ in range(3)]
    assert orjson.loads(orjson.dumps(document)) == {"a": [1, 2, {"b": "c"}], "d": 1.5}  # the original is untouched
