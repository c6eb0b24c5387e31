"""Docs and docstrings cite only files a clone of the repository has.

A docstring that says where its rule is written must point at a page in ``docs/`` (or at the
module that states the rule), never at notes kept outside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "tests", "benchmarks", "docs", "scripts")
# Spelled in parts so that this file does not match itself.
OUTSIDE = re.compile(r"\b(?:" + "DESIGN" + "|" + "STYLE" + r")\.md\b")
DOCS_CITATION = re.compile(r"\bdocs/([\w-]+\.md)\b")
TEST_CITATION = re.compile(r"\btests/[\w/]+\.py\b")


def _text_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            hidden = any(part.startswith(".") for part in path.relative_to(ROOT).parts)  # a local venv, caches
            if path.suffix in {".py", ".md", ".sh", ".toml"} and not hidden and path.is_file():
                files.append(path)
    return files


def test_no_citation_of_notes_outside_the_repository() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not offenders, f"cite a page in docs/ or the module instead: {offenders}"


def test_every_cited_docs_page_exists() -> None:
    missing = sorted(
        {
            f"{path.relative_to(ROOT)}: docs/{name}"
            for path in _text_files()
            for name in DOCS_CITATION.findall(path.read_text(errors="replace"))
            if not (ROOT / "docs" / name).is_file()
        }
    )
    assert not missing, f"cited pages that do not exist: {missing}"


def test_every_cited_test_file_exists() -> None:
    missing = sorted(
        {
            f"{path.relative_to(ROOT)}: {name}"
            for path in [*_text_files(), ROOT / "pyproject.toml"]
            for name in TEST_CITATION.findall(path.read_text(errors="replace"))
            if not (ROOT / name).is_file()
        }
    )
    assert not missing, f"cited test files that do not exist (tests live in tests/<tier>/): {missing}"
