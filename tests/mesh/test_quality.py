import numpy as np
import pytest

from isocloth.mesh.generators import annulus, rectangle
from isocloth.mesh.mesh import Mesh, MeshError
from isocloth.mesh.quality import (
    CoordinateRangeError,
    DegenerateFaceError,
    DuplicateFaceError,
    InconsistentOrientationError,
    InvertedFaceError,
    MeshReport,
    NonManifoldEdgeError,
    TwistedQuadError,
    UnusedVertexError,
    check_mesh,
    validate_mesh,
)

SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, -1, 0], [2, 2, 0]], float)


def test_good_mesh_report():
    m = rectangle(0.42, 0.594, 7, 9, plane="xz")
    r = check_mesh(m)
    assert isinstance(r, MeshReport) and r.ok and r.defects() == []
    assert (r.node_count, r.triangle_count, r.quad_count, r.edge_count) == (63, 0, 48, 7 * 8 + 9 * 6)
    assert r.boundary_loop_lengths == (2 * 6 + 2 * 8,)
    assert r.euler_characteristic == 1 and r.corner_count == 4
    assert r.rest_area == pytest.approx(0.42 * 0.594)
    text = r.to_text()
    assert str(r) == text
    for part in ("63 vertices", "48 quads", "boundary loops: 1", "Euler characteristic: 1", "corners",
                 "rest area: 0.24948 m^2", "defects: none"):
        assert part in text


def test_annulus_report():
    r = validate_mesh(annulus(0.1, 0.2, 3, 24))
    assert r.ok and r.boundary_loop_lengths == (24, 24) and r.euler_characteristic == 0
    assert r.corner_count == 0


def test_non_manifold_edge():
    m = Mesh(SQUARE, triangles=[[0, 1, 2], [1, 0, 4], [0, 1, 5]])
    r = validate_mesh(m)
    assert not r.ok and r.non_manifold_edges.tolist() == [[0, 1]]
    assert r.non_manifold_edge_faces == ((0, 1, 2),)
    with pytest.raises(NonManifoldEdgeError, match=r"edge 0–1 \(shared by 3 faces: 0, 1, 2\)") as e:
        check_mesh(m)
    assert isinstance(e.value, MeshError) and "split or remove" in str(e.value)


def test_degenerate_faces():
    repeated = Mesh(SQUARE, triangles=[[0, 1, 2], [0, 0, 3]])
    with pytest.raises(DegenerateFaceError, match=r"face 1 \(triangle 1\): nodes \[0, 0, 3\], repeated node"):
        check_mesh(repeated)
    flat = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 0]], float)
    collinear = Mesh(flat, triangles=[[0, 1, 3], [0, 1, 2]][::-1])
    r = validate_mesh(collinear)
    assert r.degenerate_faces.tolist() == [0]
    assert "zero rest area and zero current area" in r.degenerate_reasons[0]
    with pytest.raises(DegenerateFaceError, match="face 0"):
        check_mesh(collinear)


def test_degenerate_quad_named_as_quad():
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0], [3, 0, 0]], float)
    m = Mesh(v, triangles=[[0, 1, 2]], quads=[[0, 1, 2, 3], [1, 4, 5, 4]])
    with pytest.raises(DegenerateFaceError, match=r"face 2 \(quad 1\)"):
        check_mesh(m)


def test_zero_rest_area_only():
    v = SQUARE[:4]
    rest = np.zeros((1, 3, 3))
    m = Mesh(v, triangles=[[0, 1, 2]], rest_triangle_corners=rest)
    r = validate_mesh(m)
    assert r.degenerate_faces.tolist() == [0] and r.degenerate_reasons[0].endswith("zero rest area")


def test_duplicate_faces():
    m = Mesh(SQUARE, triangles=[[0, 1, 2], [0, 2, 3], [2, 0, 1]])
    r = validate_mesh(m)
    assert r.duplicate_faces.tolist() == [[0, 2]]
    with pytest.raises(DuplicateFaceError, match=r"face 0 \(triangle 0\) and face 2 \(triangle 2\)"):
        check_mesh(m)


def test_unused_vertices():
    m = Mesh(SQUARE, quads=[[0, 1, 2, 3]])
    r = validate_mesh(m)
    assert r.unused_vertices.tolist() == [4, 5]
    with pytest.raises(UnusedVertexError, match=r"2 unused vertices \(in no face\): 4; 5"):
        check_mesh(m)


