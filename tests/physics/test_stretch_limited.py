"""The stretch-limited constraint model (isocloth.fem.stretch_limits): elements keep their shape.

The thesis' nodal E, F, G rows leave element strain patterns free (docs/design/constraint-model.md):
hang-a2 stretches interior edges by 5 % with every row at its tolerance. With the limits, no edge
gets longer than (1 + ε̄) L and elements keep their area, in the fast projection (hang-a2) and in
the contact projection (a sheet dropped on a sphere).
"""

import numpy as np
import pytest

from isocloth import ModelBuilder, Stepper
from isocloth.mesh.generators import rectangle
from isocloth.model import Material
from isocloth.scenes.loader import build_scene, config_from_dict, load_scene
from isocloth.state import State


def _worst(stepper, state, duration):
    """Largest edge stretch, mean and largest element area error and total area error over the run."""
    worst = dict(stretch=0.0, mean=0.0, largest=0.0, total=0.0, unconverged=0)
    s = state
    while s.t < duration - 1e-9:
        s, info = stepper.step(s)
        worst["stretch"] = max(worst["stretch"], info.edge_stretch_max)
        worst["mean"] = max(worst["mean"], info.area_error_mean)
        worst["largest"] = max(worst["largest"], info.area_error_max)
        worst["total"] = max(worst["total"], info.area_error_total)
        worst["unconverged"] += not info.converged
    return s, worst


def test_hang_a2_edges_stay_within_the_limit_where_the_nodal_rows_let_them_stretch():
    thesis = load_scene("hang-a2", ["cloth.constraint_model='thesis-nodal'", "output.video='none'"])
    limited = load_scene("hang-a2", ["cloth.constraint_model='stretch-limited'", "output.video='none'"])
    _, a = _worst(thesis.stepper, thesis.initial_state, 4.0)
    _, b = _worst(limited.stepper, limited.initial_state, 4.0)
    assert a["stretch"] > 0.03  # measured 4.4 %: element modes
    assert b["unconverged"] == 0
    assert b["stretch"] <= 0.01 + 1e-3  # the limit, to the tolerance
    assert b["mean"] <= 0.01 and b["largest"] <= 0.03 and b["total"] <= 0.005
    assert b["mean"] < a["mean"] / 2


