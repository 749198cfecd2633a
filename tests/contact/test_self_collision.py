"""Self-collision constraint rows (seed 000 §3.2–3.3, §4.1) and thin obstacles (§6.3, §7.4)."""

import numpy as np
import pytest

from isocloth.contact.contacts import Contacts
from isocloth.contact.obstacles import (
    MotionTranslation,
    ObstacleNeedles,
    ObstaclePoints,
    ObstaclePolyline,
    ObstacleSegments,
    read_seg,
)
from isocloth.contact.self_collision import (
    KIND_EDGE_EDGE,
    KIND_POINT_FACE,
    KIND_SEGMENT_EDGE,
    KIND_VERTEX_FACE,
    CollisionRows,
    CollisionSet,
    SelfCollisions,
    collision_keys,
    decode_keys,
)
from isocloth.mesh.generators import rectangle

TAU = 0.005
DT = 0.01


def two_layers(gap=0.05, shift=(0.013, 0.017)):
    """Two 11×11 quad sheets 0.5 m wide, one above the other, as one mesh (242 nodes)."""
    m = rectangle(0.5, 0.5, 11, 11, element="quad")
    n = m.node_count
    tri = m.triangulated_faces()
    x = np.vstack([m.vertices, m.vertices + [shift[0], shift[1], gap]])
    return x, np.vstack([tri, tri + n]), n


@pytest.fixture(scope="module")
def falling():
    """Upper sheet falls through the lower one within one step at 10 m/s."""
    x0, tri, n = two_layers()
    x1 = x0.copy()
    x1[n:, 2] -= 10.0 * DT
    sc = SelfCollisions(tri, 2 * n, thickness=TAU, mu=0.3)
    return sc, x0, x1, n


def test_falling_layer_is_caught_with_oriented_rows(falling):
    sc, x0, x1, n = falling
    rows = sc.detect(x0, x1, omega=0.5)
    assert np.any(rows.kind == KIND_VERTEX_FACE) and np.any(rows.kind == KIND_EDGE_EDGE)
    # every upper node above the lower sheet's interior is caught by a node–face row
    vf = rows.take(rows.kind == KIND_VERTEX_FACE)
    inside = np.flatnonzero((x0[n:, 0] < 0.25 - 0.013) & (x0[n:, 1] < 0.25 - 0.017)) + n
    assert set(inside) <= set(vf.nodes[:, 0])
    h_start = rows.values(x0) + rows.thickness
    assert np.all(h_start >= 0.0)  # oriented so that H(φⁿ) ≥ 0
    assert np.all(rows.gap < 0.0)  # and violated at the end: H(φ^{n+1}) < τ0
    # detection at distance 2ωτ0 = τ0: (0.05 − τ0)/0.1 of the step
    assert np.allclose(rows.time, (0.05 - TAU) / 0.1)
    assert np.allclose(np.abs(rows.normal[:, 2]), 1.0)
    assert np.allclose(rows.mu, 0.3) and np.allclose(rows.thickness, TAU)
    assert np.allclose(rows.gap, rows.values(x1))


def test_jacobian_matches_finite_differences(falling):
    sc, x0, x1, n = falling
    rows = sc.detect(x0, x1, omega=0.5)
    J = rows.jacobian(2 * n)
    assert J.shape == (rows.count, 6 * n)
    rng = np.random.default_rng(0)
    h = 1e-6
    for _ in range(5):
        d = rng.normal(size=x1.shape)
        fd = (rows.values(x1 + h * d) - rows.values(x1 - h * d)) / (2 * h)
        assert np.allclose(J @ d.ravel(), fd, atol=1e-8)
    # rows are linear in φ: the linearisation is exact
    d = rng.normal(size=x1.shape)
    assert np.allclose(rows.values(x1 + d), rows.values(x1) + J @ d.ravel())


