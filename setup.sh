#!/usr/bin/env bash
# One-command set-up on a fresh Linux machine: system packages, isocloth, then the default scene.
#   bash setup.sh            install and run `isocloth run` (the default garment scene)
#   bash setup.sh --no-run   install only (used by .ci/run)
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

# Optional system packages: SuiteSparse headers, so scikit-sparse (CHOLMOD with a reusable symbolic
# factorization, the fastest sparse backend) can build, and OpenBLAS as the system BLAS/LAPACK that
# CHOLMOD's supernodal factorization calls (Debian's default is the reference BLAS), and Chromium, the
# browser of the viewer's test. Everything works without them (cholespy wheel; reference BLAS; the
# browser test skips).
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  missing=""
  for pkg in libsuitesparse-dev libopenblas0-pthread chromium; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
  done
  if [ -n "$missing" ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null) \
      || echo "setup: could not install$missing; continuing without (slower sparse factorizations)" >&2
  fi
fi

"$PY" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
"$PY" -m pip install -q -e ".[dev]"
# Ray (optional extra "cluster"): fits and environment rollouts over a cluster, and their tests
if ! "$PY" -c "import ray" >/dev/null 2>&1; then
  "$PY" -m pip install -q -e ".[cluster]" >/dev/null 2>&1 \
    || echo "setup: Ray not installed; fits and rollouts run on the local cores only (its tests skip)" >&2
fi
if ! "$PY" -c "import sksparse.cholmod" >/dev/null 2>&1; then
  "$PY" -m pip install -q "scikit-sparse==0.4.16" >/dev/null 2>&1 \
    || echo "setup: scikit-sparse not built; using the cholespy backend (slower for large meshes)" >&2
fi

# Compile the numerical kernels now (numba caches them on disk), so that the first real run does not:
# a few steps of a hanging sheet, a sheet on a table and a garment with self-collisions.
warm=$(mktemp -d)
for scene in hang-a2 tablecloth shorts-hang; do
  "$PY" -m isocloth run "$scene" --set simulation.duration=0.03 --no-video --no-progress --out "$warm/$scene" \
    >/dev/null 2>&1 || echo "setup: warming up the kernels with $scene failed (they compile on first use)" >&2
done
rm -rf "$warm"

if [ "${1:-}" != "--no-run" ]; then
  isocloth run
fi
