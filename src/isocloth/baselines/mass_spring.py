"""Mass-spring cloth (Provot 1995; as in Blender and MuJoCo): structural springs on the mesh edges
and shear springs on the quad diagonals (thesis §4.1.4 model 4).

Each spring pulls with f = k (l − L) u along its unit direction u (l current, L rest length).
Its stiffness block ∂f_i/∂x_j = k [u uᵀ + max(0, 1 − L/l)(I − u uᵀ)] drops the compressive part
of the geometric term (Choi & Ko 2002), keeping K positive semi-definite for the implicit step.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from isocloth.baselines.implicit import ElasticForces, node_rest_positions

__all__ = ["MassSpringForces", "spring_pairs"]


def spring_pairs(mesh) -> tuple[np.ndarray, np.ndarray]:
    """Structural springs (unique mesh edges) and shear springs (both diagonals of every quad), (s, 2) int64."""
    from isocloth.mesh.topology import edges

    q = mesh.quads
    shear = np.concatenate([q[:, [0, 2]], q[:, [1, 3]]]) if q.size else np.zeros((0, 2), dtype=np.int64)
    return edges(mesh), shear.astype(np.int64)


def _spring_blocks(d: np.ndarray, rest: np.ndarray, k: np.ndarray):
    """Forces on the first node (s, 3) and stiffness blocks (s, 3, 3) of springs with vectors d = x_j − x_i."""
    length = np.linalg.norm(d, axis=1)
    safe = np.where(length > 0, length, 1.0)
    u = d / safe[:, None]
    f = (k * (length - rest))[:, None] * u
    uu = u[:, :, None] * u[:, None, :]
    geo = np.clip(1.0 - rest / safe, 0.0, None)
    blocks = k[:, None, None] * (uu + geo[:, None, None] * (np.eye(3)[None] - uu))
    return f, blocks


def _assemble(pairs: np.ndarray, blocks: np.ndarray, n: int) -> sp.csr_matrix:
    """K (3n, 3n) with +B on the (i,i), (j,j) blocks and −B on (i,j), (j,i)."""
    i, j = pairs[:, 0], pairs[:, 1]
    r = np.arange(3)
    rows, cols, vals = [], [], []
    for a, b, sign in ((i, i, 1.0), (j, j, 1.0), (i, j, -1.0), (j, i, -1.0)):
        rows.append((3 * a[:, None, None] + r[None, :, None]).repeat(3, axis=2).ravel())
        cols.append((3 * b[:, None, None] + r[None, None, :]).repeat(3, axis=1).ravel())
        vals.append((sign * blocks).ravel())
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(3 * n, 3 * n))


class MassSpringForces(ElasticForces):
    """Spring forces of a mass-spring cloth.

    Parameters
    ----------
    mesh : Mesh (rest shape per node)
    stiffness : k of the structural springs [N/m] (> 0)
    shear_ratio : shear-spring stiffness / k (default 0.1)

    Raises
    ------
    ValueError
        For a non-positive stiffness or a negative ratio.
    """

    def __init__(self, mesh, stiffness: float, shear_ratio: float = 0.1) -> None:
        if not stiffness > 0:
            raise ValueError(f"spring stiffness must be > 0 N/m, got {stiffness}")
        if shear_ratio < 0:
            raise ValueError(f"shear_ratio must be ≥ 0, got {shear_ratio}")
        rest = node_rest_positions(mesh)
        structural, shear = spring_pairs(mesh)
        self.pairs = np.concatenate([structural, shear])
        self.rest_length = np.linalg.norm(rest[self.pairs[:, 1]] - rest[self.pairs[:, 0]], axis=1)
        self.k = np.concatenate([np.full(len(structural), float(stiffness)),
                                 np.full(len(shear), float(stiffness) * shear_ratio)])
        self.n = mesh.node_count

    def force_and_stiffness(self, x: np.ndarray):
        d = x[self.pairs[:, 1]] - x[self.pairs[:, 0]]
        fi, blocks = _spring_blocks(d, self.rest_length, self.k)
        f = np.zeros((self.n, 3))
        np.add.at(f, self.pairs[:, 0], fi)
        np.add.at(f, self.pairs[:, 1], -fi)
        return f, _assemble(self.pairs, blocks, self.n)

    def energy(self, x: np.ndarray) -> float:
        length = np.linalg.norm(x[self.pairs[:, 1]] - x[self.pairs[:, 0]], axis=1)
        return float(0.5 * np.sum(self.k * (length - self.rest_length) ** 2))