def test_proximity_shift_and_final_check():
    """A pair ending 0.6 τ0 apart: no crossing (ω = 0 check is clean) but the ω = 0.5 detection and
    the proximity test constrain it; the shifted detection time moves with ω."""
    x0, tri, n = two_layers(gap=3 * TAU)
    sc = SelfCollisions(tri, 2 * n, thickness=TAU)
    x1 = x0.copy()
    x1[n:, 2] = 0.6 * TAU
    assert sc.crossings(x0, x1).count == 0
    rows = sc.detect(x0, x1, omega=0.5)
    assert rows.count > 0 and np.all(rows.gap < 0)
    ccd = rows.take(~np.isnan(rows.time))
    assert np.allclose(ccd.time, (3 - 1) / (3 - 0.6))  # distance 2ωτ0 = τ0 reached
    prox_only = sc.detect(x0, x1, omega=0.0, proximity=True)
    assert prox_only.count > 0 and np.all(np.isnan(prox_only.time))
    assert np.all(prox_only.values(x1) + TAU == pytest.approx(0.6 * TAU))
    # far apart at the end: nothing
    x1[n:, 2] = 2.5 * TAU
    assert sc.detect(x0, x1, omega=0.5).count == 0
    # crossing: the ω = 0 check finds it
    x1[n:, 2] = -TAU
    crossing = sc.crossings(x0, x1)
    assert crossing.count > 0 and np.allclose(crossing.time, 3 / 4)


def test_keys_are_stable_and_distinct_from_node_contacts(falling):
    sc, x0, x1, n = falling
    r1 = sc.detect(x0, x1, omega=0.5)
    r2 = sc.detect(x0, x1 + 1e-4, omega=0.4)
    assert np.array_equal(np.sort(r1.keys()), np.sort(r2.keys()))
    k = r1.keys()
    assert np.all(k < 0) and len(np.unique(k)) == len(k)
    kind, a, b = decode_keys(k)
    assert np.array_equal(kind, r1.kind) and np.array_equal(a, r1.pair[:, 0]) and np.array_equal(b, r1.pair[:, 1])
    node_contacts = Contacts(np.arange(3), np.zeros(3, np.int64), np.zeros(3), np.zeros((3, 3)), np.zeros(3),
                             np.zeros((3, 3)))
    assert not np.any(np.isin(node_contacts.keys(), k))
    assert collision_keys(1, 2, 3) != collision_keys(2, 1, 3)


def test_collision_set_keeps_the_later_row(falling):
    sc, x0, x1, n = falling
    obs = CollisionSet()
    r1 = sc.detect(x0, x1, omega=0.5)
    assert obs.add(r1) == r1.count and len(obs) == r1.count
    r2 = sc.detect(x0, x1, omega=0.25)  # same pairs, later detection time
    assert obs.add(r2) == 0 and len(obs) == r1.count
    order = np.argsort(obs.keys())
    assert np.allclose(obs.rows.time[order], r2.time[np.argsort(r2.keys())])
    assert np.array_equal(obs.keys(), obs.rows.keys())


def test_relative_velocity_of_the_falling_layer(falling):
    sc, x0, x1, n = falling
    rows = sc.detect(x0, x1, omega=0.5)
    v = rows.relative_velocity(x1, x0, DT)
    vn = np.einsum("cd,cd->c", v, rows.normal)
    assert np.allclose(vn, -10.0)  # approaching at 10 m/s along ν


def test_no_rows_for_a_flat_sheet_at_rest():
    m = rectangle(0.5, 0.5, 21, 21, element="triangle")
    sc = SelfCollisions.from_mesh(m, thickness=TAU)
    x = m.vertices
    assert sc.detect(x, x, omega=0.5).count == 0
    assert sc.min_distance(x, cutoff=0.1) == pytest.approx(0.025 / np.sqrt(2))


def test_min_distance_of_stacked_layers():
    x, tri, n = two_layers(gap=0.008)
    sc = SelfCollisions(tri, 2 * n, thickness=TAU)
    assert sc.min_distance(x) == pytest.approx(0.008)


