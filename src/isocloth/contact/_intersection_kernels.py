"""Exact geometric predicates and triangle–triangle intersection (private; wrapper:
:mod:`isocloth.contact.intersection`).

Orientation predicates are evaluated in floating point with Shewchuk's a-priori error bounds
(J. R. Shewchuk, "Adaptive precision floating-point arithmetic and fast robust geometric
predicates", Discrete Comput. Geom. 18, 1997: bounds (3 + 16ε)ε for orient2d and (7 + 56ε)ε for
orient3d, ε = 2⁻⁵³); when the bound cannot certify the sign, the determinant is recomputed
exactly with floating-point expansions (Two-Sum, Two-Product, Grow-Expansion and
Scale-Expansion of the same paper). The sign is therefore exact for any double input (barring
overflow/underflow, irrelevant at cloth scales).

Triangle–triangle test: two closed triangles intersect iff an edge of one meets the other
(closed) triangle; segment–triangle uses only orientation signs (3-D, or 2-D after projection
when the segment lies in the triangle's plane).
"""

import numba as nb
import numpy as np

_EPS = 2.0 ** -53
_SPLITTER = 134217729.0  # 2^27 + 1
_O2D_BOUND = (3.0 + 16.0 * _EPS) * _EPS
_O3D_BOUND = (7.0 + 56.0 * _EPS) * _EPS


# -- expansion arithmetic ------------------------------------------------------------------------
@nb.njit(cache=True)
def _two_sum(a, b):
    x = a + b
    bv = x - a
    av = x - bv
    return x, (a - av) + (b - bv)


@nb.njit(cache=True)
def _split(a):
    c = _SPLITTER * a
    big = c - a
    hi = c - big
    return hi, a - hi


@nb.njit(cache=True)
def _two_product(a, b):
    x = a * b
    ahi, alo = _split(a)
    bhi, blo = _split(b)
    err = x - ahi * bhi
    err -= alo * bhi
    err -= ahi * blo
    return x, alo * blo - err


@nb.njit(cache=True)
def _grow(e, elen, b, h):
    """h ← e + b (zero-eliminating); returns the length of h. h may alias nothing in e."""
    q = b
    hlen = 0
    for i in range(elen):
        q, hh = _two_sum(q, e[i])
        if hh != 0.0:
            h[hlen] = hh
            hlen += 1
    if q != 0.0 or hlen == 0:
        h[hlen] = q
        hlen += 1
    return hlen


@nb.njit(cache=True)
def _sum(e, elen, f, flen, h, tmp):
    """h ← e + f by repeated growth; returns len(h)."""
    for i in range(elen):
        h[i] = e[i]
    hlen = elen
    for j in range(flen):
        n = _grow(h, hlen, f[j], tmp)
        for i in range(n):
            h[i] = tmp[i]
        hlen = n
    return hlen


@nb.njit(cache=True)
def _scale(e, elen, b, h):
    """h ← b·e (zero-eliminating); returns len(h)."""
    hlen = 0
    q, hh = _two_product(e[0], b)
    if hh != 0.0:
        h[hlen] = hh
        hlen += 1
    for i in range(1, elen):
        p1, p0 = _two_product(e[i], b)
        s, hh = _two_sum(q, p0)
        if hh != 0.0:
            h[hlen] = hh
            hlen += 1
        q = p1 + s
        hh = s - (q - p1)
        if hh != 0.0:
            h[hlen] = hh
            hlen += 1
    if q != 0.0 or hlen == 0:
        h[hlen] = q
        hlen += 1
    return hlen


@nb.njit(cache=True)
def _sign_of(e, elen):
    for i in range(elen - 1, -1, -1):
        if e[i] > 0.0:
            return 1
        if e[i] < 0.0:
            return -1
    return 0


