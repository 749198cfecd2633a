"""Scene-file schema and factory for obstacles (``[[obstacles]]`` tables).

Surface obstacles (plane, box, sphere, cylinder, capsule, needles, mesh) are handled node-wise
through their signed distance (thesis §3.2) and end up in ``ClothModel.obstacles``. Thin
(codimensional) obstacles are handled by continuous collision detection against cloth edges and
faces (seed 000 §6.3, §7.4) and end up in ``ClothModel.thin_obstacles``:

* ``stick``: a straight stick given by the trajectories of its two ends (waypoints ``times``,
  ``a``, ``b``, or a CSV file with columns t, ax, ay, az, bx, by, bz), radius 0.75 cm by default
  (seed 000 §7.4, Remark 7.2);
* ``polyline``: a chain of vertices moved rigidly by ``motion``;
* ``segments``: segments read from a Codim-IPC ``.seg`` file; ``needle-bed``: the packaged
  Codim-IPC needle bed (100 needles 0.1 m long, tips at the ``translate`` height);
* ``points``: point obstacles (e.g. needle tips) against cloth faces;
* ``needles`` with ``peaks = true`` adds the peaks of the needle surface (thesis eq. 3.17) as
  point obstacles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import Field, model_validator

from isocloth.scenes.quantities import (Angle, AngularVelocity, Direction, FileName, Length, Time, Vec3, Velocity3,
                                        _Strict, _to_si)

__all__ = ["ObstacleSpec", "build_obstacle", "build_obstacles", "read_stick_csv", "THIN_OBSTACLE_TYPES"]

THIN_OBSTACLE_TYPES = ("stick", "polyline", "segments", "needle-bed", "points")


class MotionStaticSpec(_Strict):
    type: Literal["static"]


class MotionRotationSpec(_Strict):
    """Rotation about an axis through ``center`` at ``angular_velocity`` from ``start``, up to ``max_angle``."""

    type: Literal["rotation"]
    axis: Direction = (0.0, 0.0, 1.0)
    center: Vec3 = (0.0, 0.0, 0.0)
    angular_velocity: AngularVelocity
    start: Time = 0.0
    max_angle: Angle | None = None


class MotionTranslationSpec(_Strict):
    type: Literal["translation"]
    velocity: Velocity3 = Field(description="[m/s], each component within ±1e5")
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
    normal: Direction = (0.0, 0.0, 1.0)


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
    axis: Direction = (0.0, 0.0, 1.0)
    radius: Length = Field(gt=0)
    half_height: Length = Field(gt=0)


class ConeSpec(_Common):
    type: Literal["cone"]
    apex: Vec3
    axis: Direction = Field(default=(0.0, 0.0, 1.0), description="from the base's centre to the apex")
    radius: Length = Field(gt=0, description="base radius")
    height: Length = Field(gt=0)


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
    peaks: bool = Field(default=False, description="add the peaks (thesis eq. 3.17) in [-1, 1]^2 m as point obstacles")
    peak_radius: Length | None = Field(default=None, gt=0, description="radius of the peaks (default: thickness)")


class MeshObstacleSpec(_Common):
    type: Literal["mesh"]
    file: FileName
    y_up: bool = False
    scale: float = Field(default=1.0, gt=0)
    translate: Vec3 = (0.0, 0.0, 0.0)


# ------------------------------------------------------------------ thin (codimensional) obstacles
class _Thin(_Strict):
    name: str | None = None
    mu: float = Field(default=0.0, ge=0, description="Coulomb friction coefficient against the cloth")


class StickSpec(_Thin):
    """A straight stick given by the trajectories of its ends a and b, linearly interpolated
    between samples and held outside them (seed 000 §7.4). Give ``times``, ``a`` and ``b``, or
    ``file``: a CSV with columns t, ax, ay, az, bx, by, bz (an optional header line), positions
    multiplied by ``scale`` (e.g. 0.001 for mm) and times shifted by ``start``."""

    type: Literal["stick"]
    radius: Length = Field(default=0.0075, gt=0, description="stick radius, the constraint thickness")
    segments: int = Field(default=15, ge=1, description="number of edges the stick is split into")
    times: Annotated[list[float], _to_si("s")] | None = None
    a: list[Vec3] | None = None
    b: list[Vec3] | None = None
    file: FileName | None = None
    scale: float = Field(default=1.0, gt=0)
    start: Time = 0.0

    @model_validator(mode="after")
    def _one_source(self):
        lists = (self.times, self.a, self.b)
        if self.file is not None:
            if any(v is not None for v in lists):
                raise ValueError("give either file or times/a/b, not both")
        else:
            if any(v is None for v in lists):
                raise ValueError("a stick needs times, a and b (end trajectories) or a CSV file")
            if not (len(self.times) == len(self.a) == len(self.b)) or not self.times:
                raise ValueError(f"times, a and b must have the same non-zero length, got {len(self.times)}, "
                                 f"{len(self.a)}, {len(self.b)}")
            if any(t1 <= t0 for t0, t1 in zip(self.times, self.times[1:])):
                raise ValueError("stick times must be strictly increasing")
        return self


class PolylineSpec(_Thin):
    """A chain of vertices (open or closed) moved rigidly by ``motion``; free ends are points."""

    type: Literal["polyline"]
    vertices: list[Vec3] = Field(min_length=2)
    closed: bool = False
    radius: Length = Field(default=0.0075, gt=0)
    motion: MotionSpec = MotionStaticSpec(type="static")


class SegmentsSpec(_Thin):
    """Segments from a Codim-IPC ``.seg`` file: x → R·(scale·x) + translate (R turns y up into z
    up when ``y_up``), then moved by ``motion``. ``tips`` chooses the point obstacles (checked
    against cloth faces): the free ends of the segments, the upper end (largest z) of each
    segment, or none."""

    type: Literal["segments"]
    file: FileName
    scale: float = Field(default=1.0, gt=0)
    y_up: bool = False
    translate: Vec3 = (0.0, 0.0, 0.0)
    radius: Length = Field(default=0.001, gt=0)
    tips: Literal["free-ends", "upper", "none"] = "free-ends"
    motion: MotionSpec = MotionStaticSpec(type="static")


class NeedleBedSpec(_Thin):
    """The Codim-IPC needle bed (``needleBed10x10.seg``, Apache-2.0): 10 x 10 needles 0.1 m long
    on a 0.1 m grid centred on x = y = 0, tips (point obstacles) at z = translate_z."""

    type: Literal["needle-bed"]
    translate: Vec3 = (0.0, 0.0, 0.0)
    radius: Length = Field(default=0.001, gt=0)
    motion: MotionSpec = MotionStaticSpec(type="static")


class PointsSpec(_Thin):
    """Point obstacles (e.g. needle tips) checked against cloth faces, moved by ``motion``."""

    type: Literal["points"]
    points: list[Vec3] = Field(min_length=1)
    radius: Length = Field(gt=0)
    motion: MotionSpec = MotionStaticSpec(type="static")


ObstacleSpec = Annotated[Union[PlaneSpec, BoxSpec, SphereSpec, CylinderSpec, ConeSpec, CapsuleSpec, NeedlesSpec,
                               MeshObstacleSpec, StickSpec, PolylineSpec, SegmentsSpec, NeedleBedSpec, PointsSpec],
                         Field(discriminator="type")]


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


def read_stick_csv(path, scale: float = 1.0, start: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stick end trajectories from a CSV file with columns t, ax, ay, az, bx, by, bz (comma
    separated; one optional header line; ``#`` comments).

    Returns
    -------
    times (F,) float64 [s] (+ ``start``), a (F, 3), b (F, 3) float64 [m] (× ``scale``)

    Raises
    ------
    ValueError
        Not 7 numeric columns, no rows, or non-finite values. OSError if unreadable.
    """
    lines = [(no, ln) for no, ln in enumerate(Path(path).read_text().splitlines(), 1)
             if ln.strip() and not ln.lstrip().startswith("#")]
    rows = []
    for k, (no, ln) in enumerate(lines):
        try:
            rows.append([float(v) for v in ln.split(",")])
        except ValueError:
            if k == 0:
                continue  # header line
            raise ValueError(f"{path}:{no}: expected comma-separated numbers t, ax, ay, az, bx, by, bz, "
                             f"got {ln.strip()!r}") from None
        if len(rows[-1]) != 7:
            raise ValueError(f"{path}:{no}: expected 7 columns t, ax, ay, az, bx, by, bz, got {len(rows[-1])}")
    data = np.array(rows, dtype=np.float64).reshape(-1, 7)
    if data.shape[0] == 0:
        raise ValueError(f"{path}: no data rows (expected columns t, ax, ay, az, bx, by, bz)")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{path}: NaN or inf values; fill gaps (e.g. linear interpolation, Coltraro et al. 2024, Remark 7.3)")
    return data[:, 0] + start, scale * data[:, 1:4], scale * data[:, 4:7]


