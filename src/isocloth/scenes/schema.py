"""Scene files: TOML validated by pydantic (unknown keys and wrong units are errors).

Numbers are SI (m, s, Hz, kg/m², rad). Any quantity may instead be written as a string with a
unit, e.g. ``dt = "5 ms"``, ``width = "42 cm"``, ``frequency = "36 rpm"``; a unit of the wrong
dimension (``dt = "3 kg"``) is an error that names the field and the expected unit. Quantities
must lie within the ranges of :mod:`isocloth.scenes.quantities` (lengths within ±1e5 m, …);
generated meshes have at most ``isocloth.mesh.generators.MAX_NODES`` (1 000 000) nodes; random
seeds are integers >= 0; ``simulation.substeps`` is at most ``MAX_SUBSTEPS`` (1000).
"""

from __future__ import annotations

import re
import warnings
from typing import Annotated, Literal, Union

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

__all__ = ["SceneConfig", "MeshSpec", "NodeSelector", "GraspSpec", "SimulationSpec", "OutputSpec", "ClothSpec",
           "SelfCollisionSpec", "MAX_SUBSTEPS", "ELASTIC_SIMULATION_KEYS"]


from isocloth.scenes.quantities import (  # noqa: E402
    Angle, AngularVelocity, AreaDensity, DampingRate, Direction, FileName, Frequency, Length, Seed, Time, Vec3,
    Vec3Free, Velocity3, _Strict, _to_si)

SEED_DESCRIPTION = "seed of the random generator, an integer >= 0"


def _at_most_max_nodes(count: int, what: str) -> None:
    """ValueError when a generated mesh would have more than ``isocloth.mesh.generators.MAX_NODES`` nodes."""
    from isocloth.mesh.generators import MAX_NODES

    if count > MAX_NODES:
        raise ValueError(f"{what} = {count:,} nodes is more than the {MAX_NODES:,} nodes a generated mesh may have "
                         "(about 7 kB of memory per node): use fewer nodes")


# ------------------------------------------------------------------ cloth mesh
class MeshRectangle(_Strict):
    generator: Literal["rectangle"]
    width: Length = Field(gt=0)
    height: Length = Field(gt=0)
    nx: int = Field(ge=2)
    ny: int = Field(ge=2)
    element: Literal["quad", "triangle"] = "quad"
    plane: Literal["xy", "xz"] = "xy"

    @model_validator(mode="after")
    def _size(self):
        _at_most_max_nodes(self.nx * self.ny, f"nx·ny = {self.nx}·{self.ny}")
        return self


class MeshIrregular(_Strict):
    generator: Literal["irregular"]
    width: Length = Field(gt=0)
    height: Length = Field(gt=0)
    node_count: int = Field(ge=4)
    seed: Seed = Field(default=0, description=SEED_DESCRIPTION)
    plane: Literal["xy", "xz"] = "xy"

    @model_validator(mode="after")
    def _size(self):
        _at_most_max_nodes(self.node_count, "node_count")
        return self


class MeshAnnulus(_Strict):
    generator: Literal["annulus"]
    r_inner: Length = Field(gt=0)
    r_outer: Length = Field(gt=0)
    n_radial: int = Field(ge=2)
    n_angular: int = Field(ge=3)
    element: Literal["quad", "triangle"] = "quad"

    @model_validator(mode="after")
    def _size(self):
        _at_most_max_nodes(self.n_radial * self.n_angular, f"n_radial·n_angular = {self.n_radial}·{self.n_angular}")
        return self


class MeshBand(_Strict):
    """A closed band (belt) around the y axis, the cylinder as its rest shape."""

    generator: Literal["band"]
    radius: Length = Field(gt=0)
    width: Length = Field(gt=0)
    n_across: int = Field(ge=2)
    n_around: int = Field(ge=3)
    element: Literal["quad", "triangle"] = "triangle"

    @model_validator(mode="after")
    def _size(self):
        _at_most_max_nodes(self.n_across * self.n_around, f"n_across·n_around = {self.n_across}·{self.n_around}")
        return self


