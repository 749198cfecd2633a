"""Flat test meshes: rectangles (structured and irregular), disks, annuli; noise.

Every generator returns a :class:`~isocloth.mesh.mesh.Mesh` whose ``rest_vertices`` are the
generated flat geometry (so later changes of ``vertices`` keep the rest shape) and whose
faces are counter-clockwise about the plane's normal: +z for plane "xy", −y for plane "xz".
All lengths are in metres.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import Delaunay

from isocloth.mesh.mesh import Mesh, MeshError

__all__ = ["rectangle", "disk", "annulus", "irregular_rectangle", "perturbed", "smooth_random_field", "MAX_NODES"]

_ELEMENTS = ("quad", "triangle")
_PLANES = ("xy", "xz")

MAX_NODES = 1_000_000
"""Largest number of nodes a generator makes. Building a simulation takes about 7 kB of memory per
node (a 300 × 300 sheet: 0.9 GB), so a million nodes already need several GB; larger requests
(e.g. a typo in nx) are refused before any memory is allocated."""


def _check_size(count: int, what: str) -> None:
    """MeshError when a generator would make more than MAX_NODES nodes (``what``: how they are counted)."""
    if count > MAX_NODES:
        raise MeshError(f"{what} = {count:,} nodes is more than the {MAX_NODES:,} nodes a generated mesh may have "
                        "(about 7 kB of memory per node): use fewer nodes")


def _check_seed(seed) -> int:
    """The seed as an int >= 0 (numpy's generators take no negative seed), else MeshError."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise MeshError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def _check_choice(value: str, options: tuple[str, ...], what: str) -> None:
    if value not in options:
        raise MeshError(f"{what} must be one of {options}, got {value!r}")


def _embed(u: np.ndarray, v: np.ndarray, plane: str, center) -> np.ndarray:
    """Plane coordinates (u, v) [m] to 3-D points (k, 3): xy -> (u, v, 0), xz -> (u, 0, v)."""
    _check_choice(plane, _PLANES, "plane")
    zero = np.zeros_like(u)
    pts = np.stack([u, v, zero] if plane == "xy" else [u, zero, v], axis=1)
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (3,):
        raise MeshError(f"center must be 3 coordinates [m], got {center!r}")
    return pts + c


def _split_quads(quads: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """Triangles (2q, 3) of CCW quads (q, 4): diagonal 0–2 where ``flip`` is False, else 1–3."""
    a, b, c, d = quads.T
    t1 = np.where(flip[:, None], np.stack([a, b, d], 1), np.stack([a, b, c], 1))
    t2 = np.where(flip[:, None], np.stack([b, c, d], 1), np.stack([a, c, d], 1))
    return np.stack([t1, t2], axis=1).reshape(-1, 3)


def _flat_mesh(points: np.ndarray, triangles=None, quads=None, name: str = "mesh") -> Mesh:
    return Mesh(points, triangles, quads, rest_vertices=points, name=name)


def rectangle(width: float, height: float, nx: int, ny: int, *, element: str = "quad",
              plane: str = "xy", center=(0.0, 0.0, 0.0), name: str | None = None) -> Mesh:
    """A structured grid on a ``width`` × ``height`` rectangle.

    Node ``j * nx + i`` sits at u = −w/2 + i w/(nx−1), v = −h/2 + j h/(ny−1) (i along the
    width, j along the height, j = 0 the bottom row v = −h/2). Plane "xy" maps (u, v) to
    (u, v, 0); plane "xz" maps it to (u, 0, v), a vertical sheet with row j = ny − 1 on top.
    Quads are ``(i, j), (i+1, j), (i+1, j+1), (i, j+1)``; triangles split each cell along
    alternating diagonals (checkerboard), which avoids a directional bias.

    Parameters
    ----------
    width, height : float
        Side lengths [m], > 0.
    nx, ny : int
        Nodes along the width and the height, >= 2.
    element : {"quad", "triangle"}
    plane : {"xy", "xz"}
    center : (3,) float [m]
        Position of the rectangle's centre.
    name : str, optional

    Returns
    -------
    Mesh
        ``nx * ny`` nodes and ``(nx−1)(ny−1)`` quads or twice as many triangles.

    Raises
    ------
    MeshError
        For non-positive sizes, fewer than 2 nodes per side, more than ``MAX_NODES`` nodes, or an
        unknown element/plane.
    """
    if not (width > 0 and height > 0):
        raise MeshError(f"rectangle sizes must be > 0 m, got width={width}, height={height}")
    if int(nx) != nx or int(ny) != ny or nx < 2 or ny < 2:
        raise MeshError(f"rectangle needs nx, ny >= 2 nodes per side, got nx={nx}, ny={ny}")
    nx, ny = int(nx), int(ny)
    _check_size(nx * ny, f"nx·ny = {nx}·{ny}")
    _check_choice(element, _ELEMENTS, "element")
    u = np.linspace(-width / 2, width / 2, nx)
    v = np.linspace(-height / 2, height / 2, ny)
    uu, vv = np.meshgrid(u, v)  # (ny, nx): row j, column i
    pts = _embed(uu.ravel(), vv.ravel(), plane, center)
    i, j = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1))
    i, j = i.ravel(), j.ravel()
    a = j * nx + i
    quads = np.stack([a, a + 1, a + 1 + nx, a + nx], axis=1).astype(np.int64)
    name = name or f"rectangle {width:g}x{height:g} m, {nx}x{ny} nodes"
    if element == "quad":
        return _flat_mesh(pts, quads=quads, name=name)
    return _flat_mesh(pts, triangles=_split_quads(quads, (i + j) % 2 == 1), name=name)


