"""Folding motions, the twelve classes of the folding database and the comparison of representations
(Coltraro et al. thesis §7.4.1–7.4.3)."""

import numpy as np
import pytest

from isocloth.perception.database import (FoldDatabase, build_database, davies_bouldin_medoids, draw_sample,
                                          load_database, representation_distances, representation_table)
from isocloth.perception.folding import (CORNERS, FOLD_CLASSES, HEIGHT, SEQUENCES, _turned_over, flip_path,
                                         sample_config, sequence_config, sequence_stages)
from isocloth.scenes.loader import config_from_dict, load_scene_config


@pytest.mark.parametrize("stop", [0.9, 1.0])
def test_a_flipped_corner_keeps_its_distance_to_the_crease(stop):
    c, g = np.array([-0.5, -0.5]), np.array([0.1, -0.2])
    p = flip_path(c, g, waypoints=16, stop=stop, slack=0.0) + [*c, 0.0]
    mid = np.array([*(0.5 * (c + g)), 0.0])
    r = 0.5 * np.linalg.norm(g - c)
    # on the half circle about the crease (the perpendicular bisector through mid), in the vertical plane
    assert np.allclose(np.linalg.norm(p - mid, axis=1), r, atol=1e-12)
    u = np.array([*(g - c), 0.0]) / (2 * r)
    w = np.array([-u[1], u[0], 0.0])  # horizontal, along the crease
    assert np.allclose((p - mid) @ w, 0.0, atol=1e-12)
    assert np.allclose(p[0], [*c, 0.0])
    if stop == 1.0:
        assert np.allclose(p[-1], [*g, 0.0], atol=1e-12)
    else:  # let go above the target, short of it
        assert p[-1, 2] == pytest.approx(r * np.sin(0.9 * np.pi))
        assert 0 < np.linalg.norm(p[-1, :2] - c) < 2 * r
    assert (p[:, 2] >= -1e-15).all()


def test_a_slack_path_stays_inside_the_crease_distance():
    c, g = (-0.5, 0.5), (0.0, 0.0)
    p = flip_path(c, g, slack=0.04) + [*c, 0.0]
    mid = np.array([-0.25, 0.25, 0.0])
    d = np.linalg.norm(p - mid, axis=1)
    assert (d <= np.linalg.norm(np.subtract(g, c)) / 2 + 1e-12).all() and d.min() < 0.97 * d.max()


def test_flip_path_refuses_a_target_on_the_corner():
    with pytest.raises(ValueError, match="corner itself"):
        flip_path((0.5, 0.5), (0.5, 0.5))
    with pytest.raises(ValueError, match="stop"):
        flip_path((0.5, 0.5), (0.0, 0.0), stop=0.0)


def test_the_twelve_classes_and_their_draws():
    assert [c.label for c in FOLD_CLASSES] == [f"{k:02d}" for k in range(1, 13)]
    # the same sample whatever else is drawn; other samples differ
    a, seed_a = draw_sample("02", 3, 0)
    b, _ = draw_sample("02", 3, 0)
    c, seed_c = draw_sample("02", 4, 0)
    assert a == b and a != c and seed_a != seed_c
    assert draw_sample("02", 3, 1)[0] != a
    subs = {lab: {draw_sample(lab, k, 0)[0].subclass for k in range(12)} for lab in ("05", "07", "08")}
    assert all(len(s) == 2 for s in subs.values()), subs
    for lab in ("09", "10", "11"):
        assert draw_sample(lab, 0, 0)[0].turn_over
    assert not draw_sample("06", 0, 0)[0].turn_over and draw_sample("01", 0, 0)[0].folds == ()
    twelve = draw_sample("12", 0, 0)[0]
    assert len(twelve.folds) == 2  # the second corner crosses the first: one after the other


@pytest.mark.parametrize("label", [c.label for c in FOLD_CLASSES])
def test_every_class_makes_a_valid_scene(label):
    sample, seed = draw_sample(label, 0, 0)
    config, release = sample_config(sample, seed=seed, nodes=6)
    cfg = config_from_dict(config)
    assert cfg.simulation.duration >= release
    assert len(cfg.grasps) == sum(len(f.corners) for f in sample.folds)
    for g in cfg.grasps:
        assert g.end > g.start and g.end <= release + 1e-9


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_the_builtin_sequence_scenes_are_the_sequences(name):
    builtin, _ = load_scene_config(name)
    made = config_from_dict(sequence_config(name)[0])
    assert builtin.grasps == made.grasps
    assert builtin.cloth == made.cloth and builtin.obstacles == made.obstacles
    assert builtin.simulation == made.simulation and builtin.self_collision == made.self_collision


