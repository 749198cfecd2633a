"""Stage 3: compose predictor and solvers into one time step."""
from isocloth.step.diagnostics import StepInfo
from isocloth.step.stepper import SimulationDiverged, Stepper

__all__ = ["Stepper", "StepInfo", "SimulationDiverged"]
