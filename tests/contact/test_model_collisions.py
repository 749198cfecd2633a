"""Self-collision options and thin obstacles carried by the model (ModelBuilder → ClothModel →
``collision_detector``), the τ0 check against the mesh, and rows on grasped nodes."""

import numpy as np
import pytest

from isocloth.contact.obstacles import ObstaclePlane, ObstaclePoints, ObstaclePolyline
from isocloth.contact.self_collision import KIND_EDGE_EDGE, KIND_POINT_FACE, KIND_VERTEX_FACE, SelfCollisions
from isocloth.mesh.generators import rectangle
from isocloth.mesh.mesh import Mesh
from isocloth.model import Material, ModelBuilder, SelfCollisionOptions

DT = 0.01


def two_layers(gap=0.05):
    """Two 6x6 quad sheets 0.25 m wide (spacing 5 cm), one 5 cm above the other, as one mesh."""
    m = rectangle(0.25, 0.25, 6, 6, element="quad")
    n = m.node_count
    v = np.vstack([m.vertices, m.vertices + [0.011, 0.013, gap]])
    return Mesh(v, quads=np.vstack([m.quads, m.quads + n]), name="two layers"), n


@pytest.mark.parametrize("kw, match", [
    ({"thickness": 0.0}, "thickness must be > 0"),
    ({"thickness": float("nan")}, "thickness must be finite"),
    ({"omega": 0.51}, r"omega must be in \[0, 0.5\]"),
    ({"omega": -0.1}, r"omega must be in \[0, 0.5\]"),
    ({"omega_decay": 1.0}, r"omega_decay must be in \(0, 1\)"),
    ({"omega_decay": 0.0}, r"omega_decay must be in \(0, 1\)"),
    ({"max_restarts": -1}, "max_restarts must be an integer >= 0"),
    ({"max_restarts": 1.5}, "max_restarts must be an integer >= 0"),
    ({"mu_cloth": -0.2}, "mu_cloth must be >= 0"),
])
def test_options_are_validated(kw, match):
    with pytest.raises(ValueError, match=match):
        SelfCollisionOptions(**kw)


def test_builder_carries_options_and_thin_obstacles():
    mesh, n = two_layers()
    stick = ObstaclePolyline.stick([0.0, 1.0], [[-0.1, 0.1, 0.5], [-0.1, 0.1, 0.5]],
                                   [[0.3, 0.1, 0.5], [0.3, 0.1, 0.5]])
    floor = ObstaclePlane(point=(0, 0, -0.1))
    b = ModelBuilder().set_cloth(mesh, Material())
    b.set_self_collision(thickness=0.004, mu_cloth=0.4, max_restarts=3)
    b.add_obstacle(floor).add_obstacle(stick)  # thin obstacles are routed to thin_obstacles
    m = b.finalize()
    assert m.obstacles == (floor,) and m.thin_obstacles == (stick,)
    assert m.self_collision == SelfCollisionOptions(thickness=0.004, mu_cloth=0.4, max_restarts=3)
    det = m.collision_detector
    assert isinstance(det, SelfCollisions) and det is m.collision_detector  # built once
    assert det.self_collision and det.thickness == 0.004 and det.mu == 0.4 and det.obstacles == [stick]
    assert len(det.triangles) == 2 * mesh.quad_count  # quads split for detection
    d = m.describe()
    assert d["self_collision"]["mu_cloth"] == 0.4 and len(d["thin_obstacles"]) == 1
    # options object instead of keywords; both at once is an error
    opts = SelfCollisionOptions(thickness=0.003)
    assert ModelBuilder().set_cloth(mesh).set_self_collision(opts).finalize().self_collision is opts
    with pytest.raises(ValueError, match="not both"):
        ModelBuilder().set_self_collision(opts, thickness=0.002)
    with pytest.raises(TypeError):
        ModelBuilder().set_self_collision(thickness=0.002, colour=1)


def test_builder_rejects_wrong_obstacle_kinds():
    b = ModelBuilder()
    with pytest.raises(TypeError, match="surface obstacles go through add_obstacle"):
        b.add_thin_obstacle(ObstaclePlane())
    with pytest.raises(TypeError, match="is not an obstacle"):
        b.add_obstacle(object())


