"""Folding motions of a square sheet lying on a table and the twelve cloth-state classes of the
folding database (Coltraro et al. thesis §7.4.1–7.4.2), simulated with the quasi-inextensible cloth model
(a little shear, as the thesis' Chapter 7 sheets).

A fold turns grasped corners over about their fold lines: each corner follows a half circle about
the perpendicular bisector of corner → target (the motion that keeps it at the same distance from
the crease) and is let go at 90 % of the half turn, a few centimetres above the sheet, so that the
cloth is never pushed against the table. Corners moved in one stage move together; stages follow
one another. A fold *under* the cloth is made as a fold on top followed by turning the whole sheet
over (a rigid half turn about the sheet's x axis) and letting it settle.

The thesis shows its twelve classes only in a figure (Fig. 7.4) that the text does not describe; the
classes here follow what §7.4.2 says about them (01 flat; 01 and 04 close; 02/10 and 03/11 the same
fold on top and under; 05 and 12 two corners without and with crossing; 09–12 with cloth under
other cloth; sub-classes in 05, 07 and 08) and are documented in ``docs/perception.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CONSTRAINT_MODE", "CORNERS", "FOLD_CLASSES", "Fold", "FoldClass", "FoldSample", "flip_path",
           "sample_config", "sequence_config", "simulate_sample"]

SIDE = 1.0
"""Side of the square sheet [m] (thesis §7.4: 1 m × 1 m)."""

NODES = 20
"""Nodes per side (thesis §7.4: 400 nodes)."""

CORNERS = {"LL": (-0.5, -0.5), "LR": (0.5, -0.5), "UR": (0.5, 0.5), "UL": (-0.5, 0.5)}
"""Corner positions (x, y) [m] of the sheet centred at the origin: lower/upper, left/right."""

HEIGHT = 0.001
"""Height [m] of the sheet above the table top (z = 0) at the start."""

MOVE_TIME = 1.0
"""Duration [s] of one fold's motion."""

PAUSE = 0.3
"""Time [s] between a release and the next stage."""

SETTLE = 0.6
"""Time [s] after the last release (and after turning the sheet over) before the state is taken."""

CONSTRAINT_MODE = "quasi-inextensible"
"""Constraint mode of every folded sheet, the database's and the sequences': quasi-inextensible (thesis
Definition 2: the shear rows F are left out, so the sheet shears a little, as far as its element edges'
stretch limits allow; the thesis' Chapter 7 sheets allow a small amount of shear, §7.4.1). Fully
inextensible, the 400-node sheet drags over the table instead of turning a flap about its fold line
(docs/design/perception.md)."""


def flip_path(corner, target, *, waypoints: int = 8, stop: float = 0.9, slack: float = 0.04) -> np.ndarray:
    """Displacements (waypoints + 1, 3) float64 [m] of a corner at ``corner`` (2,) [m] on the table
    turned about the fold line that takes it onto ``target`` (2,) [m]: a half circle about the
    perpendicular bisector of the two points, ``stop`` of the way round (the corner is let go above
    its target), ``slack`` tighter at its top than the corner's distance to the crease (a real crease
    is round, it takes up cloth).

    Raises
    ------
    ValueError
        If corner and target coincide or stop is not in (0, 1].
    """
    c = np.array([*np.asarray(corner, dtype=np.float64)[:2], 0.0])
    g = np.array([*np.asarray(target, dtype=np.float64)[:2], 0.0])
    d = float(np.linalg.norm(g - c))
    if not d > 0:
        raise ValueError(f"fold target {tuple(g[:2])} is the corner itself")
    if not 0 < stop <= 1:
        raise ValueError(f"stop must be in (0, 1], got {stop}")
    mid, r, u = 0.5 * (c + g), 0.5 * d, (g - c) / d
    s = np.linspace(0.0, 1.0, waypoints + 1)
    radius = r * (1.0 - slack * np.sin(np.pi * s))
    angle = stop * np.pi * s
    p = mid - (radius * np.cos(angle))[:, None] * u + (radius * np.sin(angle))[:, None] * np.array([0.0, 0.0, 1.0])
    return p - c


@dataclass(frozen=True)
class Fold:
    """One stage of a folding sequence: corners (names of :data:`CORNERS`) and their targets (x, y)
    [m] on the table, moved together."""

    corners: tuple[str, ...]
    targets: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class FoldSample:
    """A drawn sample: its class label, sub-class, the fold stages, whether the sheet is turned over
    at the end, and its rotation about the vertical [rad] (applied to the final state; the table is
    isotropic)."""

    label: str
    subclass: str
    folds: tuple[Fold, ...]
    turn_over: bool
    rotation: float
    params: dict = field(default_factory=dict)


