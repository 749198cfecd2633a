import numpy as np
import pytest

from isocloth.mesh import topology as T
from isocloth.mesh.generators import annulus, disk, irregular_rectangle, perturbed, rectangle
from isocloth.mesh.mesh import MeshError
from isocloth.mesh.quality import check_mesh


def _normals(m):
    tri = m.triangulated_faces()
    p = m.vertices[tri]
    return np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])


def test_din_a2():
    m = rectangle(0.42, 0.594, 7, 9)
    assert (m.node_count, m.quad_count, m.triangle_count) == (63, 48, 0)
    assert m.rest_vertices is not None and np.array_equal(m.rest_vertices, m.vertices)
    assert T.element_areas(m).sum() == pytest.approx(0.42 * 0.594)
    check_mesh(m)


def test_rectangle_node_layout_xy():
    nx, ny, w, h = 4, 3, 0.6, 0.2
    m = rectangle(w, h, nx, ny)
    i, j = 2, 1
    assert np.allclose(m.vertices[j * nx + i], [-w / 2 + i * w / (nx - 1), -h / 2 + j * h / (ny - 1), 0])
    assert m.quads[0].tolist() == [0, 1, nx + 1, nx]
    assert np.all(_normals(m)[:, 2] > 0)


def test_rectangle_xz_is_a_hanging_sheet():
    nx, ny = 3, 5
    m = rectangle(0.3, 0.4, nx, ny, plane="xz", center=(0, 0, 1))
    assert np.allclose(m.vertices[:, 1], 0)
    top = np.arange((ny - 1) * nx, ny * nx)
    assert np.allclose(m.vertices[top, 2], 1.2) and np.allclose(m.vertices[:nx, 2], 0.8)
    assert np.all(_normals(m)[:, 1] < 0)


def test_triangles_use_alternating_diagonals():
    m = rectangle(1.0, 1.0, 3, 3, element="triangle")
    assert m.triangle_count == 8 and m.quad_count == 0
    diag = {tuple(e) for e in T.edges(m).tolist()} - {tuple(e) for e in T.edges(rectangle(1, 1, 3, 3)).tolist()}
    assert diag == {(0, 4), (2, 4), (4, 6), (4, 8)}  # both directions appear
    assert np.all(_normals(m)[:, 2] > 0)
    check_mesh(m)


@pytest.mark.parametrize("args,kw", [((1, 1, 1, 3), {}), ((1, 1, 3, 1), {}), ((0, 1, 3, 3), {}),
                                     ((1, -1, 3, 3), {}), ((1, 1, 3, 3), {"element": "hex"}),
                                     ((1, 1, 3, 3), {"plane": "yz"})])
def test_rectangle_rejects_bad_input(args, kw):
    with pytest.raises(MeshError):
        rectangle(*args, **kw)


@pytest.mark.parametrize("element", ["triangle", "quad"])
def test_disk(element):
    n_r, n_a, r = 4, 24, 0.3
    m = disk(r, n_r, n_a, element=element, center=(1, 2, 3))
    assert m.node_count == 1 + n_r * n_a
    assert np.allclose(m.vertices[0], [1, 2, 3])
    assert m.triangle_count == (n_a if element == "quad" else n_a + 2 * n_a * (n_r - 1))
    assert T.element_areas(m).sum() == pytest.approx(0.5 * n_a * np.sin(2 * np.pi / n_a) * r**2)
    assert np.all(_normals(m)[:, 2] > 0)
    (loop,) = T.boundary_loops(m)
    assert np.allclose(np.linalg.norm(m.vertices[loop] - [1, 2, 3], axis=1), r)
    check_mesh(m)


@pytest.mark.parametrize("element", ["quad", "triangle"])
def test_annulus(element):
    m = annulus(0.09, 0.15, 7, 110, element=element)
    assert m.node_count == 7 * 110
    assert np.allclose(np.linalg.norm(m.vertices[:110], axis=1), 0.09)
    assert np.allclose(np.linalg.norm(m.vertices[-110:], axis=1), 0.15)
    assert np.all(_normals(m)[:, 2] > 0)
    loops = T.boundary_loops(m)
    assert sorted(loops[1].tolist()) == list(range(110)) or sorted(loops[0].tolist()) == list(range(110))
    assert T.euler_characteristic(m) == 0
    check_mesh(m)


def test_annulus_rejects_bad_radii():
    with pytest.raises(MeshError, match="r_inner"):
        annulus(0.2, 0.1, 3, 10)
    with pytest.raises(MeshError, match="n_radial"):
        annulus(0.1, 0.2, 1, 10)


@pytest.mark.parametrize("n", [4, 5, 30, 472, 941])
def test_irregular_rectangle_exact_count(n):
    m = irregular_rectangle(1.0, 1.0, n, seed=0)
    assert m.node_count == n and m.quad_count == 0
    assert np.unique(m.triangles).size == n
    a = T.element_areas(m)
    assert a.min() > 1e-12 and a.sum() == pytest.approx(1.0)
    assert np.all(_normals(m)[:, 2] > 0)
    assert len(T.boundary_loops(m)) == 1 and T.euler_characteristic(m) == 1
    check_mesh(m)