def test_inconsistent_orientation():
    m = Mesh(SQUARE[:4], triangles=[[0, 1, 2], [0, 3, 2]])  # both traverse 2 -> 0
    r = validate_mesh(m)
    assert r.inconsistent_orientation.tolist() == [[2, 0]]
    assert r.inconsistent_orientation_faces.tolist() == [[0, 1]]
    with pytest.raises(InconsistentOrientationError, match=r"edge 2→0 \(faces 0 and 1 both traverse it"):
        check_mesh(m)


def test_flipped_quad_in_grid():
    g = rectangle(1.0, 1.0, 4, 4)
    q = g.quads.copy()
    q[4] = q[4, ::-1]
    r = validate_mesh(g.replace(quads=q))
    assert len(r.inconsistent_orientation) == 4
    assert set(r.inconsistent_orientation_faces.ravel().tolist()) >= {4}
    with pytest.raises(InconsistentOrientationError, match="4 inconsistently oriented edges.*and 1 more"):
        check_mesh(g.replace(quads=q))


def test_message_names_few_and_counts_rest():
    v = np.zeros((10, 3))
    v[:3] = SQUARE[:3]
    r = validate_mesh(Mesh(v, triangles=[[0, 1, 2]]))
    msg = r.defects()[0]
    assert msg.startswith("7 unused vertices") and "3; 4; 5; and 4 more" in msg


def test_bow_tie_vertex_is_only_a_warning():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]], float)
    m = Mesh(v, triangles=[[0, 1, 2], [0, 3, 4]])
    r = check_mesh(m)
    assert r.ok and r.non_manifold_vertices.tolist() == [0]
    assert "non-manifold vertex" in r.to_text() and r.warnings()


def test_grids_have_no_non_manifold_vertices():
    for m in (rectangle(1, 1, 5, 4), rectangle(1, 1, 5, 4, element="triangle"), annulus(0.1, 0.2, 3, 12)):
        assert validate_mesh(m).non_manifold_vertices.size == 0


def test_nan_vertex_is_rejected_by_mesh():
    v = SQUARE.copy()
    v[3, 1] = np.nan
    with pytest.raises(MeshError, match="vertex 3"):
        Mesh(v, quads=[[0, 1, 2, 3]])


def test_text_lists_defects():
    m = Mesh(SQUARE, triangles=[[0, 1, 2], [0, 1, 2]])
    text = validate_mesh(m).to_text()
    assert "defects:\n  - 1 duplicate face pair" in text and "unused vert" in text


def test_a_self_crossing_quad_is_a_defect_and_a_concave_one_is_not():
    """A bow-tie quad (nodes listed across instead of around) used to pass as 'defects: none'."""
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
    report = validate_mesh(Mesh(v, quads=np.array([[0, 1, 2, 3]])))
    assert report.twisted_quads.tolist() == [0] and not report.ok
    with pytest.raises(TwistedQuadError, match="self-crossing .*quad 0"):
        check_mesh(Mesh(v, quads=np.array([[0, 1, 2, 3]])))
    assert validate_mesh(Mesh(v, quads=np.array([[0, 1, 3, 2]]))).ok  # the same nodes around the boundary
    concave = np.array([[0, 0, 0], [1, 0, 0], [0.3, 0.3, 0], [0, 1, 0]], dtype=float)
    assert validate_mesh(Mesh(concave, quads=np.array([[0, 1, 2, 3]]))).ok
    square = v[[0, 1, 3, 2]]
    folded = square.copy()
    folded[2] = [0.25, 0.25, 0.612]  # corner 2 turned by 120° about the diagonal 1–3
    assert validate_mesh(Mesh(folded, quads=np.array([[0, 1, 2, 3]]), rest_vertices=square)).ok


def test_coordinates_out_of_range_are_a_defect():
    """A vertex at 1e300 m used to pass as 'defects: none' (with an infinite area)."""
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1e300, 0, 0]], dtype=float)
    report = validate_mesh(Mesh(v, triangles=np.array([[0, 1, 2], [1, 3, 2]])))
    assert report.far_vertices.tolist() == [3]
    with pytest.raises(CoordinateRangeError, match="beyond .*other units"):
        check_mesh(Mesh(v, triangles=np.array([[0, 1, 2], [1, 3, 2]])))


