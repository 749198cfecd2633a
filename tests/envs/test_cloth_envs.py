"""Gymnasium environments: API checks, rewards of known states, determinism, vector environments."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import isocloth.envs  # noqa: F401  (registers the ids)
from isocloth.envs import FIXED_SHEET, ClothFlattenEnv, ClothFoldEnv

SMALL = {"size": 0.2, "nodes": 5}


def test_envs_pass_gymnasiums_checker_with_every_observation():
    env = ClothFoldEnv(**SMALL, action_mode="velocity", grippers=2,
                       observations=("positions", "rgb", "depth", "point_cloud"), image_size=(24, 32), points=64)
    env.action_space.seed(0)  # the checker steps with samples of the action space: the same ones every run
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs["rgb"].shape == (24, 32, 3) and obs["depth"].shape == (24, 32, 1)
    assert obs["point_cloud"].shape == (64, 3) and obs["grippers"].shape == (2, 4)
    assert (obs["depth"] > 0).any()


@pytest.mark.slow
def test_clothflatten_passes_gymnasiums_checker():  # every reset crumples the sheet: about a minute
    env = ClothFlattenEnv(**SMALL, action_mode="velocity")
    env.action_space.seed(0)
    check_env(env, skip_render_check=True)


def test_registered_ids_make_envs():
    env = gym.make("isocloth/ClothFold-v0", **SMALL, action_mode="velocity")
    obs, info = env.reset(seed=1)
    assert obs["positions"].shape == (25, 3) and "is_success" in info
    env.close()


def test_same_seed_same_observations_bit_for_bit():
    def run(seed):
        env = ClothFoldEnv(**SMALL, action_mode="velocity")
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        out = [obs["positions"]]
        for _ in range(4):
            obs, r, *_ = env.step(env.action_space.sample())
            out.append(obs["positions"])
        return np.stack(out), r

    (a, ra), (b, rb) = run(3), run(3)
    assert np.array_equal(a, b) and ra == rb
    assert not np.array_equal(a, run(4)[0])  # the fabric is drawn from the seed


def test_flatten_reward_is_one_flat_and_low_crumpled():
    flat = ClothFlattenEnv(crumple=False)
    flat.reset(seed=0)
    assert flat.coverage() == pytest.approx(1.0, abs=0.01)
    crumpled = ClothFlattenEnv(**SMALL)
    cover = []
    for seed in range(3):  # a crumpled sheet covers from nothing to most of its area: its mean is low
        crumpled.reset(seed=seed)
        cover.append(crumpled.coverage())
    assert np.mean(cover) < 0.6


def test_fold_reward_of_a_folded_sheet_reaches_success():
    env = ClothFoldEnv(**SMALL, action_mode="velocity")
    env.reset(seed=0)
    assert not env._info()["is_success"]
    x = env.state.x.copy()
    left, right = env.fold_pairs[:, 0], env.fold_pairs[:, 1]
    x[left] = x[right] + [0.0, 0.0, 2 * env.task.thickness]  # the left half laid on the right one
    env.state.x = x
    assert env.task.reward(env) == pytest.approx(-2 * env.task.thickness)
    assert env._info()["is_success"]


def test_bad_actions_and_options_get_named_errors():
    env = ClothFoldEnv(**SMALL, action_mode="velocity")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(4))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([np.nan, 0, 0, 0]))
    with pytest.raises(ValueError, match="action_mode"):
        ClothFoldEnv(action_mode="teleport")
    with pytest.raises(ValueError, match="observations"):
        ClothFoldEnv(observations=("smell",))


def test_a_velocity_gripper_lifts_the_corner_it_closes_on():
    env = ClothFoldEnv(**SMALL, action_mode="velocity")
    env.reset(seed=0)
    for _ in range(4):
        obs, *_ = env.step(np.array([0.0, 0.0, 1.0, 1.0]))
    g = obs["grippers"][0]
    corner = np.argmin(np.linalg.norm(env.start_positions[:, :2] - [-0.1, -0.1], axis=1))
    start = env.start_positions[corner, 2] + 2 * env.task.thickness  # 6 mm over the corner node
    assert g[3] == 1.0 and g[2] == pytest.approx(start + 4 * 0.05 * env.max_speed, rel=1e-6)
    assert env.state.x[corner, 2] > 0.05
    for _ in range(3):
        obs, *_ = env.step(np.array([0.0, 0.0, 0.0, -1.0]))
    assert obs["grippers"][0, 3] == 0.0 and env.state.x[corner, 2] < 0.05  # released: it falls


@pytest.mark.parametrize("vector", [gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv])
def test_vector_envs_match_sequential_envs(vector):
    make = [lambda: ClothFoldEnv(**SMALL, action_mode="velocity")] * 2
    venv = vector(make)
    obs, _ = venv.reset(seed=[5, 6])
    actions = np.array([[0.2, -0.1, 0.5, 1.0], [-0.3, 0.0, 0.2, 1.0]], dtype=np.float32)
    for _ in range(3):
        obs, *_ = venv.step(actions)
    venv.close()
    for i, seed in enumerate((5, 6)):
        env = ClothFoldEnv(**SMALL, action_mode="velocity")
        env.reset(seed=seed)
        for _ in range(3):
            single, *_ = env.step(actions[i])
        assert np.array_equal(obs["positions"][i], single["positions"])


def test_grippers_dragging_cloth_over_the_table_cost_few_projection_iterations():
    """Random gripper velocities slide tens of contacts over the table at once: each contact's
    friction is settled once its pending change is below 1e-3 of its slip (with the absolute
    1e-8 m alone, these steps took ~190 QPs each and were split)."""
    env = ClothFoldEnv(action_mode="velocity")
    env.reset(seed=0)
    env.action_space.seed(0)
    infos = []
    step = env.stepper.step

    def counted(state, control):
        state, info = step(state, control)
        infos.append(info)
        return state, info

    env.stepper.step = counted
    for _ in range(6):
        env.step(env.action_space.sample())
    assert max(i.sliding for i in infos) >= 30  # the contacts do slide
    assert np.mean([i.iterations for i in infos]) <= 10
    assert all(i.converged and i.substeps == 1 for i in infos)


@pytest.mark.slow
def test_the_scripted_two_gripper_fold_solves_clothfold():
    """The example's policy on the middle of the fabric ranges (with randomised fabrics it is not robust:
    on some draws the sheet slides on the table while it is folded)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "scripted_fold.py"
    spec = importlib.util.spec_from_file_location("scripted_fold", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    env = ClothFoldEnv(**SMALL, action_mode="velocity", grippers=2, randomize=False)
    env.reset(seed=0)
    x0 = env.state.x.copy()
    for action in example.fold_actions(env, height=0.4 * SMALL["size"]):
        _, reward, _, _, info = env.step(np.clip(action, -1.0, 1.0))
    assert info["is_success"] and reward >= env.task.success_threshold
    left, right = env.fold_pairs[:, 0], env.fold_pairs[:, 1]
    assert np.all(env.state.x[left, 2] > env.state.x[right, 2])  # the half x < 0 lies on top
    assert np.abs(env.state.x[right] - x0[right]).max() < 0.03


def _pick_and_place_fold(seed: int) -> bool:
    """One pick-and-place from the middle of the edge x < 0 to the middle of the edge x > 0 (draw ``seed``,
    randomized except draw 0), then two actions that pick nothing: folded in half and still folded, the
    half x < 0 on top."""
    env = ClothFoldEnv(**SMALL, randomize=seed > 0)
    env.reset(seed=seed)
    x0 = env.model.initial_positions
    lo, hi = x0[:, :2].min(axis=0), x0[:, :2].max(axis=0)
    mid = 0.5 * (lo[1] + hi[1])
    _, reward, _, truncated, info = env.step(np.array([lo[0], mid, hi[0], mid], dtype=np.float32) / env.workspace)
    if truncated or not info["is_success"]:
        return False
    for _ in range(2):  # nothing within reach of the pick point (the half x < 0 is empty now): the action waits
        _, reward, _, _, info = env.step(np.array([-0.99, 0.0, -0.99, 0.0], dtype=np.float32))
    left, right = env.fold_pairs[:, 0], env.fold_pairs[:, 1]
    return bool(info["is_success"] and reward >= -0.015 and np.all(env.state.x[left, 2] > env.state.x[right, 2]))


def test_one_scripted_pick_and_place_folds_the_sheet_in_half_on_most_draws():
    """Where the flap lands is chaotic (friction solution, rounding): 11 of draws 0–12 folded on one machine
    with failed steps split down to dt/8, 10 with dt/32 (2026-11-28; single draws flipped between
    machines), so the check is over the 13 draws."""
    folded = [seed for seed in range(13) if _pick_and_place_fold(seed)]
    assert len(folded) >= 7, folded


def test_a_step_the_solver_cannot_take_truncates_the_episode():
    from isocloth.step.stepper import SimulationDiverged

    env = ClothFoldEnv(**SMALL, action_mode="velocity")
    env.reset(seed=0)
    before = env.state

    def fail(state, control):
        raise SimulationDiverged("constraint residual 47.3 > 0.5")

    env.stepper.step = fail
    obs, reward, terminated, truncated, info = env.step(np.zeros(4))
    assert truncated and not terminated and "47.3" in info["diverged"]
    assert env.state is before and np.array_equal(obs["positions"], before.x.astype(np.float32))



@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 6, 9])
def test_random_two_gripper_velocities_that_pull_the_sheet_taut_do_not_diverge(seed):
    # these seeds' grippers pull two corners of the 5 x 5 sheet apart within the first actions: the
    # projection had no solution and the episodes ended in SimulationDiverged; the grasps are now held back
    env = ClothFoldEnv(nodes=5, action_mode="velocity", grippers=2, sheet=FIXED_SHEET)  # the sheet they failed on
    env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(20):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert not truncated, info.get("diverged")
    assert np.isfinite(obs["positions"]).all()


