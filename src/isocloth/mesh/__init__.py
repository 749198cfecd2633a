"""Stage 0: geometry without physics (mesh type, topology, generators, file I/O, quality checks)."""
from isocloth.mesh.mesh import Mesh, MeshError

__all__ = ["Mesh", "MeshError"]
