"""Replay a recording: simulate the textile driven by its recorded grasps and compare frame by frame.

Following the thesis (§4.2.2) and seed 000 §7.2:

1. the cloth markers are arranged on their grid (:mod:`isocloth.validation.markers`), and the
   simulation mesh is a refinement of it (4×5 markers → 7×9 nodes) with the flat rest shape of
   the textile (its width and height);
2. the simulation starts from the first recorded frame, φ⁰ = ϕ⁰, interpolated bilinearly from
   the markers to the refined mesh (and, by default, projected onto the inextensibility
   constraints with the grasped nodes held, so that the first step does not start with a jerk);
   the initial velocity is zero (the recordings start at rest);
3. the grasped markers (by default the two top corners) drive their nodes with their recorded
   trajectories (:class:`~isocloth.control.TrajectorySampled`). Their gaps are bridged (linearly
   for raw driving: a rigid gripper, as the stick of seed 000 Remark 7.3). Two departures from the raw
   samples, both options, because marker noise on the *driving* nodes is injected into the whole
   cloth (0.5 mm of white noise at 100 Hz on the two corners of a shaken A2 sheet gives ~3 mm of
   error; docs/design/validation.md):

   - ``grasp_filter``: smoothing at 10 Hz by default, far above the hand or robot motion: a
     smoothing spline through the recorded samples, which also bridges the dropouts
     (``grasp_smoother="spline"``), or linear gap filling plus a zero-phase 4th-order
     Butterworth low-pass (``"butterworth"``, scipy.signal.filtfilt);
   - ``grasp_mode``: "rigid" moves the grasped markers as one rigid body (a hanger or a gripper:
     per-frame best rigid fit, Kabsch), "independent" moves them separately (bare hands); "auto"
     picks rigid when every pairwise distance varies by less than 1 % over the recording.

   Grasped markers are never farther apart than the textile allows (their distance on the flat
   rest shape): where they are, both move symmetrically towards each other, so the
   inextensibility constraints stay satisfiable. A rigid pair is held at its median recorded
   distance, or taut when that is within the noise of the rest distance
   (:func:`~isocloth.validation.grasps.grasp_distance`);
4. a recorded rigid stick (the hitting experiment of seed 000 §7.4) is replayed as a thin moving
   obstacle: the user names its two end markers (``ReplayOptions(stick=("stickA", "stickB"))``);
   their missing samples are filled (linearly, seed 000 Remark 7.3, or by default along the rigid
   stick from the end that is seen: :func:`~isocloth.validation.grasps.fill_stick`) and the stick
   (:meth:`ObstaclePolyline.stick <isocloth.contact.obstacles.ObstaclePolyline.stick>`, radius
   ``stick_radius``, 0.75 cm as Remark 7.2) moves between them, linearly between frames;
5. frame n of the simulation (time t_n, one step of dt = 1/rate, or ``substeps`` smaller ones)
   is compared with frame n of the recording at the marker nodes
   (:func:`isocloth.validation.metrics.error_series`).

The model parameters of a run are given as a dict: Material fields (``delta``, ``alpha``, ``rho``,
``beta``, ``kappa``, ``shear_stiffness``), ``mu`` (friction of every obstacle), and the
parameters of a baseline model (:mod:`isocloth.baselines`).
"""

from __future__ import annotations

import copy
import dataclasses
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from isocloth.model.material import Material
from isocloth.validation.grasps import (feasible_tracks, fill_stick, grasp_distance, is_rigid, lowpass, rigid_tracks,
                                        smooth_tracks)
from isocloth.validation.markers import (MarkerGrid, estimate_size, grid_marker_nodes, interpolate_grid,
                                         marker_weights, order_markers, refined_shape)
from isocloth.validation.metrics import ErrorSeries, error_series
from isocloth.validation.recordings import Recording, RecordingError

__all__ = ["ReplayOptions", "Replay", "ReplayResult", "MODEL_KINDS", "MATERIAL_PARAMETERS", "replay_from_scene"]

MODEL_KINDS = ("inextensible", "quasi-inextensible", "mass-spring", "baraff-witkin")
MATERIAL_PARAMETERS = ("rho", "delta", "alpha", "beta", "kappa", "shear_stiffness")