def test_grippers_pulling_the_sheet_apart_lose_it_instead_of_ending_the_episode():
    env = ClothFoldEnv(**SMALL, action_mode="velocity", grippers=2)
    env.reset(seed=0)  # the grippers start over the two corners of the edge x = -0.1 m, 0.2 m apart
    apart = np.array([0.0, -1.0, 0.3, 1.0, 0.0, 1.0, 0.3, 1.0])  # closed, lifting and pulling along y
    held = []
    for _ in range(4):
        obs, reward, terminated, truncated, info = env.step(apart)
        assert not truncated and "diverged" not in info
        held.append(obs["grippers"][:, 3].copy())
    assert held[0].tolist() == [1.0, 1.0]  # both took a corner
    assert held[-1].tolist() == [0.0, 0.0]  # pulled beyond the sheet, both lost it (the action still grips)
    obs, *_ = env.step(apart)
    assert obs["grippers"][:, 3].tolist() == [0.0, 0.0]  # still closed: they take nothing until they open


@pytest.mark.slow
def test_a_crumpling_drop_that_threw_the_sheet_now_lands_on_its_first_draw():
    # seed 9's lift-and-drop threw nodes at 8 -> 28 m/s in two steps while carried (a converged step
    # far from the predicted positions) and ended in SimulationDiverged; the jump check splits it
    env = ClothFlattenEnv(action_mode="velocity", sheet=FIXED_SHEET)  # the square sheet it failed on
    env.CRUMPLE_ATTEMPTS = 1  # no redraw: a failed drop raises
    env.reset(seed=9)
    assert 0.2 < env.coverage() < 0.95


