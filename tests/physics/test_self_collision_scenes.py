"""Self-collision scenes end to end (issue 4): every saved frame of hit-a2, twist and drop-fold is
free of intersecting face pairs (exact triangle–triangle tests, independent of the solver), every
step converges, and in drop-fold the folded layers keep the thickness τ0 once they rest on each
other (seed 000 §3.2–3.3, §4.1).

Slow: hit-a2 ~10 s, twist ~8 s, drop-fold ~35 s on one core. Measured on shorts-fold (4.5 s,
~270 s of CPU on a loaded machine, not run here): 0 intersections in 114 frames, all 450 steps
converged (11 split into substeps)."""

import csv

import numpy as np
import pytest

from isocloth.contact.intersection import check_trajectory
from isocloth.io.trajectory import load_trajectory
from isocloth.runner import run_scene
from isocloth.scenes.loader import load_scene

pytestmark = pytest.mark.slow


def _run(name, tmp_path):
    sc = load_scene(name, ["output.video='none'"])
    folder = tmp_path / name
    summary = run_scene(sc, folder, progress=False, render=False)
    rows = list(csv.DictReader(open(folder / "diagnostics.csv")))
    return sc, summary, load_trajectory(folder), rows


# Per-element area error (thesis eq. 2.24) at steps with collision rows in the working set: bounds on
# its largest and median value and on sign flips of large step-to-step changes (no oscillation). Measured
# with the scenes' membrane stabilisation (k_m = 1000 N/m): drop-fold ≤ 1.6 % (5.5 % median, 13.8 %
# max without it), hit-a2 ≤ 4.3 % for one step of the 3 m/s hit, median 0.7 % (16.3 % without). twist has no stabilisation:
# its held corners demand more crumpling than the 11 × 11 sheet can fold (11 % mean, up to 20 %),
# and with k_m ≥ 300 N/m its steps stop converging.
AREA_BOUNDS = {"drop-fold": 0.02, "hit-a2": 0.05}


def _check_area_error_in_contact(name, rows):
    in_contact = np.array([int(r["active_collisions"]) > 0 for r in rows])
    assert in_contact.sum() >= 5, name
    all_mean = np.array([float(r["area_error_mean"]) for r in rows])
    mean = all_mean[in_contact]
    # oscillation: step-to-step changes over 0.5 % between consecutive contact steps that flip sign
    # (an impact may give one spike up and down; a chattering response would flip at every step)
    d = np.diff(all_mean)[in_contact[1:] & in_contact[:-1]]
    big = np.sign(d[np.abs(d) > 0.005])
    flips = int(np.sum(big[1:] != big[:-1]))
    total = max(float(r["area_error_total"]) for r in rows)
    print(f"{name}: {in_contact.sum()} contact steps, element area error mean ≤ {mean.max():.4f}, "
          f"median {np.median(mean):.4f}, {big.size} changes > 0.5 % with {flips} sign flips, total ≤ {total:.4f}")
    assert mean.max() <= AREA_BOUNDS[name], mean.max()
    assert np.median(mean) <= 0.01, np.median(mean)
    assert flips <= 2, (flips, big)
    assert total < 0.005  # core criterion on the total area (issue 2)


@pytest.mark.parametrize("name", ["hit-a2", "twist", "drop-fold"])
def test_scene_never_interpenetrates(name, tmp_path):
    sc, summary, traj, rows = _run(name, tmp_path)
    assert summary.simulated_time == pytest.approx(sc.duration)
    assert summary.unconverged_steps == 0 and summary.max_residual <= sc.config.simulation.tolerance
    report = check_trajectory(traj)
    assert len(report.frames) >= 50
    assert report.ok, report.to_dict()["intersections"][:3]
    # the scene does reach self-contact (or the stick): collision rows were in the QPs
    assert max(int(r["collision_rows"]) for r in rows) > 0
    if name in AREA_BOUNDS:
        _check_area_error_in_contact(name, rows)
    if name == "drop-fold":
        # folded onto itself and resting: non-adjacent primitives stay ≥ 0.9 τ0 apart (issue 4)
        det, tau = sc.model.collision_detector, sc.model.self_collision.thickness
        late = np.flatnonzero(traj.times >= 0.5)
        d = [det.min_distance(traj.positions[f]) for f in late]
        assert np.isfinite(d).all()  # the layers are within 4 τ0 of each other: it did fold
        assert min(d) >= 0.9 * tau, min(d) / tau
