"""Depth-sensor noise: axial noise growing with depth and missing measurements.

Axial noise (along the ray) of structured-light and time-of-flight depth sensors grows about
quadratically with depth; :class:`DepthNoise` uses σ(z) = a + b (z − z0)² with Nguyen, Izadi & Lovell's
fit for the Kinect (2012, "Modeling Kinect sensor noise for improved 3D reconstruction and
tracking", §4: a = 1.2 mm, b = 1.9 mm/m², z0 = 0.4 m) by default. Measurements are missing (depth 0) where
the surface is seen at a grazing angle (beyond ``max_incidence_deg``, where those sensors return no
depth) and at random with probability ``dropout``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DepthNoise"]


@dataclass(frozen=True)
class DepthNoise:
    """Noise of a depth image.

    Attributes
    ----------
    a : float [m]; b : float [1/m]; z0 : float [m], axial standard deviation σ(z) = a + b (z − z0)²
    dropout : float, probability that a pixel has no depth (independent pixels)
    max_incidence_deg : float, pixels that see the surface at a larger angle from its normal have no depth

    Raises
    ------
    ValueError for negative σ terms, a dropout outside [0, 1) or an incidence limit outside (0, 90].
    """

    a: float = 0.0012
    b: float = 0.0019
    z0: float = 0.4
    dropout: float = 0.0
    max_incidence_deg: float = 85.0

    def __post_init__(self):
        if self.a < 0 or self.b < 0:
            raise ValueError(f"noise terms a, b must be >= 0, got {self.a}, {self.b}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be a probability in [0, 1), got {self.dropout}")
        if not 0 < self.max_incidence_deg <= 90:
            raise ValueError(f"max_incidence_deg must be in (0, 90], got {self.max_incidence_deg}")

    def sigma(self, z: np.ndarray) -> np.ndarray:
        """Axial standard deviation [m] at depth z [m]."""
        return self.a + self.b * (np.asarray(z) - self.z0) ** 2

    def apply(self, depth: np.ndarray, cos_incidence: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Noisy copy of ``depth`` (h, w) float32 [m] (0: no depth); ``cos_incidence`` (h, w): |cos| of
        the angle between each pixel's ray and the surface normal."""
        out = np.array(depth, dtype=np.float32, copy=True)
        valid = out > 0
        noise = rng.standard_normal(out.shape) * self.sigma(out)
        out[valid] += noise[valid].astype(np.float32)
        lost = cos_incidence < np.cos(np.radians(self.max_incidence_deg))
        if self.dropout > 0:
            lost |= rng.random(out.shape) < self.dropout
        out[lost | (out <= 0)] = 0.0
        return out
