"""Contacts with obstacles (thesis Chapter 3). This package currently holds the geometric layer:
obstacles with their constraint function H ≥ 0, normals and surface velocities."""

from isocloth.contact.obstacles import *  # noqa: F401,F403
from isocloth.contact.obstacles import __all__ as _obstacles_all

__all__ = list(_obstacles_all)
