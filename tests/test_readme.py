"""The README's usage blocks are the tool's --help, and its Quickstart has two commands."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def help_text(*command: str) -> str:
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, str(ROOT / "memory_diff.py"), *command, "--help"],
                          capture_output=True, text=True, env=env, check=True)
    return proc.stdout


def text_blocks() -> list[str]:
    return re.findall(r"```text\n(.*?)```", README, re.S)


@pytest.mark.parametrize("command", [
    pytest.param((), id="top"),
    pytest.param(("build",), id="build"),
    pytest.param(("lint",), id="lint"),
])
def test_usage_block_is_help(command: tuple[str, ...]) -> None:
    assert help_text(*command) in text_blocks()


def test_every_build_option_is_explained() -> None:
    options = set(re.findall(r"(--[a-z][a-z-]+)", help_text("build"))) - {"--help"}
    prose = README.split("The flags, in more words:", 1)[1]
    assert sorted(o for o in options if f"`{o}" not in prose) == []


def test_quickstart_is_two_commands_that_work() -> None:
    section = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[1] == "bash .ci/run"
    argv = commands[0].split()
    assert argv[:2] == ["python3", "memory_diff.py"]
    # In this repository: --no-cache, so its git directory never holds a cache.
    proc = subprocess.run([sys.executable, *argv[1:], "--no-cache"], cwd=ROOT, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"# memory-diff: ") and b"\n+- " in proc.stdout