def _sphere_drop(model):
    return build_scene(config_from_dict({
        "name": "sheet-on-sphere",
        "cloth": {"mesh": {"generator": "rectangle", "width": 1.0, "height": 1.0, "nx": 20, "ny": 20,
                           "element": "quad", "plane": "xy"},
                  "placement": {"translate": [0.0, 0.0, 0.30]}, "noise": {"sigma": 0.0005, "seed": 0},
                  "rho": 0.2, "fabric": "light-cotton", "constraint_model": model},
        "obstacles": [{"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.25, "mu": 0.5}],
        "simulation": {"dt": 0.01, "duration": 0.5}, "output": {"video": "none"}}))


def test_sheet_dropped_on_a_sphere_keeps_its_elements_and_stays_outside():
    """20 × 20 nodes, 1 m, on a 25 cm sphere with μ = 0.5: the draping sheet is compressed towards
    the sphere's top, where the nodal rows let quads shear in alternating patterns; the quad
    diagonals' limits hold them. Beyond its bound a held edge answers with the fabric's tensile
    stiffness (``Material.tensile_stiffness``), so the impact may stretch it a little further:
    within 2 %, the criterion of docs/design/constraint-model.md."""
    sc = _sphere_drop("stretch-limited")
    s, w = _worst(sc.stepper, sc.initial_state, sc.duration)
    assert w["unconverged"] == 0
    assert np.linalg.norm(s.x, axis=1).min() >= 0.25 - 1e-4  # no node inside the sphere (ε1)
    assert s.x[:, 2].max() > 0.25 and s.x[:, 2].min() < 0.0  # draped over it
    assert w["stretch"] <= 0.02 and w["mean"] <= 0.01 and w["largest"] <= 0.03 and w["total"] <= 0.005


def _sheet_with_approaching_corners():
    """The A2 wool sheet of hang-a2 hung by its two top corners, which move 10 cm towards each
    other between t = 1 s and 1.5 s: the top edge, taut while hanging, goes slack."""
    mesh = {"generator": "rectangle", "width": 0.42, "height": 0.594, "nx": 7, "ny": 9, "element": "quad",
            "plane": "xz"}
    grasps = [{"name": name, "nodes": {"nearest": [[sign * 0.21, 0.0, 1.0]]},
               "trajectory": {"type": "waypoints", "times": [0.0, 1.0, 1.5],
                              "points": [[0, 0, 0], [0, 0, 0], [-sign * 0.05, 0, 0]], "interpolation": "smoothstep"}}
              for name, sign in (("left", -1.0), ("right", 1.0))]
    return build_scene(config_from_dict({
        "name": "a2-corners-approach",
        "cloth": {"mesh": mesh, "placement": {"translate": [0.0, 0.0, 0.703]},
                  "noise": {"sigma": 0.0005, "seed": 0}, "fabric": "wool"},
        "grasps": grasps, "simulation": {"dt": 0.01, "duration": 2.0}, "output": {"video": "none"}}))


def test_held_edges_sit_at_their_bound_and_are_released_when_the_cloth_goes_slack():
    """A hanging sheet holds the edges its weight stretches to the bound, at the bound (to the
    tolerance); when its corners approach each other the top of the sheet goes slack and edges are
    released (once shorter than their bound by ``Stepper.release_slack``). Beyond its bound a held
    edge is a spring of the fabric's tensile stiffness: the approach stretches it a little."""
    sc = _sheet_with_approaching_corners()
    lim, st, s = sc.model.stretch_limits, sc.stepper, sc.initial_state
    hanging, released, peak = 0, 0, 0.0
    while s.t < sc.duration - 1e-9:
        before = set(s.held_edges.tolist())
        s, info = st.step(s)
        assert info.converged
        released += len(before - set(s.held_edges.tolist()))
        strain = lim.strain(s.x)
        if s.held_edges.size:  # no held edge short of its bound by more than the release band
            assert lim.violation(s.x)[s.held_edges].min() >= -st.release_slack
        if s.t <= 1.0:
            hanging = max(hanging, s.held_edges.size)
            assert strain.max() <= 0.01 + 5e-4  # at the bound, to the tolerance
        peak = max(peak, strain.max())
    assert hanging >= 2
    assert released >= 20  # measured 101
    assert peak <= 0.0135  # measured 1.25 %; 1.46 % with a release band of half the tolerance (held edges stiffen the sheet)


def test_resume_with_held_edges_is_bit_identical(tmp_path):
    sc = load_scene("hang-a2", ["cloth.constraint_model='stretch-limited'", "output.video='none'"])
    st, s = sc.stepper, sc.initial_state
    while not (s.held_edges.size and s.contact_keys.size == 0) or s.step_index < 20:
        s, _ = st.step(s)
    s.save(tmp_path / "state.npz")
    r = State.load(tmp_path / "state.npz")
    np.testing.assert_array_equal(r.held_edges, s.held_edges)
    other = load_scene("hang-a2", ["cloth.constraint_model='stretch-limited'", "output.video='none'"]).stepper
    for _ in range(30):
        s, _ = st.step(s)
        r, _ = other.step(r)
    np.testing.assert_array_equal(s.x, r.x)
    np.testing.assert_array_equal(s.held_edges, r.held_edges)


@pytest.mark.parametrize("model", ["thesis-nodal", "stretch-limited"])
def test_both_models_project_a_stretched_start_onto_the_rows(model):
    """A sheet starting 2 % too large everywhere: the projection brings every row back to the
    tolerance in either model, and the limits bring every edge within its bound."""
    mesh = rectangle(0.3, 0.3, 6, 6)
    m = ModelBuilder().set_cloth(mesh, Material(rho=0.1), constraint_model=model).add_grasp([0]).finalize()
    s = m.initial_state()
    s.x = s.x * 1.02
    s, info = Stepper(m, dt=0.01).step(s)
    assert info.converged and info.residual <= 1e-3
    if m.stretch_limits is not None:
        assert m.stretch_limits.violation(s.x).max() <= 5e-4 + 1e-12
