"""Fast projection with a reused factorization (chord steps) and the lower-triangle Schur assembly.

The projection may take steps with the last factorization of ∇C M⁻¹ ∇Cᵀ, computed at an earlier
iterate φ_f, even of the previous time step (isocloth.solvers.projection). These tests check that
(1) the assembled Schur complement and its factorization are those of ∇C M⁻¹ ∇Cᵀ, (2) reuse keeps
the tolerance and the grasps exact while saving factorizations, (3) a step is a function of its
State (the factorization point travels with it, so resumed runs are bit-identical), (4) rejected
chord steps fall back to exactly the Newton path, and (5) the dynamics are unchanged: a swinging
plate keeps the period of a physical pendulum.
"""

import numpy as np
import pytest

from isocloth import ModelBuilder, Stepper
from isocloth.control import TrajectoryFixed
from isocloth.mesh.generators import rectangle
from isocloth.model import Material
from isocloth.solvers.projection import SolverProjection
from isocloth.solvers.schur import SchurSystem
from isocloth.state import State

LEGACY = dict(reuse_factor=False, merit_growth=1.0, cholmod_mode="cholmod", ordering="default")


def _hanging_sheet(n=20, width=1.0, *, solver=None, dt=0.01, kappa=0.0):
    """n×n quad sheet in the x-z plane, two top corners fixed (the 20×20 benchmark scene), with the
    thesis' rows: these tests are about the numerics of projecting onto them (with the stretch limits
    the held edges that each run chooses differ, and the reuse and legacy runs end 1.2 cm apart)."""
    mesh = rectangle(width, width, n, n, plane="xz")
    v = mesh.vertices
    rng = np.random.default_rng(0)
    v = v + rng.normal(scale=5e-4, size=v.shape) * [1.0, 1.0, 1.0]
    mesh = mesh.replace(vertices=v, rest_vertices=v)
    top = v[:, 2].max()
    corners = [int(np.argmin(np.hypot(v[:, 0] - sx * width / 2, v[:, 2] - top))) for sx in (-1, 1)]
    mat = Material(rho=0.16, delta=0.083, alpha=0.32, kappa=kappa)
    model = (ModelBuilder().set_cloth(mesh, mat, constraint_model="thesis-nodal")
             .add_grasp(np.array(corners), TrajectoryFixed()).finalize())
    return model, Stepper(model, dt=dt, solver=solver or SolverProjection())


def _run(model, stepper, steps, state=None):
    s = state or model.initial_state()
    infos = []
    for _ in range(steps):
        s, info = stepper.step(s)
        infos.append(info)
    return s, infos


@pytest.mark.parametrize("dense", [True, False])
def test_schur_assembly_and_factor_match_the_jacobian_product(dense):
    model, st = _hanging_sheet(8 if dense else 14)
    s, _ = _run(model, st, 5)
    cons, rows, w = model.constraints, model.active_rows, model.inverse_masses
    sys_ = SchurSystem(cons.pair_row, cons.pair_node, rows, w, cons.row_count, dense=dense)
    assert sys_.dense is dense
    AX = cons.A @ s.x
    _, J = cons.value_and_jacobian(s.x)
    J = J[rows].toarray()
    S_ref = (J * np.repeat(w, 3)) @ J.T  # ∇C M⁻¹ ∇Cᵀ (prescribed nodes: w = 0)
    S = sys_.matrix(AX)
    S = S if dense else S.toarray()
    assert np.abs(S - S.T).max() == 0.0
    assert np.abs(S - S_ref).max() <= 1e-12 * np.abs(S_ref).max()
    c = np.random.default_rng(1).normal(size=rows.size)
    eps = 1e-9 * np.diag(S_ref).max()
    sys_.factorize(AX, 1e-9)
    x = sys_.solve_factored(c)
    x_ref = np.linalg.solve(S_ref + eps * np.eye(rows.size), c)
    # the shifted system is ill-conditioned (flat sheet): compare residuals, not solutions
    assert np.linalg.norm((S_ref + eps * np.eye(rows.size)) @ x - c) <= 1e-8 * np.linalg.norm(c)
    assert np.linalg.norm((S_ref + eps * np.eye(rows.size)) @ x_ref - c) <= 1e-8 * np.linalg.norm(c)