def _ring_cells(first_ring: int, rings: int, n_angular: int) -> tuple[np.ndarray, np.ndarray]:
    """CCW quads between consecutive rings of ``n_angular`` nodes (ring k starts at node
    ``first_ring + k * n_angular``) and the checkerboard flags for splitting them."""
    k, a = np.meshgrid(np.arange(rings - 1), np.arange(n_angular), indexing="ij")
    k, a = k.ravel(), a.ravel()
    inner = first_ring + k * n_angular
    outer = inner + n_angular
    a1 = (a + 1) % n_angular
    quads = np.stack([inner + a, outer + a, outer + a1, inner + a1], axis=1).astype(np.int64)
    return quads, (a + k) % 2 == 1


def _polar(radii: np.ndarray, n_angular: int) -> tuple[np.ndarray, np.ndarray]:
    theta = 2.0 * np.pi * np.arange(n_angular) / n_angular
    r, t = np.meshgrid(radii, theta, indexing="ij")
    return (r * np.cos(t)).ravel(), (r * np.sin(t)).ravel()


def disk(radius: float, n_radial: int, n_angular: int, *, element: str = "triangle",
         center=(0.0, 0.0, 0.0), name: str | None = None) -> Mesh:
    """A flat disk in the xy plane: a centre node plus ``n_radial`` rings.

    Node 0 is the centre; ring k = 1..n_radial (radius k·radius/n_radial) holds nodes
    ``1 + (k−1)·n_angular + a`` at angle 2πa/n_angular. The last ring is the boundary. The
    centre fan is made of triangles; the bands between rings are quads (element="quad") or
    quads split along alternating diagonals (element="triangle").

    Parameters
    ----------
    radius : float
        Radius [m], > 0.
    n_radial : int
        Number of rings, >= 1.
    n_angular : int
        Nodes per ring, >= 3.
    element : {"triangle", "quad"}
    center : (3,) float [m]
    name : str, optional

    Returns
    -------
    Mesh
        ``1 + n_radial * n_angular`` nodes.

    Raises
    ------
    MeshError
        For a non-positive radius, n_radial < 1, n_angular < 3 or an unknown element.
    """
    if not radius > 0:
        raise MeshError(f"disk radius must be > 0 m, got {radius}")
    if n_radial < 1 or n_angular < 3:
        raise MeshError(f"disk needs n_radial >= 1 and n_angular >= 3, got {n_radial}, {n_angular}")
    _check_choice(element, _ELEMENTS, "element")
    n_radial, n_angular = int(n_radial), int(n_angular)
    _check_size(1 + n_radial * n_angular, f"1 + n_radial·n_angular = 1 + {n_radial}·{n_angular}")
    u, v = _polar(radius * np.arange(1, n_radial + 1) / n_radial, n_angular)
    pts = _embed(np.concatenate([[0.0], u]), np.concatenate([[0.0], v]), "xy", center)
    a = np.arange(n_angular)
    fan = np.stack([np.zeros(n_angular, np.int64), 1 + a, 1 + (a + 1) % n_angular], axis=1)
    quads, flip = _ring_cells(1, n_radial, n_angular)
    name = name or f"disk r={radius:g} m, {n_radial}x{n_angular}"
    if element == "quad":
        return _flat_mesh(pts, triangles=fan, quads=quads, name=name)
    return _flat_mesh(pts, triangles=np.concatenate([fan, _split_quads(quads, flip)]), name=name)


