"""Wall-clock budgets: the solvers' loops stop a step once its budget has run out."""

import time

import numpy as np
import pytest

from isocloth.scenes import load_scene
from isocloth.solvers.budget import StepBudgetExceeded, check_budget, wall_clock_budget


def test_a_step_past_its_budget_stops_inside_the_projection_and_leaves_the_state():
    sc = load_scene("tablecloth")  # contacts: the contact projection and its QPs
    st, s = sc.stepper, sc.initial_state
    x = s.x.copy()
    with pytest.raises(StepBudgetExceeded, match="budget of 1e-09 s"):
        with wall_clock_budget(1e-9):
            time.sleep(1e-4)
            st.step(s)
    assert np.array_equal(s.x, x)
    s1, info = st.step(s)  # no budget outside the block: the same step completes
    assert info.converged and s1.t > s.t


def test_a_budget_left_in_time_changes_nothing():
    sc = load_scene("hang-a2")
    with wall_clock_budget(60.0):
        s1, _ = sc.stepper.step(sc.initial_state)
    s2, _ = sc.stepper.step(sc.initial_state)
    assert np.array_equal(s1.x, s2.x)


def test_budgets_nest_and_the_earliest_deadline_holds():
    with wall_clock_budget(1e-9):
        with wall_clock_budget(60.0):
            time.sleep(1e-4)
            with pytest.raises(StepBudgetExceeded):
                check_budget()
    with wall_clock_budget(60.0):
        check_budget()
    check_budget()  # none left


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_a_budget_that_is_not_a_positive_time_is_refused(bad):
    with pytest.raises(ValueError, match="positive number of seconds"):
        with wall_clock_budget(bad):
            pass