class MeshDisk(_Strict):
    generator: Literal["disk"]
    radius: Length = Field(gt=0)
    n_radial: int = Field(ge=1)
    n_angular: int = Field(ge=3)
    element: Literal["quad", "triangle"] = "triangle"

    @model_validator(mode="after")
    def _size(self):
        _at_most_max_nodes(1 + self.n_radial * self.n_angular,
                           f"1 + n_radial·n_angular = 1 + {self.n_radial}·{self.n_angular}")
        return self


class MeshLeaningCards(_Strict):
    """Two cards leaning on each other on the floor (isocloth.mesh.generators.leaning_cards)."""

    generator: Literal["leaning-cards"]
    width: Length = Field(gt=0, description="card width, along the ridge")
    height: Length = Field(gt=0, description="card height, from floor to ridge along the card")
    angle: Angle = Field(gt=0, lt=1.5707963267948966, description="tilt of each card from the vertical")
    gap: Length = Field(default=0.0, ge=0, description="contact thickness between the cards and to the floor")
    nx: int = Field(ge=2, description="nodes along the width")
    ny: int = Field(ge=2, description="nodes up each card")

    @model_validator(mode="after")
    def _size(self):
        _at_most_max_nodes(2 * self.nx * self.ny, f"2·nx·ny = 2·{self.nx}·{self.ny}")
        return self


class MeshFile(_Strict):
    file: FileName = Field(description="path relative to the scene file, or 'builtin:bgl/...' for packaged meshes")
    rest: Literal["auto", "vt", "m", "geometry"] = "auto"
    merge_tolerance: Length | None = None


MeshSpec = Annotated[Union[MeshRectangle, MeshIrregular, MeshAnnulus, MeshBand, MeshDisk, MeshLeaningCards],
                     Field(discriminator="generator")]


class Placement(_Strict):
    """Rigid placement of the loaded/generated mesh: x → R(rotate_deg, xyz Euler) · scale·x + translate."""

    rotate_deg: Vec3Free = (0.0, 0.0, 0.0)
    translate: Vec3 = (0.0, 0.0, 0.0)
    scale: float = Field(default=1.0, gt=0)


class Noise(_Strict):
    """Gaussian noise on the initial shape. ``rest = "perturbed"`` (default) makes the noisy sheet
    the unstrained one (a real sheet is never perfectly flat); ``"keep"`` strains it.
    ``wavelength`` > 0 gives a smooth random field of that correlation length, the same on every
    mesh of the sheet (for mesh-convergence studies); 0 gives independent noise per node."""

    sigma: Length = Field(ge=0)
    seed: Seed = Field(default=0, description=SEED_DESCRIPTION)
    rest: Literal["perturbed", "keep"] = "perturbed"
    wavelength: Length = Field(default=0.0, ge=0)


def _mesh_kind(value) -> str | None:
    """Which mesh branch a ``[cloth] mesh`` table belongs to, so that a typo in one branch is not also
    reported as a mismatch of the other (a generator table has ``generator``, a file table ``file``)."""
    if isinstance(value, dict):
        return "generator" if "generator" in value else "file" if "file" in value else None
    return "file" if isinstance(value, MeshFile) else "generator"