def _toward(corner: str, point, s: float, angle: float = 0.0) -> tuple[float, float]:
    """The point s of the way from a corner to ``point`` (2,) [m], the direction turned by ``angle``
    [rad] about the corner."""
    c = np.asarray(CORNERS[corner])
    d = np.asarray(point, dtype=np.float64) - c
    ca, sa = np.cos(angle), np.sin(angle)
    d = np.array([ca * d[0] - sa * d[1], sa * d[0] + ca * d[1]])
    return tuple(float(v) for v in c + s * d)


_CENTRE = (0.0, 0.0)


@dataclass(frozen=True)
class FoldClass:
    """A class of the folding database: ``label`` ("01" … "12"), a one-line description, and
    ``draw(rng) -> (subclass, folds, turn_over, params)``."""

    label: str
    description: str
    draw: object

    def sample(self, rng: np.random.Generator) -> FoldSample:
        """A sample of this class with parameters drawn from rng (and a rotation in [−π, π))."""
        sub, folds, turn, params = self.draw(rng)
        rotation = float(rng.uniform(-np.pi, np.pi))
        return FoldSample(self.label, sub, tuple(folds), bool(turn), rotation, params)


def _jitter(rng, degrees: float) -> float:
    return float(np.radians(rng.uniform(-degrees, degrees)))


def _one_corner(rng, corner="UL"):
    s, a = float(rng.uniform(0.6, 0.9)), _jitter(rng, 15)
    return "", [Fold((corner,), (_toward(corner, _CENTRE, s, a),))], False, {"depth": s, "angle": a}


def _half(rng, left=("UL", "LL")):
    d, a = float(rng.uniform(0.9, 1.0)), _jitter(rng, 4)
    targets = tuple(_toward(c, (CORNERS[c][0] + 1.0, CORNERS[c][1]), d, a) for c in left)
    return "", [Fold(left, targets)], False, {"depth": d, "angle": a}


def _dog_ear(rng):
    # the fold line crosses both sides 0.20-0.25 m from the corner: past the second boundary edge, the last
    # one the cloth coordinates observe (0.18 m from the corner at 12 nodes per side, 0.11 m at 20)
    s, a = float(rng.uniform(0.4, 0.5)), _jitter(rng, 15)
    return "", [Fold(("UL",), (_toward("UL", _CENTRE, s, a),))], False, {"depth": s, "angle": a}


def _corners(rng, corners, lo=0.45, hi=0.7):
    s, a = float(rng.uniform(lo, hi)), _jitter(rng, 10)
    return [Fold(tuple(corners), tuple(_toward(c, _CENTRE, s, a) for c in corners))], {"depth": s, "angle": a}


def _two_apart(rng):
    sub = "opposite" if rng.random() < 0.5 else "adjacent"
    folds, p = _corners(rng, ("UL", "LR") if sub == "opposite" else ("UL", "UR"))
    return sub, folds, False, p


def _diagonal(rng, corner="LL", opposite="UR"):
    s, a = float(rng.uniform(0.85, 1.0)), _jitter(rng, 4)
    return "", [Fold((corner,), (_toward(corner, CORNERS[opposite], s, a),))], False, {"depth": s, "angle": a}


def _three(rng):
    sub = "LR open" if rng.random() < 0.5 else "UR open"
    corners = ("UL", "UR", "LL") if sub == "LR open" else ("UL", "LL", "LR")
    folds, p = _corners(rng, corners)
    return sub, folds, False, p


def _four(rng):
    sub = "straight" if rng.random() < 0.5 else "skewed"
    s = float(rng.uniform(0.45, 0.7))
    a = _jitter(rng, 5) + (np.radians(20.0) if sub == "skewed" else 0.0)
    corners = ("LL", "LR", "UR", "UL")
    return sub, [Fold(corners, tuple(_toward(c, _CENTRE, s, a) for c in corners))], False, {"depth": s, "angle": a}


def _under(draw):
    def under(rng):
        sub, folds, _, params = draw(rng)
        return sub, folds, True, params
    return under


def _crossing(rng):
    s1, s2 = float(rng.uniform(0.9, 1.05)), float(rng.uniform(0.9, 1.05))
    a1, a2 = _jitter(rng, 8), _jitter(rng, 8)
    folds = [Fold(("UL",), (_toward("UL", _CENTRE, s1, a1),)), Fold(("UR",), (_toward("UR", _CENTRE, s2, a2),))]
    return "", folds, False, {"depth": [s1, s2], "angle": [a1, a2]}


