"""Where this process sits in a group of ranks, read from what its launcher set.

Three launchers are understood, in this order:

- torch's elastic launcher (``torchrun``, or parity's own ``launch_local_ranks``, which sets
  ``PARITY_LOCAL_LAUNCH=1`` as well): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
  ``MASTER_PORT``. A process started by hand with those five set reads the same.
- Slurm's ``srun``: ``SLURM_PROCID`` (rank), ``SLURM_NTASKS`` (world size), ``SLURM_LOCALID``
  (local rank). Slurm names no rendezvous address, so ``MASTER_ADDR`` must be exported (the
  first host of ``scontrol show hostnames "$SLURM_JOB_NODELIST"``); ``MASTER_PORT`` defaults to
  29500, torchrun's default, and the port used is recorded either way.

``torchrun`` under ``srun`` sets both; the torchrun variables win, as they describe the ranks
torchrun started.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from parity.model.errors import ParityError

ELASTIC_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
SLURM_VARS = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")
LOCAL_LAUNCH_VAR = "PARITY_LOCAL_LAUNCH"
DEFAULT_MASTER_PORT = 29500


@dataclass(frozen=True, kw_only=True)
class RankEnv:
    """This process's place in the group: ranks count from 0; ``launcher`` is ``parity``,
    ``torchrun`` (any elastic or hand-set RANK/WORLD_SIZE start) or ``srun``."""

    world_size: int
    rank: int
    local_rank: int
    master_addr: str
    master_port: int
    launcher: str

    @property
    def init_method(self) -> str:
        """The ``tcp://`` address torch.distributed rendezvouses at (IPv6 in brackets)."""
        addr = f"[{self.master_addr}]" if ":" in self.master_addr else self.master_addr
        return f"tcp://{addr}:{self.master_port}"


def read_rank_env(environ: Mapping[str, str]) -> RankEnv:
    """The rank environment a launcher set (see the module docstring); a one-line ParityError
    naming the variable and its value when one is missing or malformed."""
    if "RANK" in environ or "WORLD_SIZE" in environ:
        missing = [name for name in ELASTIC_VARS if not environ.get(name)]
        if missing:
            raise ParityError(
                f"RANK/WORLD_SIZE are set but {', '.join(missing)} not; start the ranks with "
                "torchrun, or set all of " + ", ".join(ELASTIC_VARS)
            )
        launcher = "parity" if environ.get(LOCAL_LAUNCH_VAR) == "1" else "torchrun"
        return _checked(
            environ,
            rank="RANK",
            world_size="WORLD_SIZE",
            local_rank="LOCAL_RANK",
            port=environ["MASTER_PORT"],
            launcher=launcher,
        )
    if "SLURM_PROCID" in environ:
        missing = [name for name in SLURM_VARS if not environ.get(name)]
        if missing:
            raise ParityError(f"SLURM_PROCID is set but {', '.join(missing)} not; start with srun")
        if not environ.get("MASTER_ADDR"):
            raise ParityError(
                "srun started this rank but MASTER_ADDR is not set; export MASTER_ADDR=$(scontrol "
                'show hostnames "$SLURM_JOB_NODELIST" | head -n1) (and MASTER_PORT) before srun'
            )
        return _checked(
            environ,
            rank="SLURM_PROCID",
            world_size="SLURM_NTASKS",
            local_rank="SLURM_LOCALID",
            port=environ.get("MASTER_PORT") or str(DEFAULT_MASTER_PORT),
            launcher="srun",
        )
    raise ParityError(
        "no rank environment: neither RANK/WORLD_SIZE (torchrun) nor SLURM_PROCID (srun) is "
        "set; start parity under torchrun or srun, or let it launch local ranks"
    )


def _checked(
    environ: Mapping[str, str],
    *,
    rank: str,
    world_size: str,
    local_rank: str,
    port: str,
    launcher: str,
) -> RankEnv:
    size = _integer(environ, world_size, minimum=1)
    value = _integer(environ, rank, minimum=0)
    if value >= size:
        raise ParityError(f"{rank}={value} is not below {world_size}={size}; ranks count from 0")
    try:
        port_number = int(port)
    except ValueError:
        port_number = -1
    if not 0 < port_number < 65536:
        raise ParityError(f"MASTER_PORT={port!r} is not a TCP port; set it to 1..65535")
    return RankEnv(
        world_size=size,
        rank=value,
        local_rank=_integer(environ, local_rank, minimum=0),
        master_addr=environ["MASTER_ADDR"],
        master_port=port_number,
        launcher=launcher,
    )


def _integer(environ: Mapping[str, str], name: str, *, minimum: int) -> int:
    text = environ[name]
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ParityError(f"{name}={text!r} is not an integer >= {minimum}; check the launcher")
    return value