@dataclass(frozen=True)
class ReplayOptions:
    """How a recording is turned into a simulation (numerics and marker layout, no physics).

    Attributes
    ----------
    grid : (nx, ny) markers along width and height, or None (inferred from the marker count).
    order : cloth marker names in grid order (row by row from the bottom), or None (found from the
        first frame with :func:`~isocloth.validation.markers.order_markers`). Needed when the
        recording holds other markers too.
    refine : mesh intervals per marker interval (2: 4×5 markers → 7×9 nodes).
    size : textile (width, height) [m] along (nx, ny), or None (estimated from the first frame).
    grasp : names of the grasped markers, or None for the two highest grid corners in frame 0.
    grasp_mode : "auto", "rigid" (one hanger/gripper) or "independent" (bare hands).
    grasp_filter : cut-off [Hz] of the smoothing of the grasp trajectories, or None to drive with
        the raw samples, gaps filled linearly (as the thesis).
    grasp_smoother : "spline" (a smoothing spline through the recorded samples, which also bridges
        the dropouts) or "butterworth" (gaps filled linearly, then a zero-phase 4th-order
        Butterworth low-pass); see :mod:`isocloth.validation.grasps`.
    substeps : simulation steps per recorded frame.
    relax_initial : project φ⁰ onto the constraints before the first step.
    constraint_mode : "inextensible" or "quasi-inextensible" for the isocloth models.
    tolerance, max_iterations : fast-projection settings (thesis: 0.1 %).
    window : (t_start, t_stop) [s from the first frame] of the frames in the time means.
    stick : names (a, b) of the two end markers of a recorded rigid stick (seed 000 §7.4), or None.
        They are not cloth markers; their gaps are filled as ``stick_fill`` says.
    stick_radius : stick radius [m], the thickness of its contact constraints (Remark 7.2: 0.75 cm).
    stick_segments : number of edges the stick is split into (edge–edge contacts with the cloth).
    stick_mu : friction coefficient between stick and cloth (0: polished stick, as §7.4).
    stick_fill : how gaps of the stick ends are filled: "rigid" (default: an end missing while the
        other is seen is put at the stick length along the interpolated direction; both missing:
        linear) or "linear" (each end linearly, as Remark 7.3); see
        :func:`~isocloth.validation.grasps.fill_stick`.
    """

    grid: tuple | None = None
    order: tuple | None = None
    refine: int = 2
    size: tuple | None = None
    grasp: tuple | None = None
    grasp_mode: str = "auto"
    grasp_filter: float | None = 10.0
    grasp_smoother: str = "spline"
    substeps: int = 1
    relax_initial: bool = True
    constraint_mode: str = "inextensible"
    tolerance: float = 1e-3
    max_iterations: int = 50
    window: tuple | None = None
    stick: tuple | None = None
    stick_radius: float = 0.0075
    stick_segments: int = 15
    stick_mu: float = 0.0
    stick_fill: str = "rigid"

    def replace(self, **changes) -> "ReplayOptions":
        return dataclasses.replace(self, **changes)


@dataclass
class ReplayResult:
    """Outcome of one replay.

    Attributes
    ----------
    params : dict, the parameters of the run
    kind : model kind (see MODEL_KINDS)
    simulated : (f, m, 3) float64 [m], simulation at the marker nodes (NaN after a divergence)
    errors : ErrorSeries (thesis eq. 4.3–4.5)
    wall_time : float [s], time spent simulating
    mean_iterations : float, mean fast-projection iterations per step (NaN for elastic models)
    diverged : bool
    message : str, why the run stopped early (empty otherwise)
    contact : (f,) bool, frames with an active contact
    positions : (f, n, 3) float64 [m] or None (all nodes, when asked for)
    """

    params: dict
    kind: str
    simulated: np.ndarray
    errors: ErrorSeries
    wall_time: float
    mean_iterations: float
    diverged: bool = False
    message: str = ""
    contact: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    positions: np.ndarray | None = None

    @property
    def loss(self) -> float:
        """ē [m] (seed 000 eq. 16 divided by the frame count); inf when the run diverged."""
        return float("inf") if self.diverged or not np.isfinite(self.errors.mean_error) else self.errors.mean_error

    def summary(self) -> dict:
        d = {k: float(v) for k, v in self.params.items()}
        d.update({"model": self.kind, "mean_error": self.loss, "mean_std": self.errors.mean_std,
                  "max_dispersion": self.errors.max_dispersion, "wall_time": self.wall_time,
                  "mean_iterations": self.mean_iterations, "diverged": self.diverged})
        return d