def test_reused_factorizations_keep_the_tolerance_and_the_grasps():
    model, st = _hanging_sheet(20)
    assert model.active_rows.size > 600  # sparse path: reuse applies
    s, infos = _run(model, st, 40)
    g = model.grasp_nodes
    assert all(i.converged and i.residual <= 1e-3 for i in infos)
    assert np.array_equal(s.x[g], model.initial_positions[g])  # grasps exact
    its = sum(i.iterations for i in infos)
    fact = sum(i.factorizations for i in infos)
    assert fact < 0.7 * its, (fact, its)  # most steps start with a chord step on the kept factor
    assert s.factor_point is not None and s.factor_point.shape == s.x.shape
    # the legacy solver (a new factorization per iteration) reaches the same sheet within the
    # tolerance band (≈ 1 cm here; the two differ by a few mm)
    model2, st2 = _hanging_sheet(20, solver=SolverProjection(**LEGACY))
    s2, infos2 = _run(model2, st2, 40)
    assert sum(i.factorizations for i in infos2) == sum(i.iterations for i in infos2)
    assert np.abs(s.x - s2.x).max() < 1e-2


def test_a_step_is_a_function_of_its_state(tmp_path):
    model, st = _hanging_sheet(20)
    s, _ = _run(model, st, 12)
    s.save(tmp_path / "s.npz")
    r = State.load(tmp_path / "s.npz")
    assert np.array_equal(r.factor_point, s.factor_point)
    assert np.array_equal(s.copy().factor_point, s.factor_point)
    # a new stepper (no cached factorization) continues exactly as the original one
    _, st_new = _hanging_sheet(20)
    a, _ = _run(model, st, 5, state=s)
    b, _ = _run(model, st_new, 5, state=r)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.factor_point, b.factor_point)
    # and the original stepper, whose cache now holds another factorization, too
    c, _ = _run(model, st, 5, state=r)
    assert np.array_equal(a.x, c.x)


def test_interrupted_run_of_a_sparse_sheet_resumes_bit_identically(tmp_path, interrupt_at):
    """The runner's checkpoint holds State.factor_point: a resumed run repeats the chord steps."""
    from isocloth.io.trajectory import load_trajectory
    from isocloth.runner import resume_run, run_scene
    from isocloth.scenes.loader import build_scene, config_from_dict

    cfg = {
        "name": "sheet-20x20",
        "cloth": {"mesh": {"generator": "rectangle", "width": 1.0, "height": 1.0, "nx": 20, "ny": 20,
                           "element": "quad", "plane": "xz"},
                  "placement": {"translate": [0.0, 0.0, 0.5]}, "noise": {"sigma": 0.0005, "seed": 0},
                  "fabric": "light-cotton"},
        "grasps": [{"name": "corners", "nodes": {"nearest": [[-0.5, 0.0, 1.0], [0.5, 0.0, 1.0]]},
                    "trajectory": {"type": "fixed"}}],
        "simulation": {"dt": 0.01, "duration": 0.4, "tolerance": 1e-3},
        "output": {"video": "none", "checkpoint_every": 0.1},
    }
    full = tmp_path / "full"
    run_scene(build_scene(config_from_dict(cfg)), full)
    sc = build_scene(config_from_dict(cfg))
    assert sc.model.active_rows.size > 600
    interrupt_at(sc.stepper, 26)
    part = tmp_path / "part"
    assert run_scene(sc, part).interrupted
    resume_run(part)
    a, b = load_trajectory(full), load_trajectory(part)
    assert np.array_equal(a.times, b.times) and np.array_equal(a.positions, b.positions)


def test_without_a_kept_factorization_the_newton_path_is_unchanged():
    """The kept factorization never used (drift bound 0): bit for bit the Newton iteration."""
    model, st = _hanging_sheet(20, solver=SolverProjection(reuse_drift=1e-12))
    s, infos = _run(model, st, 10)
    model2, st2 = _hanging_sheet(20, solver=SolverProjection(reuse_factor=False))
    s2, infos2 = _run(model2, st2, 10)
    assert np.array_equal(s.x, s2.x)
    assert [i.iterations for i in infos] == [i.iterations for i in infos2]


