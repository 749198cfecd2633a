"""Exact Coulomb friction at mesh vertices: the local solver, the primal nodal Gauss–Seidel and its
dual baseline (Li et al. 2018 §4)."""

import numpy as np
import pytest
import scipy.sparse as sp

from isocloth.mesh.generators import rectangle
from isocloth.solvers.coulomb_local import coulomb_residual, fischer_burmeister, solve_local
from isocloth.solvers.nodal_contact import NodalContacts, nodal_problem, solve_dual, solve_primal

G = np.array([0.0, 0.0, -9.81])


def law(r, u, mu, tol):
    """Which case of the Signorini–Coulomb law (r, u) satisfy, by its definition (Li §4.1), or None."""
    rN, rT, uN, uT = r[0], r[1:], u[0], u[1:]
    if np.linalg.norm(r) <= tol and uN >= -tol:
        return "take-off"
    if np.linalg.norm(u) <= tol and np.linalg.norm(rT) <= mu * rN + tol:
        return "stick"
    if abs(uN) <= tol and rN >= -tol and abs(np.linalg.norm(rT) - mu * rN) <= tol:
        parallel = abs(rT[0] * uT[1] - rT[1] * uT[0]) <= tol * (1.0 + np.linalg.norm(uT))
        if parallel and rT @ uT <= tol:  # r_T = −α u_T, α ≥ 0
            return "slide"
    return None


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_the_local_solver_satisfies_the_signorini_coulomb_law(form):
    rng = np.random.default_rng(7)
    seen = {}
    for k in range(1500):
        B = rng.normal(size=(3, 3))
        W = (B @ B.T + 0.05 * np.eye(3)) * 10.0 ** rng.uniform(-2, 2)
        d = rng.normal(size=3) * 10.0 ** rng.uniform(-2, 2)
        mu = 0.0 if k % 10 == 0 else rng.uniform(0.0, 1.0)
        r, u, res, ok = solve_local(W, d, mu, form=form)
        assert ok
        # the linear relation of the form holds, and the law by its definition
        assert np.allclose(r if form == "primal" else u, W @ (u if form == "primal" else r) + d, rtol=0, atol=1e-12 * (1 + np.abs(d).max()))
        scale = 1.0 + np.abs(d).max()
        kind = law(r, u, mu, 1e-10 * scale * max(1.0, np.abs(W).max(), 1.0 / np.abs(W).max()))
        assert kind is not None, (W, d, mu, r, u)
        seen[kind] = seen.get(kind, 0) + 1
        w = np.trace(W) / 3 if form == "primal" else 3 / np.trace(W)
        assert coulomb_residual(r, u, mu, w) <= 1e-10 * scale
    assert min(seen.get(c, 0) for c in ("take-off", "stick", "slide")) > 50, seen


