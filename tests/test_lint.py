"""lint on a real team's memory file: duplicates within one group only (a heading, a
numbered item, a bold label), each agent's size limit on the files it reads, the
configured memory file by default, findings a team silences in its config (never a
secret), well-kept files that pass and real findings still caught, and stale bullets."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import memory_diff as md

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF, main_process  # noqa: E402
RULE = "- Run `make test` before pushing because CI takes an hour."


def lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = main_process(["lint", *args], cwd)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(f"# A\n\n{RULE}\n{RULE}\n", [(4, "duplicate", "same bullet as line 3 in the same section")],
                 id="same-section"),
    pytest.param(f"# A\n\n## Build\n\n{RULE}\n\n## Release\n\n{RULE}\n", [], id="two-sections"),
    pytest.param(f"## Build\n{RULE}\n### Details\n{RULE}\n", [], id="a-sub-section-is-another-section"),
    pytest.param(f"## Build\n{RULE}\n```md\n## Release\n```\n{RULE}\n",
                 [(6, "duplicate", "same bullet as line 2 in the same section")], id="heading-in-a-fence-is-none"),
    pytest.param(f"{RULE}\n* {RULE[2:].upper()}\n", [(2, "duplicate", "same bullet as line 1 in the same section")],
                 id="no-heading-case-and-marker"),
    pytest.param("# Runs\n\n```\noutputs/\n  - 2026-02-23/\n    - ...\n    - ...\n```\n", [],
                 id="a-tree-in-a-fence-has-no-bullets"),
    # A bullet carried on over indented lines is all of them, not its first line.
    pytest.param("# Log\n\n- (unchanged)\n  The parser reads UTF-8 only.\n- (unchanged)\n  The cache lives in /tmp.\n",
                 [], id="same-first-line-other-continuation"),
    pytest.param("# Log\n\n- (unchanged)\n  The parser reads UTF-8 only.\n- (unchanged)\n  The parser reads UTF-8 only.\n",
                 [(5, "duplicate", "same bullet as line 3 in the same section")], id="same-continuation"),
])
def test_duplicates_within_one_section(text: str, expected: list[tuple[int, str, str]]) -> None:
    assert [f for f in md.lint_text(text) if f[1] == "duplicate"] == expected


@pytest.mark.parametrize(("text", "lines"), [
    pytest.param("# A\n\nSee @~/.ssh/config for the hosts.\n", [3], id="home-import"),
    pytest.param("# A\n\n- Read @../shared/RULES.md first.\n", [3], id="parent-import"),
    pytest.param("# A\n\nSee `@~/.ssh/config` for the hosts.\n", [], id="in-a-code-span"),
    pytest.param('# A\n\n```ts\nimport { q } from "@/sanity/lib/queries"\nimport x from "@../x"\n```\n', [],
                 id="in-a-fence-is-code"),
    pytest.param("# A\n\n```ts``` spans need a language.\n\n- Keep hosts in @~/.ssh/config\n", [5],
                 id="a-span-of-three-backticks-opens-no-fence"),
])
def test_imports_outside_the_repository(text: str, lines: list[int]) -> None:
    """Claude Code reads no import inside a code span or block: neither does lint."""
    assert [f[0] for f in md.lint_text(text) if f[1] == "import"] == lines


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


# -- well-kept memory files pass: each false-alarm class as a real-shaped file --------------

GIT_ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com", "GIT_COMMITTER_NAME": "Test",
           "GIT_COMMITTER_EMAIL": "test@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True,
                   timeout=60)


def make_repo(root: Path, files: dict[str, str], commit: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "memory")
    return root


def findings_of(done: subprocess.CompletedProcess[str]) -> list[tuple[int, str]]:
    return [(int(ln.split(":")[1]), ln.split(": ")[1]) for ln in done.stdout.splitlines()]


COMMIT_STRATEGIES = """# Git

**Manual-Commit Strategy**
- Run `make check` before every commit.
- Write the message in the imperative.

**Auto-Commit Strategy**
- Run `make check` before every commit.
- Commit after each passing step.
"""
NEVER_LABELS = """# Rust

- ❌ **Never use print!:**
  - Use the `tracing` macros; output must be structured.