def test_bad_parameters():
    x, tri, n = two_layers()
    with pytest.raises(ValueError, match="thickness"):
        SelfCollisions(tri, 2 * n, thickness=0.0)
    sc = SelfCollisions(tri, 2 * n, thickness=TAU)
    with pytest.raises(ValueError, match="omega"):
        sc.detect(x, x, omega=0.7)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        sc.detect(x, bad)
    with pytest.raises(ValueError, match="shape"):
        sc.detect(x, x[:-1])


# -- thin obstacles ---------------------------------------------------------------------------------
def hanging_a2():
    return rectangle(0.42, 0.594, 7, 9, element="quad", plane="xz")


def test_stick_hit_at_10_m_s():
    """A 75 cm stick (radius 0.75 cm) sweeps through a hanging DIN A2 sheet within one step."""
    m = hanging_a2()
    x = m.vertices
    a = np.array([[0.03, 0.05, -0.375], [0.03, -0.05, -0.375]])
    stick = ObstaclePolyline.stick([0.0, DT], a, a + [0.0, 0.0, 0.75], segments=10)
    assert stick.radius == 0.0075 and len(stick.segments) == 10 and list(stick.points) == [0, 10]
    sc = SelfCollisions.from_mesh(m, thickness=TAU, obstacles=[stick], self_collision=False)
    rows = sc.detect(x, x, omega=0.5, t_prev=0.0, t=DT)
    assert rows.count > 0 and np.all(rows.kind == KIND_SEGMENT_EDGE)
    # the stick sits on the +y side at the start: ν = +y, H(φⁿ) = 0.05 ≥ τ
    assert np.allclose(rows.normal, [0.0, 1.0, 0.0])
    assert np.allclose(rows.time, (0.05 - 0.0075) / 0.1)
    assert np.allclose(rows.gap, -0.05 - 0.0075)  # stick at −5 cm at the end
    assert np.allclose(rows.offset, -0.05)
    assert np.all(rows.nodes[:, :2] == -1) and np.all(rows.nodes[:, 2:] >= 0)
    assert np.allclose(rows.obstacle_velocity[:, 1], -10.0)
    # every cloth edge crossing the line x = 0.03 is constrained
    crossed = {tuple(e) for e in sc.edges if (x[e, 0].min() < 0.03 < x[e, 0].max())}
    got = {tuple(sc.edges[e]) for e in rows.pair[:, 1]}
    assert crossed == got
    J = rows.jacobian(m.node_count)
    d = np.random.default_rng(0).normal(size=x.shape)
    assert np.allclose(J @ d.ravel(), rows.values(x + d) - rows.values(x))


def test_stick_resting_against_the_sheet_gives_proximity_rows():
    m = hanging_a2()
    x = m.vertices
    a = np.array([0.03, 0.005, -0.375])
    stick = ObstaclePolyline.stick([0.0], a, a + [0.0, 0.0, 0.75], segments=10)
    sc = SelfCollisions.from_mesh(m, thickness=TAU, obstacles=[stick], self_collision=False)
    rows = sc.detect(x, x, omega=0.5, t_prev=0.0, t=DT)
    assert rows.count > 0 and np.all(np.isnan(rows.time))
    # the gap is the distance to the stick axis minus its radius: 5 mm for edges passing under it
    assert np.all(rows.gap >= 0.005 - 0.0075 - 1e-12) and np.all(rows.gap < 0.0)
    assert np.sum(np.isclose(rows.gap, 0.005 - 0.0075)) >= 17
    assert np.allclose(rows.obstacle_velocity, 0.0)


