"""Machine instructions of a Python command, counted by valgrind's callgrind: a figure that does not move
with the load of a shared machine, where timings and a profiler's view of many small calls mislead.

The benchmarks count a run of N documents and a run of none, and report the difference per document.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def require_valgrind() -> str:
    """valgrind's path; exits with one line when there is none."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    return valgrind


def count_instructions(argv: list[str], code: Path | None = None) -> int:
    """Instructions of ``python argv...`` under callgrind (hash seed fixed), with the package of checkout
    ``code`` first on the path (None: the one installed). Exits with one line when valgrind is missing or
    the command fails."""
    valgrind = require_valgrind()
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    # the interpreter itself, not a launcher script that would start it in a child valgrind does not follow
    python = os.path.realpath(sys.executable)
    cmd = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", python, *argv]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    found = [line for line in done.stderr.splitlines() if "Collected :" in line]
    if done.returncode or not found:
        sys.exit(f"valgrind failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found[-1].rsplit(":", 1)[1].strip())


def per_document(argv_of: dict[int, list[str]], n: int, code: Path | None = None) -> float:
    """Instructions per document: the run of ``n`` documents less the run of none (``argv_of[n]`` and
    ``argv_of[0]``), which loads everything but decides nothing."""
    return (count_instructions(argv_of[n], code) - count_instructions(argv_of[0], code)) / n


def report(heading: str, argv_of: Callable[[int], list[str]], n: int, baseline: Path | None) -> float:
    """Print ``heading``, then the instructions per document of this checkout's package and, with
    ``baseline``, of that checkout's (``argv_of(m)``: the command that handles the first ``m`` documents);
    this checkout's figure is returned."""
    print(heading)
    ours = 0.0
    for name, code in (("this checkout", None), ("baseline", baseline)):
        if name == "baseline" and code is None:
            continue
        per_doc = per_document({m: argv_of(m) for m in (n, 0)}, n, code)
        ours = per_doc if code is None else ours
        print(f"{name}{'' if code is None else f' ({code})'}: {per_doc:,.0f} instructions per document")
    return ours
