"""Recordings: Motive CSV (hand-written sample), C3D, plain npz/CSV; units, axes, gaps, bad files."""

from pathlib import Path

import numpy as np
import pytest

from isocloth.validation.recordings import (Recording, RecordingError, axes_matrix, read_recording,
                                            write_recording)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "motive_sample.csv"


def _lines():
    return SAMPLE.read_text().splitlines()


def _write(tmp_path, lines, name="bad.csv"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_motive_sample_frames_markers_units():
    rec = read_recording(SAMPLE)
    # rigid-body and marker-quality columns are skipped, labelled markers kept in file order
    assert rec.names == ("top_left", "top_right", "bottom")
    assert rec.frame_count == 5 and rec.rate == 100.0  # Export Frame Rate, not Capture Frame Rate
    assert np.allclose(rec.times, [0.0, 0.01, 0.02, 0.03, 0.04])
    assert rec.metadata["Take Name"] == "cloth_shake_01" and rec.metadata["file_units"] == "Millimeters"
    # millimetres -> metres
    assert np.allclose(rec.markers[0], [[-0.21, 0.0, 1.0], [0.21, 0.0, 1.0], [0.0, 0.0, 0.406]])
    assert np.allclose(rec.markers[4, 2], [0.0, 0.0035, 0.4055])
    # blank cells are missing samples, never filled
    assert np.isnan(rec.markers[2, 2]).all() and np.isnan(rec.markers[3, 0]).all()
    assert rec.present.sum() == 13
    assert rec.missing_fraction() == pytest.approx(2 / 15)


def test_motive_axes_and_origin_options():
    z = read_recording(SAMPLE)
    y = read_recording(SAMPLE, up_axis="y", origin=(0.0, 0.0, 0.5))
    # Y-up file: (x, y, z) -> (x, -z, y), then the origin is subtracted
    expect = z.markers @ axes_matrix("y").T - np.array([0, 0, 0.5])
    assert np.allclose(y.markers, expect, equal_nan=True)
    assert np.allclose(y.markers[0, 2], [0.0, -0.406, -0.5])
    for up in "xyz":
        R = axes_matrix(up)
        assert np.allclose(R @ R.T, np.eye(3)) and np.isclose(np.linalg.det(R), 1.0)


def test_units_from_option_and_conflicts(tmp_path):
    lines = _lines()
    lines[0] = lines[0].replace(",Length Units,Millimeters", "")
    p = _write(tmp_path, lines)
    with pytest.raises(RecordingError, match="units="):
        read_recording(p)
    cm = read_recording(p, units="cm")
    assert np.allclose(cm.markers[0, 0], [-2.1, 0.0, 10.0])
    with pytest.raises(RecordingError, match="Millimeters.*units='m'"):
        read_recording(SAMPLE, units="m")
    assert read_recording(SAMPLE, units="mm").markers[0, 0, 2] == pytest.approx(1.0)


def test_malformed_motive_files_raise_clear_errors(tmp_path):
    lines = _lines()
    # missing header
    with pytest.raises(RecordingError, match=r"Format Version.*Header information"):
        read_recording(_write(tmp_path, lines[1:], "noheader.csv"))
    # column header rows missing
    with pytest.raises(RecordingError, match="Frame,Time"):
        read_recording(_write(tmp_path, lines[:2] + lines[7:], "nocols.csv"))
    # ragged row: line 10 loses its last cells
    bad = list(lines)
    bad[9] = ",".join(bad[9].split(",")[:-3])
    with pytest.raises(RecordingError, match=r"bad.csv:10: 16 cells, expected 19.*ragged.*line 10"):
        read_recording(_write(tmp_path, bad))
    # unknown units
    bad = list(lines)
    bad[0] = bad[0].replace("Millimeters", "Inches")
    with pytest.raises(RecordingError, match="unknown length unit 'Inches'.*units="):
        read_recording(_write(tmp_path, bad))
    # non-numeric cell names line, column and marker
    bad = list(lines)
    cells = bad[8].split(",")
    cells[12] = "abc"
    bad[8] = ",".join(cells)
    with pytest.raises(RecordingError, match=r":9: column 13 \(top_right X\) holds 'abc'"):
        read_recording(_write(tmp_path, bad))


@pytest.mark.parametrize("suffix,fmt", [(".csv", "motive"), (".npz", "npz"), (".csv", "csv"), (".c3d", "c3d")])
def test_round_trips(tmp_path, suffix, fmt):
    if fmt == "c3d":
        pytest.importorskip("ezc3d")
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.3, (6, 4, 3))
    x[2, 1] = np.nan
    x[5, 3] = np.nan
    rec = Recording(np.arange(6) / 120.0, x, ("a", "b", "c", "d"), 120.0)
    p = write_recording(tmp_path / f"r{suffix}", rec, format=fmt)
    back = read_recording(p, format=fmt)
    tol = 1e-7 if fmt == "c3d" else 1e-9  # C3D stores float32
    assert back.names == rec.names and back.rate == pytest.approx(120.0)
    assert np.allclose(back.times, rec.times, atol=1e-6)
    assert np.array_equal(np.isnan(back.markers), np.isnan(rec.markers))
    assert np.nanmax(np.abs(back.markers - rec.markers)) < tol


