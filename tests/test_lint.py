"""lint on a real team's memory file: duplicates within one section only, each agent's
size limit on the file it reads, the configured memory file by default, and findings a
team silences in its config (never a secret)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import memory_diff as md

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "memory_diff.py"
RULE = "- Run `make test` before pushing because CI takes an hour."


def lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "lint", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(f"# A\n\n{RULE}\n{RULE}\n", [(4, "duplicate", "same bullet as line 3 in the same section")],
                 id="same-section"),
    pytest.param(f"# A\n\n## Build\n\n{RULE}\n\n## Release\n\n{RULE}\n", [], id="two-sections"),
    pytest.param(f"## Build\n{RULE}\n### Details\n{RULE}\n", [], id="a-sub-section-is-another-section"),
    pytest.param(f"## Build\n{RULE}\n```md\n## Release\n```\n{RULE}\n",
                 [(6, "duplicate", "same bullet as line 2 in the same section")], id="heading-in-a-fence-is-none"),
    pytest.param(f"{RULE}\n* {RULE[2:].upper()}\n", [(2, "duplicate", "same bullet as line 1 in the same section")],
                 id="no-heading-case-and-marker"),
])
def test_duplicates_within_one_section(text: str, expected: list[tuple[int, str, str]]) -> None:
    assert [f for f in md.lint_text(text) if f[1] == "duplicate"] == expected


UNKNOWN_SIZE = "{path}:1: note: size not checked: no agent is known to read this file by its name or an @import " \
               "({size:,} bytes)\n"
FILLER = "- Keep build note {:06d} short and current, it is read first.\n"


def filler(size: int) -> str:
    return "".join(FILLER.format(n) for n in range(size // len(FILLER.format(0))))


@pytest.mark.parametrize(("name", "size", "agents"), [
    pytest.param("AGENTS.md", 35_000, ["Codex"], id="agents-md-past-codex"),
    pytest.param("CLAUDE.md", 35_000, [], id="claude-md-under-claude-code"),
    pytest.param("CLAUDE.md", 45_000, ["Claude Code"], id="claude-md-past-claude-code"),
    pytest.param("AGENTS.md", 45_000, ["Codex"], id="agents-md-not-claude-codes-limit"),
    pytest.param("GEMINI.md", 60_000, [], id="gemini-md-no-known-limit"),
    pytest.param("memory.md", 60_000, [], id="other-file-no-known-limit"),
])
def test_size_limit_of_the_agent_reading_the_file(tmp_path: Path, name: str, size: int, agents: list[str]) -> None:
    (tmp_path / name).write_text("# Notes\n" + filler(size))
    done = lint(tmp_path, name)
    found = [ln for ln in done.stdout.splitlines() if ": size: " in ln]
    assert [a for a in ("Claude Code", "Codex") if any(f"; {a} " in ln for ln in found)] == agents
    assert done.returncode == (1 if agents else 0), done.stdout


def test_size_limit_through_a_symlink_is_both(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("# Notes\n" + filler(45_000))
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    found = [ln for ln in lint(tmp_path, "CLAUDE.md").stdout.splitlines() if ": size: " in ln]
    assert len(found) == 2


def test_lint_without_argument_checks_the_configured_memory_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "TEAM.md").write_text(f"{RULE}\n{RULE}\n")
    (tmp_path / "AGENTS.md").write_text("# Clean\n")
    (tmp_path / ".memory-diff.toml").write_text('memory = "docs/TEAM.md"\n')
    done = lint(tmp_path)
    assert (done.returncode, done.stdout) == (1, UNKNOWN_SIZE.format(path="docs/TEAM.md", size=2 * len(RULE) + 2)
                                              + "docs/TEAM.md:2: duplicate: same bullet as line 1 in the same section\n")
    (tmp_path / ".memory-diff.toml").unlink()
    (tmp_path / "AGENTS.md").write_text(f"# A\n{RULE}\n{RULE}\n")
    done = lint(tmp_path)
    assert (done.returncode, done.stdout) == (1, "AGENTS.md:3: duplicate: same bullet as line 2 in the same section\n")


CONFIG = """memory = "AGENTS.md"
lint-ignore = [
    {{kind = "duplicate", text = "{rule}"}},
    {{kind = "size"}},
]
"""


def test_findings_silenced_by_kind_and_text_are_notes(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    other = "- Never edit the generated files by hand."
    (tmp_path / "AGENTS.md").write_text("# A\n" + "\n".join([RULE, RULE, other, other]) + "\n"
                                        + filler(35_000))
    (tmp_path / ".memory-diff.toml").write_text(CONFIG.format(rule=RULE[2:].replace("`", "`").upper()))
    done = lint(tmp_path)
    lines = done.stdout.splitlines()
    assert "AGENTS.md:3: note: silenced duplicate: same bullet as line 2 in the same section" in lines
    assert "AGENTS.md:5: duplicate: same bullet as line 4 in the same section" in lines  # another text
    assert any(ln.startswith("AGENTS.md:") and ": note: silenced size: " in ln for ln in lines), lines
    assert done.returncode == 1
    (tmp_path / "AGENTS.md").write_text(f"# A\n{RULE}\n{RULE}\n")
    done = lint(tmp_path, "AGENTS.md")
    assert (done.returncode, done.stdout) == (0, "AGENTS.md:3: note: silenced duplicate: same bullet as line 2 in "
                                                 "the same section\n")


@pytest.mark.parametrize(("entry", "says"), [
    pytest.param('{kind = "secret"}', "secret findings cannot be silenced", id="secret"),
    pytest.param('{kind = "secret", text = "- token = abc"}', "secret findings cannot be silenced", id="secret-text"),
    pytest.param('{kind = "typo"}', "kind must be one of", id="unknown-kind"),
    pytest.param('"duplicate"', "must be a list of tables", id="not-a-table"),
    pytest.param('{kind = "pii", line = 3}', "must be a list of tables", id="by-line-number"),
])
def test_bad_lint_ignore_is_a_config_error(tmp_path: Path, entry: str, says: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("# A\n")
    (tmp_path / ".memory-diff.toml").write_text(f"lint-ignore = [{entry}]\n")
    done = lint(tmp_path, "AGENTS.md")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"memory-diff: error: {tmp_path / '.memory-diff.toml'}: key 'lint-ignore'")
    assert says in done.stderr and done.stderr.count("\n") == 1