@nb.njit(cache=True)
def _cross2(ax, ay, bx, by, out):
    """out ← ax·by − bx·ay exactly (4 components); returns length."""
    p1, p0 = _two_product(ax, by)
    q1, q0 = _two_product(bx, ay)
    e = np.empty(2)
    e[0] = p0
    e[1] = p1
    f = np.empty(2)
    f[0] = -q0
    f[1] = -q1
    tmp = np.empty(8)
    return _sum(e, 2, f, 2, out, tmp)


@nb.njit(cache=True)
def _sum3(a, alen, b, blen, c, clen, out):
    tmp = np.empty(alen + blen + clen + 2)
    ab = np.empty(alen + blen + 2)
    n = _sum(a, alen, b, blen, ab, tmp)
    return _sum(ab, n, c, clen, out, tmp)


@nb.njit(cache=True)
def orient2d_exact(ax, ay, bx, by, cx, cy):
    """Exact sign of det[[ax, ay, 1], [bx, by, 1], [cx, cy, 1]] = m_ab + m_bc + m_ca."""
    mab = np.empty(4)
    mbc = np.empty(4)
    mca = np.empty(4)
    la = _cross2(ax, ay, bx, by, mab)
    lb = _cross2(bx, by, cx, cy, mbc)
    lc = _cross2(cx, cy, ax, ay, mca)
    out = np.empty(16)
    n = _sum3(mab, la, mbc, lb, mca, lc, out)
    return _sign_of(out, n)


@nb.njit(cache=True)
def orient2d(ax, ay, bx, by, cx, cy):
    """Sign (−1, 0, 1) of (a − c) × (b − c): +1 when a, b, c turn counter-clockwise. Exact."""
    left = (ax - cx) * (by - cy)
    right = (ay - cy) * (bx - cx)
    det = left - right
    bound = _O2D_BOUND * (abs(left) + abs(right))
    if det > bound:
        return 1
    if -det > bound:
        return -1
    return orient2d_exact(ax, ay, bx, by, cx, cy)


@nb.njit(cache=True)
def _minor3(x, y, i, j, k, out):
    """out ← m_ij + m_jk + m_ki (cyclic 2-D crosses of rows i, j, k of x, y); returns length."""
    m1 = np.empty(4)
    m2 = np.empty(4)
    m3 = np.empty(4)
    l1 = _cross2(x[i], y[i], x[j], y[j], m1)
    l2 = _cross2(x[j], y[j], x[k], y[k], m2)
    l3 = _cross2(x[k], y[k], x[i], y[i], m3)
    return _sum3(m1, l1, m2, l2, m3, l3, out)


@nb.njit(cache=True)
def orient3d_exact(a, b, c, d):
    """Exact sign of det[a − d; b − d; c − d] via the 4×4 determinant with a column of ones,
    expanded along z: Σ_i (−1)^(i+1) z_i · D_i, D_i the (x, y, 1) minor of the other rows."""
    x = np.empty(4)
    y = np.empty(4)
    z = np.empty(4)
    x[0], y[0], z[0] = a[0], a[1], a[2]
    x[1], y[1], z[1] = b[0], b[1], b[2]
    x[2], y[2], z[2] = c[0], c[1], c[2]
    x[3], y[3], z[3] = d[0], d[1], d[2]
    acc = np.empty(400)
    acc_len = 1
    acc[0] = 0.0
    minor = np.empty(16)
    scaled = np.empty(40)
    tmp = np.empty(440)
    nxt = np.empty(440)
    for r in range(4):
        if r == 0:
            ml = _minor3(x, y, 1, 2, 3, minor)
        elif r == 1:
            ml = _minor3(x, y, 0, 2, 3, minor)
        elif r == 2:
            ml = _minor3(x, y, 0, 1, 3, minor)
        else:
            ml = _minor3(x, y, 0, 1, 2, minor)
        sgn = 1.0 if r % 2 == 0 else -1.0
        sl = _scale(minor, ml, sgn * z[r], scaled)
        n = _sum(acc, acc_len, scaled, sl, nxt, tmp)
        for i in range(n):
            acc[i] = nxt[i]
        acc_len = n
    return _sign_of(acc, acc_len)