def test_motive_writer_y_up_round_trip(tmp_path):
    rec = read_recording(SAMPLE)
    p = write_recording(tmp_path / "y.csv", rec, units="m", up_axis="y")
    assert read_recording(p).metadata["file_units"] == "Meters"
    assert np.allclose(read_recording(p, up_axis="y").markers, rec.markers, equal_nan=True)


def test_plain_csv_errors(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("# units = mm\ntime,a_x,a_y,a_z\n0,1,2,3\n0.01,1,2\n")
    with pytest.raises(RecordingError, match=r"p.csv:4: 3 cells, expected 4"):
        read_recording(p)
    p.write_text("time,a_x,a_y\n0,1,2\n")
    with pytest.raises(RecordingError, match="triples"):
        read_recording(p)
    p.write_text("time,a_x,a_y,a_z\n0,1,2,3\n0.01,1,2,3\n")
    with pytest.raises(RecordingError, match="units="):
        read_recording(p)
    assert read_recording(p, units="mm").markers[1, 0, 2] == pytest.approx(0.003)


def test_recording_validation():
    x = np.zeros((3, 2, 3))
    with pytest.raises(RecordingError, match="increase"):
        Recording([0.0, 0.02, 0.01], x, ("a", "b"), 100.0)
    with pytest.raises(RecordingError, match="duplicate"):
        Recording([0.0, 0.01, 0.02], x, ("a", "a"), 100.0)
    with pytest.raises(RecordingError, match="shape"):
        Recording([0.0, 0.01, 0.02], x[..., :2], ("a", "b"), 100.0)


def test_filled_interpolates_only_named_markers():
    t = np.arange(10) * 0.01
    stick = np.stack([t, 2 * t, 0 * t + 1], axis=1)  # linear motion
    cloth = np.ones((10, 3))
    x = np.stack([stick, cloth], axis=1)
    x[3:6, 0] = np.nan
    x[4, 1] = np.nan
    rec = Recording(t, x, ("stick", "cloth"), 100.0)
    f = rec.filled(["stick"])
    assert np.allclose(f.markers[:, 0], stick)  # exact for linear motion (Remark 7.3)
    assert np.isnan(f.markers[4, 1]).all()  # cloth marker stays missing
    x[:, 1] = np.nan
    with pytest.raises(RecordingError, match="never recorded"):
        Recording(t, x, ("stick", "cloth"), 100.0).filled()
    w = rec.window(0.02, 0.05, rebase=True)
    assert w.frame_count == 4 and w.times[0] == 0.0
    assert rec.select(["cloth", "stick"]).names == ("cloth", "stick")
    with pytest.raises(KeyError, match="no marker named 'x'"):
        rec.select(["x"])


def test_a_truncated_c3d_file_is_an_error(tmp_path):
    """A C3D cut short used to read 48 of its 101 frames without a word."""
    pytest.importorskip("ezc3d")
    from isocloth.validation.c3d import read_c3d, write_c3d

    t = np.arange(101) / 100.0
    markers = np.stack([np.stack([t, np.full_like(t, j), np.ones_like(t)], axis=1) for j in range(4)], axis=1)
    rec = Recording(times=t, markers=markers, names=("A", "B", "C", "D"), rate=100.0)
    path = write_c3d(tmp_path / "full.c3d", rec)
    assert read_c3d(path).markers.shape[0] == 101
    data = path.read_bytes()
    cut = tmp_path / "cut.c3d"
    cut.write_bytes(data[: len(data) - len(data) // 3])
    with pytest.raises(RecordingError, match=r"announces 101 frames but the file holds \d+: it is truncated"):
        read_c3d(cut)
