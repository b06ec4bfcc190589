"""self_test.py is the smoke suite a user runs without pytest; run it here so it cannot rot."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_self_test_passes(tmp_path: Path) -> None:
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "self_test.py")], cwd=tmp_path,
                          capture_output=True, timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    match = re.fullmatch(rb"self_test: (\d+) passed, 0 failed\n", done.stdout)
    assert match, done.stdout
    assert int(match.group(1)) >= 15
    assert elapsed < 5, elapsed


def test_self_test_is_stdlib_only() -> None:
    source = (ROOT / "self_test.py").read_text(encoding="utf-8")
    imported = set(re.findall(r"^(?:import|from) ([\w.]+)", source, re.M))
    roots = {name.split(".")[0] for name in imported}
    assert roots - {"__future__", "memory_diff"} <= set(sys.stdlib_module_names)
    assert "pytest" not in source