# ------------------------------------------------------------------ sheet shapes, ClothHang, GarmentLift
def _sheet_dims(env):
    x0 = env.model.initial_positions
    return tuple(np.ptp(x0[:, :2], axis=0))


def test_the_sheet_is_drawn_within_its_ranges_and_the_flat_coverage_stays_one():
    from isocloth.envs import SheetRanges

    dims = []
    for seed in range(4):
        env = ClothFlattenEnv(**SMALL, crumple=False)
        env.reset(seed=seed)
        w, h = _sheet_dims(env)
        dims.append((w, h))
        scale, aspect = np.sqrt(w * h) / SMALL["size"], w / h
        assert 0.9 - 1e-3 <= scale <= 1.1 + 1e-3 and 0.8 - 1e-3 <= aspect <= 1.25 + 1e-3
        assert env.observation_space["positions"].shape == (25, 3)
        assert env.coverage() == pytest.approx(1.0, abs=0.01)  # the rest area follows the drawn sheet
    assert len({round(w, 4) for w, _ in dims}) == 4  # every seed draws another sheet
    again = ClothFlattenEnv(**SMALL, crumple=False)
    again.reset(seed=2)
    assert _sheet_dims(again) == dims[2]
    for env in (ClothFlattenEnv(**SMALL, crumple=False, randomize=False),
                ClothFlattenEnv(**SMALL, crumple=False, sheet=FIXED_SHEET)):
        env.reset(seed=1)
        assert np.allclose(_sheet_dims(env), SMALL["size"], rtol=0.02)  # square (0.5 mm of rest noise)
    with pytest.raises(ValueError, match="sheet range scale"):
        SheetRanges(scale=(1.2, 1.1))