def annulus(r_inner: float, r_outer: float, n_radial: int, n_angular: int, *,
            element: str = "quad", center=(0.0, 0.0, 0.0), name: str | None = None) -> Mesh:
    """A flat ring in the xy plane between radii ``r_inner`` and ``r_outer``.

    Ring k = 0..n_radial−1 (equally spaced radii) holds nodes ``k·n_angular + a`` at angle
    2πa/n_angular: ring 0 (nodes 0..n_angular−1) is the inner boundary, the last ring the
    outer one.

    Parameters
    ----------
    r_inner, r_outer : float
        Radii [m], 0 < r_inner < r_outer.
    n_radial : int
        Number of node rings, >= 2.
    n_angular : int
        Nodes per ring, >= 3.
    element : {"quad", "triangle"}
        Quads, or quads split along alternating diagonals.
    center : (3,) float [m]
    name : str, optional

    Returns
    -------
    Mesh
        ``n_radial * n_angular`` nodes.

    Raises
    ------
    MeshError
        For radii not satisfying 0 < r_inner < r_outer, too few rings/nodes, or an unknown
        element.
    """
    if not 0 < r_inner < r_outer:
        raise MeshError(f"annulus needs 0 < r_inner < r_outer [m], got {r_inner}, {r_outer}")
    if n_radial < 2 or n_angular < 3:
        raise MeshError(f"annulus needs n_radial >= 2 and n_angular >= 3, got {n_radial}, {n_angular}")
    _check_choice(element, _ELEMENTS, "element")
    n_radial, n_angular = int(n_radial), int(n_angular)
    _check_size(n_radial * n_angular, f"n_radial·n_angular = {n_radial}·{n_angular}")
    u, v = _polar(np.linspace(r_inner, r_outer, n_radial), n_angular)
    pts = _embed(u, v, "xy", center)
    quads, flip = _ring_cells(0, n_radial, n_angular)
    name = name or f"annulus {r_inner:g}-{r_outer:g} m, {n_radial}x{n_angular}"
    if element == "quad":
        return _flat_mesh(pts, quads=quads, name=name)
    return _flat_mesh(pts, triangles=_split_quads(quads, flip), name=name)


def band(radius: float, width: float, n_across: int, n_around: int, *, element: str = "triangle",
         center=(0.0, 0.0, 0.0), name: str | None = None) -> Mesh:
    """A closed band (a belt): the side of a cylinder of ``radius`` about the y axis, ``width`` long
    along it, with the cylinder as rest shape. Row k = 0..n_across−1 (at y = −width/2 … width/2)
    holds nodes ``k·n_around + a`` at angle 2πa/n_around in the xz plane (x = r cos, z = r sin).

    Parameters
    ----------
    radius, width : float [m], > 0
    n_across : int, node rows across the band, >= 2
    n_around : int, nodes per row, >= 3
    element : {"quad", "triangle"}
    center : (3,) float [m]
    name : str, optional

    Raises
    ------
    MeshError
        For a non-positive radius or width, too few nodes, or an unknown element.
    """
    if not (radius > 0 and width > 0):
        raise MeshError(f"band needs radius > 0 and width > 0 [m], got {radius}, {width}")
    if n_across < 2 or n_around < 3:
        raise MeshError(f"band needs n_across >= 2 and n_around >= 3, got {n_across}, {n_around}")
    _check_choice(element, _ELEMENTS, "element")
    n_across, n_around = int(n_across), int(n_around)
    _check_size(n_across * n_around, f"n_across·n_around = {n_across}·{n_around}")
    theta = 2.0 * np.pi * np.arange(n_around) / n_around
    y, t = np.meshgrid(np.linspace(-0.5 * width, 0.5 * width, n_across), theta, indexing="ij")
    pts = np.stack([radius * np.cos(t).ravel(), y.ravel(), radius * np.sin(t).ravel()], axis=1)
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (3,):
        raise MeshError(f"center must be 3 coordinates [m], got {center!r}")
    quads, flip = _ring_cells(0, n_across, n_around)
    name = name or f"band r={radius:g} m, {width:g} m wide, {n_across}x{n_around}"
    if element == "quad":
        return _flat_mesh(pts + c, quads=quads, name=name)
    return _flat_mesh(pts + c, triangles=_split_quads(quads, flip), name=name)


