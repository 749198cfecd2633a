"""Quantities with units for scene files, and the strict base model (unknown keys are errors)."""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict

__all__ = ["Length", "Time", "Frequency", "AreaDensity", "DampingRate", "Angle", "AngularVelocity", "Vec3",
           "Vec3Free", "_Strict"]


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


Length = Annotated[float, _to_si("m")]
Time = Annotated[float, _to_si("s")]
Frequency = Annotated[float, _to_si("Hz")]
AreaDensity = Annotated[float, _to_si("kg/m^2")]
DampingRate = Annotated[float, _to_si("kg/m^2/s")]
Angle = Annotated[float, _to_si("rad")]
AngularVelocity = Annotated[float, _to_si("rad/s")]
Vec3 = Annotated[tuple[float, float, float], _to_si("m")]
Vec3Free = tuple[float, float, float]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