def _draped(env, side_share: float = 0.5):
    """The sheet's nodes hung over the bar: a share ``side_share`` of the node columns down the side
    x < bar, the rest down the other side, 5 mm off the bar's surface."""
    from isocloth.state import State

    bx, bz = env.task.bar
    r = env.task.bar_radius
    x0 = env.model.initial_positions
    order = np.argsort(x0[:, 0], kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    left = rank < side_share * order.size
    x = np.empty_like(x0)
    x[:, 1] = x0[:, 1]
    x[:, 0] = np.where(left, bx - r - 0.005, bx + r + 0.005)
    x[:, 2] = bz - np.abs(x0[:, 0] - np.quantile(x0[:, 0], side_share))
    env.state = State(x=x, v=np.zeros_like(x))


def test_clothhang_rewards_a_sheet_hung_evenly_over_the_bar():
    from isocloth.envs import ClothHangEnv

    env = ClothHangEnv(**SMALL, randomize=False)
    _, info = env.reset(seed=0)
    on_table = env.task.reward(env)
    # on the table: a small negative reward that grows as the cloth nears the bar (its gap [m] over the size)
    terms = info["reward_terms"]
    assert set(terms) == {"lifted", "balance", "bar_gap", "touching"} and terms["touching"] == 0.0
    assert on_table == pytest.approx(-0.1 * terms["bar_gap"] / 0.2) and on_table < 0 and not env.task.success(env)
    env.state.x[:, 0] += 0.05
    assert on_table < env.task.reward(env) < 0  # nearer
    _draped(env)
    assert env.task.reward(env) == pytest.approx(1.0, abs=0.05) and env.task.success(env)
    _draped(env, side_share=0.8)  # 4 of the 5 node columns on one side: the other holds 1/8 of the mass
    assert env.task.reward(env) == pytest.approx(0.25, abs=0.005) and not env.task.success(env)
    _draped(env)
    h = env.hand.grasp(env.state.x, nodes=[0])
    assert not env.task.success(env)  # held: it does not hang by itself
    env.hand.release(h)
    env.state.x[:, 0] -= 0.2  # beside the bar, in the air: not hanging on it
    assert env.task.reward(env) < 0.0


def test_clothhang_and_garmentlift_pass_gymnasiums_checker():
    from isocloth.envs import ClothHangEnv

    env = ClothHangEnv(**SMALL, action_mode="velocity", grippers=2)
    env.action_space.seed(0)
    check_env(env, skip_render_check=True)
    made = gym.make("isocloth/ClothHang-v0", **SMALL)
    assert made.spec.max_episode_steps is None and made.unwrapped.episode_seconds == 12.0  # seconds, not actions


def test_garmentlift_starts_from_the_shirt_lying_on_the_table():
    from isocloth.envs import GarmentLiftEnv
    from isocloth.envs.garments import TSHIRT_NODES

    env = GarmentLiftEnv(observations=("positions", "keypoints"))
    obs, info = env.reset(seed=0)
    x = env.state.x
    assert obs["positions"].shape == (TSHIRT_NODES, 3) and x[:, 2].min() >= -1e-9
    # partly piled up, but nothing lifted yet: the reward counts mass raised above where it lay
    assert (x[:, 2] > 0.02).mean() > 0.3 and env.task.reward(env) == 0.0 and not info["is_success"]
    assert obs["keypoints"].shape == (8, 3)  # collar, sleeve ends, hem, waist
    m = env.model.masses
    low = np.flatnonzero(x[:, 2] <= 0.02)
    env.state.x[low, 2] += 0.05  # the nodes on the table lifted: all the mass off the table
    assert env.task.reward(env) == pytest.approx(m[low].sum() / m.sum()) and env.task.success(env)
    env.state.x[low, 2] -= 0.05
    # both grippers start over a shoulder seam of the shirt, turned and scaled with it
    g = obs["grippers"][:, :3]
    assert np.linalg.norm(x[None, :, :] - g[:, None, :], axis=2).min(axis=1).max() <= 0.0051
    env.reset(seed=1)
    assert not np.allclose(env.state.x, x)  # another turn and size
    again, _ = env.reset(seed=0)
    assert np.array_equal(again["positions"], obs["positions"]) and np.array_equal(again["grippers"], obs["grippers"])
    with pytest.raises(ValueError, match="GarmentLift supports the action modes"):
        GarmentLiftEnv(action_mode="pick_place")


@pytest.mark.slow
def test_garmentlift_checker_and_two_grippers_lifting_the_shoulders():
    from isocloth.envs import GarmentLiftEnv

    env = GarmentLiftEnv()
    env.action_space.seed(0)
    check_env(env, skip_render_check=True)
    env = GarmentLiftEnv(randomize=False)
    env.reset(seed=0)
    up = np.array([0.0, 0.0, 1.0, 1.0] * 2, dtype=np.float32)  # both grippers closed, rising at 0.3 m/s
    for k in range(40):
        obs, reward, terminated, truncated, info = env.step(up)
        assert not truncated, info.get("diverged")
        if info["is_success"]:
            break
    assert info["is_success"] and info["reward_terms"]["off_table"] >= 0.99
    assert reward == pytest.approx(info["reward_terms"]["off_table"] - info["reward_terms"]["off_table_at_start"])
    assert obs["grippers"][:, 3].tolist() == [1.0, 1.0]  # it hangs from the grippers


def test_a_step_over_its_wall_clock_budget_truncates_the_episode_with_the_reason():
    env = ClothFoldEnv(**SMALL, action_mode="velocity", step_budget=1e-9)
    env.reset(seed=0)
    before = env.state
    obs, reward, terminated, truncated, info = env.step(np.array([0.0, 0.0, 0.5, 1.0]))
    assert truncated and not terminated
    assert "budget" in info["budget_exceeded"] and info["truncation_reason"] == info["budget_exceeded"]
    assert env.state is before and np.isfinite(reward)
    roomy = ClothFoldEnv(**SMALL, action_mode="velocity", step_budget=120.0)
    roomy.reset(seed=0)
    *_, truncated, info = roomy.step(np.array([0.0, 0.0, 0.5, 1.0]))
    assert not truncated and "truncation_reason" not in info and info["time"] > 0
    for bad in (0, -1.0, "1 s"):
        with pytest.raises(ValueError, match="step_budget"):
            ClothFoldEnv(**SMALL, step_budget=bad)


def test_episodes_last_their_simulated_seconds():
    env = ClothFoldEnv(**SMALL, action_mode="velocity", episode_seconds=0.15)  # three actions of 0.05 s
    env.reset(seed=0)
    flags = [env.step(np.zeros(4, np.float32))[3] for _ in range(3)]
    assert flags == [False, False, True]
    env.reset(seed=0)
    *_, info = env.step(np.zeros(4, np.float32))
    assert info["time"] == pytest.approx(0.05) and "truncation_reason" not in info
    for _ in range(2):
        *_, truncated, info = env.step(np.zeros(4, np.float32))
    assert truncated and info["truncation_reason"] == "time limit"
    # the defaults, per action mode
    assert ClothFoldEnv(**SMALL).episode_seconds == 8.0 and ClothFoldEnv(**SMALL, action_mode="velocity").episode_seconds == 6.0
    assert ClothFlattenEnv(**SMALL).episode_seconds == 15.0
    with pytest.raises(ValueError, match="episode_seconds"):
        ClothFoldEnv(**SMALL, episode_seconds=0.0)


def test_reward_terms_are_in_info_and_make_the_reward():
    env = ClothFoldEnv(**SMALL, action_mode="velocity")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([0.5, 0.0, 0.5, 1.0], np.float32))
    terms = info["reward_terms"]
    assert set(terms) == {"fold_distance", "moved"}
    assert reward == pytest.approx(-(terms["fold_distance"] + 1.2 * terms["moved"]))