def leaning_cards(width: float, height: float, angle: float, gap: float, nx: int, ny: int, *,
                  name: str | None = None) -> Mesh:
    """Two flat cards leaning on each other on the floor z = 0, the unit of a house of cards: each
    ``width`` × ``height``, its height tilted by ``angle`` from the vertical, card A (nodes 0 …
    nx·ny − 1) rising from x < 0, card B from x > 0, their top edges along the y axis. B's face passes
    ``gap`` from A's top edge; both bottom edges stand ``gap``/2 above the floor. Each card is the
    :func:`rectangle` grid (triangles; i along the width, j up the card) and its own rest shape.

    Parameters
    ----------
    width, height : float [m], > 0
    angle : float [rad], in (0, π/2): tilt of each card from the vertical
    gap : float [m], ≥ 0: contact thickness between the cards (and to the floor)
    nx, ny : int, nodes along the width and up each card, >= 2
    name : str, optional

    Raises
    ------
    MeshError
        For non-positive sizes, an angle outside (0, π/2), a negative gap or too few nodes.
    """
    if not (width > 0 and height > 0 and 0 < angle < 0.5 * np.pi and gap >= 0):
        raise MeshError(f"leaning cards need width, height > 0 [m], 0 < angle < π/2 [rad] and gap >= 0 [m], got "
                        f"{width}, {height}, {angle}, {gap}")
    if nx < 2 or ny < 2:
        raise MeshError(f"leaning cards need nx, ny >= 2, got {nx}, {ny}")
    _check_size(2 * int(nx) * int(ny), f"2·nx·ny = 2·{nx}·{ny}")
    flat = rectangle(width, height, nx, ny, element="triangle")
    y, s = flat.vertices[:, 0], flat.vertices[:, 1] + 0.5 * height  # s: distance up the card
    sin, cos = np.sin(angle), np.cos(angle)
    z = s * cos + 0.5 * gap
    a = np.stack([(s - height) * sin, y, z], axis=1)  # A's top edge on x = 0
    # B: the mirror line x = c − s sin, its face ``gap`` from A's top edge (0, height cos + gap/2)
    c = gap / cos + height * sin
    b = np.stack([c - s * sin, y, z], axis=1)
    b_tri = flat.triangles[:, ::-1] + flat.node_count  # mirrored: keep the normals facing out of the tent
    name = name or f"leaning cards {width:g} x {height:g} m at {np.degrees(angle):g} deg, {nx}x{ny} each"
    return _flat_mesh(np.vstack([a, b]), triangles=np.vstack([flat.triangles, b_tri]), name=name)


# ------------------------------------------------------------ irregular mesh
def _unique_edges(simplices: np.ndarray) -> np.ndarray:
    e = np.concatenate([simplices[:, [0, 1]], simplices[:, [1, 2]], simplices[:, [2, 0]]])
    return np.unique(np.sort(e, axis=1), axis=0)


def _relaxed(x: np.ndarray, n_fixed: int, lo: np.ndarray, hi: np.ndarray, iterations: int) -> np.ndarray:
    """Spread the free points (rows ``n_fixed:``) evenly by edge repulsion (as in DistMesh),
    keeping them inside the box ``lo..hi``."""
    x = x.copy()
    n = x.shape[0]
    for _ in range(iterations):
        e = _unique_edges(Delaunay(x).simplices)
        d = x[e[:, 1]] - x[e[:, 0]]
        length = np.linalg.norm(d, axis=1)
        target = 1.2 * np.sqrt(np.mean(length**2))
        f = d * (np.maximum(target - length, 0.0) / np.maximum(length, 1e-300))[:, None]
        move = np.stack([np.bincount(e[:, 1], f[:, c], n) - np.bincount(e[:, 0], f[:, c], n)
                         for c in range(2)], axis=1)
        x[n_fixed:] = np.clip(x[n_fixed:] + 0.2 * move[n_fixed:], lo, hi)
    return x