_Y_UP_TO_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def _build_thin(spec, resolve_file):
    from isocloth.contact import obstacles as ob

    kw = {"mu": spec.mu, "name": spec.name or spec.type}
    if spec.type == "stick":
        if spec.file is not None:
            times, a, b = read_stick_csv(resolve_file(spec.file), spec.scale, spec.start)
        else:
            times, a, b = np.asarray(spec.times), np.asarray(spec.a), np.asarray(spec.b)
        return ob.ObstaclePolyline.stick(times, a, b, radius=spec.radius, segments=spec.segments, **kw)
    if spec.type == "polyline":
        return ob.ObstaclePolyline(np.asarray(spec.vertices), closed=spec.closed, radius=spec.radius,
                                   motion=_motion(spec.motion), **kw)
    if spec.type == "points":
        return ob.ObstaclePoints(np.asarray(spec.points), radius=spec.radius, motion=_motion(spec.motion), **kw)
    if spec.type == "needle-bed":
        return ob.ObstacleSegments.needle_bed(radius=spec.radius, translation=spec.translate,
                                              motion=_motion(spec.motion), **kw)
    # segments
    path = resolve_file(spec.file)
    v, seg = ob.read_seg(path)
    v = spec.scale * v
    if spec.y_up:
        v = v @ _Y_UP_TO_Z_UP.T
    v = v + np.asarray(spec.translate)
    if spec.tips == "none":
        points = np.zeros(0, dtype=np.int64)
    elif spec.tips == "upper":
        points = np.unique(np.where(v[seg[:, 0], 2] >= v[seg[:, 1], 2], seg[:, 0], seg[:, 1]))
    else:
        points = None
    kw["name"] = spec.name or Path(spec.file).stem
    return ob.ObstacleSegments(v, seg, points, radius=spec.radius, motion=_motion(spec.motion), **kw)


