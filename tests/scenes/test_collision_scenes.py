"""Scene files for self-collisions and thin obstacles (issue 4): the ``[self_collision]`` table,
the ``stick`` / ``polyline`` / ``segments`` / ``needle-bed`` / ``points`` obstacles, ``peaks`` on
``needles``, and the built-in scenes hit-a2, shorts-fold, drop-fold, twist and ipc-needles."""

import json

import numpy as np
import pytest

from isocloth.contact.obstacles import ObstacleNeedles, ObstaclePoints, ObstaclePolyline, ObstacleSegments
from isocloth.contact.self_collision import KIND_POINT_FACE, KIND_SEGMENT_EDGE
from isocloth.scenes.loader import SceneError, builtin_scene_names, load_scene, load_scene_config

NEW_SCENES = ("hit-a2", "shorts-fold", "drop-fold", "twist", "ipc-needles")

BASE = """
name = "t"
[cloth]
mesh = {{ generator = "rectangle", width = 0.4, height = 0.4, nx = 9, ny = 9 }}
placement = {{ translate = [0.0, 0.0, 0.5] }}
{extra}
[simulation]
dt = 0.01
duration = 0.05
"""


def _scene(tmp_path, extra, name="scene.toml"):
    p = tmp_path / name
    p.write_text(BASE.format(extra=extra))
    return p


# ------------------------------------------------------------------ [self_collision]
def test_self_collision_table_with_units_and_defaults(tmp_path):
    sc = load_scene(_scene(tmp_path, '[self_collision]\nthickness = "4 mm"\nomega = 0.4\nmu = 0.2'))
    o = sc.model.self_collision
    assert o.enabled and o.thickness == pytest.approx(0.004) and o.omega == 0.4 and o.mu_cloth == 0.2
    assert o.omega_decay == 0.9 and o.max_restarts == 5
    det = sc.model.collision_detector
    assert det.self_collision and det.thickness == pytest.approx(0.004) and det.mu == 0.2
    # without the table: no self-collision, no detector
    plain = load_scene(_scene(tmp_path, ""))
    assert not plain.model.self_collision.enabled and plain.model.collision_detector is None
    assert not plain.model.has_contacts
    off = load_scene(_scene(tmp_path, "[self_collision]\nenabled = false"))
    assert not off.model.self_collision.enabled and off.model.collision_detector is None


@pytest.mark.parametrize("extra, match", [
    ("[self_collision]\ncolour = 1", r"self_collision\.colour: unknown key"),
    ('[self_collision]\nthickness = "3 s"', r"self_collision\.thickness.*expected a quantity in m"),
    ("[self_collision]\nthickness = 0.0", r"self_collision\.thickness"),
    ("[self_collision]\nomega = 0.6", r"self_collision\.omega"),
    ("[self_collision]\nomega_decay = 1.0", r"self_collision\.omega_decay"),
    ("[self_collision]\nmax_restarts = -1", r"self_collision\.max_restarts"),
    ("[self_collision]\nmu = -0.1", r"self_collision\.mu"),
])
def test_self_collision_table_rejects_bad_values(tmp_path, extra, match):
    with pytest.raises(SceneError, match=match):
        load_scene_config(_scene(tmp_path, extra))


def test_thickness_above_the_mesh_spacing_is_a_named_error(tmp_path):
    # 9x9 nodes on 0.4 m: spacing 5 cm, smallest node-face distance between non-adjacent
    # primitives 5/sqrt(2) = 3.54 cm (a node to the diagonal of the neighbouring quad)
    with pytest.raises(SceneError, match=r"self_collision\.thickness.*0\.04 m is not smaller than 0\.0353"
                                         r".*use a thickness below"):
        load_scene(_scene(tmp_path, '[self_collision]\nthickness = "4 cm"'))
    load_scene(_scene(tmp_path, '[self_collision]\nthickness = "3.5 cm"'))  # just below: accepted


def _two_layers(tmp_path, gap):
    """An OBJ of two 0.2 m squares (2 × 2 quads each), one ``gap`` [m] above the other."""
    lines = []
    for z in (0.0, gap):
        lines += [f"v {0.1 * i - 0.1} {0.1 * j - 0.1} {0.5 + z}" for j in range(3) for i in range(3)]
    for base in (1, 10):
        lines += [f"f {base + j * 3 + i} {base + j * 3 + i + 1} {base + (j + 1) * 3 + i + 1} {base + (j + 1) * 3 + i}"
                  for j in range(2) for i in range(2)]
    (tmp_path / "layers.obj").write_text("\n".join(lines) + "\n")
    return tmp_path / "layers.obj"


