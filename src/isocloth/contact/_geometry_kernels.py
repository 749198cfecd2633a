"""Numba geometry helpers on 3-tuples: vector algebra and closest points (private; used by
``_ccd_kernels``). Tuples keep the per-pair kernels free of heap allocations."""

import math

import numba as nb


# -- 3-tuple vector helpers ------------------------------------------------------------------------
@nb.njit(cache=True)
def _v(a):
    return (a[0], a[1], a[2])


@nb.njit(cache=True)
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@nb.njit(cache=True)
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@nb.njit(cache=True)
def _mul(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@nb.njit(cache=True)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@nb.njit(cache=True)
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@nb.njit(cache=True)
def _norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@nb.njit(cache=True)
def _lerp(a, b, s):
    return (a[0] + s * (b[0] - a[0]), a[1] + s * (b[1] - a[1]), a[2] + s * (b[2] - a[2]))


@nb.njit(cache=True)
def _det(a, b, c):
    return _dot(a, _cross(b, c))


@nb.njit(cache=True)
def _maxabs(a):
    return max(abs(a[0]), abs(a[1]), abs(a[2]))


# -- closest points ---------------------------------------------------------------------------------
@nb.njit(cache=True)
def _point_triangle(p, a, b, c):
    """(distance, u, v, w): barycentric weights of the point of closed triangle abc closest to p.
    Regions (vertex, edge, interior) are classified by the signs of dot products."""
    ab = _sub(b, a)
    ac = _sub(c, a)
    ap = _sub(p, a)
    bp = _sub(p, b)
    cp = _sub(p, c)
    d1 = _dot(ab, ap)
    d2 = _dot(ac, ap)
    d3 = _dot(ab, bp)
    d4 = _dot(ac, bp)
    d5 = _dot(ab, cp)
    d6 = _dot(ac, cp)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    if d1 <= 0.0 and d2 <= 0.0:
        u, v, w = 1.0, 0.0, 0.0
    elif d3 >= 0.0 and d4 <= d3:
        u, v, w = 0.0, 1.0, 0.0
    elif d6 >= 0.0 and d5 <= d6:
        u, v, w = 0.0, 0.0, 1.0
    elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        u, v, w = 1.0 - t, t, 0.0
    elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        u, v, w = 1.0 - t, 0.0, t
    elif va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        u, v, w = 0.0, 1.0 - t, t
    else:
        tot = va + vb + vc
        if tot <= 0.0:  # degenerate triangle
            u, v, w = 1.0, 0.0, 0.0
        else:
            v = vb / tot
            w = vc / tot
            u = 1.0 - v - w
    q = _sub(_add(_add(_mul(a, u), _mul(b, v)), _mul(c, w)), p)
    return _norm(q), u, v, w


@nb.njit(cache=True)
def _segment_segment(p1, q1, p2, q2):
    """(distance, α, β): closest points p1 + α(q1 − p1), p2 + β(q2 − p2), α, β ∈ [0, 1]. Parallel
    segments get one of the closest pairs."""
    d1 = _sub(q1, p1)
    d2 = _sub(q2, p2)
    r = _sub(p1, p2)
    a = _dot(d1, d1)
    e = _dot(d2, d2)
    f = _dot(d2, r)
    tiny = 1e-300
    if a <= tiny and e <= tiny:
        s = 0.0
        t = 0.0
    elif a <= tiny:
        s = 0.0
        t = min(max(f / e, 0.0), 1.0)
    else:
        c = _dot(d1, r)
        if e <= tiny:
            t = 0.0
            s = min(max(-c / a, 0.0), 1.0)
        else:
            b = _dot(d1, d2)
            den = a * e - b * b
            s = min(max((b * f - c * e) / den, 0.0), 1.0) if den > 1e-14 * a * e else 0.0
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(max(-c / a, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((b - c) / a, 0.0), 1.0)
    g = _sub(_add(p1, _mul(d1, s)), _add(p2, _mul(d2, t)))
    return _norm(g), s, t
