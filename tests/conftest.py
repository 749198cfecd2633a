"""Test-wide settings: one BLAS thread (small dense factorizations; see benchmarks/RESULTS.md)."""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
