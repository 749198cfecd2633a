"""Contact scenes (issue 3): non-penetration and inextensibility in every contact scene, the
frictional-cylinder outcomes of seed 000 §6.1, active-set vs interior-point trajectories, scene
set-ups as described in the papers, and solver statistics in diagnostics.csv."""

import csv

import numpy as np
import pytest

from isocloth.contact.obstacles import ObstacleBox, ObstacleCylinder, ObstacleMesh, ObstacleNeedles, ObstacleSphere
from isocloth.scenes.loader import load_scene
from isocloth.solvers.active_set import SolverActiveSet
from isocloth.solvers.interior_point import SolverInteriorPoint

CONTACT_SCENES = ["inclined-plane", "cylinder-friction", "rotating-sphere", "needles", "tablecloth",
                  "tablecloth-low-friction", "ipc-rotating-sphere"]
# short runs for the fast suite: each reaches its first contacts (time of first contact + a few steps)
SHORT = {"inclined-plane": 0.33, "cylinder-friction": 0.18, "rotating-sphere": 0.26, "needles": 0.22,
         "tablecloth": 0.72, "tablecloth-low-friction": 0.72, "ipc-rotating-sphere": 0.2}


def run_checked(name, duration, overrides=(), stride=1):
    """Run a scene; after every step assert H ≥ −ε1 for every node and obstacle and the
    inextensibility residual ≤ tolerance. Returns (scene, final state, StepInfos)."""
    sc = load_scene(name, ["output.video='none'", *overrides])
    tol = sc.config.simulation.tolerance
    eps1 = sc.config.simulation.penetration_tolerance
    s, infos = sc.initial_state, []
    while s.t < duration - 1e-9:
        s, info = sc.stepper.step(s)
        infos.append(info)
        if len(infos) % stride == 0 or s.t >= duration - 1e-9:
            for obs in sc.model.obstacles:
                H = obs.signed_distance(s.x, s.t)
                assert H.min() >= -eps1, (name, s.t, obs.name, float(H.min()))
        assert info.residual <= tol, (name, s.t, info.residual)
        assert np.isfinite(s.x).all()
    return sc, s, infos


@pytest.mark.parametrize("name", CONTACT_SCENES)
def test_contact_scene_keeps_nodes_outside_obstacles_and_cloth_inextensible(name):
    sc, s, infos = run_checked(name, SHORT[name])
    contact = [i for i in infos if i.active_contacts > 0]
    assert len(contact) >= 2, f"{name}: no contact within {SHORT[name]} s"
    assert sum(i.converged for i in contact) >= 0.8 * len(contact)
    assert sum(i.qp_iterations for i in contact) >= len(contact)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in CONTACT_SCENES if n != "ipc-rotating-sphere"])
def test_contact_scene_full_duration(name):
    sc, s, infos = run_checked(name, load_scene(name).duration, stride=1)
    contact = [i for i in infos if i.contact_count > 0]
    assert sum(i.converged for i in contact) >= 0.9 * len(contact)


@pytest.mark.long
def test_ipc_rotating_sphere_full_duration():
    """As test_contact_scene_full_duration; about 5 minutes of stepping (its 3 s on 441 nodes turned by the
    sphere's friction), outside the CI run's budget (the fast suite runs its first 0.2 s)."""
    test_contact_scene_full_duration("ipc-rotating-sphere")


# --- frictional cylinder (seed 000 §6.1, thesis §3.6.1) -----------------------------------------
# The thesis' rows, as in the thesis' experiment: with the default stretch limits μ = 0.55 rests on the
# bar as well (114 nodes on it at 2 s, centroid 0.73 m; thesis' rows 115, 0.74 m), but at μ = 0.2 the
# sheet leaves the bar at 1.4 s (1.1 s) and then slides slowly down its side (centroid 0.33 m at 2 s,
# against 0.04 m on the floor). The solver-agreement tests need them too: the interior point cannot hold
# stretch limits (test_contact_friction.py).
THESIS_ROWS = "cloth.constraint_model='thesis-nodal'"

def cylinder_run(mu, duration=2.0):
    sc, s, infos = run_checked("cylinder-friction", duration, [f"obstacles.0.mu={mu}", THESIS_ROWS], stride=5)
    bar = sc.model.obstacles[0]
    on_bar = int((bar.signed_distance(s.x, s.t) < 2e-3).sum())
    return s, on_bar, infos