def test_thickness_is_derived_from_a_mesh_too_close_for_the_default(tmp_path):
    """Layers 0.8 mm apart and no thickness given: τ0 = 0.2 mm (a quarter of the gap), named in the start
    report; a mesh whose primitives are far apart gets 5 mm; a thickness given above the gap stays an error."""
    from isocloth.runner import start_report

    _two_layers(tmp_path, 0.0008)
    text = BASE.format(extra="[self_collision]").replace(
        'mesh = { generator = "rectangle", width = 0.4, height = 0.4, nx = 9, ny = 9 }', 'mesh = { file = "layers.obj" }')
    (tmp_path / "layers.toml").write_text(text)
    sc = load_scene(tmp_path / "layers.toml")
    assert sc.model.self_collision.thickness == pytest.approx(0.0002, rel=1e-6)
    report = start_report(sc)
    assert report["self_collision_thickness"] == pytest.approx(0.0002, rel=1e-6)
    assert any("0.2 mm" in w and "self_collision.thickness" in w for w in report["warnings"])
    state = sc.initial_state
    for _ in range(3):  # the layers fall together: no crossing, no error
        state, info = sc.stepper.step(state)
        assert info.converged
    far = load_scene(_scene(tmp_path, "[self_collision]"))
    assert far.model.self_collision.thickness == 0.005
    (tmp_path / "given.toml").write_text(text.replace("[self_collision]", '[self_collision]\nthickness = "1 mm"'))
    with pytest.raises(SceneError, match=r"self_collision\.thickness.*0\.001 m is not smaller than 0\.0008"):
        load_scene(tmp_path / "given.toml")


# ------------------------------------------------------------------ thin obstacles
STICK = """
[[obstacles]]
type = "stick"
name = "stick"
{body}
"""


def test_stick_from_waypoints(tmp_path):
    body = ('radius = "7.5 mm"\nsegments = 10\ntimes = [0.0, 1.0]\n'
            "a = [[-0.4, 0.0, 0.6], [-0.4, 0.0, 0.4]]\nb = [[0.4, 0.0, 0.6], [0.4, 0.0, 0.4]]")
    sc = load_scene(_scene(tmp_path, STICK.format(body=body)))
    assert sc.model.obstacles == ()  # the stick is not a node-wise obstacle
    (stick,) = sc.model.thin_obstacles
    assert isinstance(stick, ObstaclePolyline) and stick.radius == pytest.approx(0.0075)
    assert len(stick.segments) == 10 and stick.mu == 0.0
    np.testing.assert_allclose(stick.vertices_at(0.5)[[0, -1]], [[-0.4, 0, 0.5], [0.4, 0, 0.5]])
    det = sc.model.collision_detector
    assert det is not None and not det.self_collision and det.obstacles == [stick]
    assert sc.model.has_contacts


def test_stick_from_csv_with_header_scale_and_start(tmp_path):
    (tmp_path / "stick.csv").write_text("t,ax,ay,az,bx,by,bz\n0,0,0,600,750,0,600\n1,0,0,400,750,0,400\n")
    body = 'file = "stick.csv"\nscale = 0.001\nstart = 2.0'
    sc = load_scene(_scene(tmp_path, STICK.format(body=body)))
    (stick,) = sc.model.thin_obstacles
    v = stick.vertices_at(2.5)
    np.testing.assert_allclose(v[[0, -1]], [[0, 0, 0.5], [0.75, 0, 0.5]], atol=1e-12)
    np.testing.assert_allclose(stick.vertices_at(0.0)[0], [0, 0, 0.6])  # held before the first sample


@pytest.mark.parametrize("body, match", [
    ("times = [0.0, 1.0]\na = [[0, 0, 0], [0, 0, 0]]", "needs times, a and b"),
    ('file = "s.csv"\ntimes = [0.0]\na = [[0, 0, 0]]\nb = [[1, 0, 0]]', "either file or times/a/b"),
    ("times = [0.0, 1.0]\na = [[0, 0, 0]]\nb = [[1, 0, 0], [1, 0, 0]]", "same non-zero length"),
    ("times = [1.0, 0.5]\na = [[0, 0, 0], [0, 0, 0]]\nb = [[1, 0, 0], [1, 0, 0]]", "strictly increasing"),
    ("times = [0.0]\na = [[0, 0, 0]]\nb = [[1, 0, 0]]\nthickness = 0.01",
     r"obstacles\.0\.thickness: unknown key; allowed here: name, mu, type, radius"),
    ('times = [0.0]\na = [[0, 0, 0]]\nb = [[1, 0, 0]]\nradius = "2 kg"', "expected a quantity in m"),
])
def test_stick_schema_errors(tmp_path, body, match):
    with pytest.raises(SceneError, match=match):
        load_scene_config(_scene(tmp_path, STICK.format(body=body)))


