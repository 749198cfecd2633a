"""Atomic file writes: a file is either fully written or left untouched.

Every writer here writes to a temporary file in the destination's directory (so the final
:func:`os.replace` stays on one file system and is atomic on POSIX and Windows), flushes and
``fsync``s it, then renames it onto the destination. On any exception (including
``KeyboardInterrupt``) the temporary file is removed and the destination keeps its old
content, or stays absent.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text", "remove_temporaries"]


def _fsync_file(path: Path) -> None:
    """Flush the file at ``path`` to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Flush a directory entry to disk, where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path to write to, moved onto ``path`` when the block succeeds.

    The temporary file is created (empty) in the same directory as ``path`` and its name
    ends with the same suffix, so writers that append a suffix when it is missing (such as
    :func:`numpy.savez` with ``.npz``) write to the yielded name itself.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination. Its parent directory must exist.

    Yields
    ------
    pathlib.Path
        Temporary file path to write the content to (any number of times, by any writer).

    Raises
    ------
    FileNotFoundError
        If the parent directory of ``path`` does not exist, or the block deleted the
        temporary file.
    OSError
        On failure to create, sync or rename the file.

    Notes
    -----
    On success the temporary file is synced to disk (``fsync``), then moved onto ``path``
    with :func:`os.replace`. If the block raises (any ``BaseException``) the temporary file is removed and
    the exception propagates; ``path`` is unchanged.
    """
    dest = Path(path)
    directory = dest.parent if str(dest.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{dest.stem}.", suffix=f".tmp{dest.suffix}", dir=directory
    )
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        # mkstemp creates the file private (0o600); give it the destination's usual mode.
        try:
            mode = dest.stat().st_mode & 0o777
        except OSError:
            mode = 0o644
        os.chmod(tmp, mode)
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(
                f"temporary file {tmp} for {dest} disappeared before it could be moved"
            )
        _fsync_file(tmp)
        os.replace(tmp, dest)
    except BaseException:
        _remove_quietly(tmp)
        raise
    _fsync_directory(directory)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; its parent directory must exist.
    data : bytes-like
        Content to write.

    Returns
    -------
    pathlib.Path
        The destination path.

    Raises
    ------
    FileNotFoundError
        If the parent directory does not exist.
    OSError
        On any write, sync or rename failure (the destination is then unchanged).
    """
    dest = Path(path)
    with atomic_path(dest) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return dest


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; its parent directory must exist.
    text : str
        Content to write; newlines are written as given (no platform translation).
    encoding : str, default "utf-8"
        Text encoding.

    Returns
    -------
    pathlib.Path
        The destination path.

    Raises
    ------
    FileNotFoundError
        If the parent directory does not exist.
    UnicodeEncodeError
        If ``text`` cannot be encoded with ``encoding``.
    OSError
        On any write, sync or rename failure (the destination is then unchanged).
    """
    return atomic_write_bytes(path, text.encode(encoding))


def remove_temporaries(directory: str | os.PathLike, names) -> list[Path]:
    """Delete the temporary files that :func:`atomic_path` left in ``directory`` for the files
    ``names`` (e.g. "trajectory.npz") when its process was killed (``kill -9``, power loss) before
    it could move or remove them. Returns the paths removed.

    Only for a directory no other process is writing: a temporary file still being written
    would be removed too.
    """
    directory = Path(directory)
    removed = []
    for name in names:
        dest = Path(name)
        for p in directory.glob(f".{dest.stem}.*.tmp{dest.suffix}"):
            _remove_quietly(p)
            removed.append(p)
    return removed
