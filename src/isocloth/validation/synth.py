"""Synthetic recordings: simulate a scene with known parameters and observe it like a mocap system.

Markers sit on the nodes of a coarse grid of the scene's rectangle mesh (every ``refine``-th
node: a 7×9 mesh gives the thesis' 4×5 A2 layout). Each sample gets independent Gaussian noise
(σ per coordinate, default 0.5 mm) and markers drop out in short gaps (default 5 % of the samples,
gaps of ~5 frames), as with the OptiTrack recordings of thesis §4.2 (Remark 4.2.1). The first
frame is always complete (it sets φ⁰ of a replay).

A scene with ``stick`` obstacles (seed 000 §7.4) also gets the two end markers of each stick,
``<name>A`` and ``<name>B`` (``stickA``, ``stickB`` for hit-a2's stick), with the same noise and
dropouts: replay them with ``ReplayOptions(stick=truth["sticks"][0]["markers"])``.
"""

from __future__ import annotations

import numpy as np

from isocloth.validation.recordings import Recording, RecordingError

__all__ = ["synthesize", "add_dropouts"]


def add_dropouts(markers: np.ndarray, fraction: float, mean_gap: float, rng: np.random.Generator,
                 *, keep_first: bool = True) -> np.ndarray:
    """Blank out gaps of samples (NaN) until ``fraction`` of the (frame, marker) samples are missing.

    Gap lengths are geometric with mean ``mean_gap`` frames; the first frame is kept when asked.

    Raises
    ------
    ValueError
        For a fraction outside [0, 0.9] or a mean gap < 1.
    """
    if not 0 <= fraction <= 0.9:
        raise ValueError(f"dropout fraction must be in [0, 0.9], got {fraction}")
    if mean_gap < 1:
        raise ValueError(f"mean_gap must be ≥ 1 frame, got {mean_gap}")
    x = np.array(markers, dtype=float, copy=True)
    f, m = x.shape[:2]
    first = 1 if keep_first else 0
    if f <= first or fraction == 0:
        return x
    target = int(round(fraction * (f - first) * m))
    missing = np.zeros((f, m), dtype=bool)
    count = 0
    while count < target:
        j = int(rng.integers(m))
        start = int(rng.integers(first, f))
        length = min(int(rng.geometric(1.0 / mean_gap)), target - count)
        stop = min(f, start + length)
        new = ~missing[start:stop, j]
        missing[start:stop, j] = True
        count += int(new.sum())
    x[missing] = np.nan
    return x


