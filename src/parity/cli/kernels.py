"""``parity kernels``: DeepSeek's kernel-library operations against their torch references."""

from __future__ import annotations

from parity.cli.suite_command import FamilyCommand, family_command

SPEC = FamilyCommand(suite="kernels",
                     quick_help="CPU-sized shapes and short budgets (well under a minute on 2 cores).")

kernels = family_command(SPEC, help="""Block-scaled fp8 GEMM (A per 1x128 group, B per 128x128 block, e4m3),
m-grouped GEMM in the contiguous and masked layouts, and MLA decode over a paged KV cache (head
dim 576, 512 value, one KV head), each through a torch reference that runs on any device and,
where installed and runnable, DeepGEMM's, FlashMLA's and TileKernels' kernels on the same inputs.

Every case declares its FLOP and bytes (valid rows only, causal mask counted), is checked
against a float64 computation (library kernels with the library's own tolerance), and is
rated on the roofline of the measured ceilings; a library kernel that did not run says why.
Exit status 1 when a case failed.

\b
Example:
  parity kernels --quick --device cpu --json k.json
  parity kernels --device cuda:0 --ops fp8_gemm,mla_decode
""")
