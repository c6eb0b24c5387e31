"""``parity decode import``: numbers where numbers belong and positive times, checked before
anything is stored (a negative TPOT, a zero TTFT, text for a count, a bad per-request list)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from test_decode_import import INFERENCEX, VLLM

from parity.cli.main import main
from parity.families.decode.serving.imported import import_results
from parity.model.errors import ParityError

BAD_VLLM = [
    ("median_tpot_ms", -8.0, "median_tpot_ms = -8.0 is not a number >= 0"),
    ("mean_tpot_ms", 0.0, "a TPOT of 0 is not a time a request takes"),
    ("median_ttft_ms", 0, "a TTFT of 0 is not a time a request takes"),
    ("p99_itl_ms", "11", "p99_itl_ms = '11' is not a number >= 0"),
    ("std_e2el_ms", float("nan"), None),  # orjson writes NaN as null: refused as not a number
    ("completed", "64", "completed = '64' is not a count"),
    ("failed", -1, "failed = -1 is not a count"),
    ("duration", -2.0, "duration = -2.0 is not a number >= 0"),
    ("output_throughput", -5.0, None),
    ("request_rate", 0, "request_rate = 0 is not a rate above 0 or 'inf'"),
    ("ttfts", [0.1, -0.1], "ttfts holds a value that is not a time >= 0 s"),
    ("itls", [[0.01], ["x"]], "itls holds a value that is not a time >= 0 s"),
]


def _write(path: Path, data: Any) -> Path:
    path.write_bytes(orjson.dumps(data))
    return path


@pytest.mark.parametrize(("field", "value", "expected"), BAD_VLLM, ids=[f[0] for f in BAD_VLLM])
def test_a_bad_vllm_number_is_refused_in_one_line(tmp_path: Path, field: str, value: Any, expected: str | None) -> None:
    path = _write(tmp_path / "v.json", {**VLLM, field: value})
    with pytest.raises(ParityError) as info:
        import_results(path, fmt="vllm")
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert expected is None or expected in message, message


@pytest.mark.parametrize(("field", "value"), [("median_tpot", -0.02), ("tp", "8"), ("output_tput_per_gpu", -450.0),
                                              ("median_intvty", "fast"), ("conc", -64)])
def test_a_bad_inferencex_number_is_refused(tmp_path: Path, field: str, value: Any) -> None:
    with pytest.raises(ParityError, match=field if field != "output_tput_per_gpu" else "not an InferenceX|output_tput"):
        import_results(_write(tmp_path / "x.json", {**INFERENCEX, field: value}), fmt="inferencex")


def test_the_cli_refuses_a_negative_tpot_and_stores_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "v.json", {**VLLM, "median_tpot_ms": -8.0})
    db = tmp_path / "r.sqlite"
    with pytest.raises(SystemExit) as info:
        main(["decode", "import", str(path), "--format", "vllm", "--db", str(db)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "median_tpot_ms = -8.0" in err
    assert not db.exists()