def test_needle_peaks_against_faces():
    """Needle peaks (thesis eq. 3.17) as points against the faces of a sheet lowered onto them (§6.3)."""
    needles = ObstacleNeedles(xlim=(-0.3, 0.3), ylim=(-0.3, 0.3), thickness=0.004)
    pts = ObstaclePoints.from_needles(needles)
    assert len(pts.points) == len(needles.peaks()) > 0
    m = rectangle(0.6, 0.6, 13, 13, element="triangle")
    top = needles.peak_height
    x0 = m.vertices + [0.0, 0.0, top + 0.03]
    x1 = m.vertices + [0.0, 0.0, top - 0.02]
    sc = SelfCollisions.from_mesh(m, thickness=TAU, obstacles=[pts], self_collision=False)
    rows = sc.detect(x0, x1, omega=0.5, t_prev=0.0, t=DT)
    assert np.all(rows.kind == KIND_POINT_FACE)
    hit_points = np.unique(rows.pair[:, 0])
    assert len(hit_points) == len(pts.points)  # every peak under the sheet is caught
    assert np.allclose(rows.normal, [0.0, 0.0, -1.0])  # peak below the face: ν·(o − π) ≥ 0 with ν down
    assert np.all(rows.values(x0) + rows.thickness >= 0.0)
    assert np.allclose(rows.thickness, 0.004)


def test_moving_points_follow_their_motion():
    pts = ObstaclePoints([[0.0, 0.0, 0.0]], radius=0.01, motion=MotionTranslation([1.0, 0.0, 0.0]))
    assert np.allclose(pts.vertices_at(0.5), [[0.5, 0.0, 0.0]])
    tr = ObstaclePolyline(times=[0.0, 1.0], trajectory=[[[0, 0, 0], [1, 0, 0]], [[0, 1, 0], [1, 1, 0]]], radius=0.01)
    assert np.allclose(tr.vertices_at(0.25), [[0, 0.25, 0], [1, 0.25, 0]])
    assert np.allclose(tr.vertices_at(5.0), [[0, 1, 0], [1, 1, 0]])  # held after the last sample
    with pytest.raises(ValueError, match="increasing"):
        ObstaclePolyline(times=[0.0, 0.0], trajectory=np.zeros((2, 2, 3)), radius=0.01)
    with pytest.raises(ValueError, match="radius"):
        ObstaclePoints([[0.0, 0.0, 0.0]], radius=0.0)


def test_needle_bed_file_and_detection():
    v, s = read_seg(__import__("pathlib").Path(__file__).resolve().parents[2]
                    / "src" / "isocloth" / "data" / "meshes" / "codim_ipc" / "needleBed10x10.seg")
    assert v.shape == (200, 3) and s.shape == (100, 2)
    assert np.allclose(np.linalg.norm(v[s[:, 0]] - v[s[:, 1]], axis=1), 0.1)
    bed = ObstacleSegments.needle_bed(radius=0.002)
    tips = bed.vertices_at(0.0)[bed.points]
    assert len(tips) == 100 and np.allclose(tips[:, 2], 0.0)
    m = rectangle(0.3, 0.3, 16, 16, element="triangle")  # 2 cm spacing: 9 needles under it
    x0 = m.vertices + [0.003, 0.007, 0.02]
    x1 = x0 - [0.0, 0.0, 0.04]
    sc = SelfCollisions.from_mesh(m, thickness=TAU, obstacles=[bed], self_collision=False)
    rows = sc.detect(x0, x1, omega=0.5, t_prev=0.0, t=DT)
    pf = rows.take(rows.kind == KIND_POINT_FACE)
    assert len(np.unique(pf.pair[:, 0])) == 9
    assert np.all(pf.values(x0) + pf.thickness >= 0)


def test_concatenate_and_take():
    e = CollisionRows.empty()
    assert CollisionRows.concatenate([e, e]).count == 0
    x, tri, n = two_layers(gap=0.003)
    rows = SelfCollisions(tri, 2 * n, thickness=TAU).detect(x, x)
    both = CollisionRows.concatenate([rows, rows.take(slice(0, 3))])
    assert both.count == rows.count + 3
    assert "rows" in repr(rows)


