"""Membrane stabilisation: a soft element-level stretching energy next to the nodal constraints.

Why. The inextensibility rows of the thesis (eq. 2.12–2.15) hold E, F, G as *nodal averages*
(each row integrates the metric against one shape function). Patterns of the element metrics
that average to zero at every node (a stretched element next to a compressed one: the thesis'
tank-top plot, §2.7.3, shows them) cost no constraint residual. Under compression the cloth uses
them instead of folding: a coarse Cusick ring (250 nodes) drapes with 4.5 % mean element area
error and 8 % edge strain, a fine one (1440 nodes) with 0.5 %, so the drape coefficient depended
on the mesh (docs/design/membrane.md).

What. A St. Venant–Kirchhoff-like energy with only the shear modulus, evaluated at the element
quadrature points in an orthonormal frame of the rest shape:

    W(φ) = (k_m / 2) Σ_e Σ_l |ε_l|²_F dA0_l,     ε = ½ (D̂φᵀ D̂φ − I)        (Green strain)

with D̂φ the (3, 2) tangent matrix at the point and dA0 its rest area weight. The nodal rows keep
the averages at the tolerance; W penalises the fluctuations between neighbouring elements. k_m
[N/m] is the membrane modulus; the energy is rigid-motion invariant and zero at the rest shape.
The implicit-Euler predictor takes its force and Gauss–Newton Hessian at φⁿ (one linearised implicit
step, like the shear energy). A constant isotropic majorant of the Hessian (factorized once) was
tried and rejected: it stiffens out-of-plane motion as much as in-plane stretch, and a Cusick ring
then barely moved in 1.5 s (DC 98 %).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from isocloth.fem._membrane_kernels import force_and_blocks_kernel
from isocloth.fem.quadrature import reference_element
from isocloth.mesh.mesh import Mesh

__all__ = ["MembraneOperator", "membrane_operator"]


@dataclass(frozen=True, eq=False)
class MembraneOperator:
    """Tangent maps of every quadrature point of a mesh, in rest-orthonormal coordinates.

    Attributes
    ----------
    nodes : (p, k) int64
        Element corner nodes of each quadrature point (k = 4; triangles padded with a repeated
        node of weight 0).
    D : (p, 2, k) float64
        ∂N_i/∂s_a [1/m]: shape-function derivatives along an orthonormal rest frame (s_1, s_2).
    dA0 : (p,) float64
        Rest area weight [m²] of each point (Σ dA0 = rest area).
    node_count : int
    """

    nodes: np.ndarray
    D: np.ndarray
    dA0: np.ndarray
    node_count: int

    def strain(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tangents t_a = Σ_i D_ai x_i, (p, 2, 3), and Green strains ε, (p, 2, 2), at positions x (n, 3) [m]."""
        t = np.einsum("pak,pkd->pad", self.D, x[self.nodes])
        eps = 0.5 * (np.einsum("pad,pbd->pab", t, t) - np.eye(2))
        return t, eps

    def energy(self, x: np.ndarray, k_m: float) -> float:
        """W(φ) [J] for positions x (n, 3) float64 [m] and modulus k_m [N/m]."""
        _, eps = self.strain(x)
        return float(0.5 * k_m * np.sum(self.dA0 * np.einsum("pab,pab->p", eps, eps)))

    def force(self, x: np.ndarray, k_m: float) -> np.ndarray:
        """Force −∇W, (n, 3) float64 [N], at positions x (n, 3) [m] for modulus k_m [N/m]."""
        return self._evaluate(x, k_m, blocks=False)[0]

    def gauss_newton_hessian(self, x: np.ndarray, k_m: float) -> sp.csr_matrix:
        """k_m Jᵀ J, (3n, 3n) csr [N/m]: the Gauss–Newton Hessian of W at x (n, 3) [m], with J the
        Jacobian of the weighted strains √dA0 (ε11, ε22, √2 ε12). Node-major columns (3i + d)."""
        return self.assemble(self._evaluate(x, k_m, blocks=True)[1])

    def assemble(self, blocks: np.ndarray) -> sp.csr_matrix:
        """Σ_p of per-point blocks (p, 3k, 3k) on :attr:`block_dofs` as a (3n, 3n) csr matrix."""
        dofs = self.block_dofs
        q = dofs.shape[1]
        H = sp.coo_matrix((blocks.ravel(), (np.repeat(dofs, q, axis=1).ravel(), np.tile(dofs, (1, q)).ravel())),
                          shape=(3 * self.node_count, 3 * self.node_count))
        return H.tocsr()

    def force_and_hessian_blocks(self, x: np.ndarray, k_m: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`force` (n, 3) [N] and the Gauss–Newton Hessian as per-point blocks (p, 3k, 3k)
        [N/m] on the coordinates :attr:`block_dofs`, from one strain evaluation at x (n, 3) [m].
        Summing the blocks into a (3n, 3n) matrix gives :meth:`gauss_newton_hessian`. The blocks are
        k_m dA0 Σ_s j_s j_sᵀ with j_s (3k,) the gradients of the strains (ε11, ε22, √2 ε12) with
        respect to the point's corner coordinates."""
        return self._evaluate(x, k_m, blocks=True)

    @cached_property
    def block_dofs(self) -> np.ndarray:
        """(p, 3k) int64: the coordinates 3i + d (node-major) of each point's Hessian block (computed
        once: the force and the block assembly use it every step)."""
        p, k = self.nodes.shape
        return (3 * self.nodes[:, :, None] + np.arange(3)).reshape(p, 3 * k)

    def _evaluate(self, x: np.ndarray, k_m: float, blocks: bool) -> tuple[np.ndarray, np.ndarray | None]:
        # one numba pass over the quadrature points (4–5× faster than the numpy form on 63–225 nodes);
        # ∂W/∂x_i = k_m dA0 Σ_ab ε_ab D_ai t_b
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.shape != (self.node_count, 3):
            raise ValueError(f"positions must have shape ({self.node_count}, 3), got {x.shape}")
        p, k = self.nodes.shape
        force = np.zeros((self.node_count, 3))
        out = np.empty((p, 3 * k, 3 * k) if blocks else (0, 0, 0))
        force_and_blocks_kernel(self.nodes, self.D, self.dA0, x, float(k_m), force, out, blocks)
        return force, (out if blocks else None)


def _points(faces: np.ndarray, rest: np.ndarray, corner_count: int):
    ref = reference_element(corner_count)
    Dref = np.stack([ref.dN_dxi, ref.dN_deta], axis=1)  # (g, 2, k)
    T0 = np.einsum("gak,ekd->egad", Dref, rest)  # rest tangents (e, g, 2, 3)
    g0 = np.einsum("egad,egbd->egab", T0, T0)
    L = np.linalg.cholesky(g0)  # g0 = L Lᵀ
    Linv = np.linalg.inv(L)
    D = np.einsum("egab,gbk->egak", Linv, Dref)  # derivatives along orthonormal rest coordinates
    dA0 = np.sqrt(np.linalg.det(g0)) * ref.weights[None, :]
    e, gq = dA0.shape
    nodes = np.repeat(faces[:, None, :], gq, axis=1).reshape(e * gq, corner_count)
    D = D.reshape(e * gq, 2, corner_count)
    if corner_count == 3:  # pad to 4 corners with a zero-weight copy of the first node
        nodes = np.hstack([nodes, nodes[:, :1]])
        D = np.concatenate([D, np.zeros((e * gq, 2, 1))], axis=2)
    return nodes, D, dA0.ravel()


def membrane_operator(mesh: Mesh) -> MembraneOperator:
    """Build the :class:`MembraneOperator` of ``mesh`` from its rest shape (per-corner rest kept).

    Raises
    ------
    ValueError
        If an element is degenerate in the rest shape (zero rest metric determinant).
    """
    tri_rest, quad_rest = mesh.rest_corners
    parts = []
    for faces, rest, k in ((mesh.triangles, tri_rest, 3), (mesh.quads, quad_rest, 4)):
        if len(faces):
            try:
                parts.append(_points(np.asarray(faces, np.int64), rest, k))
            except np.linalg.LinAlgError:
                raise ValueError("degenerate rest element: membrane stabilisation needs a positive rest "
                                 "metric on every face (run `isocloth info` on the mesh)") from None
    nodes = np.concatenate([p[0] for p in parts])
    D = np.concatenate([p[1] for p in parts])
    dA0 = np.concatenate([p[2] for p in parts])
    return MembraneOperator(nodes=nodes, D=D, dA0=dA0, node_count=mesh.node_count)
