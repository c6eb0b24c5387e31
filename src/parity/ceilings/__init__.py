"""The measured ceilings several families divide by: the compute ceiling P (``compute``: the
search for the fastest GEMM, its ``plan`` and its ``contest``) and the bandwidth ceiling B
(``bandwidth``: a large device copy), each timed as declared Work through the harness."""
