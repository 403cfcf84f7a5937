"""Counts the lines of the four second programs and prints the table of
README.md: code lines (neither blank nor only comment) and all lines.

    python3 docs/second-program/count_lines.py

A comment is Python's "# ...", or C's, Go's and Rust's "// ..." (Rust's
"///" and "//!" included) and "/* ... */", which may span lines. A line
with code and a comment counts as code. String literals are not parsed:
none of the four files has a comment marker inside a string.
"""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = [
    ("JAX (Python)", "docs/second-program/second.py"),
    ("C", "examples/c/second.c"),
    ("Go", "bindings/go/examples/second/main.go"),
    ("Rust", "bindings/rust/spmd/examples/second.rs"),
]


def code_lines(text: str, python: bool) -> int:
    count = 0
    in_block = False
    for line in text.splitlines():
        rest, code = line.strip(), False
        while rest:
            if in_block:
                end = rest.find("*/")
                if end < 0:
                    break
                rest, in_block = rest[end + 2 :].strip(), False
            elif python:
                code = not rest.startswith("#")
                break
            elif rest.startswith("//"):
                break
            elif rest.startswith("/*"):
                rest, in_block = rest[2:], True
            else:
                # Code, perhaps opening a block comment that goes on.
                code, rest = True, rest.split("//")[0]
                in_block = rest.rfind("/*") > rest.rfind("*/")
                break
        count += code
    return count


def main() -> None:
    print("| language | file | code lines | all lines |")
    print("|---|---|---:|---:|")
    for language, path in FILES:
        text = (ROOT / path).read_text()
        code = code_lines(text, path.endswith(".py"))
        print(f"| {language} | `{path}` | {code} | {len(text.splitlines())} |")


if __name__ == "__main__":
    main()
