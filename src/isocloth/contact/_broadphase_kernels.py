"""Numba kernels of the broad phase (private; wrapper: :mod:`isocloth.contact.broadphase`).

Uniform-grid spatial hash over axis-aligned boxes: every box is entered in each grid cell it
overlaps, entries are sorted by cell key, and the boxes sharing a cell are tested pairwise. A pair
is reported only by the cell that holds the lower corner of the two boxes' overlap, so each
overlapping pair comes out exactly once without a hash set.
"""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def swept_boxes_kernel(x0, x1, prims, inflation, lo, hi):
    """Boxes (k, 3) lo/hi around the primitives' vertices at both times, grown by ``inflation``.

    x0, x1 : (N, 3) float64 vertex positions at the start and end of the motion
    prims : (k, m) int64 vertex ids (−1 pads shorter primitives)
    """
    k, m = prims.shape
    for i in range(k):
        for d in range(3):
            lo[i, d] = np.inf
            hi[i, d] = -np.inf
        for j in range(m):
            v = prims[i, j]
            if v < 0:
                continue
            for d in range(3):
                a = x0[v, d]
                b = x1[v, d]
                if a < lo[i, d]:
                    lo[i, d] = a
                if b < lo[i, d]:
                    lo[i, d] = b
                if a > hi[i, d]:
                    hi[i, d] = a
                if b > hi[i, d]:
                    hi[i, d] = b
        for d in range(3):
            lo[i, d] -= inflation
            hi[i, d] += inflation


@nb.njit(cache=True)
def _cell(x, origin, h):
    return np.int64(np.floor((x - origin) / h))


@nb.njit(cache=True)
def count_entries_kernel(lo, hi, origin, h):
    """Number of (box, cell) entries for cell size h."""
    total = 0
    for i in range(lo.shape[0]):
        c = 1
        for d in range(3):
            c *= _cell(hi[i, d], origin[d], h) - _cell(lo[i, d], origin[d], h) + 1
        total += c
    return total


@nb.njit(cache=True)
def _shares_vertex(va, i, vb, j):
    for p in range(va.shape[1]):
        a = va[i, p]
        if a < 0:
            continue
        for q in range(vb.shape[1]):
            if vb[j, q] == a:
                return True
    return False


@nb.njit(cache=True)
def _push_pair(out, n_out, i, j, n_a, same):
    """Store pair (i, j) of the stacked boxes at row n_out of ``out`` (doubled when full; returned):
    within one set the smaller index first; across sets (i < n_a ≤ j) as (i, j − n_a)."""
    if n_out == out.shape[0]:
        grown = np.empty((2 * out.shape[0], 2), dtype=np.int64)
        grown[:n_out] = out[:n_out]
        out = grown
    if same:
        out[n_out, 0] = min(i, j)
        out[n_out, 1] = max(i, j)
    else:
        out[n_out, 0] = min(i, j)
        out[n_out, 1] = max(i, j) - n_a
    return out


@nb.njit(cache=True)
def grid_pairs_kernel(lo, hi, verts, n_a, same, origin, h, dims):
    """Overlapping box pairs (i, j) found through a uniform grid of cell size h.

    lo, hi : (k, 3) boxes; the first ``n_a`` belong to set A, the rest to set B
    verts : (k, m) int64 vertex ids of each box's primitive (−1 = none); pairs sharing a vertex
        id ≥ 0 are skipped (adjacent primitives)
    same : True for a self query within A (then n_a = k), else pairs are A × B
    dims : (3,) int64 cells per axis (keys are ix·ny·nz + iy·nz + iz)

    Returns (p, 2) int64 pairs, i indexing A and j indexing B (or A when ``same``, with i < j).
    """
    k = lo.shape[0]
    ny, nz = dims[1], dims[2]
    total = count_entries_kernel(lo, hi, origin, h)
    keys = np.empty(total, dtype=np.int64)
    ids = np.empty(total, dtype=np.int64)
    e = 0
    for i in range(k):
        x0 = _cell(lo[i, 0], origin[0], h)
        x1 = _cell(hi[i, 0], origin[0], h)
        y0 = _cell(lo[i, 1], origin[1], h)
        y1 = _cell(hi[i, 1], origin[1], h)
        z0 = _cell(lo[i, 2], origin[2], h)
        z1 = _cell(hi[i, 2], origin[2], h)
        for ix in range(x0, x1 + 1):
            for iy in range(y0, y1 + 1):
                for iz in range(z0, z1 + 1):
                    keys[e] = (ix * ny + iy) * nz + iz
                    ids[e] = i
                    e += 1
    order = np.argsort(keys, kind="mergesort")
    cap = max(16, 4 * k)
    out = np.empty((cap, 2), dtype=np.int64)
    n_out = 0
    run_a = np.empty(total, dtype=np.int64)
    run_b = np.empty(total, dtype=np.int64)
    s = 0
    while s < total:
        key = keys[order[s]]
        t = s
        na = 0
        nb_ = 0
        while t < total and keys[order[t]] == key:
            b = ids[order[t]]
            if b < n_a:
                run_a[na] = b
                na += 1
            else:
                run_b[nb_] = b
                nb_ += 1
            t += 1
        for p in range(na):
            i = run_a[p]
            if same:
                q_start = p + 1
                q_end = na
            else:
                q_start = 0
                q_end = nb_
            for q in range(q_start, q_end):
                j = run_a[q] if same else run_b[q]
                # inclusive overlap test on all axes
                if (lo[i, 0] > hi[j, 0] or lo[j, 0] > hi[i, 0] or lo[i, 1] > hi[j, 1]
                        or lo[j, 1] > hi[i, 1] or lo[i, 2] > hi[j, 2] or lo[j, 2] > hi[i, 2]):
                    continue
                # the cell of the overlap's lower corner owns the pair
                ox = _cell(max(lo[i, 0], lo[j, 0]), origin[0], h)
                oy = _cell(max(lo[i, 1], lo[j, 1]), origin[1], h)
                oz = _cell(max(lo[i, 2], lo[j, 2]), origin[2], h)
                if (ox * ny + oy) * nz + oz != key:
                    continue
                if _shares_vertex(verts, i, verts, j):
                    continue
                out = _push_pair(out, n_out, i, j, n_a, same)
                n_out += 1
        s = t
    return out[:n_out]


