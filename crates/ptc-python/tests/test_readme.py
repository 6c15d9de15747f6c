"""The README's "From Python" example and the package README's example run as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]


def python_blocks(text):
    # a block ends at a fence at the start of a line (fences inside strings do not count)
    return re.findall(r"^```python\n(.*?)^```[ \t]*$", text, re.S | re.M)


def section(text, heading):
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def test_readme_from_python_section_runs():
    blocks = python_blocks(section((ROOT / "README.md").read_text(), "## From Python"))
    assert blocks, "the README's From Python section has no python block"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})


def test_package_readme_example_runs():
    blocks = python_blocks((ROOT / "crates/ptc-python/README.md").read_text())
    assert blocks
    for code in blocks:
        exec(compile(code, "crates/ptc-python/README.md", "exec"), {})


def test_docs_python_examples_run():
    blocks = python_blocks((ROOT / "docs/python.md").read_text())
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/python.md", "exec"), {})