FOLD_CLASSES: tuple[FoldClass, ...] = (
    FoldClass("01", "flat", lambda rng: ("", [], False, {})),
    FoldClass("02", "one corner folded on top towards the centre", _one_corner),
    FoldClass("03", "folded in half on top (left half over the right half)", _half),
    FoldClass("04", "a dog-ear: the tip of one corner turned over (close to flat)", _dog_ear),
    FoldClass("05", "two corners folded on top, not crossing (opposite or adjacent corners)", _two_apart),
    FoldClass("06", "folded along the diagonal on top (a triangle)", _diagonal),
    FoldClass("07", "three corners folded on top (the lower or the upper right corner open)", _three),
    FoldClass("08", "four corners folded in on top (straight or skewed folds)", _four),
    FoldClass("09", "folded along the diagonal, the flap under the sheet", _under(_diagonal)),
    FoldClass("10", "one corner folded under the sheet", _under(lambda rng: _one_corner(rng, "LL"))),
    FoldClass("11", "folded in half, the flap under the sheet", _under(_half)),
    FoldClass("12", "two adjacent corners folded deep on top, the second crossing over the first", _crossing),
)


def sample_config(sample: FoldSample, *, seed: int = 0, nodes: int = NODES, dt: float = 0.01) -> tuple[dict, float]:
    """The scene (a dict for :func:`isocloth.scenes.loader.config_from_dict`) of a sample's folds,
    and the time [s] at which its last grasp lets go. The sheet: 1 m square of ``nodes`` × ``nodes``
    nodes, triangles split along alternating diagonals (creases run along element edges in both
    diagonal directions; a quad mesh with the stretch-limited rows cannot crease along its quads'
    diagonals and its folded corners spring back), light cotton, :data:`CONSTRAINT_MODE`, on a table
    (μ = 0.5) with self-collisions (τ0 = 5 mm, μ = 0.3), a 0.5 mm random shape of ``seed``."""
    grasps, t = [], 0.05
    for fold in sample.folds:
        for corner, target in zip(fold.corners, fold.targets):
            c = CORNERS[corner]
            path = flip_path(c, target)
            times = t + MOVE_TIME * np.linspace(0.0, 1.0, len(path))
            grasps.append(dict(name=f"{corner}", nodes=dict(nearest=[[c[0], c[1], HEIGHT]]), start=round(t, 6),
                               end=round(t + MOVE_TIME + 0.05, 6),
                               trajectory=dict(type="waypoints", times=[round(float(v), 6) for v in times],
                                               points=path.round(6).tolist(),
                                               interpolation="cubic")))
        t += MOVE_TIME + PAUSE
    release = t - PAUSE + 0.05 if sample.folds else 0.0
    duration = round(round((max(release, 0.0) + SETTLE) / dt) * dt, 9)
    config = dict(
        name=f"fold-class-{sample.label}",
        description=f"folding database class {sample.label}",
        cloth=dict(mesh=dict(generator="rectangle", width=SIDE, height=SIDE, nx=nodes, ny=nodes, element="triangle"),
                   fabric="light-cotton", constraint_mode=CONSTRAINT_MODE,
                   placement=dict(translate=[0.0, 0.0, HEIGHT]),
                   noise=dict(sigma=0.0005, seed=int(seed))),
        grasps=grasps,
        obstacles=[dict(type="plane", name="table", mu=0.5)],
        self_collision=dict(thickness=0.005, mu=0.3),
        simulation=dict(dt=dt, duration=duration),
        output=dict(video="none"))
    return config, release


def _turned_over(x: np.ndarray) -> np.ndarray:
    """Positions (n, 3) turned over by a half turn about the x axis through the sheet's centre, resting
    at the starting height."""
    c = x.mean(axis=0)
    y = np.column_stack([x[:, 0], 2 * c[1] - x[:, 1], -x[:, 2]])
    y[:, 2] += HEIGHT - y[:, 2].min()
    return y


def _rotated(x: np.ndarray, angle: float) -> np.ndarray:
    c = x.mean(axis=0)
    ca, sa = np.cos(angle), np.sin(angle)
    d = x - c
    return np.column_stack([c[0] + ca * d[:, 0] - sa * d[:, 1], c[1] + sa * d[:, 0] + ca * d[:, 1], x[:, 2]])


