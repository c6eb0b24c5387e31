"""Input edges of the command line: a ``--window`` that holds no device activity is a one-line
error (not tables of zeros with exit 0), and the parser's usage errors are one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ascend_folder import BASE_US, write_rank

from parity.cli.main import main


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_a_window_that_selects_nothing_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank = write_rank(tmp_path)
    status, _, err = parity(capsys, "trace", "analyze", str(rank), "--window", "1:2")
    (line,) = [line for line in err.splitlines() if not line.startswith("[")]  # progress lines start with [
    assert status == 2 and line.startswith("parity: "), err
    assert "--window 1:2: rank 0: no device activity in the window" in line and "choose a window inside it" in line
    inside = f"{BASE_US + 100}:{BASE_US + 600}"  # the device's span: every task
    status, out, err = parity(capsys, "trace", "analyze", str(rank), "--window", inside)
    assert status == 0 and "given with --window" in out, err
    status, _, err = parity(capsys, "trace", "analyze", str(rank), "--window", "span")
    assert status == 0, err


@pytest.mark.parametrize(("argv", "expected"), [
    (["runs", "show"], "parity: missing argument 'RUN_ID'; see parity runs show --help"),
    (["runs", "list", "--limit", "0"], "parity: invalid value for '--limit': 0 is not in the range x>=1; "
                                       "see parity runs list --help"),
    (["runs", "list", "--colour"], "parity: no such option '--colour'; see parity runs list --help"),
    (["no-such-command"], "parity: no such command 'no-such-command'; see parity --help"),
])
def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    status, out, err = parity(capsys, *argv)
    assert status == 2 and out == "" and err == expected + "\n"


def test_a_usage_error_of_the_installed_command_is_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "parity", "runs", "show"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "parity: missing argument 'RUN_ID'; see parity runs show --help"]
