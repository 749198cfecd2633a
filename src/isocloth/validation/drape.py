"""Cusick drape coefficient (thesis §2.7.2, eq. 2.22)."""

from __future__ import annotations

import numpy as np

__all__ = ["drape_coefficient"]


def drape_coefficient(x: np.ndarray, triangles: np.ndarray, r_table: float, r_cloth: float,
                      center=(0.0, 0.0)) -> float:
    """Drape coefficient DC = (A_shadow − A_table) / (A_cloth − A_table), as a percentage.

    The shadow is the vertical projection onto the xy plane of the draped cloth, united with the
    table disc (shapely polygon union, so folds that overlap are counted once). A rigid flat
    sheet gives 100 %, a limp one that hangs straight down gives ≈ 0 %.

    Parameters
    ----------
    x : (n, 3) float64, node positions [m]
    triangles : (t, 3) int64 (split quads first: ``Mesh.triangulated_faces``)
    r_table, r_cloth : float [m], radii of the table disc and of the flat cloth
    center : (2,) [m], the table centre in xy

    Returns
    -------
    float, DC in percent (thesis eq. 2.22).

    Raises
    ------
    ValueError
        If r_cloth ≤ r_table.
    """
    from shapely import Point, Polygon, union_all

    if r_cloth <= r_table:
        raise ValueError(f"r_cloth ({r_cloth}) must exceed r_table ({r_table})")
    xy = x[:, :2]
    tris = xy[triangles]
    e1, e2 = tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
    area2 = np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
    polys = [Polygon(t) for t in tris[area2 > 1e-14]]
    table = Point(center).buffer(r_table, quad_segs=256)
    shadow = union_all(polys + [table])
    a_table = np.pi * r_table ** 2
    a_cloth = np.pi * r_cloth ** 2
    return float(100.0 * (shadow.area - a_table) / (a_cloth - a_table))
