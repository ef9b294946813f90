"""README's set-up commands are the contract with users and CI: keep them true."""

import re
from pathlib import Path

from support import tiers

ROOT = Path(__file__).resolve().parents[1]


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_readme_opens_with_two_commands() -> None:
    blocks = bash_blocks()
    assert len(blocks) >= 2
    assert "fingerprint-indexer" in blocks[0] and "pip install" in blocks[0]
    assert "pytest" in blocks[1] and "pip install" in blocks[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert bash_blocks()[1].strip() in ci


def test_readme_gives_the_everyday_tier_after_the_whole_suite() -> None:
    """The everyday command selects the tier that tests/test_tiers.py checks."""
    assert bash_blocks()[2].strip() == f"python3 -m pytest -m {tiers.FAST}"