class Replay:
    """A recording prepared for simulation: marker grid, mesh, initial state, grasp trajectories.

    Parameters
    ----------
    recording : Recording (z up, metres)
    material : base Material (ρ of the fabric; δ, α, ... are overridden per run)
    options : ReplayOptions
    obstacles : sequence of obstacles (table, ...) for contact scenes: surface obstacles and thin
        ones (``ObstacleCodim``), as :meth:`ModelBuilder.add_obstacle` takes them
    contact : dict of ContactProjection settings (``solver`` "active-set"/"interior-point",
        ``margin``, ``penetration_tolerance``, ``face_midpoints``), used when there are contacts
    self_collision : SelfCollisionOptions or None (no self-collision handling)
    constraint_model : "stretch-limited" or "thesis-nodal" (``ModelBuilder.set_cloth``), None for
        the builder's default

    Attributes (besides the options)
    ----------
    stick : ObstaclePolyline or None, the recorded stick (``options.stick``)
    stick_tracks : (f, 2, 3) float64 [m] or None, its end positions per frame (gaps filled)

    Raises
    ------
    RecordingError
        Irregular frame times, missing cloth markers in the first frame, unknown grasp or stick
        marker names, a stick marker never recorded, or markers that cannot be arranged on the
        grid (:class:`MarkerOrderError`).
    ValueError
        Bad stick options (not two distinct names, radius ≤ 0, segments < 1, coincident ends).
    """

    def __init__(self, recording: Recording, material: Material | None = None, options: ReplayOptions | None = None,
                 *, obstacles=(), contact: dict | None = None, self_collision=None,
                 constraint_model: str | None = None) -> None:
        opts = options or ReplayOptions()
        self.constraint_model = constraint_model
        self.options = opts
        self.material = material or Material()
        self.obstacles = tuple(obstacles)
        self.contact = dict(contact or {})
        self.self_collision = self_collision
        if recording.frame_count < 2:
            raise RecordingError("a replay needs at least two frames")
        if not recording.regular():
            raise RecordingError(f"{recording.source}: frame times are not regular at {recording.rate} Hz; resample "
                                 f"the recording (the simulation steps at a fixed dt = 1/rate)")
        if int(opts.substeps) != opts.substeps or opts.substeps < 1:
            raise ValueError(f"substeps must be a positive integer, got {opts.substeps}")
        rec = recording.replace(times=recording.times - recording.times[0])
        self.stick, self.stick_tracks = None, None
        if opts.stick is not None:
            rec = self._take_stick(rec, opts)
        if opts.order is not None:
            names = tuple(opts.order)
            rec = rec.select(names)
            shape = tuple(opts.grid) if opts.grid is not None else None
            if shape is None:
                from isocloth.validation.markers import infer_grid_shape

                shape = infer_grid_shape(len(names))
            if shape[0] * shape[1] != len(names):
                raise RecordingError(f"grid {shape[0]}×{shape[1]} needs {shape[0] * shape[1]} names, got {len(names)}")
            grid = MarkerGrid(tuple(shape), names)
        else:
            grid = order_markers(rec.markers[0], rec.names, tuple(opts.grid) if opts.grid is not None else None)
            rec = rec.select(grid.names)
        self.grid = grid
        nx, ny = grid.shape
        first = rec.markers[0]
        missing = np.flatnonzero(~np.isfinite(first).all(axis=1))
        if missing.size:
            raise RecordingError(f"cloth marker {grid.names[missing[0]]!r} is missing in the first frame, which sets "
                                 f"φ⁰; start the recording later (Recording.window) where every marker is seen")
        g3 = first.reshape(ny, nx, 3)
        if opts.size is not None:
            w, h = (float(opts.size[1]), float(opts.size[0])) if grid.transposed else map(float, opts.size)
            _check_units(estimate_size(g3), (w, h))
        else:
            w, h = estimate_size(g3)
        self.size = (w, h)
        self.recording = rec
        self.dt = 1.0 / (rec.rate * int(opts.substeps))
        self.weights = marker_weights(grid.shape, self.size)
        self.marker_nodes = grid_marker_nodes(grid.shape, opts.refine)
        self.mesh_shape = refined_shape(grid.shape, opts.refine)
        # grasped markers
        if opts.grasp is None:
            corners = np.array(grid.corners())
            z = first[corners, 2]
            self.grasp_markers = np.sort(corners[np.argsort(-z, kind="stable")[:2]])
        else:
            lookup = {n: i for i, n in enumerate(grid.names)}
            unknown = [n for n in opts.grasp if n not in lookup]
            if unknown:
                raise RecordingError(f"grasp marker {unknown[0]!r} is not a cloth marker ({', '.join(grid.names)})")
            self.grasp_markers = np.array([lookup[n] for n in opts.grasp], dtype=np.int64)
        if not self.obstacles:  # a hanging cloth: it must hang down from its grasps
            _check_up_axis(rec.markers, self.grasp_markers, self.size, rec.metadata.get("up_axis", "z"))
        self._build_geometry()
        self._models: dict = {}
        self._x0: dict = {}

    # ------------------------------------------------------------------ stick
    def _take_stick(self, rec: Recording, opts: ReplayOptions) -> Recording:
        """Build the recorded stick (seed 000 §7.4) from its end markers; return the recording
        without them."""
        from isocloth.contact.obstacles import ObstaclePolyline

        names = _stick_names(opts.stick)
        if len(names) != 2 or names[0] == names[1]:
            raise ValueError(f"stick must name the two end markers of the stick, e.g. stick=('stickA', 'stickB'); "
                             f"got {opts.stick!r}")
        unknown = [n for n in names if n not in rec.names]
        if unknown:
            raise RecordingError(f"stick marker {unknown[0]!r} is not in the recording ({', '.join(rec.names)})")
        if opts.order is not None and set(names) & set(opts.order):
            both = sorted(set(names) & set(opts.order))[0]
            raise RecordingError(f"marker {both!r} is named both as a stick end and as a cloth marker (order)")
        if not (np.isfinite(opts.stick_radius) and opts.stick_radius > 0):
            raise ValueError(f"stick_radius must be a positive length [m], got {opts.stick_radius!r}")
        raw = rec.select(names).markers
        for k, n in enumerate(names):
            if not np.isfinite(raw[:, k]).all(axis=1).any():
                raise RecordingError(f"stick marker {n!r} is never recorded; it cannot be interpolated")
        # a rigid body: gaps bridged along the stick or linearly (Remark 7.3); ends held outside
        tracks = fill_stick(raw, rec.times, opts.stick_fill)
        length = np.linalg.norm(tracks[:, 1] - tracks[:, 0], axis=1)
        if np.any(length <= 2 * opts.stick_radius):
            k = int(np.argmax(length <= 2 * opts.stick_radius))
            raise ValueError(f"the stick ends {names[0]!r} and {names[1]!r} are {length[k]:.4g} m apart at frame {k}; "
                             f"a stick needs ends farther apart than its diameter")
        self.stick_tracks = tracks
        self.stick = ObstaclePolyline.stick(rec.times, tracks[:, 0], tracks[:, 1], radius=float(opts.stick_radius),
                                            segments=int(opts.stick_segments), mu=float(opts.stick_mu),
                                            name="stick")
        return rec.select([n for n in rec.names if n not in names])

    # ------------------------------------------------------------------ geometry
    def _build_geometry(self) -> None:
        from isocloth.mesh.generators import rectangle
        from isocloth.mesh.mesh import Mesh

        nx, ny = self.grid.shape
        rx, ry = self.mesh_shape
        w, h = self.size
        rest = rectangle(w, h, rx, ry, plane="xy")
        gnodes = self.marker_nodes[self.grasp_markers]
        raw = self.recording.markers[:, self.grasp_markers]
        smoother = self.options.grasp_smoother
        if smoother == "spline":  # gaps bridged by the smoothing spline through the samples
            tracks = smooth_tracks(raw, self.recording.rate, self.options.grasp_filter)
        elif smoother == "butterworth":  # gaps filled linearly (a rigid gripper: Remark 7.3), then low-pass
            tracks = lowpass(smooth_tracks(raw, self.recording.rate, None), self.recording.rate,
                             self.options.grasp_filter)
        else:
            raise ValueError(f"grasp_smoother must be 'spline' or 'butterworth', got {smoother!r}")
        mode = self.options.grasp_mode
        if mode not in ("auto", "rigid", "independent"):
            raise ValueError(f"grasp_mode must be 'auto', 'rigid' or 'independent', got {mode!r}")
        if mode == "auto":
            mode = "rigid" if is_rigid(tracks) else "independent"
        self.grasp_mode = mode
        if mode == "rigid":
            length = None
            if len(gnodes) == 2:
                length = grasp_distance(raw, float(np.linalg.norm(rest.vertices[gnodes[1]] - rest.vertices[gnodes[0]])))
            tracks = rigid_tracks(tracks, rest.vertices[gnodes], length)
        tracks = feasible_tracks(tracks, rest.vertices[gnodes])
        self.grasp_tracks = tracks
        x0 = interpolate_grid(self.recording.markers[0].reshape(ny, nx, 3), self.options.refine).reshape(-1, 3)
        x0[gnodes] = tracks[0]
        self.mesh = Mesh(x0, quads=rest.quads, rest_vertices=rest.vertices,
                         name=f"replay {rx}x{ry} of {nx}x{ny} markers ({w:.3f} x {h:.3f} m)")

    def _schedule_grasps(self, builder) -> None:
        from isocloth.control import TrajectorySampled

        gnodes = self.marker_nodes[self.grasp_markers]
        disp = self.grasp_tracks - self.grasp_tracks[0]
        for k, node in enumerate(gnodes):
            builder.add_grasp([int(node)], TrajectorySampled(self.recording.rate, disp[:, k]),
                              name=self.grid.names[self.grasp_markers[k]])

    def base_model(self, constraint_mode: str | None = None):
        """The ClothModel (base material) for a constraint mode, built once."""
        from isocloth.model.builder import ModelBuilder

        mode = constraint_mode or self.options.constraint_mode
        if mode not in self._models:
            mat = self.material
            if mode == "quasi-inextensible" and mat.shear_stiffness <= 0:
                mat = mat.replace(shear_stiffness=1.0)  # builds the shear rows; the value is set per run
            model_kw = {} if self.constraint_model is None else {"constraint_model": self.constraint_model}
            b = ModelBuilder().set_cloth(self.mesh, mat, constraint_mode=mode, **model_kw)
            self._schedule_grasps(b)
            for ob in self.obstacles:
                b.add_obstacle(ob)
            if self.stick is not None:
                b.add_obstacle(self.stick)
            if self.self_collision is not None:
                b.set_self_collision(self.self_collision)
            self._models[mode] = b.finalize()
        return self._models[mode]

    def model(self, params: dict | None = None, constraint_mode: str | None = None):
        """ClothModel with the run's parameters (Material fields and ``mu``)."""
        params = dict(params or {})
        base = self.base_model(constraint_mode)
        mat_changes = {k: float(v) for k, v in params.items() if k in MATERIAL_PARAMETERS}
        model = base.replace(material=base.material.replace(**mat_changes)) if mat_changes else base
        if "mu" in params:
            obs = []
            for ob in base.obstacles:
                ob2 = copy.copy(ob)
                ob2.mu = float(params["mu"])
                obs.append(ob2)
            model = dataclasses.replace(model, obstacles=tuple(obs), _cache={})
        return model

    def initial_positions(self, constraint_mode: str | None = None) -> np.ndarray:
        """φ⁰ (n, 3) [m]: the first frame on the refined mesh, projected onto the constraints
        (with the grasped nodes held) when ``relax_initial``."""
        from isocloth.solvers.projection import SolverProjection

        mode = constraint_mode or self.options.constraint_mode
        if mode not in self._x0:
            model = self.base_model(mode)
            x = model.initial_positions.copy()
            if self.options.relax_initial:
                relax = SolverProjection(tolerance=min(self.options.tolerance, 1e-4), max_iterations=500)
                x = relax.solve(x, model.inverse_masses, model.constraints, model.active_rows).x
            self._x0[mode] = x
        return self._x0[mode].copy()

    def stepper(self, model, kind: str = "inextensible", params: dict | None = None):
        """A stepper for ``model``: isocloth's Stepper, or a baseline one (isocloth.baselines)."""
        if kind in ("inextensible", "quasi-inextensible"):
            from isocloth.solvers.projection import SolverProjection
            from isocloth.step.stepper import Stepper

            contact = None
            if model.has_contacts:  # surface or thin obstacles (a stick), self-collisions
                from isocloth.solvers.active_set import SolverActiveSet
                from isocloth.solvers.interior_point import SolverInteriorPoint
                from isocloth.step.contact_projection import ContactProjection

                c = self.contact
                qp = SolverInteriorPoint() if c.get("solver") == "interior-point" else SolverActiveSet()
                kw = {k: c[k] for k in ("margin", "penetration_tolerance", "face_midpoints") if k in c}
                contact = ContactProjection(qp_solver=qp, tolerance=self.options.tolerance,
                                            max_iterations=self.options.max_iterations, **kw)
            return Stepper(model, dt=self.dt, contact_solver=contact, area_diagnostics=False,
                           solver=SolverProjection(tolerance=self.options.tolerance,
                                                   max_iterations=self.options.max_iterations))
        from isocloth.baselines import make_stepper

        extra = {k: v for k, v in (params or {}).items() if k not in MATERIAL_PARAMETERS and k != "mu"}
        return make_stepper(kind, model, dt=self.dt, **extra)

    # ------------------------------------------------------------------ running
    def setup(self, params: dict | None = None, kind: str = "inextensible"):
        """A ready simulation of the recording: (model, stepper, initial State) with ``params``.

        Step it with ``stepper.step(state)``: the grasped nodes follow their recorded
        trajectories; frame n of the recording is reached after n · substeps steps.

        Raises
        ------
        ValueError
            For an unknown model kind, a quasi-inextensible model without shear stiffness, or a
            baseline model with obstacles.
        """
        from isocloth.state import State

        if kind not in MODEL_KINDS:
            raise ValueError(f"unknown model kind {kind!r}; choose one of {MODEL_KINDS}")
        params = {k: float(v) for k, v in (params or {}).items()}
        mode = "quasi-inextensible" if kind == "quasi-inextensible" else self.options.constraint_mode
        if kind == "quasi-inextensible" and "shear_stiffness" not in params and self.material.shear_stiffness <= 0:
            raise ValueError("the quasi-inextensible model needs a shear_stiffness parameter (> 0)")
        model = self.model(params, mode)
        if kind in ("mass-spring", "baraff-witkin") and model.has_contacts:
            raise ValueError(f"the {kind} baseline has no contact handling; use a scene without obstacles, stick "
                             f"or self-collision")
        state = State(self.initial_positions(mode), np.zeros((model.node_count, 3)), 0.0, 0)
        return model, self.stepper(model, kind, params), state

    def run(self, params: dict | None = None, *, kind: str = "inextensible", keep_positions: bool = False,
            frames: int | None = None) -> ReplayResult:
        """Simulate the recording with ``params`` and measure the errors.

        Parameters
        ----------
        params : dict of parameter values (see the module docstring).
        kind : "inextensible" (default), "quasi-inextensible", "mass-spring" or "baraff-witkin".
        keep_positions : also return all node positions per frame (for videos).
        frames : simulate only the first ``frames`` frames.

        Returns
        -------
        ReplayResult (a divergence is reported in it, not raised).

        Raises
        ------
        ValueError
            For an unknown model kind or parameter, or a baseline model with obstacles.
        """
        from isocloth.step.stepper import SimulationDiverged

        params = {k: float(v) for k, v in (params or {}).items()}
        model, stepper, state = self.setup(params, kind)
        rec = self.recording
        f = rec.frame_count if frames is None else min(int(frames), rec.frame_count)
        m = self.marker_nodes.size
        sim = np.full((f, m, 3), np.nan)
        surface = model.surface_positions  # markers and positions of the cloth's surface vertices
        pos = np.full((f, self.mesh.node_count, 3), np.nan) if keep_positions else None
        contact = np.zeros(f, dtype=bool)
        sim[0] = surface(state.x)[self.marker_nodes]
        if pos is not None:
            pos[0] = surface(state.x)
        iters, steps = 0, 0
        diverged, message = False, ""
        t0 = time.perf_counter()
        try:
            for n in range(1, f):
                for _ in range(int(self.options.substeps)):
                    state, info = stepper.step(state)
                    iters += getattr(info, "iterations", 0)
                    steps += 1
                    contact[n] |= getattr(info, "active_contacts", 0) > 0
                if not np.isfinite(state.x).all():
                    raise SimulationDiverged(f"non-finite positions at t = {state.t:.4g} s")
                x = surface(state.x)
                sim[n] = x[self.marker_nodes]
                if pos is not None:
                    pos[n] = x
        except (SimulationDiverged, np.linalg.LinAlgError, FloatingPointError) as exc:
            diverged, message = True, str(exc)
        wall = time.perf_counter() - t0
        recorded = rec.markers[:f]
        done = np.isfinite(sim).all(axis=(1, 2))
        sim_eval = np.where(done[:, None, None], sim, recorded)  # frames never simulated: excluded below
        errors = error_series(sim_eval, recorded, self.weights, rec.times[:f], window=self.options.window)
        if not done.all():
            errors = dataclasses.replace(errors, window=errors.window & done)
        mean_it = iters / steps if steps and kind in ("inextensible", "quasi-inextensible") else float("nan")
        return ReplayResult(params, kind, sim, errors, wall, mean_it, diverged, message, contact, pos)


