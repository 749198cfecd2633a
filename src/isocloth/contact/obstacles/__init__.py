"""Rigid, kinematically moving obstacles for cloth contact (thesis §3.2, §3.6).

Each obstacle gives the Signorini constraint value H(p, t) = d(p, t) − thickness ≥ 0, its unit
outward normal ∇H, and the obstacle's surface velocity for friction, for (k, 3) world points.
Thin (codimensional) obstacles — segments, polylines (a stick), points (needle tips) — are not
node-wise: they are checked against cloth edges and faces by continuous collision detection
(``ObstacleCodim`` and subclasses, used by :mod:`isocloth.contact.self_collision`).
"""

from isocloth.contact.obstacles.base import Obstacle
from isocloth.contact.obstacles.box import ObstacleBox
from isocloth.contact.obstacles.codim import ObstacleCodim, ObstaclePoints, ObstacleSegments, read_seg
from isocloth.contact.obstacles.capsule import ObstacleCapsule
from isocloth.contact.obstacles.cone import ObstacleCone
from isocloth.contact.obstacles.cylinder import ObstacleCylinder
from isocloth.contact.obstacles.motion import (
    Motion,
    MotionComposite,
    MotionRotation,
    MotionStatic,
    MotionTranslation,
    MotionWaypoints,
    Pose,
    rotation_matrix,
)
from isocloth.contact.obstacles.needles import ObstacleNeedles
from isocloth.contact.obstacles.plane import ObstaclePlane
from isocloth.contact.obstacles.polyline import ObstaclePolyline
from isocloth.contact.obstacles.sdf import ObstacleSDF
from isocloth.contact.obstacles.sphere import ObstacleSphere
from isocloth.contact.obstacles.trimesh_obstacle import ObstacleMesh

__all__ = [
    "Obstacle",
    "ObstaclePlane",
    "ObstacleBox",
    "ObstacleSphere",
    "ObstacleCylinder",
    "ObstacleCone",
    "ObstacleCapsule",
    "ObstacleNeedles",
    "ObstacleSDF",
    "ObstacleMesh",
    "ObstacleCodim",
    "ObstacleSegments",
    "ObstaclePoints",
    "ObstaclePolyline",
    "read_seg",
    "Pose",
    "rotation_matrix",
    "Motion",
    "MotionStatic",
    "MotionTranslation",
    "MotionWaypoints",
    "MotionRotation",
    "MotionComposite",
]
