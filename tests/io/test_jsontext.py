"""Result files are valid JSON: NaN and infinity become null, numpy values plain numbers."""

import json
from pathlib import Path

import numpy as np

from isocloth.io.jsontext import json_text


def _strict(text):
    def refuse(token):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_null_and_numpy_values_plain():
    data = {"rtf": float("nan"), "peak": np.float32(1.5), "counts": np.arange(3), "inf": [np.inf, -np.inf],
            "ok": np.bool_(True), "path": Path("runs/x"), 3: "key"}
    out = _strict(json_text(data, sort_keys=True))
    assert out == {"rtf": None, "peak": 1.5, "counts": [0, 1, 2], "inf": [None, None], "ok": True,
                   "path": "runs/x", "3": "key"}


def test_a_run_summary_with_a_nan_is_strict_json(tmp_path, monkeypatch):
    """summary.json used to be written by json.dumps: a NaN real-time factor made it invalid JSON."""
    from isocloth import runner
    from isocloth.scenes.loader import load_scene

    to_dict = runner.RunSummary.to_dict
    monkeypatch.setattr(runner.RunSummary, "to_dict", lambda self: {**to_dict(self), "real_time_factor": np.nan})
    sc = load_scene("hang-a2", ["simulation.duration=0.02", "output.video='none'"])
    runner.run_scene(sc, tmp_path / "run")
    summary = _strict((tmp_path / "run" / "summary.json").read_text())
    assert summary["real_time_factor"] is None and summary["steps"] == 2
