"""The measured ceilings several families divide by: the compute ceiling P (a search for the
fastest GEMM), the bandwidth ceiling (a large device copy), and and the search that finds P."""