def test_reuse_in_the_implicit_metric():
    """KKT path (bending metric W): chord steps too, same tolerance and grasps."""
    model, st = _hanging_sheet(14, width=0.4, kappa=2e-5,
                               solver=SolverProjection(metric="implicit"))
    kkt_size = 3 * (model.node_count - model.grasp_nodes.size) + model.active_rows.size
    assert kkt_size > 600
    s, infos = _run(model, st, 30)
    assert all(i.converged for i in infos)
    assert sum(i.factorizations for i in infos) < sum(i.iterations for i in infos)
    assert np.array_equal(s.x[model.grasp_nodes], model.initial_positions[model.grasp_nodes])


def test_swinging_plate_keeps_the_pendulum_period_with_reuse():
    """A 16×16 plate (sparse path) hinged at its top edge swings with the period of a rigid
    plate, 2π √(2L / 3g), whether or not factorizations are reused: chord steps (normals of an
    earlier configuration) must not add a force along the motion."""
    L = 0.3

    def period(solver):
        mat = Material(rho=0.16, delta=0.16, alpha=0.0)
        mesh = rectangle(L, L, 16, 16, plane="xz")
        top = np.flatnonzero(np.isclose(mesh.vertices[:, 2], mesh.vertices[:, 2].max()))
        model = (ModelBuilder().set_cloth(mesh, mat, initial_velocity=(0.0, 0.05, 0.0))
                 .add_grasp(top, TrajectoryFixed()).finalize())
        assert model.active_rows.size > 600
        dt = 0.002
        st = Stepper(model, dt=dt, solver=solver)
        w = model.area_mass / model.area_mass.sum()
        s = model.initial_state()
        y, fact, its = [], 0, 0
        for _ in range(int(2.1 / dt)):
            s, info = st.step(s)
            assert info.residual <= 1e-3
            y.append(w @ s.x[:, 1])
            fact += info.factorizations
            its += info.iterations
        y = np.array(y)
        t = dt * (1 + np.arange(y.size))
        idx = np.flatnonzero((y[:-1] > 0) & (y[1:] <= 0))
        tc = t[idx] + dt * y[idx] / (y[idx] - y[idx + 1])
        second = np.abs(y[t > 1.2]).max()  # amplitude in the second swing (numerical damping)
        return float(np.mean(np.diff(tc))), second, fact, its

    T_reuse, a_reuse, fact, its = period(SolverProjection())
    T_fresh, a_fresh, fact2, its2 = period(SolverProjection(reuse_factor=False))
    assert fact < 0.8 * its and fact2 == its2
    assert T_reuse == pytest.approx(T_fresh, rel=0.01)
    # implicit Euler damps the swing; roundoff-level changes (another ordering) move this by 2 %
    assert a_reuse == pytest.approx(a_fresh, rel=0.03)
    assert T_reuse == pytest.approx(2 * np.pi * np.sqrt(2 * L / (3 * 9.8)), rel=0.05)


def test_options_are_validated():
    with pytest.raises(ValueError, match="refactor_ratio"):
        SolverProjection(refactor_ratio=1.0)
    with pytest.raises(ValueError, match="chord_tolerance"):
        SolverProjection(chord_tolerance=0.0)
    with pytest.raises(ValueError, match="reuse_drift"):
        SolverProjection(reuse_drift=0.0)
    with pytest.raises(ValueError, match="merit_growth"):
        SolverProjection(merit_growth=0.5)
    with pytest.raises(ValueError, match="cholmod_mode"):
        SolverProjection(cholmod_mode="fast")
    with pytest.raises(ValueError, match="ordering"):
        SolverProjection(ordering="rcm")
    model, st = _hanging_sheet(20)
    s = model.initial_state()
    s.factor_point = np.zeros((3, 3))
    with pytest.raises(ValueError, match="factor_point"):
        st.step(s)


