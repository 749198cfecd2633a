"""Continuum-elastic cloth of Baraff & Witkin (1998, §4.2–4.3): stretch and shear energies on
triangles (thesis §4.1.4 model 3).

For a triangle with rest (u, v) coordinates and rest area a, the deformation gives the two
tangents w_u = ∂x/∂u and w_v = ∂x/∂v (constant per triangle; w = Σ_i x_i c_i with the linear
shape-function derivatives c_i). The energies are

    E_stretch = (k a / 2) [(‖w_u‖ − 1)² + (‖w_v‖ − 1)²],        E_shear = (k_s a / 2) (w_u · w_v)²,

with k [N/m] the stretch and k_s = shear_ratio · k the shear stiffness (per unit area, so the
model does not depend on the mesh resolution). The stiffness matrix keeps the Gauss–Newton part
of both energies and the non-compressive geometric part of the stretch term, so it is positive
semi-definite (Baraff & Witkin also drop indefinite terms). Warp and weft (u, v) are the axes of
the flat rest shape (principal axes of the rest nodes: the sides of a rectangle). Bending is left
out (κ = 0 in all the thesis' fits).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from isocloth.baselines.implicit import ElasticForces, node_rest_positions

__all__ = ["BaraffWitkinForces", "TriangleFrames", "rest_uv"]


def rest_uv(rest: np.ndarray, triangles: np.ndarray, warp=None) -> np.ndarray:
    """Rest (u, v) coordinates per triangle corner, (t, 3, 2) [m].

    ``warp`` None: flat rest shapes use one global frame (principal axes of the nodes), curved ones a
    frame per triangle (first edge = u). ``warp`` (3,): u is that direction projected onto the rest
    plane (flat) or onto each triangle's plane (curved; the first edge where it is normal to it).
    """
    c = rest - rest.mean(axis=0)
    _, sv, vt = np.linalg.svd(c, full_matrices=False)
    corners = rest[triangles]
    e1 = corners[:, 1] - corners[:, 0]
    e2 = corners[:, 2] - corners[:, 0]
    flat = sv[-1] <= 1e-9 * max(sv[0], 1e-300)
    if flat and warp is None:
        uv = c @ vt[:2].T
        return uv[triangles]
    nrm = np.cross(e1, e2)
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    if flat:
        nrm[:] = vt[2] * np.sign(nrm @ vt[2])[:, None]
    u = e1.copy()
    if warp is not None:
        w = np.asarray(warp, dtype=np.float64)
        proj = w[None] - (nrm @ w)[:, None] * nrm
        ok = np.linalg.norm(proj, axis=1) > 1e-6 * np.linalg.norm(w)
        u[ok] = proj[ok]
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(nrm, u)
    rel = corners - corners[:, :1]
    return np.stack([np.einsum("tkd,td->tk", rel, u), np.einsum("tkd,td->tk", rel, v)], axis=2)


class TriangleFrames:
    """The linear triangles of a mesh in their rest (u, v) frames (:func:`rest_uv`, u along ``warp``
    where given): per triangle
    the shape-function derivatives c_u, c_v (t, 3), so that w_u = ∂x/∂u = Σ_i c_u,i x_i, and the
    rest area (t,) [m²]; :meth:`assemble` sums per-triangle gradients and Hessian blocks.

    Raises
    ------
    ValueError
        For a degenerate rest triangle.
    """

    def __init__(self, mesh, warp=None) -> None:
        tri = mesh.triangulated_faces()
        uv = rest_uv(node_rest_positions(mesh), tri, warp)
        du1, du2 = uv[:, 1, 0] - uv[:, 0, 0], uv[:, 2, 0] - uv[:, 0, 0]
        dv1, dv2 = uv[:, 1, 1] - uv[:, 0, 1], uv[:, 2, 1] - uv[:, 0, 1]
        det = du1 * dv2 - du2 * dv1
        if np.any(np.abs(det) <= 1e-14):
            raise ValueError(f"degenerate rest triangle {int(np.flatnonzero(np.abs(det) <= 1e-14)[0])}")
        a, b = dv2 / det, -dv1 / det          # w_u = (x1 − x0) a + (x2 − x0) b
        c, d = -du2 / det, du1 / det          # w_v = (x1 − x0) c + (x2 − x0) d
        self.cu = np.stack([-(a + b), a, b], axis=1)  # (t, 3)
        self.cv = np.stack([-(c + d), c, d], axis=1)
        self.area = 0.5 * np.abs(det)
        self.tri = tri
        self.uv = uv
        self.n = mesh.node_count
        r = np.arange(3)
        I = 3 * tri[:, :, None, None, None] + r[None, None, None, :, None]   # row index (t, i, j, r, c)
        J = 3 * tri[:, None, :, None, None] + r[None, None, None, None, :]
        shape = (tri.shape[0], 3, 3, 3, 3)
        self._rows = np.broadcast_to(I, shape).ravel()
        self._cols = np.broadcast_to(J, shape).ravel()

    def tangents(self, x: np.ndarray):
        """(w_u, w_v), each (t, 3): the columns of the deformation gradient."""
        xt = x[self.tri]  # (t, 3, 3)
        return np.einsum("tk,tkd->td", self.cu, xt), np.einsum("tk,tkd->td", self.cv, xt)

    def assemble(self, grad: np.ndarray, H: np.ndarray):
        """(f (n, 3) [N], K (3n, 3n) csr) from per-triangle energy gradients (t, 3, 3) (corner, xyz)
        and Hessian blocks (t, 3, 3, 3, 3) (corner i, corner j, 3 × 3)."""
        f = np.zeros((self.n, 3))
        np.add.at(f, self.tri.ravel(), -grad.reshape(-1, 3))
        K = sp.csr_matrix((H.ravel(), (self._rows, self._cols)), shape=(3 * self.n, 3 * self.n))
        return f, K


class BaraffWitkinForces(ElasticForces):
    """Stretch and shear forces of the Baraff–Witkin model.

    Parameters
    ----------
    mesh : Mesh (rest shape per node; quads are split into triangles)
    stiffness : stretch stiffness k [N/m] (> 0)
    shear_ratio : k_s / k (default 0.1)

    Raises
    ------
    ValueError
        For a non-positive stiffness, a negative ratio or a degenerate rest triangle.
    """

    def __init__(self, mesh, stiffness: float, shear_ratio: float = 0.1) -> None:
        if not stiffness > 0:
            raise ValueError(f"stretch stiffness must be > 0 N/m, got {stiffness}")
        if shear_ratio < 0:
            raise ValueError(f"shear_ratio must be ≥ 0, got {shear_ratio}")
        self.frames = TriangleFrames(mesh)
        self.cu, self.cv, self.area, self.tri = self.frames.cu, self.frames.cv, self.frames.area, self.frames.tri
        self.k = float(stiffness)
        self.ks = float(stiffness) * float(shear_ratio)
        self.n = mesh.node_count

    def _tangents(self, x: np.ndarray):
        return self.frames.tangents(x)

    def energy(self, x: np.ndarray) -> float:
        wu, wv = self._tangents(x)
        nu, nv = np.linalg.norm(wu, axis=1), np.linalg.norm(wv, axis=1)
        e = 0.5 * self.k * self.area * ((nu - 1) ** 2 + (nv - 1) ** 2)
        e += 0.5 * self.ks * self.area * np.einsum("td,td->t", wu, wv) ** 2
        return float(e.sum())

    def force_and_stiffness(self, x: np.ndarray):
        wu, wv = self._tangents(x)
        t = wu.shape[0]
        eye = np.eye(3)[None]
        grad = np.zeros((t, 3, 3))      # dE/dx_i per triangle corner
        H = np.zeros((t, 3, 3, 3, 3))    # blocks (i, j) of K
        for w, cc in ((wu, self.cu), (wv, self.cv)):
            nrm = np.linalg.norm(w, axis=1)
            safe = np.where(nrm > 0, nrm, 1.0)
            what = w / safe[:, None]
            s = (self.k * self.area * (nrm - 1.0))[:, None]
            grad += cc[:, :, None] * (s * what)[:, None, :]
            ww = what[:, :, None] * what[:, None, :]
            geo = np.clip(1.0 - 1.0 / safe, 0.0, None)[:, None, None]
            blk = (self.k * self.area)[:, None, None] * (ww + geo * (eye - ww))   # (t, 3, 3)
            H += cc[:, :, None, None, None] * cc[:, None, :, None, None] * blk[:, None, None]
        dot = np.einsum("td,td->t", wu, wv)
        g = self.cu[:, :, None] * wv[:, None, :] + self.cv[:, :, None] * wu[:, None, :]   # ∂(w_u·w_v)/∂x_i
        grad += (self.ks * self.area * dot)[:, None, None] * g
        H += (self.ks * self.area)[:, None, None, None, None] * g[:, :, None, :, None] * g[:, None, :, None, :]
        return self.frames.assemble(grad, H)
