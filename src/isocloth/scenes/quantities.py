"""Quantities with units for scene files, and the strict base model (unknown keys are errors).

Every quantity must be finite and lie within a documented range, so that an absurd value (a typo
such as ``radius = 1e300``) is an error naming the field rather than an overflow in the simulation:

* lengths and coordinates (:data:`Length`, :data:`Vec3`): within ±``MAX_LENGTH`` = 1e5 m, the
  bound of the mesh check (:data:`isocloth.mesh.quality.MAX_COORDINATE`);
* speeds (:data:`Velocity3`): each component within ±``MAX_SPEED`` = 1e5 m/s;
* times (:data:`Time`): within ±``MAX_TIME`` = 1e6 s;
* frequencies and angular velocities: within ±``MAX_RATE`` = 1e6 Hz or rad/s;
* area densities within ``MAX_AREA_DENSITY`` = 1e5 kg/m², damping rates within
  ``MAX_DAMPING_RATE`` = 1e9 kg/(m² s), angles within ±``MAX_ANGLE`` = 1e5 rad;
* directions (:data:`Direction`: axes, normals, the warp): any finite non-zero vector, stored
  normalised to length 1 (without overflow, so that ``[1e300, 1e300, 0]`` is the unit diagonal).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

__all__ = ["Length", "Time", "Frequency", "AreaDensity", "DampingRate", "Angle", "AngularVelocity", "Vec3",
           "Vec3Free", "Velocity3", "Direction", "FileName", "Seed", "MAX_LENGTH", "MAX_SPEED", "MAX_TIME", "MAX_RATE",
           "MAX_AREA_DENSITY", "MAX_DAMPING_RATE", "MAX_ANGLE", "_Strict"]

MAX_LENGTH = 1e5
"""[m] Largest length or coordinate (absolute value) a scene accepts; equal to
``isocloth.mesh.quality.MAX_COORDINATE``."""
MAX_SPEED = 1e5
"""[m/s] Largest velocity component (absolute value) a scene accepts."""
MAX_TIME = 1e6
"""[s] Largest time (absolute value) a scene accepts."""
MAX_RATE = 1e6
"""[Hz or rad/s] Largest frequency or angular velocity (absolute value) a scene accepts."""
MAX_AREA_DENSITY = 1e5
"""[kg/m²] Largest area density a scene accepts."""
MAX_DAMPING_RATE = 1e9
"""[kg/(m² s)] Largest damping rate a scene accepts."""
MAX_ANGLE = 1e5
"""[rad] Largest angle (absolute value) a scene accepts."""


@lru_cache(maxsize=1)
def _ureg():
    import pint

    return pint.UnitRegistry()


def _to_si(unit: str):
    def convert(v):
        if isinstance(v, str):
            ureg = _ureg()
            try:
                q = ureg.Quantity(v)
            except Exception as exc:  # pint raises several error types
                raise ValueError(f"cannot read {v!r} as a quantity in {unit}: {exc}") from None
            try:
                return float(q.to(unit).magnitude)
            except Exception:
                raise ValueError(f"{v!r} has units of {q.dimensionality}; expected a quantity in {unit}") from None
        if isinstance(v, (list, tuple)):
            return [convert(x) for x in v]
        return v

    return BeforeValidator(convert)


def _within(limit: float, unit: str):
    """AfterValidator: every number of the value (a float or a tuple of them) within ±limit."""
    u = f" {unit}" if unit else ""

    def check(v):
        for x in (v if isinstance(v, (list, tuple)) else (v,)):
            if abs(x) > limit:
                raise ValueError(f"{x:g}{u} is outside the accepted range ±{limit:g}{u}: check the value and its "
                                 "units")
        return v

    return AfterValidator(check)


def _unit_direction(v):
    """A finite non-zero 3-vector scaled to length 1 (scaled by its largest component first, so that
    huge or tiny components neither overflow nor underflow)."""
    big = max(abs(c) for c in v)
    if not big > 0:
        raise ValueError(f"the direction {list(v)} is the zero vector: give a non-zero direction, e.g. [0, 0, 1]")
    s = [c / big for c in v]
    n = math.sqrt(sum(c * c for c in s))
    return tuple(c / n for c in s)


def _file_name(v: str) -> str:
    if not v.strip():
        raise ValueError("the file name is empty: give the path of the file (relative to the scene file)")
    return v


def _seed(v: int) -> int:
    if v < 0:
        raise ValueError(f"seed {v} is negative: a random seed is an integer >= 0 (e.g. 0)")
    return v


Seed = Annotated[int, AfterValidator(_seed)]
"""A random seed: an integer >= 0."""
Length = Annotated[float, _to_si("m"), _within(MAX_LENGTH, "m")]
Time = Annotated[float, _to_si("s"), _within(MAX_TIME, "s")]
Frequency = Annotated[float, _to_si("Hz"), _within(MAX_RATE, "Hz")]
AreaDensity = Annotated[float, _to_si("kg/m^2"), _within(MAX_AREA_DENSITY, "kg/m²")]
DampingRate = Annotated[float, _to_si("kg/m^2/s"), _within(MAX_DAMPING_RATE, "kg/(m² s)")]
Angle = Annotated[float, _to_si("rad"), _within(MAX_ANGLE, "rad")]
AngularVelocity = Annotated[float, _to_si("rad/s"), _within(MAX_RATE, "rad/s")]
Vec3 = Annotated[tuple[float, float, float], _to_si("m"), _within(MAX_LENGTH, "m")]
"""A point or displacement [m], each coordinate within ±MAX_LENGTH."""
Vec3Free = Annotated[tuple[float, float, float], _within(MAX_LENGTH, "")]
"""Three plain numbers (e.g. Euler angles in degrees), each within ±1e5."""
Velocity3 = Annotated[tuple[float, float, float], _to_si("m/s"), _within(MAX_SPEED, "m/s")]
"""A velocity [m/s], each component within ±MAX_SPEED."""
Direction = Annotated[tuple[float, float, float], AfterValidator(_unit_direction)]
"""A direction (axis, normal): finite, non-zero, stored with length 1."""
FileName = Annotated[str, AfterValidator(_file_name)]
"""A non-empty file path."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
