"""Numba kernels of continuous collision detection (private; wrapper: :mod:`isocloth.contact.ccd`).

Time is the fraction s ∈ [0, 1] of the step: a vertex moves as x(s) = x⁰ + s (x¹ − x⁰). Vectors
are 3-tuples inside the kernels (no heap allocation per pair); the array-taking functions at the
end are the entry points.

Result record of one pair (10 floats):
    [0] status: 0 none, 1 collision found by CCD, 2 proximity (distance < τ at the end positions)
    [1] s: collision time fraction (CCD) or 1 (proximity)
    [2:6] signed weights w of the four vertices, H = ν · Σ w_i x_i (seed 000 §3.2)
    [6:9] unit normal ν, oriented as described in ``vertex_face`` / ``edge_edge``
    [9] distance between the (unshifted) primitives at the detection time
"""

import math

import numba as nb
import numpy as np

from isocloth.contact._geometry_kernels import (
    _add,
    _cross,
    _det,
    _dot,
    _lerp,
    _maxabs,
    _mul,
    _norm,
    _point_triangle,
    _segment_segment,
    _sub,
    _v,
)

_REL_F = 1e-12  # |f| ≤ _REL_F·L³: the coplanarity function is zero (double root / coplanar motion)
_REL_GEO = 1e-6  # distance ≤ _REL_GEO·L at a coplanarity root counts as contact
_INTERIOR = 1e-6  # edge parameters in (δ, 1 − δ) for cloth–cloth edge–edge proximity
# cloth edges closer to parallel than this (|e_u × e_v| ≤ _PARALLEL |e_u||e_v|) give no edge–edge row:
# their common normal is undefined (the fallback, the direction between closest points, is oblique
# for two layers lying flat on each other and such rows made the active set cycle); the node–face
# rows of their end nodes hold that contact. Obstacle segments (sticks) keep them: for a capsule the
# direction between closest points is the normal.
_PARALLEL = 1e-3
_SHIFT_CAP = 0.9  # the two proximity shifts together close at most this fraction of the start distance
_NONE = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
_WORK = 48  # candidate-time workspace per pair


# -- the coplanarity cubic (seed 000 eq. 4, thesis eq. 3.3) -----------------------------------------
@nb.njit(cache=True)
def _coefficients(x1, x2, x3, x4, d1, d2, d3, d4):
    """(a3, a2, a1, a0, L) of det(x̃1 + s ṽ1, x̃2 + s ṽ2, x̃3 + s ṽ3), x̃_i = x_i − x4, ṽ_i = d_i − d4
    (d = displacement over the step); L = largest |component| of the x̃_i and ṽ_i."""
    p1 = _sub(x1, x4)
    p2 = _sub(x2, x4)
    p3 = _sub(x3, x4)
    v1 = _sub(d1, d4)
    v2 = _sub(d2, d4)
    v3 = _sub(d3, d4)
    a3 = _det(v1, v2, v3)
    a2 = _det(p1, v2, v3) + _det(v1, p2, v3) + _det(v1, v2, p3)
    a1 = _det(p1, p2, v3) + _det(p1, v2, p3) + _det(v1, p2, p3)
    a0 = _det(p1, p2, p3)
    L = max(_maxabs(p1), _maxabs(p2), _maxabs(p3), _maxabs(v1), _maxabs(v2), _maxabs(v3))
    return a3, a2, a1, a0, L


@nb.njit(cache=True)
def _horner(c3, c2, c1, c0, s):
    return ((c3 * s + c2) * s + c1) * s + c0


@nb.njit(cache=True)
def _quadratic_roots(A, B, C, out, n):
    """Append the real roots of A s² + B s + C in [0, 1] to out[n:]; returns the new n.
    Degenerate leading coefficients fall back to the linear case; a (near) double root counts once."""
    big = max(abs(A), abs(B), abs(C))
    if big == 0.0 or n + 2 > out.shape[0]:
        return n
    if abs(A) <= 1e-14 * big:
        if abs(B) > 1e-14 * big:
            r = -C / B
            if 0.0 <= r <= 1.0:
                out[n] = r
                n += 1
        return n
    disc = B * B - 4.0 * A * C
    if disc < 0.0:
        if disc >= -1e-12 * B * B:  # tangent: double root
            disc = 0.0
        else:
            return n
    q = -0.5 * (B + math.copysign(math.sqrt(disc), B))
    r1 = q / A
    if 0.0 <= r1 <= 1.0:
        out[n] = r1
        n += 1
    if q != 0.0:
        r2 = C / q
        if 0.0 <= r2 <= 1.0 and r2 != r1:
            out[n] = r2
            n += 1
    return n


