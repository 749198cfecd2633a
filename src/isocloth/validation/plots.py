"""Validation figures (matplotlib, headless): error curves, sensitivity maps, replay video.

- :func:`plot_error_curves`: e_n and d_n over time (thesis Fig. 4.5, 4.16; seed 000 Fig. 9 with
  the contact intervals shaded) for one or several models (thesis Fig. 4.10 / paper Fig. 18);
- :func:`plot_sensitivity`: heat map of ē over (δ, α) (thesis Fig. 4.8) or a scan over μ
  (Fig. 4.20);
- :func:`render_replay_video`: recorded markers next to the simulated cloth.

Every file is written atomically; the figures use :class:`matplotlib.figure.Figure` with the Agg
canvas (no pyplot state).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from isocloth.io.atomic import atomic_path
from isocloth.viz.figures import save_figure

__all__ = ["plot_error_curves", "plot_sensitivity", "render_replay_video", "contact_intervals", "STICK_COLOR"]

STICK_COLOR = "#8b4513"  # the stick in replay videos (saddle brown)

_LABELS = {"delta": "δ [kg/m²]", "alpha": "α [kg/(m²·s)]", "mu": "μ"}


def contact_intervals(times: np.ndarray, contact: np.ndarray) -> list[tuple[float, float]]:
    """Time intervals [(t_start, t_end)] of consecutive frames flagged in ``contact`` (f,) bool."""
    out = []
    c = np.asarray(contact, dtype=bool)
    k = 0
    while k < c.size:
        if c[k]:
            s = k
            while k + 1 < c.size and c[k + 1]:
                k += 1
            out.append((float(times[s]), float(times[k])))
        k += 1
    return out


def plot_error_curves(curves: dict, path, *, contact: list | None = None, title: str = "") -> Path:
    """Absolute error e_n (solid) and dispersion d_n (dashed) over time, in cm.

    Parameters
    ----------
    curves : {label: ErrorSeries}
    path : PNG (or PDF/SVG) file
    contact : [(t0, t1)] intervals to shade (contacts during the simulation), or None
    title : figure title

    Returns
    -------
    Path
    """
    fig = Figure(figsize=(8, 4))
    ax = fig.add_subplot(111)
    for (label, es), color in zip(curves.items(), ("C0", "C1", "C2", "C3", "C4", "C5")):
        ax.plot(es.times, 100 * es.e, color=color, lw=1.4, label=f"{label}: e (ē = {100 * es.mean_error:.2f} cm)")
        ax.plot(es.times, 100 * es.d, color=color, lw=0.8, ls="--", label=f"{label}: d = e + 2s")
        w = np.flatnonzero(es.window)
        if w.size and (w[0] > 1 or w[-1] < es.window.size - 1):  # a metric window: mark its ends
            ax.axvspan(es.times[w[0]], es.times[w[-1]], color="0.5", alpha=0.08, lw=0)
    for t0, t1 in contact or []:
        ax.axvspan(t0, t1 + 1e-9, color="gold", alpha=0.3, lw=0)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("error [cm]")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_sensitivity(scan: dict, path, *, title: str = "") -> Path:
    """Sensitivity of ē [cm] around the optimum: a heat map for two parameters, a curve for one.

    Parameters
    ----------
    scan : one entry of ``FitResult.sensitivity`` ({"names", "axes", "errors", "optimum"})
    path : output image

    Raises
    ------
    ValueError
        For a scan of more than two parameters.
    """
    names, axes = scan["names"], [np.asarray(a) for a in scan["axes"]]
    err = 100 * np.asarray(scan["errors"], dtype=float)
    fig = Figure(figsize=(6, 4.5))
    ax = fig.add_subplot(111)
    if len(names) == 1:
        ax.plot(axes[0], err, "o-")
        ax.axvline(scan["optimum"][0], color="red", lw=0.8)
        ax.set_xlabel(_LABELS.get(names[0], names[0]))
        ax.set_ylabel("ē [cm]")
        ax.grid(alpha=0.3)
    elif len(names) == 2:
        shown = np.where(np.isfinite(err), err, np.nan)
        im = ax.pcolormesh(axes[1], axes[0], shown, shading="nearest", cmap="viridis")
        fig.colorbar(im, ax=ax, label="ē [cm]")
        ax.plot(scan["optimum"][1], scan["optimum"][0], "o", mfc="none", mec="red", ms=12, mew=2)
        for i in range(err.shape[0]):
            for j in range(err.shape[1]):
                if np.isfinite(err[i, j]):
                    ax.text(axes[1][j], axes[0][i], f"{err[i, j]:.2f}", ha="center", va="center", fontsize=6,
                            color="white")
        ax.set_xlabel(_LABELS.get(names[1], names[1]))
        ax.set_ylabel(_LABELS.get(names[0], names[0]))
    else:
        raise ValueError(f"can plot one or two parameters, got {names}")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_figure(fig, path)


def _grid_segments(shape: tuple[int, int]) -> np.ndarray:
    nx, ny = shape
    idx = np.arange(nx * ny).reshape(ny, nx)
    h = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    v = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    return np.concatenate([h, v])


def render_replay_video(recorded: np.ndarray, positions: np.ndarray, faces: np.ndarray, marker_nodes: np.ndarray,
                        grid_shape: tuple[int, int], times: np.ndarray, path, *, fps: float = 25.0,
                        errors: np.ndarray | None = None, size: tuple[int, int] = (960, 480),
                        elev: float = 15.0, azim: float = -60.0, stick: np.ndarray | None = None) -> Path:
    """Side-by-side video: the recorded markers (left, grid lines between neighbours seen in the
    frame) and the simulated cloth with its marker nodes (right, red) and the recorded markers
    (black crosses); a recorded stick (seed 000 §7.4) as a brown segment in both.

    Parameters
    ----------
    recorded : (f, m, 3) [m] (NaN = missing), grid order
    positions : (f, n, 3) [m] simulated nodes
    faces : (k, 3) or (k, 4) int faces of the simulation mesh
    marker_nodes : (m,) node of each marker
    grid_shape : (nx, ny) of the markers
    times : (f,) [s]
    path : .mp4 (H.264 via imageio-ffmpeg; falls back to .gif) or .gif
    fps : video frame rate (frames are subsampled from the recording)
    errors : (f,) e_n [m] shown in the title, optional
    stick : (f, 2, 3) [m] stick end positions per frame (the replay's ``stick_tracks``), optional

    Returns
    -------
    Path actually written.
    """
    from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

    path = Path(path)
    rec = np.asarray(recorded, dtype=float)
    pos = np.asarray(positions, dtype=float)
    f = rec.shape[0]
    rate = 1.0 / max(float(np.median(np.diff(times))), 1e-9) if f > 1 else fps
    every = max(1, int(round(rate / fps)))
    frames = range(0, f, every)
    sticks = None if stick is None else np.asarray(stick, dtype=float).reshape(f, 2, 3)
    pts = np.concatenate([pos.reshape(-1, 3), rec.reshape(-1, 3)] + ([] if sticks is None else [sticks.reshape(-1, 3)]))
    pts = pts[np.isfinite(pts).all(axis=1)]
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    pad = 0.05 * max(float((hi - lo).max()), 1e-3)
    lo, hi = lo - pad, hi + pad
    segs = _grid_segments(grid_shape)
    w, h = size
    fig = Figure(figsize=(w / 100, h / 100), dpi=100, facecolor="white")
    canvas = FigureCanvasAgg(fig)
    axs = []
    for k, label in enumerate(("recorded markers", "simulation")):
        ax = fig.add_subplot(1, 2, k + 1, projection="3d", computed_zorder=False)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_zlim(lo[2], hi[2])
        ax.set_box_aspect(hi - lo)
        ax.view_init(elev=elev, azim=azim)
        ax.set_title(label, fontsize=10)
        ax.tick_params(labelsize=6)
        axs.append(ax)
    lines = Line3DCollection(np.zeros((0, 2, 3)), colors="0.3", linewidths=0.8)
    axs[0].add_collection3d(lines, autolim=False)
    dots = axs[0].plot([], [], [], "o", color="black", ms=3)[0]
    poly = Poly3DCollection(np.zeros((0, faces.shape[1], 3)), facecolors=(0.2, 0.45, 0.8, 0.6),
                            edgecolors=(0.05, 0.08, 0.15, 0.4), linewidths=0.3)
    axs[1].add_collection3d(poly, autolim=False)
    sim_dots = axs[1].plot([], [], [], "o", color="red", ms=3, zorder=5)[0]
    rec_dots = axs[1].plot([], [], [], "x", color="black", ms=4, zorder=6)[0]
    stick_lines = [] if sticks is None else [ax.plot([], [], [], "-", color=STICK_COLOR, lw=4, zorder=7)[0]
                                             for ax in axs]
    text = fig.text(0.5, 0.97, "", ha="center", va="top", fontsize=10, family="monospace")

    def image(n):
        r = rec[n]
        ok = np.isfinite(r).all(axis=1)
        keep = ok[segs[:, 0]] & ok[segs[:, 1]]
        lines.set_segments(r[segs[keep]])
        dots.set_data_3d(r[ok, 0], r[ok, 1], r[ok, 2])
        x = pos[n]
        poly.set_verts(x[faces])
        s = x[marker_nodes]
        sim_dots.set_data_3d(s[:, 0], s[:, 1], s[:, 2])
        rec_dots.set_data_3d(r[ok, 0], r[ok, 1], r[ok, 2])
        for ln in stick_lines:
            ln.set_data_3d(sticks[n, :, 0], sticks[n, :, 1], sticks[n, :, 2])
        msg = f"t = {times[n]:.2f} s"
        if errors is not None and np.isfinite(errors[n]):
            msg += f"   e = {100 * errors[n]:.2f} cm"
        text.set_text(msg)
        canvas.draw()
        img = np.asarray(canvas.buffer_rgba())[..., :3]
        return np.ascontiguousarray(img[: h - h % 2, : w - w % 2])

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".mp4":
        try:
            import imageio.v2 as imageio
            import imageio_ffmpeg

            imageio_ffmpeg.get_ffmpeg_exe()
            with atomic_path(path) as tmp:
                writer = imageio.get_writer(tmp, format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                            pixelformat="yuv420p", macro_block_size=2, ffmpeg_log_level="error")
                try:
                    for n in frames:
                        writer.append_data(image(n))
                finally:
                    writer.close()
            return path
        except (OSError, RuntimeError, ImportError):
            path = path.with_suffix(".gif")
    from PIL import Image

    imgs = [Image.fromarray(image(n)).quantize(colors=256) for n in frames]
    with atomic_path(path) as tmp:
        imgs[0].save(tmp, format="GIF", save_all=True, append_images=imgs[1:],
                     duration=max(int(round(1000.0 / fps)), 20), loop=0)
    return path