def test_stick_geometry_and_file_errors(tmp_path):
    body = "times = [0.0]\na = [[0.1, 0, 0.5]]\nb = [[0.1, 0, 0.5]]"
    with pytest.raises(SceneError, match="obstacle stick: the stick ends coincide"):
        load_scene(_scene(tmp_path, STICK.format(body=body)))
    (tmp_path / "bad.csv").write_text("0,0,0,0,1,0,0\n1,0,0,0,1,0\n")
    with pytest.raises(SceneError, match=r"bad.csv:2: expected 7 columns"):
        load_scene(_scene(tmp_path, STICK.format(body='file = "bad.csv"')))
    with pytest.raises(SceneError, match="not found"):
        load_scene(_scene(tmp_path, STICK.format(body='file = "missing.csv"')))


def test_segments_needle_bed_points_polyline(tmp_path):
    extra = """
[[obstacles]]
type = "segments"
file = "builtin:codim_ipc/needleBed10x10.seg"
y_up = true
scale = 0.5
translate = [0.0, 0.0, 0.05]
tips = "upper"

[[obstacles]]
type = "needle-bed"
translate = [0.0, 0.0, 0.1]

[[obstacles]]
type = "points"
points = [[0.0, 0.0, 0.2], [0.1, 0.0, 0.2]]
radius = "2 mm"
motion = { type = "translation", velocity = [0.0, 0.0, -0.5] }

[[obstacles]]
type = "polyline"
vertices = [[0.0, 0.0, 0.3], [0.1, 0.0, 0.3], [0.1, 0.1, 0.3]]
closed = true
"""
    sc = load_scene(_scene(tmp_path, extra))
    seg, bed, pts, poly = sc.model.thin_obstacles
    assert isinstance(seg, ObstacleSegments) and isinstance(bed, ObstacleSegments)
    assert len(seg.segments) == len(bed.segments) == 100
    # y-up file turned z up, scaled by 0.5: needles 5 cm long with their tips (the points) at z = 0.05
    v = seg.vertices_at(0.0)
    assert v[:, 2].min() == pytest.approx(0.0) and v[:, 2].max() == pytest.approx(0.05)
    np.testing.assert_allclose(v[seg.points, 2], 0.05)
    assert len(seg.points) == 100
    vb = bed.vertices_at(0.0)
    np.testing.assert_allclose(vb[bed.points, 2], 0.1)
    assert vb[:, 0].min() == pytest.approx(-0.45) and vb[:, 0].max() == pytest.approx(0.45)
    assert isinstance(pts, ObstaclePoints) and pts.radius == pytest.approx(0.002)
    np.testing.assert_allclose(pts.vertices_at(0.2)[:, 2], 0.1)
    assert isinstance(poly, ObstaclePolyline) and poly.closed and len(poly.segments) == 3
    assert len(poly.points) == 0  # a closed chain has no free ends


def _above_needles(tmp_path, extra):
    """A scene file with the cloth above the needle tips (z = 0.67 m): a cloth starting among the
    needles is refused."""
    p = tmp_path / "needles.toml"
    p.write_text(BASE.format(extra=extra).replace("translate = [0.0, 0.0, 0.5]", "translate = [0.0, 0.0, 0.8]"))
    return p


def test_needle_peaks_become_point_obstacles(tmp_path):
    extra = '[[obstacles]]\ntype = "needles"\nthickness = "1 mm"\npeaks = true'
    sc = load_scene(_above_needles(tmp_path, extra))
    (needles,) = sc.model.obstacles
    (peaks,) = sc.model.thin_obstacles
    assert isinstance(needles, ObstacleNeedles) and isinstance(peaks, ObstaclePoints)
    tips = peaks.vertices_at(0.0)
    np.testing.assert_allclose(tips, needles.peaks(0.0))
    np.testing.assert_allclose(tips[:, 2], 1.0 / (20.0 * 0.075))  # thesis eq. 3.17
    assert peaks.radius == pytest.approx(0.001)
    with pytest.raises(SceneError, match="peaks = true needs peak_radius > 0 or thickness > 0"):
        load_scene(_above_needles(tmp_path, '[[obstacles]]\ntype = "needles"\npeaks = true'))


# ------------------------------------------------------------------ built-in scenes
def test_new_scenes_are_builtin():
    assert set(NEW_SCENES) <= set(builtin_scene_names())


