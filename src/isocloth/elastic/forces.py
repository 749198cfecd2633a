"""The elastic cloth model of Li et al. 2018 (§7; ARCSim, Narain et al. 2012): a Green-strain
membrane with the measured, strain- and direction-dependent stiffnesses of Wang et al. 2011
(:mod:`isocloth.elastic.materials`) and a dihedral-angle bending energy with their measured,
curvature- and direction-dependent bending stiffness.

Membrane, per triangle of rest area a with rest (warp, weft) frame (:class:`~isocloth.baselines.
baraff_witkin.TriangleFrames`): the tangents w_u, w_v give the Green strain
G = ½ (FᵀF − I), G_00 = ½(w_u·w_u − 1), G_11 = ½(w_v·w_v − 1), G_01 = ½ w_u·w_v, and

    E = (a/2) S : G,   S = [[k0 G_00 + k1 G_11, k3 G_01], [k3 G_01, k1 G_00 + k2 G_11]],

with (k0, k1, k2, k3) evaluated at the current strain and held fixed in the derivatives (as ARCSim
does). The stiffness matrix keeps the Gauss–Newton part and the tension (G_ii > 0) curvature terms,
with k1 limited to √(k0 k2), so that it is positive semi-definite (ARCSim drops the same indefinite
terms).

Bending, per interior edge e = x1 − x0 of rest length l shared by the triangles (x0, x1, x2) and
(x1, x0, x3) of rest areas a_A + a_B = a_e: the dihedral angle θ between n_A = e × (x2 − x0) and
n_B = (x3 − x0) × e (0 when flat), and

    E = k_b l² / (2 a_e) (θ − θ̄)² / 4,

θ̄ the rest angle and k_b the measured stiffness at the curvature |θ| l / a_e and the crease's angle
to the warp. Its gradient uses ∂θ/∂x2 = −l n_A/‖n_A‖², ∂θ/∂x3 = −l n_B/‖n_B‖² and, for the edge's
ends, the split by the feet of x2 and x3 on the edge (Bridson, Marino & Fedkiw 2003); the stiffness
matrix its Gauss–Newton part.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from isocloth.baselines.baraff_witkin import TriangleFrames
from isocloth.baselines.implicit import ElasticForces, node_rest_positions
from isocloth.elastic.materials import MeasuredMaterial, bending_stiffness, stretching_stiffness

__all__ = ["MeasuredClothForces", "dihedral_angles", "interior_edges"]


def interior_edges(triangles: np.ndarray) -> np.ndarray:
    """(e, 4) int64: (x0, x1, x2, x3) of every edge shared by two triangles, (x0, x1, x2) one of them
    and x3 the far vertex of the other; edges of one or of more than two triangles are left out."""
    tri = np.asarray(triangles, dtype=np.int64)
    rows = []
    for k in range(3):
        rows.append(np.stack([tri[:, k], tri[:, (k + 1) % 3], tri[:, (k + 2) % 3]], axis=1))
    half = np.concatenate(rows)  # (3t, 3): edge start, end, opposite vertex
    key = np.sort(half[:, :2], axis=1)
    order = np.lexsort((key[:, 1], key[:, 0]))
    key, half = key[order], half[order]
    same = np.all(key[1:] == key[:-1], axis=1)
    first = np.flatnonzero(same)
    # keep pairs only (an edge of exactly two triangles)
    triple = np.zeros(len(same) + 1, dtype=bool)
    triple[1:-1] = same[1:] & same[:-1]
    first = first[~(triple[first] | triple[first + 1])]
    a, b = half[first], half[first + 1]
    return np.stack([a[:, 0], a[:, 1], a[:, 2], b[:, 2]], axis=1)


def dihedral_angles(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Dihedral angles θ (e,) [rad] of interior edges (e, 4) (module docstring), in (−π, π]."""
    x0, x1, x2, x3 = (x[edges[:, k]] for k in range(4))
    e = x1 - x0
    nA, nB = np.cross(e, x2 - x0), np.cross(x3 - x0, e)
    le = np.linalg.norm(e, axis=1)
    return np.arctan2(np.einsum("ed,ed->e", np.cross(nA, nB), e) / le, np.einsum("ed,ed->e", nA, nB))


