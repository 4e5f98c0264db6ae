"""mkdocs hooks of the documentation site (mkdocs.yml): files of the repository outside docs/
that a page links to (`../scenarios/...`, `../python/fctlab/benchmarks/...`) are published
under `_repo/` beside the pages, and the page's links are pointed there, so that the site's
links work as the docs' do in a clone. A link to a file that does not exist is left as it is,
for the strict build to report."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = "_repo"
#: a Markdown link's target that leaves docs/ (the part before any #anchor)
OUTSIDE = re.compile(r"\]\((\.\./[^)#\s]+)")


def _outside_target(page_src: Path, target: str):
    """The repository file a link of the page at `page_src` names, if it is outside docs/."""
    src = (page_src.parent / target).resolve()
    docs = ROOT / "docs"
    if src.is_file() and ROOT in src.parents and docs not in src.parents:
        return src.relative_to(ROOT).as_posix()
    return None


def on_files(files, config):
    seen = set()
    for page in list(files.documentation_pages()):
        src = Path(page.abs_src_path)
        for target in OUTSIDE.findall(src.read_text(encoding="utf-8")):
            rel = _outside_target(src, target)
            if rel and rel not in seen:
                seen.add(rel)
                files.append(File.generated(config, f"{PUBLISHED}/{rel}", abs_src_path=str(ROOT / rel)))
    return files


def on_page_markdown(markdown, page, config, files):
    src = Path(page.file.abs_src_path)
    here = posixpath.dirname(page.file.src_uri) or "."

    def point(m):
        target = (src.parent / m.group(1)).resolve()
        rel = _outside_target(src, m.group(1))
        if rel is not None:
            return "](" + posixpath.relpath(f"{PUBLISHED}/{rel}", here)
        docs = ROOT / "docs"
        if target.exists() and docs in target.parents:  # a published file's link back into docs/
            return "](" + posixpath.relpath(target.relative_to(docs).as_posix(), here)
        return m.group(0)

    return OUTSIDE.sub(point, markdown)
