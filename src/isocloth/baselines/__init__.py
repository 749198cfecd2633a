"""Alternative cloth models for the model comparison of thesis §4.1.4 (Table 4.3).

- ``"quasi-inextensible"``: isocloth's own ``constraint_mode="quasi-inextensible"`` (E and G rows
  of the metric plus boundary edges kept, shear F left free and resisted by the soft shear energy
  of thesis eq. 2.17 with stiffness ``shear_stiffness``). The thesis' reference [44] (Goldenthal et
  al. 2007) constrains the quad edge lengths and adds diagonal springs; this is the continuum form
  of the same idea on the same FEM discretisation. Stepped by :class:`isocloth.Stepper`.
- ``"mass-spring"``: :class:`MassSpringForces` (Provot 1995; Blender, MuJoCo).
- ``"baraff-witkin"``: :class:`BaraffWitkinForces` (continuum stretch/shear energies, Baraff &
  Witkin 1998).

The elastic models are stepped by :class:`ImplicitEulerStepper` with the same
``step(state, control, dt) -> (State, StepInfo)`` signature as :class:`isocloth.Stepper`, and use
the Material's ρ, δ, α, β with the same meaning.
"""

from __future__ import annotations

from isocloth.baselines.baraff_witkin import BaraffWitkinForces
from isocloth.baselines.implicit import ElasticForces, ImplicitEulerStepper
from isocloth.baselines.mass_spring import MassSpringForces

__all__ = ["BaraffWitkinForces", "MassSpringForces", "ElasticForces", "ImplicitEulerStepper", "make_stepper",
           "BASELINE_KINDS"]

BASELINE_KINDS = ("mass-spring", "baraff-witkin")


def make_stepper(kind: str, model, *, dt: float = 0.01, stiffness: float = 1000.0, shear_ratio: float = 0.1):
    """A stepper of an elastic baseline on ``model``'s mesh, material and grasps.

    Parameters
    ----------
    kind : "mass-spring" or "baraff-witkin"
    model : ClothModel (obstacles: nodal contacts with exact Coulomb friction, see ImplicitEulerStepper)
    dt : time step [s]
    stiffness : structural-spring / stretch stiffness [N/m]
    shear_ratio : shear stiffness as a fraction of ``stiffness``

    Raises
    ------
    ValueError
        For another kind or bad stiffness values.
    """
    if kind == "mass-spring":
        forces = MassSpringForces(model.mesh, stiffness, shear_ratio)
    elif kind == "baraff-witkin":
        forces = BaraffWitkinForces(model.mesh, stiffness, shear_ratio)
    else:
        raise ValueError(f"unknown baseline {kind!r}; choose one of {BASELINE_KINDS} (the quasi-inextensible "
                         f"model is isocloth's Stepper with constraint_mode='quasi-inextensible')")
    return ImplicitEulerStepper(model, forces, dt=dt)
