"""Measured cloth materials of the Berkeley database (Wang, Ramamoorthi & O'Brien 2011) and their
strain- and direction-dependent stiffnesses, as ARCSim stores and evaluates them (Narain et al.
2012; the elastic model of Li et al. 2018 §7).

A material file holds

- ``density`` [kg/m²], the mass per unit area;
- ``stretching``, 6 rows of (k0, k1, k2, k3) [N/m]: the stiffnesses of warp stretch (k0), of the
  warp–weft coupling (k1), of weft stretch (k2) and of shear (k3). Row 0 holds them at zero strain;
  rows 1–5 at a principal stretch of 1/6 (16.7 %) whose direction makes 0°, 22.5°, 45°, 67.5° and
  90° with the warp;
- ``bending``, 3 rows × 5 columns [N m]: the bending stiffness of a crease whose line makes 0°, 45°
  and 90° with the warp (rows), at curvatures 0, 10, 20, 30 and 40 1/m (columns).

Between samples the stiffnesses are interpolated linearly (in strain and angle, in angle and
curvature) and held at the last sample beyond; negative values are set to 0. ARCSim doubles the
stretching values when it evaluates them; so does :func:`stretching_stiffness`. Where this module
departs from ARCSim: directions are folded into [0°, 90°] (a fabric's warp and weft are axes of
symmetry; ARCSim clamps a principal direction at 135° to the 90° sample instead of reading the 45°
one), the stiffnesses are evaluated directly rather than through a 30³ table over G, and the bending
stiffness of an edge is that of its own direction (ARCSim takes the smaller of its two faces', which
differ only across seams). The files are in
``isocloth/data/meshes/bgl/materials`` (README.txt there: source and citation); materials that are not
cloth (a playing card for Li et al.'s house of cards) in ``isocloth/data/materials``, in the same
format (README.txt there: the values and their sources).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["MATERIALS", "MEASURED_MATERIALS", "MeasuredMaterial", "bending_stiffness", "load_measured_material",
           "stretching_stiffness"]

FOLDER = Path(__file__).resolve().parents[1] / "data" / "meshes" / "bgl" / "materials"

OTHER_FOLDER = Path(__file__).resolve().parents[1] / "data" / "materials"

MEASURED_MATERIALS = tuple(sorted(p.stem for p in FOLDER.glob("*.json")))
"""Names of the measured cloth materials shipped with the package (e.g. "11oz-black-denim")."""

MATERIALS = MEASURED_MATERIALS + tuple(sorted(p.stem for p in OTHER_FOLDER.glob("*.json")))
"""Names of every material shipped with the package: the measured ones and "playing-card"."""

STRAIN_SAMPLE = 1.0 / 6.0
"""Principal stretch of stretching rows 1–5 (dimensionless)."""

CURVATURE_STEP = 10.0
"""Curvature between bending columns [1/m]."""


@dataclass(frozen=True)
class MeasuredMaterial:
    """A measured cloth material: name, density [kg/m²], stretching (6, 4) float64 [N/m],
    bending (3, 5) float64 [N m] (module docstring)."""

    name: str
    density: float
    stretching: np.ndarray
    bending: np.ndarray


def load_measured_material(name_or_path) -> MeasuredMaterial:
    """A material of :data:`MATERIALS` by name, or a file in the same JSON format.

    Raises
    ------
    ValueError
        If the name is unknown (the message lists the known ones) or the file does not hold a
        positive density, 6 × 4 stretching and 3 × 5 bending values, all finite.
    """
    p = Path(str(name_or_path))
    path = p if p.suffix == ".json" and p.exists() else FOLDER / f"{name_or_path}.json"
    if not path.exists() and str(name_or_path) in MATERIALS:
        path = OTHER_FOLDER / f"{name_or_path}.json"
    if not path.exists():
        raise ValueError(f"unknown material {name_or_path!r}: use one of {', '.join(MATERIALS)} "
                         "or the path of a .json file in their format")
    try:
        data = json.loads(path.read_text())
        density = float(data["density"])
        stretching = np.asarray(data["stretching"], dtype=np.float64)
        bending = np.asarray(data["bending"], dtype=np.float64)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a measured material ({exc}); it needs 'density', 'stretching' (6 × 4) "
                         "and 'bending' (3 × 5)") from None
    if stretching.shape != (6, 4) or bending.shape != (3, 5) or not density > 0 or not (
            np.isfinite(stretching).all() and np.isfinite(bending).all() and np.isfinite(density)):
        raise ValueError(f"{path}: needs a density > 0, 'stretching' 6 × 4 and 'bending' 3 × 5 finite values, got "
                         f"{stretching.shape} and {bending.shape}")
    return MeasuredMaterial(path.stem, density, stretching, bending)


def _fold(angle: np.ndarray) -> np.ndarray:
    """Angles [rad] folded into [0, π/2] (mod π, then the mirror about 90°)."""
    a = np.mod(angle, np.pi)
    return np.minimum(a, np.pi - a)


def stretching_stiffness(G: np.ndarray, stretching: np.ndarray) -> np.ndarray:
    """(k0, k1, k2, k3) (t, 4) float64 [N/m] at Green strains G (t, 2, 2) (warp, weft axes): the
    largest principal stretch w = √λ_max(2G + I) and its direction ψ from the warp select the
    samples; linear in (w − 1)/(1/6) ∈ [0, 1] between row 0 and the angle-interpolated rows 1–5.

    Raises
    ------
    ValueError
        If G is not (t, 2, 2) or stretching not (6, 4).
    """
    G = np.asarray(G, dtype=np.float64)
    S = np.asarray(stretching, dtype=np.float64)
    if G.ndim != 3 or G.shape[1:] != (2, 2) or S.shape != (6, 4):
        raise ValueError(f"need G (t, 2, 2) and stretching (6, 4), got {G.shape} and {S.shape}")
    C = 2.0 * G + np.eye(2)
    lam, vec = np.linalg.eigh(C)  # ascending
    w = np.sqrt(np.maximum(lam[:, 1], 0.0))
    psi = _fold(np.arctan2(vec[:, 1, 1], vec[:, 0, 1]))
    strain = np.clip((w - 1.0) / STRAIN_SAMPLE, 0.0, 1.0)
    a = psi / (np.pi / 8.0)
    i = np.minimum(np.floor(a).astype(int), 3)
    t = (a - i)[:, None]
    stretched = (1.0 - t) * S[1 + i] + t * S[2 + i]
    k = (1.0 - strain)[:, None] * S[0] + strain[:, None] * stretched
    return 2.0 * np.maximum(k, 0.0)


def bending_stiffness(curvature, angle, bending: np.ndarray) -> np.ndarray:
    """Bending stiffness (e,) float64 [N m] of creases of curvature (e,) [1/m] (absolute value used)
    whose line makes ``angle`` (e,) [rad] with the warp.

    Raises
    ------
    ValueError
        If bending is not (3, 5) or the shapes of curvature and angle differ.
    """
    B = np.asarray(bending, dtype=np.float64)
    c = np.abs(np.asarray(curvature, dtype=np.float64))
    ang = np.asarray(angle, dtype=np.float64)
    if B.shape != (3, 5) or c.shape != ang.shape:
        raise ValueError(f"need bending (3, 5) and curvature, angle of one shape, got {B.shape}, {c.shape}, {ang.shape}")
    v = np.clip(np.where(np.isfinite(c), c, 0.0) / CURVATURE_STEP, 0.0, 4.0)  # NaN (a collapsed face) stays NaN below
    j = np.minimum(np.floor(v).astype(int), 3)
    s = v - j
    b = _fold(ang) / (np.pi / 4.0)
    i = np.minimum(np.floor(b).astype(int), 1)
    r = b - i
    k = ((1 - r) * (1 - s) * B[i, j] + r * (1 - s) * B[i + 1, j] + (1 - r) * s * B[i, j + 1]
         + r * s * B[i + 1, j + 1])
    return np.where(np.isfinite(c), np.maximum(k, 0.0), np.nan)