@nb.njit(cache=True)
def _cubic_roots(c3, c2, c1, c0, eps, out):
    """Roots of c3 s³ + c2 s² + c1 s + c0 in [0, 1], ascending, into out; returns their number.

    [0, 1] is cut at the critical points (roots of the derivative), so f is monotone on each
    piece; a sign change is bracketed and bisected to full precision, and a piece end with
    |f| ≤ eps is a root (double roots — grazing contact — and roots at 0 or 1). A vanishing
    leading coefficient (quadratic, linear, constant cases) needs no special treatment.
    """
    # no root when |c0| exceeds what the other terms can cancel on [0, 1]
    if abs(c0) > abs(c1) + abs(c2) + abs(c3) + eps:
        return 0
    n_crit = _quadratic_roots(3.0 * c3, 2.0 * c2, c1, out, 0)
    k0 = 0.0
    k1 = 2.0
    if n_crit >= 1:
        k0 = out[0]
    if n_crit == 2:
        k1 = out[1]
        if k1 < k0:
            k0, k1 = k1, k0
    n = 0
    lo = 0.0
    for piece in range(3):
        if piece == 0:
            hi = k0 if (n_crit >= 1 and 0.0 < k0 < 1.0) else (k1 if (n_crit == 2 and 0.0 < k1 < 1.0) else 1.0)
        elif piece == 1:
            if hi >= 1.0:
                break
            hi = k1 if (n_crit == 2 and lo < k1 < 1.0) else 1.0
        else:
            if hi >= 1.0:
                break
            hi = 1.0
        flo = _horner(c3, c2, c1, c0, lo)
        fhi = _horner(c3, c2, c1, c0, hi)
        if abs(flo) <= eps:
            if n == 0 or lo - out[n - 1] > 1e-12:
                out[n] = lo
                n += 1
        elif abs(fhi) > eps and (flo > 0.0) != (fhi > 0.0):
            a = lo
            b = hi
            fa = flo
            for _ in range(100):  # bisection on a monotone bracket
                mid = 0.5 * (a + b)
                if mid <= a or mid >= b:
                    break
                fm = _horner(c3, c2, c1, c0, mid)
                if (fm > 0.0) == (fa > 0.0):
                    a = mid
                    fa = fm
                else:
                    b = mid
            r = 0.5 * (a + b)
            if n == 0 or r - out[n - 1] > 1e-12:
                out[n] = r
                n += 1
        lo = hi
    if abs(_horner(c3, c2, c1, c0, 1.0)) <= eps and (n == 0 or 1.0 - out[n - 1] > 1e-12):
        out[n] = 1.0
        n += 1
    return n


# -- coplanar motion --------------------------------------------------------------------------------
@nb.njit(cache=True)
def _collinear_times(p0, p1, a0, a1, b0, b1, out, n):
    """Append times in [0, 1] where a component of (b − a) × (p − a) vanishes (candidate times of
    p crossing the line ab, for motion that keeps all points coplanar)."""
    u0 = _sub(b0, a0)
    du = _sub(_sub(b1, a1), u0)
    v0 = _sub(p0, a0)
    dv = _sub(_sub(p1, a1), v0)
    for k in range(3):
        i = (k + 1) % 3
        j = (k + 2) % 3
        C = u0[i] * v0[j] - u0[j] * v0[i]
        B = (u0[i] * dv[j] - u0[j] * dv[i]) + (du[i] * v0[j] - du[j] * v0[i])
        A = du[i] * dv[j] - du[j] * dv[i]
        n = _quadratic_roots(A, B, C, out, n)
    return n


@nb.njit(cache=True)
def _sort_unique(t, n):
    t[:n] = np.sort(t[:n])
    m = 0
    for i in range(n):
        if m == 0 or t[i] - t[m - 1] > 1e-12:
            t[m] = t[i]
            m += 1
    return m


@nb.njit(cache=True)
def _unit_normal(a, b, c):
    """(unit normal of triangle abc, doubled area); zero normal when degenerate."""
    nrm = _cross(_sub(b, a), _sub(c, a))
    ln = _norm(nrm)
    if ln > 0.0:
        return _mul(nrm, 1.0 / ln), ln
    return nrm, 0.0


