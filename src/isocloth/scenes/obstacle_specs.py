"""Scene-file schema and factory for obstacles (``[[obstacles]]`` tables)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field

from isocloth.scenes.quantities import Angle, AngularVelocity, Length, Time, Vec3, Vec3Free, _Strict

__all__ = ["ObstacleSpec", "build_obstacle"]


class MotionStaticSpec(_Strict):
    type: Literal["static"]


class MotionRotationSpec(_Strict):
    """Rotation about an axis through ``center`` at ``angular_velocity`` from ``start``, up to ``max_angle``."""

    type: Literal["rotation"]
    axis: Vec3Free = (0.0, 0.0, 1.0)
    center: Vec3 = (0.0, 0.0, 0.0)
    angular_velocity: AngularVelocity
    start: Time = 0.0
    max_angle: Angle | None = None


class MotionTranslationSpec(_Strict):
    type: Literal["translation"]
    velocity: Vec3
    start: Time = 0.0
    duration: Time | None = None


MotionSpec = Annotated[Union[MotionStaticSpec, MotionRotationSpec, MotionTranslationSpec],
                       Field(discriminator="type")]


class _Common(_Strict):
    name: str | None = None
    mu: float = Field(default=0.0, ge=0, description="Coulomb friction coefficient")
    thickness: Length = Field(default=0.0, ge=0)
    motion: MotionSpec = MotionStaticSpec(type="static")


class PlaneSpec(_Common):
    type: Literal["plane"]
    point: Vec3 = (0.0, 0.0, 0.0)
    normal: Vec3Free = (0.0, 0.0, 1.0)


class BoxSpec(_Common):
    type: Literal["box"]
    center: Vec3
    half_extents: Vec3


class SphereSpec(_Common):
    type: Literal["sphere"]
    center: Vec3
    radius: Length = Field(gt=0)


class CylinderSpec(_Common):
    type: Literal["cylinder"]
    center: Vec3
    axis: Vec3Free = (0.0, 0.0, 1.0)
    radius: Length = Field(gt=0)
    half_height: Length = Field(gt=0)


class CapsuleSpec(_Common):
    type: Literal["capsule"]
    a: Vec3
    b: Vec3
    radius: Length = Field(gt=0)


class NeedlesSpec(_Common):
    type: Literal["needles"]
    c1: float = Field(default=20.0, gt=0)
    c2: float = Field(default=0.075, gt=0)
    origin: Vec3 = (0.0, 0.0, 0.0)


class MeshObstacleSpec(_Common):
    type: Literal["mesh"]
    file: str
    y_up: bool = False
    scale: float = Field(default=1.0, gt=0)
    translate: Vec3 = (0.0, 0.0, 0.0)


ObstacleSpec = Annotated[Union[PlaneSpec, BoxSpec, SphereSpec, CylinderSpec, CapsuleSpec, NeedlesSpec,
                               MeshObstacleSpec], Field(discriminator="type")]


def _motion(spec):
    import math

    from isocloth.contact.obstacles import MotionRotation, MotionStatic, MotionTranslation

    if spec.type == "static":
        return MotionStatic()
    if spec.type == "rotation":
        return MotionRotation(axis=spec.axis, center=spec.center, angular_velocity=spec.angular_velocity,
                              start=spec.start, max_angle=math.inf if spec.max_angle is None else spec.max_angle)
    return MotionTranslation(velocity=spec.velocity, start=spec.start,
                             duration=math.inf if spec.duration is None else spec.duration)


def build_obstacle(spec, resolve_file) -> object:
    """An Obstacle from its spec; ``resolve_file(name) -> Path`` finds mesh files.

    Raises
    ------
    ValueError
        For invalid geometry (the message names the parameter).
    """
    from isocloth.contact import obstacles as ob

    kw = {"mu": spec.mu, "thickness": spec.thickness, "motion": _motion(spec.motion), "name": spec.name}
    if spec.type == "plane":
        return ob.ObstaclePlane(point=spec.point, normal=spec.normal, **kw)
    if spec.type == "box":
        return ob.ObstacleBox(center=spec.center, half_extents=spec.half_extents, **kw)
    if spec.type == "sphere":
        return ob.ObstacleSphere(center=spec.center, radius=spec.radius, **kw)
    if spec.type == "cylinder":
        return ob.ObstacleCylinder(center=spec.center, axis=spec.axis, radius=spec.radius,
                                   half_height=spec.half_height, **kw)
    if spec.type == "capsule":
        return ob.ObstacleCapsule(a=spec.a, b=spec.b, radius=spec.radius, **kw)
    if spec.type == "needles":
        return ob.ObstacleNeedles(c1=spec.c1, c2=spec.c2, origin=spec.origin, **kw)
    path: Path = resolve_file(spec.file)
    obs = ob.ObstacleMesh.from_file(path, y_up=spec.y_up, scale=spec.scale, **kw)
    if any(spec.translate):
        import numpy as np

        obs = ob.ObstacleMesh(np.asarray(obs.vertices) + np.asarray(spec.translate), obs.faces, **kw)
    return obs
