"""The immutable cloth mesh: geometry and rest shape, no physics.

Conventions (see ``docs/conventions.md``): SI units (metres), z up, node-major arrays,
faces listed counter-clockwise seen from their front side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

__all__ = ["Mesh", "MeshError"]


class MeshError(ValueError):
    """A mesh is unusable; the message names the offending elements and how to fix them."""


def _as_faces(a, k: int, name: str) -> np.ndarray:
    if a is None:
        return np.zeros((0, k), dtype=np.int64)
    arr = np.asarray(a)
    if arr.size == 0:
        return np.zeros((0, k), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != k:
        raise MeshError(f"{name} must have shape (count, {k}); got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.equal(np.mod(arr, 1), 0)):
            raise MeshError(f"{name} must hold integer node indices")
    return np.ascontiguousarray(arr, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Mesh:
    """A surface mesh of triangles and/or quadrilaterals with a rest shape.

    Attributes
    ----------
    vertices : (n, 3) float64
        Node positions [m] of the current (initial) configuration.
    triangles : (t, 3) int64
        Triangle node indices, counter-clockwise.
    quads : (q, 4) int64
        Quadrilateral node indices, counter-clockwise (the order N1..N4 of the bilinear
        element, thesis eq. 2.4).
    rest_vertices : (n, 3) float64 or None
        Node positions [m] of the rest (stress-free, usually flat) shape. ``None`` means the
        rest shape is ``vertices``.
    rest_triangle_corners : (t, 3, 3) float64 or None
        Per-corner rest positions [m] of each triangle (e.g. from the ``vt`` lines of a
        Berkeley Garment Library OBJ, where seams join panels that are flat separately).
        Takes precedence over ``rest_vertices``.
    rest_quad_corners : (q, 4, 3) float64 or None
        The same for quads.
    name : str
        A label used in messages and metadata.
    rest_source : str
        Where the rest shape came from, in words (set by :func:`isocloth.mesh.io.read_mesh`).

    The constructor normalizes dtypes and shapes once; inner code trusts them. It does not
    check the topology: use :func:`isocloth.mesh.quality.validate_mesh` (done by the model
    builder) for that.

    Raises
    ------
    MeshError
        On arrays of the wrong shape, NaN/inf coordinates or out-of-range indices.
    """

    vertices: np.ndarray
    triangles: np.ndarray = field(default=None)  # type: ignore[assignment]
    quads: np.ndarray = field(default=None)  # type: ignore[assignment]
    rest_vertices: np.ndarray | None = None
    rest_triangle_corners: np.ndarray | None = None
    rest_quad_corners: np.ndarray | None = None
    name: str = "mesh"
    rest_source: str = ""

    def __post_init__(self) -> None:
        v = np.asarray(self.vertices, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise MeshError(f"vertices must have shape (n, 3); got {v.shape}")
        bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
        if bad.size:
            raise MeshError(
                f"non-finite coordinate (NaN or inf) in vertex {bad[0]}"
                + (f" and {bad.size - 1} more" if bad.size > 1 else "")
                + ": fix or remove these vertices in the mesh file"
            )
        object.__setattr__(self, "vertices", np.ascontiguousarray(v))
        tri = _as_faces(self.triangles, 3, "triangles")
        quad = _as_faces(self.quads, 4, "quads")
        n = v.shape[0]
        for name, f in (("triangles", tri), ("quads", quad)):
            if f.size and (f.min() < 0 or f.max() >= n):
                row = int(np.flatnonzero((f < 0).any(1) | (f >= n).any(1))[0])
                raise MeshError(
                    f"{name[:-1]} {row} references node {f[row].tolist()} outside 0..{n - 1}"
                )
        object.__setattr__(self, "triangles", tri)
        object.__setattr__(self, "quads", quad)
        if tri.shape[0] + quad.shape[0] == 0:
            raise MeshError("mesh has no faces: give triangles and/or quads")
        if self.rest_vertices is not None:
            r = np.ascontiguousarray(self.rest_vertices, dtype=np.float64)
            if r.shape != v.shape:
                raise MeshError(f"rest_vertices must have shape {v.shape}; got {r.shape}")
            if not np.isfinite(r).all():
                i = int(np.flatnonzero(~np.isfinite(r).all(1))[0])
                raise MeshError(f"non-finite rest coordinate in vertex {i}")
            object.__setattr__(self, "rest_vertices", r)
        for attr, faces, k in (
            ("rest_triangle_corners", tri, 3),
            ("rest_quad_corners", quad, 4),
        ):
            val = getattr(self, attr)
            if val is None:
                continue
            r = np.ascontiguousarray(val, dtype=np.float64)
            if r.shape != (faces.shape[0], k, 3):
                raise MeshError(f"{attr} must have shape {(faces.shape[0], k, 3)}; got {r.shape}")
            if not np.isfinite(r).all():
                raise MeshError(f"non-finite value in {attr}")
            object.__setattr__(self, attr, r)
        for a in ("vertices", "triangles", "quads", "rest_vertices",
                  "rest_triangle_corners", "rest_quad_corners"):
            arr = getattr(self, a)
            if arr is not None:
                arr.flags.writeable = False

    # ------------------------------------------------------------------ sizes
    @property
    def node_count(self) -> int:
        """Number of nodes n."""
        return int(self.vertices.shape[0])

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])

    @property
    def quad_count(self) -> int:
        return int(self.quads.shape[0])

    @property
    def face_count(self) -> int:
        return self.triangle_count + self.quad_count

    # ------------------------------------------------------------ rest shape
    @cached_property
    def rest_corners(self) -> tuple[np.ndarray, np.ndarray]:
        """Rest positions of every element corner [m]: ``((t, 3, 3), (q, 4, 3))`` float64.

        Taken from the per-corner rest arrays when given, else from ``rest_vertices``,
        else from ``vertices``.
        """
        base = self.rest_vertices if self.rest_vertices is not None else self.vertices
        tri = self.rest_triangle_corners
        if tri is None:
            tri = base[self.triangles]
        quad = self.rest_quad_corners
        if quad is None:
            quad = base[self.quads]
        return tri, quad

    @property
    def has_per_corner_rest(self) -> bool:
        return self.rest_triangle_corners is not None or self.rest_quad_corners is not None

    # ------------------------------------------------------------- transforms
    def replace(self, **changes) -> "Mesh":
        """A copy with the given fields changed (the mesh itself is frozen)."""
        data = {
            "vertices": self.vertices,
            "triangles": self.triangles,
            "quads": self.quads,
            "rest_vertices": self.rest_vertices,
            "rest_triangle_corners": self.rest_triangle_corners,
            "rest_quad_corners": self.rest_quad_corners,
            "name": self.name,
            "rest_source": self.rest_source,
        }
        data.update(changes)
        return Mesh(**data)

    def transformed(self, rotation=None, translation=None, scale: float = 1.0) -> "Mesh":
        """The mesh moved rigidly (and optionally scaled) as ``x -> scale * R x + t``.

        Only the current configuration moves; the rest shape is scaled but not moved (the
        metric is invariant under rigid motions).

        Parameters
        ----------
        rotation : (3, 3) float64, optional
            Rotation matrix R.
        translation : (3,) float64 [m], optional
        scale : float
        """
        R = np.eye(3) if rotation is None else np.asarray(rotation, dtype=np.float64)
        t = np.zeros(3) if translation is None else np.asarray(translation, dtype=np.float64)
        v = scale * self.vertices @ R.T + t
        changes = {"vertices": v}
        if scale != 1.0:
            for a in ("rest_vertices", "rest_triangle_corners", "rest_quad_corners"):
                val = getattr(self, a)
                if val is not None:
                    changes[a] = scale * val
            if self.rest_vertices is None and not self.has_per_corner_rest:
                changes["rest_vertices"] = scale * self.vertices
        elif self.rest_vertices is None and not self.has_per_corner_rest:
            changes["rest_vertices"] = self.vertices
        return self.replace(**changes)

    def triangulated_faces(self) -> np.ndarray:
        """All faces as triangles, quads split along their 0–2 diagonal: (t + 2q, 3) int64."""
        q = self.quads
        return np.concatenate([self.triangles, q[:, [0, 1, 2]], q[:, [0, 2, 3]]], axis=0)

    def __repr__(self) -> str:
        return (
            f"Mesh(name={self.name!r}, nodes={self.node_count}, triangles={self.triangle_count}, "
            f"quads={self.quad_count})"
        )