@nb.njit(cache=True)
def box_pairs_kernel(lo, hi, verts, n_a, same, cell_size, max_cells_per_axis):
    """Grid search with an automatic cell size (median box extent, doubled while the grid would
    hold more than 16 entries per box or too many cells per axis); pairs sorted by (i, j)."""
    k = lo.shape[0]
    origin = np.empty(3)
    top = np.empty(3)
    for d in range(3):
        origin[d] = np.inf
        top[d] = -np.inf
    ext = np.empty(k)
    for i in range(k):
        e = 0.0
        for d in range(3):
            origin[d] = min(origin[d], lo[i, d])
            top[d] = max(top[d], hi[i, d])
            e = max(e, hi[i, d] - lo[i, d])
        ext[i] = e
    span = 0.0
    for d in range(3):
        span = max(span, top[d] - origin[d])
    h = cell_size
    if h <= 0.0:
        h = max(np.median(ext), span * 1e-6, 1e-12)
    dims = np.empty(3, dtype=np.int64)
    while True:
        ok = True
        for d in range(3):
            c = np.floor((top[d] - origin[d]) / h) + 1.0
            if c > max_cells_per_axis:
                ok = False
            dims[d] = np.int64(min(c, 9.0e15))
        if ok and count_entries_kernel(lo, hi, origin, h) <= 16 * k + 1024:
            break
        h *= 2.0
    pairs = grid_pairs_kernel(lo, hi, verts, n_a, same, origin, h, dims)
    return _sort_pairs(pairs, pairs.shape[0])


@nb.njit(cache=True)
def _sort_pairs(out, n_out):
    pairs = out[:n_out]
    if n_out > 1:
        big = 0
        for p in range(n_out):
            big = max(big, pairs[p, 1])
        key = np.empty(n_out, dtype=np.int64)
        for p in range(n_out):
            key[p] = pairs[p, 0] * (big + 1) + pairs[p, 1]
        pairs = pairs[np.argsort(key)]
    return pairs


@nb.njit(cache=True)
def sweep_pairs_kernel(lo, hi, verts, n_a, same):
    """All overlapping box pairs by sort and sweep along the axis of largest spread (small and
    medium sets: no grid to build); same layout and output as :func:`grid_pairs_kernel`, sorted
    by (i, j)."""
    k = lo.shape[0]
    axis = 0
    best = -1.0
    for d in range(3):
        a = np.inf
        b = -np.inf
        for i in range(k):
            a = min(a, lo[i, d])
            b = max(b, hi[i, d])
        if b - a > best:
            best = b - a
            axis = d
    order = np.argsort(lo[:, axis])
    cap = max(16, 4 * k)
    out = np.empty((cap, 2), dtype=np.int64)
    n_out = 0
    for p in range(k):
        i = order[p]
        top = hi[i, axis]
        for q in range(p + 1, k):
            j = order[q]
            if lo[j, axis] > top:
                break
            if not same and (i < n_a) == (j < n_a):
                continue
            if (lo[i, 0] > hi[j, 0] or lo[j, 0] > hi[i, 0] or lo[i, 1] > hi[j, 1]
                    or lo[j, 1] > hi[i, 1] or lo[i, 2] > hi[j, 2] or lo[j, 2] > hi[i, 2]):
                continue
            if _shares_vertex(verts, i, verts, j):
                continue
            out = _push_pair(out, n_out, i, j, n_a, same)
            n_out += 1
    return _sort_pairs(out, n_out)


@nb.njit(cache=True)
def _pairs(lo, hi, verts, n_a, same, sweep_limit):
    if lo.shape[0] <= sweep_limit:
        return sweep_pairs_kernel(lo, hi, verts, n_a, same)
    return box_pairs_kernel(lo, hi, verts, n_a, same, 0.0, float(1 << 20))


@nb.njit(cache=True)
def self_candidates_kernel(x0, x1, nodes, tri, edges, inflation, sweep_limit):
    """Node–face (node id, triangle index) and edge–edge (edge index, edge index) candidate pairs
    of a mesh moving from x0 to x1: swept boxes grown by ``inflation``, adjacent pairs skipped
    (the fused form of ``broadphase.candidate_pairs``)."""
    kn = nodes.shape[0]
    kt = tri.shape[0]
    lo = np.empty((kn + kt, 3))
    hi = np.empty((kn + kt, 3))
    verts = np.full((kn + kt, 3), -1, dtype=np.int64)
    for i in range(kn):
        verts[i, 0] = nodes[i]
    for i in range(kt):
        for c in range(3):
            verts[kn + i, c] = tri[i, c]
    swept_boxes_kernel(x0, x1, verts, inflation, lo, hi)
    vf = _pairs(lo, hi, verts, kn, False, sweep_limit)
    for p in range(vf.shape[0]):
        vf[p, 0] = nodes[vf[p, 0]]
    lo_e = np.empty((edges.shape[0], 3))
    hi_e = np.empty((edges.shape[0], 3))
    swept_boxes_kernel(x0, x1, edges, inflation, lo_e, hi_e)
    ee = _pairs(lo_e, hi_e, edges, edges.shape[0], True, sweep_limit)
    return vf, ee