def test_newton_step_on_a_kept_factorization_solves_the_current_system():
    """Conjugate gradients preconditioned with a factorization of an earlier configuration solve
    the current Newton system (S(φ_j) + εI) Δλ = C to the requested scaled residual; with a
    factorization of an unrelated configuration they give up (None) and the solver refactors."""
    model, st = _hanging_sheet(20)
    a, _ = _run(model, st, 40)  # swinging (near flat, the sheet's S changes fastest along its null space)
    b, _ = _run(model, st, 2, state=a)
    cons, rows, w = model.constraints, model.active_rows, model.inverse_masses
    sys_ = SchurSystem(cons.pair_row, cons.pair_node, rows, w, cons.row_count)
    sys_.factorize(cons.A @ a.x, 1e-9)
    AX = cons.A @ b.x
    S = sys_.matrix(AX).toarray() + sys_.factor_shift * np.eye(rows.size)
    scale = cons.scale[rows]
    c = cons.value(b.x + 0.03 * b.v)[rows]  # the residual of an unprojected step
    assert np.max(np.abs(c) / scale) > 1e-3
    solver = SolverProjection()
    target = 0.01 * np.max(np.abs(c) / scale)
    dl = solver._krylov_solve(sys_, AX, c, None, scale, target)
    assert dl is not None
    assert np.max(np.abs(S @ dl - c) / scale) <= target
    # a kept factorization of the flat, unstretched sheet does not precondition a crumpled one
    crumpled = b.x + np.random.default_rng(3).normal(scale=0.05, size=b.x.shape)
    assert solver._krylov_solve(sys_, cons.A @ crumpled, c, None, scale, target) is None


def test_numeric_factorizations_per_step_on_the_hanging_benchmark_sheet():
    """The 20 × 20 hanging sheet with the default model (held stretch limits bordering the
    thesis' rows, dt 10 ms): once swinging, most Newton steps run on a kept factorization."""
    from isocloth.scenes.loader import build_scene, config_from_dict

    cfg = {"name": "sheet-20x20",
           "cloth": {"mesh": {"generator": "rectangle", "width": 1.0, "height": 1.0, "nx": 20, "ny": 20,
                              "element": "quad", "plane": "xy"},
                     "placement": {"translate": [0.0, 0.0, 1.0]}, "noise": {"sigma": 0.0005, "seed": 0},
                     "fabric": "light-cotton", "rho": 0.2},
           "grasps": [{"name": "corners", "nodes": {"nearest": [[-0.5, -0.5, 1.0], [0.5, -0.5, 1.0]]},
                       "trajectory": {"type": "fixed"}}],
           "simulation": {"dt": 0.01, "duration": 1.0}, "output": {"video": "none"}}
    sc = build_scene(config_from_dict(cfg))
    s, infos = _run(sc.model, sc.stepper, 100, state=sc.initial_state)
    late = infos[30:]
    assert all(i.converged for i in infos)
    assert sum(i.factorizations for i in late) <= 0.8 * len(late)
    assert sum(i.iterations for i in late) >= 2 * len(late)  # several Newton steps per factorization


def test_numeric_factorizations_per_step_of_a_sheet_draped_on_a_sphere():
    """A 12 × 12 sheet dropped on a sphere (μ 0.5): once it lies on it, each linearisation's friction loop
    settles friction with one factorization, so a step takes few (the normal QP / friction alternation with a
    new linearisation per QP took 5–6); and nothing enters the sphere."""
    from isocloth.scenes.loader import build_scene, config_from_dict

    cfg = {"name": "sphere", "cloth": {"mesh": {"generator": "rectangle", "width": 0.8, "height": 0.8, "nx": 12,
                                                "ny": 12, "element": "quad", "plane": "xy"},
                                       "placement": {"translate": [0.0, 0.0, 0.3]},
                                       "noise": {"sigma": 0.0005, "seed": 0}, "fabric": "light-cotton", "rho": 0.2},
           "obstacles": [{"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.25, "mu": 0.5}],
           "simulation": {"dt": 0.01, "duration": 1.0}, "output": {"video": "none"}}
    sc = build_scene(config_from_dict(cfg))
    s, infos = _run(sc.model, sc.stepper, 100, state=sc.initial_state)
    late = infos[50:]
    assert all(i.converged for i in infos) and all(i.active_contacts > 0 for i in late)
    assert sum(i.factorizations for i in late) <= 3.0 * len(late)
    assert np.linalg.norm(s.x, axis=1).min() >= 0.25 - sc.stepper.contact_solver.penetration_tolerance
