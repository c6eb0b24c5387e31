"""Communication: collectives (nccl-tests' conventions), MoE dispatch/combine and their
interference with compute, over torch.distributed on any backend (gloo, NCCL, HCCL, MPI, XCCL)."""
