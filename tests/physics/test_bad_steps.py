"""Misuse of ``step`` and numerical blow-ups inside it (fuzz sweep 19): a bad input state or dt is a
named ValueError / TypeError, an overflow or singular system inside the step is SimulationDiverged,
never a raw LinAlgError, a NaN state or a state at t = NaN marked converged. Both steppers: the
inextensible :class:`Stepper` and the elastic :class:`ImplicitEulerStepper`."""

import warnings

import numpy as np
import pytest

from isocloth.baselines.implicit import ImplicitEulerStepper
from isocloth.baselines.mass_spring import MassSpringForces
from isocloth.contact.obstacles.codim import ObstacleSegments
from isocloth.contact.obstacles.plane import ObstaclePlane
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder
from isocloth.step.contact_projection import ContactProjection
from isocloth.step.stepper import SimulationDiverged, Stepper

KINDS = ["inextensible", "elastic"]


def _stepper(kind="inextensible", *, gravity=9.8, delta=0.08, limited=False, obstacle=True, timed=False,
             size=0.3, height=0.05):
    """A 3 × 3 triangle sheet (corner 0 grasped) above a floor, and a stepper for it (dt = 0.01 s)."""
    mat = Material(rho=0.16, delta=delta, alpha=0.3, gravity=gravity)
    mesh = rectangle(size, size, 3, 3, element="triangle", center=(0.0, 0.0, height))
    b = ModelBuilder().set_cloth(mesh, mat, constraint_model="stretch-limited" if limited else "thesis-nodal")
    b.add_grasp([0], start=0.05 if timed else 0.0)
    if obstacle:
        b.add_obstacle(ObstaclePlane())
    model = b.finalize()
    if kind == "elastic":
        return model, ImplicitEulerStepper(model, MassSpringForces(model.mesh, 10.0), dt=0.01)
    return model, Stepper(model, dt=0.01)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the overflows themselves
        yield


# ---------------------------------------------------------------- 1. overflow -> SimulationDiverged
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", ["dt", "gravity", "delta", "errstate"])
def test_an_overflowing_step_is_a_divergence_naming_the_fix(kind, case):
    """dt = 1e300, gravity or virtual density 1e300 used to escape as LinAlgError: SVD did not converge."""
    model, st = _stepper(kind, **({"gravity": 1e300} if case == "gravity" else {}),
                         **({"delta": 1e300} if case == "delta" else {}))
    dt = 1e300 if case in ("dt", "errstate") else None
    s = model.initial_state()
    with pytest.raises(SimulationDiverged, match=r"reduce dt or check the scene's values"):
        with np.errstate(all="raise" if case == "errstate" else "warn"):  # FloatingPointError mapped too
            for _ in range(3):
                s, _ = st.step(s, dt=dt)


def test_a_singular_projection_is_a_divergence_naming_the_stage():
    """A needle bed of radius 1e300: the contact QP's least squares fails (LinAlgError) inside the projection."""
    b = ModelBuilder().set_cloth(rectangle(0.3, 0.3, 3, 3, element="triangle", center=(0.0, 0.0, 0.5)))
    model = b.add_thin_obstacle(ObstacleSegments.needle_bed(radius=1e300)).finalize()
    with pytest.raises(SimulationDiverged, match=r"constraint projection failed numerically at t = 0.01 s "
                                                 r"\(LinAlgError: .*reduce dt"):
        Stepper(model, dt=0.01).step(model.initial_state())


def _raising(exc):
    def f(*args, **kwargs):
        raise exc
    return f


NUMERICAL = [np.linalg.LinAlgError("SVD did not converge"), FloatingPointError("overflow encountered"),
             ValueError("array must not contain infs or NaNs"), RuntimeError("Factor is exactly singular")]
PROGRAMMING = [IndexError("index 7 is out of bounds"), KeyError("rows"), TypeError("unsupported operand"),
               ValueError("operands could not be broadcast together"), RuntimeError("called before factorize()"),
               ValueError("grasp_targets must be finite")]  # an input check of the package, not a divergence


@pytest.mark.parametrize("exc", NUMERICAL + PROGRAMMING, ids=lambda e: f"{type(e).__name__}:{e}")
def test_only_numerical_failures_inside_a_step_become_divergences(monkeypatch, exc):
    model, st = _stepper(limited=True)
    monkeypatch.setattr(ContactProjection, "solve", _raising(exc))
    if any(exc is e for e in NUMERICAL):
        match = rf"constraint projection failed numerically .*{type(exc).__name__}"
        with pytest.raises(SimulationDiverged, match=match):
            st.step(model.initial_state())
    else:  # a programming error is not masked
        with pytest.raises(type(exc)) as info:
            st.step(model.initial_state())
        assert info.value is exc


@pytest.mark.parametrize("exc", [NUMERICAL[0], PROGRAMMING[0]], ids=["LinAlgError", "IndexError"])
def test_the_elastic_stepper_maps_only_numerical_failures(monkeypatch, exc):
    model, st = _stepper("elastic")
    monkeypatch.setattr(st.forces, "force_and_stiffness", _raising(exc))
    expected = SimulationDiverged if exc is NUMERICAL[0] else type(exc)
    with pytest.raises(expected, match="elastic forces failed numerically" if expected is SimulationDiverged else None):
        st.step(model.initial_state())


# ---------------------------------------------------------------- 2. non-finite time
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("t", [float("nan"), float("inf"), -float("inf"), "0.0", None])
def test_a_state_at_a_non_finite_time_is_refused(kind, t):
    """t = NaN used to step to t = NaN, marked converged."""
    model, st = _stepper(kind)
    s = model.initial_state()
    s.t = t
    with pytest.raises(ValueError, match=r"state\.t must be a finite time"):
        st.step(s)