- ❌ **Never use dbg!:**
  - Use the `tracing` macros; output must be structured.
"""
NUMBERED_STEPS = """# Release

1. Cut the branch.
   - Ask in #release before you start.
2. Tag the build.
   - Ask in #release before you start.
"""
EMOJI_PRESENTATION = """# Environment

- ⚠️ The dev server binds port 3000; ⚙️ settings live in `config/`.
- 🖥️ Desktop builds need Xcode; ❌ never ✅ always; 👨‍💻 pair on migrations; 1️⃣ first the schema.
"""
CONTAINER_HOMES = """# Containers

- The app is mounted at /home/node/app in the dev container.
- CI checks out to /home/runner/work/app/app; the dev container user is /home/vscode.
- Notebooks save to /home/jovyan/work; Homebrew on Linux lives in /home/linuxbrew/.linuxbrew.
- The macOS runner's home is /Users/runner, Windows' is C:\\Users\\runneradmin; shared files go to /Users/Shared.
- Replace /home/<user> with your own home.
- The agent's home is /home/dd-user; test boxes use /home/tester, /home/ec2-user and /home/admin.
"""
ENV_FLAGS = """# Tests

| Key | IS_WEBPACK_TEST=1 |
|---|---|

- Set the key IS_WEBPACK_TEST=1 to build with webpack instead of turbopack.
"""
QUOTED_PHRASES = """# CI

- The nightly job's secret, "Scheduled testing", names the workflow, not a value.
- Password rules live in `auth/policy.ts`, "Strong passwords only" is its title.
"""
KEY_PLACES = """# 部署

- 私钥位置: `~/.ssh/id_ed25519`; 公钥: `~/.ssh/id_ed25519.pub`.
- 推送前: `git remote set-url origin https://<用户名>:<密码>@git.example.net/team/app.git`
"""
SEEDED_ACCOUNTS = """# Seed data

