"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit (`pre-commit try-repo`).

The repository under test is a copy of this working tree (tracked files and untracked ones
that are not ignored), committed in a temporary git repository: try-repo on the working
tree itself would leave out untracked files such as a new .pre-commit-hooks.yaml.

The review sequence below is the one README's workflow section tells a person to type.
Skipped when pre-commit or git is not installed. try-repo builds the hook's Python
environment on each call, in a store of its own; it needs PyPI (or a warm pip cache) for
setuptools.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if shutil.which("pre-commit") is None or shutil.which("git") is None:
    pytest.skip("pre-commit and git are needed", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF, SCRIPT  # noqa: E402
sys.path.insert(0, str(ROOT))

import memory_diff as md  # noqa: E402

RULE = "Never push directly to main because the release job deploys every commit."
CHOICE = "Always keep the changelog in CHANGELOG.md because the release notes are generated from it."
LATER = "Always bump the schema version when a migration renames a column, because old clients read it."
FOURTH = "Never log request bodies in the API gateway because they carry customer tokens."


def run(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def git(cwd: Path, *args: str) -> str:
    return run(["git", *args], cwd).stdout


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree, committed, so try-repo sees exactly what is on disk."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-q", "--no-verify", "-m", "working tree"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
    return repo


@pytest.fixture(scope="session")
def caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's store, pip's and virtualenv's caches, shared by the tests: the hook's
    environment is built once."""
    return tmp_path_factory.mktemp("caches")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caches: Path) -> Path:
    """A git repository with a committed AGENTS.md and the team's config, in a HOME of its
    own so that only the sessions planted here are discovered."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME",
                 "PRE_COMMIT_ALLOW_NO_CONFIG", "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PRE_COMMIT_HOME", str(caches / "pre-commit"))
    monkeypatch.setenv("PIP_CACHE_DIR", str(caches / "pip"))
    monkeypatch.setenv("VIRTUALENV_OVERRIDE_APP_DATA", str(caches / "virtualenv"))
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("PRE_COMMIT_COLOR", "never")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
    repo = (tmp_path / "project").resolve()
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "AGENTS.md").write_text("# AGENTS.md\n\n- Run `make test` before opening a pull request.\n")
    (repo / ".memory-diff.toml").write_text('memory = "AGENTS.md"\nseen = ".memory-diff-seen.md"\n')
    git(repo, "add", "AGENTS.md", ".memory-diff.toml")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def plant_session(repo: Path, *user_texts: str, session: str = "3f1c2a9e-5b7d-4e21-9c0a-7d2e8f1b6a40") -> Path:
    """A Claude Code session for `repo`, where Claude Code keeps it: the user's messages,
    each answered by the assistant."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(repo))
    folder = Path(os.environ["HOME"]) / ".claude" / "projects" / slug
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    records = []
    for number, text in enumerate(user_texts):
        records.append({"type": "user", "cwd": str(repo), "isSidechain": False,
                        "sessionId": session,
                        "timestamp": f"2026-02-01T10:0{number}:00.000Z",
                        "message": {"role": "user", "content": text}})
        records.append({"type": "assistant", "cwd": str(repo), "isSidechain": False,
                        "timestamp": f"2026-02-01T10:0{number}:30.000Z",
                        "message": {"role": "assistant", "model": "claude-sonnet-4-5",
                                    "content": [{"type": "text", "text": "Understood."}]}})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def try_repo(repo: Path, hook_repo: Path, hook: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit try-repo`, but with the hook repository pinned at its commit in a config
    outside `repo`: pre-commit then builds the hook's environment once for all the tests,
    where try-repo builds it on every call."""
    config = repo.parent / "try-repo.yaml"
    sha = git(hook_repo, "rev-parse", "HEAD").strip()
    config.write_text(f"repos:\n-   repo: {hook_repo}\n    rev: {sha}\n    hooks:\n"
                      "    -   id: memory-diff\n    -   id: memory-diff-lint\n")
    proc = run(["pre-commit", "run", "-c", str(config), hook, "--verbose", *args], repo, check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc


def memory_diff(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([*MEMORY_DIFF, *args], repo)


def test_build_hook_stops_a_commit_only_while_proposals_are_unreviewed(project: Path, hook_repo: Path) -> None:
    plant_session(project, RULE, CHOICE)

    # A commit is stopped, and the hook's output is the proposal itself.
    proc = try_repo(project, hook_repo, "memory-diff")
    assert proc.returncode == 1, proc.stdout
    assert f"+- {RULE}" in proc.stdout
    assert f"+- {CHOICE}" in proc.stdout

    # README's workflow, from the repository root: build the patch, apply it, stage both files.
    patch = project / "proposed.diff"
    patch.write_text(memory_diff(project, "build").stdout)
    assert "+++ b/AGENTS.md" in patch.read_text() and "+++ b/.memory-diff-seen.md" in patch.read_text()
    git(project, "apply", "proposed.diff")
    patch.unlink()

    # Applied but not staged: pre-commit stashes the unstaged AGENTS.md and reads the
    # committed one, while the new seen file, untracked, is not stashed and hides the
    # proposals. The hook passes, and the commit would carry neither file: this is why
    # the README says to stage both.
    assert git(project, "status", "--porcelain") == " M AGENTS.md\n?? .memory-diff-seen.md\n"
    unstaged = try_repo(project, hook_repo, "memory-diff")
    assert "Stashing unstaged files" in unstaged.stdout
    assert unstaged.returncode == 0, unstaged.stdout
    assert git(project, "status", "--porcelain") == " M AGENTS.md\n?? .memory-diff-seen.md\n"

    git(project, "add", "AGENTS.md", ".memory-diff-seen.md")
    proc = try_repo(project, hook_repo, "memory-diff")
    assert proc.returncode == 0, proc.stdout
    git(project, "commit", "-q", "-m", "AGENTS.md: reviewed memory-diff proposals")
    assert f"- {RULE}\n" in (project / "AGENTS.md").read_text()

    # A bullet the team does not want is deleted by hand; the seen file keeps it from
    # being proposed again.
    memory = project / "AGENTS.md"
    memory.write_text(memory.read_text().replace(f"- {CHOICE}\n", ""))
    git(project, "commit", "-q", "-am", "AGENTS.md: drop the changelog bullet")
    proc = try_repo(project, hook_repo, "memory-diff")
    assert proc.returncode == 0, proc.stdout
    assert CHOICE not in proc.stdout

    # A new decision in a session stops the next commit again, with only the new bullet.
    plant_session(project, RULE, CHOICE, LATER)
    proc = try_repo(project, hook_repo, "memory-diff")
    assert proc.returncode == 1, proc.stdout
    assert f"+- {LATER}" in proc.stdout
    assert f"+- {RULE}" not in proc.stdout and f"+- {CHOICE}" not in proc.stdout

    # README: reject a bullet by deleting its + line from the memory file's part of the
    # patch only, and apply with --recount; the seen file records it as rejected.
    plant_session(project, RULE, CHOICE, LATER, FOURTH)
    patch = memory_diff(project, "build").stdout
    cut = patch.index("diff --git a/.memory-diff-seen.md ")
    memory_part, seen_part = patch[:cut], patch[cut:]
    assert f"+- {LATER}\n" in memory_part and f"+- {FOURTH}\n" in memory_part
    (project / "proposed.diff").write_text(memory_part.replace(f"+- {LATER}\n", "") + seen_part)
    git(project, "apply", "--recount", "proposed.diff")
    (project / "proposed.diff").unlink()
    git(project, "add", "AGENTS.md", ".memory-diff-seen.md")
    proc = try_repo(project, hook_repo, "memory-diff")
    assert proc.returncode == 0, proc.stdout
    git(project, "commit", "-q", "-m", "AGENTS.md: one of two proposals taken")
    assert LATER not in (project / "AGENTS.md").read_text() and f"- {FOURTH}\n" in (project / "AGENTS.md").read_text()
    assert f"- {LATER}\n" in (project / ".memory-diff-seen.md").read_text()


def test_lint_hook_checks_memory_files_only(project: Path, hook_repo: Path) -> None:
    address = "jane.doe@acme-corp.io"
    (project / "AGENTS.md").write_text(f"# AGENTS.md\n\n- Ask {address} before rotating the deploy keys.\n")
    (project / "notes.md").write_text(f"Ask {address} about the deploy keys.\n")
    git(project, "add", "AGENTS.md", "notes.md")

    proc = try_repo(project, hook_repo, "memory-diff-lint")
    assert proc.returncode == 1, proc.stdout
    assert "AGENTS.md:3: pii: e-mail address (withheld)" in proc.stdout
    assert "notes.md" not in proc.stdout
    assert address not in proc.stdout + proc.stderr

    (project / "AGENTS.md").write_text("# AGENTS.md\n\n- Ask the release owner before rotating the deploy keys.\n")
    git(project, "add", "AGENTS.md")
    proc = try_repo(project, hook_repo, "memory-diff-lint")
    assert proc.returncode == 0, proc.stdout


# -- adopting the hook on a repository with a backlog -------------------------------------

# Twelve distinct rules (near-duplicates would be one proposal).
BACKLOG = [
    "Never edit the generated protobuf stubs by hand because the build overwrites them.",
    "Always run database migrations inside a transaction so a failure leaves no half-applied schema.",
    "Never commit the local .env file because it holds each developer's own credentials.",
    "Always pin the Go toolchain in go.mod since CI and laptops drifted apart twice.",
    "Never call os.Exit outside main.go because deferred cleanup would be skipped.",
    "Always tag releases from the release branch so hotfixes never ship unreviewed code.",
    "Never log request bodies in the payment service because they contain card numbers.",
    "Always use UTC timestamps in the audit table since reports are compared across regions.",
    "Never share one HTTP client between tenants because its cookie jar leaks sessions.",
    "Always vendor the fonts into assets/ so offline builds of the docs site still work.",
    "Never retry webhook deliveries inline because the provider already retries with backoff.",
    "Always keep fixtures under tests/data since the packaging step excludes other folders.",
]
LOCAL_HOOKS = """repos:
-   repo: local
    hooks:
    -   id: memory-diff
        name: memory-diff
        entry: {python} {script} build --exit-code
        language: system
        pass_filenames: false
        always_run: true
"""


def commit(repo: Path, message: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})


def test_adoption_on_a_backlog_baseline_then_one_new_proposal(project: Path) -> None:
    """The README's adoption section, with pre-commit installed as a git hook (a local hook
    running this checkout: no network): a backlog over max-add, a baseline, then one new
    session, its one proposal applied, and the commit passes."""
    (project / ".pre-commit-config.yaml").write_text(LOCAL_HOOKS.format(python=sys.executable, script=SCRIPT))
    git(project, "add", ".pre-commit-config.yaml")
    git(project, "commit", "-q", "--no-verify", "-m", "pre-commit")
    run(["pre-commit", "install"], project)
    plant_session(project, *BACKLOG)
    (project / "notes.txt").write_text("work\n")
    git(project, "add", "notes.txt")

    # The backlog stops the commit; the patch holds max-add bullets and says more wait.
    stopped = commit(project, "work")
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    over = len(BACKLOG) - md.DEFAULT_MAX_ADD
    assert f"# {over} more pending over the cap of {md.DEFAULT_MAX_ADD}" in stopped.stdout + stopped.stderr
    # The hook can be skipped once.
    skipped = commit(project, "work, hook skipped", SKIP="memory-diff")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    (project / "notes.txt").write_text("more work\n")
    git(project, "add", "notes.txt")

    # Baseline the backlog: a patch to the seen file only, applied and staged.
    baseline = memory_diff(project, "build", "--baseline").stdout
    assert "+++ b/.memory-diff-seen.md" in baseline and "AGENTS.md" not in baseline
    (project / "baseline.diff").write_text(baseline)
    git(project, "apply", "baseline.diff")
    (project / "baseline.diff").unlink()
    git(project, "add", ".memory-diff-seen.md")
    done = commit(project, "memory-diff: baseline")
    assert done.returncode == 0, done.stdout + done.stderr

    # One new session brings one proposal: the commit stops, the patch is applied.
    plant_session(project, LATER, session="9b2d4c6e-1a3f-4e5d-8c7b-6a5f4e3d2c1b")
    (project / "notes.txt").write_text("new work\n")
    git(project, "add", "notes.txt")
    stopped = commit(project, "new work")
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert f"+- {LATER}" in stopped.stdout + stopped.stderr
    assert "1 proposed from" in stopped.stdout + stopped.stderr
    proposed = memory_diff(project, "build").stdout
    assert proposed.count("\n+- ") == 2  # the memory file and the seen file
    (project / "proposed.diff").write_text(proposed)
    git(project, "apply", "proposed.diff")
    (project / "proposed.diff").unlink()
    git(project, "add", "AGENTS.md", ".memory-diff-seen.md")
    done = commit(project, "new work, AGENTS.md: reviewed memory-diff proposals")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "AGENTS.md").read_text().endswith(f"- {LATER}\n")
    assert git(project, "status", "--porcelain") == ""