def _angle_gradient(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """∂θ/∂(x0, x1, x2, x3) (e, 4, 3)."""
    x0, x1, x2, x3 = (x[edges[:, k]] for k in range(4))
    e = x1 - x0
    ee = np.einsum("ed,ed->e", e, e)
    le = np.sqrt(ee)
    nA, nB = np.cross(e, x2 - x0), np.cross(x3 - x0, e)
    g2 = -(le / np.einsum("ed,ed->e", nA, nA))[:, None] * nA
    g3 = -(le / np.einsum("ed,ed->e", nB, nB))[:, None] * nB
    s2 = (np.einsum("ed,ed->e", x2 - x0, e) / ee)[:, None]
    s3 = (np.einsum("ed,ed->e", x3 - x0, e) / ee)[:, None]
    return np.stack([-(1 - s2) * g2 - (1 - s3) * g3, -s2 * g2 - s3 * g3, g2, g3], axis=1)


class MeasuredClothForces(ElasticForces):
    """Membrane and bending forces of a measured material (module docstring), for
    :class:`~isocloth.baselines.implicit.ImplicitEulerStepper`.

    Parameters
    ----------
    mesh : Mesh (rest shape per node; quads split into triangles)
    material : :class:`~isocloth.elastic.materials.MeasuredMaterial`
    warp : (3,) direction of the warp in the rest shape's coordinates, projected onto it (default +x)
    bending : include the bending energy (default True)

    Raises
    ------
    ValueError
        For a degenerate rest triangle or a zero warp.
    """

    def __init__(self, mesh, material: MeasuredMaterial, *, warp=(1.0, 0.0, 0.0), bending: bool = True) -> None:
        w = np.asarray(warp, dtype=np.float64)
        if w.shape != (3,) or not np.isfinite(w).all() or not np.linalg.norm(w) > 0:
            raise ValueError(f"warp must be a nonzero finite direction (3,), got {warp}")
        self.frames = TriangleFrames(mesh, w)
        self.material = material
        self.n = mesh.node_count
        rest = node_rest_positions(mesh)
        self.edges = interior_edges(self.frames.tri) if bending else np.zeros((0, 4), dtype=np.int64)
        self.rest_angle = dihedral_angles(rest, self.edges)
        self.rest_length = np.linalg.norm(rest[self.edges[:, 1]] - rest[self.edges[:, 0]], axis=1)
        tri_area = {tuple(sorted(t)): a for t, a in zip(map(tuple, self.frames.tri), self.frames.area)}
        self.edge_area = np.array([tri_area[tuple(sorted((a, b, c)))] + tri_area[tuple(sorted((b, a, d)))]
                                   for a, b, c, d in self.edges]) if len(self.edges) else np.zeros(0)
        self.edge_warp_angle = self._edge_angles(rest)
        r = np.arange(3)
        E = self.edges
        I = 3 * E[:, :, None, None, None] + r[None, None, None, :, None]
        J = 3 * E[:, None, :, None, None] + r[None, None, None, None, :]
        shape = (E.shape[0], 4, 4, 3, 3)
        self._rows = np.broadcast_to(I, shape).ravel()
        self._cols = np.broadcast_to(J, shape).ravel()

    def _edge_angles(self, rest: np.ndarray) -> np.ndarray:
        """Angle [rad] of each interior edge with the warp, in the rest frame of its first triangle."""
        if not len(self.edges):
            return np.zeros(0)
        index = {tuple(t): k for k, t in enumerate(map(tuple, self.frames.tri))}
        out = np.empty(len(self.edges))
        for q, (a, b, c, _) in enumerate(self.edges):
            for rot in ((a, b, c), (b, c, a), (c, a, b)):
                if rot in index:
                    k = index[rot]
                    t = list(self.frames.tri[k])
                    d = self.frames.uv[k, t.index(b)] - self.frames.uv[k, t.index(a)]
                    out[q] = np.arctan2(d[1], d[0])
                    break
        return out

    def _membrane(self, x: np.ndarray):
        fr = self.frames
        wu, wv = fr.tangents(x)
        g00 = 0.5 * (np.einsum("td,td->t", wu, wu) - 1.0)
        g11 = 0.5 * (np.einsum("td,td->t", wv, wv) - 1.0)
        g01 = 0.5 * np.einsum("td,td->t", wu, wv)
        G = np.stack([np.stack([g00, g01], 1), np.stack([g01, g11], 1)], 1)
        k = stretching_stiffness(G, self.material.stretching)
        k0, k1, k2, k3 = (k[:, i] for i in range(4))
        k1 = np.minimum(k1, np.sqrt(k0 * k2))
        a = fr.area
        energy = 0.5 * a * (k0 * g00 ** 2 + 2 * k1 * g00 * g11 + k2 * g11 ** 2 + 2 * k3 * g01 ** 2)
        d00 = fr.cu[:, :, None] * wu[:, None, :]  # ∂G_00/∂x_i (t, 3, 3)
        d11 = fr.cv[:, :, None] * wv[:, None, :]
        d01 = 0.5 * (fr.cu[:, :, None] * wv[:, None, :] + fr.cv[:, :, None] * wu[:, None, :])
        c = lambda v: (a * v)[:, None, None]  # noqa: E731
        grad = c(k0 * g00 + k1 * g11) * d00 + c(k2 * g11 + k1 * g00) * d11 + c(2 * k3 * g01) * d01
        outer = lambda p, q: p[:, :, None, :, None] * q[:, None, :, None, :]  # noqa: E731
        eye = np.eye(3)[None, None, None]
        uu = (fr.cu[:, :, None] * fr.cu[:, None, :])[..., None, None] * eye
        vv = (fr.cv[:, :, None] * fr.cv[:, None, :])[..., None, None] * eye
        cc = lambda v: (a * v)[:, None, None, None, None]  # noqa: E731
        H = (cc(k0) * outer(d00, d00) + cc(k2) * outer(d11, d11) + cc(k1) * (outer(d00, d11) + outer(d11, d00))
             + cc(2 * k3) * outer(d01, d01)
             + cc(k0 * np.maximum(g00, 0) + k1 * np.maximum(g11, 0)) * uu
             + cc(k2 * np.maximum(g11, 0) + k1 * np.maximum(g00, 0)) * vv)
        return energy.sum(), grad, H

    def _bending(self, x: np.ndarray):
        E = self.edges
        theta = dihedral_angles(x, E)
        curvature = np.abs(theta) * self.rest_length / self.edge_area
        kb = bending_stiffness(curvature, self.edge_warp_angle, self.material.bending)
        c = kb * self.rest_length ** 2 / (8.0 * self.edge_area)  # E = c (θ − θ̄)²
        d = theta - self.rest_angle
        g = _angle_gradient(x, E)
        grad = (2 * c * d)[:, None, None] * g
        H = (2 * c)[:, None, None, None, None] * g[:, :, None, :, None] * g[:, None, :, None, :]
        return float((c * d * d).sum()), grad, H

    def energy(self, x: np.ndarray) -> float:
        """Elastic energy [J] at positions x (n, 3) [m] (stiffnesses at x)."""
        return float(self._membrane(x)[0] + (self._bending(x)[0] if len(self.edges) else 0.0))

    def force_and_stiffness(self, x: np.ndarray):
        """(f (n, 3) [N], K (3n, 3n) csr [N/m], positive semi-definite) at positions x (n, 3) [m]."""
        _, grad, H = self._membrane(x)
        f, K = self.frames.assemble(grad, H)
        if len(self.edges):
            _, gb, Hb = self._bending(x)
            np.add.at(f, self.edges.ravel(), -gb.reshape(-1, 3))
            K = K + sp.csr_matrix((Hb.ravel(), (self._rows, self._cols)), shape=K.shape)
        return f, K
