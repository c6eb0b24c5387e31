"""What a run measures: a local device, a group of ranks, or a remote endpoint.

Importing this package imports neither torch nor an HTTP client; the functions that need them
import them when called, so a decode client without torch can probe an endpoint.

The API the runner uses:

- the record: every target has ``record() -> Target`` (kind, name, identity, per-rank or
  per-endpoint provenance; ``to_dict``/``from_dict`` for the store) and ``is_writer`` (only the
  writer commits to the store). ``check_same_target(stored, current)`` refuses a resume on
  another target.
- one device: ``LocalTarget(device=...)``.
- ranks: ``launch_local_ranks(nproc, entry, args, timeout_s=...)`` starts ``nproc`` ranks on
  this host through torch's elastic launcher and returns each rank's return value; each rank
  (or each rank of the user's ``torchrun``/``srun``) calls ``join_group()`` to get its
  ``RankGroup``, then ``barrier``, ``gather_to_rank0`` and ``all_gather`` to move provenance and
  results to rank 0, which alone writes; ``leave_group()`` at the end (``joined_group()`` is
  the context manager). ``parity.timing.ranks.max_over_ranks`` reduces per-iteration times over
  the group. A suite takes ``open_group(device)`` (the joined group, or a group of one rank in a
  run of one process; ``close_group`` at teardown) and refuses to start unless every rank was
  given the same configuration (``agree``).
- an endpoint: ``await probe_endpoint(url, model)`` (or ``probe_endpoint_blocking``) asks an
  OpenAI-compatible server's ``GET /v1/models`` and returns a ``RemoteEndpoint`` identified by
  what the server reports; ``parity.timing.stream.time_stream`` timestamps a streamed answer.

A multi-rank suite, in outline (the entry is a module-level function; the same entry serves
the user's ``torchrun``)::

    def measure_on_ranks(options):
        with joined_group(device=options.device) as group:
            samples = time_iterations_over_ranks(step, group=group, iterations=100)
            checks = gather_to_rank0(check(step), group=group, timeout_s=60)  # per rank
            if group.is_writer:  # samples are the same on every rank (max over ranks)
                ...  # commit samples, checks and group.record() to the store
            return group.rank

    launch_local_ranks(2, measure_on_ranks, (options,), timeout_s=600)
"""

from parity.ranks.environment import RankEnv, read_rank_env
from parity.ranks.gather import agree, all_gather, barrier, gather_to_rank0
from parity.ranks.group import (
    RankGroup,
    close_group,
    distributed_backend,
    join_group,
    joined_group,
    leave_group,
    open_group,
)
from parity.ranks.launch import free_port, launch_local_ranks
from parity.ranks.record import LocalTarget, Target, check_same_target
from parity.ranks.remote import RemoteEndpoint, probe_endpoint, probe_endpoint_blocking

__all__ = [
    "LocalTarget",
    "RankEnv",
    "RankGroup",
    "RemoteEndpoint",
    "Target",
    "agree",
    "all_gather",
    "barrier",
    "check_same_target",
    "close_group",
    "distributed_backend",
    "free_port",
    "gather_to_rank0",
    "join_group",
    "joined_group",
    "launch_local_ranks",
    "leave_group",
    "open_group",
    "probe_endpoint",
    "probe_endpoint_blocking",
    "read_rank_env",
]