class ClothSpec(_Strict):
    mesh: Annotated[Union[Annotated[MeshSpec, Tag("generator")], Annotated[MeshFile, Tag("file")]],
                    Discriminator(_mesh_kind, custom_error_type="mesh_kind",
                                  custom_error_message="a mesh needs either 'generator' (rectangle, irregular, "
                                  "annulus, band, disk, leaning-cards) or 'file'")]
    placement: Placement = Placement()
    noise: Noise | None = None
    fabric: str | None = Field(default=None, description="preset name, see isocloth.model.FABRIC_PRESETS")
    rho: AreaDensity | None = Field(default=None, gt=0)
    delta: AreaDensity | None = Field(default=None, ge=0)
    alpha: DampingRate | None = Field(default=None, ge=0)
    beta: float | None = Field(default=None, ge=0)
    kappa: float | None = Field(default=None, ge=0)
    shear_stiffness: float | None = Field(default=None, ge=0)
    membrane_stiffness: float | None = Field(default=None, ge=0, description="k_m [N/m] of the membrane "
                                             "stabilisation energy (isocloth.fem.membrane); 0 = thesis model")
    tensile_stiffness: float | None = Field(default=None, gt=0, description="k [N/m]: tensile stiffness per "
                                            "unit width of an element edge pulled beyond its stretch limit "
                                            "(constraint_model = 'stretch-limited')")
    gravity: float | None = Field(default=None, ge=-1000.0, le=1000.0, description="gravitational acceleration "
                                  "[m/s²], within ±1000")
    model: Literal["inextensible", "elastic"] = Field(
        default="inextensible", description="'inextensible': Coltraro et al.'s model (constraints on the first "
        "fundamental form, fast projection); 'elastic': the model of Li et al. 2018 §7 (measured membrane and "
        "bending stiffnesses of Wang et al. 2011, linearised implicit Euler, exact Coulomb contact at the nodes, "
        "cloth-cloth contacts at the nearest nodes (Li eq. 9); beta is the stiffness-proportional damping c_d [s])")
    material: str | None = Field(default=None, description="material of model = 'elastic' (a name of "
                                 "isocloth.elastic.MATERIALS, e.g. '11oz-black-denim' or 'playing-card', or a .json "
                                 "file in their format, relative to the scene file's folder); default "
                                 "'gray-interlock'; its density is rho unless rho is given")
    warp: Direction = Field(default=(1.0, 0.0, 0.0), description="direction of the fabric's warp for model = "
                            "'elastic', in the coordinates of the rest shape (the mesh before placement), projected "
                            "onto it; the weft is normal to it; it must not be (nearly) normal to the rest shape")
    constraint_mode: Literal["inextensible", "quasi-inextensible"] = "inextensible"
    constraint_model: Literal["thesis-nodal", "stretch-limited", "nonconforming"] = Field(
        default="stretch-limited", description="'thesis-nodal': the rows of thesis Algorithm 1 (nodal averages of "
        "E, F, G; Coltraro et al. §2.4); 'stretch-limited': the same rows plus bounds on every element edge's "
        "length (isocloth.fem.stretch_limits); 'nonconforming': unknowns at the edge midpoints, every triangle's "
        "edge lengths held exactly (English & Bridson 2008; isocloth.fem.nonconforming)")
    stretch_limit: float = Field(default=0.01, gt=0, lt=1, description="largest stretch of an element edge "
                                 "(dimensionless; 0.01 = 1 %) in the 'stretch-limited' model")
    corner_angle_deg: float = Field(default=45.0, gt=0, lt=180)
    initial_velocity: Velocity3 = Field(default=(0.0, 0.0, 0.0), description="[m/s], each component within ±1e5")
    relax_initial: bool = Field(default=False, description="project the initial shape onto the constraints first")

    @model_validator(mode="after")
    def _elastic_keys(self):
        if self.model != "elastic" and self.material is not None:
            raise ValueError("material is the measured material of model = 'elastic'; set model = 'elastic' or use "
                             "fabric for the inextensible model")
        if self.model != "elastic" and "warp" in self.model_fields_set and self.warp != (1.0, 0.0, 0.0):
            raise ValueError("warp (the fabric's warp direction) is used only by model = 'elastic'; the inextensible "
                             "model is isotropic: remove warp, or set model = 'elastic'")
        return self


# ------------------------------------------------------------------ grasps
class NodeSelector(_Strict):
    """Which nodes a grasp holds: explicit ``indices``, the node ``nearest`` to each point
    (initial configuration), every node inside a ``box_min``/``box_max`` box, and/or every node
    within ``inside_radius`` of the vertical axis through ``center``."""

    indices: list[int] | None = None
    nearest: list[Vec3] | None = None
    box_min: Vec3 | None = None
    box_max: Vec3 | None = None
    inside_radius: Length | None = Field(default=None, gt=0, description="nodes within this horizontal distance of center")
    center: Vec3 = (0.0, 0.0, 0.0)

    @model_validator(mode="after")
    def _one_kind(self):
        if not (self.indices or self.nearest or self.inside_radius
                or (self.box_min is not None and self.box_max is not None)):
            raise ValueError("give indices, nearest points, inside_radius, or both box_min and box_max")
        if (self.box_min is None) != (self.box_max is None):
            raise ValueError("box selection needs both box_min and box_max")
        if self.box_min is not None:
            swapped = [ax for ax, lo, hi in zip("xyz", self.box_min, self.box_max) if lo > hi]
            if swapped:
                raise ValueError(f"box_min {[float(v) for v in self.box_min]} is above box_max "
                                 f"{[float(v) for v in self.box_max]} in {', '.join(swapped)}: the corners seem "
                                 "swapped; box_min is the lower corner, box_max the upper one")
        return self


