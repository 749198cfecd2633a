"""Scene inputs that used to end in a traceback, a hang, a silent wrong result or a misleading
message: each is now a SceneError naming the key and the fix (or loads as documented)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from isocloth.scenes.loader import SceneError, load_scene

SHEET = 'mesh = { generator = "rectangle", width = 0.3, height = 0.3, nx = 5, ny = 5, element = "triangle" }'


def scene(cloth: str = "", more: str = "", simulation: str = "", *, mesh: str = SHEET,
          grasp: str = 'nodes = { indices = [0] }') -> str:
    """A 5 x 5 sheet 0.3 m wide at z = 0.5 m held by one corner, 0.05 s long, with extra lines."""
    return f"""name = "inputs"
[cloth]
{mesh}
placement = {{ translate = [0.0, 0.0, 0.5] }}
{cloth}
[[grasps]]
{grasp}
{more}
[simulation]
dt = 0.01
duration = 0.05
{simulation}
[output]
fps = 100
video = "none"
"""


def _material_json() -> str:
    """Gray interlock with a density of 0.321 kg/m² (the default material's is 0.187)."""
    import json

    from isocloth.elastic.materials import FOLDER

    data = json.loads((FOLDER / "gray-interlock.json").read_text())
    return json.dumps({**data, "density": 0.321})


ELASTIC = 'model = "elastic"'
SAMPLED = 'nodes = {{ indices = [0] }}\ntrajectory = {{ type = "sampled", file = "{}", rate = 100.0 }}'
THIN_POINT = '[[obstacles]]\ntype = "points"\npoints = [[0.0, 0.0, 0.5]]\nradius = 0.02'


def _unit_diagonal(sc):
    axis = sc.config.grasps[0].trajectory.axis
    assert axis == pytest.approx((math.sqrt(0.5), math.sqrt(0.5), 0.0))


def _material_loaded(sc):
    assert sc.model.material.rho == pytest.approx(0.321)  # the file's density [kg/m²]


# id, scene text (str or bytes), extra files {path under tmp_path: content; None = a folder},
# overrides, force, expectation: a regex of the SceneError, ("warns", regex), or a check of the scene
CASES = [
    # 1. negative seeds
    ("noise-seed-negative", scene('noise = { sigma = 0.001, seed = -1 }'), {}, None, False,
     r"cloth\.noise\.seed: seed -1 is negative: a random seed is an integer >= 0"),
    ("irregular-seed-negative",
     scene(mesh='mesh = { generator = "irregular", width = 0.3, height = 0.3, node_count = 30, seed = -5 }'),
     {}, None, False, r"cloth\.mesh\.seed: seed -5 is negative"),
    # 2. a mesh too large to build
    ("mesh-too-many-nodes", scene(mesh='mesh = { generator = "rectangle", width = 0.3, height = 0.3, '
                                       'nx = 100000, ny = 100000 }'), {}, None, False,
     r"cloth\.mesh: nx·ny = 100000·100000 = 10,000,000,000 nodes is more than the 1,000,000 nodes"),
    # 3. sampled displacements of 2 nodes for a grasp of 1
    ("sampled-npy-wrong-node-count", scene(grasp=SAMPLED.format("../m/k2.npy")),
     {"m/k2.npy": np.zeros((10, 2, 3))}, None, False,
     r"grasps\.0 \('grasp0'\)\.trajectory: \.\./m/k2\.npy holds displacements of 2 nodes \(shape \(10, 2, 3\)\) "
     r"but the grasp holds 1 node: give an array of shape \(s, 1, 3\)"),
    # 4. encodings
    ("utf16-file", scene().encode("utf-16"), {}, None, False,
     r"scene\.toml is UTF-16 text, not UTF-8: save it as UTF-8"),
    ("binary-file", bytes(range(128, 256)) * 4, {}, None, False,
     r"scene\.toml is not UTF-8 text \(byte 0 cannot be decoded.*save it as UTF-8"),
    ("utf8-bom-accepted", b"\xef\xbb\xbf" + scene().encode(), {}, None, False,
     lambda sc: sc.config.name == "inputs"),
    # 5. malformed overrides
    ("set-through-a-number", scene(), {}, ["simulation.dt.x=5"], False,
     r"override 'simulation\.dt\.x': simulation\.dt is a value \(0\.01\), not a table with a key 'x'"),
    ("set-through-a-string", scene(), {}, ["name.x=1"], False,
     r"override 'name\.x': name is a value \('inputs'\), not a table"),
    ("overrides-a-string", scene(), {}, "simulation.dt=0.02", False,
     r"overrides must be a list of 'key\.path=value' strings, got the string 'simulation\.dt=0\.02': wrap it in a "
     r"list"),
    ("override-not-a-string", scene(), {}, [5], False, r"override 5 is a int, not a 'key\.path=value' string"),
    # 6. a bound on substeps
    ("substeps-too-many", scene(simulation="substeps = 100000000"), {}, None, False,
     r"simulation\.substeps: 100000000 substeps is more than the maximum 1000 \(MAX_SUBSTEPS\)"),
    # 7. thin obstacles starting in the cloth
    ("point-in-the-sheet", scene(more=THIN_POINT), {}, None, False,
     r"the cloth starts within the radius \(0\.02 m\) of thin obstacle 'points': it is 0 m from a face or edge at "
     r"node.*--force"),
    ("stick-lying-in-the-sheet", scene(more='[[obstacles]]\ntype = "stick"\ntimes = [0.0]\na = [[-0.2, 0.0, 0.5]]\n'
                                            'b = [[0.2, 0.0, 0.5]]'), {}, None, False,
     r"within the radius \(0\.0075 m\) of thin obstacle 'stick'"),
    ("polyline-through-a-face", scene(more='[[obstacles]]\ntype = "polyline"\n'
                                           'vertices = [[0.05, 0.02, 0.3], [0.05, 0.02, 0.7]]'), {}, None, False,
     r"within the radius \(0\.0075 m\) of thin obstacle 'polyline'"),
    ("point-in-the-sheet-forced", scene(more=THIN_POINT), {}, None, True,
     ("warns", r"thin obstacle 'points'.*started anyway \(forced\)")),
    # 8. numerics the elastic model ignores
    ("elastic-ignores-substeps-and-solver", scene(ELASTIC, simulation='substeps = 4\nsolver = "interior-point"'),
     {}, None, False, r"simulation\.substeps, simulation\.solver have no effect with cloth\.model = 'elastic': "
                      r"its linearised implicit Euler stepper uses only simulation\.dt and simulation\.duration"),
    # 9. a material file next to the scene
    ("material-relative-to-scene", scene(ELASTIC + '\nmaterial = "../m/mat.json"'), {"m/mat.json": _material_json},
     None, False, _material_loaded),
    # 10. a warp normal to the sheet
    ("warp-normal-to-sheet", scene(ELASTIC + "\nwarp = [0.0, 0.0, 1.0]"), {}, None, False,
     r"cloth\.warp \[0\.0, 0\.0, 1\.0\] is \(nearly\) normal to the cloth's rest plane"),
    # 12. misleading messages
    ("csv-space-separated", scene(grasp=SAMPLED.format("t.csv")), {"s/t.csv": "0 0 0\n"}, None, False,
     r"sampled trajectory t\.csv: no data rows \(its only line, '0 0 0', is not comma-separated numbers"),
    ("csv-trailing-comma", scene(grasp=SAMPLED.format("t.csv")), {"s/t.csv": "0,0,0,\n"}, None, False,
     r"sampled trajectory t\.csv: no data rows \(its only line, '0,0,0,'"),
    ("csv-empty", scene(grasp=SAMPLED.format("t.csv")), {"s/t.csv": ""}, None, False,
     r"sampled trajectory t\.csv: the file is empty; expected rows of the same number of comma-separated numbers"),
    ("csv-header-only", scene(grasp=SAMPLED.format("t.csv")), {"s/t.csv": "x,y,z\n"}, None, False,
     r"no data rows \(its only line, 'x,y,z'"),
    ("mesh-file-name-empty", scene(mesh='mesh = { file = "" }'), {}, None, False,
     r"cloth\.mesh\.file: the file name is empty"),
    ("box-corners-swapped", scene(grasp='nodes = { box_min = [1.0, 1.0, 1.0], box_max = [-1.0, -1.0, -1.0] }'), {},
     None, False, r"grasps\.0\.nodes: box_min \[1\.0, 1\.0, 1\.0\] is above box_max \[-1\.0, -1\.0, -1\.0\] in x, y, "
                  r"z: the corners seem swapped"),
    ("camera-up-zero", scene().replace('video = "none"', 'video = "none"\n[output.camera]\neye = [1.0, 1.0, 1.0]\n'
                                       'target = [0.0, 0.0, 0.0]\nup = [0.0, 0.0, 0.0]'), {}, None, False,
     r"output\.camera: up is the zero vector"),
    ("mesh-obstacle-is-a-folder", scene(more='[[obstacles]]\ntype = "mesh"\nfile = "dir.obj"'), {"s/dir.obj": None},
     None, False, r"obstacle mesh: 'dir\.obj' is a folder .*, not a file"),
    # 13. zero-length polyline segments
    ("polyline-repeated-vertex", scene(more='[[obstacles]]\ntype = "polyline"\n'
                                            'vertices = [[0.0, 0.0, 0.2], [0.0, 0.0, 0.2], [0.1, 0.0, 0.2]]'), {}, None,
     False, r"obstacle polyline: segment 0 has zero length: its vertices 0 and 1 coincide"),
    ("closed-polyline-repeats-its-first-vertex",
     scene(more='[[obstacles]]\ntype = "polyline"\nclosed = true\n'
                'vertices = [[0.0, 0.0, 0.2], [0.1, 0.0, 0.2], [0.1, 0.1, 0.2], [0.0, 0.0, 0.2]]'), {}, None, False,
     r"segment 3 has zero length: its vertices 3 and 0 coincide"),
    # 14. huge values
    ("sphere-radius-huge", scene(more='[[obstacles]]\ntype = "sphere"\ncenter = [0.0, 0.0, -2.0]\nradius = 1e300'),
     {}, None, False, r"obstacles\.0\.radius: 1e\+300 m is outside the accepted range ±100000 m"),
    ("translation-velocity-huge", scene(more='[[obstacles]]\ntype = "plane"\nmotion = { type = "translation", '
                                             'velocity = [0.0, 0.0, 1e300] }'), {}, None, False,
     r"obstacles\.0\.motion\.velocity: 1e\+300 m/s is outside the accepted range ±100000 m/s"),
    ("rotation-axis-huge-is-normalised",
     scene(grasp='nodes = { indices = [0] }\ntrajectory = { type = "rotation", axis = [1e300, 1e300, 0.0], '
                 'center = [0.0, 0.0, 0.5], angular_velocity = 1.0 }'), {}, None, False, _unit_diagonal),
]


@pytest.mark.parametrize("text, files, overrides, force, expect",
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_a_bad_scene_input_is_a_named_scene_error(tmp_path, monkeypatch, text, files, overrides, force, expect):
    """Each input used to end in a traceback (ValueError, MemoryError, UnicodeDecodeError, TypeError), a
    hang, nodes thrown out at metres per second, a setting silently ignored, or a misleading message."""
    (tmp_path / "s").mkdir()
    for name, content in files.items():
        path = tmp_path / name
        if content is None:
            path.mkdir(parents=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        content = content() if callable(content) else content
        if isinstance(content, np.ndarray):
            np.save(path, content)
        else:
            path.write_text(content)
    path = tmp_path / "s" / "scene.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    monkeypatch.chdir(tmp_path)  # relative files are looked up next to the scene, not here
    if isinstance(expect, str):
        with pytest.raises(SceneError, match=expect):
            load_scene(path, overrides, force=force)
    elif isinstance(expect, tuple):
        with pytest.warns(UserWarning, match=expect[1]):
            load_scene(path, overrides, force=force)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            expect(load_scene(path, overrides, force=force))


def test_a_grasp_starting_after_the_end_is_a_warning(tmp_path):
    """A grasp that never acts (it starts after the scene's end) was silent; a scene shortened for a preview
    still loads."""
    path = tmp_path / "scene.toml"
    path.write_text(scene(grasp='nodes = { indices = [0] }\nstart = 100.0'))
    with pytest.warns(UserWarning, match=r"grasps\.0\.start = 100 s is not before the end of the scene "
                                         r"\(simulation\.duration = 0\.05 s\)"):
        load_scene(path)
