"""The elastic cloth model of Li et al. 2018 (§7): measured materials of Wang et al. 2011, a
Green-strain membrane and dihedral-angle bending, stepped by linearised implicit Euler with exact
Coulomb contact (:class:`isocloth.baselines.implicit.ImplicitEulerStepper`)."""

from isocloth.elastic.forces import MeasuredClothForces, dihedral_angles, interior_edges
from isocloth.elastic.materials import (MATERIALS, MEASURED_MATERIALS, MeasuredMaterial, bending_stiffness,
                                        load_measured_material, stretching_stiffness)

__all__ = ["MATERIALS", "MEASURED_MATERIALS", "MeasuredClothForces", "MeasuredMaterial", "bending_stiffness", "dihedral_angles",
           "interior_edges", "load_measured_material", "stretching_stiffness"]
