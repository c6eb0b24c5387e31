"""m-grouped GEMM, the MoE experts' GEMM: group ``g`` computes ``D_g = A_g @ B_g^T`` with its
own ``B_g`` ``[N, K]`` and ``m_g`` rows of A, in DeepGEMM's two layouts.

- contiguous: the groups' rows are concatenated into one A ``[R, K]``, each group padded to a
  multiple of ``align`` rows (DeepGEMM aligns to 128); ``m_indices`` ``[R]`` gives each row's
  group, ``-1`` on padding rows, whose output is unspecified.
- masked: A is ``[G, M_max, K]`` and group ``g`` uses its first ``masked_m[g]`` rows; the rest
  of its rows are unspecified in D ``[G, M_max, N]`` (the decode-time layout, where the counts
  stay on the device).

Per-group ``m_g`` is drawn around its expected value: ``round(m_expected·u)`` with ``u``
uniform on ``[1 - spread, 1 + spread]`` from a seeded generator, so a run is reproducible and
the groups are uneven the way routed tokens are. Only valid rows are checked and counted as work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parity.metrics.kernels import ceil_div

SPREAD = 0.3


def draw_group_m(groups: int, expected_m: int, *, seed: int, spread: float = SPREAD,
                 max_m: int | None = None) -> list[int]:
    """``groups`` counts ``round(expected_m·u)``, ``u ~ U[1 - spread, 1 + spread]`` (seeded),
    each at most ``max_m`` when given."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    u = 1.0 - spread + 2.0 * spread * torch.rand(groups, generator=generator, dtype=torch.float64)
    counts = [max(0, round(expected_m * float(x))) for x in u]
    return [min(c, max_m) for c in counts] if max_m is not None else counts


def contiguous_indices(group_m: Sequence[int], *, align: int) -> list[int]:
    """``m_indices`` of the contiguous layout: ``g`` for each of group ``g``'s ``m_g`` rows,
    then ``-1`` up to the next multiple of ``align``. Example: (3, 1), align 2 ->
    [0, 0, 0, -1, 1, -1]."""
    out: list[int] = []
    for g, m in enumerate(group_m):
        out += [g] * m + [-1] * (ceil_div(m, align) * align - m)
    return out


def group_spans(m_indices: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(group, first row, end row)`` of each run of one group's rows, padding runs left out.
    Example: [0, 0, 0, -1, 1, -1] -> [(0, 0, 3), (1, 4, 5)]."""
    spans: list[tuple[int, int, int]] = []
    for row, g in enumerate(m_indices):
        if g < 0:
            continue
        if spans and spans[-1][0] == g and spans[-1][2] == row:
            spans[-1] = (g, spans[-1][1], row + 1)
        else:
            spans.append((g, row, row + 1))
    return spans


def contiguous_gemm(a: Any, b: Any, spans: Sequence[tuple[int, int, int]], *, compute: Any = None) -> Any:
    """Reference of the contiguous layout: each span of group ``g``'s rows times ``B_g^T``
    (``spans`` from ``group_spans(m_indices)``); padding rows are left zero. ``compute`` is the
    dtype of the products (the operands' own when None; float64 for the check)."""
    import torch

    compute = compute or a.dtype
    out = torch.zeros((a.shape[0], b.shape[1]), dtype=compute, device=a.device)
    for g, start, end in spans:
        out[start:end] = a[start:end].to(compute) @ b[g].to(compute).T
    return out


def masked_gemm(a: Any, b: Any, masked_m: Any, *, compute: Any = None) -> Any:
    """Reference of the masked layout: one batched ``A @ B^T`` over every group's ``M_max``
    rows, then the rows past ``masked_m[g]`` zeroed (they are unspecified: the torch reference
    multiplies them anyway, which the declared work does not count)."""
    import torch

    compute = compute or a.dtype
    out = torch.bmm(a.to(compute), b.to(compute).transpose(1, 2))
    rows = torch.arange(a.shape[1], device=a.device)[None, :]
    return out * (rows < masked_m.to(a.device)[:, None]).to(compute)[:, :, None]


def make_contiguous(group_m: Sequence[int], n: int, k: int, *, align: int, device: Any, seed: int,
                    dtype: Any) -> dict[str, Any]:
    """A ``[R, K]``, B ``[G, N, K]``, ``m_indices`` ``[R]`` (int32) on ``device``, and the
    row spans the torch reference walks (found once, outside the timed call)."""
    import torch

    index = contiguous_indices(group_m, align=align)
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(len(index), k, generator=generator).to(dtype)
    b = torch.randn(len(group_m), n, k, generator=generator).to(dtype)
    m_indices = torch.tensor(index, dtype=torch.int32)
    return {"a": a.to(device), "b": b.to(device), "m_indices": m_indices.to(device), "spans": group_spans(index)}


def make_masked(group_m: Sequence[int], n: int, k: int, *, max_m: int, device: Any, seed: int,
                dtype: Any) -> dict[str, Any]:
    """A ``[G, M_max, K]``, B ``[G, N, K]``, ``masked_m`` ``[G]`` (int32) on ``device``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(len(group_m), max_m, k, generator=generator).to(dtype)
    b = torch.randn(len(group_m), n, k, generator=generator).to(dtype)
    masked = torch.tensor(list(group_m), dtype=torch.int32)
    return {"a": a.to(device), "b": b.to(device), "masked_m": masked.to(device)}


def valid_rows(operands: dict[str, Any], layout: str) -> Any:
    """A boolean mask of the output rows that hold results (``[R]`` or ``[G, M_max]``)."""
    import torch

    if layout == "contiguous":
        return operands["m_indices"].cpu() >= 0
    masked = operands["masked_m"].cpu()
    return torch.arange(operands["a"].shape[1])[None, :] < masked[:, None]


def torch_call(operands: dict[str, Any], layout: str) -> Any:
    """The timed torch reference of ``layout``, in the operands' dtype."""
    if layout == "contiguous":
        return contiguous_gemm(operands["a"], operands["b"], operands["spans"])
    return masked_gemm(operands["a"], operands["b"], operands["masked_m"])


def float64_truth(operands: dict[str, Any], layout: str) -> Any:
    """The ground truth on the CPU in float64."""
    import torch

    cpu = {name: t.cpu() for name, t in operands.items() if name != "spans"}
    if layout == "contiguous":
        return contiguous_gemm(cpu["a"], cpu["b"], operands["spans"], compute=torch.float64)
    return masked_gemm(cpu["a"], cpu["b"], cpu["masked_m"], compute=torch.float64)