@nb.njit(cache=True)
def orient3d(a, b, c, d):
    """Sign (−1, 0, 1) of det[a − d; b − d; c − d] (> 0 when d is below the plane of a, b, c seen
    counter-clockwise from above). Exact for double inputs."""
    adx = a[0] - d[0]
    ady = a[1] - d[1]
    adz = a[2] - d[2]
    bdx = b[0] - d[0]
    bdy = b[1] - d[1]
    bdz = b[2] - d[2]
    cdx = c[0] - d[0]
    cdy = c[1] - d[1]
    cdz = c[2] - d[2]
    bdxcdy = bdx * cdy
    cdxbdy = cdx * bdy
    cdxady = cdx * ady
    adxcdy = adx * cdy
    adxbdy = adx * bdy
    bdxady = bdx * ady
    det = adz * (bdxcdy - cdxbdy) + bdz * (cdxady - adxcdy) + cdz * (adxbdy - bdxady)
    perm = ((abs(bdxcdy) + abs(cdxbdy)) * abs(adz) + (abs(cdxady) + abs(adxcdy)) * abs(bdz)
            + (abs(adxbdy) + abs(bdxady)) * abs(cdz))
    bound = _O3D_BOUND * perm
    if det > bound:
        return 1
    if -det > bound:
        return -1
    # one coordinate equal for all four points (e.g. a flat sheet at z = 0): exactly coplanar
    if (adx == 0.0 and bdx == 0.0 and cdx == 0.0) or (ady == 0.0 and bdy == 0.0 and cdy == 0.0) or (
            adz == 0.0 and bdz == 0.0 and cdz == 0.0):
        return 0
    return orient3d_exact(a, b, c, d)


# -- segment / triangle tests ----------------------------------------------------------------------
@nb.njit(cache=True)
def _o2(p, q, r, ax0, ax1):
    return orient2d(p[ax0], p[ax1], q[ax0], q[ax1], r[ax0], r[ax1])


@nb.njit(cache=True)
def _on_segment_2d(p, q, r, ax0, ax1):
    """r collinear with p, q: is it within the closed segment's box?"""
    return (min(p[ax0], q[ax0]) <= r[ax0] <= max(p[ax0], q[ax0])
            and min(p[ax1], q[ax1]) <= r[ax1] <= max(p[ax1], q[ax1]))


@nb.njit(cache=True)
def _segments_meet_2d(p, q, r, s, ax0, ax1):
    """Closed segments pq and rs intersect (in the projection on axes ax0, ax1)."""
    o1 = _o2(p, q, r, ax0, ax1)
    o2 = _o2(p, q, s, ax0, ax1)
    o3 = _o2(r, s, p, ax0, ax1)
    o4 = _o2(r, s, q, ax0, ax1)
    if o1 * o2 < 0 and o3 * o4 < 0:
        return True
    if o1 == 0 and _on_segment_2d(p, q, r, ax0, ax1):
        return True
    if o2 == 0 and _on_segment_2d(p, q, s, ax0, ax1):
        return True
    if o3 == 0 and _on_segment_2d(r, s, p, ax0, ax1):
        return True
    if o4 == 0 and _on_segment_2d(r, s, q, ax0, ax1):
        return True
    return False


@nb.njit(cache=True)
def _point_in_triangle_2d(p, a, b, c, ax0, ax1):
    o1 = _o2(a, b, p, ax0, ax1)
    o2 = _o2(b, c, p, ax0, ax1)
    o3 = _o2(c, a, p, ax0, ax1)
    return (o1 >= 0 and o2 >= 0 and o3 >= 0) or (o1 <= 0 and o2 <= 0 and o3 <= 0)


