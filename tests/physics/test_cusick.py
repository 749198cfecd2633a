"""Thesis §2.7.2 Cusick drape test: a ring r = 9–15 cm (the 15 cm cloth over a 9 cm table) with its
inner boundary ring fixed drapes under gravity; the drape coefficient (eq. 2.22) grows with the
bending stiffness κ and should not depend on the mesh.

Settings come from the built-in ``cusick-drape`` scene (mesh and κ overridden): ρ = δ = 1 kg/m²,
α = 10 kg/(m²·s), a smooth 0.5 mm perturbation of the rest shape (breaks the axial symmetry), dt = 0.5 ms,
1.5 s (the folds have stopped: |v| < 5 cm/s, DC steady to 1 point), tolerance 1e-3. With dt = 1 ms the
560-node ring at 5κ0 kept single nodes jittering at 0.63 m/s on one machine and not on another (rounding).

κ values. With this code's bending matrix (K = (S − B)ᵀ M⁻¹ (S − B), κ in N·m) the thesis' κ0 = 0.005
is very stiff (DC ≈ 92 % on a 532-node mesh); κ0 = 5e-5 N·m gives the thesis' low-stiffness DC
(18–29 %), and 5κ0 gives 56–76 % (dt 0.5 ms, 2026-11-25).

Time step. dt = 0.5 ms; where dt²κ(π/h)⁴/ρ is large the stepper projects in the implicit-Euler
metric (SolverProjection(metric="auto")), so a fixed point of a step is an equilibrium.

Perturbation. A smooth random field (correlation length 3 cm, 0.5 mm) evaluated at the node
positions, the same on every mesh, so the meshes drape from the same initial shape (per-node
noise made the fine meshes' rest shapes rough and non-developable, i.e. stiffer).

Mesh dependence (open). The drape coefficient still grows with the resolution, e.g. at 5κ0
(dt 2 ms, implicit metric) 59.7 % (250 nodes), 77.4 % (490), 87.0 % (1000); triangle annuli
are stiffer still (81 → 93 %). Ruled out, each measured: the bending operator (its energy on a
smooth shape converges from above, tests/fem), the boundary rows of the Laplacian, the projection
metric, the fast projection's fixed-point bias (closest-point projection: 55.3 / 77.3 %), the
tolerance (1e-2 … 1e-4: 77–78 %), the grasp elimination of the predictor, and the per-node
noise. κ = 0 gives ≈ 4.8 % on every mesh. Found (2026-11-23): the coarse rings drape with element-level
stretch patterns that the nodal rows cannot see (250 nodes: 4.5 % mean element area error, ±8 % edge
strain; 1440 nodes: 0.5 %). The membrane stabilisation (``cloth.membrane_stiffness = 1000``,
docs/design/membrane.md) removes them and narrows 5κ0 to 75–82 % over 250–1000 nodes; what remains
follows the number of folds (5–8). Found later (same day): the jitter of meshes above ~600 nodes
(|v| 0.2–0.5 m/s that never decays, even when started from a settled drape) is a time-step
artefact: with the membrane and dt = 0.5 ms every mesh from 250 to 1210 nodes settles (|v| < 4 cm/s,
median < 1 mm/s). Settled, the DC still rises with the resolution: 5κ0 74.9 / 81.3 / 77.7 / 86.2 /
85.0 / 87.2 % (250 / 360 / 490 / 640 / 810 / 1000 nodes), κ0 55.1 / 51.8 / 53.0 / 56.9 / 66.6 /
65.4 / 74.5 % (… 1210): the folds' length scale (κ/ρg)^(1/3) is 1.7–2.9 cm, only 2–4 node spacings
on these meshes. A stiffer membrane (k_m = 1e4 N/m, dt 0.5 ms) narrows 5κ0 to 86.4–90.1 % over
250–810 nodes but locks: κ0 then drapes at 74–88 %, as high as 5κ0 (the 2×2-point membrane strains
outnumber the degrees of freedom), so no k_m gives both mesh independence and the κ dependence.
Hence the xfail. Measured 2026-11-25 (docs/design/cusick.md): grown from noise, the number of folds
follows the angular resolution; one seeded angular mode, the same on every mesh, removes that
dependence (78.3–79.6 % over 60–110 nodes per ring), but the DC still rises by 4–9 points when the
radial spacing goes from 1 cm to 0.67 cm, with either projection metric, with or without the
membrane, and with the closest-point projection; a clamped (two-ring) inner edge locks.
Current reading (docs/design/cusick.md §6): a smooth inextensible drape leaves the pinned circle horizontally,
so the hinge converges to a clamp, and the folds hinge over a radius ≈ 2κ/(ρ g d²) (≈ 1.1 cm at κ0) that these
meshes do not resolve: the DC converges from below (κ0, clamp: 38.5 % at 300 nodes … 81 % at 1820).

About 2 minutes on two cores, hence ``slow``.
"""