# ---------------------------------------------------------------- 3. integer positions
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["int", "float32", "list"])
def test_integer_or_list_positions_are_converted_to_float64(kind, form):
    """A 2 m sheet whose nodes sit at whole metres: x.astype(int) used to raise LinAlgError."""
    model, st = _stepper(kind, size=2.0, height=1.0)
    s = model.initial_state()
    ref, _ = st.step(s.copy())
    bad = s.copy()
    bad.x = {"int": lambda a: a.astype(int), "float32": lambda a: a.astype(np.float32),
             "list": lambda a: a.tolist()}[form](s.x)
    new, info = st.step(bad)
    assert new.x.dtype == np.float64 and np.isfinite(new.x).all() and new.t == pytest.approx(0.01)
    np.testing.assert_allclose(new.x, ref.x, rtol=0, atol=1e-12)
    assert type(bad.x) is type({"int": s.x, "float32": s.x, "list": []}[form])  # the input is not modified


@pytest.mark.parametrize("kind", KINDS)
def test_positions_truncated_to_integers_are_a_named_error(kind):
    """A 0.3 m sheet truncated to int collapses to one point: the constraints' gradients vanish."""
    model, st = _stepper(kind)
    s = model.initial_state()
    s.x = s.x.astype(int)
    with pytest.raises(ValueError, match=r"state\.x puts both ends of \d+ element edge\(s\) at one point"):
        st.step(s)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("value", [np.zeros((9, 3), dtype=complex), np.full((9, 3), "a"), np.zeros((9, 3), bool)],
                         ids=["complex", "str", "bool"])
def test_non_real_positions_are_refused(kind, value):
    model, st = _stepper(kind)
    s = model.initial_state()
    s.v = value
    with pytest.raises(ValueError, match=r"state\.v must be a real \(float64\) array of shape \(9, 3\)"):
        st.step(s)


# ---------------------------------------------------------------- 4. held_edges
@pytest.mark.parametrize("limited", [True, False], ids=["stretch-limited", "no-limits"])
@pytest.mark.parametrize("held, message", [
    ([99999], r"state\.held_edges names edge 99999, but this model has "),
    ([-1], r"state\.held_edges names edge -1"),
    ([0, 0], r"state\.held_edges repeats an edge"),
    ([0.5], r"state\.held_edges must be a one-dimensional int64 array"),
    ([[0]], r"state\.held_edges must be a one-dimensional int64 array"),
])
def test_held_edges_are_checked_against_the_models_stretch_limits(limited, held, message):
    """held_edges = [99999] used to raise IndexError in the contact projection."""
    model, st = _stepper(limited=limited)
    if not limited and held == [0, 0]:
        message = r"state\.held_edges names edge 0, but this model has no stretch-limited edges"
    s = model.initial_state()
    s.held_edges = np.array(held)
    with pytest.raises(ValueError, match=message):
        st.step(s)


def test_valid_held_edges_step():
    model, st = _stepper(limited=True)
    s = model.initial_state()
    s.held_edges = [0]  # a list is accepted
    new, info = st.step(s)
    assert np.isfinite(new.x).all() and new.held_edges.dtype == np.int64


# ---------------------------------------------------------------- 5. other misuse
@pytest.mark.parametrize("kind", KINDS)
def test_a_step_from_something_that_is_not_a_state_is_a_type_error(kind):
    model, st = _stepper(kind)
    with pytest.raises(TypeError, match="state must be an isocloth State .*got NoneType"):
        st.step(None)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", [0.0, -0.01, float("nan"), float("inf"), "ten ms"])
def test_the_elastic_stepper_refuses_a_bad_dt_too(kind, dt):
    """The elastic stepper used to take any dt: NaN gave NaN, a negative dt ran time backwards."""
    model, st = _stepper(kind)
    with pytest.raises(ValueError, match="dt must be"):
        st.step(model.initial_state(), dt=dt)
    if kind == "elastic":
        with pytest.raises(ValueError, match="dt must be"):
            ImplicitEulerStepper(model, st.forces, dt=dt)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", [-1, 1.5, True, "3"])
def test_a_bad_step_index_is_refused(kind, k):
    model, st = _stepper(kind)
    s = model.initial_state()
    s.step_index = k
    with pytest.raises(ValueError, match=r"state\.step_index must be an integer >= 0"):
        st.step(s)


@pytest.mark.parametrize("field, value, message", [
    ("factor_point", np.zeros((3, 3)), r"state\.factor_point must have shape \(9, 3\)"),
    ("factor_point", np.full((9, 3), np.nan), r"state\.factor_point is not finite at 9 node"),
    ("contact_keys", np.zeros((2, 2), dtype=np.int64), r"state\.contact_keys must be a one-dimensional int64"),
    ("contact_keys", np.array([1.5]), r"state\.contact_keys must be a one-dimensional int64"),
])
def test_bad_warm_start_fields_are_refused(field, value, message):
    model, st = _stepper(obstacle=False)  # (without obstacles the projection uses factor_point)
    s = model.initial_state()
    setattr(s, field, value)
    with pytest.raises(ValueError, match=message):
        st.step(s)


@pytest.mark.parametrize("kind", KINDS)
def test_grasp_anchors_of_the_wrong_shape_are_refused_for_timed_grasps(kind):
    model, st = _stepper(kind, timed=True)
    s = model.initial_state()
    s.grasp_anchors = np.zeros((5, 3))
    with pytest.raises(ValueError, match=r"state\.grasp_anchors must have shape \(1, 3\)"):
        st.step(s)
    s.grasp_anchors = np.full((1, 3), np.nan)  # NaN: the grasp has not started yet
    new, _ = st.step(s)
    assert np.isfinite(new.x).all()