def _stick_names(stick) -> tuple:
    return (stick,) if isinstance(stick, str) else tuple(str(n) for n in stick)


UNIT_MISMATCH = 3.0
"""The markers' span and the textile's size may differ by this factor (folds, slack) before the
recording's length unit is taken to be wrong."""


def _check_units(span: tuple[float, float], size: tuple[float, float]) -> None:
    """RecordingError when the marker grid's span (width, height) [m] in the first frame is more than
    ``UNIT_MISMATCH`` times larger or smaller than the textile's size: the file's unit is wrong."""
    ratio = max(span) / max(size) if max(size) > 0 else 1.0
    if 1.0 / UNIT_MISMATCH <= ratio <= UNIT_MISMATCH:
        return
    guess = min((("mm", 1e3), ("cm", 1e2), ("m", 1.0), ("km", 1e-3)), key=lambda u: abs(np.log10(ratio / u[1])))
    raise RecordingError(
        f"the cloth markers span {span[0]:.4g} x {span[1]:.4g} m in the first frame but the textile is {size[0]:.4g} x "
        f"{size[1]:.4g} m ({ratio:.3g} times larger): the recording's length unit is probably wrong; read it with "
        f"--units {guess[0]} (or check the scene's cloth size)")


HANGING_COSINE = 0.5
"""A cloth without obstacles must hang from its grasped markers within acos(0.5) = 60° of −z."""