def test_the_fischer_burmeister_function_vanishes_exactly_on_complementary_cone_pairs():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = rng.normal(size=2)
        n /= np.linalg.norm(n)
        a, b = rng.uniform(0.1, 2.0, size=2)
        x, y = a * np.r_[1.0, n], b * np.r_[1.0, -n]  # on the boundary, opposite: x·y = 0
        assert np.abs(fischer_burmeister(x, y)).max() < 1e-12
        assert np.abs(fischer_burmeister(np.r_[a, 0.0, 0.0], np.zeros(3))).max() < 1e-12  # interior ⊥ 0
        assert np.linalg.norm(fischer_burmeister(x, x)) > 1e-3  # x·x > 0: not complementary
        assert np.linalg.norm(fischer_burmeister(np.r_[-a, 0.0, 0.0], np.zeros(3))) > 1e-3  # outside the cone
    with pytest.raises(ValueError, match="finite"):
        fischer_burmeister([np.nan, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="positive definite"):
        solve_local(-np.eye(3), np.ones(3), 0.3)


def particle(mass, v0, dt):
    """A = M, b = −M (v0 + dt g): one free vertex of mass [kg] with initial velocity v0 under gravity."""
    return sp.csr_matrix(mass * np.eye(3)), -mass * (np.asarray(v0, float) + dt * G)


@pytest.mark.parametrize("solve", [solve_primal, solve_dual])
def test_a_vertex_on_an_inclined_plane_sticks_or_slides_as_coulomb_says(solve):
    theta, dt, mass, h = np.radians(30.0), 0.01, 0.1, 0.002
    n = np.array([-np.sin(theta), 0.0, np.cos(theta)])  # the plane rises along +x
    downhill = np.array([-np.cos(theta), 0.0, -np.sin(theta)])
    for mu in (0.0, 0.3, 0.5, 0.8):
        A, b = particle(mass, np.zeros(3), dt)
        sol = solve(nodal_problem(A, b, NodalContacts.of([0], [n], h, mu), dt=dt, thickness=h))
        v = sol.v[0]
        assert sol.converged and abs(v @ n) < 1e-9  # resting on the plane
        if mu >= np.tan(theta):
            assert np.linalg.norm(v) < 1e-9  # sticks
        else:  # slides: a = g (sin θ − μ cos θ) down the slope (the analytic solution)
            assert v @ downhill == pytest.approx(9.81 * dt * (np.sin(theta) - mu * np.cos(theta)), rel=1e-8)
            assert np.linalg.norm(np.cross(v, downhill)) < 1e-9
        # the normal impulse carries the weight's normal component: r_N = m g cos θ dt
        assert sol.r[0, 0] == pytest.approx(mass * 9.81 * np.cos(theta) * dt, rel=1e-8)


def test_a_moving_body_drags_a_resting_vertex_and_gaps_close_at_the_thickness():
    dt, mass, h = 0.01, 0.1, 0.002
    belt = np.array([0.03, 0.01, 0.0])
    A, b = particle(mass, np.zeros(3), dt)
    n = np.array([0.0, 0.0, 1.0])
    stick = solve_primal(nodal_problem(A, b, NodalContacts.of([0], [n], h, 0.5, body_velocity=[belt]), dt=dt,
                                       thickness=h))
    assert np.allclose(stick.v[0], belt, atol=1e-9)  # μ g dt = 0.049 m/s > |v_belt| = 0.032 m/s: carried along
    slip = solve_primal(nodal_problem(A, b, NodalContacts.of([0], [n], h, 0.1, body_velocity=[belt]), dt=dt,
                                      thickness=h))
    gained = slip.v[0, :2]
    assert np.linalg.norm(gained) == pytest.approx(0.1 * 9.81 * dt, rel=1e-8)  # kinetic friction μ g dt
    assert np.cross(np.r_[gained, 0], belt)[2] == pytest.approx(0.0, abs=1e-12)  # along the belt's slip
    # falling at 1 m/s from 5 mm: the step may close the gap to the thickness, not more
    A, b = particle(mass, [0.0, 0.0, -1.0], dt)
    land = solve_primal(nodal_problem(A, b, NodalContacts.of([0], [n], 0.005, 0.3), dt=dt, thickness=h))
    assert land.v[0, 2] == pytest.approx(-(0.005 - h) / dt, rel=1e-9)


def cloth_system(nx=10, dt=0.01, k=50.0, seed=0):
    """A = M + dt² K of a triangle sheet with edge springs (K its graph Laplacian ⊗ I3), b of random
    initial velocities under gravity."""
    mesh = rectangle(1.0, 1.0, nx, nx, element="triangle")
    m = len(mesh.vertices)
    tri = mesh.triangles
    e = np.unique(np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1), axis=0)
    L = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(m, m))
    L = L + L.T
    L = sp.diags(np.asarray(L.sum(1)).ravel()) - L
    mass = 0.2 / m
    A = sp.kron(mass * sp.identity(m) + dt * dt * k * L, sp.identity(3)).tocsr()
    rng = np.random.default_rng(seed)
    v0 = rng.normal(scale=0.3, size=(m, 3))
    v0[:, 2] -= 1.0
    return A, -(mass * v0 + dt * mass * G).ravel(), m, rng


