"""Scene files: every built-in scene builds and runs; bad files give named errors."""

import re

import numpy as np
import pytest

from isocloth.scenes.loader import SceneError, builtin_scene_names, load_scene, load_scene_config
from isocloth.step import Stepper

REQUIRED = {"hang-a2", "locking-test", "cusick-drape", "shorts-hang", "tshirt-shake"}


def test_required_builtin_scenes_exist():
    assert REQUIRED <= set(builtin_scene_names())


@pytest.mark.parametrize("name", builtin_scene_names())
def test_every_builtin_scene_runs(name):
    sc = load_scene(name)
    tol = sc.config.simulation.tolerance
    s = sc.initial_state
    for _ in range(8):
        s, info = sc.stepper.step(s)
        assert info.residual <= tol, (name, info)
        assert np.isfinite(s.x).all()
    # the grasps holding nodes now, their trajectories from where each took its nodes (a grasp may start later)
    control = sc.model.schedule.at(s.t, s.grasp_anchors)
    g = sc.model.grasp_nodes if control.grasp_nodes is None else control.grasp_nodes
    np.testing.assert_allclose(s.x[g], control.grasp_targets, atol=1e-9, rtol=0)


def test_hang_a2_matches_the_issue():
    sc = load_scene("hang-a2")
    assert sc.model.node_count == 63 and sc.model.mesh.quad_count == 48
    assert sc.model.grasp_nodes.size == 2
    x = sc.model.initial_positions[sc.model.grasp_nodes]
    assert np.allclose(np.sort(x[:, 0]), [-0.21, 0.21], atol=2e-3)
    tr = sc.model.schedule.grasps[0].trajectory
    assert tr.frequency == 0.6 and np.linalg.norm(tr.amplitude) == pytest.approx(0.075)


def _write(tmp_path, text):
    p = tmp_path / "scene.toml"
    p.write_text(text)
    return p


BASE = """
name = "t"
[cloth]
mesh = {{ generator = "rectangle", width = 0.3, height = 0.2, nx = 4, ny = 3 }}
{extra}
[simulation]
dt = {dt}
duration = 0.05
"""


def test_unknown_key_is_named(tmp_path):
    p = _write(tmp_path, BASE.format(extra="colour = 'red'", dt="0.01"))
    with pytest.raises(SceneError, match=r"cloth\.colour: unknown key"):
        load_scene_config(p)


@pytest.mark.parametrize("override, message", [
    # the key path as written (no union tags) and the keys allowed at that place
    ("cloth.mesh.nz=3", "cloth.mesh.nz: unknown key; allowed here: generator, width, height, nx, ny, element, plane"),
    ('cloth.mesh={ file = "a.obj", merge = 1 }', "cloth.mesh.merge: unknown key; allowed here: file, rest, "
     "merge_tolerance"),
    ("grasps.0.trajectory.phase=1", "grasps.0.trajectory.phase: unknown key; allowed here: type, times, points, "
     "interpolation"),
    ("simulation.dtt=1", "simulation.dtt: unknown key; allowed here: dt, "),
    # a mesh table with neither branch's key: one error, not one per branch
    ("cloth.mesh={ nx = 3 }", "cloth.mesh: a mesh needs either 'generator' (rectangle, irregular, annulus, band, "
     "disk, leaning-cards) or 'file'"),
])
def test_unknown_key_lists_the_allowed_keys(override, message):
    with pytest.raises(SceneError) as err:
        load_scene_config("twist", [override])
    lines = str(err.value).splitlines()
    assert len(lines) == 2, lines  # the source line and exactly one error
    assert lines[1].strip().startswith(message), lines


def test_units_are_converted_and_wrong_units_rejected(tmp_path):
    cfg, _ = load_scene_config(_write(tmp_path, BASE.format(extra="", dt='"5 ms"')))
    assert cfg.simulation.dt == pytest.approx(0.005)
    with pytest.raises(SceneError, match=r"simulation\.dt.*expected a quantity in s"):
        load_scene_config(_write(tmp_path, BASE.format(extra="", dt='"3 kg"')))
    cfg, _ = load_scene_config(_write(tmp_path, BASE.format(extra='rho = "160 g/m^2"', dt="0.01")))
    assert cfg.cloth.rho == pytest.approx(0.16)


def test_overrides_and_unknown_scene():
    cfg, _ = load_scene_config("hang-a2", ["simulation.dt=0.005", "grasps.0.trajectory.frequency=0.3",
                                           "cloth.fabric='denim'"])
    assert cfg.simulation.dt == 0.005 and cfg.grasps[0].trajectory.frequency == 0.3
    assert cfg.cloth.fabric == "denim"
    with pytest.raises(SceneError, match="unknown scene 'nope'.*hang-a2"):
        load_scene_config("nope")
    with pytest.raises(SceneError, match="unknown fabric"):
        load_scene("hang-a2", ["cloth.fabric='velvet'"])
    with pytest.raises(SceneError, match="grasp node index 999"):
        load_scene("hang-a2", ["grasps.0.nodes={indices=[999]}"])


