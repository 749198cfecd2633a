"""The Crouzeix–Raviart element of isocloth.fem.nonconforming: exact maps, mass, rows, bending, jumps."""

from pathlib import Path

import numpy as np
import pytest

from isocloth.fem.bending import bending_matrix
from isocloth.fem.nonconforming import conformity_matrix, crouzeix_raviart, edge_jump_operator, split_quads
from isocloth.mesh.generators import irregular_rectangle, rectangle
from isocloth.mesh.io import read_mesh
from isocloth.mesh.quality import validate_mesh

BGL = Path(__file__).resolve().parents[2] / "src" / "isocloth" / "data" / "meshes" / "bgl"

MESHES = {
    "quads": lambda: rectangle(1.0, 0.6, 9, 7, element="quad", plane="xy"),
    "triangles": lambda: rectangle(1.0, 0.6, 9, 7, element="triangle", plane="xy"),
    "irregular": lambda: irregular_rectangle(1.0, 1.0, 120, seed=2),
}


def _bent(points, radius=0.5):
    """A cylinder of radius R around the y axis (an isometry of the plane z = 0)."""
    th = points[:, 0] / radius
    return np.stack([radius * np.sin(th), points[:, 1], radius * (1.0 - np.cos(th))], axis=1)


@pytest.fixture(params=sorted(MESHES))
def element(request):
    mesh = MESHES[request.param]()
    return mesh, crouzeix_raviart(mesh)


def test_counts_follow_euler(element):
    mesh, cr = element
    t = cr.triangles.shape[0]
    assert t == mesh.triangle_count + 2 * mesh.quad_count
    # every triangle has three edges, interior ones are shared: 3t = 2E − (boundary edges)
    boundary = int(np.sum(np.bincount(cr.face_edges.ravel()) == 1))
    assert 3 * t == 2 * cr.unknown_count - boundary
    pairs, lengths = cr.medial_pairs()
    assert pairs.shape == (3 * t, 2) and np.all(lengths > 0)


def test_ghost_of_midpoints_is_the_surface(element):
    mesh, cr = element
    rng = np.random.default_rng(0)
    x = rng.normal(size=mesh.vertices.shape)  # any field, not only affine ones: G P = I
    assert np.allclose(cr.ghost(cr.midpoints(x)), x, atol=1e-12)


def test_mass_is_diagonal_and_sums_to_the_area(element):
    mesh, cr = element
    m = cr.lumped_mass()
    area = float(cr.rest_areas().sum())
    assert m.shape == (cr.unknown_count,) and np.all(m > 0)
    assert m.sum() == pytest.approx(area, rel=1e-12)


def test_rows_vanish_on_rigid_motions_and_see_stretch(element):
    mesh, cr = element
    from scipy.spatial.transform import Rotation

    x = mesh.vertices @ Rotation.from_euler("xyz", [20, -35, 50], degrees=True).as_matrix().T + [0.3, -1.0, 2.0]
    assert np.abs(cr.element_strain(cr.midpoints(x))).max() < 1e-12
    # a stretched sheet is seen by its elements' own edges
    stretched = mesh.vertices * [1.02, 1.0, 1.0]
    assert np.abs(cr.element_strain(cr.midpoints(stretched))).max() == pytest.approx(0.02, rel=1e-6)


def test_bending_is_the_thesis_energy_of_the_ghost(element):
    mesh, cr = element
    K = cr.bending_matrix()
    assert abs(K - K.T).max() < 1e-9 * abs(K).max()
    rng = np.random.default_rng(1)
    affine = mesh.vertices @ rng.normal(size=(3, 3)) + rng.normal(size=3)
    y = cr.midpoints(affine)
    assert np.abs(K @ y).max() < 1e-8 * abs(K).max()
    x = _bent(mesh.vertices)
    y = cr.midpoints(x)
    energy_nc = float(np.einsum("ij,ij->", y, K @ y))
    energy = float(np.einsum("ij,ij->", x, bending_matrix(mesh) @ x))
    assert energy_nc == pytest.approx(energy, rel=1e-9)