def simulate_sample(sample: FoldSample, *, seed: int = 0, nodes: int = NODES, dt: float = 0.01,
                    max_wall: float | None = None):
    """Simulate a sample's folds (and the turn over) and return (positions (n, 3) float64 [m] of the
    final state, rotated by ``sample.rotation``; mesh; seconds simulated; steps that did not converge).

    Raises
    ------
    isocloth.step.stepper.SimulationDiverged
        If the simulation diverges.
    TimeoutError
        If it takes longer than ``max_wall`` seconds of wall-clock time (None: no limit).
    """
    from isocloth.scenes.loader import build_scene, config_from_dict
    from isocloth.state import State

    import time

    config, _ = sample_config(sample, seed=seed, nodes=nodes, dt=dt)
    scene = build_scene(config_from_dict(config, f"fold class {sample.label}"))
    start = time.perf_counter()

    def advance(state, steps):
        unconverged = 0
        for _ in range(steps):
            state, info = scene.stepper.step(state)
            unconverged += not info.converged
            if max_wall is not None and time.perf_counter() - start > max_wall:
                raise TimeoutError(f"class {sample.label} sample took more than {max_wall:g} s at t = {state.t:.2f} s")
        return state, unconverged

    steps = int(round(scene.duration / dt))
    state, unconverged = advance(scene.initial_state, steps)
    simulated = steps * dt
    if sample.turn_over:
        state = State(_turned_over(state.x), np.zeros_like(state.v), state.t, state.step_index)
        extra = int(round(SETTLE / dt))
        state, more = advance(state, extra)
        unconverged += more
        simulated += extra * dt
    return _rotated(state.x, sample.rotation), scene.model.mesh, simulated, unconverged


SEQUENCES: dict[str, tuple[Fold, ...]] = {
    "fold-two-corners": (Fold(("LL",), (_toward("LL", _CENTRE, 1.2),)), Fold(("UR",), (_toward("UR", _CENTRE, 1.2),))),
    "fold-four-corners": tuple(Fold((c,), (_toward(c, _CENTRE, 0.7),)) for c in ("LL", "LR", "UR", "UL")),
    "fold-in-half": (Fold(("UL", "LL"), ((0.45, 0.5), (0.45, -0.5))),),
}
"""The folding sequences of thesis §7.4.1 (Fig. 7.3): two opposite corners folded one after the other
past the centre (the second crosses the first); the four corners folded in one by one; the sheet
folded in half. The built-in scenes of the same names run them."""


def sequence_sample(name: str) -> FoldSample:
    """The :class:`FoldSample` of a sequence of :data:`SEQUENCES`.

    Raises
    ------
    KeyError
        If the name is not one of :data:`SEQUENCES` (the message lists them).
    """
    if name not in SEQUENCES:
        raise KeyError(f"unknown folding sequence {name!r}; the sequences are {', '.join(SEQUENCES)}")
    return FoldSample(name, "", SEQUENCES[name], False, 0.0)


def sequence_config(name: str, *, nodes: int = NODES, dt: float = 0.01) -> tuple[dict, float]:
    """:func:`sample_config` of a sequence of :data:`SEQUENCES`.

    Raises
    ------
    KeyError
        If the name is not one of :data:`SEQUENCES`.
    """
    return sample_config(sequence_sample(name), nodes=nodes, dt=dt)


def sequence_stages(name: str, times) -> np.ndarray:
    """(F,) int64: how many of the sequence's folds have turned their corners past the vertical
    (half of their motion) at each time (F,) [s] — the blocks of its distance matrix (thesis §7.4.1:
    a corner counts as folded before it is let go)."""
    t = np.asarray(times, dtype=np.float64)
    halfway = 0.05 + (MOVE_TIME + PAUSE) * np.arange(len(SEQUENCES[name])) + 0.5 * MOVE_TIME
    return (t[:, None] >= halfway[None, :]).sum(axis=1).astype(np.int64)


def simulate_sequence(name: str, *, fps: float = 10.0, nodes: int = NODES, dt: float = 0.01):
    """Simulate a folding sequence of :data:`SEQUENCES` and return (times (F,) float64 [s], positions
    (F, n, 3) float64 [m] of the frames at ``fps`` from t = 0, stages (F,) int64 of
    :func:`sequence_stages`, mesh).

    Raises
    ------
    KeyError
        If the name is not one of :data:`SEQUENCES`.
    isocloth.step.stepper.SimulationDiverged
        If the simulation diverges.
    """
    from isocloth.scenes.loader import build_scene, config_from_dict

    config, _ = sequence_config(name, nodes=nodes, dt=dt)
    scene = build_scene(config_from_dict(config, name))
    every = max(int(round(1.0 / (fps * dt))), 1)
    state = scene.initial_state
    times, frames = [0.0], [state.x.copy()]
    for k in range(1, int(round(scene.duration / dt)) + 1):
        state, _ = scene.stepper.step(state)
        if k % every == 0:
            times.append(state.t)
            frames.append(state.x.copy())
    times = np.asarray(times)
    return times, np.asarray(frames), sequence_stages(name, times), scene.model.mesh
