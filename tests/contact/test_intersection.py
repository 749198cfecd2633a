"""Intersection checker: exact predicates, triangle–triangle tests, meshes, trajectories, `isocloth check`."""

from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from isocloth.cli import app
from isocloth.contact._intersection_kernels import orient2d, orient3d
from isocloth.contact.intersection import (
    check_trajectory,
    face_intersections,
    self_intersections,
    triangles_intersect_exact,
)
from isocloth.io.trajectory import Trajectory, save_trajectory
from isocloth.mesh.generators import rectangle

T = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def _sign(v):
    return (v > 0) - (v < 0)


def _orient3d_exact(a, b, c, d):
    m = [[Fraction(float(p[i])) - Fraction(float(d[i])) for i in range(3)] for p in (a, b, c)]
    det = (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
           + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))
    return _sign(det)


def test_predicates_are_exact_on_near_degenerate_input():
    rng = np.random.default_rng(0)
    for k in range(300):
        a, b, c = rng.random((3, 3))
        u, v = rng.random(2)
        d = a + u * (b - a) + v * (c - a)  # coplanar up to rounding: the sign is decided by the last bit
        if k % 2:
            d = d + rng.normal() * 1e-17
        assert orient3d(a, b, c, d) == _orient3d_exact(a, b, c, d)
        p, q = rng.random((2, 2))
        r = p + rng.random() * (q - p)
        exact = _sign((Fraction(p[0]) - Fraction(r[0])) * (Fraction(q[1]) - Fraction(r[1]))
                      - (Fraction(p[1]) - Fraction(r[1])) * (Fraction(q[0]) - Fraction(r[0])))
        assert orient2d(p[0], p[1], q[0], q[1], r[0], r[1]) == exact


def test_known_triangle_pairs():
    pierce = np.array([[0.2, 0.2, -0.5], [0.3, 0.2, 0.5], [0.2, 0.3, 0.5]])
    assert triangles_intersect_exact(T, pierce)
    assert not triangles_intersect_exact(T, pierce + [0.0, 0.0, 0.6])  # above
    assert not triangles_intersect_exact(T, pierce + [2.0, 0.0, 0.0])  # beside
    # touching: a corner exactly on the face (closed triangles) counts, 1e-12 above does not
    touch = np.array([[0.25, 0.25, 0.0], [0.3, 0.2, 0.5], [0.2, 0.3, 0.5]])
    assert triangles_intersect_exact(T, touch)
    assert not triangles_intersect_exact(T, touch + [0.0, 0.0, 1e-12])
    # edge on edge, crossing in a point
    cross = np.array([[0.5, -0.5, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 1.0]])
    assert triangles_intersect_exact(T, cross)
    # coplanar: overlapping, disjoint, sharing only a boundary point, one inside the other
    assert triangles_intersect_exact(T, T + [0.3, 0.3, 0.0])
    assert not triangles_intersect_exact(T, T + [0.6, 0.6, 0.0])
    assert triangles_intersect_exact(T, T + [0.5, 0.5, 0.0])
    assert triangles_intersect_exact(T, 0.1 * T + [0.1, 0.1, 0.0])
    with pytest.raises(ValueError, match="tri_b"):
        triangles_intersect_exact(T, T[:2])


def test_vertex_adjacent_pairs():
    """Two triangles sharing node 0, the second folded through the first."""
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.5, 0.5, -0.5], [0.4, 0.6, 0.5]], dtype=float)
    tri = np.array([[0, 1, 2], [0, 3, 4]])
    assert np.array_equal(self_intersections(x, tri), [[0, 1]])
    assert self_intersections(x, tri, vertex_adjacent=False).shape == (0, 2)
    x[3:, 2] = [0.5, 0.6]  # both above: only the shared node in common
    assert self_intersections(x, tri).shape == (0, 2)


def _folded(m, through: bool):
    """Fold the x > 0 half over the x < 0 half; ``through`` tilts the flap across the base."""
    x = m.vertices.copy()
    r = x[:, 0] > 0
    x[r, 0] = -m.vertices[r, 0]
    tilt = 0.05 * m.vertices[r, 1] if through else 0.0
    x[r, 2] = (tilt + 0.01) * m.vertices[r, 0] / 0.5
    return x


@pytest.mark.parametrize("element", ["triangle", "quad"])
def test_sheets(element):
    m = rectangle(1.0, 1.0, 21, 21, element=element)
    flat = m.vertices
    assert face_intersections(flat, m.triangles, m.quads).shape == (0, 2)
    c, s = np.cos(0.7), np.sin(0.7)
    R = np.array([[1, 0, 0], [0, c, -s], [0, s, c]]) @ np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    assert face_intersections(flat @ R.T, m.triangles, m.quads).shape == (0, 2)  # tilted: rounding only
    assert face_intersections(_folded(m, through=False), m.triangles, m.quads).shape == (0, 2)
    pairs = face_intersections(_folded(m, through=True), m.triangles, m.quads)
    assert len(pairs) > 10
    nf = len(m.triangles) + len(m.quads)
    assert np.all(pairs[:, 0] < pairs[:, 1]) and pairs.max() < nf


def _run_folder(tmp_path, frames):
    m = rectangle(1.0, 1.0, 9, 9, element="quad")
    folder = tmp_path / "run"
    pos = np.stack([f(m) for f in frames])
    save_trajectory(folder, Trajectory(times=0.01 * np.arange(len(frames)), positions=pos, quads=m.quads,
                                       metadata={"scene": "synthetic"}))
    return folder


def test_check_trajectory_and_cli(tmp_path):
    folder = _run_folder(tmp_path, [lambda m: m.vertices, lambda m: _folded(m, False), lambda m: _folded(m, True)])
    from isocloth.io.trajectory import load_trajectory

    calls = []
    rep = check_trajectory(load_trajectory(folder), progress=lambda done, total: calls.append((done, total)))
    assert list(rep.counts[:2]) == [0, 0] and rep.counts[2] > 0 and not rep.ok
    assert calls == [(1, 3), (2, 3), (3, 3)]
    runner = CliRunner()
    r = runner.invoke(app, ["check", str(folder), "--json", str(tmp_path / "rep.json")])
    assert r.exit_code == 1, r.output
    assert "frame 2" in r.stdout and "frame 1 " not in r.stdout
    import json

    data = json.loads((tmp_path / "rep.json").read_text())
    assert data["frames_with_intersections"] == 1 and data["intersections"][0]["frame"] == 2
    clean = _run_folder(tmp_path / "b", [lambda m: m.vertices, lambda m: _folded(m, False)])
    r = runner.invoke(app, ["check", str(clean)])
    assert r.exit_code == 0 and "no intersections" in r.stdout
    r = runner.invoke(app, ["check", str(tmp_path / "nothing")])
    assert r.exit_code == 2
