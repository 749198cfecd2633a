import numpy as np
import pytest

from isocloth.mesh import topology as T
from isocloth.mesh.generators import annulus, disk, irregular_rectangle, perturbed, rectangle
from isocloth.mesh.mesh import Mesh


def _signed_area_xy(points):
    x, y = points[:, 0], points[:, 1]
    return 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)


def test_edges_of_a_quad_have_no_diagonal():
    m = Mesh(np.eye(4, 3), quads=[[0, 1, 2, 3]])
    assert T.edges(m).tolist() == [[0, 1], [0, 3], [1, 2], [2, 3]]
    assert T.edge_face_counts(m).tolist() == [1, 1, 1, 1]


def test_edges_sorted_unique_and_counts():
    m = Mesh(np.random.default_rng(0).random((4, 3)), triangles=[[0, 1, 2], [2, 1, 3]])
    e = T.edges(m)
    assert e.dtype == np.int64 and e.tolist() == [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]]
    assert T.edge_face_counts(m).tolist() == [1, 1, 2, 1, 1]


@pytest.mark.parametrize("element", ["quad", "triangle"])
def test_grid_counts(element):
    nx, ny = 5, 4
    m = rectangle(1.0, 0.5, nx, ny, element=element)
    sides = nx * (ny - 1) + ny * (nx - 1)
    diag = (nx - 1) * (ny - 1) if element == "triangle" else 0
    assert len(T.edges(m)) == sides + diag
    assert len(T.boundary_edges(m)) == 2 * (nx - 1) + 2 * (ny - 1)
    assert len(T.interior_nodes(m)) == (nx - 2) * (ny - 2)
    both = np.union1d(T.interior_nodes(m), T.boundary_nodes(m))
    assert both.tolist() == list(range(nx * ny))
    assert T.euler_characteristic(m) == 1


def test_boundary_edges_have_the_face_on_their_left():
    m = irregular_rectangle(1.0, 0.7, 60, seed=2)
    be = T.boundary_edges(m)
    x = m.vertices
    centre = np.zeros(2)
    # the boundary runs counter-clockwise about the rectangle's centre
    d = x[be[:, 1], :2] - x[be[:, 0], :2]
    r = centre - x[be[:, 0], :2]
    assert np.all(d[:, 0] * r[:, 1] - d[:, 1] * r[:, 0] > 0)


def test_rectangle_loop_is_ccw_and_starts_at_min():
    m = rectangle(1.0, 1.0, 4, 3)
    (loop,) = T.boundary_loops(m)
    assert loop.dtype == np.int64 and len(loop) == 2 * 3 + 2 * 2 and loop[0] == 0
    assert loop[:4].tolist() == [0, 1, 2, 3]
    assert _signed_area_xy(m.vertices[loop]) > 0


def test_annulus_loops():
    m = annulus(0.5, 1.0, 3, 20)
    loops = T.boundary_loops(m)
    assert [len(l) for l in loops] == [20, 20]
    areas = sorted(_signed_area_xy(m.vertices[l]) for l in loops)
    assert areas[0] < 0 < areas[1]  # hole clockwise, outer boundary counter-clockwise
    inner = [l for l in loops if _signed_area_xy(m.vertices[l]) < 0][0]
    assert sorted(inner.tolist()) == list(range(20))
    assert T.euler_characteristic(m) == 0


def test_bow_tie_gives_two_loops():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]], float)
    m = Mesh(v, triangles=[[0, 1, 2], [0, 3, 4]])
    loops = T.boundary_loops(m)
    assert sorted(sorted(l.tolist()) for l in loops) == [[0, 1, 2], [0, 3, 4]]
    for l in loops:
        assert _signed_area_xy(v[l]) > 0


def test_bow_tie_quads_follow_their_fan():
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [-1, 0, 0], [-1, -1, 0], [0, -1, 0],
                  [2, 0, 0], [2, 1, 0]], float)
    # two quads around node 0 in one fan (0-1-2-3 and 1-7-8-2 share 1-2), a third touching at 0
    m = Mesh(v, quads=[[0, 1, 2, 3], [0, 4, 5, 6], [1, 7, 8, 2]])
    loops = T.boundary_loops(m)
    assert [l.tolist() for l in loops] == [[0, 1, 7, 8, 2, 3], [0, 4, 5, 6]]
    assert sum(len(l) for l in loops) == len(T.boundary_edges(m))