- The seeded admin logs in as sysadmin@healthcrm.com; a plain account is test1@healthcrm.com.
"""


@pytest.mark.parametrize(("name", "text"), [
    pytest.param("AGENTS.md", COMMIT_STRATEGIES, id="duplicate-under-two-bold-labels"),
    pytest.param("AGENTS.md", NEVER_LABELS, id="duplicate-under-two-emoji-bold-label-bullets"),
    pytest.param("AGENTS.md", NUMBERED_STEPS, id="duplicate-under-two-numbered-items"),
    pytest.param("CLAUDE.md", EMOJI_PRESENTATION, id="emoji-variation-selector-joiner-keycap"),
    pytest.param("AGENTS.md", CONTAINER_HOMES, id="homes-of-system-accounts-and-placeholders"),
    pytest.param("AGENTS.md", SEEDED_ACCOUNTS, id="role-and-seeded-test-accounts"),
    pytest.param("AGENTS.md", ENV_FLAGS, id="secret-an-environment-variable-name-with-its-value"),
    pytest.param("AGENTS.md", QUOTED_PHRASES, id="secret-a-phrase-in-quotes-after-a-secret-word"),
    pytest.param("CLAUDE.md", KEY_PLACES, id="secret-a-key-file-path-and-a-placeholder-password"),
    pytest.param("GEMINI.md", "# Notes\n" + filler(60_000), id="size-of-an-unknown-budget-is-a-note"),
])
def test_well_kept_memory_file_passes(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = lint(tmp_path, name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(kind == "note" for _, kind in findings_of(done)), done.stdout


def test_committed_personal_data_is_a_note_and_new_is_a_finding(tmp_path: Path) -> None:
    kept = "# Team\n\n- Page dana.kovacs@acme-corp.io for database incidents.\n"
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": kept})
    done = lint(repo, "AGENTS.md")
    assert (done.returncode, done.stdout) == (0, "AGENTS.md:3: note: e-mail address (withheld) already committed: "
                                                 "build withholds new ones\n")
    (repo / "AGENTS.md").write_text(kept + "- Call +44 20 7946 0958 when the gateway is down.\n", encoding="utf-8")
    done = lint(repo, "AGENTS.md")
    assert done.returncode == 1 and "AGENTS.md:4: pii: phone number (withheld)" in done.stdout.splitlines()


# -- every real finding is still caught -----------------------------------------------------

@pytest.mark.parametrize(("name", "text", "expected"), [
    pytest.param("AGENTS.md", "# Setup\n\n- Tools are in /Users/jsmith/bin.\n",
                 [(3, "pii")], id="home-path-of-a-person"),
    pytest.param("AGENTS.md", "# Setup\n\n- Tools are in /home/jhauser/bin.\n",
                 [(3, "pii")], id="home-path-of-a-person-whose-name-ends-in-user"),
    pytest.param("AGENTS.md", "# Setup\n\n- Tools are in C:\\Users\\dkovacs\\bin.\n",
                 [(3, "pii")], id="windows-home-path-of-a-person"),
    pytest.param("AGENTS.md", "# Team\n\n- Mail dana.kovacs@acme-corp.io about outages.\n",
                 [(3, "pii")], id="personal-e-mail-outside-a-repository"),
    pytest.param("AGENTS.md", COMMIT_STRATEGIES.replace("- Commit after each passing step.", "- Run `make check` "
                                                        "before every commit."), [(9, "duplicate")],
                 id="duplicate-under-one-bold-label"),
    pytest.param("AGENTS.md", NUMBERED_STEPS.replace("2. Tag the build.\n", ""), [(5, "duplicate")],
                 id="duplicate-under-one-numbered-item"),
    pytest.param("AGENTS.md", "# A\n\n- Use the\u200blogger.\n", [(3, "invisible")], id="zero-width-space"),
    pytest.param("AGENTS.md", "# A\n\n- Use the logger\ufe0f.\n", [(3, "invisible")], id="selector-after-a-letter"),
    pytest.param("AGENTS.md", "# A\n\n- Ship it \u2705\ufe0f\ufe0e now.\n", [(3, "invisible")],
                 id="selectors-run-after-an-emoji"),
    pytest.param("AGENTS.md", "# A\n\n- Ship it \U0001f600\U000e0041\U000e0042.\n", [(3, "invisible")],
                 id="tag-characters-after-an-emoji"),
    pytest.param("AGENTS.md", "# A\n\n- Ship it\u200d\U0001f600 now.\n", [(3, "invisible")],
                 id="joiner-after-a-letter"),
    pytest.param("AGENTS.md", "# Notes\n" + filler(35_000), [(("# Notes\n" + filler(35_000))[:32 * 1024].count("\n")
                                                            + 1, "size")], id="agents-md-past-32-kib"),
])
def test_real_findings_are_caught(tmp_path: Path, name: str, text: str, expected: list[tuple[int, str]]) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = lint(tmp_path, name)
    assert done.returncode == 1, done.stdout
    assert findings_of(done) == expected, done.stdout


def test_committed_home_path_of_a_person_still_fails(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "# Setup\n\n- Tools are in /home/dkovacs/bin.\n"})
    done = lint(repo, "AGENTS.md")
    assert (done.returncode, findings_of(done)) == (1, [(3, "pii")]), done.stdout


# -- the budget by what reads the file --------------------------------------------------------

BIG = "# Notes\n" + filler(45_000)  # past both agents' limits
HALF = "# Notes\n" + filler(20_000)


@pytest.mark.parametrize(("files", "linted", "says"), [
    pytest.param({"AGENTS.md": BIG}, "AGENTS.md", ["Codex truncates AGENTS.md at 32 KiB (32,768 bytes): from this "
                                                   "line on it is not read"], id="agents-md"),
    pytest.param({"CLAUDE.md": BIG}, "CLAUDE.md", ["Claude Code warns past 40,000 characters of CLAUDE.md: this line "
                                                   "crosses it"], id="claude-md"),
    pytest.param({"AGENTS.md": BIG, "CLAUDE.md": "# Claude\n\n@AGENTS.md\n"}, "AGENTS.md",
                 ["Claude Code warns", "Codex truncates AGENTS.md"], id="agents-md-imported-by-claude-md"),
    pytest.param({"docs/TEAM.md": BIG, "CLAUDE.md": "# Claude\n\nSee @docs/TEAM.md for the team's rules.\n"},
                 "docs/TEAM.md", ["Claude Code warns"], id="configured-file-imported-by-claude-md"),
    pytest.param({"docs/TEAM.md": BIG, "CLAUDE.md": "# Claude\n\nNot imported: `@docs/TEAM.md`.\n"},
                 "docs/TEAM.md", None, id="an-import-in-a-code-span-is-none"),
    pytest.param({"AGENTS.md": HALF, "pkg/AGENTS.md": HALF}, "pkg/AGENTS.md",
                 ["with the AGENTS.md files above it; Codex truncates"], id="codex-chain-root-down"),
    pytest.param({"AGENTS.md": HALF, "pkg/AGENTS.md": HALF}, "AGENTS.md", [], id="codex-chain-below-is-not-before"),
    pytest.param({"pkg/AGENTS.md": HALF}, "pkg/AGENTS.md", [], id="codex-chain-alone"),
])
def test_budget_of_what_reads_the_file(tmp_path: Path, files: dict[str, str], linted: str,
                                      says: list[str] | None) -> None:
    """`says` None: no agent is known to read the file, and lint says so."""
    repo = make_repo(tmp_path / "repo", files, commit=False)
    done = lint(repo, linted)
    sizes = [ln for ln in done.stdout.splitlines() if ": size: " in ln]
    assert len(sizes) == len(says or []) and all(any(s in ln for ln in sizes) for s in says or []), done.stdout
    assert done.returncode == (1 if says else 0), done.stdout
    assert done.stdout.count("size not checked") == (says is None)


def test_codex_chain_cut_falls_where_the_chain_reaches_32_kib(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": HALF, "pkg/AGENTS.md": HALF}, commit=False)
    room = 32 * 1024 - len(HALF.encode())
    line = HALF.encode()[:room].count(b"\n") + 1
    assert findings_of(lint(repo, "pkg/AGENTS.md")) == [(line, "size")]


def test_unknown_budget_is_said_once(tmp_path: Path) -> None:
    (tmp_path / "TEAM.md").write_text("# Team\n" + filler(50_000))
    done = lint(tmp_path, "TEAM.md")
    assert done.returncode == 0
    assert done.stdout.count("size not checked") == 1 and done.stdout.startswith("TEAM.md:1: note: size not checked")


# -- stale bullets -------------------------------------------------------------------------------

@pytest.mark.parametrize(("span", "named"), [
    pytest.param("`src/app/models.py`", ("path", "src/app/models.py"), id="path"),
    pytest.param("`./scripts/`", ("path", "scripts/"), id="folder-from-here"),
    pytest.param("`src/app.py:42`", ("path", "src/app.py"), id="path-with-line"),
    pytest.param("`package.json`", ("file", "package.json"), id="file-name"),
    pytest.param("`.env.example`", ("file", ".env.example"), id="dotfile"),
    pytest.param("`read_memory()`", ("symbol", "read_memory"), id="call"),
    pytest.param("`os.path.join(a, b)`", None, id="call-with-prose-arguments"),
    pytest.param("`MemoryIndex.lookup`", ("symbol", "MemoryIndex.lookup"), id="dotted"),
    pytest.param("`Repo::open`", ("symbol", "Repo::open"), id="path-separator"),
    pytest.param("`MemoryIndex`", ("symbol", "MemoryIndex"), id="camel-case"),
    pytest.param("`useEffect`", ("symbol", "useEffect"), id="lower-camel-case"),
    pytest.param("`read_memory`", ("symbol", "read_memory"), id="snake-case"),
    pytest.param("`console.log`", ("symbol", "console.log"), id="dotted-not-a-log-file"),
    pytest.param("`.md`", None, id="extension"),
    pytest.param("`make test`", None, id="command"),
    pytest.param("`go test -race ./...`", None, id="command-with-dots"),
    pytest.param("`--no-verify`", None, id="flag"),
    pytest.param("`https://example.com/docs`", None, id="url"),
    pytest.param("`example.com`", None, id="host"),
    pytest.param("`src/**/*.ts`", None, id="glob"),
    pytest.param("`~/notes/todo.md`", None, id="home-path"),
    pytest.param("`/etc/hosts`", None, id="absolute-path"),
    pytest.param("`DATABASE_URL`", None, id="environment-variable"),
    pytest.param("`IS_WEBPACK_TEST=1`", None, id="assignment"),
    pytest.param("`Next.js`", None, id="product-name"),
    pytest.param("`<name>`", None, id="placeholder-angle"),
    pytest.param("`YOUR_API_KEY`", None, id="placeholder-your"),
    pytest.param("`src/.../x.py`", None, id="placeholder-ellipsis"),
    pytest.param("`@types/node`", None, id="scoped-package"),
    pytest.param("`print!`", None, id="macro"),
    pytest.param("`release`", None, id="plain-word"),
    pytest.param("`settings.json`", None, id="editor-settings-outside-the-repository"),
])
def test_what_a_code_span_names(span: str, named: tuple[str, str] | None) -> None:
    assert md.span_name(span) == named


STALE_MEMORY = """# Project