def test_thickness_must_be_below_the_rest_distance():
    mesh, n = two_layers(gap=0.01)  # layers 1 cm apart
    with pytest.raises(ValueError, match=r"thickness 0.012 m is not smaller than 0.01 m.*two layers"):
        ModelBuilder().set_cloth(mesh).set_self_collision(thickness=0.012).finalize()
    m = ModelBuilder().set_cloth(mesh).set_self_collision(thickness=0.009).finalize()
    # disabled self-collisions are not checked
    ModelBuilder().set_cloth(mesh).set_self_collision(enabled=False, thickness=0.012).finalize()
    with pytest.raises(ValueError, match="not smaller than"):
        m.replace(self_collision=m.self_collision.replace(thickness=0.011))


def test_replace_keeps_options_obstacles_and_detector():
    mesh, n = two_layers()
    pts = ObstaclePoints([[0.1, 0.1, 0.02]], radius=0.002)
    m = ModelBuilder().set_cloth(mesh).set_self_collision(thickness=0.004).add_obstacle(pts).finalize()
    m2 = m.replace(material=m.material.replace(alpha=0.5))
    assert m2.self_collision is m.self_collision and m2.thin_obstacles == (pts,)
    assert m2.collision_detector is not m.collision_detector  # rebuilt (cache cleared) ...
    assert m2.collision_detector.thickness == 0.004 and m2.collision_detector.obstacles == [pts]  # ... the same
    m3 = m.replace(self_collision=m.self_collision.replace(mu_cloth=0.7, omega=0.3))
    assert m3.collision_detector.mu == 0.7 and m3.self_collision.omega == 0.3
    assert m3.thin_obstacles == (pts,) and m3.material is m.material
    m4 = m.replace(self_collision=SelfCollisionOptions(enabled=False))
    assert m4.collision_detector is not None and not m4.collision_detector.self_collision  # the points stay
    assert ModelBuilder().set_cloth(mesh).finalize().collision_detector is None


def test_model_detector_catches_a_layer_falling_through():
    """The upper layer falls through the lower one at 10 m/s within one step: the model's detector
    finds node–face and edge–edge rows, oriented so that H(φⁿ) ≥ 0 and violated at the end; the ω = 0
    final check (crossings) finds crossings too. Rows whose nodes are all grasped are not movable."""
    mesh, n = two_layers()
    b = ModelBuilder().set_cloth(mesh).set_self_collision(thickness=0.004)
    b.add_grasp(np.arange(n))  # the lower layer is held
    m = b.finalize()
    x0 = m.initial_positions
    x1 = x0.copy()
    x1[n:, 2] -= 10.0 * DT
    det = m.collision_detector
    rows = det.detect(x0, x1, omega=m.self_collision.omega)
    assert np.any(rows.kind == KIND_VERTEX_FACE) and np.any(rows.kind == KIND_EDGE_EDGE)
    assert np.all(rows.values(x0) + rows.thickness >= -1e-12)
    assert np.all(rows.values(x1) < 0.0)
    assert det.crossings(x0, x1).count > 0
    mov = rows.movable(m.free_mask)
    upper = np.any((rows.nodes >= n) & (rows.weights != 0.0), axis=1)
    np.testing.assert_array_equal(mov, upper)
    assert mov.any()
    none_free = rows.movable(np.zeros(2 * n, dtype=bool))
    assert not none_free.any()


def test_needle_tip_against_the_model_faces():
    """A point obstacle (needle tip) rising through a resting sheet is caught by a point–face row."""
    mesh = rectangle(0.3, 0.3, 7, 7, element="quad")
    tip = ObstaclePoints([[0.012, 0.017, -0.02]], radius=0.001, times=[0.0, DT],
                         trajectory=[[[0.012, 0.017, -0.02]], [[0.012, 0.017, 0.03]]])
    m = ModelBuilder().set_cloth(mesh).add_obstacle(tip).finalize()
    assert not m.self_collision.enabled and m.has_contacts
    x = m.initial_positions
    rows = m.collision_detector.detect(x, x, t_prev=0.0, t=DT)
    assert rows.count >= 1 and np.all(rows.kind == KIND_POINT_FACE)
    np.testing.assert_allclose(np.abs(rows.normal[:, 2]), 1.0)
    np.testing.assert_allclose(rows.obstacle_velocity[:, 2] * np.sign(rows.weights[:, 0]), 5.0)