@nb.njit(cache=True)
def _shift(omega, tau, start):
    """Proximity shift of each side of a pair, ωτ, capped at _SHIFT_CAP/2 of the pair's distance
    along n0 at the start, so that the shifted pair never starts overlapping: a pair resting at
    distance τ (an active thickness row) with ω = ½ would otherwise start exactly in contact and
    its approach in the next step could be missed (no sign change of the cubic)."""
    return min(omega * tau, 0.5 * _SHIFT_CAP * start)


# -- node–face -----------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _vertex_face(p0, a0, b0, c0, p1, a1, b1, c1, omega, tau, proximity, open_edges, times):
    n0, area0 = _unit_normal(a0, b0, c0)
    n1, area1 = _unit_normal(a1, b1, c1)
    if area0 == 0.0 and area1 == 0.0:
        return _NONE
    if area0 == 0.0:
        n0 = n1
    side = _dot(n0, _sub(p0, a0))
    start = abs(side)
    if side == 0.0:  # on the plane at the start: the side it comes from
        face_move = _mul(_add(_add(_sub(a1, a0), _sub(b1, b0)), _sub(c1, c0)), 1.0 / 3.0)
        rel = _dot(n0, _sub(_sub(p1, p0), face_move))
        side = -rel if rel != 0.0 else 1.0
    if side < 0.0:
        n0 = _mul(n0, -1.0)
    shift = _mul(n0, _shift(omega, tau, start))
    P0 = _sub(p0, shift)
    P1 = _sub(p1, shift)
    A0 = _add(a0, shift)
    A1 = _add(a1, shift)
    B0 = _add(b0, shift)
    B1 = _add(b1, shift)
    C0 = _add(c0, shift)
    C1 = _add(c1, shift)
    c3, c2, cc1, cc0, L = _coefficients(A0, B0, C0, P0, _sub(A1, A0), _sub(B1, B0), _sub(C1, C0), _sub(P1, P0))
    L = max(L, 1e-300)
    eps = _REL_F * L * L * L
    if max(abs(c3), abs(c2), abs(cc1), abs(cc0)) <= eps:
        # coplanar motion: the ends of the step and the times the node crosses an edge line
        times[0] = 0.0
        times[1] = 1.0
        nt = _collinear_times(P0, P1, A0, A1, B0, B1, times, 2)
        nt = _collinear_times(P0, P1, B0, B1, C0, C1, times, nt)
        nt = _collinear_times(P0, P1, C0, C1, A0, A1, times, nt)
        nt = _sort_unique(times, nt)
    else:
        nt = _cubic_roots(c3, c2, cc1, cc0, eps, times)
    for i in range(nt):
        s = times[i]
        dist, u, v, w = _point_triangle(_lerp(P0, P1, s), _lerp(A0, A1, s), _lerp(B0, B1, s), _lerp(C0, C1, s))
        if dist <= _REL_GEO * L:
            ps = _lerp(p0, p1, s)
            as_ = _lerp(a0, a1, s)
            bs = _lerp(b0, b1, s)
            cs = _lerp(c0, c1, s)
            nc, ar = _unit_normal(as_, bs, cs)
            if ar == 0.0:
                nc = n0
            pi0 = _add(_add(_mul(a0, u), _mul(b0, v)), _mul(c0, w))
            h0 = _dot(nc, _sub(p0, pi0))
            flip = h0 < 0.0 if abs(h0) > 1e-12 * L else _dot(nc, n0) < 0.0
            if flip:
                nc = _mul(nc, -1.0)
            d_unshifted = _point_triangle(ps, as_, bs, cs)[0]
            return (1.0, s, 1.0, -u, -v, -w, nc[0], nc[1], nc[2], d_unshifted)
    if not proximity or area1 == 0.0:
        return _NONE
    d = _dot(n1, _sub(p1, a1))
    if abs(d) >= tau:
        return _NONE
    # barycentric coordinates of the projection of p1 on the plane of abc
    e0 = _sub(b1, a1)
    e1 = _sub(c1, a1)
    e2 = _sub(p1, a1)
    d00 = _dot(e0, e0)
    d01 = _dot(e0, e1)
    d11 = _dot(e1, e1)
    d20 = _dot(e2, e0)
    d21 = _dot(e2, e1)
    den = d00 * d11 - d01 * d01
    if den <= 0.0:
        return _NONE
    v = (d11 * d20 - d01 * d21) / den
    w = (d00 * d21 - d01 * d20) / den
    u = 1.0 - v - w
    if u < 0.0 or v < 0.0 or w < 0.0:
        # beyond an edge of abc: a row only when the closest point of the triangle lies inside a
        # free (boundary) edge, within τ; it bounds the distance to that point (see ``vertex_face``)
        dist, u, v, w = _point_triangle(p1, a1, b1, c1)
        if not 0.0 < dist < tau:
            return _NONE
        if not ((u == 0.0 and v > 0.0 and w > 0.0 and open_edges & 1)
                or (v == 0.0 and u > 0.0 and w > 0.0 and open_edges & 2)
                or (w == 0.0 and u > 0.0 and v > 0.0 and open_edges & 4)):
            return _NONE
        q = _add(_add(_mul(a1, u), _mul(b1, v)), _mul(c1, w))
        g = _mul(_sub(p1, q), 1.0 / dist)
        return (2.0, 1.0, 1.0, -u, -v, -w, g[0], g[1], g[2], dist)
    sgn = 1.0 if d > 0.0 else (-1.0 if d < 0.0 else (1.0 if _dot(n1, n0) >= 0.0 else -1.0))
    return (2.0, 1.0, 1.0, -u, -v, -w, sgn * n1[0], sgn * n1[1], sgn * n1[2], abs(d))


