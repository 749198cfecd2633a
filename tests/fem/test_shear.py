"""Optional shear energy (thesis eq. 2.17–2.18) and the quasi-inextensible mode."""

import numpy as np

from isocloth.control import TrajectoryFixed
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder
from isocloth.step import Stepper
from isocloth.step.forces import shear_force_and_hessian


def test_shear_force_is_minus_the_energy_gradient():
    mesh = rectangle(0.3, 0.3, 5, 5)
    model = ModelBuilder().set_cloth(mesh, Material(shear_stiffness=1e3)).finalize()
    rows, m = model.shear_rows, model.area_mass
    rng = np.random.default_rng(0)
    x = mesh.vertices + 0.02 * rng.normal(size=mesh.vertices.shape)

    def energy(y):
        C = rows.value(y)
        return 0.5 * 1e3 * C @ (m[rows.row_node] * C)

    f, H = shear_force_and_hessian(rows, m, 1e3, x)
    for node, d in [(6, 0), (12, 2), (18, 1)]:
        e = 1e-7
        xp, xm = x.copy(), x.copy()
        xp[node, d] += e
        xm[node, d] -= e
        assert np.isclose(-(energy(xp) - energy(xm)) / (2 * e), f[node, d], rtol=1e-5, atol=1e-12)
    assert np.linalg.eigvalsh(H.toarray()).min() > -1e-9
    assert energy(mesh.vertices) < 1e-20


def test_quasi_inextensible_sheet_shears_more_than_the_inextensible_one():
    """Hanging from one corner, the quasi-inextensible sheet (no F rows, soft shear energy) shears."""

    def run(mode, k_s):
        mesh = rectangle(0.3, 0.3, 7, 7, plane="xz")
        corner = int(np.argmin(np.linalg.norm(mesh.vertices - [-0.15, 0, 0.15], axis=1)))
        model = (ModelBuilder().set_cloth(mesh, Material(rho=0.16, alpha=0.8, shear_stiffness=k_s),
                                          constraint_mode=mode).add_grasp([corner], TrajectoryFixed()).finalize())
        st = Stepper(model, dt=0.01)
        s = model.initial_state()
        for _ in range(150):
            s, info = st.step(s)
            assert info.residual <= 1e-3
        F = model.shear_rows.value(s.x) if model.shear_rows is not None else None
        return model, s, F

    m_q, s_q, F_q = run("quasi-inextensible", 1e2)
    assert m_q.constraints.count_by_kind()["F"] == 0
    m_i, s_i, _ = run("inextensible", 0.0)
    # a measure of shear: change of the angle between the two sheet directions at the centre
    def angle(x, mesh):
        c = 3 * 7 + 3
        a, b = x[c + 1] - x[c - 1], x[c + 7] - x[c - 7]
        return np.degrees(np.arccos(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))
    assert abs(angle(s_q.x, None) - 90) > abs(angle(s_i.x, None) - 90) + 1.0
