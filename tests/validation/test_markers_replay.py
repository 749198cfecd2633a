"""Markers ↔ mesh: grid ordering, refinement, interpolation, weights; the replay set-up."""

import numpy as np
import pytest

from isocloth.mesh.generators import rectangle
from isocloth.validation.markers import (MarkerOrderError, grid_marker_nodes, infer_grid_shape, interpolate_grid,
                                         marker_weights, order_markers, refined_shape)
from isocloth.validation.grasps import feasible_tracks, grasp_distance, lowpass, rigid_tracks, smooth_tracks
from isocloth.validation.replay import Replay, ReplayOptions, replay_from_scene


def _hanging_markers(nx, ny, w, h, seed=0, landscape=False):
    """Markers of a sheet hanging in the xz plane, slightly wavy, in grid order."""
    m = rectangle(w, h, nx, ny, plane="xz", center=(0.1, 0.2, 0.8)).vertices.copy()
    rng = np.random.default_rng(seed)
    m[:, 1] += 0.01 * np.sin(3 * m[:, 0]) + rng.normal(0, 0.002, len(m))
    return m


@pytest.mark.parametrize("nx,ny,w,h", [(4, 5, 0.42, 0.594), (3, 4, 0.297, 0.42)])
def test_order_markers_recovers_the_grid(nx, ny, w, h):
    pts = _hanging_markers(nx, ny, w, h)
    names = [f"g{k}" for k in range(nx * ny)]
    perm = np.random.default_rng(1).permutation(nx * ny)
    grid = order_markers(pts[perm], [names[k] for k in perm], (nx, ny) if nx == 3 else None)
    assert grid.shape == (nx, ny) and not grid.transposed
    assert grid.names == tuple(names)  # row 0 at the bottom, columns along +x
    assert infer_grid_shape(nx * ny) == (nx, ny)


def test_order_markers_landscape_and_errors():
    # an A2 sheet held by its long edge: 5 markers across, 4 down
    pts = _hanging_markers(5, 4, 0.594, 0.42)
    grid = order_markers(pts, [f"g{k}" for k in range(20)], (4, 5))
    assert grid.shape == (5, 4) and grid.transposed
    assert grid.names == tuple(f"g{k}" for k in range(20))
    rng = np.random.default_rng(0)
    with pytest.raises(MarkerOrderError, match="grid order"):
        order_markers(rng.normal(size=(20, 3)), [f"r{k}" for k in range(20)], (4, 5))
    bad = pts.copy()
    bad[3] = np.nan
    with pytest.raises(MarkerOrderError, match="missing"):
        order_markers(bad, [f"g{k}" for k in range(20)])
    with pytest.raises(MarkerOrderError, match="4×5 grid needs 20"):
        order_markers(pts[:12], [f"g{k}" for k in range(12)], (4, 5))


def test_refinement_interpolation_and_weights():
    assert refined_shape((4, 5), 2) == (7, 9) and refined_shape((3, 4), 2) == (5, 7)
    nodes = grid_marker_nodes((4, 5), 2)
    fine = rectangle(0.42, 0.594, 7, 9, plane="xz").vertices
    coarse = rectangle(0.42, 0.594, 4, 5, plane="xz").vertices
    assert np.allclose(fine[nodes], coarse)
    # bilinear interpolation: exact at the markers and for bilinear fields
    rng = np.random.default_rng(0)
    g = rng.normal(size=(5, 4, 3))
    out = interpolate_grid(g, 2)
    assert out.shape == (9, 7, 3) and np.allclose(out[::2, ::2], g)
    assert np.allclose(interpolate_grid(coarse.reshape(5, 4, 3), 2).reshape(-1, 3), fine)
    w = marker_weights((4, 5), (0.42, 0.594))
    cell = 0.42 / 3 * 0.594 / 4
    assert w.sum() == pytest.approx(0.42 * 0.594)
    assert w[0] == pytest.approx(cell / 4) and w[1] == pytest.approx(cell / 2) and w[5] == pytest.approx(cell)