@pytest.mark.parametrize("randomize_camera", [False, True])
def test_keypoints_project_onto_the_cloth_in_the_image(randomize_camera):
    """The keypoints observation (the sheet's corners) lies on the cloth that the camera shows: each projects
    within 2 px of a cloth pixel."""
    from isocloth.sensors import LABEL_CLOTH

    env = ClothFoldEnv(**SMALL, observations=("keypoints", "rgb"), image_size=(96, 96), randomize_camera=randomize_camera)
    obs, _ = env.reset(seed=3)
    plain = ClothFoldEnv(**SMALL)
    plain.reset(seed=3)
    assert np.array_equal(plain.state.x, env.state.x)  # the camera's draws do not change the episode
    assert np.array_equal(plain._camera.camera.pose, env._camera.camera.pose) != randomize_camera
    corners = env.task.corner_nodes()
    assert np.array_equal(obs["keypoints"], env.state.x[corners].astype(np.float32))
    frame = env._camera.capture(env.state.x, env.state.t)
    uv = env._camera.camera.project(obs["keypoints"].astype(np.float64))
    assert ((uv >= 0) & (uv < 96)).all()  # the sheet is in view
    for u, v in uv:
        col, row = int(round(u)), int(round(v))
        window = frame.mask[max(row - 2, 0):row + 3, max(col - 2, 0):col + 3]
        assert (window == LABEL_CLOTH).any(), (u, v)
    assert np.array_equal(frame.rgb, obs["rgb"])