def random_contacts(m, rng, mu, pairs=0):
    nodes = rng.choice(m, size=m // 3 + 2 * pairs, replace=False)
    normal = rng.normal(size=(nodes.size, 3)) * 0.3
    normal[:, 2] = 1.0
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    other = np.full(nodes.size, -1)
    other[:pairs] = nodes[-pairs:] if pairs else other[:0]
    keep = slice(0, nodes.size - pairs)
    return NodalContacts.of(nodes[keep], normal[keep], rng.uniform(0.0, 0.004, nodes.size - pairs), mu,
                            other=other[keep])


def conic_fixed_point(problem, dt, iterations=60):
    """Reference solution by an independent conic solver (Clarabel): for fixed De Saxcé shifts
    s_i = μ‖u_T,i‖ (Li eq. 10) the step is the second-order-cone program min ½vᵀAv + bᵀv subject to
    (u_N + s, μ u_T) ∈ K; the shifts are iterated to a fixed point (Cadoux 2009)."""
    clarabel = pytest.importorskip("clarabel")
    A, b, cb, mu = problem.A, problem.b, problem.contact_block, problem.mu[problem.contact_block]
    J = problem.contact_jacobian()
    uf = problem.u_f[cb]
    c = cb.size
    s = np.zeros(c)
    D = sp.block_diag([sp.diags([1.0, m_, m_]) for m_ in mu])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    v = None
    for _ in range(iterations):
        shift = uf.copy()
        shift[:, 0] += s
        Ac = sp.csc_matrix(-(D @ J))
        bc = D @ shift.ravel()
        solver = clarabel.DefaultSolver(sp.csc_matrix(sp.triu(A)), b, Ac, bc, [clarabel.SecondOrderConeT(3)] * c,
                                        settings)
        v = np.array(solver.solve().x)
        u = (J @ v).reshape(c, 3) + uf
        new = mu * np.linalg.norm(u[:, 1:], axis=1)
        if np.abs(new - s).max() < 1e-12:
            break
        s = new
    return v.reshape(-1, 3)


@pytest.mark.parametrize("mu, pairs", [(0.0, 0), (0.3, 0), (0.3, 4), (0.8, 4)])
def test_primal_dual_and_a_conic_solver_reach_the_same_velocities(mu, pairs):
    A, b, m, rng = cloth_system(seed=int(10 * mu) + pairs)
    problem = nodal_problem(A, b, random_contacts(m, rng, mu, pairs), dt=0.01, thickness=0.002)
    primal, dual = solve_primal(problem), solve_dual(problem)
    assert primal.converged and dual.converged
    assert np.abs(primal.v - dual.v).max() <= 1e-6
    # the law holds at every contact of the primal solution
    for r, u, m_ in zip(primal.r, primal.u, problem.mu[problem.contact_block]):
        assert law(r, u, m_, 1e-7) is not None
    # contact impulses act through Jᵀ: A v + b = Jᵀ r, to the tolerance (1e-8 m/s) times the mass scale
    cb = problem.contact_block
    J = problem.contact_jacobian()
    assert np.abs(A @ primal.v.ravel() + b - J.T @ primal.r.ravel()).max() < 2e-8 * A.diagonal().max()
    if mu <= 0.3:
        assert np.abs(conic_fixed_point(problem, 0.01) - primal.v).max() <= 1e-6


def test_self_contacts_conserve_momentum_and_stop_the_approach():
    A, b, m, rng = cloth_system(seed=3)
    contacts = random_contacts(m, rng, 0.4, pairs=6)
    problem = nodal_problem(A, b, contacts, dt=0.01, thickness=0.002)
    sol = solve_primal(problem)
    assert sol.converged
    selfc = contacts.other >= 0
    j, k = contacts.node[selfc], contacts.other[selfc]
    n = contacts.normal[selfc]
    # the relative normal velocity may close the gap to the thickness, not more (u_N ≥ 0)
    approach = np.einsum("cd,cd->c", sol.v[j] - sol.v[k], n)
    assert (approach >= -(contacts.gap[selfc] - 0.002) / 0.01 - 1e-7).all()
    # a self-contact impulse acts equally and oppositely on the two vertices (internal force)
    cb = problem.contact_block
    J = problem.contact_jacobian()
    f = (J.T @ sol.r.ravel()).reshape(m, 3)
    q = np.flatnonzero(selfc)
    assert np.allclose(f[j], -f[k], atol=1e-14)
    assert np.abs(f[j]).max() > 0 or np.abs(sol.r[q]).max() == 0


@pytest.mark.parametrize("mu", [0.0, 0.2, 0.6])
def test_a_vertex_in_a_v_groove_is_duplicated_and_pinned(mu):
    """Li §6: a vertex falling into a 90° V-groove touches both faces. Its two copies, one contact each, end with
    one velocity, each copy obeys its own law, and the vertex rests in the groove: the two normal impulses carry
    its weight and momentum, A v + b = Σ Jᵀ r."""
    dt, mass, h = 0.01, 0.1, 0.0
    n1, n2 = np.array([1.0, 0.0, 1.0]) / np.sqrt(2), np.array([-1.0, 0.0, 1.0]) / np.sqrt(2)
    for v0 in ([0.0, 0.0, -1.0], [0.3, 0.2, -1.0]):
        A, b = particle(mass, v0, dt)
        problem = nodal_problem(A, b, NodalContacts.of([0, 0], [n1, n2], 0.0, mu), dt=dt, thickness=h)
        assert problem.blocks == 2 and (problem.group == 0).all()
        for sol in (solve_primal(problem), solve_dual(problem)):
            assert sol.converged
            v = sol.v[0]
            assert v @ n1 >= -1e-8 and v @ n2 >= -1e-8  # out of neither face
            assert abs(v[0]) < 1e-8 and abs(v[2]) < 1e-8  # held in the groove's bottom line (x = z = 0)
            if mu == 0.0:
                assert v[1] == pytest.approx(v0[1], abs=1e-8)  # frictionless: free along the groove
            else:
                assert abs(v[1]) <= abs(v0[1]) + 1e-9
            for r, u in zip(sol.r, sol.u):
                assert law(r, u, mu, 1e-7) is not None
            J = problem.contact_jacobian()
            assert np.allclose(A @ sol.v.ravel() + b, J.T @ sol.r.ravel(), atol=1e-9)


def test_a_vertex_falling_on_one_lying_on_the_floor_stops_on_it():
    """A vertex in a self-contact and in a body contact (Li §6 duplicates it): the upper vertex of two stacked ones
    lands on the lower one, which stays on the floor; the self-contact's impulses are equal and opposite and the
    floor carries both (momentum A v + b = Jᵀ r)."""
    dt, mass, h = 0.01, 0.1, 0.004
    A = sp.csr_matrix(mass * np.eye(6))
    v0 = np.array([[0.1, 0.0, 0.0], [0.0, 0.0, -1.0]])  # lower vertex sliding on the floor, upper one falling
    b = -mass * (v0 + dt * G).ravel()
    up = [0.0, 0.0, 1.0]
    contacts = NodalContacts.of([0, 1], [up, up], [h, 0.006], 0.3, other=[-1, 0])  # on the floor; 1 is 6 mm above 0
    problem = nodal_problem(A, b, contacts, dt=dt, thickness=h)
    assert problem.blocks == 3  # vertex 0 has two copies
    for sol in (solve_primal(problem), solve_dual(problem)):
        assert sol.converged
        v = sol.v
        assert v[0, 2] == pytest.approx(0.0, abs=2e-8)  # stays on the floor (to the tolerance, 1e-8 m/s)
        assert (v[1, 2] - v[0, 2]) * dt == pytest.approx(-(0.006 - h), abs=1e-9)  # lands at the thickness
        J = problem.contact_jacobian()
        assert np.allclose(A @ v.ravel() + b, J.T @ sol.r.ravel(), atol=1e-10)
        for r, u in zip(sol.r, sol.u):
            assert law(r, u, 0.3, 1e-7) is not None


def test_contacts_are_checked():
    n = [[0.0, 0.0, 1.0]] * 2
    with pytest.raises(ValueError, match="itself"):
        NodalContacts.of([3, 4], n, 0.0, 0.3, other=[5, 4])
    with pytest.raises(ValueError, match="unit"):
        NodalContacts.of([1], [[0.0, 0.0, 2.0]], 0.0, 0.3)
    with pytest.raises(ValueError, match="≥ 0"):
        NodalContacts.of([1], [[0.0, 0.0, 1.0]], 0.0, -0.1)
    A, b = particle(0.1, np.zeros(3), 0.01)
    with pytest.raises(ValueError, match="dt > 0"):
        nodal_problem(A, b, NodalContacts.of([0], n[:1], 0.0, 0.3), dt=0.0, thickness=0.0)
    with pytest.raises(ValueError, match="below 1"):
        nodal_problem(A, b, NodalContacts.of([4], n[:1], 0.0, 0.3), dt=0.01, thickness=0.0)


@pytest.mark.parametrize("k", [500.0, 5000.0])
def test_the_free_vertices_as_one_block_reach_the_same_solution_in_fewer_sweeps(k):
    """Solving the vertices without contact together (a sparse LU, once per problem) instead of one by one
    (Algorithm 1 as published): the same velocities, and the elastic coupling through the free sheet no longer
    takes a sweep per vertex — several times fewer sweeps on a stiff sheet (δt² k / m = 200, 2000)."""
    A, b, m, rng = cloth_system(k=k, seed=3)
    nodes = rng.choice(m, size=15, replace=False)
    other = np.full(12, -1)
    other[:3] = nodes[12:]  # three self-contacts: their mean rows stay out of the free block
    contacts = NodalContacts.of(nodes[:12], np.tile([0.0, 0.0, 1.0], (12, 1)), rng.uniform(0, 0.004, 12), 0.4,
                                other=other)
    problem = nodal_problem(A, b, contacts, dt=0.01, thickness=0.002)
    block = solve_primal(problem, max_sweeps=20000)
    vertices = solve_primal(problem, free_block="vertices", max_sweeps=20000)
    assert block.converged and vertices.converged
    assert np.abs(block.v - vertices.v).max() <= 1e-6
    assert block.sweeps <= vertices.sweeps / 2
    with pytest.raises(ValueError, match="free_block"):
        solve_primal(problem, free_block="all")


def test_contacts_of_one_vertex_within_the_pruning_angle_are_one_contact():
    """Li §5.2: of two contacts of a vertex whose normals are within the pruning angle the deeper is kept; 0 keeps
    every contact (the study of Li Fig. 11 varies it)."""
    from isocloth.contact.nodal import PRUNE_ANGLE, merge_contacts

    tilt = lambda a: [np.sin(a), 0.0, np.cos(a)]  # noqa: E731
    parts = [NodalContacts.of([0], [tilt(0.0)], [0.002], 0.3), NodalContacts.of([0], [tilt(0.1)], [0.001], 0.3),
             NodalContacts.of([0], [tilt(0.4)], [0.003], 0.3), NodalContacts.of([1], [tilt(0.0)], [0.004], 0.3)]
    kept = merge_contacts(*parts)
    assert PRUNE_ANGLE == pytest.approx(np.radians(10.0))
    assert sorted(kept.gap.tolist()) == [0.001, 0.003, 0.004]  # the deeper of the two within 10° at vertex 0
    assert merge_contacts(*parts, prune_angle=0.0).node.size == 4
    assert merge_contacts(*parts, prune_angle=0.5).node.size == 2


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_contacts_at_points_of_faces_and_edges_hold_the_point_and_match_the_dual_and_conic_solutions(mu):
    """Bodies touching points inside triangles and on edges (thin obstacles, an obstacle's corner or edge): the
    contact's row of G is Eᵀ Σ ŵ_a v_a completed to an orthogonal block on the other vertices' copies. G stays
    orthogonal, the point's normal velocity closes its gap to the thickness and no more, and the primal, dual and
    conic solutions agree; some of the vertices also carry contacts at themselves (pins, Li §6), and one contact is a
    lone vertex of weight 0.6 (the rest of its face held)."""
    A, b, m, rng = cloth_system(seed=7)
    mesh_tri = rectangle(1.0, 1.0, 10, 10, element="triangle").triangles
    faces = mesh_tri[rng.choice(len(mesh_tri), size=8, replace=False)]
    w = rng.dirichlet(np.ones(3), size=8)
    w[4:, 2] = 0.0  # points on an edge
    w[4:] /= w[4:].sum(axis=1, keepdims=True)
    order = np.argsort(-w, axis=1)
    verts = np.take_along_axis(faces, order, axis=1)
    w = np.take_along_axis(w, order, axis=1)
    verts[w == 0] = -1
    plain = np.setdiff1d(rng.choice(m, size=12, replace=False), verts[:, 0])
    node = np.concatenate([verts[:, 0], plain])
    face = np.vstack([np.column_stack([verts[:, 1:], np.full(8, -1)]), np.full((plain.size, 3), -1)])
    weights = np.vstack([np.column_stack([w, np.zeros(8)]), np.tile([1.0, 0, 0, 0], (plain.size, 1))])
    weights[8, 0] = 0.6  # a point of a face whose other vertices are held: a lone vertex of weight 0.6
    normal = rng.normal(size=(node.size, 3)) * 0.3
    normal[:, 2] = 1.0
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    gap = rng.uniform(0.0, 0.004, node.size)
    body = rng.normal(scale=0.1, size=(node.size, 3))
    contacts = NodalContacts.of(node, normal, gap, mu, face=face, weights=weights, body_velocity=body)
    problem = nodal_problem(A, b, contacts, dt=0.01, thickness=0.002)
    assert abs(problem.G @ problem.G.T - sp.identity(problem.G.shape[0])).max() < 1e-12
    primal, dual = solve_primal(problem), solve_dual(problem)
    assert primal.converged and dual.converged
    assert np.abs(primal.v - dual.v).max() <= 1e-6
    for r, u in zip(primal.r, primal.u):
        assert law(r, u, mu, 1e-7) is not None
    J = problem.contact_jacobian()
    assert np.abs(A @ primal.v.ravel() + b - J.T @ primal.r.ravel()).max() < 2e-8 * A.diagonal().max()
    verts = np.column_stack([contacts.node, contacts.face])
    point_v = np.einsum("ck,ckd->cd", contacts.weights, primal.v[np.maximum(verts, 0)])
    closing = np.einsum("cd,cd->c", point_v - body, normal)
    assert (closing >= -(gap - 0.002) / 0.01 - 1e-6).all()
    assert np.isclose(closing, -(gap - 0.002) / 0.01, atol=1e-6).any()  # some touch
    assert np.abs(conic_fixed_point(problem, 0.01) - primal.v).max() <= 1e-6
    with pytest.raises(ValueError, match="repeats a vertex"):
        NodalContacts.of([0], [[0.0, 0.0, 1.0]], 0.0, 0.0, face=[[0, -1, -1]], weights=[[0.5, 0.5, 0.0, 0.0]])
    for face, w in (([-1, -1, -1], [0.0, 0.0, 0.0, 0.0]), ([1, -1, -1], [1.0, 0.0, 0.0, 0.0]),
                    ([1, -1, -1], [-0.5, 1.5, 0.0, 0.0]), ([-1, -1, -1], [1.0, 0.5, 0.0, 0.0])):
        with pytest.raises(ValueError, match="weights"):
            NodalContacts.of([0], [[0.0, 0.0, 1.0]], 0.0, 0.0, face=[face], weights=[w])