def test_grasp_track_processing():
    rng = np.random.default_rng(0)
    t = np.arange(300) / 100.0
    mid = np.stack([0.05 * np.sin(2 * np.pi * 0.6 * t), 0 * t, 1 + 0 * t], axis=1)
    clean = np.stack([mid - [0.21, 0, 0], mid + [0.21, 0, 0]], axis=1)
    noisy = clean + rng.normal(0, 5e-4, clean.shape)
    rest = np.array([[-0.21, 0, 0], [0.21, 0, 0]])
    # the zero-phase low-pass keeps the 0.6 Hz motion and removes most of the white noise
    f = lowpass(noisy, 100.0, 10.0)
    assert np.abs(f - clean)[20:-20].std() < 0.3 * 5e-4
    assert np.abs(lowpass(clean, 100.0, 10.0) - clean)[20:-20].max() < 1e-5
    # rigid: constant distance, never wider than the rest shape
    r = rigid_tracks(f, rest)
    d = np.linalg.norm(r[:, 1] - r[:, 0], axis=1)
    assert np.ptp(d) < 1e-12 and d[0] <= 0.42
    # feasibility: a pair pulled too far apart is brought back to its rest distance, symmetrically
    wide = clean * [1.01, 1, 1]
    fx = feasible_tracks(wide, rest)
    assert np.allclose(np.linalg.norm(fx[:, 1] - fx[:, 0], axis=1), 0.42)
    assert np.allclose(fx.mean(axis=1), wide.mean(axis=1))


def test_grasp_gaps_are_bridged_by_the_smoothing_spline():
    """A hand accelerating from rest (1 m/s², recorded at 100 Hz with 0.5 mm noise and a 0.2 s gap): the
    smoothing spline through the samples (rest_start: mirrored about t = 0) follows it within the
    noise, where linear filling plus the low-pass misses the gap's curvature by millimetres."""
    rng = np.random.default_rng(1)
    t = np.arange(150) / 100.0
    x = np.zeros((150, 1, 3))
    x[:, 0, 1] = 0.5 * t**2  # starts at rest, 1 m/s²
    noisy = x + rng.normal(0, 5e-4, x.shape)
    noisy[60:80] = np.nan
    linear = lowpass(smooth_tracks(noisy, 100.0, None), 100.0, 10.0)
    spline = smooth_tracks(noisy, 100.0, 10.0)
    assert np.isfinite(spline).all()
    assert np.abs(linear - x)[60:80].max() > 4e-3  # the chord of a 0.2 s gap at 1 m/s²: 5 mm
    assert np.abs(spline - x)[60:80].max() < 1e-3
    assert np.abs(spline - x).max() < 1e-3 and np.abs(spline - x).std() < 0.5 * 5e-4
    # start: at rest; the free spline end would round the start of the acceleration off (the end of a
    # recording stopped mid-acceleration is rounded off: 0.16 mm here)
    clean = smooth_tracks(x, 100.0, 10.0)
    assert np.abs(clean - x)[:100].max() < 2e-5
    assert np.abs(smooth_tracks(x, 100.0, 10.0, rest_start=False) - x)[:5].max() > 4 * np.abs(clean - x)[:5].max()
    with pytest.raises(ValueError, match="never recorded"):
        smooth_tracks(np.full((10, 1, 3), np.nan), 100.0, 10.0)


def test_rigid_grasp_distance_snaps_to_taut_within_the_noise():
    """Two corners held taut 0.42 m apart, 0.5 mm noise: the median distance is within the noise of the
    rest length, so the gripper holds the sheet taut (10 µm slack); a gripper 5 mm short stays short."""
    rng = np.random.default_rng(2)
    taut = np.zeros((300, 2, 3))
    taut[:, 1, 0] = 0.42
    noisy = taut + rng.normal(0, 5e-4, taut.shape)
    noisy[::7, 1] = np.nan  # frames with one marker missing are not used
    assert grasp_distance(noisy, 0.42) == pytest.approx(0.42 * (1 - 2.5e-5), abs=1e-12)
    short = noisy.copy()
    short[:, 1, 0] -= 5e-3
    assert grasp_distance(short, 0.42) == pytest.approx(0.415, abs=1e-4)
    r = rigid_tracks(noisy, taut[0], grasp_distance(noisy, 0.42))
    assert np.allclose(np.linalg.norm(r[:, 1] - r[:, 0], axis=1)[1:3], 0.42 * (1 - 2.5e-5))


def test_replay_setup_from_a_recording(hang_recording, hang):
    rp = replay_from_scene(hang_recording, "hang-a2", hang.scene_set)
    assert rp.grid.names == tuple(f"M{k:02d}" for k in range(1, 21))  # shuffled file, grid found again
    assert rp.size == (0.42, 0.594) and rp.mesh_shape == (7, 9) and rp.mesh.node_count == 63
    assert rp.dt == pytest.approx(0.01)
    assert [rp.grid.names[i] for i in rp.grasp_markers] == ["M17", "M20"] and rp.grasp_mode == "rigid"
    # φ⁰ = ϕ⁰ at the free markers; grasped corners on their processed trajectories
    free = np.setdiff1d(np.arange(20), rp.grasp_markers)
    x0 = rp.mesh.vertices
    assert np.allclose(x0[rp.marker_nodes[free]], rp.recording.markers[0, free])
    assert np.linalg.norm(rp.grasp_tracks[:, 0] - rp.grasp_tracks[:, 1], axis=1).max() <= 0.42 + 1e-12
    # the relaxed initial state satisfies the constraints
    model = rp.base_model()
    x = rp.initial_positions()
    assert model.constraints.relative_residual(model.constraints.value(x), model.active_rows) < 1e-4
    assert np.abs(x - x0).max() < 5e-3