@nb.njit(cache=True)
def _projection_axes(a, b, c):
    """Two coordinate axes on which triangle abc projects to a non-degenerate triangle
    (exact test); (−1, −1) if the triangle is degenerate."""
    ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    vx, vy, vz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    nx = abs(uy * vz - uz * vy)
    ny = abs(uz * vx - ux * vz)
    nz = abs(ux * vy - uy * vx)
    mags = np.empty(3)
    mags[0], mags[1], mags[2] = -nx, -ny, -nz
    order = np.argsort(mags)
    for t in range(3):
        drop = order[t]
        ax0 = 1 if drop == 0 else 0
        ax1 = 1 if drop == 2 else 2
        if _o2(a, b, c, ax0, ax1) != 0:
            return ax0, ax1
    return -1, -1


@nb.njit(cache=True)
def segment_triangle(p, q, a, b, c):
    """Closed segment pq meets closed triangle abc (exact). A degenerate triangle never meets."""
    op = orient3d(a, b, c, p)
    oq = orient3d(a, b, c, q)
    if op * oq > 0:
        return False
    if op == 0 and oq == 0:
        ax0, ax1 = _projection_axes(a, b, c)
        if ax0 < 0:
            return False
        if _point_in_triangle_2d(p, a, b, c, ax0, ax1) or _point_in_triangle_2d(q, a, b, c, ax0, ax1):
            return True
        return (_segments_meet_2d(p, q, a, b, ax0, ax1) or _segments_meet_2d(p, q, b, c, ax0, ax1)
                or _segments_meet_2d(p, q, c, a, ax0, ax1))
    s1 = orient3d(p, q, a, b)
    s2 = orient3d(p, q, b, c)
    s3 = orient3d(p, q, c, a)
    if s1 == 0 and s2 == 0 and s3 == 0:
        return False  # degenerate triangle on the segment's line
    return (s1 >= 0 and s2 >= 0 and s3 >= 0) or (s1 <= 0 and s2 <= 0 and s3 <= 0)


@nb.njit(cache=True)
def triangles_intersect(a0, a1, a2, b0, b1, b2):
    """Closed triangles A and B share a point (exact; touching counts)."""
    return (segment_triangle(a0, a1, b0, b1, b2) or segment_triangle(a1, a2, b0, b1, b2)
            or segment_triangle(a2, a0, b0, b1, b2) or segment_triangle(b0, b1, a0, a1, a2)
            or segment_triangle(b1, b2, a0, a1, a2) or segment_triangle(b2, b0, a0, a1, a2))


