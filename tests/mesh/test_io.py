from pathlib import Path

import numpy as np
import pytest

from isocloth.mesh import topology as T
from isocloth.mesh.generators import perturbed, rectangle
from isocloth.mesh.io import merged_vertices, read_mesh, write_mesh
from isocloth.mesh.mesh import Mesh, MeshError
from isocloth.mesh.quality import validate_mesh

DATA = Path("/work/shared/data/meshes")
needs_data = pytest.mark.skipif(not (DATA / "bgl").is_dir(), reason="shared mesh data not available")

ARCSIM_OBJ = """\
# This file uses centimeters as units (it does not)
mtllib x.mtl
o sheet
g default
v 0 0 0
vv 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 2 0.5 0
vt 0 0
vt 0.5 0
vt 0.5 0.5
vt 0 0.5
vt 1 0.25
vn 0 0 1
s off
usemtl cloth
t 0
nl 0 1
ny 0 1
f 1/1/1 2/2/1 3/3/1 4/4/1
f -4/-4 5/5 -3/-3
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_obj_extras_quads_and_vt(tmp_path):
    auto = read_mesh(_write(tmp_path, "sheet.obj", ARCSIM_OBJ))
    # these vt span a quarter of the geometry's area: "auto" takes them for texture coordinates
    assert not auto.has_per_corner_rest and "texture" in auto.rest_source and "0.25 x" in auto.rest_source
    m = read_mesh(tmp_path / "sheet.obj", rest="vt")
    assert m.name == "sheet"
    assert m.node_count == 5 and m.quads.tolist() == [[0, 1, 2, 3]] and m.triangles.tolist() == [[1, 4, 2]]
    assert m.has_per_corner_rest
    assert np.allclose(m.rest_quad_corners[0], [[0, 0, 0], [0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0]])
    assert T.rest_element_areas(m).tolist() == pytest.approx([0.125, 0.25])
    g = read_mesh(tmp_path / "sheet.obj", rest="geometry", name="other")
    assert not g.has_per_corner_rest and g.name == "other"
    assert T.rest_element_areas(g).tolist() == pytest.approx([0.5, 1.0])


def test_obj_polygon_is_fan_triangulated(tmp_path):
    text = "v 0 0 0\nv 1 0 0\nv 2 1 0\nv 1 2 0\nv 0 1 0\nf 1 2 3 4 5\n"
    m = read_mesh(_write(tmp_path, "pent.obj", text))
    assert m.triangles.tolist() == [[0, 1, 2], [0, 2, 3], [0, 3, 4]] and m.quad_count == 0
    assert not m.has_per_corner_rest


def test_obj_errors(tmp_path):
    with pytest.raises(MeshError, match=r"bad\.obj:3: vertex index 7"):
        read_mesh(_write(tmp_path, "bad.obj", "v 0 0 0\nv 1 0 0\nf 1 2 7\n"))
    with pytest.raises(MeshError, match="2 corners"):
        read_mesh(_write(tmp_path, "two.obj", "v 0 0 0\nv 1 0 0\nf 1 2\n"))
    with pytest.raises(MeshError, match="no faces"):
        read_mesh(_write(tmp_path, "none.obj", "v 0 0 0\n"))
    with pytest.raises(MeshError, match="without a vt"):
        read_mesh(_write(tmp_path, "novt.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), rest="vt")
    with pytest.raises(MeshError, match="-m.obj"):
        read_mesh(tmp_path / "novt.obj", rest="m")
    with pytest.raises(MeshError, match="rest must be"):
        read_mesh(tmp_path / "novt.obj", rest="uv")
    with pytest.raises(FileNotFoundError):
        read_mesh(tmp_path / "missing.obj")


def test_w_and_m_files_are_sewn(tmp_path):
    # two panels; in world space they share the edge x = 1 (nodes 1,2 and 4,7 coincide)
    w = ("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
         "v 1.004 0 0\nv 2 0 0\nv 2 1 0\nv 1 1.003 0\n"
         "vt 0 0\nvt 9 9\nvt 9 0\n"
         "f 1/1 2/2 3/3 4/1\nf 5/1 6/2 7/3 8/1\n")
    m = ("v 0 0 0\nv 2 0 0\nv 2 2 0\nv 0 2 0\n"
         "v 5 0 0\nv 7 0 0\nv 7 2 0\nv 5 2 0\n"
         "f 1 2 3 4\nf 5 6 7 8\n")
    _write(tmp_path, "g-m.obj", m)
    mesh = read_mesh(_write(tmp_path, "g-w.obj", w))
    assert mesh.node_count == 6 and mesh.quads.tolist() == [[0, 1, 2, 3], [1, 4, 5, 2]]
    assert np.allclose(mesh.vertices[1], [1.002, 0, 0])
    assert T.rest_element_areas(mesh).tolist() == pytest.approx([4.0, 4.0])  # from g-m.obj
    assert len(T.boundary_loops(mesh)) == 1
    unsewn = read_mesh(tmp_path / "g-w.obj", merge_tolerance=0.001)
    assert unsewn.node_count == 8
    with pytest.raises(MeshError, match="does not match"):
        _write(tmp_path, "g-m.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
        read_mesh(tmp_path / "g-w.obj", rest="m")


def test_merge_drops_unused_and_clusters_in_file_order():
    v = np.array([[0, 0, 0], [5, 0, 0], [0, 0, 0.001], [5, 0, 0.002]], float)
    new, old_to_new = merged_vertices(v, 0.01)
    assert old_to_new.tolist() == [0, 1, 0, 1]
    assert np.allclose(new, [[0, 0, 0.0005], [5, 0, 0.001]])
    with pytest.raises(MeshError, match="tolerance"):
        merged_vertices(v, -1.0)


def test_merge_tolerance_on_plain_file(tmp_path):
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 9 9 9\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 5 6 7\n"
    m = read_mesh(_write(tmp_path, "p.obj", text), merge_tolerance=0.0)
    assert m.node_count == 4 and m.triangles.tolist() == [[0, 1, 2], [1, 3, 2]]


def test_obj_round_trip_is_exact(tmp_path):
    m = perturbed(rectangle(0.42, 0.594, 7, 9, plane="xz"), 0.013, seed=7)
    m = m.replace(vertices=m.vertices * np.pi)
    write_mesh(tmp_path / "a.obj", m)
    r = read_mesh(tmp_path / "a.obj")
    assert np.array_equal(r.vertices, m.vertices) and np.array_equal(r.quads, m.quads)
    # the flat rest shape (plane y = 0) comes back as per-corner (x, z) coordinates
    assert r.has_per_corner_rest
    assert np.array_equal(r.rest_quad_corners[..., :2], m.rest_vertices[m.quads][..., [0, 2]])
    x = m.vertices + 1.0 / 3.0
    write_mesh(tmp_path / "b.obj", m, positions=x)
    assert np.array_equal(read_mesh(tmp_path / "b.obj").vertices, x)
    with pytest.raises(MeshError, match="positions"):
        write_mesh(tmp_path / "c.obj", m, positions=x[:3])


def test_obj_round_trip_mixed_elements_without_rest(tmp_path):
    v = np.random.default_rng(1).random((5, 3))
    m = Mesh(v, triangles=[[1, 4, 2]], quads=[[0, 1, 2, 3]])
    write_mesh(tmp_path / "m.obj", m)
    r = read_mesh(tmp_path / "m.obj")
    assert np.array_equal(r.vertices, v) and not r.has_per_corner_rest
    assert np.array_equal(r.triangles, m.triangles) and np.array_equal(r.quads, m.quads)


def test_ply_round_trip_is_exact_and_keeps_quads(tmp_path):
    v = np.random.default_rng(2).random((5, 3)) * 1e-3 + 1 / 7
    m = Mesh(v, triangles=[[1, 4, 2]], quads=[[0, 1, 2, 3]])
    write_mesh(tmp_path / "m.ply", m)
    r = read_mesh(tmp_path / "m.ply")
    assert np.array_equal(r.vertices, v)
    assert r.triangles.tolist() == [[1, 4, 2]] and r.quads.tolist() == [[0, 1, 2, 3]]


def test_stl_through_meshio(tmp_path):
    m = rectangle(1.0, 1.0, 3, 3)
    write_mesh(tmp_path / "m.stl", m)
    r = read_mesh(tmp_path / "m.stl")
    assert r.triangle_count == 8 and r.node_count == 9
    assert T.element_areas(r).sum() == pytest.approx(1.0)


@needs_data
def test_bgl_shorts():
    m = read_mesh(DATA / "bgl/shorts/shorts.obj")
    assert (m.node_count, m.triangle_count, m.quad_count) == (235, 436, 0)
    assert m.has_per_corner_rest
    assert len(T.boundary_loops(m)) == 3 and T.euler_characteristic(m) == -1
    assert T.rest_element_areas(m).sum() == pytest.approx(0.538, abs=5e-4)
    assert validate_mesh(m).ok


@needs_data
def test_bgl_tshirt():
    m = read_mesh(DATA / "bgl/tshirt/tshirt.obj")
    assert (m.node_count, m.triangle_count) == (330, 604)
    assert len(T.boundary_loops(m)) == 4 and T.euler_characteristic(m) == -2
    assert validate_mesh(m).ok


@needs_data
def test_bgl_tshirt2_world_file_is_sewn_with_rest_from_m():
    m = read_mesh(DATA / "bgl/tshirt2/tshirt2-w.obj")
    assert (m.node_count, m.triangle_count, m.quad_count) == (306, 0, 280)
    assert len(T.boundary_loops(m)) == 4
    assert T.edge_face_counts(m).max() == 2
    rep = validate_mesh(m)
    assert rep.ok and rep.non_manifold_vertices.size == 0
    # rest from tshirt2-m.obj: the same total area as the merged tshirt2.obj's vt
    ref = read_mesh(DATA / "bgl/tshirt2/tshirt2.obj", rest="vt")  # "auto" takes the geometry: twice the vt area
    assert T.rest_element_areas(m).sum() == pytest.approx(T.rest_element_areas(ref).sum(), rel=1e-4)


@needs_data
def test_codim_ipc_square():
    m = read_mesh(DATA / "codim_ipc/square21.obj")
    assert (m.node_count, m.triangle_count) == (441, 800)
    assert T.rest_element_areas(m).sum() == pytest.approx(1.0)


def test_a_utf8_bom_keeps_the_first_vertex(tmp_path):
    """Editors on Windows write a byte-order mark; it used to swallow the first 'v' line."""
    p = tmp_path / "bom.obj"
    p.write_bytes(b"\xef\xbb\xbfv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n")
    m = read_mesh(p)
    assert m.vertices.shape == (4, 3) and m.triangles.shape == (2, 3)


def test_an_empty_ply_is_a_mesh_error_not_an_exit(tmp_path):
    """meshio calls sys.exit(1) on an empty PLY file; it used to end the caller's process."""
    p = tmp_path / "empty.ply"
    p.write_bytes(b"")
    with pytest.raises(MeshError, match="cannot read mesh .*empty.ply"):
        read_mesh(p)