def _check_up_axis(markers: np.ndarray, grasp: np.ndarray, size: tuple[float, float], read_with: str = "z") -> None:
    """RecordingError when a cloth held by its ``grasp`` markers, markers (F, m, 3) [m] in the z-up
    frame (converted from the file with ``up_axis = read_with``), does not hang down: the mean
    offset of its free markers from its grasped ones (over every frame) leans more than 60° away
    from −z (and is longer than a tenth of the cloth). The message names the file axis the cloth
    hangs along, and suggests it as ``--up-axis`` when the cloth hangs towards its negative end."""
    free = np.setdiff1d(np.arange(markers.shape[1]), grasp)
    if free.size == 0 or grasp.size == 0:
        return
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # frames where every marker of a set is missing
        d = np.nanmean(np.nanmean(markers[:, free], axis=1) - np.nanmean(markers[:, grasp], axis=1), axis=0)
    length = float(np.linalg.norm(d))
    if not np.isfinite(length) or length < 0.1 * max(size) or -d[2] / length >= HANGING_COSINE:
        return
    from isocloth.validation.recordings import axes_matrix

    f = axes_matrix(read_with).T @ d  # the offset in the file's axes
    k = int(np.argmax(np.abs(f)))
    where = ("+" if f[k] > 0 else "-") + "xyz"[k]
    advice = (f"read it with --up-axis {'xyz'[k]}" if f[k] < 0 and "xyz"[k] != str(read_with).lower() else
              "no --up-axis makes it hang down")
    raise RecordingError(
        f"the cloth hangs from its grasped markers towards {where} in the file's axes (read with --up-axis "
        f"{read_with}), not down: {advice}; or check the grasp markers (--grasp)")