# -- edge–edge ----------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _edge_edge(a0, b0, c0, d0, a1, b1, c1, d1, omega, tau, proximity, obstacle, times):
    dist0, al0, be0 = _segment_segment(a0, b0, c0, d0)
    u = _sub(b0, a0)
    v = _sub(d0, c0)
    gap = _sub(_add(a0, _mul(u, al0)), _add(c0, _mul(v, be0)))
    n0 = _cross(u, v)
    nn = _norm(n0)
    if nn > 1e-9 * _norm(u) * _norm(v) and nn > 0.0:
        n0 = _mul(n0, 1.0 / nn)
    elif dist0 > 0.0:
        n0 = _mul(gap, 1.0 / dist0)
    else:  # parallel and touching: any normal of ab
        helper = (1.0, 0.0, 0.0) if abs(u[0]) < 0.9 * _norm(u) else (0.0, 1.0, 0.0)
        n0 = _cross(u, helper)
        nh = _norm(n0)
        if nh == 0.0:
            return _NONE
        n0 = _mul(n0, 1.0 / nh)
    side = _dot(n0, gap)
    start = abs(side)
    if side == 0.0:
        rel = 0.5 * _dot(n0, _sub(_add(_sub(a1, a0), _sub(b1, b0)), _add(_sub(c1, c0), _sub(d1, d0))))
        side = -rel if rel != 0.0 else 1.0
    if side < 0.0:
        n0 = _mul(n0, -1.0)
    shift = _mul(n0, _shift(omega, tau, start))
    A0 = _sub(a0, shift)
    B0 = _sub(b0, shift)
    C0 = _add(c0, shift)
    D0 = _add(d0, shift)
    A1 = _sub(a1, shift)
    B1 = _sub(b1, shift)
    C1 = _add(c1, shift)
    D1 = _add(d1, shift)
    c3, c2, cc1, cc0, L = _coefficients(A0, B0, C0, D0, _sub(A1, A0), _sub(B1, B0), _sub(C1, C0), _sub(D1, D0))
    L = max(L, 1e-300)
    eps = _REL_F * L * L * L
    if max(abs(c3), abs(c2), abs(cc1), abs(cc0)) <= eps:
        times[0] = 0.0
        times[1] = 1.0
        nt = _collinear_times(A0, A1, C0, C1, D0, D1, times, 2)
        nt = _collinear_times(B0, B1, C0, C1, D0, D1, times, nt)
        nt = _collinear_times(C0, C1, A0, A1, B0, B1, times, nt)
        nt = _collinear_times(D0, D1, A0, A1, B0, B1, times, nt)
        nt = _sort_unique(times, nt)
    else:
        nt = _cubic_roots(c3, c2, cc1, cc0, eps, times)
    for i in range(nt):
        s = times[i]
        dist, al, be = _segment_segment(_lerp(A0, A1, s), _lerp(B0, B1, s), _lerp(C0, C1, s), _lerp(D0, D1, s))
        if dist <= _REL_GEO * L:
            as_ = _lerp(a0, a1, s)
            bs = _lerp(b0, b1, s)
            cs = _lerp(c0, c1, s)
            ds = _lerp(d0, d1, s)
            eu = _sub(bs, as_)
            ev = _sub(ds, cs)
            nc = _cross(eu, ev)
            nrm = _norm(nc)
            if not obstacle and nrm <= _PARALLEL * _norm(eu) * _norm(ev):
                continue
            if nrm > 1e-9 * _norm(eu) * _norm(ev) and nrm > 0.0:
                nc = _mul(nc, 1.0 / nrm)
            else:
                nc = n0
            pa = _add(_mul(a0, 1.0 - al), _mul(b0, al))
            pb = _add(_mul(c0, 1.0 - be), _mul(d0, be))
            h0 = _dot(nc, _sub(pa, pb))
            flip = h0 < 0.0 if abs(h0) > 1e-12 * L else _dot(nc, n0) < 0.0
            if flip:
                nc = _mul(nc, -1.0)
            d_unshifted = _segment_segment(as_, bs, cs, ds)[0]
            return (1.0, s, 1.0 - al, al, -(1.0 - be), -be, nc[0], nc[1], nc[2], d_unshifted)
    if not proximity:
        return _NONE
    dist1, al, be = _segment_segment(a1, b1, c1, d1)
    if dist1 >= tau or dist1 == 0.0:
        return _NONE
    if obstacle:
        if al >= 1.0 or be >= 1.0:
            return _NONE
    elif not (_INTERIOR < al < 1.0 - _INTERIOR and _INTERIOR < be < 1.0 - _INTERIOR):
        return _NONE
    elif _norm(_cross(_sub(b1, a1), _sub(d1, c1))) <= _PARALLEL * _norm(_sub(b1, a1)) * _norm(_sub(d1, c1)):
        return _NONE
    g = _mul(_sub(_lerp(a1, b1, al), _lerp(c1, d1, be)), 1.0 / dist1)
    return (2.0, 1.0, 1.0 - al, al, -(1.0 - be), -be, g[0], g[1], g[2], dist1)