import numpy as np
import pytest

from isocloth.scenes.loader import load_scene
from isocloth.validation.drape import drape_coefficient

pytestmark = pytest.mark.slow

R_TABLE, R_CLOTH = 0.09, 0.15
# the thesis' rows: these tests document that model's drape (thesis §2.7.2); with the default stretch
# limits κ0 drapes at 58 % and 5κ0 at 73 % on the 7 × 60 ring (less than the 20 points apart asserted
# below), and mesh convergence is `isocloth study cusick` (docs/design/constraint-model.md)
THESIS_ROWS = "cloth.constraint_model='thesis-nodal'"
KAPPA0 = 5e-5  # N·m
KAPPAS = (KAPPA0, 5 * KAPPA0)
# (n_radial, n_angular): 250–560 nodes, quads of aspect ≤ 1.7, node spacing ≥ 7.5 mm
MESHES = ((5, 50), (6, 50), (6, 60), (7, 60), (7, 70), (8, 70))


def _run(n_radial: int, n_angular: int, kappa: float) -> dict:
    mesh = (f'{{ generator = "annulus", r_inner = {R_TABLE}, r_outer = {R_CLOTH}, n_radial = {n_radial}, '
            f'n_angular = {n_angular}, element = "quad" }}')
    sc = load_scene("cusick-drape", [f"cloth.mesh={mesh}", f"cloth.kappa={kappa}", THESIS_ROWS])
    x0 = sc.model.initial_positions
    tri = sc.model.mesh.triangulated_faces()
    centre = np.array([0.0, 0.0, x0[:, 2].mean()])
    fixed = np.flatnonzero(np.linalg.norm(x0[:, :2], axis=1) <= R_TABLE + 0.25 * (R_CLOTH - R_TABLE) / (n_radial - 1))
    steps = int(round(sc.duration / sc.dt))
    mark = steps - int(round(0.2 / sc.dt))
    s = sc.initial_state
    residuals, dc_mark = [], None
    for k in range(steps):
        s, info = sc.stepper.step(s)
        residuals.append(info.residual)
        if k + 1 == mark:
            dc_mark = drape_coefficient(s.x, tri, R_TABLE, R_CLOTH, centre[:2])
    dc = drape_coefficient(s.x, tri, R_TABLE, R_CLOTH, centre[:2])
    return {
        "nodes": x0.shape[0],
        "grasped": np.sort(sc.model.grasp_nodes),
        "inner_ring": fixed,
        "tolerance": sc.config.simulation.tolerance,
        "max_residual": max(residuals),
        "dc": dc,
        "dc_drift": dc - dc_mark,
        "v_max": float(np.abs(s.v).max()),
    }


@pytest.fixture(scope="module")
def drapes():
    return {(m, k): _run(*m, k) for k in KAPPAS for m in MESHES}


def test_meshes_span_the_node_range_and_hold_the_inner_ring(drapes):
    nodes = sorted({r["nodes"] for r in drapes.values()})
    assert len(nodes) >= 6 and nodes[0] >= 250 and nodes[-1] <= 1300
    for (m, _), r in drapes.items():
        assert r["grasped"].size == m[1]  # exactly the inner ring
        np.testing.assert_array_equal(r["grasped"], r["inner_ring"])


def test_every_step_converges_and_the_drape_settles(drapes):
    for key, r in drapes.items():
        assert r["max_residual"] <= r["tolerance"], key
        assert abs(r["dc_drift"]) < 1.0, key  # DC moved < 1 point in the last 0.2 s
        # no jitter (0.2–0.6 m/s at single nodes with dt = 1 ms), no travelling folds; the limp 250-node
        # ring still creeps at ~3 cm/s after 1.5 s (DC moving by 0.16 points in the last 0.2 s)
        assert r["v_max"] < 0.05, key


def test_drape_coefficient_is_sensible_and_grows_with_bending_stiffness(drapes):
    for m in MESHES:
        low, high = drapes[(m, KAPPAS[0])]["dc"], drapes[(m, KAPPAS[1])]["dc"]
        assert 10.0 < low < 95.0 and 10.0 < high < 95.0, (m, low, high)
        assert high > low + 20.0, (m, low, high)


@pytest.mark.xfail(strict=True, reason="DC rises with the resolution (≈ 10 points at κ0, 20 at 5κ0 over "
                   "250–560 nodes): convergence from below, the fold hinges are narrower than the elements "
                   "(docs/design/cusick.md §6; the module docstring lists what was ruled out)")
def test_drape_coefficient_does_not_depend_on_the_mesh(drapes):
    """Thesis: the DC is very stable over 24 meshes of 250–1300 nodes; here within 2 points."""
    for k in KAPPAS:
        dcs = [drapes[(m, k)]["dc"] for m in MESHES]
        assert max(dcs) - min(dcs) <= 2.0, (k, np.round(dcs, 2))
