"""Patch shapes: `build` run from the root of a real git repository, the patch applied
with both `git apply` and `patch -p1`, each copy compared byte for byte with the result
written out by hand in the table below (original bytes + bullets where they belong, with
the file's own line ending)."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF, SCRIPT, main_process  # noqa: E402

B1 = "Never run the migration script against production because it drops the audit table."
B2 = "Always keep the cache in SQLite because it survives restarts and needs no server."
Z1 = "不要把密钥提交到仓库，因为仓库是公开的。"
Z2 = "永远不要在生产环境直接运行迁移脚本，因为它会删除审计表。"

# Bullets the user says as rules, so they pass SIGNAL, NOISE and the score with room.
EN = [
    {"role": "user", "text": B1},
    {"role": "assistant", "text": "Now let me look at the cache layer."},
    {"role": "user", "text": "OK. " + B2},
]
ZH = [
    {"role": "user", "text": Z1},
    {"role": "assistant", "text": "好的，我先看一下。"},
    {"role": "user", "text": "好的。" + Z2},
]
NOTHING = [
    {"role": "user", "text": "Can you look at the failing build?"},
    {"role": "assistant", "text": "Sure, the weather report module is green again."},
]


def bullets(*texts: str, eol: bytes = b"\n") -> bytes:
    return b"".join(b"- " + t.encode() + eol for t in texts)


EN_LF = bullets(B1, B2)
EN_CRLF = bullets(B1, B2, eol=b"\r\n")
ZH_LF = bullets(Z1, Z2)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-c", "core.autocrlf=false", *args], cwd=repo, env=env,
                          capture_output=True, timeout=60)


def make_repo(path: Path, files: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True)
    assert git(path, "init", "-q").returncode == 0
    for name, data in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for name, dest in (links or {}).items():
        os.symlink(dest, path / name)
    (path / ".keep").write_bytes(b"")
    assert git(path, "add", "-A").returncode == 0
    assert git(path, "commit", "-q", "-m", "init").returncode == 0
    return path


def write_transcript(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records))
    return path


def build(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MEMORY_DIFF, "build", *args], cwd=repo,
                          input=stdin, capture_output=True, timeout=60)


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of a working tree (outside .git), symlinks as `-> target`."""
    out = {}
    for path in sorted(repo.rglob("*")):
        if ".git" in path.relative_to(repo).parts:
            continue
        rel = path.relative_to(repo).as_posix()
        if path.is_symlink():
            out[rel] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            out[rel] = path.read_bytes()
    return out


def apply_both(repo: Path, patch: bytes, tmp: Path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """Apply `patch` with git apply in one copy and patch -p1 in another; both must succeed."""
    patch_file = tmp / "proposal.patch"
    patch_file.write_bytes(patch)
    with_git = tmp / "copy-git"
    with_patch = tmp / "copy-patch"
    shutil.copytree(repo, with_git, symlinks=True)
    shutil.copytree(repo, with_patch, symlinks=True)
    done = git(with_git, "apply", "--check", str(patch_file))
    assert done.returncode == 0, done.stderr.decode()
    done = git(with_git, "apply", str(patch_file))
    assert done.returncode == 0, done.stderr.decode()
    done = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-i", str(patch_file)],
                          cwd=with_patch, capture_output=True, timeout=60)
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    return snapshot(with_git), snapshot(with_patch)


def minus_lines(patch: bytes) -> list[bytes]:
    return [ln for ln in patch.split(b"\n") if ln.startswith(b"-") and not ln.startswith(b"--- ")]