def test_irregular_rectangle_is_deterministic_and_irregular():
    a = irregular_rectangle(1.0, 0.5, 200, seed=1)
    b = irregular_rectangle(1.0, 0.5, 200, seed=1)
    c = irregular_rectangle(1.0, 0.5, 200, seed=2)
    assert np.array_equal(a.vertices, b.vertices) and np.array_equal(a.triangles, b.triangles)
    assert not np.array_equal(a.vertices, c.vertices)
    valence = np.bincount(T.edges(a).ravel())[T.interior_nodes(a)]
    assert len(set(valence.tolist())) > 2  # not a structured grid


def test_irregular_rectangle_quality_and_plane():
    m = irregular_rectangle(0.4, 0.6, 300, seed=5, plane="xz")
    assert np.allclose(m.vertices[:, 1], 0)
    assert np.all(_normals(m)[:, 1] < 0)
    p = m.vertices[m.triangles]
    lengths = np.linalg.norm(p - np.roll(p, 1, axis=1), axis=2)
    assert lengths.max() / lengths.min() < 6  # similar spacing everywhere
    assert T.corner_nodes(m).size == 4


def test_irregular_rectangle_rejects_too_few_nodes():
    with pytest.raises(MeshError, match="node_count"):
        irregular_rectangle(1.0, 1.0, 3)


def test_perturbed_keeps_rest_shape():
    m = rectangle(1.0, 1.0, 30, 30)
    p = perturbed(m, 0.01, seed=3)
    assert np.array_equal(p.rest_vertices, m.vertices)
    assert np.std(p.vertices - m.vertices) == pytest.approx(0.01, rel=0.1)
    assert np.array_equal(p.vertices, perturbed(m, 0.01, seed=3).vertices)
    assert not np.array_equal(p.vertices, perturbed(m, 0.01, seed=4).vertices)
    assert np.array_equal(p.quads, m.quads)
    with pytest.raises(MeshError, match="sigma"):
        perturbed(m, -1.0, 0)


def test_perturbed_sets_rest_when_missing():
    from isocloth.mesh.mesh import Mesh

    m = Mesh(np.eye(3), triangles=[[0, 1, 2]])
    p = perturbed(m, 0.1, seed=0)
    assert np.array_equal(p.rest_vertices, m.vertices)
    assert T.rest_element_areas(p)[0] == pytest.approx(T.element_areas(m)[0])


def test_band_is_a_closed_belt_with_the_cylinder_as_rest_shape():
    from isocloth.mesh.generators import band
    from isocloth.mesh.topology import boundary_loops, element_areas

    m = band(0.2, 0.05, 3, 64)
    assert m.node_count == 192 and len(m.triangles) == 2 * 2 * 64
    assert np.allclose(np.hypot(m.vertices[:, 0], m.vertices[:, 2]), 0.2)  # on the cylinder about y
    assert len(boundary_loops(m)) == 2  # the two edges of the belt, no seam
    # inscribed polygon: area 64 · 0.05 · 2 · 0.2 sin(π/64), within 0.2 % of 2π r w
    assert element_areas(m, m.vertices).sum() == pytest.approx(2 * np.pi * 0.2 * 0.05, rel=2e-3)
    with pytest.raises(MeshError):
        band(0.2, 0.0, 3, 64)


def test_leaning_cards_touch_at_the_gap_and_stand_on_the_floor():
    from isocloth.mesh.generators import leaning_cards
    from isocloth.mesh.topology import element_areas

    th = np.radians(30.0)
    m = leaning_cards(0.063, 0.088, th, 0.001, 4, 5)
    a, b = m.vertices[:20], m.vertices[20:]
    assert element_areas(m, m.vertices).sum() == pytest.approx(2 * 0.063 * 0.088)  # two flat, unstrained cards
    for card, sign in ((a, 1.0), (b, -1.0)):
        bottom, top = card[card[:, 2] < 0.01], card[card[:, 2] > 0.07]
        assert np.allclose(bottom[:, 2], 0.0005) and np.allclose(top[:, 2], 0.088 * np.cos(th) + 0.0005)
        tilt = np.arctan2(sign * (top[:, 0].mean() - bottom[:, 0].mean()), top[:, 2].mean() - bottom[:, 2].mean())
        assert tilt == pytest.approx(th)
    top_a = a[a[:, 2].argmax()]
    n_b = np.array([np.cos(th), 0.0, np.sin(th)])  # B's face normal, towards A
    assert (top_a - b[0]) @ -n_b == pytest.approx(0.001)  # A's top edge a gap from B's plane
    p = m.vertices[m.triangles]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    n_a, n_b_ = n[:len(n) // 2], n[len(n) // 2:]
    assert np.allclose(n_a, n_a[0]) and np.allclose(n_b_, n_a[0] * [-1.0, 1.0, 1.0])  # B's faces mirror A's
    with pytest.raises(MeshError):
        leaning_cards(0.063, 0.088, np.pi / 2, 0.001, 4, 5)
    with pytest.raises(MeshError):
        leaning_cards(0.063, 0.088, th, -0.001, 4, 5)