def test_rows_resolve_a_fall_through_in_the_contact_qp():
    """Integration check with the QP interface of the contact projection (solve_qp(w3, f, A_E, c_E,
    A_I, gap, working)): one QP with the detected rows leaves every pair ≥ τ0 apart and the ω = 0
    check (seed 000 §4.1) finds no crossing."""
    import scipy.sparse as sp

    from isocloth.solvers.active_set import SolverActiveSet

    m = rectangle(0.3, 0.3, 7, 7, element="quad")
    n = m.node_count
    tri = m.triangulated_faces()
    x0 = np.vstack([m.vertices, m.vertices + [0.013, 0.017, 0.02]])
    x1 = x0.copy()
    x1[n:, 2] -= 0.05  # the upper sheet ends 3 cm below the lower one
    sc = SelfCollisions(np.vstack([tri, tri + n]), 2 * n, thickness=TAU)
    assert sc.crossings(x0, x1).count > 0
    obs = CollisionSet()
    obs.add(sc.detect(x0, x1, omega=0.5))
    rows = obs.rows
    N = 6 * n
    qp = SolverActiveSet().solve_qp(np.ones(N), np.zeros(N), sp.csr_matrix((0, N)), np.zeros(0),
                                    rows.jacobian(2 * n), rows.values(x1), np.zeros(0, dtype=np.int64))
    x = x1 + qp.dx.reshape(-1, 3)
    assert rows.values(x).min() > -1e-6
    assert sc.crossings(x0, x).count == 0
    # pairs without a row (e.g. a node just beyond the other layer's boundary) may sit slightly
    # closer; issue 4 asks for ≥ 0.9 τ0
    assert 0.9 * TAU <= sc.min_distance(x) <= TAU + 1e-6
    assert obs.add(sc.detect(x0, x, omega=0.5)) == 0  # nothing new at the next iteration


def _ledge(outside, height):
    """A lower triangle (0, 1, 2) with its boundary edge 0–1 on the x axis, and an upper triangle
    (3, 4, 5) whose node 3 lies ``outside`` [m] beyond that edge (−y) and ``height`` [m] above it,
    the rest of the upper triangle further out: node 3 is the only primitive near the lower one."""
    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0],
                  [0.05, -outside, height], [0.15, -outside - 0.05, height], [0.05, -outside - 0.1, height]])
    return x, np.array([[0, 1, 2], [3, 4, 5]])


def test_node_just_beyond_a_boundary_edge_gets_a_proximity_row():
    # a node within τ of a layer's free edge but outside its triangle: its projection misses the
    # triangle, and the edge pairs through it have their closest point at the node itself; without a
    # row it could settle at 0.74 τ from the other layer (drop-fold, noise seed 3)
    x, tri = _ledge(outside=0.001, height=0.002)
    sc = SelfCollisions(tri, 6, thickness=TAU)
    assert sc.min_distance(x) == pytest.approx(np.hypot(0.001, 0.002))
    rows = sc.detect(x, x, omega=0.5)
    vf = rows.take((rows.kind == KIND_VERTEX_FACE) & (rows.pair[:, 0] == 3))
    assert vf.count == 1 and vf.pair[0, 1] == 0
    # a node–edge row: the closest point (0.05, 0, 0) of edge 0–1, ν from it to the node
    np.testing.assert_allclose(vf.weights[0], [1.0, -0.5, -0.5, 0.0], atol=1e-12)
    np.testing.assert_allclose(vf.normal[0], np.array([0.0, -0.001, 0.002]) / np.hypot(0.001, 0.002), atol=1e-12)
    assert vf.values(x)[0] == pytest.approx(np.hypot(0.001, 0.002) - TAU)  # H = distance to the edge
    # level with the triangle, 4 mm beyond the edge: pushed sideways (1 mm short), not 5 mm up or down
    x, tri = _ledge(outside=0.004, height=0.0)
    rows = SelfCollisions(tri, 6, thickness=TAU).detect(x, x, omega=0.5)
    assert rows.count == 1
    np.testing.assert_allclose(rows.normal[0], [0.0, -1.0, 0.0], atol=1e-12)
    assert rows.values(x)[0] == pytest.approx(0.004 - TAU)
    # farther than τ from the triangle (though within τ of its plane): no row
    x, tri = _ledge(outside=0.0048, height=0.002)  # 5.2 mm from the triangle, τ = 5 mm
    assert SelfCollisions(tri, 6, thickness=TAU).detect(x, x, omega=0.5).count == 0