# -- array entry points --------------------------------------------------------------------------------
@nb.njit(cache=True)
def _store(res, r):
    for i in range(10):
        res[i] = r[i]


@nb.njit(cache=True)
def coplanarity_coefficients(x1, x2, x3, x4, d1, d2, d3, d4, out):
    """out ← (a3, a2, a1, a0) of the coplanarity cubic for positions x (3,) and displacements d (3,);
    returns the scale L."""
    a3, a2, a1, a0, L = _coefficients(_v(x1), _v(x2), _v(x3), _v(x4), _v(d1), _v(d2), _v(d3), _v(d4))
    out[0], out[1], out[2], out[3] = a3, a2, a1, a0
    return L


@nb.njit(cache=True)
def cubic_roots_unit(c, eps, out):
    """Roots of c[0] s³ + c[1] s² + c[2] s + c[3] in [0, 1], ascending, into out (≥ 4); returns the count."""
    return _cubic_roots(c[0], c[1], c[2], c[3], eps, out)


@nb.njit(cache=True)
def point_triangle_weights(p, a, b, c, w):
    """w ← barycentric weights (3,) of the closest point of triangle abc to p; returns the distance."""
    d, u, v, ww = _point_triangle(_v(p), _v(a), _v(b), _v(c))
    w[0], w[1], w[2] = u, v, ww
    return d


@nb.njit(cache=True)
def segment_segment_params(p1, q1, p2, q2, st):
    """st ← (α, β) of the closest points of segments p1q1, p2q2; returns the distance."""
    d, s, t = _segment_segment(_v(p1), _v(q1), _v(p2), _v(q2))
    st[0], st[1] = s, t
    return d


@nb.njit(cache=True)
def vertex_face(p0, a0, b0, c0, p1, a1, b1, c1, omega, tau, proximity, open_edges, res):
    """Node p against triangle abc moving linearly from (·0) to (·1) over the step; res (10,) ← record.

    CCD (seed 000 §3.1, §3.3): the start-time normal n0 of abc, oriented towards p, gives the
    proximity shift p̂ = p − ωτ n0, â, b̂, ĉ = · + ωτ n0 (the pair approaches by 2ωτ); the
    coplanarity cubic of the shifted points is solved and the first root where the shifted node
    is within _REL_GEO·L of the shifted triangle is the collision. Weights u, v, w (closest
    point) and the unit normal of abc are frozen at that time, and ν is oriented so that
    H(φⁿ) = ν·(p0 − (u a0 + v b0 + w c0)) ≥ 0 (seed 000 §3.2).

    Proximity (``proximity`` and no CCD hit): node within τ of the plane of abc at the end, its
    projection inside the triangle; ν is the end normal on the node's side at the end (no
    crossing happened, so that side is the right one). Weights are (1, −u, −v, −w).
    ``open_edges`` (int bit mask; bit k: the edge opposite vertex k of abc is a free boundary
    edge of the mesh): a node whose projection falls beyond such an edge, and whose closest point
    q of the triangle lies inside that edge within τ, gets a node–edge row: weights (1, −u, −v, −w)
    of q (one of them 0) and ν = (p − q)/‖p − q‖, so H is the distance to the edge. A node just
    beyond a layer's free edge has no other row (its edge pairs have their closest point at the
    node). Interior edges stay closed (the face across them holds the node; a second row would
    make the QP degenerate), and so do the vertices, which several triangles share.
    """
    times = np.empty(_WORK)
    _store(res, _vertex_face(_v(p0), _v(a0), _v(b0), _v(c0), _v(p1), _v(a1), _v(b1), _v(c1), omega, tau,
                             proximity, open_edges, times))


