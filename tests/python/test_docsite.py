"""The documentation site (mkdocs.yml, `make docs-site`) builds with no warning from docs/, and
a broken link or anchor fails its build."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _build(root: Path, out: Path) -> subprocess.CompletedProcess:
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("mkdocs is not installed in this environment (requirements-dev.txt has it)")
    mkdocs = str(Path(sys.executable).parent / "mkdocs")
    return subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(out)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_site_builds_with_no_warning_and_publishes_the_files_pages_link_to(tmp_path):
    p = _build(ROOT, tmp_path / "site")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "site" / "validation.html").is_file()
    # a scenario file validation.md links to, published beside the pages and linked there
    assert (tmp_path / "site" / "_repo" / "scenarios" / "crosscheck" / "ns2" / "incast.toml").is_file()
    assert 'href="_repo/scenarios/crosscheck/ns2/incast.toml"' in (tmp_path / "site" / "validation.html").read_text()


@pytest.mark.parametrize(
    "link", ["[gone](no_such_page.md)", "[gone](scenarios.md#no-such-anchor)", "[gone](../no/such.toml)"]
)
def test_a_broken_link_fails_the_build(tmp_path, link):
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", root)
    shutil.copytree(ROOT / "scripts", root / "scripts")
    shutil.copytree(ROOT / "scenarios", root / "scenarios")
    shutil.copytree(ROOT / "python" / "fctlab" / "benchmarks", root / "python" / "fctlab" / "benchmarks")
    shutil.copytree(ROOT / "docs", root / "docs")
    index = root / "docs" / "index.md"
    index.write_text(index.read_text() + f"\nSee {link}.\n")
    p = _build(root, tmp_path / "site")
    assert p.returncode != 0 and "gone" not in p.stdout, (p.returncode, p.stderr[-500:])
    assert "index.md" in p.stderr, p.stderr[-500:]