def test_cylinder_bending_energy_converges():
    """½ κ yᵀKy → ½ κ A / R² for a sheet rolled into a cylinder of radius R (H = 1/R)."""
    ratios = []
    for n in (9, 17, 33):
        mesh = rectangle(1.0, 0.6, n, n, element="quad", plane="xy")
        cr = crouzeix_raviart(mesh)
        y = cr.midpoints(_bent(mesh.vertices))
        ratios.append(float(np.einsum("ij,ij->", y, cr.bending_matrix() @ y)) / (0.6 / 0.5 ** 2))
    errors = np.abs(np.array(ratios) - 1.0)
    assert errors[-1] < 0.05 and errors[-1] < errors[0]


def test_conformity_energy_sees_only_jumps(element):
    mesh, cr = element
    J = conformity_matrix(cr)
    x = _bent(mesh.vertices)
    y = cr.midpoints(x)  # a conforming state: no jump
    assert abs(float(np.einsum("ij,ij->", y, J @ y))) < 1e-12
    # moving one interior midpoint off the conforming state tears its two triangles apart
    interior = np.flatnonzero(np.bincount(cr.face_edges.ravel()) == 2)
    y2 = y.copy()
    y2[interior[0], 2] += 0.01
    assert float(np.einsum("ij,ij->", y2, J @ y2)) > 0


def test_edge_jumps_are_the_mismatch_across_each_interior_edge(element):
    """One row per interior edge: the difference of the two triangles' affine maps at the edge's first
    vertex, which is minus the difference at its second vertex; zero on conforming states."""
    mesh, cr = element
    De = edge_jump_operator(cr)
    shared = np.flatnonzero(np.bincount(cr.face_edges.ravel(), minlength=cr.unknown_count) == 2)
    assert De.shape == (shared.size, cr.unknown_count) and np.all(np.diff(De.indptr) == 4)
    y = cr.midpoints(_bent(mesh.vertices))
    assert np.abs(De @ y).max() < 1e-12
    y = y + np.random.default_rng(1).normal(scale=0.01, size=y.shape)
    corner = lambda t, v: sum(y[e] * (-1.0 if v not in cr.edges[e] else 1.0) for e in cr.face_edges[t])  # noqa: E731
    for row, e in enumerate(shared[:20]):
        t1, t2 = np.flatnonzero((cr.face_edges == e).any(axis=1))
        v, w = cr.edges[e]
        jv, jw = corner(t1, v) - corner(t2, v), corner(t1, w) - corner(t2, w)
        assert np.allclose(np.abs(De[row] @ y), np.abs(jv)) and np.allclose(jv, -jw)


def test_rectified_mesh_is_a_valid_surface(element):
    mesh, cr = element
    rect = cr.rectified_mesh()
    report = validate_mesh(rect)
    assert not report.defects(), report.defects()
    assert rect.node_count == cr.unknown_count
    assert np.allclose(rect.vertices, cr.midpoints(mesh.vertices))


def test_split_quads_alternates_on_squares():
    mesh = rectangle(1.0, 1.0, 5, 5, element="quad", plane="xy")
    tri, _ = split_quads(mesh)
    q = mesh.quads
    first = tri[:q.shape[0]]
    uses02 = np.all(first == q[:, [0, 1, 2]], axis=1)
    assert 0 < uses02.sum() < q.shape[0]  # both diagonals are used


def test_sewn_garment_keeps_its_panels_metric():
    """Per-corner rest coordinates (Garment Library panels): every element's rows target its own panel lengths."""
    path = BGL / "shorts" / "shorts.obj"
    if not path.is_file():
        pytest.skip("Garment Library shorts not shipped")
    mesh = read_mesh(path)
    cr = crouzeix_raviart(mesh)
    _, lengths = cr.medial_pairs()
    c = cr.rest_corners
    expected = 0.5 * np.linalg.norm(c[:, [2, 0, 1]] - c[:, [1, 2, 0]], axis=2).ravel()
    assert np.allclose(lengths, expected)
    assert cr.lumped_mass().sum() == pytest.approx(cr.rest_areas().sum())


def test_degenerate_triangle_is_refused():
    from isocloth.mesh.mesh import Mesh

    mesh = Mesh(np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), triangles=np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="zero rest area"):
        crouzeix_raviart(mesh)