@nb.njit(cache=True)
def _sub(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


@nb.njit(cache=True)
def _crs(ux, uy, uz, vx, vy, vz):
    return uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx


@nb.njit(cache=True)
def _axis_separates(P, Q, ax, ay, az):
    """Do the projections of point sets P (3, 3) and Q (3, 3) on axis a have a gap larger than
    a safe bound on their rounding errors?"""
    pmin = np.inf
    pmax = -np.inf
    qmin = np.inf
    qmax = -np.inf
    scale = 0.0
    for i in range(3):
        v = P[i, 0] * ax + P[i, 1] * ay + P[i, 2] * az
        pmin = min(pmin, v)
        pmax = max(pmax, v)
        w = Q[i, 0] * ax + Q[i, 1] * ay + Q[i, 2] * az
        qmin = min(qmin, w)
        qmax = max(qmax, w)
        scale = max(scale, abs(P[i, 0] * ax) + abs(P[i, 1] * ay) + abs(P[i, 2] * az),
                    abs(Q[i, 0] * ax) + abs(Q[i, 1] * ay) + abs(Q[i, 2] * az))
    margin = 1e-14 * scale
    return pmax + margin < qmin or qmax + margin < pmin


@nb.njit(cache=True)
def float_separated(P, Q):
    """Conservative floating-point separating-axis test of triangles P, Q (rows = corners; a
    repeated corner makes a segment). True only when a separation is certain; False means
    "undecided" (the exact test decides)."""
    eP = np.empty((3, 3))
    eQ = np.empty((3, 3))
    for i in range(3):
        j = (i + 1) % 3
        for d in range(3):
            eP[i, d] = P[j, d] - P[i, d]
            eQ[i, d] = Q[j, d] - Q[i, d]
    nPx, nPy, nPz = _crs(eP[0, 0], eP[0, 1], eP[0, 2], -eP[2, 0], -eP[2, 1], -eP[2, 2])
    nQx, nQy, nQz = _crs(eQ[0, 0], eQ[0, 1], eQ[0, 2], -eQ[2, 0], -eQ[2, 1], -eQ[2, 2])
    if _axis_separates(P, Q, nPx, nPy, nPz) or _axis_separates(P, Q, nQx, nQy, nQz):
        return True
    for i in range(3):
        for j in range(3):
            ax, ay, az = _crs(eP[i, 0], eP[i, 1], eP[i, 2], eQ[j, 0], eQ[j, 1], eQ[j, 2])
            if _axis_separates(P, Q, ax, ay, az):
                return True
    for i in range(3):  # in-plane axes (coplanar triangles)
        ax, ay, az = _crs(nPx, nPy, nPz, eP[i, 0], eP[i, 1], eP[i, 2])
        if _axis_separates(P, Q, ax, ay, az):
            return True
        ax, ay, az = _crs(nQx, nQy, nQz, eQ[i, 0], eQ[i, 1], eQ[i, 2])
        if _axis_separates(P, Q, ax, ay, az):
            return True
    return False


@nb.njit(cache=True)
def pairs_intersect_kernel(x, tri, pairs, out):
    """out[k] ← whether triangles pairs[k] intersect beyond what adjacency forces.

    No shared node: the closed triangles meet. One shared node v: the edge opposite v in one
    triangle meets the other triangle (the intersection is convex and contains v, so it holds a
    second point iff an opposite edge reaches the other triangle). Two shared nodes: False (two
    triangles on a common edge overlap only when folded flat onto each other: touching).
    """
    P = np.empty((3, 3))
    Q = np.empty((3, 3))
    S = np.empty((3, 3))
    for k in range(pairs.shape[0]):
        i = pairs[k, 0]
        j = pairs[k, 1]
        shared = 0
        si = -1
        sj = -1
        for p in range(3):
            for q in range(3):
                if tri[i, p] == tri[j, q]:
                    shared += 1
                    si = p
                    sj = q
        A0 = x[tri[i, 0]]
        A1 = x[tri[i, 1]]
        A2 = x[tri[i, 2]]
        B0 = x[tri[j, 0]]
        B1 = x[tri[j, 1]]
        B2 = x[tri[j, 2]]
        for d in range(3):
            P[0, d], P[1, d], P[2, d] = A0[d], A1[d], A2[d]
            Q[0, d], Q[1, d], Q[2, d] = B0[d], B1[d], B2[d]
        if shared == 0:
            out[k] = (not float_separated(P, Q)) and triangles_intersect(A0, A1, A2, B0, B1, B2)
        elif shared == 1:
            oi1 = x[tri[i, (si + 1) % 3]]
            oi2 = x[tri[i, (si + 2) % 3]]
            oj1 = x[tri[j, (sj + 1) % 3]]
            oj2 = x[tri[j, (sj + 2) % 3]]
            hit = False
            for d in range(3):
                S[0, d], S[1, d], S[2, d] = oi1[d], oi2[d], oi2[d]
            if not float_separated(S, Q):
                hit = segment_triangle(oi1, oi2, B0, B1, B2)
            if not hit:
                for d in range(3):
                    S[0, d], S[1, d], S[2, d] = oj1[d], oj2[d], oj2[d]
                if not float_separated(S, P):
                    hit = segment_triangle(oj1, oj2, A0, A1, A2)
            out[k] = hit
        else:
            out[k] = False
