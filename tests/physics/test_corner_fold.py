"""A corner of a 1 m sheet lying on a table folded over by one grasped node and let go (the motion
of the folding sequences of Coltraro et al. thesis §7.4.1): the grasp turns the corner about the
fold line and releases it 90 % of the way round; the flap falls onto the sheet.

The lifted flap weighs a few tenths of a newton and the table's friction resists at most μ m g
(0.8 N for this sheet): a gripper folding it feels about a newton. So it is on a triangle mesh, with
and without friction. Where the corner lands is measured in the frame of the sheet's unfolded part
(a rigid fit to the nodes more than 0.8 m from the corner): without friction the whole sheet slides
on the table as the flap is turned.

On the 10 × 10 quad mesh the fold's crease runs across the quads' diagonals, which quads whose edges
keep their lengths (the stretch-limited rows) cannot bend along: the flap stays a stiff plate. With
friction the descending grasp drives it into the table (the table's normal force rises with the
grasp's push, friction holds its foot), the grasp force grows to about 90 N with edges 4 % beyond
their stretch bound, and the released corner is thrown at tens of metres per second; without
friction the sheet slides away from the grasp (about 0.33 m) and the flap springs back flat, the
corner 0.56 m from its target in the sheet's frame. Strict expected failures until quads can crease
along their diagonals."""

import numpy as np
import pytest

from isocloth.scenes.loader import build_scene, config_from_dict

pytestmark = pytest.mark.slow

H = 0.5


def _flip(corner, target, waypoints=8, stop=0.9):
    """Displacements (w, 3) [m] that turn ``corner`` about the perpendicular bisector of corner →
    target, ``stop`` of the half turn, on a circle 4 % tighter at its top (slack for the crease)."""
    c, g = np.array([*corner, 0.0]), np.array([*target, 0.0])
    mid, r, u = 0.5 * (c + g), 0.5 * np.linalg.norm(g - c), (g - c) / np.linalg.norm(g - c)
    s = np.linspace(0.0, 1.0, waypoints + 1)
    rr = r * (1 - 0.04 * np.sin(np.pi * s))
    p = mid - (rr * np.cos(stop * np.pi * s))[:, None] * u + (rr * np.sin(stop * np.pi * s))[:, None] * [0, 0, 1]
    return p - c


def _fold(mu: float, element: str = "quad"):
    """Peak grasp force [N] while held, peak node speed [m/s] after the release, final and initial positions."""
    t0, T = 0.05, 1.2
    pts = _flip((-H, -H), (-0.1, -0.1))
    scene = build_scene(config_from_dict(dict(
        name="corner-fold",
        cloth=dict(mesh=dict(generator="rectangle", width=1.0, height=1.0, nx=10, ny=10, element=element),
                   fabric="light-cotton",
                   placement=dict(translate=[0, 0, 0.001]), noise=dict(sigma=0.0005, seed=1)),
        grasps=[dict(nodes=dict(nearest=[[-H, -H, 0.0]]), start=t0, end=t0 + T + 0.05,
                     trajectory=dict(type="waypoints", times=list(t0 + T * np.linspace(0, 1, len(pts))),
                                     points=pts.tolist(), interpolation="cubic"))],
        obstacles=[dict(type="plane", name="table", mu=mu)],
        self_collision=dict(thickness=0.005, mu=0.3),
        simulation=dict(dt=0.01, duration=2.0), output=dict(video="none"))))
    state, force, speed = scene.initial_state, 0.0, 0.0
    while state.t < t0 + T + 0.5:
        state, info = scene.stepper.step(state)
        if len(info.grasp_forces):
            force = max(force, float(np.linalg.norm(np.sum(info.grasp_forces, axis=0))))
        elif state.t > t0 + T:
            speed = max(speed, float(np.linalg.norm(state.v, axis=1).max()))
    return force, speed, state.x, scene.model.initial_positions


def _in_sheet_frame(x, x0):
    """The corner node's final position (3,) [m] in the frame of the sheet's unfolded part: the rigid
    motion that takes the nodes more than 0.8 m from the corner back to their start x0, applied to it."""
    from scipy.spatial.transform import Rotation

    far = np.linalg.norm(x0[:, :2] - x0[0, :2], axis=1) > 0.8
    rotation, _ = Rotation.align_vectors(x0[far] - x0[far].mean(axis=0), x[far] - x[far].mean(axis=0))
    return rotation.apply(x[0] - x[far].mean(axis=0)) + x0[far].mean(axis=0)


def _check(force, speed, x, x0):
    assert force < 3.0, f"peak grasp force {force:.3g} N"
    assert speed < 3.0, f"released corner thrown at {speed:.3g} m/s"
    corner = _in_sheet_frame(x, x0)
    assert np.hypot(*(corner[:2] + 0.1)) < 0.15 and corner[2] < 0.03, f"corner ended at {corner} (sheet frame)"


def test_a_corner_of_a_triangle_mesh_folded_on_a_frictionless_table_lands_on_the_sheet():
    _check(*_fold(mu=0.0, element="triangle"))


def test_a_corner_of_a_triangle_mesh_folded_on_a_table_with_friction_lands_on_the_sheet():
    _check(*_fold(mu=0.5, element="triangle"))


@pytest.mark.xfail(strict=True, reason="quads with inextensible edges cannot crease along their diagonals: the flap "
                   "is driven into the table (grasp force ~90 N, edges 4 % beyond their bound) and the released "
                   "corner is thrown at > 20 m/s")
def test_a_corner_of_a_quad_mesh_folded_on_a_table_with_friction_lands_on_the_sheet():
    _check(*_fold(mu=0.5))


@pytest.mark.xfail(strict=True, reason="quads with inextensible edges cannot crease along their diagonals: on a "
                   "frictionless table the sheet slides away from the grasp and the flap springs back flat")
def test_a_corner_of_a_quad_mesh_folded_on_a_frictionless_table_lands_on_the_sheet():
    _check(*_fold(mu=0.0))
