"""The README's code blocks run as written: its Python runs, its scene file validates, and every
command line names an existing ``isocloth`` command with options that command accepts (running them
all, fits and videos included, would take minutes; tests/test_cli.py runs the commands themselves)."""

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from isocloth.cli import app
from isocloth.scenes.loader import config_from_dict

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"```(\w*)\n(.*?)```", README.read_text(), re.S) if m.group(1) == language]


def test_readme_has_the_blocks_checked_here():
    assert len(_blocks("python")) >= 1 and len(_blocks("toml")) >= 1 and len(_blocks("bash")) >= 3


@pytest.mark.parametrize("code", _blocks("python"))
def test_python_blocks_run(code, tmp_path):
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("text", _blocks("toml"))
def test_scene_blocks_build_and_step(text):
    """The example scene used to start inside its table (and stall at a residual of 9e5)."""
    from isocloth.scenes.loader import build_scene

    cfg = config_from_dict(tomllib.loads(text), "README.md")
    sc = build_scene(cfg)  # start-state checks: grasp points on the cloth, no node inside an obstacle
    s = sc.initial_state
    for _ in range(20):
        s, info = sc.stepper.step(s)
        assert info.converged


def _command_lines():
    for block in _blocks("bash"):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("isocloth "):
                yield line


@pytest.mark.parametrize("line", list(_command_lines()))
def test_command_lines_name_existing_commands_and_options(line):
    words = shlex.split(line)[1:]
    command = words[0]
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0, f"{line}: {result.output}"
    for option in (w.split("=", 1)[0] for w in words[1:] if w.startswith("--")):
        assert option in result.output, f"{line}: {option} is not an option of 'isocloth {command}'"
    for option in (w for w in words[1:] if re.fullmatch(r"-[a-zA-Z]", w)):
        assert option in result.output, f"{line}: {option} is not an option of 'isocloth {command}'"