@nb.njit(cache=True)
def edge_edge(a0, b0, c0, d0, a1, b1, c1, d1, omega, tau, proximity, obstacle, res):
    """Edge ab against edge cd moving linearly over the step; res (10,) ← record.

    CCD as in ``vertex_face`` with the start-time normal n0 of the pair (the normalised cross
    product of the edges, or the direction between their closest points when they are
    parallel), oriented from cd towards ab; ab is shifted by −ωτ n0 and cd by +ωτ n0. At the
    first root where the shifted edges are within _REL_GEO·L, α, β (closest points) and
    ν = (b − a) × (d − c)/‖·‖ are frozen and ν is oriented so that
    H(φⁿ) = ν·((1−α)a0 + αb0 − (1−β)c0 − βd0) ≥ 0 (seed 000 §3.2).

    Proximity: closest points at the end within τ with both parameters in (δ, 1 − δ) (or in
    [0, 1) when ``obstacle``: the pieces of an obstacle chain must not leave gaps at their joints);
    ν = direction between the closest points (ab side positive). Weights are (1 − α, α, −(1 − β), −β).
    """
    times = np.empty(_WORK)
    _store(res, _edge_edge(_v(a0), _v(b0), _v(c0), _v(d0), _v(a1), _v(b1), _v(c1), _v(d1), omega, tau,
                           proximity, obstacle, times))


@nb.njit(cache=True)
def _row(x, i):
    return (x[i, 0], x[i, 1], x[i, 2])


@nb.njit(cache=True)
def vertex_face_batch(x0, x1, quads, tau, omega, proximity, open_edges, out):
    """Records of ``vertex_face`` for pairs quads (p, 4) = (node, a, b, c) with free-edge masks
    open_edges (p,) int64 into out (p, 10)."""
    times = np.empty(_WORK)
    for k in range(quads.shape[0]):
        v, a, b, c = quads[k, 0], quads[k, 1], quads[k, 2], quads[k, 3]
        r = _vertex_face(_row(x0, v), _row(x0, a), _row(x0, b), _row(x0, c), _row(x1, v), _row(x1, a),
                         _row(x1, b), _row(x1, c), omega, tau[k], proximity, open_edges[k], times)
        for i in range(10):
            out[k, i] = r[i]


@nb.njit(cache=True)
def edge_edge_batch(x0, x1, quads, tau, omega, proximity, obstacle, out):
    """Records of ``edge_edge`` for pairs quads (p, 4) = (a, b, c, d) into out (p, 10)."""
    times = np.empty(_WORK)
    for k in range(quads.shape[0]):
        a, b, c, d = quads[k, 0], quads[k, 1], quads[k, 2], quads[k, 3]
        r = _edge_edge(_row(x0, a), _row(x0, b), _row(x0, c), _row(x0, d), _row(x1, a), _row(x1, b),
                       _row(x1, c), _row(x1, d), omega, tau[k], proximity, obstacle[k], times)
        for i in range(10):
            out[k, i] = r[i]


@nb.njit(cache=True)
def pair_distances_kernel(x, vf, ee, out_vf, out_ee):
    """Distances of node–face pairs vf (p, 4) = (node, a, b, c) and edge pairs ee (q, 4) = (a, b, c, d)."""
    for k in range(vf.shape[0]):
        out_vf[k] = _point_triangle(_row(x, vf[k, 0]), _row(x, vf[k, 1]), _row(x, vf[k, 2]), _row(x, vf[k, 3]))[0]
    for k in range(ee.shape[0]):
        out_ee[k] = _segment_segment(_row(x, ee[k, 0]), _row(x, ee[k, 1]), _row(x, ee[k, 2]), _row(x, ee[k, 3]))[0]
