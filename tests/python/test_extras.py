"""The core package needs numpy, pandas and pyarrow only; plots, queries, the kernel side and
Dask clusters come with extras (``fctlab[plot]``, ``[query]``, ``[kernel]``, ``[cluster]``,
``[all]``). A missing extra is one line naming the ``pip install`` that brings it (exit status
2), never a traceback; `make setup` installs every extra for the tests."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fctlab
from fctlab._extras import EXTRAS, MissingExtra, extra

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "fctlab"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    """A requirement's distribution name (with its extras), normalized: `dask[distributed]`."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?", requirement)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() + (m.group(2) or "")


def test_the_core_needs_numpy_pandas_and_pyarrow_only():
    assert {_name(r) for r in PROJECT["dependencies"]} == {"numpy", "pandas", "pyarrow", "tomli"}
    assert [r for r in PROJECT["dependencies"] if _name(r) == "tomli"] == ["tomli>=2; python_version < '3.11'"]


def test_each_extra_installs_the_library_its_message_names_and_all_installs_them_all():
    extras = PROJECT["optional-dependencies"]
    for name, (_, dist, _) in EXTRAS.items():
        assert [_name(r) for r in extras[name]] == [dist], name
    assert sorted(extras["all"]) == sorted(r for name in EXTRAS for r in extras[name])
    assert set(extras) == set(EXTRAS) | {"all", "test"}


def test_make_setup_installs_the_core_every_extra_and_the_test_tools():
    """scripts/setup.sh installs requirements-dev.txt: the tests need every extra."""
    lines = (ROOT / "requirements-dev.txt").read_text().splitlines()
    dev = {_name(line) for line in lines if line.strip() and not line.lstrip().startswith("#")}
    wanted = PROJECT["dependencies"] + [r for rs in PROJECT["optional-dependencies"].values() for r in rs]
    assert {_name(r) for r in wanted} <= dev


def _imports_outside_their_extra(path: Path) -> list:
    """(line, module) of every import of an extra's library in `path` that does not sit in
    ``with extra(NAME):`` of that library's extra."""
    owner = {mod: name for name, (_, _, mods) in EXTRAS.items() for mod in mods}
    out = []

    def visit(node, inside: frozenset):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "extra" and call.args:
                    inside = inside | {ast.literal_eval(call.args[0])}
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            mods = [node.module or ""]
        else:
            mods = []
        out.extend((node.lineno, m) for m in mods if m.split(".")[0] in owner and owner[m.split(".")[0]] not in inside)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(path.read_text()), frozenset())
    return out


def test_every_import_of_an_extras_library_sits_in_its_extra_block():
    found = {
        f"{p.relative_to(PKG.parent)}:{line}": mod
        for p in PKG.rglob("*.py")
        for line, mod in _imports_outside_their_extra(p)
    }
    assert not found, found


def test_the_check_sees_an_import_outside_its_extra(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "import matplotlib\n"
        "def f():\n"
        '    with extra("plot"):\n'
        "        from matplotlib.figure import Figure\n"
        '    with extra("query"):\n'
        "        import matplotlib.ticker, duckdb\n"
        "    import elftools.elf  # lazy: a reason\n"
    )
    assert _imports_outside_their_extra(f) == [(1, "matplotlib"), (6, "matplotlib.ticker"), (7, "elftools.elf")]


def test_a_missing_library_of_an_extra_raises_one_line_naming_its_pip_install():
    with pytest.raises(MissingExtra) as e:
        with extra("plot"):
            raise ModuleNotFoundError("No module named 'matplotlib.figure'", name="matplotlib.figure")
    assert str(e.value) == "plotting needs matplotlib: pip install 'fctlab[plot]'"
    assert isinstance(e.value, ImportError) and e.value.extra == "plot" and e.value.name == "matplotlib.figure"
    with pytest.raises(MissingExtra, match=r"^running on a Dask cluster needs dask\[distributed\]: "):
        with extra("cluster"):
            raise ModuleNotFoundError("No module named 'dask'", name="dask")


def test_other_import_errors_pass_through_as_they_are():
    # a library's own dependency, missing: `pip install fctlab[plot]` would not bring it back
    with pytest.raises(ModuleNotFoundError, match="kiwisolver") as e:
        with extra("plot"):
            raise ModuleNotFoundError("No module named 'kiwisolver'", name="kiwisolver")
    assert not isinstance(e.value, MissingExtra)
    with pytest.raises(ImportError, match="cannot import name") as e:
        with extra("query"):
            raise ImportError("cannot import name 'connect' from 'duckdb'", name="duckdb")
    assert not isinstance(e.value, MissingExtra)
    with pytest.raises(ValueError, match="unknown extra 'plots'"):
        with extra("plots"):
            pass


def _without(module: str, code: str, *args: str) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter in which `module` cannot be imported."""
    return subprocess.run(
        [sys.executable, "-c", f"import sys\nsys.modules[{module!r}] = None\n{code}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


CLI = "from fctlab.cli import entry\nentry()"


def test_fctlab_query_without_duckdb_says_which_pip_install_brings_it(tmp_path):
    p = _without("duckdb", CLI, "query", str(tmp_path), "SELECT 1")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "fctlab query: error: querying a sweep needs duckdb: pip install 'fctlab[query]'\n"


def test_fctlab_report_without_matplotlib_says_which_pip_install_brings_it(tmp_path):
    scenario = {
        "network": {"topology": "star", "hosts": 2},
        "flows": [{"src": "h0", "dst": "h1", "size": "100KB"}],
    }
    fctlab.run(scenario).write(tmp_path / "run")
    p = _without("matplotlib", CLI, "report", str(tmp_path / "run"), "--out", str(tmp_path / "report"))
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "fctlab report: error: plotting needs matplotlib: pip install 'fctlab[plot]'\n"
    assert not (tmp_path / "report").exists(), "nothing is written, not even the directory"


@pytest.mark.parametrize(
    "module, call, message",
    [
        (
            "elftools",
            "fctlab.kernel.patch_symbol(Path('a.o'), 'atcp_params', b'', Path('b.o'))",
            "reading BPF objects needs pyelftools: pip install 'fctlab[kernel]'",
        ),
        (
            "distributed",
            "fctlab.sweeps._executor(None, 'tcp://127.0.0.1:8786')",
            "running on a Dask cluster needs dask[distributed]: pip install 'fctlab[cluster]'",
        ),
    ],
    ids=["kernel", "cluster"],
)
def test_the_kernel_side_and_clusters_without_their_extra_raise_one_line(module, call, message):
    code = (
        "from pathlib import Path\n"
        "import fctlab.kernel, fctlab.sweeps\n"
        "from fctlab._extras import MissingExtra\n"
        f"try:\n    {call}\n"
        "except MissingExtra as e:\n    print(e)\n"
    )
    p = _without(module, code)
    assert (p.returncode, p.stderr, p.stdout) == (0, "", message + "\n")


def test_import_fctlab_loads_neither_matplotlib_nor_duckdb():
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            "import fctlab, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('matplotlib', 'duckdb', 'elftools', 'dask', 'distributed')))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert (p.returncode, p.stdout) == (0, "[]\n"), p.stderr