@pytest.mark.slow
def test_cylinder_friction_outcomes_depend_on_mu_as_in_the_paper():
    """μ = 0.2: the sheet ends on the floor; μ = 0.55: it rests on the cylinder at t = 2 s;
    μ = 0.4: in between, still falling at t = 2 s (the fall is delayed)."""
    low, low_bar, _ = cylinder_run(0.2)
    mid, mid_bar, _ = cylinder_run(0.4)
    high, high_bar, high_infos = cylinder_run(0.55)
    z = {mu: st.x[:, 2].mean() for mu, st in ((0.2, low), (0.4, mid), (0.55, high))}
    speed = {mu: np.linalg.norm(st.v, axis=1).mean() for mu, st in ((0.2, low), (0.4, mid), (0.55, high))}
    # μ = 0.2: off the bar, lying on the floor (bar top at 1.1 m)
    assert low_bar == 0 and z[0.2] < 0.1
    # μ = 0.55: hanging over the bar (about a quarter of the nodes touch it), centroid near the top
    assert high_bar > 60 and z[0.55] > 0.6
    # μ = 0.4: between the two and still moving
    assert z[0.2] + 0.1 < z[0.4] < z[0.55] - 0.1
    assert speed[0.4] > 0.3 and speed[0.4] > 2 * speed[0.55]
    assert sum(i.converged for i in high_infos) == len(high_infos)


def cylinder_trajectory(qp, duration, overrides=()):
    """Positions (steps, n, 3) [m] and StepInfos of ``cylinder-friction`` with the QP solver ``qp``
    and the projection's friction iteration converged to ε2 = 1e-12 m (slip), 1e-14 m (sweeps)."""
    sc = load_scene("cylinder-friction", ["output.video='none'", THESIS_ROWS, *overrides])
    cp = sc.stepper.contact_solver
    cp.qp_solver = qp
    cp.slip_tolerance = 1e-12
    cp.friction_tolerance = 1e-14
    s, xs, infos = sc.initial_state, [], []
    while s.t < duration - 1e-9:
        s, info = sc.stepper.step(s)
        xs.append(s.x.copy())
        infos.append(info)
    return sc, np.array(xs), infos


# Both QP solvers tightened so that one step of the two agrees to ~1e-12 m (measured on the 11 × 11
# mesh over all 186 contact steps: median 2e-14 m, max 9e-12 m; with refinement 2, Clarabel at 1e-11
# and ε2 = 1e-8 m single steps differed by up to 8e-6 m, at contacts whose multiplier is ~0):
# active set with 4 refinement steps and ε_feas = 1e-10 m, Clarabel at 1e-13.
def tight_active_set():
    return SolverActiveSet(refinement=4, feasibility_tolerance=1e-10)


def tight_interior_point():
    return SolverInteriorPoint(tolerance=1e-13)


@pytest.mark.slow
def test_cylinder_friction_active_set_and_interior_point_give_the_same_trajectory():
    """The whole 2 s of ``cylinder-friction`` (μ = 0.55: lands on the bar at 0.14 s, drapes, rests on
    it) on an 11 × 11 node mesh, solved by the active-set method and by Clarabel: the trajectories
    agree to < 1e-4 m at every step (measured: max 3.6e-6 m).

    The trajectory is chaotic: differences grow exponentially at a rate that does not depend on
    their source (a 1e-12 m kick of the active-set run alone grows ~9/s on this mesh, ~40/s on the
    scene's 21 × 21 mesh), so the test needs per-step agreement far below 1e-4 m and a mesh whose
    draping amplifies little (on 21 × 21 the best settings agree only until 0.41 s; see
    the next test)."""
    sc, a, ia = cylinder_trajectory(tight_active_set(), 2.0, ["cloth.mesh.nx=11", "cloth.mesh.ny=11"])
    _, b, ib = cylinder_trajectory(tight_interior_point(), 2.0, ["cloth.mesh.nx=11", "cloth.mesh.ny=11"])
    assert sc.duration == 2.0 and a.shape == b.shape == (200, 121, 3)
    assert sum(i.active_contacts > 0 for i in ia) >= 180  # in contact from 0.15 s to the end
    assert all(i.converged for i in ia + ib)
    bar = sc.model.obstacles[0]
    assert (bar.signed_distance(a[-1], 2.0) < 2e-3).sum() >= 20  # resting over the bar at 2 s
    assert np.ptp(a[:, :, 2].mean(axis=1)) > 0.35  # and it got there: the centroid fell > 35 cm
    assert np.abs(a - b).max() < 1e-4


@pytest.mark.slow
def test_cylinder_friction_solvers_agree_on_the_scene_mesh_until_chaos_sets_in():
    """The scene's own 21 × 21 mesh for the first 0.30 s (landing on the bar and 15 steps of
    frictional contact). Measured max node difference with these settings: 1e-10 m after the first
    contact step, growing ×1.6 per step (chaos, as a 1e-12 m kick of one run alone) to 9e-7 m at
    0.30 s and past 1e-4 m at 0.41 s; tighter ε0, ε2 or solver tolerances do not move that time."""
    _, a, ia = cylinder_trajectory(tight_active_set(), 0.30)
    _, b, ib = cylinder_trajectory(tight_interior_point(), 0.30)
    assert sum(i.active_contacts > 0 for i in ia) >= 15
    assert all(i.converged for i in ia + ib)
    assert np.abs(a - b).max() < 1e-4


