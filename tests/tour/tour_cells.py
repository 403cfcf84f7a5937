"""The outputs of the tour's cells as JAX printed them, and a check that a
program's output is made of them.

tests/conformance/tour/transcript.txt records each notebook cell JAX ran:
its code (lines starting '>>> ' or '... ') followed by what it printed, up
to a blank line or the next cell. A README's first program stands for some
of those cells; `unmatched` says which of its output lines are not JAX's:
the output is read as runs of lines, each run a stretch of one cell's
output (a program may print part of a cell's output, a picture without the
print before it), the longest run first.
"""

from __future__ import annotations

import pathlib

TRANSCRIPT = pathlib.Path(__file__).resolve().parent.parent / "conformance" / "tour" / "transcript.txt"


def cell_outputs(transcript: str) -> list[list[str]]:
    """Each cell's output lines, in order."""
    cells: list[list[str]] = []
    current: list[str] | None = None
    for line in transcript.splitlines():
        if line.startswith(">>> "):
            current = []
            cells.append(current)
        elif line.startswith("... ") or line == "...":
            continue
        elif not line.strip() or line.startswith("=== "):
            current = None
        elif current is not None:
            current.append(line)
    return [c for c in cells if c]


def unmatched(output: str, transcript: str | None = None) -> list[str]:
    """The lines of `output` that no stretch of a cell's output accounts
    for (empty when the output is JAX's, run by run)."""
    if transcript is None:
        transcript = TRANSCRIPT.read_text(encoding="utf-8")
    cells = cell_outputs(transcript)
    lines = output.splitlines()
    missing = []
    i = 0
    while i < len(lines):
        best = 0
        for cell in cells:
            for start in range(len(cell)):
                n = 0
                while i + n < len(lines) and start + n < len(cell) and cell[start + n] == lines[i + n]:
                    n += 1
                best = max(best, n)
        if best == 0:
            missing.append(lines[i])
            i += 1
        else:
            i += best
    return missing