class TrajFixed(_Strict):
    type: Literal["fixed"]


class TrajSinusoid(_Strict):
    type: Literal["sinusoid"]
    amplitude: Vec3
    frequency: Frequency = Field(gt=0)
    phase: Angle = 0.0
    start: Time = 0.0
    duration: Time | None = None


class TrajWaypoints(_Strict):
    type: Literal["waypoints"]
    times: Annotated[list[float], _to_si("s")]
    points: list[Vec3]
    interpolation: Literal["linear", "cubic", "smoothstep"] = "linear"


class TrajRotation(_Strict):
    type: Literal["rotation"]
    axis: Direction
    center: Vec3
    angular_velocity: AngularVelocity
    start: Time = 0.0
    max_angle: Angle | None = None


class TrajSampled(_Strict):
    type: Literal["sampled"]
    file: FileName = Field(description=".npy (s,3) or (s,k,3) with k the grasp's node count, or .csv with "
                           "three columns, displacements in m")
    rate: Frequency = Field(gt=0)
    start: Time = 0.0


TrajectorySpec = Annotated[Union[TrajFixed, TrajSinusoid, TrajWaypoints, TrajRotation, TrajSampled],
                           Field(discriminator="type")]


class GraspSpec(_Strict):
    name: str | None = None
    nodes: NodeSelector
    trajectory: TrajectorySpec = TrajFixed(type="fixed")
    start: Time = Field(default=0.0, ge=0, description="the grasp takes its nodes at this time, where they are "
                        "(its trajectory moves them from there)")
    end: Time | None = Field(default=None, description="the grasp lets its nodes go at this time (none: holds "
                             "them to the end)")

    @model_validator(mode="after")
    def _window(self):
        if self.end is not None and not self.end > self.start:
            raise ValueError(f"end ({self.end:g} s) must come after start ({self.start:g} s)")
        return self


# ------------------------------------------------------------------ numerics and output
MAX_SUBSTEPS = 1000
"""Largest ``simulation.substeps``: for shorter steps than dt / 1000, lower dt."""


class SimulationSpec(_Strict):
    dt: Time = Field(default=0.01, gt=0)
    duration: Time = Field(default=5.0, gt=0)
    tolerance: float = Field(default=1e-3, gt=0, lt=1)
    max_iterations: int = Field(default=50, ge=1)
    substeps: int = Field(default=1, ge=1, description="equal sub-steps of dt/substeps per step (Stepper "
                          "option), 1 … MAX_SUBSTEPS = 1000 (for shorter steps lower dt): on large sheets shorter "
                          "steps keep the projection's factorization and can be cheaper per simulated second")
    solver: Literal["active-set", "interior-point"] = Field(
        default="active-set", description="QP solver for contacts (interior point = library baseline)")
    contact_margin: Length = Field(default=0.01, gt=0, description="contact detection distance")
    penetration_tolerance: Length = Field(default=1e-4, gt=0, description="ε1 of thesis eq. 3.5")
    face_midpoint_contacts: bool = Field(
        default=False, description="contact rows at face centroids too (coarse meshes, small obstacles)")
    max_area_error_jump: float | None = Field(
        default=None, gt=0, lt=1, description="redo a contact step as substeps when its mean element area "
        "error (thesis eq. 2.24) grows by more than this (Stepper option; off by default)")
    membrane_coupling: Literal["predictor", "relaxation"] = Field(
        default="predictor", description="where the membrane stabilisation acts (cloth.membrane_stiffness > 0): "
        "its force in the predictor, or a relaxation along the constraint and contact set after the projection "
        "(isocloth.step.membrane_relaxation; for garments crumpling in contact)")
    membrane_sweeps: int = Field(default=4, ge=1, description="membrane relaxation QPs per step")
    step_budget: Time | None = Field(
        default=None, gt=0, description="wall-clock time one step may take (none: no limit); a step beyond it "
        "stops the run with its frames, checkpoint and summary written (isocloth run --resume continues it, also with "
        "another budget)")

    @field_validator("substeps")
    @classmethod
    def _substeps_bound(cls, v: int) -> int:
        if v > MAX_SUBSTEPS:
            raise ValueError(f"{v} substeps is more than the maximum {MAX_SUBSTEPS} (MAX_SUBSTEPS): for steps shorter "
                             f"than dt / {MAX_SUBSTEPS}, lower dt instead")
        return v

    @model_validator(mode="after")
    def _whole_steps(self):
        """The run takes duration / dt steps: a duration that is not a whole number of steps would be
        rounded silently (0 steps when duration < dt/2)."""
        steps = self.duration / self.dt
        k = round(steps)
        if k < 1 or abs(steps - k) > 1e-6 * max(steps, 1.0):
            lo, hi = max(int(steps), 1) * self.dt, (int(steps) + 1) * self.dt
            choices = f"{lo:.6g} s or {hi:.6g} s" if lo != hi else f"{hi:.6g} s"
            raise ValueError(f"duration {self.duration:.6g} s is not a whole number of steps of dt = "
                             f"{self.dt:.6g} s: set duration = {choices}, or change dt")
        return self


