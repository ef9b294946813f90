"""README's set-up commands are the contract with users and CI: keep them true."""

import re
from pathlib import Path

from support import tiers

ROOT = Path(__file__).resolve().parents[1]


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_readme_is_a_path_main_job_then_the_result_then_the_tests() -> None:
    """The first commands: install and deduplicate, look at what that wrote, then the test suite."""
    blocks = bash_blocks()
    assert len(blocks) >= 4
    assert "fingerprint-indexer dedupe" in blocks[0] and "pip install" in blocks[0]
    store = re.search(r"--store (\S+)", blocks[0])
    assert store is not None and blocks[1].strip() == f"fingerprint-indexer explore {store.group(1)}"
    assert "pytest" in blocks[2] and "pip install" in blocks[2]


def test_readme_says_what_the_product_does_in_five_lines() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = text.split("\n\n")[1]  # the paragraph after the title
    assert not first.startswith("#") and len(first.splitlines()) <= 5


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert bash_blocks()[2].strip() in ci


def test_readme_gives_the_everyday_tier_after_the_whole_suite() -> None:
    """The everyday command selects the tier that tests/test_tiers.py checks."""
    assert bash_blocks()[3].strip() == f"python3 -m pytest -m {tiers.FAST} -n 2"
