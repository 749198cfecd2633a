"""Physical parameters of a cloth (one object, whatever the solver) and fabric presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["Material", "FABRIC_PRESETS", "fabric"]


@dataclass(frozen=True)
class Material:
    """Physical parameters of the inextensible cloth model (thesis Table 2.1, §2.5).

    Attributes
    ----------
    rho : float
        Inertial areal density ρ [kg/m²] (> 0).
    delta : float or None
        Virtual gravitational density δ [kg/m²] (≥ 0): gravity acts as f_δ = −δ M g while the
        inertia is ρ M φ̈ (thesis §2.5.1); δ < ρ models air drag and lift. None means δ = ρ.
    alpha : float
        Mass-proportional Rayleigh damping α [kg/(m²·s)] (≥ 0): D = α M + β K (eq. 2.19).
        α/ρ is a drag rate [1/s].
    beta : float
        Stiffness-proportional Rayleigh damping β [N·s·m] (≥ 0).
    kappa : float
        Bending stiffness κ [N·m] (≥ 0) of the isometric bending energy ½ κ φᵀKφ.
    shear_stiffness : float
        k_s [N/m⁵] (≥ 0) of the optional shear energy (k_s/2) C_Fᵀ M C_F (thesis eq. 2.17–2.18),
        used by the quasi-inextensible mode.
    membrane_stiffness : float
        k_m [N/m] (≥ 0) of the membrane stabilisation energy (k_m/2) Σ |ε|² dA0 on the element
        Green strains (``isocloth.fem.membrane``): it damps out the element-level stretch patterns
        that the nodal E/F/G rows cannot see. 0 (default) is the thesis model.
    tensile_stiffness : float
        k [N/m] (> 0): how an element edge held at its stretch bound answers when it is pulled
        further (``constraint_model = "stretch-limited"``): a spring of stiffness k per edge, a
        tensile stiffness per unit width beyond the bound. Forced stretch (grasps turned against
        each other) then costs force instead of an infeasible projection, and dependent held rows
        stay solvable. The default (1e5 N/m, stiffer than woven fabrics) was chosen by measurement
        (docs/design/constraint-model.md §6).
    gravity : float
        Gravitational acceleration g [m/s²] along −z.
    """

    rho: float = 0.1604
    delta: float | None = None
    alpha: float = 0.0
    beta: float = 0.0
    kappa: float = 0.0
    shear_stiffness: float = 0.0
    membrane_stiffness: float = 0.0
    tensile_stiffness: float = 100000.0
    gravity: float = 9.8

    def __post_init__(self) -> None:
        import math

        for name in ("rho", "delta", "alpha", "beta", "kappa", "shear_stiffness", "membrane_stiffness", "tensile_stiffness",
                     "gravity"):
            v = getattr(self, name)
            if v is None:
                continue
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"material.{name} must be a finite number, got {v!r}")
        if self.rho <= 0:
            raise ValueError(f"material.rho (density, kg/m²) must be > 0, got {self.rho}")
        for name in ("delta", "alpha", "beta", "kappa", "shear_stiffness", "membrane_stiffness"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"material.{name} must be ≥ 0, got {v}")
        if self.tensile_stiffness <= 0:
            raise ValueError(f"material.tensile_stiffness (N/m) must be > 0, got {self.tensile_stiffness}")

    @property
    def virtual_density(self) -> float:
        """δ [kg/m²] (ρ when not set)."""
        return self.rho if self.delta is None else float(self.delta)

    def replace(self, **changes) -> "Material":
        """A copy with some parameters changed (e.g. for fitting)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["delta"] = self.virtual_density
        return d


# Densities: thesis Table 4.1. Typical (δ, α): means of the per-recording optima of thesis
# Table A.1 (polyester, wool, denim, stiff cotton; absolute values at the fabric's density)
# and of Table 4.2 (paper, light cotton, felt; fitted with ρ = 1, so scaled here by the density).
FABRIC_PRESETS: dict[str, Material] = {
    "paper": Material(rho=0.0802, delta=0.345 * 0.0802, alpha=1.95 * 0.0802),
    "polyester": Material(rho=0.1042, delta=0.0416, alpha=0.228),
    "light-cotton": Material(rho=0.1604, delta=0.52 * 0.1604, alpha=1.99 * 0.1604),
    "felt": Material(rho=0.1764, delta=0.535 * 0.1764, alpha=1.85 * 0.1764),
    "wool": Material(rho=0.1804, delta=0.0961, alpha=0.419),
    "denim": Material(rho=0.3046, delta=0.219, alpha=0.627),
    "stiff-cotton": Material(rho=0.3046, delta=0.222, alpha=0.587),
}


def fabric(name: str, **overrides) -> Material:
    """A fabric preset, optionally with some parameters overridden.

    Raises
    ------
    KeyError
        For an unknown name; the message lists the presets.
    """
    try:
        base = FABRIC_PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown fabric {name!r}; presets: {', '.join(FABRIC_PRESETS)}") from None
    return base.replace(**overrides) if overrides else base