class SelfCollisionSpec(_Strict):
    """``[self_collision]``: cloth–cloth constraints H ≥ τ0 (seed 000 §3.2–3.3, §4.1), see
    ``isocloth.model.SelfCollisionOptions``. The table's presence enables them unless
    ``enabled = false``; thin obstacles are checked whatever this is."""

    enabled: bool = True
    thickness: Length | None = Field(default=None, gt=0, description="cloth thickness tau0; below the mesh's "
                                     "smallest distance between non-adjacent primitives (default: 5 mm, or a "
                                     "quarter of that distance when it is not above 5 mm)")
    omega: float = Field(default=0.5, ge=0, le=0.5, description="proximity parameter in detection (Coltraro et al. 2024, §3.3)")
    omega_decay: float = Field(default=0.9, gt=0, lt=1, description="omega <- omega_decay * omega on a restart")
    max_restarts: int = Field(default=5, ge=0, description="restarts of a step after a failed omega = 0 check")
    mu: float = Field(default=0.3, ge=0, description="cloth-cloth friction coefficient")

    def options(self, mesh=None):
        """The equivalent ``SelfCollisionOptions``; without a ``thickness``, the one
        :func:`isocloth.model.model.default_thickness` derives from ``mesh`` (the cloth's mesh at its
        initial positions; 5 mm when None)."""
        from isocloth.model.model import DEFAULT_THICKNESS, SelfCollisionOptions, default_thickness

        tau = self.thickness
        if tau is None:
            tau = default_thickness(mesh) if mesh is not None and self.enabled else DEFAULT_THICKNESS
        return SelfCollisionOptions(enabled=self.enabled, thickness=tau, omega=self.omega,
                                    omega_decay=self.omega_decay, max_restarts=self.max_restarts, mu_cloth=self.mu)


class VideoCameraSpec(_Strict):
    """``[output.camera]``: the video's camera pose instead of the orbit of ``elev`` / ``azim``."""

    eye: Vec3 = Field(description="camera position [m]")
    target: Vec3 = Field(description="point the camera looks at [m]")
    up: Vec3 = Field(default=(0.0, 0.0, 1.0), description="direction that is up in the image")
    fov: float = Field(default=45.0, gt=0, lt=180, description="vertical field of view [degrees]")

    @model_validator(mode="after")
    def _pose(self):
        from isocloth.sensors.camera import look_at

        if not any(self.up):
            raise ValueError("up is the zero vector: give the direction that is up in the image, e.g. [0, 0, 1]")
        look_at(self.eye, self.target, self.up)  # ValueError naming the problem
        return self

    def camera(self, size: tuple[int, int]):
        """The PinholeCamera of this pose for an image of ``size`` (width, height) [px]."""
        import numpy as np

        from isocloth.sensors.camera import PinholeCamera, look_at

        w, h = size
        f = 0.5 * h / np.tan(np.radians(0.5 * self.fov))
        return PinholeCamera(w, h, f, f, 0.5 * w, 0.5 * h, pose=look_at(self.eye, self.target, self.up), near=0.0,
                             far=1e6)