def _perimeter_points(width: float, height: float, nx: int, ny: int, jitter: float, rng) -> np.ndarray:
    """CCW points on the rectangle boundary, nx segments per horizontal and ny per vertical
    side, starting at the lower-left corner; non-corner points jittered along their side."""
    sides = [((-1, -1), (1, -1), nx), ((1, -1), (1, 1), ny), ((1, 1), (-1, 1), nx), ((-1, 1), (-1, -1), ny)]
    half = np.array([width / 2, height / 2])
    out = []
    for p, q, m in sides:
        s = np.arange(m, dtype=np.float64)
        s[1:] += rng.uniform(-jitter, jitter, m - 1)
        s /= m
        out.append(np.asarray(p) * half + s[:, None] * (np.asarray(q) - np.asarray(p)) * half)
    return np.concatenate(out)


def irregular_rectangle(width: float, height: float, node_count: int, *, seed: int = 0,
                        plane: str = "xy", center=(0.0, 0.0, 0.0), name: str | None = None) -> Mesh:
    """An unstructured triangulation of a ``width`` × ``height`` rectangle with exactly
    ``node_count`` nodes.

    Boundary nodes (the 4 corners included, listed first, counter-clockwise from the lower
    left corner) are spaced about uniformly along the perimeter; interior nodes start from a
    seeded jittered hexagonal pattern of similar spacing and are spread evenly by a few
    DistMesh-like relaxation steps; scipy's Delaunay triangulation then connects them. The
    result is deterministic for a given seed, counter-clockwise about the plane normal and
    free of degenerate triangles. Coordinates and plane as for :func:`rectangle`.

    Parameters
    ----------
    width, height : float
        Side lengths [m], > 0.
    node_count : int
        Number of nodes, >= 4.
    seed : int
        Seed of the random generator, >= 0.
    plane : {"xy", "xz"}
    center : (3,) float [m]
    name : str, optional

    Returns
    -------
    Mesh
        A triangle mesh with ``node_count`` nodes.

    Raises
    ------
    MeshError
        For non-positive sizes, node_count < 4 or above ``MAX_NODES``, a negative seed, or (should
        not happen) a triangulation that leaves a node unused.
    """
    if not (width > 0 and height > 0):
        raise MeshError(f"rectangle sizes must be > 0 m, got width={width}, height={height}")
    if int(node_count) != node_count or node_count < 4:
        raise MeshError(f"irregular_rectangle needs node_count >= 4, got {node_count}")
    _check_choice(plane, _PLANES, "plane")
    n = int(node_count)
    _check_size(n, "node_count")
    rng = np.random.default_rng(_check_seed(seed))
    area, perim = width * height, 2.0 * (width + height)
    dens = 2.0 / np.sqrt(3.0)  # nodes per h^2 of a hexagonal pattern
    # n ~ dens * area / h^2 + perim / (2 h): solve for s = 1 / h
    s = (-perim / 2 + np.sqrt(perim**2 / 4 + 4 * dens * area * n)) / (2 * dens * area)
    h = 1.0 / s
    nx, ny = max(1, round(width / h)), max(1, round(height / h))
    while 2 * (nx + ny) > n:
        if nx >= ny and nx > 1:
            nx -= 1
        else:
            ny -= 1
    boundary = _perimeter_points(width, height, nx, ny, 0.15, rng)
    n_inner = n - boundary.shape[0]
    half = np.array([width / 2, height / 2])
    margin = np.minimum(0.3 * h, 0.25 * half)
    lo, hi = -half + margin, half - margin
    if n_inner > 0:
        dy = h * np.sqrt(3.0) / 2
        rows = np.arange(-half[1] + h / 2, half[1] - h / 4, dy)
        cand = []
        for r, y in enumerate(rows):
            xs = np.arange(-half[0] + h / 2 + (r % 2) * h / 2, half[0] - h / 4, h)
            cand.append(np.stack([xs, np.full_like(xs, y)], axis=1))
        grid = np.concatenate(cand) if cand else np.zeros((0, 2))
        if grid.shape[0] >= n_inner:
            grid = grid[np.sort(rng.choice(grid.shape[0], n_inner, replace=False))]
        else:
            grid = np.concatenate([grid, rng.uniform(lo, hi, (n_inner - grid.shape[0], 2))])
        grid = np.clip(grid + rng.uniform(-0.2 * h, 0.2 * h, grid.shape), lo, hi)
        pts = _relaxed(np.concatenate([boundary, grid]), boundary.shape[0], lo, hi, 30)
    else:
        pts = boundary
    tri = Delaunay(pts).simplices.astype(np.int64)
    p = pts[tri]
    d1, d2 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
    signed = 0.5 * (d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0])
    keep = np.abs(signed) > 1e-12 * max(1.0, area)
    tri, signed = tri[keep], signed[keep]
    tri[signed < 0] = tri[signed < 0][:, ::-1]
    missing = np.setdiff1d(np.arange(n), tri)
    if missing.size:
        raise MeshError(f"irregular_rectangle left node {missing[0]} unused; try another seed or node_count")
    name = name or f"irregular rectangle {width:g}x{height:g} m, {n} nodes (seed {seed})"
    return _flat_mesh(_embed(pts[:, 0], pts[:, 1], plane, center), triangles=tri, name=name)