def test_a_zero_length_edge_between_distinct_nodes_is_degenerate():
    """A quad with two distinct nodes at one point (a triangle in disguise) used to pass as 'defects: none'."""
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 0, 0], [0, 1, 0]], float)  # nodes 1 and 2 coincide
    with pytest.raises(DegenerateFaceError, match=r"face 0 \(quad 0\): nodes \[0, 1, 2, 3\], zero-length edge 1–2 "
                                                  r"\(two distinct nodes at one point in the rest and current shape"):
        check_mesh(Mesh(v.copy(), quads=[[0, 1, 2, 3]]))
    r = validate_mesh(Mesh(v.copy(), triangles=[[0, 1, 2], [0, 2, 3]]))  # a triangle with two coincident nodes
    assert r.degenerate_faces.tolist() == [0] and "zero rest area and zero current area" in r.degenerate_reasons[0]
    square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)  # only the rest shape collapses
    r = validate_mesh(Mesh(square, quads=[[0, 1, 2, 3]], rest_vertices=v.copy()))
    assert r.degenerate_reasons == ("nodes [0, 1, 2, 3], zero-length edge 1–2 (two distinct nodes at one point "
                                    "in the rest shape)",)


def _grid_with_node_12_dragged_across_an_edge():
    """5 × 5 nodes, triangles; interior node 12 (at the centre) dragged below the edge 6–7–8: triangles
    10 (6, 7, 12) and 12 (7, 8, 12) turn over in the plane and lie on their neighbours."""
    g = rectangle(1.0, 1.0, 5, 5, element="triangle")
    v = g.vertices.copy()
    v[12] = [0.1, -0.3, 0.0]
    return g, v


def test_a_face_inverted_relative_to_its_neighbours_in_the_plane_is_named():
    """A fold-over in the plane (every edge still shared the right way round) used to pass check_mesh and
    reach `isocloth info` only as 'intersecting faces' next to 'defects: none'."""
    g, v = _grid_with_node_12_dragged_across_an_edge()
    r = validate_mesh(g.replace(vertices=v.copy()))
    assert r.inverted_faces.tolist() == [10, 12] and len(r.inconsistent_orientation) == 0
    assert r.folded_edge_faces.tolist() == [[3, 10], [5, 12], [10, 11], [12, 13]]
    with pytest.raises(InvertedFaceError, match=r"2 inverted faces \(folded over onto neighbouring faces\): face 10 "
                                                r"\(triangle 10\); face 12 \(triangle 12\); 4 folded-over edges"):
        check_mesh(g.replace(vertices=v.copy()))
    assert "defects:\n  - 2 inverted faces" in r.to_text()
    assert not validate_mesh(g.replace(rest_vertices=v.copy())).ok  # the same fold in the rest shape only
    per_corner = v[g.triangles]  # per-element rest shapes (UV layouts) may overlap: each element stands alone
    assert validate_mesh(g.replace(rest_triangle_corners=per_corner)).ok
    v[12, 2] = 0.05  # lifted out of the plane: a crease, not a fold-over
    assert validate_mesh(g.replace(vertices=v.copy())).ok
    folded = g.vertices.copy()  # a sheet folded at a right angle along x = 0
    folded[folded[:, 0] > 0, 2] = folded[folded[:, 0] > 0, 0]
    folded[folded[:, 0] > 0, 0] = 0.0
    assert validate_mesh(g.replace(vertices=folded)).ok


def test_two_triangles_folded_flat_onto_each_other_are_both_named():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.5, 0.2, 0]], float)  # node 3 on node 2's side of 0–1
    r = validate_mesh(Mesh(v.copy(), triangles=[[0, 1, 2], [1, 0, 3]]))
    assert r.folded_edges.tolist() == [[0, 1]] and r.inverted_faces.tolist() == [0, 1]
    v[3] = [0.5, -0.2, 0.0]  # on the other side: the two lie side by side
    assert validate_mesh(Mesh(v, triangles=[[0, 1, 2], [1, 0, 3]])).ok



def test_unit_hint_names_the_units_that_make_a_cloth_of_the_area():
    from isocloth.mesh.quality import unit_hint

    assert unit_hint(0.6) is None and unit_hint(0.005) is None
    big = unit_hint(207.0)  # a garment of ~2 m² written in decimetres, or a small one in centimetres
    assert "not in metres" in big and "in decimetres it would be 2.07 m²" in big and "scale = 0.01" in big
    assert "in millimetres" not in big  # 0.000207 m²: no cloth either
    assert "smaller than any cloth" in unit_hint(2e-5)
