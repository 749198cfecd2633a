"""Figures (matplotlib, headless: :class:`matplotlib.figure.Figure` on the Agg canvas, no pyplot
state), written atomically; and the distance matrix of a sequence of cloth states (thesis §7.4.1,
Fig. 7.3: the confusion matrices of the folding sequences)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isocloth.io.atomic import atomic_path

__all__ = ["save_figure", "plot_class_distance_matrix", "plot_distance_matrix", "plot_states_and_coordinates"]


def save_figure(fig, path, dpi: int = 110) -> Path:
    """Write the matplotlib Figure ``fig`` to ``path`` (its suffix names the format; PNG without one),
    atomically, creating the folder; returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=dpi)
    return path


def plot_distance_matrix(D: np.ndarray, times: np.ndarray, path, *, title: str = "",
                         label: str = "Spearman distance") -> Path:
    """The (F, F) distance matrix D of the frames at ``times`` (F,) [s] as an image (frame i's row
    against frame j's column, both axes in seconds) with a colour bar; returns the path.

    Raises
    ------
    ValueError
        If D is not square or does not match ``times``.
    """
    from matplotlib.figure import Figure

    D = np.asarray(D, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] != t.size:
        raise ValueError(f"D must be (F, F) with F = {t.size} times, got shape {D.shape}")
    fig = Figure(figsize=(5.6, 4.8))
    ax = fig.add_subplot()
    lo, hi = (float(t[0]), float(t[-1])) if t.size else (0.0, 1.0)
    im = ax.imshow(D, origin="upper", extent=(lo, hi, hi, lo), cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=ax, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("time [s]")
    if title:
        ax.set_title(title)
    return save_figure(fig, path)


def plot_class_distance_matrix(D: np.ndarray, labels, path, *, title: str = "",
                               label: str = "Spearman distance") -> Path:
    """The (s, s) distance matrix D of samples labelled ``labels`` (s,) as an image, samples grouped
    by label (a stable sort), with lines between the classes and their labels on the axes (thesis
    Fig. 7.4); returns the path.

    Raises
    ------
    ValueError
        If D is not (s, s) for s labels.
    """
    from matplotlib.figure import Figure

    D = np.asarray(D, dtype=np.float64)
    labels = np.asarray(labels).astype(str)
    if D.ndim != 2 or D.shape != (labels.size, labels.size):
        raise ValueError(f"D must be (s, s) with s = {labels.size} labels, got shape {D.shape}")
    order = np.argsort(labels, kind="stable")
    D, labels = D[np.ix_(order, order)], labels[order]
    names, first = np.unique(labels, return_index=True)
    ends = np.append(first[1:], labels.size)
    fig = Figure(figsize=(6.0, 5.2))
    ax = fig.add_subplot()
    im = ax.imshow(D, origin="upper", cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=ax, label=label)
    for b in first[1:]:
        ax.axhline(b - 0.5, color="w", lw=0.6)
        ax.axvline(b - 0.5, color="w", lw=0.6)
    mids = 0.5 * (first + ends) - 0.5
    ax.set_xticks(mids, names, fontsize=7)
    ax.set_yticks(mids, names, fontsize=7)
    ax.set_xlabel("class")
    ax.set_ylabel("class")
    if title:
        ax.set_title(title)
    return save_figure(fig, path)


def plot_states_and_coordinates(states, titles, boundary, segments, path, *, columns: int = 4) -> Path:
    """Cloth states next to their dGLI cloth coordinates (thesis Fig. 7.1): for each state x (n, 3) [m]
    of ``states``, a view from above (nodes coloured by height, the boundary loop (b,) drawn, the
    eight segments (8, 2) numbered) and the symmetric 8 × 8 matrix of its coordinates; returns the path.

    Raises
    ------
    ValueError
        If states and titles differ in length or there is no state.
    """
    from matplotlib.figure import Figure

    from isocloth.perception.dgli import cloth_coordinates, coordinate_matrix

    states = [np.asarray(x, dtype=np.float64) for x in states]
    if not states or len(states) != len(titles):
        raise ValueError(f"{len(states)} states and {len(titles)} titles: give one title per state, at least one")
    seg = np.asarray(segments, dtype=np.int64)
    loop = np.append(np.asarray(boundary, dtype=np.int64), boundary[0])
    rows = -(-len(states) // columns)
    fig = Figure(figsize=(4.4 * columns, 2.3 * rows))
    for k, (x, title) in enumerate(zip(states, titles)):
        ax = fig.add_subplot(rows, 2 * columns, 2 * k + 1)
        ax.scatter(x[:, 0], x[:, 1], c=x[:, 2], s=3, cmap="viridis", vmin=0.0, vmax=max(0.02, float(x[:, 2].max())))
        ax.plot(x[loop, 0], x[loop, 1], color="0.5", lw=0.5)
        for i, (a, b) in enumerate(seg):
            ax.plot(x[[a, b], 0], x[[a, b], 1], color="r", lw=1.5)
            m = 0.5 * (x[a] + x[b])
            ax.annotate(str(i), m[:2], fontsize=5, color="r")
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(title, fontsize=7)
        M = coordinate_matrix(cloth_coordinates(x, seg))
        M = M + M.T
        lim = float(np.abs(M).max()) or 1.0
        mx = fig.add_subplot(rows, 2 * columns, 2 * k + 2)
        mx.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        mx.set_xticks([])
        mx.set_yticks([])
        mx.set_title("dGLI", fontsize=6)
    fig.tight_layout()
    return save_figure(fig, path)