def build_obstacles(spec, resolve_file) -> list:
    """The obstacles of one ``[[obstacles]]`` table: one obstacle, or two for ``needles`` with
    ``peaks = true`` (the surface and its peaks as point obstacles). Thin obstacles are
    ``ObstacleCodim`` instances (``ModelBuilder.add_obstacle`` puts them in ``thin_obstacles``).

    Raises
    ------
    ValueError
        For invalid geometry or trajectories (the message names the parameter).
    """
    obs = build_obstacle(spec, resolve_file)
    if spec.type == "needles" and spec.peaks:
        from isocloth.contact.obstacles import ObstaclePoints

        r = spec.peak_radius if spec.peak_radius is not None else spec.thickness
        if not r > 0:
            raise ValueError("peaks = true needs peak_radius > 0 or thickness > 0 (the radius of the peak points)")
        peaks = ObstaclePoints.from_needles(obs, radius=r, name=f"{obs.name} peaks")
        return [obs, peaks]
    return [obs]


def build_obstacle(spec, resolve_file) -> object:
    """An Obstacle from its spec; ``resolve_file(name) -> Path`` finds mesh / segment / CSV files.
    For ``needles`` the surface only (see :func:`build_obstacles` for the peaks).

    Raises
    ------
    ValueError
        For invalid geometry (the message names the parameter).
    """
    from isocloth.contact import obstacles as ob

    if spec.type in THIN_OBSTACLE_TYPES:
        return _build_thin(spec, resolve_file)
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
    if spec.type == "cone":
        return ob.ObstacleCone(apex=spec.apex, axis=spec.axis, radius=spec.radius, height=spec.height, **kw)
    if spec.type == "capsule":
        return ob.ObstacleCapsule(a=spec.a, b=spec.b, radius=spec.radius, **kw)
    if spec.type == "needles":
        return ob.ObstacleNeedles(c1=spec.c1, c2=spec.c2, origin=spec.origin, **kw)
    path: Path = resolve_file(spec.file)
    obs = ob.ObstacleMesh.from_file(path, y_up=spec.y_up, scale=spec.scale, **kw)
    if any(spec.translate):
        obs = ob.ObstacleMesh(np.asarray(obs.vertices) + np.asarray(spec.translate), obs.faces, **kw)
    return obs
