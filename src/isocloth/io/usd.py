"""Export of a run to Universal Scene Description (Pixar's USD, through ``usd-core``).

One stage holds the whole motion: the cloth as a ``UsdGeomMesh`` whose ``points`` are sampled at every
frame, and each drawable obstacle as a ``UsdGeomMesh`` in its reference frame under an ``Xform`` whose
transform is sampled at every frame (written once when the obstacle does not move); thin obstacles
(needles, polylines) are ``UsdGeomBasisCurves`` with sampled points. Time code k is the time
``k / timeCodesPerSecond`` seconds, with ``timeCodesPerSecond`` the run's frame rate, so frame i is at time
code ``times[i] × timeCodesPerSecond`` (the frame index when frames are evenly spaced from t = 0). The
stage is Z-up with metres as units (``metersPerUnit`` = 1), as the simulation; usdview, Isaac Sim and
Blender read it. Points are single precision (USD's ``point3f``): 6e-8 m resolution at 1 m.

The format follows the suffix: ``.usda`` (text), ``.usdc`` (binary crate) or ``.usd`` (crate).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from isocloth.io.atomic import atomic_path
from isocloth.io.trajectory import Trajectory, require_frames

__all__ = ["USD_SUFFIXES", "export_usd", "frame_rate"]

USD_SUFFIXES = (".usd", ".usda", ".usdc")


def _pxr():
    """pxr's modules (Usd, UsdGeom, Gf, Vt, Sdf); ImportError naming the package when it is missing."""
    try:
        from pxr import Gf, Sdf, Usd, UsdGeom, Vt
    except ImportError as exc:  # pragma: no cover - usd-core is a dependency
        raise ImportError("USD export needs the usd-core package: pip install usd-core") from exc
    return Usd, UsdGeom, Gf, Vt, Sdf


def frame_rate(times: np.ndarray) -> float:
    """Frames per second [1/s] of frame times ``times`` (F,) float64 [s]: the inverse of the median
    frame interval (24 for a single frame, USD's default)."""
    gaps = np.diff(np.asarray(times, dtype=np.float64))
    gaps = gaps[gaps > 0]
    return float(1.0 / np.median(gaps)) if gaps.size else 24.0


def _prim_name(name: str, taken: set[str]) -> str:
    """A valid, unused USD prim name made from ``name`` (letters, digits and '_', not starting with a digit)."""
    base = "".join(ch if ch.isalnum() and ch.isascii() else "_" for ch in str(name)) or "obstacle"
    if base[0].isdigit():
        base = "_" + base
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


def _pose_matrix(Gf, pose) -> object:
    """Gf.Matrix4d of an :class:`~isocloth.contact.obstacles.motion.Pose` (USD's row-vector convention:
    p' = p M with M = [[Rᵀ, 0], [t, 1]])."""
    M = np.eye(4)
    M[:3, :3] = pose.rotation.T
    M[3, :3] = pose.translation
    return Gf.Matrix4d(*M.ravel().tolist())