@pytest.mark.parametrize("value, message", [("0", "greater than or equal to 1"), ("2.5", "fractional part")])
def test_substeps_must_be_a_positive_integer(value, message):
    with pytest.raises(SceneError, match=rf"simulation\.substeps: .*{message}"):
        load_scene_config("hang-a2", [f"simulation.substeps={value}"])
    assert load_scene("hang-a2", ["simulation.substeps=3"]).stepper.substeps == 3


def test_negative_density_is_rejected(tmp_path):
    with pytest.raises(SceneError, match=r"cloth\.rho"):
        load_scene_config(_write(tmp_path, BASE.format(extra="rho = -1.0", dt="0.01")))


def test_a_run_folder_named_like_a_scene_does_not_shadow_the_builtin(tmp_path, monkeypatch):
    """`isocloth run twist` writes runs/twist or, run from elsewhere, ./twist: loading "twist" again
    from that directory must still give the built-in scene (it raised IsADirectoryError)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "twist").mkdir()
    cfg, base = load_scene_config("twist")
    assert cfg.name == "twist" and base != tmp_path
    (tmp_path / "folder.toml").mkdir()
    with pytest.raises(SceneError, match="is a folder, not a scene file"):
        load_scene_config(str(tmp_path / "folder.toml"))


@pytest.mark.parametrize("override, where", [
    ("simulation.dt=inf", r"simulation\.dt"),
    ("simulation.duration=inf", r"simulation\.duration"),
    ("cloth.rho=inf", r"cloth\.rho"),
    ("cloth.placement.translate=[0, 0, nan]", r"cloth\.placement\.translate\.2"),
    ("grasps.0.trajectory.amplitude=[0, 0, inf]", r"grasps\.0\.trajectory\.amplitude\.2"),
    ("simulation.dt='inf s'", r"simulation\.dt"),
    ("cloth.initial_velocity=[0, 0, nan]", r"cloth\.initial_velocity\.2"),
    ("cloth.initial_velocity=[inf, 0, 0]", r"cloth\.initial_velocity\.0"),
    ("grasps.0.trajectory={type='waypoints', times=[0, 1], points=[[0, 0, 0], [0, 0, nan]]}",
     r"grasps\.0\.trajectory\.points\.1\.2"),
    ("grasps.0.trajectory={type='waypoints', times=[0, nan], points=[[0, 0, 0], [0, 0, 0.1]]}",
     r"grasps\.0\.trajectory\.times\.1"),
    ("grasps.0.trajectory={type='waypoints', times=[0, inf], points=[[0, 0, 0], [0, 0, 0.1]]}",
     r"grasps\.0\.trajectory\.times\.1"),
])
def test_non_finite_numbers_are_named_scene_errors(override, where):
    """inf and NaN in a scene field used to end in a traceback (OverflowError, ValueError deep in the build)."""
    with pytest.raises(SceneError, match=where + r".*finite number"):
        load_scene_config("hang-a2", [override])


@pytest.mark.parametrize("dt, duration, hint", [(0.5, 0.2, "set duration = 0.5 s"),
                                                 (0.01, 0.025, "set duration = 0.02 s or 0.03 s")])
def test_a_duration_that_is_not_whole_steps_is_refused(dt, duration, hint):
    """It used to be rounded silently: dt 0.5 s, duration 0.2 s ran 0 steps and reported done."""
    with pytest.raises(SceneError, match=r"not a whole number of steps.*" + hint):
        load_scene_config("hang-a2", [f"simulation.dt={dt}", f"simulation.duration={duration}"])
    cfg, _ = load_scene_config("hang-a2", [f"simulation.dt={dt}", f"simulation.duration={3 * dt}"])
    assert cfg.simulation.duration == pytest.approx(3 * dt)


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "my scene", ""])
def test_a_scene_name_that_is_not_a_folder_name_is_refused(name):
    """The name is the default run folder runs/<name>: '../../x' used to write outside runs/."""
    with pytest.raises(SceneError, match=r"name: .*cannot be a folder name"):
        load_scene_config("hang-a2", [f"name='{name}'"])


def test_a_nearest_grasp_point_far_from_the_cloth_is_refused():
    """A point 100 m away used to snap silently to the closest node."""
    with pytest.raises(SceneError, match=r"grasp point \[100.0, 0.0, 0.0\] is 99.8 m from the nearest node"):
        load_scene("hang-a2", ["grasps.0.nodes.nearest=[[100.0, 0.0, 0.0]]"])
    sc = load_scene("hang-a2", ["grasps.0.nodes.nearest=[[0.215, 0.0, 0.49]]"])  # 1 cm off a corner: fine
    assert sc.model.grasp_nodes.size >= 1


def test_a_cloth_that_starts_inside_an_obstacle_is_refused_unless_forced():
    """It used to run, the first step ejecting the nodes at 24.7 m/s; now it is refused with the obstacle
    named and the nodes counted, and a forced start warns the same way and pushes the nodes out."""
    low = ["cloth.placement.translate=[0.0, 0.0, -0.02]"]
    with pytest.raises(SceneError, match=r"(\d+) cloth nodes start inside obstacle 'floor' \(deepest: node \d+ "
                                         r"at .*, 0.208 m deep\): move the cloth.*--force"):
        load_scene("drop-fold", low)
    load_scene("drop-fold")  # its own placement, above the floor: fine
    with pytest.warns(UserWarning, match=r"cloth nodes start inside obstacle 'floor'.*started anyway"):
        sc = load_scene("drop-fold", ["cloth.placement.translate=[0.0, 0.0, 0.183]"], force=True)  # 5 mm deep
    from isocloth.scenes.loader import nodes_inside

    [(name, nodes, depth)] = nodes_inside(sc.model, sc.initial_state.x)
    assert name == "floor" and nodes.size == 15 and depth.max() == pytest.approx(0.005, abs=1e-3)
    state, info = sc.stepper.step(sc.initial_state)
    assert info.converged
    floor = sc.model.obstacles[0]
    assert floor.signed_distance(state.x, state.t).min() >= -sc.stepper.contact_solver.penetration_tolerance


@pytest.mark.parametrize("size", ["[0, 0]", "[640, 0]", "[100000, 480]"])
def test_a_video_size_out_of_range_is_refused_before_the_run(size):
    """video_size = [0, 0] used to fail after the whole simulation, in the renderer."""
    with pytest.raises(SceneError, match=r"output\.video_size"):
        load_scene_config("hang-a2", [f"output.video_size={size}"])


GRASPED = """
name = "g"
[cloth]
mesh = {{ generator = "rectangle", width = 0.4, height = 0.4, nx = 5, ny = 5, plane = "xz" }}
placement = {{ translate = [0.0, 0.0, 1.0] }}
[[grasps]]
name = "a"
nodes = {{ nearest = [[-0.2, 0.0, 1.2]] }}
trajectory = {{ type = "sampled", file = "traj.csv", rate = 10.0 }}
{extra}
[simulation]
dt = 0.01
duration = 0.1
"""


@pytest.mark.parametrize("csv, error", [
    ("x,y,z\n0,0,0\n0,0,0.1\n", None),  # a line of column names is skipped
    ("0,0,0\n0,0,0.1\n", None),
    ("0,0,0\n0,0\n", "data row 2 has 2 numbers, the first 3"),
    ("x,y,z\nfoo,0,0\n", "could not convert string to float: 'foo'"),
])
def test_sampled_trajectory_csv_with_header_or_bad_rows(tmp_path, csv, error):
    """A header line in a sampled-trajectory CSV used to end in a traceback (numpy's loadtxt)."""
    (tmp_path / "traj.csv").write_text(csv)
    p = _write(tmp_path, GRASPED.format(extra=""))
    if error is None:
        assert load_scene(p).model.grasp_nodes.size == 1
    else:
        with pytest.raises(SceneError, match=r"sampled trajectory traj\.csv: " + re.escape(error)):
            load_scene(p)


def test_grasps_that_share_a_node_are_a_scene_error(tmp_path):
    """Two grasps selecting the same node used to end in a traceback."""
    (tmp_path / "traj.csv").write_text("0,0,0\n0,0,0.1\n")
    extra = '[[grasps]]\nname = "b"\nnodes = { nearest = [[-0.2, 0.0, 1.2]] }'
    with pytest.raises(SceneError, match=r"grasps\.1 \('b'\): node \d+ is already grasped.*disjoint"):
        load_scene(_write(tmp_path, GRASPED.format(extra=extra)))


def test_a_bad_grasp_trajectory_is_named_as_the_trajectory(tmp_path):
    """A rotation about a zero axis was reported with the hint for grasps sharing nodes."""
    (tmp_path / "traj.csv").write_text("0,0,0\n0,0,0.1\n")
    extra = ('[[grasps]]\nname = "b"\nnodes = { nearest = [[0.2, 0.0, 1.2]] }\n'
             'trajectory = { type = "rotation", axis = [0, 0, 0], center = [0, 0, 0], angular_velocity = 1.0 }')
    with pytest.raises(SceneError, match=r"grasps\.1\.trajectory\.axis: the direction \[0\.0, 0\.0, 0\.0\] is the "
                                         r"zero vector") as err:
        load_scene(_write(tmp_path, GRASPED.format(extra=extra)))
    assert "disjoint" not in str(err.value)
