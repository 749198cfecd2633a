"""Stage 2: the static model (material, builder, frozen ClothModel)."""
from isocloth.model.builder import ModelBuilder
from isocloth.model.material import FABRIC_PRESETS, Material, fabric
from isocloth.model.model import ClothModel, SelfCollisionOptions

__all__ = ["ModelBuilder", "Material", "ClothModel", "fabric", "FABRIC_PRESETS", "SelfCollisionOptions"]