# id, files in the repository, symlinks, transcript, build arguments,
# the changed files after applying (all other files must stay as they are),
# whether the single re-emit `-` line is expected.
CASES = [
    pytest.param({}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": EN_LF}, False, id="missing-file"),
    pytest.param({"AGENTS.md": b""}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": EN_LF}, False, id="empty-file"),
    pytest.param({"AGENTS.md": b"# Notes\n\n- Keep it short."}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\n\n- Keep it short.\n" + EN_LF}, True, id="no-final-newline"),
    pytest.param({"AGENTS.md": b"# Notes\r\n\r\n- Keep it short.\r\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\r\n\r\n- Keep it short.\r\n" + EN_CRLF}, False, id="crlf"),
    pytest.param({"AGENTS.md": b"# Notes\r\n\r\n- Keep it short."}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\r\n\r\n- Keep it short.\r\n" + EN_CRLF}, True,
                 id="crlf-no-final-newline"),
    pytest.param({"AGENTS.md": b"\xef\xbb\xbf# Notes\n\n- Keep it short.\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"\xef\xbb\xbf# Notes\n\n- Keep it short.\n" + EN_LF}, False, id="utf8-bom"),
    pytest.param({"AGENTS.md": b"\xef\xbb\xbf\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"\xef\xbb\xbf\n" + EN_LF}, False, id="utf8-bom-then-blank-line"),
    pytest.param({"AGENTS.md": "# 项目笔记\n\n- 使用 UTF-8 编码。\n".encode()}, {}, ZH, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": "# 项目笔记\n\n- 使用 UTF-8 编码。\n".encode() + ZH_LF}, False, id="non-ascii"),
    pytest.param({"team notes.md": b"# Notes\n"}, {}, EN, ["--memory", "team notes.md"],
                 {"team notes.md": b"# Notes\n" + EN_LF}, False, id="path-with-space"),
    pytest.param({"docs/agents/AGENTS.md": b"# Notes\n\n- Keep it short.\n"}, {}, EN,
                 ["--memory", "docs/agents/AGENTS.md"],
                 {"docs/agents/AGENTS.md": b"# Notes\n\n- Keep it short.\n" + EN_LF}, False, id="subfolder"),
    pytest.param({"AGENTS.md": b"# Notes\n"}, {"CLAUDE.md": "AGENTS.md"}, EN, ["--memory", "CLAUDE.md"],
                 {"AGENTS.md": b"# Notes\n" + EN_LF}, False, id="symlink-claude-to-agents"),
    pytest.param({"AGENTS.md": b"# Notes\n\n- Keep it short.\n\n\n\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\n\n- Keep it short.\n" + EN_LF + b"\n\n\n"}, False,
                 id="several-trailing-blank-lines"),
    pytest.param({"AGENTS.md": b"# Notes\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\n" + EN_LF}, False, id="one-line"),
    pytest.param({"AGENTS.md": b"# Notes"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\n" + EN_LF}, True, id="one-line-no-final-newline"),
    pytest.param({"AGENTS.md": b"# Notes\n\n- a\x0cb\xe2\x80\xa8c\xc2\x85d\x1ce\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\n\n- a\x0cb\xe2\x80\xa8c\xc2\x85d\x1ce\n" + EN_LF}, False,
                 id="splitlines-characters-inside-lines"),
    pytest.param({"ä notes.md": b"# Notes\n"}, {}, EN, ["--memory", "ä notes.md"],
                 {"ä notes.md": b"# Notes\n" + EN_LF}, False, id="non-ascii-path-with-space"),
    pytest.param({"my docs/AGENTS.md": b"# Notes\n"}, {}, EN, ["--memory", "my docs/AGENTS.md"],
                 {"my docs/AGENTS.md": b"# Notes\n" + EN_LF}, False, id="space-in-folder"),
    pytest.param({"AGENTS.md": b"\n\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": EN_LF + b"\n\n"}, False, id="only-blank-lines"),
    pytest.param({"AGENTS.md": b"1\n2\n3\n4\n5\n6\n7\n8\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"1\n2\n3\n4\n5\n6\n7\n8\n" + EN_LF}, False, id="longer-than-context"),
    # -- --section ------------------------------------------------------------------
    pytest.param({"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n\n## Style\n\n- Use black.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n" + EN_LF + b"\n## Style\n\n- Use black.\n"},
                 False, id="section-in-middle"),
    pytest.param({"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Gotchas"],
                 {"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n\n## Gotchas\n\n" + EN_LF},
                 False, id="section-missing"),
    pytest.param({}, {}, EN, ["--memory", "AGENTS.md", "--section", "Gotchas"],
                 {"AGENTS.md": b"## Gotchas\n\n" + EN_LF}, False, id="section-missing-file-missing"),
    pytest.param({"AGENTS.md": b"# Project\n\n## Build\n\n- Use make."}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Gotchas"],
                 {"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n\n## Gotchas\n\n" + EN_LF},
                 True, id="section-missing-no-final-newline"),
    pytest.param({"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n\n## Style\n\n- Use black.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Style"],
                 {"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n\n## Style\n\n- Use black.\n" + EN_LF},
                 False, id="section-at-end"),
    pytest.param({"AGENTS.md": b"## Build\n\n- Use make.\n\n## Style\n\n- Use black.\n\n\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Style"],
                 {"AGENTS.md": b"## Build\n\n- Use make.\n\n## Style\n\n- Use black.\n" + EN_LF + b"\n\n"},
                 False, id="section-at-end-trailing-blank-lines"),
    pytest.param({"AGENTS.md": b"## Build\n\n- Use make.\n\n### Details\n\n- Cache in tmp.\n\n## Style\n\n- Use black.\n"},
                 {}, EN, ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"## Build\n\n- Use make.\n\n### Details\n\n- Cache in tmp.\n" + EN_LF
                  + b"\n## Style\n\n- Use black.\n"}, False, id="section-nested-same-level-next"),
    pytest.param({"AGENTS.md": b"# A\n## Build\n- Use make.\n### Sub\n- Cache in tmp.\n# B\n- Other.\n"},
                 {}, EN, ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"# A\n## Build\n- Use make.\n### Sub\n- Cache in tmp.\n" + EN_LF + b"# B\n- Other.\n"},
                 False, id="section-nested-higher-level-next"),
    pytest.param({"AGENTS.md": b"## Build\n\n## Style\n\n- Use black.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"## Build\n\n" + EN_LF + b"\n## Style\n\n- Use black.\n"},
                 False, id="section-empty-then-blank-line"),
    pytest.param({"AGENTS.md": b"## Build\n## Style\n- Use black.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"## Build\n" + EN_LF + b"## Style\n- Use black.\n"},
                 False, id="section-empty-no-blank-line"),
    pytest.param({"AGENTS.md": b"## Build\r\n\r\n- Use make.\r\n\r\n## Style\r\n\r\n- Use black.\r\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"## Build\r\n\r\n- Use make.\r\n" + EN_CRLF + b"\r\n## Style\r\n\r\n- Use black.\r\n"},
                 False, id="section-crlf"),
    pytest.param({"AGENTS.md": b"## Build\r\n\r\n- Use make.\r\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Gotchas"],
                 {"AGENTS.md": b"## Build\r\n\r\n- Use make.\r\n\r\n## Gotchas\r\n\r\n" + EN_CRLF},
                 False, id="section-crlf-missing"),
    pytest.param({"AGENTS.md": b"# Project\n\n### BUILD NOTES:\n\n- Use make.\n\n### Style\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "build notes"],
                 {"AGENTS.md": b"# Project\n\n### BUILD NOTES:\n\n- Use make.\n" + EN_LF + b"\n### Style\n"},
                 False, id="section-level-case-punctuation"),
    pytest.param({"AGENTS.md": b"# Project\n\n#### Build ##\n- Use make.\n## Style\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "## build."],
                 {"AGENTS.md": b"# Project\n\n#### Build ##\n- Use make.\n" + EN_LF + b"## Style\n"},
                 False, id="section-closing-hashes-and-hash-argument"),
    pytest.param({"AGENTS.md": b"## Style\n\n```md\n## Build\n```\n\n## Build\n\n- Use make.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"## Style\n\n```md\n## Build\n```\n\n## Build\n\n- Use make.\n" + EN_LF},
                 False, id="section-heading-inside-fence-ignored"),
    pytest.param({"AGENTS.md": b"## Style\n\n````md\n```\n## Build\n```\n````\n\n## Build\n\n- Use make.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Build"],
                 {"AGENTS.md": b"## Style\n\n````md\n```\n## Build\n```\n````\n\n## Build\n\n- Use make.\n" + EN_LF},
                 False, id="section-heading-inside-nested-fence-ignored"),
    pytest.param({"AGENTS.md": "## 约定\n\n- 使用 UTF-8 编码。\n\n## 其他\n".encode()}, {}, ZH,
                 ["--memory", "AGENTS.md", "--section", "约定"],
                 {"AGENTS.md": "## 约定\n\n- 使用 UTF-8 编码。\n".encode() + ZH_LF + "\n## 其他\n".encode()},
                 False, id="section-non-ascii"),
    # -- no --section: a file with sections gets a section of its own ----------------
    pytest.param({"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n\n## Accessibility\n\n### Key Points\n\n"
                               b"- Keep contrast high.\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Project\n\n## Build\n\n- Use make.\n\n## Accessibility\n\n### Key Points\n\n"
                               b"- Keep contrast high.\n\n## Learned\n\n" + EN_LF}, False,
                 id="default-not-under-the-last-sub-heading"),
    pytest.param({"AGENTS.md": b"# Project\n\n## Learned\n\n- Old.\n\n## Style\n\n- Use black.\n"}, {}, EN,
                 ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Project\n\n## Learned\n\n- Old.\n" + EN_LF + b"\n## Style\n\n- Use black.\n"},
                 False, id="default-section-existing"),
    pytest.param({"AGENTS.md": b"# Project\n### Build\n- Use make.\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Project\n### Build\n- Use make.\n### Learned\n" + EN_LF}, False,
                 id="default-section-with-the-files-habits"),
    pytest.param({"AGENTS.md": b"# Notes\r\n\r\n## Build\r\n\r\n- Use make."}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\r\n\r\n## Build\r\n\r\n- Use make.\r\n\r\n## Learned\r\n\r\n" + EN_CRLF},
                 True, id="default-section-crlf-no-final-newline"),
    pytest.param({"AGENTS.md": b"# Notes\n\n- Keep it short.\n"}, {}, EN, ["--memory", "AGENTS.md"],
                 {"AGENTS.md": b"# Notes\n\n- Keep it short.\n" + EN_LF}, False, id="default-title-only-is-the-end"),
    pytest.param({"AGENTS.md": b"# Project\n\n### Build\n\n- Use make.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--section", "Gotchas"],
                 {"AGENTS.md": b"# Project\n\n### Build\n\n- Use make.\n\n### Gotchas\n\n" + EN_LF}, False,
                 id="section-missing-at-the-files-level"),
    # -- --seen ---------------------------------------------------------------------
    pytest.param({"AGENTS.md": b"# Notes\n", ".memory-seen.md": b"## Old\n\n- Something else.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--seen", ".memory-seen.md"],
                 {"AGENTS.md": b"# Notes\n" + EN_LF, ".memory-seen.md": b"## Old\n\n- Something else.\n" + EN_LF},
                 False, id="seen-file-plain-append"),
    pytest.param({"AGENTS.md": b"# Notes\n"}, {}, EN, ["--memory", "AGENTS.md", "--seen", ".memory-seen.md"],
                 {"AGENTS.md": b"# Notes\n" + EN_LF, ".memory-seen.md": EN_LF}, False, id="seen-missing"),
    pytest.param({"AGENTS.md": b"# Notes\n", ".memory-seen.md": bullets(B1)}, {}, EN,
                 ["--memory", "AGENTS.md", "--seen", ".memory-seen.md"],
                 {"AGENTS.md": b"# Notes\n" + bullets(B2), ".memory-seen.md": EN_LF}, False, id="seen-existing"),
    pytest.param({"AGENTS.md": b"# Notes\n", "memory/seen.md": b"- Something else entirely.\n"}, {}, EN,
                 ["--memory", "AGENTS.md", "--seen", "memory/seen.md", "--section", "Gotchas"],
                 {"AGENTS.md": b"# Notes\n\n## Gotchas\n\n" + EN_LF,
                  "memory/seen.md": b"- Something else entirely.\n" + EN_LF}, False, id="seen-existing-with-section"),
]


@pytest.mark.parametrize(("files", "links", "records", "args", "changed", "reemit"), CASES)
def test_patch_applies(tmp_path: Path, files: dict[str, bytes], links: dict[str, str],
                       records: list[dict[str, Any]], args: list[str], changed: dict[str, bytes],
                       reemit: bool) -> None:
    repo = make_repo(tmp_path / "repo", files, links)
    transcript = write_transcript(tmp_path / "session.jsonl", records)
    before = snapshot(repo)
    first = main_process(["build", str(transcript), *args], repo)  # main in this process, a row each
    assert first.returncode == 0, first.stderr.decode()
    assert first.stderr == b""
    patch = first.stdout
    assert patch

    # The preamble is `# ` lines, then git's headers, a/ b/ relative to the root.
    head, sep, _ = patch.partition(b"\ndiff --git ")
    assert sep and all(ln.startswith(b"# ") for ln in head.split(b"\n")), patch
    targets = re.findall(rb"^\+\+\+ b/(.*?)\t?$", patch, re.M)
    assert sorted(t.decode() for t in targets) == sorted(changed)

    # Only additions, except the one re-emitted last line of a file without a newline.
    minus = minus_lines(patch)
    if reemit:
        assert len(minus) == 1 and b"\n\\ No newline at end of file\n" in patch
    else:
        assert minus == []

    # Deterministic.
    again = build(repo, str(transcript), *args)
    assert again.stdout == patch

    # build wrote nothing.
    assert snapshot(repo) == before

    expected = {**before, **changed}
    by_git, by_patch = apply_both(repo, patch, tmp_path)
    assert by_git == expected
    assert by_patch == expected
    assert by_git == by_patch


def test_symlink_target_header(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": b"# Notes\n"}, {"CLAUDE.md": "AGENTS.md"})
    transcript = write_transcript(tmp_path / "s.jsonl", EN)
    patch = build(repo, str(transcript), "--memory", "CLAUDE.md").stdout
    assert b"--- a/AGENTS.md\n+++ b/AGENTS.md\n" in patch
    assert b"CLAUDE.md" not in patch.partition(b"\n--- ")[2]


def test_memory_given_from_subdirectory_is_relative_to_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"docs/AGENTS.md": b"# Notes\n"})
    transcript = write_transcript(tmp_path / "s.jsonl", EN)
    done = subprocess.run([*MEMORY_DIFF, "build", str(transcript), "--memory", "AGENTS.md"],
                          cwd=repo / "docs", capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert b"--- a/docs/AGENTS.md\n+++ b/docs/AGENTS.md\n" in done.stdout
    by_git, by_patch = apply_both(repo, done.stdout, tmp_path)
    assert by_git["docs/AGENTS.md"] == by_patch["docs/AGENTS.md"] == b"# Notes\n" + EN_LF


# -- nothing to propose ----------------------------------------------------------------

EMPTY_CASES = [
    pytest.param({"AGENTS.md": b"# Notes\n"}, NOTHING, [], id="no-signal"),
    pytest.param({"AGENTS.md": b"# Notes\n\n" + EN_LF}, EN, [], id="all-already-in-memory"),
    pytest.param({"AGENTS.md": b"# Notes\r\n\r\n" + EN_CRLF}, EN, [], id="all-already-in-crlf-memory"),
    pytest.param({"AGENTS.md": b"# Notes\n", "seen.md": EN_LF}, EN, ["--seen", "seen.md"], id="all-seen"),
    pytest.param({"AGENTS.md": b"# Notes\n"}, [], [], id="empty-transcript"),
]


@pytest.mark.parametrize(("files", "records", "args"), EMPTY_CASES)
@pytest.mark.parametrize("exit_code", [False, True], ids=["plain", "exit-code"])
def test_nothing_proposed_prints_nothing(tmp_path: Path, files: dict[str, bytes],
                                         records: list[dict[str, Any]], args: list[str],
                                         exit_code: bool) -> None:
    repo = make_repo(tmp_path / "repo", files)
    transcript = write_transcript(tmp_path / "s.jsonl", records)
    done = build(repo, str(transcript), "--memory", "AGENTS.md", *args,
                 *(["--exit-code"] if exit_code else []))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


@pytest.mark.parametrize(("records", "status"), [
    pytest.param(EN, 1, id="proposals"),
    pytest.param(NOTHING, 0, id="no-proposals"),
])
def test_exit_code(tmp_path: Path, records: list[dict[str, Any]], status: int) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": b"# Notes\n"})
    transcript = write_transcript(tmp_path / "s.jsonl", records)
    done = build(repo, str(transcript), "--memory", "AGENTS.md", "--exit-code")
    assert done.returncode == status
    assert bool(done.stdout) == bool(status)
    plain = build(repo, str(transcript), "--memory", "AGENTS.md")
    assert plain.returncode == 0
    assert plain.stdout == done.stdout


# -- the memory file is never written --------------------------------------------------

@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read-only"])
@pytest.mark.parametrize("extra", [
    pytest.param([], id="plain"),
    pytest.param(["--section", "Gotchas"], id="section"),
    pytest.param(["--json"], id="json"),
    pytest.param(["--explain"], id="explain"),
    pytest.param(["--stats", "--exit-code"], id="stats"),
])
def test_memory_file_untouched(tmp_path: Path, read_only: bool, extra: list[str]) -> None:
    original = b"# Notes\r\n\r\n- Keep it short."
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": original})
    memory = repo / "AGENTS.md"
    old = 1_000_000_000
    os.utime(memory, (old, old))
    if read_only:
        memory.chmod(0o444)
    transcript = write_transcript(tmp_path / "s.jsonl", EN)
    try:
        done = build(repo, str(transcript), "--memory", "AGENTS.md", *extra)
        assert done.returncode in (0, 1), done.stderr.decode()
        assert done.stdout
        assert b"Traceback" not in done.stderr
        info = memory.stat()
        assert memory.read_bytes() == original
        assert info.st_mtime == old
        assert stat.S_IMODE(info.st_mode) == (0o444 if read_only else stat.S_IMODE(info.st_mode))
        assert sorted(p.name for p in repo.iterdir()) == [".git", ".keep", "AGENTS.md"]
    finally:
        memory.chmod(0o644)


def _open_calls(tree: ast.AST) -> list[ast.Call]:
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ("open", "fdopen"):
                calls.append(node)
    return calls


def test_source_never_opens_for_writing() -> None:
    source = SCRIPT.read_text(encoding="utf-8")
    tree = ast.parse(source)
    # The one writer: the cache's _atomic_write, into memory-diff/ in the git directory
    # (it refuses any other folder). Its calls are checked below; nothing else writes.
    writer = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_atomic_write")
    inside_writer = set(range(writer.lineno, (writer.end_lineno or writer.lineno) + 1))
    calls = [c for c in _open_calls(tree) if c.lineno not in inside_writer]
    assert calls, "expected some open() calls"
    for call in calls:
        func = call.func
        where = f"memory_diff.py:{call.lineno}"
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "os" \
                and func.attr == "open":
            # os.open with flags: allowed to silence stdout with /dev/null, and to read
            # (O_RDONLY with no flag that writes, creates or truncates).
            first = call.args[0] if call.args else None
            if isinstance(first, ast.Attribute) and first.attr == "devnull":
                continue
            flags = {n.attr for n in ast.walk(call.args[1])
                     if isinstance(n, ast.Attribute)} | {n.value for n in ast.walk(call.args[1])
                                                         if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            assert "O_RDONLY" in flags and not flags & {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}, where
            continue
        mode = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "mode"), None)
        if mode is None:
            continue  # text read
        assert isinstance(mode, ast.Constant) and isinstance(mode.value, str), f"{where}: mode not a literal"
        assert not set(mode.value) & set("wax+"), f"{where}: open mode {mode.value!r}"
    # The textual view too: any open(..., "w"/"a"/"x"/"+") spelled some other way.
    lines = source.split("\n")
    outside = "\n".join(line for number, line in enumerate(lines, 1) if number not in inside_writer)
    for match in re.finditer(r"\bopen\(([^()]*)\)", outside):
        modes = re.findall(r"""["']([rwaxbt+]{1,3})["']""", match.group(1))
        assert not any(set(m) & set("wax+") for m in modes), match.group()
    for forbidden in ("write_text(", "write_bytes(", "os.replace(", "os.rename(", "shutil.", "mkstemp(", "fdopen("):
        assert forbidden not in outside, forbidden
    # _atomic_write is called only with the cache's own folder.
    writes = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
              and n.func.id == "_atomic_write"]
    assert writes and all(ast.unparse(n.args[0]) == "self.folder" for n in writes), [ast.unparse(n) for n in writes]


def test_no_apply_flag() -> None:
    source = SCRIPT.read_text(encoding="utf-8")
    assert "--apply" not in source
    done = subprocess.run([*MEMORY_DIFF, "build", "--help"], capture_output=True, timeout=60)
    assert done.returncode == 0
    assert b"--apply" not in done.stdout
    bad = subprocess.run([*MEMORY_DIFF, "build", "--apply"], capture_output=True, timeout=60)
    assert bad.returncode == 2


@pytest.mark.parametrize("original", [
    pytest.param(b"\xef\xbb\xbf", id="bom-only"),
    pytest.param(b"\xef\xbb\xbf\n", id="bom-newline"),
    pytest.param(b"\xef\xbb\xbf\n\n", id="bom-blank-lines"),
    pytest.param(b"\xef\xbb\xbf\r\n", id="bom-crlf"),
])
def test_bom_stays_first(tmp_path: Path, original: bytes) -> None:
    # Notepad saves an empty UTF-8 file as a lone BOM. Wherever the bullets go, the BOM
    # must remain the file's first bytes and must not appear again inside it.
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": original})
    transcript = write_transcript(tmp_path / "s.jsonl", EN)
    done = build(repo, str(transcript), "--memory", "AGENTS.md")
    assert done.returncode == 0, done.stderr.decode()
    by_git, by_patch = apply_both(repo, done.stdout, tmp_path)
    assert by_git["AGENTS.md"] == by_patch["AGENTS.md"]
    result = by_git["AGENTS.md"]
    assert result.startswith(b"\xef\xbb\xbf"), result
    assert result.count(b"\xef\xbb\xbf") == 1, result
    assert B1.encode() in result and B2.encode() in result


# -- a reviewer rejects a bullet by deleting its `+` line -------------------------------

def reject(patch: bytes, target: str, *texts: str) -> bytes:
    """The patch with the `+- TEXT` lines deleted from `target`'s part only, as a reviewer
    edits it in an editor."""
    parts = re.split(rb"(?m)^(?=diff --git )", patch)
    out = []
    for part in parts:
        if part.startswith(f"diff --git a/{target} ".encode()):
            for text in texts:
                line = b"+- " + text.encode() + b"\n"
                assert line in part, (target, text)
                part = part.replace(line, b"", 1)
        out.append(part)
    return b"".join(out)


def git_apply(repo: Path, patch: bytes, tmp: Path, *flags: str) -> subprocess.CompletedProcess[bytes]:
    patch_file = tmp / "edited.patch"
    patch_file.write_bytes(patch)
    return git(repo, "apply", *flags, str(patch_file))


# id, files, build arguments, the bullets deleted from the memory file's part, the result.
EDITED = [
    pytest.param({"AGENTS.md": b"# Notes\n\n- Keep it short.\n"}, [], [B2],
                 {"AGENTS.md": b"# Notes\n\n- Keep it short.\n" + bullets(B1)}, id="one-file"),
    pytest.param({"AGENTS.md": b"# Notes\n\n- Keep it short.\n"}, ["--seen", ".memory-diff-seen.md"], [B1],
                 {"AGENTS.md": b"# Notes\n\n- Keep it short.\n" + bullets(B2), ".memory-diff-seen.md": EN_LF},
                 id="two-files-new-seen"),
    pytest.param({"AGENTS.md": b"# Notes\n", ".memory-diff-seen.md": b"- Older.\n"},
                 ["--seen", ".memory-diff-seen.md"], [B1, B2],
                 {"AGENTS.md": b"# Notes\n", ".memory-diff-seen.md": b"- Older.\n" + EN_LF},
                 id="two-files-every-bullet-rejected"),
    pytest.param({}, ["--seen", ".memory-diff-seen.md"], [B1, B2],
                 {"AGENTS.md": b"", ".memory-diff-seen.md": EN_LF}, id="new-file-every-bullet-rejected"),
    pytest.param({"AGENTS.md": b"# Notes"}, ["--seen", ".memory-diff-seen.md"], [B2],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1), ".memory-diff-seen.md": EN_LF},
                 id="no-final-newline"),
]


@pytest.mark.parametrize(("files", "args", "rejected", "expected"), EDITED)
def test_edited_patch_applies_with_recount(tmp_path: Path, files: dict[str, bytes], args: list[str],
                                           rejected: list[str], expected: dict[str, bytes]) -> None:
    repo = make_repo(tmp_path / "repo", files)
    transcript = write_transcript(tmp_path / "session.jsonl", EN)
    done = build(repo, str(transcript), "--memory", "AGENTS.md", *args)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.count(b"\ndiff --git ") == 1 + bool(args)
    assert b"# to reject a bullet: delete its + line" in done.stdout
    edited = reject(done.stdout, "AGENTS.md", *rejected)
    # Line counts no longer match: plain git apply refuses, --recount applies.
    assert git_apply(repo, edited, tmp_path, "--check").returncode != 0
    applied = git_apply(repo, edited, tmp_path, "--recount")
    assert applied.returncode == 0, applied.stderr.decode()
    after = snapshot(repo)
    assert {k: after.get(k) for k in expected} == expected
