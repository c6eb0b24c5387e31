"""The msprof-analyze benchmark reads its ``OverallMetrics`` sheet right: a small xlsx made here
(shared and inline strings, indented row names, '/' and 'INF' cells, a cell left out), and its
re-derivation of msprof-analyze's GPU Cube time from parity's kernel table. msprof-analyze
itself is not needed."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "compare_vs_msprof_analyze.py"
M = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("compare_vs_msprof_analyze", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)
    sys.path.remove(str(BENCH.parent))


def _cell(ref: str, value: object, shared: list[str]) -> str:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith("inline:"):
        return f'<c r="{ref}" t="inlineStr"><is><t>{value[7:]}</t></is></c>'
    if isinstance(value, str):
        shared.append(value)
        return f'<c r="{ref}" t="s"><v>{len(shared) - 1}</v></c>'
    return f'<c r="{ref}"><v>{value}</v></c>'


def _xlsx(path: Path, rows: list[list[object]]) -> Path:
    shared: list[str] = []
    body = "".join(f'<row r="{i}">' + "".join(_cell(f"{'ABCDEFGHI'[j]}{i}", v, shared) for j, v in enumerate(row))
                   + "</row>" for i, row in enumerate(rows, 1))
    strings = "".join(f"<si><t>{s}</t></si>" for s in shared)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("xl/workbook.xml", f'<workbook xmlns="{M}" xmlns:r="{R}"><sheets>'
                   f'<sheet name="OverallMetrics" sheetId="1" r:id="rId1"/></sheets></workbook>')
        z.writestr("xl/_rels/workbook.xml.rels",
                   '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                   '<Relationship Id="rId1" Target="worksheets/sheet1.xml" Type="worksheet"/></Relationships>')
        z.writestr("xl/sharedStrings.xml", f'<sst xmlns="{M}">{strings}</sst>')
        z.writestr("xl/worksheets/sheet1.xml", f'<worksheet xmlns="{M}"><sheetData>{body}</sheetData></worksheet>')
    return path


def test_overall_metrics_sheet_is_read_by_cell_reference(bench, tmp_path: Path) -> None:
    xlsx = _xlsx(tmp_path / "r.xlsx", [
        [None, "Base Profiling: gpu.json", None, None, "Comparison Profiling: npu"],
        ["Index", "Duration(ms)", "Duration Ratio", "Number", "Duration(ms)", "Duration Ratio", "Number"],
        ["Computing Time", 10.63, 0.5, 79, 8.873756, 0.06, 185],
        ["\t\tMatmul (Cube)", 2.621, None, 6, 0.997399, 0.007, 9],  # Duration Ratio cell left out
        ["\tOther", 0, 0, "/", 0.005539, 4e-05, "/", 0.01, "INF"],
        ["inline:E2E Time", 12920.244, 1, "/", 136.581009, 1, "/"],
    ])
    ms = bench.overall_metrics(xlsx)
    assert ms == {"Computing Time": (10.63, 8.873756), "Matmul (Cube)": (2.621, 0.997399),
                  "Other": (0.0, 0.005539), "E2E Time": (12920.244, 136.581009)}
    assert bench.read_sheet(xlsx, "OverallMetrics")[3][2] is None
    with pytest.raises(KeyError, match="no sheet"):
        bench.read_sheet(xlsx, "Missing")


def test_cube_time_rederived_from_parity_kernels_with_msprof_masks(bench, tmp_path: Path) -> None:
    table = tmp_path / "kernels.csv"
    table.write_text("rank,name,category,count,total_us,mean_us,share_of_summed\n"
                     "0,sm80_xmma_gemm_f32,matrix,2,1000.0,500.0,0.1\n"
                     "0,void fbgemm_gpu::permute_2D_lengths_kernel<int>(),vector,1,250.0,250.0,0.1\n"
                     "0,void gemv2T_kernel_val<int>(),matrix,1,66.0,66.0,0.1\n"
                     "0,ncclKernel_AllReduce_gemm_named,communication,1,9000.0,9000.0,0.1\n"
                     "0,vectorized_elementwise_kernel,vector,3,300.0,100.0,0.1\n")
    # gemm 1000 + fbgemm 250 (its 'gemm' mask matches) = 1250 us; gemv2T and NCCL are not Cube
    assert bench.cube_by_masks(table) == pytest.approx(1.25)


def test_shared_line_passes_within_one_percent(bench) -> None:
    assert bench.Line("GPU", "a", "b", 100.0, 100.9, True).ok
    assert not bench.Line("GPU", "a", "b", 100.0, 101.1, True).ok
    assert bench.Line("GPU", "a", "b", 100.0, 150.0, False).ok  # a difference of definition is reported, not failed
    assert bench.Line("GPU", "a", "b", 200.0, 150.0, False).diff == pytest.approx(0.25)
