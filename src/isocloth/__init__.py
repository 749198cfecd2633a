"""isocloth: inextensible cloth simulation for robotic manipulation (Coltraro et al. model).

Roots: Mesh, Material, ModelBuilder, ClothModel, State, Control, Stepper.
"""

__version__ = "0.1.0"

from isocloth.control import Control
from isocloth.mesh.mesh import Mesh
from isocloth.model.builder import ModelBuilder
from isocloth.model.material import Material
from isocloth.model.model import ClothModel
from isocloth.state import State
from isocloth.step.stepper import Stepper

__all__ = ["Mesh", "Material", "ModelBuilder", "ClothModel", "State", "Control", "Stepper", "__version__"]
