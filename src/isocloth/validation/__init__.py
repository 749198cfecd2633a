"""Validation against recordings (thesis chapter 4, seed 000 §7; docs/design/validation.md).

- :mod:`~isocloth.validation.recordings`, :mod:`~isocloth.validation.motive`,
  :mod:`~isocloth.validation.c3d`: read/write motion-capture recordings (Motive CSV, C3D, npz/CSV);
- :mod:`~isocloth.validation.markers`, :mod:`~isocloth.validation.replay`: markers on the textile's
  grid, the refined simulation mesh, φ⁰ = ϕ⁰, recorded grasps; simulate and compare;
- :mod:`~isocloth.validation.metrics`: e_n, s_n, d_n (thesis eq. 4.3–4.5);
- :mod:`~isocloth.validation.fitting`, :mod:`~isocloth.validation.apriori`: fit δ, α, μ (grid sweep,
  Nelder–Mead, sensitivity, thesis eq. 4.6), locally or on Ray;
- :mod:`~isocloth.validation.comparison`: fit several cloth models (thesis Table 4.3);
- :mod:`~isocloth.validation.synth`: synthetic recordings; :mod:`~isocloth.validation.plots`,
  :mod:`~isocloth.validation.report`: figures, video and result folders;
- :mod:`~isocloth.validation.drape`: the Cusick drape coefficient.
"""

from isocloth.validation.fitting import FitProblem, FitResult, fit, make_evaluator
from isocloth.validation.metrics import ErrorSeries, error_series
from isocloth.validation.recordings import Recording, RecordingError, read_recording, write_recording
from isocloth.validation.replay import Replay, ReplayOptions, ReplayResult, replay_from_scene
from isocloth.validation.synth import synthesize

__all__ = ["Recording", "RecordingError", "read_recording", "write_recording", "Replay", "ReplayOptions",
           "ReplayResult", "replay_from_scene", "ErrorSeries", "error_series", "FitProblem", "FitResult", "fit",
           "make_evaluator", "synthesize"]
