"""Load scene files (built-in or on disk), apply ``--set`` overrides, and build the simulation."""

from __future__ import annotations

import tomllib
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import UnionType
from typing import Annotated, Literal, Union, get_args, get_origin

import numpy as np
from pydantic import BaseModel, Tag, ValidationError

from isocloth.scenes.schema import MeshFile, SceneConfig

__all__ = ["Scene", "SceneError", "builtin_scene_names", "load_scene_config", "build_scene", "load_scene",
           "apply_overrides"]


class SceneError(ValueError):
    """A scene file or override is invalid; the message names the key and the problem."""


@dataclass
class Scene:
    """A ready-to-run scene: static model, stepper (numerics), initial state and output settings."""

    config: SceneConfig
    model: object
    stepper: object
    initial_state: object
    base_dir: Path

    @property
    def duration(self) -> float:
        return self.config.simulation.duration

    @property
    def dt(self) -> float:
        return self.config.simulation.dt


def _builtin_dir() -> Path:
    return Path(str(resources.files("isocloth.scenes") / "builtin"))


def _data_dir() -> Path:
    return Path(str(resources.files("isocloth") / "data"))


def builtin_scene_names() -> list[str]:
    """Names of the built-in scenes (files in isocloth/scenes/builtin)."""
    return sorted(p.stem for p in _builtin_dir().glob("*.toml"))


def _parse_value(text: str):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _check_overrides(overrides) -> list[str]:
    """The overrides as a list of strings; SceneError for anything else (a bare string, a number)."""
    if overrides is None:
        return []
    if isinstance(overrides, (str, bytes)):
        raise SceneError(f"overrides must be a list of 'key.path=value' strings, got the string {overrides!r}: "
                         f"wrap it in a list, e.g. [{overrides!r}]")
    if not isinstance(overrides, (list, tuple)):
        raise SceneError(f"overrides must be a list of 'key.path=value' strings, got {type(overrides).__name__}")
    for item in overrides:
        if not isinstance(item, str):
            raise SceneError(f"override {item!r} is a {type(item).__name__}, not a 'key.path=value' string "
                             "(e.g. 'simulation.dt=0.005')")
    return list(overrides)


def apply_overrides(data: dict, overrides: list[str] | None) -> dict:
    """Apply ``key.path=value`` overrides (values parsed as TOML, else kept as strings).

    List items are addressed by index: ``grasps.0.trajectory.frequency=0.3``.

    Raises
    ------
    SceneError
        For overrides that are not a list of strings, a malformed override, a path through a
        missing list index, or a path through a value that is not a table (``simulation.dt.x=5``).
    """
    import copy

    data = copy.deepcopy(data)
    for item in _check_overrides(overrides):
        if "=" not in item:
            raise SceneError(f"override {item!r} must look like key.path=value")
        key, text = item.split("=", 1)
        parts = key.strip().split(".")
        node = data
        for i, p in enumerate(parts):
            last = i == len(parts) - 1
            if not isinstance(node, (dict, list)):
                where = ".".join(parts[:i])
                raise SceneError(f"override {key.strip()!r}: {where} is a value ({node!r}), not a table with a key "
                                 f"{p!r}: set {where}=... itself, or check the key path")
            if isinstance(node, list):
                try:
                    idx = int(p)
                    node[idx]
                except (ValueError, IndexError):
                    raise SceneError(f"override {key!r}: {p!r} is not an index of a list of {len(node)}") from None
                if last:
                    node[idx] = _parse_value(text.strip())
                else:
                    node = node[idx]
            else:
                if last:
                    node[p] = _parse_value(text.strip())
                else:
                    node = node.setdefault(p, {})
    return data


