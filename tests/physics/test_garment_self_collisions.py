"""Garment self-collision scenes (issue 4): the Garment Library shorts folded onto a table
(``shorts-fold``, 235 nodes, 4.5 s, seed 000 §6.4) and the fine shorts mesh (``shorts-drop-fine``,
shorts-iso.obj, 1545 nodes) dropped onto a table, where they collapse onto themselves. Every step
converges and every saved frame is free of intersecting face pairs (exact triangle–triangle tests).

Long: about 5 and 16 minutes on one core of a 2.3 GHz Xeon, so these run only with
``python3 -m pytest -m long`` (not in the default or the ``slow`` selection). Measured 2026-11-23:
shorts-fold 0 intersections in 114 frames, total area error up to 2.8 % and mean element area error
median 11.6 % (up to 15.5 %): the legs crumple on the table in element patterns the nodal rows cannot
see (the membrane stabilisation would remove them, 1.2 % median and 0.33 % total with k_m = 1000 N/m,
but with it the contact steps at t ≈ 0.41 s do not converge at dt = 10 ms and diverge at 5 ms: node
speeds reach 3–6 m/s, against 2 m/s without it. A guess, not checked: the contact QPs project in the
mass metric and undo membrane strain that the next predictor turns into speed). The membrane relaxation after the
projection (``simulation.membrane_coupling = "relaxation"``, 2026-11-25) runs shorts-fold with median 2.5 %, total
≤ 1.5 % and no unconverged step, but diverges at the waist drop with a 0.5 mm rest-shape noise (seed 1), so the
scene keeps k_m = 0 (docs/design/membrane.md). The waist drop is fragile: with ``simulation.substeps = 2``
(5 ms) the contact passes stall at t ≈ 3.3 s and the run stops (SimulationDiverged at t = 3.315 s); interior
triangles are then −82 … +163 % off their rest area (2026-11-26). shorts-drop-fine: 0 intersections in 26 frames, element area error
median 3.05 %, total ≤ 0.39 %. The clothing models are from the UC Berkeley Garment Library."""

import numpy as np
import pytest

pytestmark = pytest.mark.long

SCENES = ["shorts-fold", "shorts-drop-fine"]


@pytest.fixture(scope="module")
def runs(scene_run, tmp_path_factory):
    return {name: scene_run(name, tmp_path_factory.mktemp(name)) for name in SCENES}


@pytest.mark.parametrize("name", SCENES)
def test_garment_never_interpenetrates(name, runs):
    sc, summary, traj, rows = runs[name]  # converged and intersection-free (checked by scene_run)
    assert len(traj.times) >= 25
    # the garment does touch itself: self-collision rows entered the QPs
    assert max(int(r["collision_rows"]) for r in rows) > 0


@pytest.mark.parametrize("name", [
    pytest.param("shorts-fold", marks=pytest.mark.xfail(strict=True, reason="total area error 2.8 % (see the "
                                                                          "module docstring)")),
    "shorts-drop-fine"])
def test_garment_total_area_is_kept(name, runs):
    rows = runs[name][3]
    total = max(float(r["area_error_total"]) for r in rows)
    mean = np.array([float(r["area_error_mean"]) for r in rows])
    print(f"{name}: max total area error {total:.4f}, element area error median {np.median(mean):.4f} "
          f"max {mean.max():.4f}")
    assert total < 0.005  # core criterion on the total area (issue 2)
