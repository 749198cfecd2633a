"""Figures (matplotlib, headless: :class:`matplotlib.figure.Figure` on the Agg canvas, no pyplot
state), written atomically; and the distance matrix of a sequence of cloth states (thesis §7.4.1,
Fig. 7.3: the confusion matrices of the folding sequences)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isocloth.io.atomic import atomic_path

__all__ = ["save_figure", "plot_distance_matrix"]


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