def test_replay_of_exact_data_at_the_true_parameters(hang_clean, hang):
    TRUE = hang.true
    rp = replay_from_scene(hang_clean, "hang-a2", hang.scene_set)
    good = rp.run(TRUE)
    assert not good.diverged and good.mean_iterations < 2
    assert good.loss < 5e-4  # 0.5 mm: same model, same mesh, rest shape and drive
    worse = rp.run({**TRUE, "delta": 1.1 * TRUE["delta"]})
    assert worse.loss > 5 * good.loss
    # the ready model + stepper reproduce run() step by step
    model, stepper, state = rp.setup(TRUE)
    for _ in range(10):
        state, _ = stepper.step(state)
    assert np.allclose(state.x[rp.marker_nodes], good.simulated[10])
    assert np.allclose(state.x[model.grasp_nodes], rp.grasp_tracks[10])
    part = rp.run(TRUE, frames=20, keep_positions=True)
    assert part.simulated.shape == (20, 20, 3) and part.positions.shape == (20, 63, 3)


def test_replay_errors(hang_clean, hang):
    TRUE = hang.true
    from isocloth.validation.recordings import RecordingError

    irregular = hang_clean.replace(times=hang_clean.times + np.r_[0, 0.004, np.zeros(hang_clean.frame_count - 2)])
    with pytest.raises(RecordingError, match="not regular"):
        Replay(irregular)
    x = hang_clean.markers.copy()
    x[0, 5] = np.nan
    with pytest.raises(RecordingError, match="missing in the first frame"):
        Replay(hang_clean.replace(markers=x), options=ReplayOptions(order=hang_clean.names))
    with pytest.raises(RecordingError, match="not a cloth marker"):
        Replay(hang_clean, options=ReplayOptions(grasp=("nope",)))
    rp = Replay(hang_clean)
    with pytest.raises(ValueError, match="unknown model kind"):
        rp.run(TRUE, kind="cartoon")


@pytest.mark.parametrize("scale, unit", [(1000.0, "mm"), (100.0, "cm")])
def test_markers_in_the_wrong_unit_are_refused_with_the_likely_one(hang_clean, hang, scale, unit):
    """Millimetre data read as metres used to 'fit' delta = 0.18 with a 375 m mean error, exit 0."""
    from dataclasses import replace

    from isocloth.validation.recordings import RecordingError

    wrong = replace(hang_clean, markers=hang_clean.markers * scale)
    with pytest.raises(RecordingError, match=rf"markers span .* times larger.*--units {unit}"):
        replay_from_scene(wrong, "hang-a2", hang.scene_set)
    assert replay_from_scene(hang_clean, "hang-a2", hang.scene_set).size == (0.42, 0.594)


def test_a_recording_read_with_the_wrong_vertical_axis_is_refused(hang_clean, hang):
    """A Y-up file read as Z-up: the hanging sheet hangs along −y, which no fit can match."""
    from dataclasses import replace

    from isocloth.validation.recordings import RecordingError, axes_matrix

    R = axes_matrix("y")  # the z-up markers as a Y-up file holds them: p_file = Rᵀ p
    wrong = replace(hang_clean, markers=hang_clean.markers @ R)
    with pytest.raises(RecordingError, match=r"hangs from its grasped markers towards -y in the file's axes .*read "
                                             r"it with --up-axis y"):
        replay_from_scene(wrong, "hang-a2", hang.scene_set, ReplayOptions(grasp=_top_corners(hang_clean)))
    back = replace(wrong, markers=wrong.markers @ R.T)  # read with --up-axis y
    assert replay_from_scene(back, "hang-a2", hang.scene_set).size == (0.42, 0.594)


def _top_corners(rec):
    """Names of the two grid corners that start highest (the grasped ones of hang-a2)."""
    from isocloth.validation.markers import order_markers

    grid = order_markers(rec.markers[0], rec.names, None)
    corners = np.array(grid.corners())
    first = rec.select(grid.names).markers[0]
    return tuple(grid.names[i] for i in corners[np.argsort(-first[corners, 2])[:2]])