def test_sequence_stages_count_the_corners_past_the_vertical():
    t = np.array([0.0, 0.5, 0.56, 1.0, 1.86, 5.0])
    assert sequence_stages("fold-four-corners", t).tolist() == [0, 0, 1, 1, 2, 4]
    assert sequence_stages("fold-in-half", t).tolist() == [0, 0, 1, 1, 1, 1]


def test_turning_over_is_a_rigid_half_turn():
    rng = np.random.default_rng(0)
    x = rng.uniform(-0.5, 0.5, (30, 3)) * [1, 1, 0.05] + [0, 0, 0.02]
    y = _turned_over(x)
    d = lambda p: np.linalg.norm(p[:, None] - p[None], axis=2)  # noqa: E731
    assert np.allclose(d(x), d(y), atol=1e-12)
    assert y[:, 2].min() == pytest.approx(HEIGHT)
    # a proper rotation (not a mirror image): the triple product of three edges keeps its sign
    t = lambda p: np.linalg.det(p[1:4] - p[0])  # noqa: E731
    assert np.sign(t(x)) == np.sign(t(y))
    # the higher of two stacked points is now the lower one
    assert np.argmax(x[:, 2]) == np.argmin(y[:, 2])


def test_davies_bouldin_with_medoids_on_points_of_a_line():
    p = np.array([0.0, 1.0, 2.0, 10.0, 11.0, 12.0])
    D = np.abs(p[:, None] - p[None])
    # medoids 1 and 11, sigma = 2/3 each, centres 10 apart: (4/3) / 10
    assert davies_bouldin_medoids(D, list("aaabbb")) == pytest.approx(4 / 30)
    with pytest.raises(ValueError, match="two classes"):
        davies_bouldin_medoids(D, list("aaaaaa"))
    with pytest.raises(ValueError, match="labels"):
        davies_bouldin_medoids(D, list("aab"))


def _folded_corner(x, corner_index, depth):
    """A hand-made fold: the nodes within ``depth`` of the corner (along the diagonal) reflected
    across the crease and lifted by 5 mm."""
    c = x[corner_index]
    u = -c[:2] / np.linalg.norm(c[:2])
    s = (x[:, :2] - c[:2]) @ u
    y = x.copy()
    flap = s < depth
    y[flap, :2] += (2 * (depth - s[flap]))[:, None] * u
    y[flap, 2] += 0.005
    return y


def test_the_dgli_tells_folded_corners_apart_where_corner_distances_cannot():
    from isocloth.mesh.generators import rectangle
    from isocloth.perception.dgli import sheet_segments

    mesh = rectangle(1.0, 1.0, 9, 9)
    segments, corners, boundary = sheet_segments(mesh)
    rng = np.random.default_rng(1)
    x0 = mesh.vertices
    xs, labels = [], []
    for k in range(6):
        for label, corner in (("flat", None), ("LL", 0), ("UR", 80)):
            x = x0 + rng.normal(0, 0.002, x0.shape) * [1, 1, 0]
            if corner is not None:
                x = _folded_corner(x, corner, 0.2 + 0.02 * k)
            xs.append(x)
            labels.append(label)
    table = representation_table({"hand-made": (np.array(xs), np.array(labels))}, segments, corners, boundary)
    assert set(table) == {"dGLI", "Edges", "Corners", "Fréchet", "Hausdorff"}
    assert all(np.isfinite(v["hand-made"]) for v in table.values())
    assert table["dGLI"]["hand-made"] < table["Corners"]["hand-made"]
    assert table["dGLI"]["hand-made"] < 0.5
    with pytest.raises(ValueError, match="unknown representation"):
        representation_distances("Chamfer", np.array(xs), segments, corners, boundary)