def test_camera_options_randomisation_and_depth_noise():
    base = dict(**SMALL, observations=("rgb", "depth"), image_size=(32, 32), randomize=False)
    plain = ClothFoldEnv(**base)
    a, _ = plain.reset(seed=0)
    moved = ClothFoldEnv(**base, camera={"eye": (0.0, -0.3, 0.3), "fov_deg": 50.0})
    c, _ = moved.reset(seed=0)
    assert not np.array_equal(c["rgb"], a["rgb"])
    rand = ClothFoldEnv(**base, randomize_camera=True)
    r0, _ = rand.reset(seed=0)
    r0_again, _ = rand.reset(seed=0)
    r1, _ = rand.reset(seed=1)
    assert np.array_equal(r0["rgb"], r0_again["rgb"]) and not np.array_equal(r0["rgb"], r1["rgb"])
    noisy = ClothFoldEnv(**base, depth_noise=True)
    n, _ = noisy.reset(seed=0)
    seen = (a["depth"] > 0) & (n["depth"] > 0)
    assert seen.any() and not np.allclose(n["depth"][seen], a["depth"][seen])
    assert np.abs(n["depth"][seen] - a["depth"][seen]).max() < 0.02  # millimetre noise at ~0.3 m
    with pytest.raises(ValueError, match="camera takes the keys"):
        ClothFoldEnv(**SMALL, camera={"position": (0, 0, 1)})
    for bad, match in (({"eye": (0.0, 1.0)}, "three finite coordinates"), ({"fov_deg": 0}, r"\[10, 170\]"),
                       ({"eye": (0, 0, 1), "target": (0, 0, 1)}, "must differ")):
        with pytest.raises(ValueError, match=match):
            ClothFoldEnv(**SMALL, camera=bad)
    top = ClothFoldEnv(**base, camera={"eye": (0.0, 0.0, 0.5)})  # straight down: a valid view
    assert (top.reset(seed=0)[0]["depth"] > 0).any()