def readme_snippet() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## pre-commit\n", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_readme_snippet_runs_from_a_clone_at_a_sha(project: Path, hook_repo: Path) -> None:
    """The README's .pre-commit-config.yaml as a user copies it, with a local clone of
    memory-diff as `repo:` and a commit sha of it as `rev:`."""
    clone = project.parent / "memory-diff-clone"
    run(["git", "clone", "-q", str(hook_repo), str(clone)], project.parent)
    sha = git(clone, "rev-parse", "HEAD").strip()
    snippet = readme_snippet()
    # No release tag is published: the README pins a full commit sha, as pre-commit needs.
    assert re.search(r"(?m)^    rev: [0-9a-f]{40}(?:\s|$)", snippet), snippet
    config, repos = re.subn(r"(?m)^(-   repo: )\S+", lambda m: m.group(1) + str(clone), snippet)
    config, revs = re.subn(r"(?m)^(    rev: )\S+", lambda m: m.group(1) + sha, config)
    assert (repos, revs) == (1, 1), snippet
    (project / ".pre-commit-config.yaml").write_text(config)
    git(project, "add", ".pre-commit-config.yaml")
    plant_session(project, RULE)

    proc = run(["pre-commit", "run", "--all-files"], project, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"+- {RULE}" in proc.stdout
    assert "memory-diff lint" in proc.stdout and "Passed" in proc.stdout  # the lint hook passes on AGENTS.md

    # README: re-run the build and apply its output; stage both files.
    (project / "proposed.diff").write_text(memory_diff(project, "build").stdout)
    git(project, "apply", "proposed.diff")
    (project / "proposed.diff").unlink()
    git(project, "add", "AGENTS.md", ".memory-diff-seen.md")
    proc = run(["pre-commit", "run", "--all-files"], project, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