def test_a_database_is_written_sample_by_sample_and_completed_on_a_second_build(tmp_path, monkeypatch):
    import isocloth.perception.database as database

    calls = []

    def fake(label, k, seed, nodes, max_wall=None):
        calls.append((label, k))
        x = np.zeros((nodes * nodes, 3)) + k
        return dict(x=x, label=label, subclass="", params="{}", rotation=0.0, turn_over=False, attempts=1,
                    intersections=0, unconverged=0, simulated=1.0, wall=0.1,
                    segments=np.zeros((8, 2), np.int64), corners=np.arange(4), boundary=np.arange(4))

    monkeypatch.setattr(database, "_simulate", fake)
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / ".01-00.123.tmp.npz").write_bytes(b"half written")
    paths = build_database(tmp_path, samples=2, labels=["01", "02"], nodes=3)
    assert len(paths) == 4 and all(p.is_file() for p in paths) and len(calls) == 4
    assert not list((tmp_path / "samples").glob(".*tmp*"))
    paths[1].unlink()
    build_database(tmp_path, samples=2, labels=["01", "02"], nodes=3)
    assert len(calls) == 5 and calls[-1] == ("02", 0)
    db = load_database(tmp_path)
    assert db.labels.tolist() == ["01", "01", "02", "02"] and db.x.shape == (4, 9, 3)
    saved = db.save(tmp_path / "db.npz")
    again = load_database(saved)
    assert isinstance(again, FoldDatabase) and np.array_equal(again.labels, db.labels)
    with pytest.raises(ValueError, match="unknown fold classes"):
        build_database(tmp_path, labels=["13"])
    with pytest.raises(ValueError, match="samples"):
        build_database(tmp_path, samples=0)
    with pytest.raises(FileNotFoundError, match="no database samples"):
        load_database(tmp_path / "empty")


def test_a_flat_sample_is_simulated_intersection_free(tmp_path):
    build_database(tmp_path, samples=1, labels=["01"], nodes=6)
    db = load_database(tmp_path)
    assert db.intersections.tolist() == [0]
    assert db.x.shape == (1, 36, 3) and db.x[0, :, 2].max() < 0.01
    # the sheet stays a 1 m square: its corners 1 m apart
    corner = db.x[0, db.corners]
    assert np.linalg.norm(corner[0] - corner[1]) == pytest.approx(1.0, abs=0.01)
    assert set(CORNERS) == {"LL", "LR", "UR", "UL"}


def test_isocloth_dgli_database_prints_table_7_1_and_writes_the_matrices(tmp_path, monkeypatch):
    """The command's plumbing, with hand-made folds standing in for the simulations."""
    from typer.testing import CliRunner

    import isocloth.perception.comparison as comparison
    import isocloth.perception.database as database
    from isocloth.cli import app
    from isocloth.mesh.generators import rectangle
    from isocloth.perception.dgli import sheet_segments

    mesh = rectangle(1.0, 1.0, 8, 8)
    segments, corners, boundary = sheet_segments(mesh)
    corner_of = {f"{k:02d}": [0, 7, 63, 56][k % 4] for k in range(1, 13)}

    def fake_sample(label, k, seed, nodes, max_wall=None):
        rng = np.random.default_rng([int(label), k])
        x = mesh.vertices + rng.normal(0, 0.002, mesh.vertices.shape) * [1, 1, 0]
        x = _folded_corner(x, corner_of[label], 0.15 + 0.05 * (int(label) // 4) + 0.01 * k)
        return dict(x=x, label=label, subclass="", params="{}", rotation=0.0, turn_over=False, attempts=1,
                    intersections=0, unconverged=0, simulated=1.0, wall=0.1, segments=segments, corners=corners,
                    boundary=boundary)

    def fake_sequence(name, nodes):
        times = np.linspace(0.0, 2.0, 12)
        stages = (times > 1.0).astype(np.int64)
        x = np.array([_folded_corner(mesh.vertices, 0, 0.3) if s else mesh.vertices.copy() for s in stages])
        x += np.random.default_rng(0).normal(0, 0.002, x.shape) * [1, 1, 0]
        return times, x, stages, mesh

    monkeypatch.setattr(database, "_simulate", fake_sample)
    monkeypatch.setattr(comparison, "simulate_sequence", lambda name, nodes: fake_sequence(name, nodes))
    r = CliRunner().invoke(app, ["dgli", "--database", str(tmp_path), "--samples", "2", "--nodes", "8"])
    assert r.exit_code == 0, r.output
    for rep in ("dGLI", "Edges", "Corners", "Fréchet", "Hausdorff"):
        assert rep in r.output
    assert "(0.73)" in r.output and "Sequence III" in r.output
    assert (tmp_path / "table.csv").is_file() and (tmp_path / "classes.png").is_file()
    assert len(list((tmp_path / "matrices").glob("*.png"))) == 5 * 4
    assert len(list((tmp_path / "samples").glob("*.npz"))) == 24


def test_isocloth_dgli_needs_a_run_or_a_database(tmp_path):
    from typer.testing import CliRunner

    from isocloth.cli import app

    for args in (["dgli"], ["dgli", str(tmp_path), "--database", str(tmp_path)]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2 and "give a run folder, or --database DIR" in r.output