def test_auto_rest_takes_metric_vt_and_refuses_a_texture_atlas(tmp_path):
    """Garment files carry vt: a rest shape in metres (area near the geometry's) or a texture atlas
    in [0, 1] (another area, or degenerate faces); "auto" tells them apart and says which it chose."""
    m = perturbed(rectangle(0.42, 0.594, 7, 9, plane="xz"), 0.013, seed=7)
    write_mesh(tmp_path / "rest.obj", m)
    text = (tmp_path / "rest.obj").read_text().replace("# isocloth: vt are rest coordinates [m]\n", "")
    (tmp_path / "plain.obj").write_text(text)
    metric = read_mesh(tmp_path / "plain.obj")
    assert metric.has_per_corner_rest and "chose 'vt'" in metric.rest_source
    atlas = "\n".join(line if not line.startswith("vt ") else
                      "vt " + " ".join(str(float(c) / 3.0) for c in line.split()[1:])
                      for line in text.splitlines())
    (tmp_path / "atlas.obj").write_text(atlas)
    chosen = read_mesh(tmp_path / "atlas.obj")
    assert not chosen.has_per_corner_rest and "texture coordinates" in chosen.rest_source


def test_seam_merge_tolerance_follows_the_elements_and_is_named(tmp_path):
    """Panels with 1.5 cm elements whose seams are 4 mm apart: the default tolerance (half the
    shortest edge) sews them; a tolerance that collapses faces is an error naming it."""
    lines = []
    for panel, x0 in enumerate((0.0, 0.064)):  # two 4 × 1-element strips, 4 mm apart at the seam
        for j in range(2):
            for i in range(5):
                lines.append(f"v {x0 + 0.015 * i if panel == 0 else 0.064 + 0.015 * i} {0.015 * j} 0")
    faces = []
    for panel in range(2):
        base = 10 * panel
        for i in range(4):
            a = base + i + 1
            faces.append(f"f {a} {a + 1} {a + 6} {a + 5}")
    (tmp_path / "strip-w.obj").write_text("\n".join(lines + faces) + "\n")
    sewn = read_mesh(tmp_path / "strip-w.obj")
    assert sewn.node_count == 18 and "merged" in sewn.rest_source  # the 2 seam pairs merged
    with pytest.raises(MeshError, match="merge_tolerance"):
        read_mesh(tmp_path / "strip-w.obj", merge_tolerance=0.02)