def smooth_random_field(points: np.ndarray, wavelength: float, rng: np.random.Generator,
                        features: int = 512) -> np.ndarray:
    """Unit-variance smooth Gaussian random vector field at ``points`` (random Fourier features).

    f_d(p) = √(2/N) Σ_j cos(ω_jd · p + b_jd), ω ~ N(0, I/ℓ²), b ~ U(0, 2π): approximately a
    Gaussian process with squared-exponential covariance of length ℓ (Rahimi & Recht 2007).

    Parameters
    ----------
    points : (n, 3) float64 [m]
    wavelength : float, ℓ [m] (> 0)
    rng : numpy Generator (the field depends only on its state, not on the points)
    features : int, N per coordinate

    Returns
    -------
    (n, 3) float64, dimensionless, each component of variance ≈ 1.
    """
    omega = rng.normal(0.0, 1.0 / wavelength, size=(3, features, 3))
    phase = rng.uniform(0.0, 2.0 * np.pi, size=(3, features))
    p = np.asarray(points, dtype=np.float64)
    return np.stack([np.sqrt(2.0 / features) * np.cos(p @ omega[d].T + phase[d]).sum(axis=1) for d in range(3)], 1)


def perturbed(mesh: Mesh, sigma: float, seed: int = 0, *, rest: str = "keep", wavelength: float = 0.0) -> Mesh:
    """The mesh with Gaussian noise added to its current vertices.

    With ``rest="keep"`` the rest shape stays as it was (the noise is a strain the dynamics
    must undo); with ``rest="perturbed"`` the noisy shape becomes the rest shape too (a sheet
    that is not perfectly flat, as in the thesis' locking test, §2.7.1).

    Parameters
    ----------
    mesh : Mesh
    sigma : float
        Standard deviation [m] of each coordinate's noise, >= 0.
    seed : int
        Seed of the random generator, >= 0.
    rest : "keep" | "perturbed"
    wavelength : float
        0 (default): independent noise per vertex, so each mesh gets its own realisation. > 0 [m]:
        a smooth Gaussian random field with this correlation length (random Fourier features,
        512 per coordinate, frequencies ~ N(0, 1/wavelength²)), evaluated at each vertex's
        position: every mesh of the same surface gets the *same* perturbation for a given seed,
        so results on different meshes are comparable (mesh-convergence studies such as the
        Cusick drape test), and no node-level roughness is added.

    Returns
    -------
    Mesh
        Same faces; rest shape kept (``rest_vertices`` set to the old vertices when the mesh
        had no explicit rest shape) or replaced by the noisy shape.

    Raises
    ------
    MeshError
        For a negative or non-finite sigma, or a negative seed.
    """
    if not (np.isfinite(sigma) and sigma >= 0):
        raise MeshError(f"noise sigma must be a finite length >= 0 m, got {sigma}")
    if rest not in ("keep", "perturbed"):
        raise MeshError(f"rest must be 'keep' or 'perturbed', got {rest!r}")
    if not (np.isfinite(wavelength) and wavelength >= 0):
        raise MeshError(f"noise wavelength must be a finite length >= 0 m, got {wavelength}")
    rng = np.random.default_rng(_check_seed(seed))
    if wavelength > 0:
        changes = {"vertices": mesh.vertices + sigma * smooth_random_field(mesh.vertices, wavelength, rng)}
    else:
        changes = {"vertices": mesh.vertices + rng.normal(0.0, sigma, mesh.vertices.shape)}
    if rest == "perturbed":
        if mesh.has_per_corner_rest:
            raise MeshError("rest='perturbed' needs a mesh without per-corner rest coordinates")
        changes["rest_vertices"] = changes["vertices"]
    elif mesh.rest_vertices is None and not mesh.has_per_corner_rest:
        changes["rest_vertices"] = mesh.vertices
    return mesh.replace(**changes)
