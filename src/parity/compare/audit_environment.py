"""The communication libraries' environment in the audit: one entry per variable that differs.

A run records the variables of the communication libraries twice: the writing process's in
``provenance.environment``, and every rank's in ``target.provenance[r].communication_env`` (a
launcher or a node's profile may set them per node). A variable's value in a run is the one
every rank saw, ``unset`` when none set it, or ``A on ranks 0-1; B on rank 2`` when ranks
differ.

Whether a variable matters for the figures compared depends on which library read it: only a
run of two or more ranks communicates, and each library is read by the backends listed in
:data:`COMM_LIBRARIES` (``NCCL_ALGO`` decides an ``nccl`` run's collectives and nothing in a
``gloo`` run). A run whose backend is not recorded may have read any of them.
"""

from __future__ import annotations

from parity.compare.audit_values import AuditEntry, get, rank_records, ranks_text, world_size
from parity.model.result import RunRecord

# (library, variable prefixes, torch.distributed backends that read them). RCCL reads NCCL_*;
# DeepEP's kernels read NVSHMEM_* beside an nccl group; NCCL's libfabric plugin, MPI and oneCCL
# (torch's xccl backend on Intel GPUs, or the ccl bindings) read FI_*.
COMM_LIBRARIES: tuple[tuple[str, tuple[str, ...], frozenset[str]], ...] = (
    ("NCCL", ("NCCL_", "TORCH_NCCL_", "RCCL_", "MSCCL_", "MSCCLPP_"), frozenset({"nccl"})),
    ("NVSHMEM", ("NVSHMEM_", "DEEP_EP_"), frozenset({"nccl"})),
    ("HCCL", ("HCCL_",), frozenset({"hccl"})),
    ("gloo", ("GLOO_", "TORCH_GLOO_"), frozenset({"gloo"})),
    ("UCX/UCC", ("UCX_", "UCC_", "TORCH_UCC_"), frozenset({"ucc", "mpi"})),
    ("oneCCL", ("CCL_", "TORCH_XCCL_"), frozenset({"xccl", "ccl"})),
    ("libfabric", ("FI_",), frozenset({"nccl", "mpi", "ucc", "xccl", "ccl"})),
    ("MPI", ("OMPI_MCA_", "I_MPI_"), frozenset({"mpi"})),
)
UNSET = "unset"
MATTERS = ("{library} reads it: it can change a collective's algorithm, protocol, transport or buffers "
           "(one NVSHMEM variable costs DeepEP a large factor)")


def library_of(name: str) -> tuple[str, frozenset[str]] | None:
    """``(library, backends that read it)`` of a variable, None when no library reads it.
    Example: ``TORCH_NCCL_BLOCKING_WAIT`` -> NCCL (nccl); ``PATH`` -> None."""
    for library, prefixes, backends in COMM_LIBRARIES:
        if name.startswith(prefixes):
            return library, backends
    return None


def comm_environment(run: RunRecord) -> dict[str, str]:
    """Each communication variable's value in the run (see the module docstring)."""
    writer = {k: str(v) for k, v in (run.provenance.get("environment") or {}).items() if library_of(k)}
    ranks = [r.get("communication_env") for r in rank_records(run)]
    per_rank = [{k: str(v) for k, v in env.items()} for env in ranks if isinstance(env, dict)]
    if not per_rank:
        return writer
    names = set(writer).union(*per_rank)
    out = {}
    for name in sorted(names):
        seen: dict[str, list[int]] = {}
        for index, env in enumerate(per_rank):
            seen.setdefault(env.get(name, UNSET), []).append(index)
        if len(seen) == 1:
            out[name] = next(iter(seen))
        else:
            out[name] = "; ".join(f"{value} on {ranks_text(idx)}" for value, idx in sorted(seen.items()))
    return out


def backend(run: RunRecord) -> str | None:
    """The run's torch.distributed backend where it communicated (two or more ranks)."""
    value = get(run.provenance, "target", "identity", "backend")
    return str(value) if value else None


def _not_read(runs: list[RunRecord], backends: frozenset[str]) -> str | None:
    """Why no compared figure depends on this library, or None when some may."""
    multi = [r for r in runs if (world_size(r) or 1) > 1]
    if not multi:
        return "no figure compared was measured over more than one rank, so nothing communicated"
    used = {backend(r) for r in multi}
    if None in used or used & backends:
        return None
    return f"the runs communicated over {', '.join(sorted(str(u) for u in used))}, which does not read it"


def environment_entries(runs: list[RunRecord]) -> list[AuditEntry]:
    """One entry per communication variable whose value differs between the runs."""
    envs = [comm_environment(r) for r in runs]
    entries = []
    for name in sorted(set().union(*envs)):
        values = tuple(env.get(name, UNSET) for env in envs)
        if len(set(values)) < 2:
            continue
        found = library_of(name)
        library, backends = found if found else ("a communication library", frozenset())
        why_not = _not_read(runs, backends)
        entries.append(AuditEntry.make(f"environment {name}", values, MATTERS.format(library=library),
                                       not_here=why_not))
    return entries
