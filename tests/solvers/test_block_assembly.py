"""Fixed-pattern assembly of A + c Σ B_p on the free coordinates (isocloth.solvers.block_assembly),
and the membrane predictor built on it: the same linear system as a dense reference."""

import numpy as np
import pytest
import scipy.sparse as sp

from isocloth import ModelBuilder
from isocloth.mesh.generators import rectangle
from isocloth.model import Material
from isocloth.solvers.block_assembly import BlockAssembly
from isocloth.step.predictor import Predictor


def _problem(rng, N=30, p=12, q=6):
    R = sp.random(N, N, density=0.1, random_state=1)
    A = (R + R.T + N * sp.identity(N)).tocsr()
    dofs = rng.integers(0, N, size=(p, q))
    dofs[0, 1] = dofs[0, 0]  # a repeated coordinate inside one block
    B = rng.standard_normal((p, q, q))
    B = B + B.transpose(0, 2, 1)
    free = np.ones(N, dtype=bool)
    free[rng.choice(N, size=7, replace=False)] = False
    return A, dofs, B, free


def _dense_sum(A, dofs, B, c):
    D = A.toarray()
    for p in range(dofs.shape[0]):
        for i, a in enumerate(dofs[p]):
            for j, b in enumerate(dofs[p]):
                D[a, b] += c * B[p, i, j]
    return D


def test_matrix_and_coupling_equal_the_dense_sum():
    rng = np.random.default_rng(0)
    A, dofs, B, free = _problem(rng)
    asm = BlockAssembly(A, dofs, free)
    D = _dense_sum(A, dofs, B, 0.3)
    S = asm.matrix(B, 0.3)
    np.testing.assert_allclose(S.toarray(), D[np.ix_(free, free)], rtol=0, atol=1e-12)
    v = rng.standard_normal(A.shape[0])
    np.testing.assert_allclose(asm.prescribed_coupling(B, 0.3, v), D[np.ix_(free, ~free)] @ v[~free], atol=1e-12)
    # the pattern is fixed (CHOLMOD keeps its analysis), the values follow the blocks
    S2 = asm.matrix(2 * B, 0.3)
    np.testing.assert_array_equal(S2.indptr, S.indptr)
    np.testing.assert_array_equal(S2.indices, S.indices)
    np.testing.assert_allclose(S2.toarray(), _dense_sum(A, dofs, 2 * B, 0.3)[np.ix_(free, free)], atol=1e-12)


def test_bad_shapes_and_coordinates_are_named():
    A = sp.identity(4, format="csr")
    with pytest.raises(ValueError, match="free"):
        BlockAssembly(A, np.zeros((1, 2), dtype=np.int64), np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match=r"block coordinates must lie in \[0, 4\)"):
        BlockAssembly(A, np.array([[0, 4]]), np.ones(4, dtype=bool))


def test_membrane_predictor_solves_the_linearised_implicit_step():
    """(A + dt² H(φⁿ)) v* = b + dt f(φⁿ) on the free nodes, prescribed nodes eliminated, with the
    membrane Hessian H from the operator's own sparse assembly as the reference."""
    mesh = rectangle(0.3, 0.2, 6, 5, element="quad", plane="xz")
    mat = Material(rho=0.2, delta=0.2, alpha=0.5, kappa=1e-4, membrane_stiffness=500.0)
    model = ModelBuilder().set_cloth(mesh, mat).add_grasp([0, 5]).finalize()
    rng = np.random.default_rng(3)
    x = mesh.vertices + 0.01 * rng.standard_normal(mesh.vertices.shape)
    v = 0.1 * rng.standard_normal(x.shape)
    target = x[[0, 5]] + 0.002
    dt = 0.01
    vs = Predictor(model).velocity(x, v, dt, target)
    n = model.node_count
    m = model.area_mass
    W = sp.kron(sp.diags((mat.rho + dt * mat.alpha) * m) + dt * dt * mat.kappa * model.bending, sp.identity(3))
    H = model.membrane.gauss_newton_hessian(x, mat.membrane_stiffness)
    S = (W + dt * dt * H).toarray()
    rhs = mat.rho * m[:, None] * v + dt * np.stack([np.zeros(n), np.zeros(n), -mat.delta * mat.gravity * m], 1)
    rhs += -dt * mat.kappa * (model.bending @ x) + dt * model.membrane.force(x, mat.membrane_stiffness)
    g = np.zeros(3 * n, dtype=bool)
    g[[0, 1, 2, 15, 16, 17]] = True
    vg = ((target - x[[0, 5]]) / dt).ravel()
    ref = np.linalg.solve(S[np.ix_(~g, ~g)], rhs.ravel()[~g] - S[np.ix_(~g, g)] @ vg)
    np.testing.assert_allclose(vs.ravel()[~g], ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(vs.ravel()[g], vg, rtol=1e-14)


def test_blocks_of_the_wrong_shape_are_rejected():
    dofs = np.array([[0, 1, 2], [1, 2, 3]])
    asm = BlockAssembly(sp.identity(4), dofs, np.array([True, True, True, False]))
    good = np.zeros((2, 3, 3))
    assert asm.matrix(good, 1.0).shape == (3, 3)
    for bad in (np.zeros((3, 2, 3)), np.zeros((2, 9)), np.zeros((1, 3, 3))):
        with pytest.raises(ValueError, match="blocks must have shape"):
            asm.matrix(bad, 1.0)
        with pytest.raises(ValueError, match="blocks must have shape"):
            asm.prescribed_coupling(bad, 1.0, np.ones(4))
