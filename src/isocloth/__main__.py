"""``python -m isocloth``: the command-line interface (same as the ``isocloth`` command)."""

from isocloth.cli import app

app(prog_name="isocloth")
