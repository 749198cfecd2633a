"""Broad phase: the spatial hash finds exactly the overlapping box pairs of a brute-force search."""

import numpy as np
import pytest

from isocloth.contact.broadphase import box_pairs, candidate_pairs, mesh_edges, swept_boxes
from isocloth.mesh.generators import irregular_rectangle, rectangle


def _brute(lo_a, hi_a, lo_b=None, hi_b=None, va=None, vb=None):
    same = lo_b is None
    if same:
        lo_b, hi_b, vb = lo_a, hi_a, va
    ov = np.all((lo_a[:, None, :] <= hi_b[None, :, :]) & (lo_b[None, :, :] <= hi_a[:, None, :]), axis=2)
    if va is not None:
        va2 = va if va.ndim == 2 else va[:, None]
        vb2 = vb if vb.ndim == 2 else vb[:, None]
        shared = ((va2[:, None, :, None] == vb2[None, :, None, :]) & (va2[:, None, :, None] >= 0)).any(axis=(2, 3))
        ov &= ~shared
    if same:
        ov = np.triu(ov, 1)
    return np.argwhere(ov)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_boxes_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    c = rng.random((400, 3))
    e = rng.random((400, 3)) ** 3 * 0.2  # mixed sizes, some large
    va = rng.integers(0, 300, (400, 2))
    lo, hi = c - e, c + e
    assert np.array_equal(box_pairs((lo, hi), vertices_a=va), _brute(lo, hi, va=va))
    c2 = rng.random((150, 3))
    e2 = rng.random((150, 3)) * 0.05
    vb = rng.integers(0, 300, (150, 3))
    got = box_pairs((lo, hi), (c2 - e2, c2 + e2), vertices_a=va, vertices_b=vb)
    assert np.array_equal(got, _brute(lo, hi, c2 - e2, c2 + e2, va, vb))
    # an explicit (small) cell size gives the same answer
    assert np.array_equal(box_pairs((lo, hi), vertices_a=va, cell_size=0.013), _brute(lo, hi, va=va))


@pytest.mark.parametrize("seed", [3, 4])
def test_mesh_candidates_match_brute_force(seed):
    """Swept node/face and edge/edge boxes of a crumpled moving mesh: same pairs as O(n²)."""
    rng = np.random.default_rng(seed)
    m = irregular_rectangle(0.4, 0.3, 150, seed=seed)
    x0 = m.vertices + rng.normal(0.0, 0.02, m.vertices.shape)
    x1 = x0 + rng.normal(0.0, 0.01, x0.shape)
    tri = m.triangles
    infl = 0.004
    cand = candidate_pairs(x0, x1, tri, inflation=infl)
    nodes = np.unique(tri)
    lo_n, hi_n = swept_boxes(x0, x1, nodes, infl)
    lo_t, hi_t = swept_boxes(x0, x1, tri, infl)
    vf = _brute(lo_n, hi_n, lo_t, hi_t, nodes, tri)
    vf[:, 0] = nodes[vf[:, 0]]
    assert len(vf) > 100
    assert np.array_equal(cand.vertex_face, vf)
    ed = mesh_edges(tri)
    lo_e, hi_e = swept_boxes(x0, x1, ed, infl)
    ee = _brute(lo_e, hi_e, va=ed)
    assert len(ee) > 100
    assert np.array_equal(cand.edge_edge, ee)


def test_adjacent_primitives_are_excluded():
    m = rectangle(0.3, 0.3, 6, 6, element="triangle")
    x = m.vertices
    cand = candidate_pairs(x, x, m.triangles, inflation=0.2)  # every box overlaps every box
    tri = m.triangles
    vf = cand.vertex_face
    assert not np.any((tri[vf[:, 1]] == vf[:, 0][:, None]).any(axis=1))
    ed = mesh_edges(tri)
    a, b = ed[cand.edge_edge[:, 0]], ed[cand.edge_edge[:, 1]]
    assert not np.any((a[:, :, None] == b[:, None, :]).any(axis=(1, 2)))
    # and nothing else is excluded: all non-adjacent pairs are there
    n_nonadj_vf = sum(int(v not in t) for v in np.unique(tri) for t in tri)
    assert len(vf) == n_nonadj_vf


def test_swept_box_holds_the_motion_and_inflation():
    x0 = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    x1 = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, -1.0]])
    lo, hi = swept_boxes(x0, x1, np.array([[0, 1]]), 0.1)
    assert np.allclose(lo, [[-0.1, -0.1, -1.1]]) and np.allclose(hi, [[1.1, 2.1, 0.1]])
    with pytest.raises(ValueError, match="finite"):
        swept_boxes(np.full((2, 3), np.nan), x1, np.array([[0, 1]]))
    with pytest.raises(ValueError, match="inflation"):
        swept_boxes(x0, x1, np.array([[0, 1]]), -1.0)
