"""Markers ↔ mesh: arrange cloth markers on the textile's grid and refine it into the simulation mesh.

In the thesis' motion-capture experiments (§4.2, seed 000 §7.2) the markers sit equidistantly on
a structured grid covering the whole textile, corners included: 4×5 markers on A2, 3×4 on A3.
The simulation mesh is a refinement of that grid (one midpoint refinement: 7×9 and 5×7), so every
marker is a mesh node and the errors are computed at those nodes.

Grid convention (as :func:`isocloth.mesh.generators.rectangle`): a grid of ``nx`` markers along
the width and ``ny`` along the height; marker ``j * nx + i`` is column i, row j, with row 0 the
lowest row of a hanging textile and columns increasing along +x (or +y when the textile faces x).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isocloth.validation.recordings import RecordingError

__all__ = ["MarkerGrid", "MarkerOrderError", "infer_grid_shape", "order_markers", "refined_shape",
           "grid_marker_nodes", "interpolate_grid", "estimate_size", "marker_weights"]


class MarkerOrderError(RecordingError):
    """The markers could not be arranged on the grid; pass the order explicitly."""


@dataclass(frozen=True)
class MarkerGrid:
    """Markers arranged as the nodes of an ``nx`` × ``ny`` structured grid.

    Attributes
    ----------
    shape : (nx, ny), markers along the width and along the height.
    names : tuple of nx·ny str, row-major (index j·nx + i), row 0 at the bottom.
    transposed : bool, True when the textile was found turned by 90° with respect to the
        requested shape (e.g. an A2 sheet held by its long edge): ``shape`` is then the swapped one.
    """

    shape: tuple
    names: tuple
    transposed: bool = False

    @property
    def count(self) -> int:
        return len(self.names)

    def corners(self) -> tuple:
        """Indices of the four corner markers: bottom-left, bottom-right, top-right, top-left."""
        nx, ny = self.shape
        return (0, nx - 1, nx * ny - 1, nx * (ny - 1))


def infer_grid_shape(count: int) -> tuple[int, int]:
    """Grid (nx, ny) for ``count`` markers: 20 → (4, 5) (A2), 12 → (3, 4) (A3), otherwise the
    factorisation nx ≤ ny with nx/ny closest to 1/√2 (the ISO 216 aspect ratio).

    Raises
    ------
    MarkerOrderError
        When ``count`` has no factorisation with both sides ≥ 2.
    """
    known = {20: (4, 5), 12: (3, 4)}
    if count in known:
        return known[count]
    pairs = [(a, count // a) for a in range(2, int(count ** 0.5) + 1) if count % a == 0]
    if not pairs:
        raise MarkerOrderError(f"{count} markers do not form an nx×ny grid with nx, ny ≥ 2; give grid=(nx, ny) "
                               f"and the cloth marker names (grid order)")
    return min(pairs, key=lambda p: abs(p[0] / p[1] - 2 ** -0.5))


def _try_rows(q_h: np.ndarray, q_v: np.ndarray, nx: int, ny: int) -> np.ndarray | None:
    """Assign points with in-plane coordinates (q_h, q_v) to an nx × ny grid: ny rows of nx by
    q_v, then columns by q_h. Returns the (ny, nx) index array, or None if rows or columns do
    not separate cleanly (a gap of at least 30 % of the mean spacing between neighbours)."""
    order = np.argsort(q_v, kind="stable")
    rows = order.reshape(ny, nx)
    span_v = q_v.max() - q_v.min()
    span_h = q_h.max() - q_h.min()
    if span_v <= 0 or span_h <= 0:
        return None
    for j in range(ny - 1):
        if q_v[rows[j + 1]].min() - q_v[rows[j]].max() < 0.3 * span_v / (ny - 1):
            return None
    grid = np.stack([r[np.argsort(q_h[r], kind="stable")] for r in rows])
    for i in range(nx - 1):
        if q_h[grid[:, i + 1]].min() - q_h[grid[:, i]].max() < 0.3 * span_h / (nx - 1):
            return None
    return grid


def _sign(direction: np.ndarray) -> float:
    """+1 or −1: the sign of the largest-magnitude component (x first on ties)."""
    k = int(np.argmax(np.abs(direction) - 1e-9 * np.arange(3)))
    return 1.0 if direction[k] >= 0 else -1.0


def order_markers(positions: np.ndarray, names, shape: tuple[int, int] | None = None) -> MarkerGrid:
    """Arrange markers on the textile's grid from one frame (usually the first, at rest).

    The markers are projected onto their best-fit plane (SVD). For a textile that is mostly
    vertical, rows are levels of height (row 0 lowest); otherwise the principal axes are used.
    Columns increase along the in-plane horizontal direction whose largest world component is
    positive (+x for a sheet hanging in the xz plane).

    Parameters
    ----------
    positions : (m, 3) float64 [m], all recorded (no NaN).
    names : m marker names.
    shape : (nx, ny) or None (inferred with :func:`infer_grid_shape`).

    Returns
    -------
    MarkerGrid

    Raises
    ------
    MarkerOrderError
        If a marker is missing, the count does not match the shape, or the markers are too
        distorted to separate into rows and columns (the message says to pass the order).
    """
    p = np.asarray(positions, dtype=float)
    names = tuple(str(n) for n in names)
    if p.ndim != 2 or p.shape[1] != 3 or p.shape[0] != len(names):
        raise MarkerOrderError(f"positions must be (m, 3) for {len(names)} names, got {p.shape}")
    bad = np.flatnonzero(~np.isfinite(p).all(axis=1))
    if bad.size:
        raise MarkerOrderError(f"marker {names[bad[0]]!r} is missing in the frame used to order the grid; use a "
                               f"frame where every cloth marker is seen (Recording.window) or give the order")
    nx, ny = shape if shape is not None else infer_grid_shape(p.shape[0])
    if nx * ny != p.shape[0]:
        raise MarkerOrderError(f"a {nx}×{ny} grid needs {nx * ny} markers, got {p.shape[0]}; select the cloth "
                               f"markers or give grid=(nx, ny)")
    c = p - p.mean(axis=0)
    _, _, vt = np.linalg.svd(c, full_matrices=False)
    e1, e2, normal = vt[0], vt[1], vt[2]
    up = np.array([0.0, 0.0, 1.0])
    u = up - (up @ normal) * normal
    candidates = []
    if np.linalg.norm(u) > 0.5:
        a_v = u / np.linalg.norm(u)
        candidates.append((np.cross(a_v, normal), a_v, True))
    candidates += [(e2, e1, False), (e1, e2, False)]
    for a_h, a_v, vertical in candidates:
        for (gx, gy), transposed in (((nx, ny), False), ((ny, nx), True)):
            grid = _try_rows(c @ a_h, c @ a_v, gx, gy)
            if grid is None:
                continue
            if _sign(a_h) < 0:
                grid = grid[:, ::-1]
            if not vertical and _sign(a_v) < 0:
                grid = grid[::-1]
            ordered = tuple(names[k] for k in grid.ravel())
            return MarkerGrid((gx, gy), ordered, transposed)
    raise MarkerOrderError(f"could not arrange {p.shape[0]} markers into a {nx}×{ny} grid (rows or columns overlap "
                           f"in the first frame: is the textile folded?); pass the cloth marker names in grid "
                           f"order (row by row from the bottom row, left to right)")


def refined_shape(shape: tuple[int, int], refine: int) -> tuple[int, int]:
    """Node counts (nx', ny') of the simulation grid: (n − 1)·refine + 1 per side."""
    if int(refine) != refine or refine < 1:
        raise ValueError(f"refine must be a positive integer (mesh intervals per marker interval), got {refine}")
    nx, ny = shape
    return (nx - 1) * int(refine) + 1, (ny - 1) * int(refine) + 1


def grid_marker_nodes(shape: tuple[int, int], refine: int) -> np.ndarray:
    """Simulation-mesh node (m,) int64 of each marker (grid order) in the refined grid."""
    nx, ny = shape
    rx, _ = refined_shape(shape, refine)
    j, i = np.divmod(np.arange(nx * ny), nx)
    return (j * refine * rx + i * refine).astype(np.int64)


def interpolate_grid(values: np.ndarray, refine: int) -> np.ndarray:
    """Bilinear interpolation of grid values (ny, nx, d) onto the refined grid (ny', nx', d).

    Marker nodes keep their values exactly (tensor-product linear interpolation per cell).
    """
    v = np.asarray(values, dtype=float)
    ny, nx = v.shape[:2]
    r = int(refine)
    s = np.arange((nx - 1) * r + 1) / r
    t = np.arange((ny - 1) * r + 1) / r
    i0 = np.minimum(np.floor(s).astype(int), nx - 2)
    j0 = np.minimum(np.floor(t).astype(int), ny - 2)
    fs = (s - i0)[None, :, None]
    ft = (t - j0)[:, None, None]
    a = v[j0][:, i0]
    b = v[j0][:, i0 + 1]
    c = v[j0 + 1][:, i0]
    d = v[j0 + 1][:, i0 + 1]
    return (1 - ft) * ((1 - fs) * a + fs * b) + ft * ((1 - fs) * c + fs * d)


def estimate_size(grid_positions: np.ndarray) -> tuple[float, float]:
    """Textile (width, height) [m] from marker positions (ny, nx, 3): mean polyline length of
    the rows and of the columns (a lower bound when the textile is curved between markers)."""
    g = np.asarray(grid_positions, dtype=float)
    w = np.linalg.norm(np.diff(g, axis=1), axis=2).sum(axis=1).mean()
    h = np.linalg.norm(np.diff(g, axis=0), axis=2).sum(axis=0).mean()
    return float(w), float(h)


def marker_weights(shape: tuple[int, int], size: tuple[float, float]) -> np.ndarray:
    """Lumped areas (m,) float64 [m²] of the markers on the flat marker grid (thesis eq. 2.10).

    These are the entries of the mass matrix M (per unit density) in the error norm of thesis
    eq. 4.3 / seed 000 eq. 17: corners weigh 1/4, edge markers 1/2, interior markers 1 cell.
    """
    from isocloth.fem.mass import lumped_mass
    from isocloth.mesh.generators import rectangle

    nx, ny = shape
    return lumped_mass(rectangle(size[0], size[1], nx, ny, plane="xy"))