- Models live in `src/app/models.py`; `MemoryIndex.lookup()` finds an entry.
- Call `read_memory()` to load a file; the setup is in `docs/setup.md` and `./docs/`.
- The settings are read from `src/app/config.py`.
- Use `OldIndex` for the cache.
- Call `gone_function()` at start-up, then `MemoryIndex.vanished`.
- Seed the database from `seed.sql`.
- Run `make test` and `go test -race ./...`; never push with `--no-verify`.
- Built assets land in `dist/` and secrets in `.env`; docs at `https://example.com/x`.
- We use `Next.js`; replace `<name>` and `YOUR_API_KEY`; sources are `src/**/*.py`; notes in `~/notes.md`.
- Import from `next/navigation`; the branch is `origin/main`; the server reads `DATABASE_URL`.
- Never call `print_debug()` here: it was removed.
- `lib/helpers.py` holds the helpers; `vendored_only()` comes from the vendor folder.
"""
STALE_REPO = {
    ".gitignore": "dist/\n.env\n",
    "src/app/models.py": "class MemoryIndex:\n    def lookup(self):\n        return read_memory('x')\n",
    "src/app/io.py": "def read_memory(path):\n    return open(path).read()\n",
    "docs/setup.md": "# Setup\n",
    "CHANGELOG.md": "- Renamed OldIndex to MemoryIndex; removed gone_function and vanished.\n",
    "CLAUDE.md": "- Use `OldIndex` for the cache.\n",
    "vendor/lib.py": "def vendored_only():\n    pass\n",
}
STALE_FOUND = [
    "AGENTS.md:5: stale: `src/app/config.py`: no such file or folder",
    "AGENTS.md:6: stale: `OldIndex`: in no file of the repository",
    "AGENTS.md:7: stale: `gone_function()`: in no file of the repository; `MemoryIndex.vanished`: in no file of "
    "the repository",
    "AGENTS.md:8: stale: `seed.sql`: no such file, and no file names it",
    "AGENTS.md:14: stale: `vendored_only()`: in no file of the repository",
]


def test_stale_bullets_are_named_and_do_not_fail(tmp_path: Path) -> None:
    """`lib/` is no folder of the tree: a path that starts nowhere known is not judged.
    The vendor folder is not searched; the changelog and CLAUDE.md are not evidence."""
    repo = make_repo(tmp_path / "repo", {**STALE_REPO, "AGENTS.md": STALE_MEMORY})
    done = lint(repo, "AGENTS.md")
    assert (done.returncode, done.stdout.splitlines()) == (0, STALE_FOUND), done.stdout + done.stderr


def test_build_preamble_counts_stale_bullets(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**STALE_REPO, "AGENTS.md": STALE_MEMORY})
    transcript = ROOT / "examples" / "basic-english" / "transcript.jsonl"
    done = subprocess.run([*MEMORY_DIFF, "build", str(transcript), "--memory", "AGENTS.md",
                           "--no-cache"], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "# 5 bullets of AGENTS.md look stale (they name files or code the repository no longer has): " \
           "memory-diff lint lists them\n" in done.stdout
    (repo / "AGENTS.md").write_text("# Project\n\n- Models live in `src/app/models.py`.\n")
    done = subprocess.run([*MEMORY_DIFF, "build", str(transcript), "--memory", "AGENTS.md",
                           "--no-cache"], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("# memory-diff:") and " stale " not in done.stdout


def test_stale_is_silenced_by_the_config(tmp_path: Path) -> None:
    config = 'lint-ignore = [{kind = "stale", text = "- Use `OldIndex` for the cache."}]\n'
    repo = make_repo(tmp_path / "repo", {**STALE_REPO, "AGENTS.md": STALE_MEMORY, ".memory-diff.toml": config})
    lines = lint(repo, "AGENTS.md").stdout.splitlines()
    assert "AGENTS.md:6: note: silenced stale: `OldIndex`: in no file of the repository" in lines
    transcript = ROOT / "examples" / "basic-english" / "transcript.jsonl"
    done = subprocess.run([*MEMORY_DIFF, "build", str(transcript), "--memory", "AGENTS.md",
                           "--no-cache"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert "# 4 bullets of AGENTS.md look stale " in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("where", [
    pytest.param("outside-a-repository", id="outside-a-repository"),
    pytest.param("without-git", id="without-git-on-path"),
])
def test_stale_is_skipped_silently(tmp_path: Path, where: str) -> None:
    env = dict(os.environ)
    if where == "outside-a-repository":
        folder = tmp_path
        for name, text in {**STALE_REPO, "AGENTS.md": STALE_MEMORY}.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    else:
        folder = make_repo(tmp_path / "repo", {**STALE_REPO, "AGENTS.md": STALE_MEMORY})
        env["PATH"] = str(tmp_path / "no-git-here")
    done = subprocess.run([*MEMORY_DIFF, "lint", "AGENTS.md"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def generated_tree(root: Path, files: int) -> dict[str, str]:
    """Some thousands of source files of 2 KB in nested folders, each defining one function."""
    out = {}
    for n in range(files):
        body = "".join(f"    value_{n}_{k} = compute_{k}(value_{n}_{k - 1})\n" for k in range(1, 40))
        out[f"pkg{n % 20}/mod{n % 7}/file_{n}.py"] = f"def defined_{n}():\n{body}"
    return out


def test_stale_search_is_bounded_on_a_large_tree(tmp_path: Path) -> None:
    """Symbols that are missing make lint read every file: one pass, all symbols at once."""
    files = generated_tree(tmp_path / "repo", 3000)
    memory = "# Big\n\n" + "".join(f"- Call `defined_{n}()` and `missing_{n}()`.\n" for n in range(0, 3000, 100))
    repo = make_repo(tmp_path / "repo", {**files, "AGENTS.md": memory})
    started = time.monotonic()
    done = lint(repo, "AGENTS.md")
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 30, done.stdout
    assert all("`missing_" in ln and "`defined_" not in ln for ln in done.stdout.splitlines())
    assert elapsed < 10, elapsed  # about 0.3 s alone; the margin is for a loaded machine


@pytest.mark.parametrize(("bound", "value"), [
    pytest.param("STALE_TOTAL_BYTES", 50_000, id="total-bytes"),
    pytest.param("STALE_FILES", 20, id="files"),
])
def test_a_search_stopped_at_a_bound_flags_no_symbol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     bound: str, value: int) -> None:
    files = generated_tree(tmp_path / "repo", 200)
    memory = "# Big\n\n- Call `missing_one()`.\n- Read `pkg1/nothing.py`.\n"
    repo = make_repo(tmp_path / "repo", {**files, "AGENTS.md": memory})
    real = str(repo / "AGENTS.md")
    assert [line for line, _, _ in md.stale_findings(real, memory)] == [3, 4]
    monkeypatch.setattr(md, bound, value)
    assert md.stale_findings(real, memory) == [(4, "stale", "`pkg1/nothing.py`: no such file or folder")]


def test_large_and_binary_files_are_not_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"big.txt": "only_in_big\n" + "x" * 5000, "blob.dat": "\0only_in_blob\n", "small.txt": "only_in_small\n"}
    memory = "# A\n\n- `only_in_big` `only_in_blob` `only_in_small`\n"
    repo = make_repo(tmp_path / "repo", {**files, "AGENTS.md": memory})
    monkeypatch.setattr(md, "STALE_FILE_BYTES", 4096)
    assert md.stale_findings(str(repo / "AGENTS.md"), memory) == [
        (3, "stale", "`only_in_big`: in no file of the repository; `only_in_blob`: in no file of the repository")]