def _unwrap(tp) -> tuple[object, set]:
    """Strip ``Annotated`` layers and ``None`` from a schema annotation; returns (type, union tags)."""
    tags = set()
    while get_origin(tp) is Annotated:
        tp, *meta = get_args(tp)
        tags.update(m.tag for m in meta if isinstance(m, Tag))
    if get_origin(tp) in (Union, UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return tp, tags


def _union_member(tp, part):
    """The member of a (discriminated) union that a pydantic error location segment names, or None."""
    for member in get_args(tp):
        inner, tags = _unwrap(member)
        if part in tags or getattr(inner, "__name__", None) == part:
            return member
        if isinstance(inner, type) and issubclass(inner, BaseModel) and any(
                get_origin(f.annotation) is Literal and part in get_args(f.annotation)
                for f in inner.model_fields.values()):
            return member
    return None


def _schema_path(loc: tuple) -> tuple[list[str], object]:
    """Walk a pydantic error location through the scene schema.

    Returns the key path as the user writes it (union tags and validator wrappers left out) and the
    schema type at the end of the location (None where the walk leaves the schema).
    """
    tp, shown = SceneConfig, []
    for part in loc:
        if isinstance(part, str) and part.startswith(("function-", "tagged-union", "union[")):
            continue
        tp, _ = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            shown.append(str(part))
            field = tp.model_fields.get(part) if isinstance(part, str) else None
            tp = field.annotation if field is not None else None
        elif get_origin(tp) in (list, tuple) and isinstance(part, int):
            shown.append(str(part))
            tp = get_args(tp)[0]
        elif get_origin(tp) in (Union, UnionType):
            member = _union_member(tp, part)
            if member is None:
                shown.append(str(part))
            tp = member
        else:
            shown.append(str(part))
            tp = None
    return shown, tp


def _format_validation(err: ValidationError, source: str) -> str:
    lines = [f"invalid scene {source}:"]
    for e in err.errors():
        shown, _ = _schema_path(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if not shown:  # a check of the whole scene: its message names the keys
            lines.append(f"  {msg}")
            continue
        if e["type"] == "extra_forbidden":
            _, parent = _schema_path(e["loc"][:-1])
            parent, _ = _unwrap(parent)
            if isinstance(parent, type) and issubclass(parent, BaseModel):
                msg = f"unknown key; allowed here: {', '.join(parent.model_fields)}"
            else:
                msg = "unknown key (check the spelling)"
        lines.append(f"  {'.'.join(shown)}: {msg}")
    return "\n".join(lines)


def load_scene_config(name_or_path: str | Path, overrides: list[str] | None = None) -> tuple[SceneConfig, Path]:
    """Read and validate a scene.

    Parameters
    ----------
    name_or_path : a built-in scene name (``isocloth scenes``) or a path to a TOML file.
    overrides : list of ``key.path=value`` strings.

    Returns
    -------
    (SceneConfig, base directory for relative file paths)

    Raises
    ------
    SceneError
        Unknown scene name, a file that is not UTF-8 text (a UTF-8 byte-order mark is accepted),
        unreadable TOML, overrides that are not a list of ``key.path=value`` strings, unknown keys,
        wrong units or values.
    """
    p = Path(name_or_path)
    if p.suffix != ".toml" and not p.is_file():  # a folder named like a scene (a run folder) is not a scene
        cand = _builtin_dir() / f"{name_or_path}.toml"
        if not cand.exists():
            raise SceneError(f"unknown scene {str(name_or_path)!r}; built-in scenes: {', '.join(builtin_scene_names())}")
        p = cand
    if not p.is_file():
        raise SceneError(f"scene file {p} does not exist" if not p.exists() else f"{p} is a folder, not a scene file")
    overrides = _check_overrides(overrides)
    try:
        data = tomllib.loads(_read_text(p))
    except tomllib.TOMLDecodeError as exc:
        raise SceneError(f"{p}: not valid TOML: {exc}") from None
    return config_from_dict(apply_overrides(data, overrides), str(p)), p.parent


def _read_text(p: Path) -> str:
    """The text of a scene file: UTF-8, with or without a byte-order mark. SceneError naming the
    encoding problem (UTF-16, binary) otherwise."""
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SceneError(f"cannot read the scene file {p}: {exc.strerror or exc}") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SceneError(f"{p} is UTF-16 text, not UTF-8: save it as UTF-8 (scene files are UTF-8 TOML)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SceneError(f"{p} is not UTF-8 text (byte {exc.start} cannot be decoded; a binary file or another "
                         "encoding?): a scene file is UTF-8 TOML, save it as UTF-8") from None


def config_from_dict(data: dict, source: str = "<dict>") -> SceneConfig:
    """Validate a scene given as a dict (e.g. from run metadata)."""
    try:
        return SceneConfig.model_validate(data)
    except ValidationError as exc:
        raise SceneError(_format_validation(exc, source)) from None


def _resolve_file(name: str, base_dir: Path) -> Path:
    """The path of a file named in a scene: ``builtin:...`` (packaged meshes), absolute, or relative
    to ``base_dir`` (the scene file's folder). SceneError for an empty name, a missing file or a folder."""
    if not name.strip():
        raise SceneError("a file name is empty: give the path of the file, relative to the scene file")
    if name.startswith("builtin:"):
        p = _data_dir() / "meshes" / name[len("builtin:"):]
    else:
        p = Path(name)
        if not p.is_absolute():
            p = base_dir / p
    if not p.exists():
        raise SceneError(f"file {name!r} not found (looked at {p})")
    if p.is_dir():
        raise SceneError(f"{name!r} is a folder ({p}), not a file: give the path of the file itself")
    return p


def scene_obstacles(cfg: SceneConfig, base_dir: Path, specs=None) -> list:
    """The obstacles of a scene (solid and thin, in ``[[obstacles]]`` order), or of ``specs`` (a
    subset of ``cfg.obstacles``); files are looked up relative to ``base_dir``.

    Raises
    ------
    SceneError
        Naming the obstacle, for invalid geometry or a missing file.
    """
    from isocloth.scenes.obstacle_specs import build_obstacles

    out = []
    for spec in cfg.obstacles if specs is None else specs:
        try:
            out += build_obstacles(spec, lambda name: _resolve_file(name, base_dir))
        except (ValueError, OSError) as exc:
            raise SceneError(f"obstacle {spec.name or spec.type}: {exc}") from None
    return out


def _rotation(deg) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    return Rotation.from_euler("xyz", deg, degrees=True).as_matrix()


def build_mesh(cfg: SceneConfig, base_dir: Path):
    """The cloth mesh of a scene, placed and perturbed as configured."""
    from isocloth.mesh import generators
    from isocloth.mesh.io import read_mesh

    spec = cfg.cloth.mesh
    if isinstance(spec, MeshFile):
        mesh = read_mesh(_resolve_file(spec.file, base_dir), rest=spec.rest, merge_tolerance=spec.merge_tolerance)
    elif spec.generator == "rectangle":
        mesh = generators.rectangle(spec.width, spec.height, spec.nx, spec.ny, element=spec.element, plane=spec.plane)
    elif spec.generator == "irregular":
        mesh = generators.irregular_rectangle(spec.width, spec.height, spec.node_count, seed=spec.seed,
                                              plane=spec.plane)
    elif spec.generator == "annulus":
        mesh = generators.annulus(spec.r_inner, spec.r_outer, spec.n_radial, spec.n_angular, element=spec.element)
    elif spec.generator == "band":
        mesh = generators.band(spec.radius, spec.width, spec.n_across, spec.n_around, element=spec.element)
    elif spec.generator == "leaning-cards":
        mesh = generators.leaning_cards(spec.width, spec.height, spec.angle, spec.gap, spec.nx, spec.ny)
    else:
        mesh = generators.disk(spec.radius, spec.n_radial, spec.n_angular, element=spec.element)
    pl = cfg.cloth.placement
    mesh = mesh.transformed(_rotation(pl.rotate_deg), pl.translate, pl.scale)
    if cfg.cloth.noise is not None and cfg.cloth.noise.sigma > 0:
        mesh = generators.perturbed(mesh, cfg.cloth.noise.sigma, cfg.cloth.noise.seed,
                                     rest=cfg.cloth.noise.rest, wavelength=cfg.cloth.noise.wavelength)
    return mesh


NEAREST_REACH = 0.1
"""A ``nearest`` grasp point farther than this fraction of the cloth's bounding-box diagonal from every
node is an error (a point given before placement, or in the wrong units)."""


def select_nodes(selector, x: np.ndarray) -> np.ndarray:
    """Node indices (k,) int64 chosen by a NodeSelector on positions x (n, 3) [m].

    Raises
    ------
    SceneError
        For indices out of range, a box containing no node, or a ``nearest`` point farther than
        ``NEAREST_REACH`` × the bounding-box diagonal from every node.
    """
    n = x.shape[0]
    out: list[int] = []
    if selector.indices:
        bad = [i for i in selector.indices if not 0 <= i < n]
        if bad:
            raise SceneError(f"grasp node index {bad[0]} is outside 0..{n - 1}")
        out += list(selector.indices)
    if selector.nearest:
        reach = NEAREST_REACH * float(np.linalg.norm(np.ptp(x, axis=0)))
        for p in selector.nearest:
            d = np.linalg.norm(x - np.asarray(p), axis=1)
            i = int(np.argmin(d))
            if d[i] > reach:
                raise SceneError(f"grasp point {list(p)} is {d[i]:.3g} m from the nearest node ({i}, at "
                                 f"{np.round(x[i], 4).tolist()}), more than {NEAREST_REACH:g} × the cloth's size "
                                 f"({reach:.3g} m): give a point on the placed cloth (positions after placement)")
            out.append(i)
    if selector.box_min is not None:
        lo, hi = np.asarray(selector.box_min), np.asarray(selector.box_max)
        inside = np.flatnonzero(np.all((x >= lo) & (x <= hi), axis=1))
        if inside.size == 0:
            raise SceneError(f"no node inside the box {lo.tolist()}..{hi.tolist()}")
        out += inside.tolist()
    if selector.inside_radius is not None:
        d = np.linalg.norm(x[:, :2] - np.asarray(selector.center)[:2], axis=1)
        inside = np.flatnonzero(d <= selector.inside_radius * (1 + 1e-9))
        if inside.size == 0:
            raise SceneError(f"no node within {selector.inside_radius} m of {list(selector.center)}")
        out += inside.tolist()
    return np.array(list(dict.fromkeys(out)), dtype=np.int64)


def _trajectory(spec, base_dir: Path):
    from isocloth import control as c

    if spec.type == "fixed":
        return c.TrajectoryFixed()
    if spec.type == "sinusoid":
        return c.TrajectorySinusoid(tuple(spec.amplitude), spec.frequency, spec.phase, spec.start, spec.duration)
    if spec.type == "waypoints":
        if len(spec.times) != len(spec.points):
            raise SceneError(f"waypoints: {len(spec.times)} times but {len(spec.points)} points")
        try:
            return c.TrajectoryWaypoints(tuple(spec.times), tuple(map(tuple, spec.points)), spec.interpolation)
        except ValueError as exc:
            raise SceneError(f"waypoints: {exc}") from None
    if spec.type == "rotation":
        return c.TrajectoryRotation(tuple(spec.axis), tuple(spec.center), spec.angular_velocity, spec.start,
                                    spec.max_angle)
    path = _resolve_file(spec.file, base_dir)
    samples = _read_samples(path, spec.file)
    try:
        return c.TrajectorySampled(spec.rate, samples, spec.start)
    except ValueError as exc:
        raise SceneError(f"sampled trajectory {spec.file}: {exc}") from None


def _check_sampled_nodes(spec, trajectory, count: int, where: str) -> None:
    """SceneError when a sampled trajectory's per-node displacements (s, k, 3) do not match the
    ``count`` nodes of its grasp (k must be 1 or ``count``; (s, 3) moves all nodes alike)."""
    if spec.type != "sampled":
        return
    d = np.asarray(trajectory.samples)
    if d.ndim == 3 and d.shape[1] not in (1, count):
        raise SceneError(f"{where}.trajectory: {spec.file} holds displacements of {d.shape[1]} nodes (shape "
                         f"{tuple(d.shape)}) but the grasp holds {count} node{'s' if count != 1 else ''}: give an "
                         f"array of shape (s, {count}, 3), or (s, 3) to move every grasped node alike")


def _read_samples(path: Path, name: str) -> np.ndarray:
    """Displacements of a sampled trajectory: a .npy array, or a CSV of numbers (a first line of
    column names is skipped). SceneError naming the file and the fix otherwise."""
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        text = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise SceneError(f"sampled trajectory {name}: cannot read it ({exc})") from None
    rows = [r for r in text if r.strip()]
    hint = "rows of the same number of comma-separated numbers, after at most one line of column names"
    if not rows:
        raise SceneError(f"sampled trajectory {name}: the file is empty; expected {hint} (e.g. '0.0,0.0,0.01')")
    header = None
    try:
        [float(v) for v in rows[0].split(",")]
    except ValueError:
        header, rows = rows[0], rows[1:]  # a header line
    if not rows:
        raise SceneError(f"sampled trajectory {name}: no data rows (its only line, {header.strip()!r}, is not "
                         f"comma-separated numbers and was taken for column names); expected {hint} "
                         "(e.g. '0.0,0.0,0.01')")
    try:
        values = [[float(v) for v in r.split(",")] for r in rows]
    except ValueError as exc:
        raise SceneError(f"sampled trajectory {name}: {exc}; expected {hint}") from None
    widths = {len(v) for v in values}
    if len(widths) > 1:
        first = len(values[0])
        k = next(i for i, v in enumerate(values) if len(v) != first)
        raise SceneError(f"sampled trajectory {name}: data row {k + 1} has {len(values[k])} numbers, the first "
                         f"{first}; expected {hint}")
    return np.array(values, dtype=np.float64).reshape(len(values), -1)


def material_of(cloth) -> "Material":  # noqa: F821
    """The Material of a ClothSpec: fabric preset (if any) with explicit parameters overriding it."""
    from isocloth.model.material import Material, fabric

    fields = {k: getattr(cloth, k) for k in ("rho", "delta", "alpha", "beta", "kappa", "shear_stiffness", "membrane_stiffness",
                                            "tensile_stiffness", "gravity")
              if getattr(cloth, k) is not None}
    if cloth.fabric:
        try:
            return fabric(cloth.fabric, **fields)
        except KeyError as exc:
            raise SceneError(f"cloth.fabric: {exc.args[0]}") from None
    return Material(**fields)


ELASTIC_DEFAULT_MATERIAL = "gray-interlock"
"""Measured material of ``[cloth] model = "elastic"`` when ``material`` is not given."""


def _measured(cfg: SceneConfig, base_dir: Path):
    """The measured material of ``[cloth] model = "elastic"``: a name of isocloth.elastic.MATERIALS, or
    a .json file relative to ``base_dir`` (the scene file's folder, like mesh files)."""
    from isocloth.elastic import load_measured_material

    name = cfg.cloth.material or ELASTIC_DEFAULT_MATERIAL
    if name.lower().endswith(".json"):
        try:
            name = _resolve_file(name, base_dir)
        except SceneError as exc:
            raise SceneError(f"cloth.material: {exc}") from None
    try:
        return load_measured_material(name)
    except ValueError as exc:
        raise SceneError(f"cloth.material: {exc}") from None


def _elastic_material(cfg: SceneConfig, material, base_dir: Path):
    """The Material of the elastic model: rho from the measured density unless given."""
    import dataclasses

    if cfg.cloth.rho is None:
        material = dataclasses.replace(material, rho=_measured(cfg, base_dir).density)
    return material


WARP_MIN_IN_PLANE = 0.05
"""A warp direction whose component in the plane of a rest triangle is shorter than this fraction
of it (within about 3° of the triangle's normal) is refused: its projection onto the cloth, the
fabric's warp there, would be undefined or arbitrary."""


def _check_warp(cfg: SceneConfig, mesh) -> None:
    """SceneError when ``cloth.warp`` is (nearly) normal to the rest shape of ``mesh``."""
    from isocloth.baselines.implicit import node_rest_positions

    rest = node_rest_positions(mesh)
    tri = mesh.triangulated_faces()
    w = np.asarray(cfg.cloth.warp, dtype=np.float64)
    w = w / np.linalg.norm(w)
    c = rest - rest.mean(axis=0)
    _, sv, vt = np.linalg.svd(c, full_matrices=False)
    if sv[-1] <= 1e-9 * max(sv[0], 1e-300):  # flat rest shape: one plane
        normals = vt[2][None]
    else:
        p = rest[tri]
        normals = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        normals = normals / np.where(length > 0, length, 1.0)
    in_plane = np.linalg.norm(w[None] - (normals @ w)[:, None] * normals, axis=1)
    bad = np.flatnonzero(in_plane < WARP_MIN_IN_PLANE)
    if bad.size:
        shown = [round(float(v), 4) for v in cfg.cloth.warp]
        where = ("the cloth's rest plane" if len(normals) == 1 else
                 f"{bad.size} of the {len(normals)} rest triangles (first: triangle {bad[0]})")
        raise SceneError(f"cloth.warp {shown} is (nearly) normal to {where}, whose normal is "
                         f"{np.round(normals[bad[0]], 4).tolist()}: the fabric's warp is this direction projected "
                         "onto the cloth, undefined here; give a direction along the cloth's rest shape (the mesh "
                         "before placement), e.g. [1, 0, 0] for a sheet in the xy plane")


def _elastic_stepper(cfg: SceneConfig, model, base_dir: Path):
    from isocloth.baselines.implicit import ImplicitEulerStepper
    from isocloth.elastic import MeasuredClothForces

    _check_warp(cfg, model.mesh)
    try:
        forces = MeasuredClothForces(model.mesh, _measured(cfg, base_dir), warp=cfg.cloth.warp)
    except ValueError as exc:
        raise SceneError(f"cloth: {exc}") from None
    return ImplicitEulerStepper(model, forces, dt=cfg.simulation.dt)


def build_scene(cfg: SceneConfig, base_dir: Path | str = ".", *, force: bool = False) -> Scene:
    """Build model, stepper and initial state from a validated config.

    ``force``: build even when cloth nodes start more than ``START_INSIDE`` inside an obstacle, or
    the cloth starts within the radius of a thin obstacle (:func:`nodes_near_thin`) (a
    ``UserWarning`` names the obstacle and counts the nodes; the first contact projection pushes
    them out, at the speed that takes within one step).

    Raises
    ------
    SceneError, MeshError, ValueError
        With messages naming the offending key or element; SceneError also for nodes starting
        inside an obstacle or within a thin obstacle's radius unless ``force``, a sampled
        trajectory whose per-node displacements do not match its grasp's node count, a material
        file (relative to ``base_dir``) that is missing, and an elastic ``cloth.warp`` (nearly)
        normal to the cloth's rest shape.
    """
    from isocloth.model.builder import ModelBuilder
    from isocloth.solvers.projection import SolverProjection
    from isocloth.step.stepper import Stepper

    base_dir = Path(base_dir)
    mesh = build_mesh(cfg, base_dir)
    material = material_of(cfg.cloth)
    if cfg.cloth.model == "elastic":
        material = _elastic_material(cfg, material, base_dir)
    b = ModelBuilder().set_cloth(mesh, material, constraint_mode=cfg.cloth.constraint_mode,
                                 constraint_model=cfg.cloth.constraint_model, stretch_limit=cfg.cloth.stretch_limit,
                                 corner_angle_deg=cfg.cloth.corner_angle_deg,
                                 initial_velocity=cfg.cloth.initial_velocity)
    for obs in scene_obstacles(cfg, base_dir):
        b.add_obstacle(obs)
    if cfg.self_collision is not None:
        b.set_self_collision(cfg.self_collision.options(mesh))
    for i, g in enumerate(cfg.grasps):
        where = f"grasps.{i} ({g.name or f'grasp{i}'!r})"
        try:
            trajectory = _trajectory(g.trajectory, base_dir)
        except ValueError as exc:
            if isinstance(exc, SceneError):
                raise
            raise SceneError(f"{where}.trajectory: {exc}") from None
        nodes = select_nodes(g.nodes, mesh.vertices)
        _check_sampled_nodes(g.trajectory, trajectory, nodes.size, where)
        try:
            b.add_grasp(nodes, trajectory, name=g.name or f"grasp{i}", start=g.start, end=g.end)
        except ValueError as exc:
            if isinstance(exc, SceneError):
                raise
            raise SceneError(f"{where}: {exc}: make the grasps' node selections disjoint") from None
    try:
        model = b.finalize()
    except ValueError as exc:
        if "self-collision thickness" in str(exc):
            raise SceneError(f"self_collision.thickness: {exc}") from None
        raise
    sim = cfg.simulation
    if cfg.cloth.model == "elastic":
        state = model.initial_state()
        _check_start_outside(model, state.x, force)
        return Scene(cfg, model, _elastic_stepper(cfg, model, base_dir), state, base_dir)
    contact = None
    if model.has_contacts:
        from isocloth.solvers.active_set import SolverActiveSet
        from isocloth.solvers.interior_point import SolverInteriorPoint
        from isocloth.step.contact_projection import ContactProjection

        qp = SolverActiveSet() if sim.solver == "active-set" else SolverInteriorPoint()
        contact = ContactProjection(qp_solver=qp, tolerance=sim.tolerance, max_iterations=sim.max_iterations,
                                    penetration_tolerance=sim.penetration_tolerance, margin=sim.contact_margin,
                                    face_midpoints=sim.face_midpoint_contacts)
    relaxation = None
    if sim.membrane_coupling == "relaxation":
        if not model.material.membrane_stiffness > 0:
            raise SceneError("simulation.membrane_coupling = 'relaxation' needs cloth.membrane_stiffness > 0 "
                             "(e.g. 1000.0); or drop the option")
        from isocloth.step.membrane_relaxation import MembraneRelaxation

        relaxation = MembraneRelaxation(sweeps=sim.membrane_sweeps, tolerance=sim.tolerance,
                                        penetration_tolerance=sim.penetration_tolerance, margin=sim.contact_margin,
                                        face_midpoints=sim.face_midpoint_contacts)
    stepper = Stepper(model, dt=sim.dt, contact_solver=contact, max_area_error_jump=sim.max_area_error_jump,
                      membrane_relaxation=relaxation, substeps=sim.substeps,
                      solver=SolverProjection(tolerance=sim.tolerance, max_iterations=sim.max_iterations))
    state = model.initial_state()
    if cfg.cloth.relax_initial:
        relax = SolverProjection(tolerance=sim.tolerance, max_iterations=500)
        res = relax.solve(state.x, model.inverse_masses, model.constraints, model.active_rows)
        state.x = res.x
    _check_start_outside(model, state.x, force)
    return Scene(cfg, model, stepper, state, base_dir)


START_INSIDE = 1e-3
"""[m] A cloth node deeper than this inside an obstacle at t = 0 is an error: the first contact
projection would push it out within one step (tens of m/s)."""


def nodes_inside(model, x: np.ndarray, depth: float = START_INSIDE) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """For each obstacle of ``model`` that has cloth nodes of x (n, 3) [m] more than ``depth`` [m]
    inside it at t = 0: (obstacle name, node indices (k,) int64, their depths (k,) float64 [m]).
    Nodes are the vertices of the cloth's surface (``model.surface_mesh`` at
    ``model.surface_positions(x)``).

    Surface obstacles (``model.obstacles``) by their signed distance; thin obstacles
    (``model.thin_obstacles``: points, sticks, polylines, segments) by :func:`nodes_near_thin`."""
    x = model.surface_positions(x)
    thin = [(name, nodes, d) for name, nodes, d, _ in nodes_near_thin(model, x, depth)]
    return _inside_surfaces(model, x, depth) + thin


def _inside_surfaces(model, x: np.ndarray, depth: float) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """:func:`nodes_inside` for the surface obstacles only."""
    out = []
    for k, obs in enumerate(model.obstacles):
        h = obs.signed_distance(x, 0.0)
        inside = np.flatnonzero(h < -depth)
        if inside.size:
            out.append((getattr(obs, "name", None) or f"obstacles.{k}", inside, -h[inside]))
    return out


def nodes_near_thin(model, x: np.ndarray,
                    depth: float = START_INSIDE) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    """For each thin obstacle of ``model`` (``model.thin_obstacles``) that the cloth's surface at x (n_v, 3) [m]
    comes within its radius r of at t = 0 by more than min(``depth``, r/2) [m] — an obstacle point
    near a cloth face, an obstacle segment near a cloth edge, or a segment through a face:
    (obstacle name, the nodes (k,) int64 of those faces and edges, their depths r − distance (k,)
    float64 [m], r [m])."""
    thin = tuple(getattr(model, "thin_obstacles", ()))
    if not thin:
        return []
    from isocloth.contact._ccd_kernels import pair_distances_kernel
    from isocloth.contact._intersection_kernels import segment_triangle
    from isocloth.contact.broadphase import _swept, box_pairs, mesh_edges

    tri = np.ascontiguousarray(model.surface_mesh.triangulated_faces(), dtype=np.int64)
    edges = mesh_edges(tri)
    n = x.shape[0]
    none = np.zeros((0, 4), dtype=np.int64)
    out = []
    for k, obs in enumerate(thin):
        r = float(obs.radius)
        X = np.ascontiguousarray(np.vstack([x, obs.vertices_at(0.0)]), dtype=np.float64)
        pts = n + np.asarray(obs.points, dtype=np.int64)
        segs = n + np.asarray(obs.segments, dtype=np.int64).reshape(-1, 2)
        grow = 0.5 * r * (1.0 + 1e-9)  # boxes overlap for every pair closer than r
        vf = ee = none
        if len(pts) and len(tri):
            pf = box_pairs(_swept(X, X, pts, grow), _swept(X, X, tri, grow))
            vf = np.ascontiguousarray(np.column_stack([pts[pf[:, 0]], tri[pf[:, 1]]]), dtype=np.int64)
        if len(segs) and len(edges):
            se = box_pairs(_swept(X, X, segs, grow), _swept(X, X, edges, grow))
            ee = np.ascontiguousarray(np.column_stack([segs[se[:, 0]], edges[se[:, 1]]]), dtype=np.int64)
        dv, de = np.empty(len(vf)), np.empty(len(ee))
        pair_distances_kernel(X, vf, ee, dv, de)
        node_depth = np.full(n, -np.inf)
        for nodes, d in ((vf[:, 1:], r - dv), (ee[:, 2:], r - de)):
            for c in range(nodes.shape[1]):
                np.maximum.at(node_depth, nodes[:, c], d)
        if len(segs) and len(tri):  # a segment through a face, far from its edges
            for a, b in box_pairs(_swept(X, X, segs, 0.0), _swept(X, X, tri, 0.0)):
                t = tri[b]
                if segment_triangle(X[segs[a, 0]], X[segs[a, 1]], X[t[0]], X[t[1]], X[t[2]]):
                    node_depth[t] = r
        near = np.flatnonzero(node_depth > min(depth, 0.5 * r))
        if near.size:
            name = getattr(obs, "name", None) or f"thin obstacle {k}"
            out.append((name, near, node_depth[near], r))
    return out


def _check_start_outside(model, x: np.ndarray, force: bool) -> None:
    """SceneError (a UserWarning with ``force``) when nodes of x (n, 3) [m] start more than
    ``START_INSIDE`` inside an obstacle, or the cloth starts within the radius of a thin obstacle
    (:func:`nodes_near_thin`); nodes are the vertices of ``model.surface_mesh``."""
    x = model.surface_positions(x)
    found = [(*f, None) for f in _inside_surfaces(model, x, START_INSIDE)] + nodes_near_thin(model, x)
    for name, nodes, depth, radius in found:
        i = int(np.argmax(depth))
        if radius is None:
            what = (f"{nodes.size} cloth node{'s' if nodes.size > 1 else ''} start{'' if nodes.size > 1 else 's'} "
                    f"inside obstacle {name!r} (deepest: node {nodes[i]} at {np.round(x[nodes[i]], 4).tolist()}, "
                    f"{depth[i]:.3g} m deep)")
        else:
            what = (f"the cloth starts within the radius ({radius:.3g} m) of thin obstacle {name!r}: it is "
                    f"{round(max(radius - depth[i], 0.0), 9):.3g} m from a face or edge at node {nodes[i]} (at "
                    f"{np.round(x[nodes[i]], 4).tolist()}; {nodes.size} node{'s' if nodes.size > 1 else ''} of such "
                    "faces and edges)")
        if force:
            warnings.warn(f"{what}; started anyway (forced): the first step pushes them out", UserWarning,
                          stacklevel=3)
            continue
        clear = ("every node starts outside it" if radius is None else
                 "the cloth starts farther than its radius from it")
        raise SceneError(f"{what}: move the cloth (cloth.placement) or the obstacle so that {clear}, or start "
                         "anyway with --force (isocloth run) / force=True (load_scene, build_scene): the first step "
                         "then pushes the nodes out")


def load_scene(name_or_path: str | Path, overrides: list[str] | None = None, *, force: bool = False) -> Scene:
    """Read, validate and build a scene in one call (``force``: see :func:`build_scene`)."""
    cfg, base = load_scene_config(name_or_path, overrides)
    return build_scene(cfg, base, force=force)
