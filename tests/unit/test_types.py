"""The type checker passes on model, harness, store, compare and report: ``mypy`` with the
``[tool.mypy]`` settings of pyproject.toml (its ``packages``), and no error in any module.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="the type check needs mypy: pip install -e '.[test]'")

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
ERROR = re.compile(r"^(?P<path>[^:\n]+\.py):\d+: error: ", re.MULTILINE)


def _mypy() -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
                           "--cache-dir", str(REPO_ROOT / ".mypy_cache")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


def test_mypy_finds_no_error() -> None:
    status, output = _mypy()
    erring = sorted({m.group("path").replace("\\", "/") for m in ERROR.finditer(output)})
    assert not erring, f"mypy errors in {', '.join(erring)}:\n{output}"
    assert status == 0, output
