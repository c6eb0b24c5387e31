"""Shared fixtures and the layering of the suite.

Tests live in one folder per tier, by what they need: ``unit`` (pure functions and the
project's rules), ``trace`` (trace readers, analysis, fleets; no torch), ``harness`` (runner,
timing, store, compare, report data), ``families`` (each family's suite, summary and view),
``cli`` (whole commands, golden text), ``ranks`` (several processes, gloo groups), ``browser``
(headless Chromium), ``device`` (the device layer; accelerator tests skip elsewhere),
``multinode`` (ranks on several network-namespace nodes; root only, skipped elsewhere) and
``serving`` (a real vLLM server and engine on the CPU; skipped where vLLM is not found). Each
test is marked with its tier's name, so ``-m unit`` or ``-m "not ranks and not browser"``
select by tier as well as by folder.

Tests marked ``accelerator`` need a non-CPU PyTorch device and are skipped, with the reason,
where there is none; tests marked ``torch`` are skipped where PyTorch is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TIERS = ("unit", "trace", "harness", "families", "cli", "ranks", "browser", "device", "multinode", "serving")
# Test modules import helpers and fixtures from each other across tiers (``from test_gemm_analysis
# import ...``); every tier folder is importable, whichever tier is collected first or alone.
sys.path[1:1] = [str(REPO_ROOT / "tests" / tier) for tier in TIERS if str(REPO_ROOT / "tests" / tier) not in sys.path]
SHARED_TRACES = REPO_ROOT.parent / "shared" / "data" / "traces"
# The suite's real CPU runs size their cache flush (2x), bandwidth copy (4x) and latency sweep by
# the last-level cache. A VM may report its host's whole L3 (480 MiB to 2 vCPUs): every flushed
# call then writes 960 MB (70 ms) and one bandwidth copy allocates 1.9 GB, and the suite takes
# hours where it takes minutes on a 32 MiB L3. The tests measure behaviour, not this machine, so
# they run as on a 32 MiB L3 (PARITY_CPU_LLC_BYTES, inherited by the ranks they start); the tests
# of cache detection remove it (``reported_llc`` below).
os.environ.setdefault("PARITY_CPU_LLC_BYTES", str(32 << 20))


def _torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def _accelerator_available() -> str | None:
    """The name of a usable non-CPU torch backend, or None."""
    if not _torch_available():
        return None
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return "xpu"
    if torch.backends.mps.is_available():
        return "mps"
    if importlib.util.find_spec("torch_npu") is not None:
        import torch_npu  # noqa: F401

        if torch.npu.is_available():  # type: ignore[attr-defined]
            return "npu"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    has_torch = _torch_available()
    accelerator = _accelerator_available() if has_torch else None
    has_cuda = accelerator == "cuda"
    for item in items:
        tier = Path(str(item.fspath)).parent.name
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
        if "torch" in item.keywords and not has_torch:
            item.add_marker(pytest.mark.skip(reason="needs PyTorch: pip install -e '.[bench]'"))
        if "accelerator" in item.keywords and accelerator is None:
            item.add_marker(pytest.mark.skip(reason="needs a non-CPU PyTorch device; none here"))
        if "cuda" in item.keywords and not has_cuda:
            item.add_marker(pytest.mark.skip(reason="needs torch.cuda (NVIDIA or AMD GPU)"))


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    """The shared folder of real profiler traces; skipped with the reason when absent."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"shared traces not found at {SHARED_TRACES}")
    return SHARED_TRACES


@pytest.fixture()
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh results store path, also exported as PARITY_DB for CLI tests."""
    path = tmp_path / "parity.sqlite"
    monkeypatch.setenv("PARITY_DB", str(path))
    return path


@pytest.fixture()
def shares_outcomes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each trace read in several processes (``readers.parallel.read_shares``) gave a table."""
    from parity.trace.readers import parallel

    outcomes: list[bool] = []
    original = parallel.read_shares

    def counted(*args, **kwargs):
        result = original(*args, **kwargs)
        outcomes.append(result is not None)
        return result

    monkeypatch.setattr(parallel, "read_shares", counted)
    return outcomes


@pytest.fixture(autouse=True)
def _own_lock_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's runs take their device locks (``parity.device.lock``) in a folder of their
    own, so tests run side by side never see each other as concurrent runs."""
    monkeypatch.setenv("PARITY_LOCK_DIR", str(tmp_path_factory.mktemp("locks")))


@pytest.fixture
def reported_llc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last-level cache as the system reports it (the suite's PARITY_CPU_LLC_BYTES removed)."""
    monkeypatch.delenv("PARITY_CPU_LLC_BYTES", raising=False)

