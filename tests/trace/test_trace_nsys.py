"""Nsight Systems exports of other versions, made here: renamed columns, missing tables."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from parity.model.errors import ParityError
from parity.trace import analyze, load_trace


def write_export(path: Path, *, gpu_key: str = "id", kernels: bool = True, copies: bool = True) -> Path:
    """A kernel at [100, 300] ns and a copy at [300, 400] ns on stream 7, launched by two runtime
    calls; TARGET_INFO_GPU keys its device by ``gpu_key``."""
    with sqlite3.connect(path) as db:
        db.executescript(f"""
            CREATE TABLE StringIds (id INTEGER, value TEXT);
            CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER,
                                                      correlationId INTEGER, nameId INTEGER);
            CREATE TABLE TARGET_INFO_GPU ({gpu_key} INTEGER, name TEXT);
        """)
        db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "ampere_sgemm_128x64_nn"), (2, "cudaLaunchKernel")])
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 5, ?, 2)", [(0, 50, 1), (60, 80, 2)])
        db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA A100-SXM4-80GB')")
        if kernels:
            db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
                       "streamId INTEGER, correlationId INTEGER, demangledName INTEGER, shortName INTEGER)")
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 300, 0, 7, 1, 1, 1)")
        if copies:
            db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, "
                       "streamId INTEGER, correlationId INTEGER, copyKind INTEGER)")
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (300, 400, 0, 7, 2, 1)")
    return path


def test_a_gpu_table_keyed_by_device_id_is_read(tmp_path: Path) -> None:
    table = load_trace(write_export(tmp_path / "new.sqlite", gpu_key="deviceId"))
    assert table.meta["devices"] == [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]
    assert table.meta["warnings"] == []
    assert analyze(table).first.device.busy_ns == 300


def test_a_missing_optional_column_is_named_in_a_warning(tmp_path: Path) -> None:
    path = write_export(tmp_path / "odd.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN copyKind")
    table = load_trace(path)
    assert "CUPTI_ACTIVITY_KIND_MEMCPY has no copyKind column; read as empty" in table.meta["warnings"]


def test_an_export_without_a_kernel_table_is_a_warning(tmp_path: Path) -> None:
    result = analyze(load_trace(write_export(tmp_path / "copies.sqlite", kernels=False)))
    assert any("no CUPTI_ACTIVITY_KIND_KERNEL table" in w for w in result.warnings)
    assert result.first.device.busy_ns == 100


def test_an_export_without_device_activity_is_an_error(tmp_path: Path) -> None:
    path = write_export(tmp_path / "host.sqlite", kernels=False, copies=False)
    with pytest.raises(ParityError, match="no device activity") as info:
        load_trace(path)
    assert str(path) in str(info.value)
