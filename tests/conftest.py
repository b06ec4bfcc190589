"""The suite must leave this repository's git directory without a cache of memory-diff's
(tests that run `build` here pass --no-cache; the others run in temporary repositories)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import memory_diff  # noqa: E402


def own_cache() -> Path | None:
    git_dir = memory_diff.git_dir(str(ROOT))
    return Path(git_dir) / memory_diff.CACHE_FOLDER if git_dir else None


def pytest_sessionstart(session: pytest.Session) -> None:
    folder = own_cache()
    session.config.stash[CACHE_BEFORE] = folder is not None and folder.exists()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    folder = own_cache()
    if folder is not None and folder.exists() and not session.config.stash[CACHE_BEFORE]:
        sys.stderr.write(f"\nA test wrote a memory-diff cache in this repository: {folder}\n")
        session.exitstatus = 1


CACHE_BEFORE = pytest.StashKey[bool]()