def replay_from_scene(recording: Recording, scene, overrides=None, options: ReplayOptions | None = None) -> Replay:
    """A Replay with the material, obstacles and numerics of a scene.

    The scene supplies the fabric (ρ and default δ, α), the obstacles (a table for the tablecloth
    experiment; all of them, as the scene loader builds them with
    :func:`~isocloth.scenes.obstacle_specs.build_obstacles`), the self-collision settings, the
    projection tolerance and the contact settings; its grasps are ignored (the recording drives
    the cloth). With ``options.stick`` the recorded stick replaces the scene's ``stick``
    obstacles (scripted ones, e.g. hit-a2's), and when the scene has exactly one stick and the
    stick options are left at their defaults, its radius, segment count and μ are used. When the
    scene's cloth is a ``rectangle`` mesh, its width and height are the textile size and its node
    counts fix the refinement (7×9 nodes for 4×5 markers → refine 2). A scene time step smaller than the frame interval gives sub-steps.

    Parameters
    ----------
    recording : Recording
    scene : built-in scene name or TOML path
    overrides : list of ``key.path=value`` strings (as ``isocloth run --set``)
    options : ReplayOptions; fields left at their defaults are filled from the scene

    Raises
    ------
    SceneError
        For scene problems (an obstacle that cannot be built, e.g. a missing mesh file), or a
        rectangle mesh that is not a refinement of the marker grid.
    """
    from isocloth.scenes.loader import SceneError, load_scene_config, material_of, scene_obstacles
    from isocloth.scenes.schema import MeshRectangle

    cfg, base = load_scene_config(scene, overrides)
    opts = options or ReplayOptions()
    changes: dict = {"tolerance": cfg.simulation.tolerance, "max_iterations": cfg.simulation.max_iterations,
                     "constraint_mode": cfg.cloth.constraint_mode}
    spec = cfg.cloth.mesh
    if isinstance(spec, MeshRectangle):
        if opts.size is None:
            changes["size"] = (spec.width * cfg.cloth.placement.scale, spec.height * cfg.cloth.placement.scale)
        if opts.order is not None:
            count = len(opts.order)
        else:  # every marker but the stick ends is a cloth marker
            count = recording.marker_count - (len(set(recording.names) & set(_stick_names(opts.stick)))
                                              if opts.stick is not None else 0)
        grid = opts.grid
        if grid is None:
            from isocloth.validation.markers import infer_grid_shape

            grid = infer_grid_shape(count)
            changes["grid"] = tuple(grid)
        rx, ry = (spec.nx - 1) / (grid[0] - 1), (spec.ny - 1) / (grid[1] - 1)
        if rx != ry or rx != int(rx):
            raise SceneError(f"the scene mesh has {spec.nx}x{spec.ny} nodes, which is not a refinement of the "
                             f"{grid[0]}x{grid[1]} marker grid; use nx = {grid[0] - 1}k+1, ny = {grid[1] - 1}k+1")
        changes["refine"] = int(rx)
    frame_dt = 1.0 / recording.rate
    sub = max(1, int(round(frame_dt / cfg.simulation.dt)))
    changes["substeps"] = sub
    specs = list(cfg.obstacles)
    if opts.stick is not None:  # the recording drives the stick: the scene's scripted sticks are dropped
        sticks = [sp for sp in specs if sp.type == "stick"]
        specs = [sp for sp in specs if sp.type != "stick"]
        if len(sticks) == 1:
            changes.update({"stick_radius": sticks[0].radius, "stick_segments": sticks[0].segments,
                            "stick_mu": sticks[0].mu})
    defaults = ReplayOptions()
    opts = opts.replace(**{k: v for k, v in changes.items() if getattr(opts, k) == getattr(defaults, k)})
    obstacles = scene_obstacles(cfg, base, specs)
    contact = {"solver": cfg.simulation.solver, "margin": cfg.simulation.contact_margin,
               "penetration_tolerance": cfg.simulation.penetration_tolerance,
               "face_midpoints": cfg.simulation.face_midpoint_contacts}
    self_collision = cfg.self_collision.options() if cfg.self_collision is not None else None
    return Replay(recording, material_of(cfg.cloth), opts, obstacles=obstacles, contact=contact,
                  self_collision=self_collision, constraint_model=cfg.cloth.constraint_model)
