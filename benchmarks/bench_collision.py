"""Collision detection cost vs number of nodes (issue 4: scaling from 400 to 10,000 nodes).

Scene per size: a 1 m square sheet (N×N nodes, quads split in two) folded in half over a 4 mm
radius fold, the upper layer falling 5 mm in one step of 10 ms onto the lower one (layer gap 8 mm
→ 3 mm, thickness τ0 = 5 mm): every node of the upper half comes into contact, the heavy case of a
folding sequence. Timed per call (median of repeats, after a warm-up call that compiles the numba
kernels):

* broad phase    — candidate node–face / edge–edge pairs (swept boxes, spatial hash)
* detect ω=0.5   — ``SelfCollisions.detect``: broad phase + CCD with proximity shift + end-distance
                   test + rows (what each solver iteration calls)
* check ω=0      — ``SelfCollisions.crossings`` (final check of seed 000 §4.1)
* intersections  — exact triangle–triangle check of one frame (``face_intersections``)
* flat, no contact — ``detect`` on a flat sheet falling freely (overhead when nothing touches)

Baseline in the same run: all-pairs box tests with numpy (O(n²)) for the smaller sizes, printed as
a ratio to the spatial hash.

Run: python benchmarks/bench_collision.py [--sizes 20 32 50 71 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import configure_threads, print_machine  # noqa: E402

THREADS = configure_threads()

import numpy as np  # noqa: E402

from isocloth.contact.broadphase import candidate_pairs, mesh_edges, swept_boxes  # noqa: E402
from isocloth.contact.intersection import face_intersections  # noqa: E402
from isocloth.contact.self_collision import SelfCollisions  # noqa: E402
from isocloth.mesh.generators import rectangle  # noqa: E402

TAU = 0.005
DT = 0.01


def folded(m, radius=0.004, drop=0.0):
    """Fold the u > 0 half of a flat xy sheet over the u ≤ 0 half around a cylinder of ``radius``."""
    u, v = m.vertices[:, 0], m.vertices[:, 1]
    x = np.column_stack([u, v, np.zeros_like(u)])
    arc = np.pi * radius
    on_arc = (u > 0) & (u <= arc)
    th = u[on_arc] / radius
    x[on_arc, 0] = radius * np.sin(th)
    x[on_arc, 2] = radius * (1 - np.cos(th))
    top = u > arc
    x[top, 0] = -(u[top] - arc)
    x[top, 2] = 2 * radius - drop * np.minimum(1.0, (u[top] - arc) / 0.05)
    return x


def timed(fn, repeat):
    fn()  # warm-up (compilation, caches)
    ts = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), out


def brute_pairs(x0, x1, tri, infl):
    nodes = np.unique(tri)
    lo_n, hi_n = swept_boxes(x0, x1, nodes, infl)
    lo_t, hi_t = swept_boxes(x0, x1, tri, infl)
    ov = np.ones((len(nodes), len(tri)), dtype=bool)
    for d in range(3):
        ov &= (lo_n[:, None, d] <= hi_t[None, :, d]) & (lo_t[None, :, d] <= hi_n[:, None, d])
    ov &= ~(tri[None, :, :] == nodes[:, None, None]).any(axis=2)
    ed = mesh_edges(tri)
    lo_e, hi_e = swept_boxes(x0, x1, ed, infl)
    oe = np.ones((len(ed), len(ed)), dtype=bool)
    for d in range(3):
        oe &= (lo_e[:, None, d] <= hi_e[None, :, d]) & (lo_e[None, :, d] <= hi_e[:, None, d])
    oe &= ~(ed[:, None, :, None] == ed[None, :, None, :]).any(axis=(2, 3))
    return int(ov.sum()), int(np.triu(oe, 1).sum())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 32, 50, 71, 100], help="nodes per side")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--brute-max", type=int, default=1600, help="largest node count for the O(n^2) baseline")
    a = ap.parse_args()
    print_machine(THREADS)
    print()
    print("| nodes | triangles | VF / EE candidates | rows (detect) | broad phase ms | detect ω=0.5 ms | "
          "check ω=0 ms | intersections ms | flat, no contact ms | O(n²) boxes ms (ratio) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ns, t_det = [], []
    for N in a.sizes:
        m = rectangle(1.0, 1.0, N, N, element="quad")
        tri = m.triangulated_faces()
        n = m.node_count
        x0 = folded(m)
        x1 = folded(m, drop=0.005)
        sc = SelfCollisions(tri, n, thickness=TAU, mu=0.3)
        infl = 0.5 * TAU
        t_bp, cand = timed(lambda: candidate_pairs(x0, x1, tri, sc.edges, infl, sc.nodes), a.repeat)
        t_dt, rows = timed(lambda: sc.detect(x0, x1, omega=0.5), a.repeat)
        t_ck, cross = timed(lambda: sc.crossings(x0, x1), a.repeat)
        t_in, inter = timed(lambda: face_intersections(x1, m.triangles, m.quads), a.repeat)
        flat0 = m.vertices
        flat1 = flat0 - [0.0, 0.0, 0.01]
        t_fl, _ = timed(lambda: sc.detect(flat0, flat1, omega=0.5), a.repeat)
        if n <= a.brute_max:
            t_bf, (nvf, nee) = timed(lambda: brute_pairs(x0, x1, tri, infl), max(1, a.repeat // 2))
            assert (nvf, nee) == (len(cand.vertex_face), len(cand.edge_edge)), "baseline disagrees"
            bf = f"{1e3 * t_bf:.1f} ({t_bf / t_bp:.0f}x)"
        else:
            bf = "–"
        assert cross.count == 0 and len(inter) == 0
        print(f"| {n} | {len(tri)} | {len(cand.vertex_face)} / {len(cand.edge_edge)} | {rows.count} | "
              f"{1e3 * t_bp:.1f} | {1e3 * t_dt:.1f} | {1e3 * t_ck:.1f} | {1e3 * t_in:.1f} | {1e3 * t_fl:.1f} | {bf} |")
        ns.append(n)
        t_det.append(t_dt)
    if len(ns) > 1:
        p = np.polyfit(np.log(ns), np.log(t_det), 1)[0]
        print(f"\ndetect time grows as n^{p:.2f} from {ns[0]} to {ns[-1]} nodes")


if __name__ == "__main__":
    main()