def test_no_duplicate_rows_at_a_boundary_vertex():
    # two boundary triangles of a quad strip share vertex 1; a node of another layer just beyond the
    # boundary next to it: one row (against the free edge whose inside holds the closest point), not
    # one per triangle around the vertex
    V = np.array([[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0], [0, 0.1, 0], [0.1, 0.1, 0], [0.2, 0.1, 0]], float)
    tri = [[0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4]]
    for dx in (-0.0005, 0.0005):
        p = np.array([0.1 + dx, -0.0015, 0.001])
        x = np.vstack([V, p, p + [0.05, -0.05, 0], p + [-0.05, -0.05, 0]])
        sc = SelfCollisions(np.array(tri + [[6, 7, 8]]), 9, thickness=TAU)
        rows = sc.detect(x, x, omega=0.5)
        vf = rows.take((rows.kind == KIND_VERTEX_FACE) & (rows.pair[:, 0] == 6))
        assert vf.count == 1, (dx, vf.pair)
        assert vf.pair[0, 1] == (0 if dx < 0 else 2)
        assert vf.values(x)[0] == pytest.approx(np.hypot(0.0015, 0.001) - TAU)


def test_no_extra_rows_across_an_interior_edge():
    # a node above a flat two-triangle layer, 1 mm from the shared diagonal: one node–face row (the
    # triangle it projects into), none from the neighbour across the interior edge
    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.1, 0.1, 0.0], [0.0, 0.1, 0.0],
                  [0.05 + 0.0007, 0.05 - 0.0007, 0.002], [0.2, 0.0, 0.002], [0.2, 0.1, 0.002]])
    tri = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6]])
    rows = SelfCollisions(tri, 7, thickness=TAU).detect(x, x, omega=0.5)
    vf = rows.take((rows.kind == KIND_VERTEX_FACE) & (rows.pair[:, 0] == 4))
    assert vf.count == 1 and vf.pair[0, 1] == 0


def test_broad_phase_slack_covers_nearby_end_positions(falling):
    # the contact-free fast path checks the prediction and then its projection with one broad phase:
    # boxes grown by the slack hold every pair of any end position within the slack
    sc, x0, x1, n = falling
    cand = sc.broad_phase(x0, x1, omega=0.5, slack=0.003)
    assert cand.count >= sc.broad_phase(x0, x1, omega=0.5).count
    x2 = x1 + np.random.default_rng(0).uniform(-0.003, 0.003, x1.shape)
    moved = cand.retarget(x2)
    assert moved is not None
    a, b = sc.narrow_phase(moved, omega=0.5), sc.detect(x0, x2, omega=0.5)
    assert b.count > 0
    order_a, order_b = np.argsort(a.keys()), np.argsort(b.keys())
    assert np.array_equal(a.keys()[order_a], b.keys()[order_b])
    assert np.array_equal(a.gap[order_a], b.gap[order_b])
    assert cand.retarget(x1 + [0.0, 0.0, 0.0031]) is None  # beyond the slack: a new broad phase
    assert sc.broad_phase(x0, x1, omega=0.5).retarget(x1) is not None  # no slack: the same end only
    with pytest.raises(ValueError, match="slack"):
        sc.broad_phase(x0, x1, slack=-0.001)


def test_open_edges_mark_free_edges_only():
    # a square split along 0–2: the diagonal is shared, the four sides are free; bit k = the edge
    # opposite vertex k. A degenerate triangle (repeated node) does not close the edge it lies on.
    sq = np.array([[0, 1, 2], [0, 2, 3]])
    assert SelfCollisions(sq, 4, thickness=TAU).open_edges.tolist() == [1 | 4, 1 | 2]
    deg = np.array([[0, 1, 2], [0, 2, 3], [1, 1, 2]])
    assert SelfCollisions(deg, 4, thickness=TAU).open_edges.tolist() == [1 | 4, 1 | 2, 0]