def test_closed_surface_has_no_boundary():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    m = Mesh(v, triangles=[[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    assert T.boundary_loops(m) == [] and len(T.boundary_edges(m)) == 0
    assert T.euler_characteristic(m) == 2
    assert T.interior_nodes(m).tolist() == [0, 1, 2, 3]


def test_euler_counts_used_nodes_only():
    m = Mesh(np.eye(4, 3), triangles=[[0, 1, 2]])  # node 3 unused
    assert T.euler_characteristic(m) == 1
    assert T.interior_nodes(m).size == 0


def test_disk_euler():
    assert T.euler_characteristic(disk(1.0, 3, 12)) == 1
    assert T.euler_characteristic(disk(1.0, 3, 12, element="quad")) == 1


@pytest.mark.parametrize("element", ["quad", "triangle"])
def test_rectangle_corners(element):
    nx, ny = 7, 9
    m = rectangle(0.42, 0.594, nx, ny, element=element, plane="xz")
    assert T.corner_nodes(m).tolist() == [0, nx - 1, nx * (ny - 1), nx * ny - 1]


def test_corners_come_from_the_rest_shape():
    m = perturbed(rectangle(1.0, 1.0, 5, 5), 0.2, seed=1)
    assert T.corner_nodes(m).tolist() == [0, 4, 20, 24]


def test_irregular_rectangle_corners():
    m = irregular_rectangle(1.0, 0.5, 150, seed=4)
    c = T.corner_nodes(m)
    assert len(c) == 4
    assert np.allclose(np.sort(np.abs(m.vertices[c, :2]), axis=0), [[0.5, 0.25]] * 4)


def test_round_shapes_have_no_corners():
    assert T.corner_nodes(disk(0.3, 4, 16)).size == 0
    assert T.corner_nodes(annulus(0.1, 0.3, 3, 16, element="triangle")).size == 0
    assert T.corner_nodes(disk(0.3, 4, 8)).size == 8  # turns by exactly 45 deg
    assert T.corner_nodes(disk(0.3, 4, 8), angle_deg=50.0).size == 0


def test_corner_angle_rejects_bad_angle():
    with pytest.raises(ValueError, match="angle_deg"):
        T.corner_nodes(rectangle(1, 1, 2, 2), 0.0)


def test_areas_triangles_and_quads():
    v = np.array([[0, 0, 0], [2, 0, 0], [1.5, 1, 0], [0.5, 1, 0], [3, 0, 0]], float)
    m = Mesh(v, triangles=[[1, 4, 2]], quads=[[0, 1, 2, 3]])
    a = T.element_areas(m)
    assert a.dtype == np.float64 and a.shape == (2,)
    assert a[0] == pytest.approx(0.5) and a[1] == pytest.approx(1.5)  # triangle, trapezoid


def test_bilinear_quad_area_of_a_warped_quad():
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0.5], [0, 1, 0]], float)
    m = Mesh(v, quads=[[0, 1, 2, 3]])
    # reference: fine midpoint rule on the bilinear surface x = (xi, eta, 0.5 xi eta) on [0,1]^2
    s = (np.arange(400) + 0.5) / 400
    xi, eta = np.meshgrid(s, s)
    ref = np.mean(np.sqrt(1 + 0.25 * eta**2 + 0.25 * xi**2))
    assert T.element_areas(m)[0] == pytest.approx(ref, rel=1e-3)


def test_rest_areas_use_rest_corners():
    m = rectangle(0.42, 0.594, 7, 9)
    stretched = m.replace(vertices=m.vertices * 2.0)
    assert T.rest_element_areas(stretched).sum() == pytest.approx(0.42 * 0.594)
    assert T.element_areas(stretched).sum() == pytest.approx(4 * 0.42 * 0.594)
    assert T.element_areas(m, m.vertices * 3.0).sum() == pytest.approx(9 * 0.42 * 0.594)
    with pytest.raises(ValueError, match="shape"):
        T.element_areas(m, np.zeros((3, 3)))


def test_per_corner_rest_area():
    v = np.array([[0, 0, 0], [5, 0, 0], [0, 5, 0]], float)
    rest = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]], float)
    m = Mesh(v, triangles=[[0, 1, 2]], rest_triangle_corners=rest)
    assert T.rest_element_areas(m)[0] == pytest.approx(0.5)
    assert T.element_areas(m)[0] == pytest.approx(12.5)


def test_repeated_node_gives_no_self_edge():
    m = Mesh(np.eye(3), triangles=[[0, 0, 1], [0, 1, 2]])
    assert T.edges(m).tolist() == [[0, 1], [0, 2], [1, 2]]