# --- scene set-ups ------------------------------------------------------------------------------

def test_contact_scenes_match_the_papers():
    cyl = load_scene("cylinder-friction")
    bar = cyl.model.obstacles[0]
    assert isinstance(bar, ObstacleCylinder) and bar.mu == 0.55 and cyl.duration == 2.0
    x0 = cyl.model.initial_positions
    assert np.ptp(x0 @ np.array([np.cos(np.radians(20)), np.sin(np.radians(20)), 0]), axis=0) == \
        pytest.approx(1.3, abs=5e-3)  # 130 cm sheet rotated 20° about z
    assert x0[:, 0].mean() == pytest.approx(0.3, abs=2e-3)  # 30 cm off the bar's axis (x = 0)

    rs = load_scene("rotating-sphere")
    ball, floor = rs.model.obstacles
    assert isinstance(ball, ObstacleSphere) and ball.radius == pytest.approx(0.35)
    assert (ball.mu, floor.mu, rs.duration) == (0.5, 0.4, 2.5)
    assert np.ptp(rs.model.initial_positions[:, 0]) == pytest.approx(1.9, abs=5e-3)
    c = np.array([[0.35, 0.0, 0.35]])  # a surface point: half a turn about z over 1 s ending at 2.5 s
    assert np.linalg.norm(ball.surface_velocity(c, 1.4)) == 0.0
    assert ball.surface_velocity(c, 2.0)[0] == pytest.approx([0.0, 0.35 * np.pi, 0.0], abs=1e-9)
    assert np.linalg.norm(ball.surface_velocity(c, 2.55)) == 0.0

    nd = load_scene("needles").model.obstacles[0]
    assert isinstance(nd, ObstacleNeedles) and (nd.c1, nd.c2) == (20.0, 0.075)

    ipc = load_scene("ipc-rotating-sphere").model.obstacles[0]
    assert isinstance(ipc, ObstacleMesh) and ipc.mu == 0.4
    p = np.array([[0.15, 0.0, 0.0]])
    assert np.linalg.norm(ipc.surface_velocity(p, 0.9)) == 0.0
    assert np.linalg.norm(ipc.surface_velocity(p, 1.5)) == pytest.approx(np.pi * 0.15, rel=0.05)  # 180°/s

    hi, lo = load_scene("tablecloth"), load_scene("tablecloth-low-friction")
    assert isinstance(hi.model.obstacles[0], ObstacleBox)
    assert (hi.model.obstacles[0].mu, lo.model.obstacles[0].mu) == (2.0, 0.0)  # thesis Table 4.7, wool
    x = hi.model.initial_positions
    assert sorted([np.ptp(x[:, 0]), np.ptp(x[:, 2])]) == pytest.approx([0.42, 0.594], abs=3e-3)  # A2
    gap = hi.model.obstacles[0].signed_distance(x, 0.0).min()
    assert 0.08 < gap < 0.12  # "suspended at about 10 cm"


@pytest.mark.slow
def test_tablecloth_is_laid_partly_on_the_table():
    """Both friction levels end (t = 4 s) with part of the sheet on the table, part suspended."""
    for name in ("tablecloth", "tablecloth-low-friction"):
        sc = load_scene(name, ["output.video='none'"])
        s = sc.initial_state
        while s.t < sc.duration - 1e-9:
            s, _ = sc.stepper.step(s)
        on_table = (sc.model.obstacles[0].signed_distance(s.x, s.t) < 2e-3).mean()
        assert 0.15 < on_table < 0.7, (name, on_table)


# --- solver statistics --------------------------------------------------------------------------

def test_solver_statistics_are_written_to_diagnostics_csv(tmp_path):
    from isocloth.runner import run_scene

    sc = load_scene("cylinder-friction", ["output.video='none'", "simulation.duration=0.16"])
    run_scene(sc, tmp_path / "run", render=False)
    rows = list(csv.DictReader(open(tmp_path / "run" / "diagnostics.csv")))
    assert len(rows) == 16
    cols = ("qp_iterations", "constraints_added", "constraints_removed", "factorizations", "updates",
            "contact_count", "active_contacts", "min_gap")
    assert set(cols) <= set(rows[0])
    last = rows[-1]
    assert int(last["active_contacts"]) > 0 and int(last["qp_iterations"]) >= int(last["iterations"]) > 0
    assert int(last["factorizations"]) >= int(last["iterations"])
    assert sum(int(r["constraints_added"]) for r in rows) > 0