def synthesize(scene, overrides=None, *, duration: float | None = None, refine: int = 2, noise: float = 0.5e-3,
               dropout: float = 0.05, mean_gap: float = 5.0, seed: int = 0, every: int = 1,
               shuffle: bool = False, stick_markers: bool = True) -> Recording:
    """Simulate ``scene`` and return what a motion-capture system would have recorded.

    Parameters
    ----------
    scene : built-in scene name or TOML path (its cloth must be a ``rectangle`` mesh)
    overrides : ``key.path=value`` strings, e.g. ``["cloth.delta=0.09", "cloth.alpha=0.36"]``
    duration : simulated time [s] (default: the scene's)
    refine : mesh intervals per marker interval (markers on every refine-th node)
    noise : σ [m] of the Gaussian noise per coordinate (0 for exact markers)
    dropout : fraction of missing samples (first frame excluded)
    mean_gap : mean length of a dropout gap [frames]
    seed : random seed (noise, dropouts, shuffling)
    every : record every k-th step (rate = 1 / (k·dt))
    shuffle : write the markers in a random order (the reader must find the grid itself)
    stick_markers : also record the two ends of every stick obstacle (after the cloth markers)

    Returns
    -------
    Recording, with ``metadata["truth"]`` holding the simulated material, μ of the obstacles,
    the scene name, the noise settings and the names of the markers on grasped nodes
    (``"grasped"``: pass them as ``ReplayOptions(grasp=...)`` when the grasped corners are not the
    two highest ones, e.g. for a sheet lying on a table) and the recorded sticks (``"sticks"``: a
    list of ``{"name", "markers": [end a, end b], "radius", "mu"}``).

    Raises
    ------
    RecordingError
        If the scene's cloth is not a rectangle mesh refined from a marker grid.
    SceneError, SimulationDiverged
        From the scene and the simulation.
    """
    from isocloth.scenes.loader import load_scene
    from isocloth.scenes.schema import MeshRectangle

    ov = list(overrides or [])
    if duration is not None:
        ov.append(f"simulation.duration={float(duration)!r}")
    sc = load_scene(scene, ov)
    spec = sc.config.cloth.mesh
    if not isinstance(spec, MeshRectangle):
        raise RecordingError(f"scene {sc.config.name!r}: synthetic recordings need a rectangle cloth mesh")
    nx, ny = spec.nx, spec.ny
    if (nx - 1) % refine or (ny - 1) % refine:
        raise RecordingError(f"a {nx}x{ny} mesh is not a {refine}-fold refinement of a marker grid; choose refine "
                             f"dividing {nx - 1} and {ny - 1}")
    mx, my = (nx - 1) // refine + 1, (ny - 1) // refine + 1
    j, i = np.divmod(np.arange(mx * my), mx)
    nodes = (j * refine * nx + i * refine).astype(np.int64)
    sticks = _sticks(sc) if stick_markers else []
    names = [f"M{k + 1:02d}" for k in range(nodes.size)]
    for base, _ in sticks:
        names += [f"{base}A", f"{base}B"]
    if len(set(names)) != len(names):
        raise RecordingError(f"stick names {[b for b, _ in sticks]} clash with the cloth marker names M01..; rename "
                             f"the stick obstacles")

    def observe(state) -> np.ndarray:
        obs = [sc.model.surface_positions(state.x)[nodes]]  # markers sit on the cloth's surface vertices
        for _, stick in sticks:
            v = stick.vertices_at(state.t)
            obs.append(v[[0, -1]])
        return np.concatenate(obs).copy()

    steps = int(round(sc.duration / sc.dt))
    state = sc.initial_state
    frames = [observe(state)]
    times = [0.0]
    for k in range(1, steps + 1):
        state, _ = sc.stepper.step(state)
        if k % every == 0:
            frames.append(observe(state))
            times.append(state.t)
    x = np.stack(frames)
    rng = np.random.default_rng(seed)
    if noise > 0:
        x = x + rng.normal(0.0, noise, size=x.shape)
    x = add_dropouts(x, dropout, mean_gap, rng)
    order = rng.permutation(len(names)) if shuffle else np.arange(len(names))
    grasped = np.flatnonzero(np.isin(nodes, sc.model.grasp_vertices))
    mat = sc.model.material.to_dict()
    truth = {"scene": sc.config.name, "delta": mat["delta"], "alpha": mat["alpha"], "rho": mat["rho"],
             "mu": [float(o.mu) for o in sc.model.obstacles], "noise": float(noise), "dropout": float(dropout),
             "seed": int(seed), "grid": [mx, my], "mesh": [nx, ny], "size": [spec.width, spec.height],
             "dt": sc.dt * every, "grasped": [names[k] for k in grasped],
             "sticks": [{"name": base, "markers": [f"{base}A", f"{base}B"], "radius": float(st.radius),
                         "mu": float(st.mu)} for base, st in sticks]}
    return Recording(np.asarray(times), x[:, order], tuple(names[k] for k in order), 1.0 / (sc.dt * every),
                     f"synth:{sc.config.name}", {"truth": truth})


def _sticks(scene) -> list:
    """(marker base name, obstacle) of the scene's ``stick`` obstacles (thin polylines given by end
    trajectories): their first and last vertices are the recorded stick ends."""
    from isocloth.contact.obstacles import ObstaclePolyline

    specs = [sp for sp in scene.config.obstacles if sp.type == "stick"]
    found = [ob for ob in scene.model.thin_obstacles
             if isinstance(ob, ObstaclePolyline) and ob.motion is None and not ob.closed]
    if len(found) != len(specs):  # pragma: no cover - a scene builds one polyline per stick table
        raise RecordingError(f"found {len(found)} stick obstacles for {len(specs)} stick tables")
    out = []
    for k, (sp, ob) in enumerate(zip(specs, found)):
        base = sp.name or ("stick" if len(specs) == 1 else f"stick{k + 1}")
        out.append((base, ob))
    return out