def export_usd(traj: Trajectory, path: str | os.PathLike, obstacles=(), *, progress=None) -> Path:
    """Write ``traj`` (and the ``obstacles`` of its scene) as one time-sampled USD stage.

    Parameters
    ----------
    traj : Trajectory
        The motion; its ``times`` (F,) [s] set the time codes (module docstring), its ``positions``
        (F, n, 3) float64 [m] the cloth's points, its ``triangles`` and ``quads`` the faces.
    path : str or os.PathLike
        Stage file; the suffix ``.usd``, ``.usda`` or ``.usdc`` chooses the format. Its folder is created
        if missing. Written atomically (a partial file never replaces an existing one).
    obstacles : sequence of Obstacle or ObstacleCodim
        The scene's obstacles (``Scene.model.obstacles`` and thin obstacles), drawn as in the videos
        (:class:`~isocloth.viz.obstacle_meshes.ObstacleGeometry`: planes as patches around the cloth's
        and the obstacles' bounding box).
    progress : callable(done, total) or None
        Called after each frame's samples are written.

    Returns
    -------
    pathlib.Path
        The written stage.

    Raises
    ------
    ValueError
        If the suffix is not a USD one, or the trajectory has no frame or a non-finite position
        (:func:`~isocloth.io.trajectory.require_frames`; nothing is written then).
    OSError
        On file system errors.
    """
    from isocloth.viz.obstacle_meshes import ObstacleGeometry
    from isocloth.viz.render import trajectory_bounds, view_bounds

    path = Path(path)
    if path.suffix.lower() not in USD_SUFFIXES:
        raise ValueError(f"a USD stage needs the suffix .usd, .usda or .usdc, got {path.name!r}: "
                         "e.g. runs/mine/cloth.usd")
    require_frames(traj)
    Usd, UsdGeom, Gf, Vt, Sdf = _pxr()
    fps = frame_rate(traj.times)
    codes = np.round(np.asarray(traj.times, dtype=np.float64) * fps, 9)  # 2.0, not 1.9999999999999998
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(fps)
    stage.SetFramesPerSecond(fps)
    stage.SetStartTimeCode(float(codes[0]))
    stage.SetEndTimeCode(float(codes[-1]))
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())

    cloth = UsdGeom.Mesh.Define(stage, "/World/Cloth")
    faces = [np.asarray(traj.triangles, dtype=np.int64), np.asarray(traj.quads, dtype=np.int64)]
    cloth.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(faces[0]) + [4] * len(faces[1])))
    cloth.CreateFaceVertexIndicesAttr(Vt.IntArray(np.concatenate([f.ravel() for f in faces]).tolist()))
    cloth.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    cloth.CreateDoubleSidedAttr(True)
    points, extent = cloth.CreatePointsAttr(), cloth.CreateExtentAttr()

    obstacles = list(obstacles)
    geometry = ObstacleGeometry(obstacles, view_bounds(trajectory_bounds(traj.positions), obstacles, float(traj.times[0])))
    taken: set[str] = {"thin"}  # the prim of the thin obstacles
    solids = []  # (obstacle, Xform prim) of the moving solid obstacles
    for obs, tris in geometry.reference_parts():
        name = _prim_name(getattr(obs, "name", "obstacle"), taken)
        xf = UsdGeom.Xform.Define(stage, f"/World/Obstacles/{name}")
        mesh = UsdGeom.Mesh.Define(stage, f"/World/Obstacles/{name}/Mesh")
        verts = tris.reshape(-1, 3)
        mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(verts.astype(np.float32)))
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(tris)))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray(list(range(verts.shape[0]))))
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        mesh.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(*verts.min(axis=0).tolist()), Gf.Vec3f(*verts.max(axis=0).tolist())]))
        op = xf.AddTransformOp()
        if obs.motion.is_static:
            op.Set(_pose_matrix(Gf, obs.motion.pose(0.0)))
        else:
            solids.append((obs, op))
    curves = None
    thin = geometry.thin_obstacles()
    if thin:
        curves = UsdGeom.BasisCurves.Define(stage, "/World/Obstacles/thin")
        curves.CreateTypeAttr(UsdGeom.Tokens.linear)
        segs, _ = geometry.segments(0.0)
        curves.CreateCurveVertexCountsAttr(Vt.IntArray([2] * len(segs)))
        curves.CreatePointsAttr()
        radius = np.concatenate([np.full(2 * len(o.segments), float(o.radius)) for o in thin])
        curves.CreateWidthsAttr(Vt.FloatArray((2.0 * radius).tolist()))
        curves.SetWidthsInterpolation(UsdGeom.Tokens.vertex)

    total = traj.frame_count
    for i in range(total):
        code = Usd.TimeCode(float(codes[i]))
        x = traj.positions[i]
        points.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(x, dtype=np.float32)), code)
        extent.Set(Vt.Vec3fArray([Gf.Vec3f(*x.min(axis=0).tolist()), Gf.Vec3f(*x.max(axis=0).tolist())]), code)
        t = float(traj.times[i])
        for obs, op in solids:
            op.Set(_pose_matrix(Gf, obs.motion.pose(t)), code)
        if curves is not None:
            segs, _ = geometry.segments(t)
            curves.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(segs.reshape(-1, 3), np.float32)),
                                       code)
        if progress is not None:
            progress(i + 1, total)
    path.parent.mkdir(parents=True, exist_ok=True)
    from pxr import Tf

    with atomic_path(path) as tmp:
        try:
            written = stage.GetRootLayer().Export(str(tmp))
        except Tf.ErrorException as exc:  # USD reports file errors as its own RuntimeError
            raise OSError(f"USD could not write {path}: {exc}") from exc
        if not written:
            raise OSError(f"USD could not write {path}")
    return path