class OutputSpec(_Strict):
    fps: float = Field(default=25.0, gt=0, description="saved frames per simulated second")
    video: Literal["mp4", "gif", "none"] = "mp4"
    video_size: tuple[Annotated[int, Field(ge=16, le=8192)], Annotated[int, Field(ge=16, le=8192)]] = Field(
        default=(640, 480), description="video width and height [pixels], 16 … 8192")
    checkpoint_every: Time = Field(default=1.0, gt=0, description="simulated seconds between checkpoints")
    checkpoint_wall: Time = Field(default=60.0, gt=0, description="wall-clock seconds after which a checkpoint "
                                  "is written even before checkpoint_every of simulated time (slow scenes)")
    elev: float = Field(default=20.0, ge=-90.0, le=90.0, description="video camera elevation above the xy "
                        "plane [degrees]")
    azim: float = Field(default=-60.0, description="video camera azimuth about z, from the x axis [degrees]")
    camera: VideoCameraSpec | None = Field(default=None, description="video camera pose (eye, target, up, fov) "
                                           "instead of elev / azim")


ELASTIC_SIMULATION_KEYS = ("dt", "duration")
"""The ``[simulation]`` keys that ``[cloth] model = "elastic"`` uses (its implicit Euler stepper,
isocloth.baselines.implicit, has its own contact solver and tolerance); the others are refused with it
when set to anything but their default."""


class SceneConfig(_Strict):
    """A whole scene. Unknown keys anywhere are errors (extra='forbid').

    Raises (as a validation error) for a ``[simulation]`` key other than ``ELASTIC_SIMULATION_KEYS``
    set to a non-default value with ``[cloth] model = "elastic"`` (it would have no effect); warns
    (UserWarning) of a grasp starting at or after the end of the scene (``simulation.duration``)."""

    name: str
    description: str = ""
    cloth: ClothSpec
    grasps: list[GraspSpec] = []
    obstacles: list[ObstacleSpec] = []
    self_collision: SelfCollisionSpec | None = None
    simulation: SimulationSpec = SimulationSpec()
    output: OutputSpec = OutputSpec()

    @field_validator("name")
    @classmethod
    def _folder_name(cls, v: str) -> str:
        """The name is the default run folder (runs/<name>): letters, digits, '-', '_', '.', no path."""
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,99}", v):
            raise ValueError(f"{v!r} cannot be a folder name: use letters, digits, '-', '_' and '.' (not first), "
                             "at most 100 characters, no '/' or spaces (e.g. 'my-scene')")
        return v

    @model_validator(mode="after")
    def _elastic_simulation(self):
        if self.cloth.model != "elastic":
            return self
        sim, default = self.simulation, SimulationSpec()
        ignored = [k for k in SimulationSpec.model_fields if k not in ELASTIC_SIMULATION_KEYS
                   and k in sim.model_fields_set and getattr(sim, k) != getattr(default, k)]
        if ignored:
            keys = ", ".join(f"simulation.{k}" for k in ignored)
            raise ValueError(f"{keys} {'has' if len(ignored) == 1 else 'have'} no effect with cloth.model = 'elastic': "
                             "its linearised implicit Euler stepper uses only simulation.dt and simulation.duration "
                             "(with its own exact contact solver and tolerance); remove "
                             f"{'it' if len(ignored) == 1 else 'them'}, or use the inextensible model")
        return self

    @model_validator(mode="after")
    def _grasps_start_in_time(self):
        end = self.simulation.duration
        for i, g in enumerate(self.grasps):
            if g.start >= end:  # a warning: a scene shortened for a preview may end before its later grasps
                warnings.warn(f"grasps.{i}.start = {g.start:g} s is not before the end of the scene "
                              f"(simulation.duration = {end:g} s): the grasp never takes its nodes", UserWarning,
                              stacklevel=2)
        return self


from isocloth.scenes.obstacle_specs import ObstacleSpec  # noqa: E402  (uses the quantities above)

SceneConfig.model_rebuild()