@pytest.mark.parametrize("name", NEW_SCENES)
def test_new_scene_has_self_collisions_and_starts_clear(name):
    """Every new scene enables self-collisions with a τ0 below the mesh spacing, so the initial
    state gives no cloth–cloth row; it steps with the current stepper (no NaN, grasps exact)."""
    sc = load_scene(name)
    m = sc.model
    assert m.self_collision.enabled and m.has_contacts
    det = m.collision_detector
    x0 = m.initial_positions
    assert det.min_distance(x0) > m.self_collision.thickness
    rows = det.detect(x0, x0, omega=m.self_collision.omega)
    assert rows.count == 0, (name, rows)
    s = sc.initial_state
    for _ in range(3):
        s, info = sc.stepper.step(s)
        assert np.isfinite(s.x).all() and info.residual <= sc.config.simulation.tolerance


def test_hit_a2_matches_seed_7_4():
    sc = load_scene("hit-a2")
    m = sc.model
    assert m.node_count == 63 and m.mesh.quad_count == 48
    x = m.initial_positions
    assert np.allclose(np.sort(x[m.grasp_nodes, 0]), [-0.21, 0.21], atol=2e-3)
    assert np.allclose(x[m.grasp_nodes, 2], 1.0, atol=2e-3)
    (stick,) = m.thin_obstacles
    assert stick.radius == pytest.approx(0.0075) and stick.mu == 0.0
    times = stick._times
    lengths = [np.linalg.norm(stick.vertices_at(t)[-1] - stick.vertices_at(t)[0]) for t in times]
    np.testing.assert_allclose(lengths, 0.75, atol=1e-3)  # 75 cm stick
    # four hits: the stick's centre crosses the sheet's plane y = 0 moving +y, at four speeds
    ts = np.arange(0.0, sc.duration, 0.005)
    yc = np.array([stick.vertices_at(t)[:, 1].mean() for t in ts])
    cross = np.flatnonzero((yc[:-1] < 0.0) & (yc[1:] >= 0.0))
    assert len(cross) == 4
    speeds = (yc[cross + 1] - yc[cross]) / 0.005
    np.testing.assert_allclose(speeds, [1.0, 2.0, 1.5, 3.0], rtol=1e-6)
    centres = np.array([stick.vertices_at(ts[i]).mean(axis=0) for i in cross])
    assert len({tuple(np.round(c[[0, 2]], 2)) for c in centres}) >= 3  # different places


def test_stick_of_hit_a2_reaches_the_detector():
    """At the first hit (stick centre crosses y = 0 at t = 0.85 s) the detector finds stick rows
    against the resting sheet; the rows push the sheet along the stick's motion (+y): they are
    violated in place and satisfied once the hit nodes move 2 cm ahead of the stick."""
    sc = load_scene("hit-a2")
    m = sc.model
    det = m.collision_detector
    x = m.initial_positions
    assert det.detect(x, x, t_prev=0.0, t=0.5).count == 0  # stick waiting in front
    rows = det.detect(x, x, omega=0.5, t_prev=0.84, t=0.86)
    assert rows.count > 0 and set(np.unique(rows.kind)) <= {KIND_SEGMENT_EDGE, KIND_POINT_FACE}
    assert np.any(rows.kind == KIND_SEGMENT_EDGE)
    assert np.all(rows.values(x) < 0.0)
    nodes = np.unique(rows.nodes[rows.nodes >= 0])
    assert np.all(np.abs(x[nodes, 2] - 0.62) < 0.1)  # the horizontal stick hits at z = 0.62
    # H = ν·(stick − cloth) ≥ τ with H(φⁿ) ≥ 0: ν points from the sheet to the stick (−y)
    assert np.all(rows.normal[:, 1] < -0.9)
    stick_y = m.thin_obstacles[0].vertices_at(0.86)[:, 1].mean()
    pushed = x.copy()
    pushed[nodes, 1] = stick_y + 0.02
    assert np.all(rows.values(pushed) > 0.0)
    assert np.all(rows.movable(m.free_mask))  # the hit nodes are free


def test_new_scenes_write_runs_that_resume(tmp_path):
    """Metadata (scene with stick waypoints and [self_collision], model description) is JSON
    and reads back as the same scene."""
    from isocloth.runner import run_scene
    from isocloth.scenes.loader import config_from_dict

    sc = load_scene("hit-a2", ["simulation.duration=0.04", "output.video='none'"])
    run_scene(sc, tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert meta["model"]["self_collision"]["thickness"] == pytest.approx(0.005)
    assert "stick" in meta["model"]["thin_obstacles"][0]
    cfg = config_from_dict(meta["scene"])
    assert cfg == sc.config


def test_max_area_error_jump_key():
    assert load_scene("hit-a2", ["simulation.max_area_error_jump=0.02"]).stepper.max_area_error_jump == \
        pytest.approx(0.02)
    assert load_scene("drop-fold").stepper.max_area_error_jump is None  # off by default
    with pytest.raises(SceneError, match=r"simulation\.max_area_error_jump"):
        load_scene("hit-a2", ["simulation.max_area_error_jump=0"])
