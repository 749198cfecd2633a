"""The T-shirt of the GarmentLift task (Berkeley Garment Library, ``bgl/tshirt/tshirt.obj``): its scene,
and its state lying on the table, computed once by :func:`settle_on_table` and stored in
``isocloth/data/envs/tshirt-on-table.npz`` (``python -m isocloth.envs.garments`` recomputes it).

The modelled shirt (330 nodes, z up, 0.88 m from cuff to cuff) is the rest shape; it is turned face
down (90° about x), released 1 cm above a table and left to collapse for 1.5 s (self-collisions,
dt 2.5 ms: its sliver triangles need small steps while it falls onto itself).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["TSHIRT_NODES", "tshirt_scene", "lying_positions", "settle_on_table", "shoulder_nodes", "LYING_FILE",
           "tshirt_landmarks"]

TSHIRT = "builtin:bgl/tshirt/tshirt.obj"
TSHIRT_NODES = 330
LYING_FILE = "tshirt-on-table.npz"
_UPRIGHT_LIFT = 0.3  # m: the modelled shirt spans z = -0.24 … 0.36 m; lifted by this it stands clear of the table


def tshirt_scene(scale: float = 1.0, mu: float = 0.5, thickness: float = 0.003, dt: float = 0.01) -> dict:
    """Scene dictionary of the T-shirt (scaled by ``scale``) standing clear above a table (plane z = 0,
    friction ``mu``), self-collisions of ``thickness`` [m], time step ``dt`` [s]; light cotton."""
    return {
        "name": "tshirt", "description": "Garment Library T-shirt over a table",
        "cloth": {"mesh": {"file": TSHIRT, "rest": "geometry"},
                  "placement": {"scale": float(scale), "translate": [0.0, 0.0, _UPRIGHT_LIFT * float(scale)]},
                  "fabric": "light-cotton"},
        "obstacles": [{"type": "plane", "name": "table", "mu": float(mu)}],
        "self_collision": {"thickness": float(thickness), "mu": 0.3},
        "simulation": {"dt": float(dt), "duration": 1.0},
        "output": {"video": "none"},
    }


_SHOULDERS = np.array([[0.139, -0.007, 0.348], [-0.134, -0.007, 0.346]])  # m, on the modelled shirt's seams


def shoulder_nodes(upright: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(2,) int64: the nodes on the two shoulder seams, from the positions (330, 3) [m] of the shirt
    standing as placed by :func:`tshirt_scene` with ``scale``."""
    points = scale * (_SHOULDERS + [0.0, 0.0, _UPRIGHT_LIFT])
    return np.array([int(np.argmin(np.linalg.norm(upright - p, axis=1))) for p in points], dtype=np.int64)


def tshirt_landmarks() -> dict[str, int]:
    """{name: node index} of the T-shirt's landmarks (collar front and back, sleeve ends, hem ends, waist sides),
    read from the mesh's annotation file ``data/meshes/bgl/tshirt/landmarks.json`` (which says how each was
    chosen)."""
    import json

    path = resources.files("isocloth") / "data" / "meshes" / "bgl" / "tshirt" / "landmarks.json"
    return {str(k): int(v) for k, v in json.loads(path.read_text(encoding="utf-8"))["landmarks"].items()}


def _turn_z(x: np.ndarray, deg: float) -> np.ndarray:
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return x @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T


def lying_positions(turn_deg: float = 0.0, scale: float = 1.0) -> np.ndarray:
    """(330, 3) float64 [m]: the shirt lying on the table (stored state), scaled by ``scale`` about
    its centre on the table and turned by ``turn_deg`` about the vertical."""
    with np.load(Path(str(resources.files("isocloth") / "data" / "envs" / LYING_FILE))) as data:
        x = np.array(data["positions"], dtype=np.float64)
    return _turn_z(x * float(scale), turn_deg)


def settle_on_table(duration: float = 1.5, dt: float = 0.0025, thickness: float = 0.003) -> tuple[np.ndarray, dict]:
    """Drop the shirt face down from 1 cm above the table and let it collapse for ``duration`` [s];
    returns the final positions (330, 3) [m], centred over the origin, and the scene used."""
    from isocloth.scenes.loader import build_scene, config_from_dict

    cfg = tshirt_scene(thickness=thickness, dt=dt)
    cfg["cloth"]["placement"] = {"rotate_deg": [90.0, 0.0, 0.0], "translate": [0.0, 0.0, 0.166]}
    cfg["simulation"]["duration"] = duration
    sc = build_scene(config_from_dict(cfg))
    state = sc.initial_state
    for _ in range(int(round(duration / dt))):
        state, _ = sc.stepper.step(state)
    x = state.x.copy()
    x[:, :2] -= 0.5 * (x[:, :2].min(axis=0) + x[:, :2].max(axis=0))
    return x, cfg


def main(out: str | None = None) -> Path:  # pragma: no cover - regenerates packaged data
    x, cfg = settle_on_table()
    path = Path(out) if out else Path(__file__).resolve().parents[1] / "data" / "envs" / LYING_FILE
    np.savez_compressed(path, positions=x, scene=json.dumps(cfg))
    return path


if __name__ == "__main__":  # pragma: no cover
    print(main())
