import numpy as np
import pytest

from isocloth.control import TrajectoryFixed
from isocloth.model import Material, ModelBuilder
from isocloth.solvers.projection import SolverProjection
from isocloth.step import Stepper


def simulate(model, dt, steps, *, tol=1e-3, max_iterations=50, record=None):
    """Run `steps` steps; returns final state, list of StepInfo, and recorded values."""
    st = Stepper(model, dt=dt, solver=SolverProjection(tolerance=tol, max_iterations=max_iterations))
    s = model.initial_state()
    infos, rec = [], []
    for _ in range(steps):
        s, info = st.step(s)
        infos.append(info)
        if record is not None:
            rec.append(record(s))
    return s, infos, rec


@pytest.fixture
def sim():
    return simulate
