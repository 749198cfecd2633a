"""Shared synthetic recordings of the hang-a2 scene (DIN A2 wool, 4×5 markers on a 7×9 mesh).

The synthetic sheet is flat at rest (``cloth.noise.sigma=0``, the replay's rest shape) and has a
small bending stiffness (κ = 1e-3 N·m): with κ = 0 a sheet shaken perpendicular to its plane is so
sensitive that a 0.2 % change of α or of the solver tolerance moves the markers by ~2 mm
(docs/design/validation.md), which would swamp the 0.5 mm marker noise these tests resolve.
"""

from types import SimpleNamespace

import pytest

from isocloth.model import fabric

RHO = fabric("wool").rho
TRUE = {"delta": 0.5 * RHO, "alpha": 2.0 * RHO}  # (δ, α) = (0.5ρ, 2ρ), issue 5
SCENE_SET = ["cloth.kappa=1e-3", "cloth.noise.sigma=0.0"]
TRUTH_SET = SCENE_SET + [f"cloth.delta={TRUE['delta']!r}", f"cloth.alpha={TRUE['alpha']!r}"]
NOISE = 0.5e-3


@pytest.fixture(scope="session")
def hang():
    """Constants of the synthetic hang-a2 data: true (δ, α), scene overrides, noise σ, ρ."""
    return SimpleNamespace(true=dict(TRUE), scene_set=list(SCENE_SET), truth_set=list(TRUTH_SET), noise=NOISE,
                           rho=RHO)


@pytest.fixture(scope="session")
def hang_recording():
    """1.5 s of hang-a2 at the true (δ, α), 0.5 mm noise, 5 % dropouts, markers shuffled."""
    from isocloth.validation.synth import synthesize

    return synthesize("hang-a2", TRUTH_SET, duration=1.5, noise=NOISE, dropout=0.05, seed=1, shuffle=True)


@pytest.fixture(scope="session")
def hang_clean():
    """The same motion without noise or dropouts (markers in grid order)."""
    from isocloth.validation.synth import synthesize

    return synthesize("hang-a2", TRUTH_SET, duration=1.5, noise=0.0, dropout=0.0)
