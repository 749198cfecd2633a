"""Contacts with obstacles and self-collisions (thesis Chapter 3). This package holds the geometric
layer: obstacles with their constraint function H ≥ 0, normals and surface velocities; the broad
phase, continuous collision detection and self-collision / thin-obstacle constraint rows; and an
exact intersection checker."""

from isocloth.contact.obstacles import *  # noqa: F401,F403
from isocloth.contact.obstacles import __all__ as _obstacles_all

from isocloth.contact.broadphase import box_pairs, candidate_pairs, swept_boxes  # noqa: E402
from isocloth.contact.ccd import CCDHit, edge_edge_ccd, vertex_face_ccd  # noqa: E402
from isocloth.contact.intersection import (  # noqa: E402
    IntersectionReport,
    check_trajectory,
    face_intersections,
    self_intersections,
)
from isocloth.contact.self_collision import CollisionRows, CollisionSet, SelfCollisions  # noqa: E402

__all__ = list(_obstacles_all) + [
    "swept_boxes",
    "box_pairs",
    "candidate_pairs",
    "CCDHit",
    "vertex_face_ccd",
    "edge_edge_ccd",
    "CollisionRows",
    "CollisionSet",
    "SelfCollisions",
    "IntersectionReport",
    "check_trajectory",
    "face_intersections",
    "self_intersections",
]
