"""Checks the tour (examples/c/tour.c) against JAX's run of the same cells.

    check_tour.py transcript TOUR TRANSCRIPT   # tour_matches_jax
    check_tour.py c TOUR                       # tour_shows_c_calls

transcript: `TOUR` prints exactly the cells of TRANSCRIPT
(tests/conformance/tour/transcript.txt, written by JAX through
conformance/families/tour.py), in the same sections and order: the same
Python in each header and the same output, character for character, but
for what cannot be the same from run to run or from one implementation's
float32 sums to another's:
  - timings ("Warmup time", "Time per iteration"), which JAX's transcript
    writes as <t>;
  - "train loss=", a Python float of 16 or 17 digits: within 1e-6 relative
    (the tour's note gives JAX's value and the difference).

c: `TOUR --c` shows, in every cell, at least one "[C] " line (the libspmd
calls that ran it, where they ran), and without those lines its cells are
the default run's.

Both runs must exit 0: the tour exits 1 when a section disagrees with
JAX's recorded answers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

TIMING = re.compile(r"^((?:Warmup time|Time per iteration): )\S+( seconds)$")
TOLERANT = {"train loss=": 1e-6}


def cells(text: str) -> list[tuple[str, str, list[str]]]:
    """(section, header, output lines) of each cell, in order. A cell ends
    at the next header, section line ("=== x ===") or note ("# ...")."""
    out: list[tuple[str, str, list[str]]] = []
    section = ""
    open_cell = None
    for line in text.splitlines():
        if line.startswith(">>> "):
            open_cell = (section, [line[4:]], [])
            out.append(open_cell)
        elif line.startswith("=== ") and line.endswith(" ==="):
            section = line[4:-4]
            open_cell = None
        elif line.startswith("# "):
            open_cell = None
        elif open_cell is None:
            continue
        elif line.startswith("... ") and not open_cell[2]:
            open_cell[1].append(line[4:])
        else:
            open_cell[2].append(line)
    result = []
    for sec, header, body in out:
        while body and not body[-1].strip():
            body.pop()
        result.append((sec, "\n".join(header), body))
    return result


def run(cmd: list[str]) -> str:
    env = dict(os.environ, SPMD_PLATFORM="cpu")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-4000:] + proc.stderr)
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited with {proc.returncode}")
    return proc.stdout


def same_line(have: str, want: str) -> bool:
    if have == want:
        return True
    m = TIMING.match(have)
    if m and want == f"{m.group(1)}<t>{m.group(2)}":
        return True
    for prefix, rel in TOLERANT.items():
        if have.startswith(prefix) and want.startswith(prefix):
            try:
                a, b = float(have[len(prefix):]), float(want[len(prefix):])
            except ValueError:
                return False
            return abs(a - b) <= rel * abs(b)
    return False


def check_transcript(tour: str, transcript: str) -> int:
    have = cells(run([tour]))
    with open(transcript, encoding="utf-8") as f:
        want = cells(f.read())
    failures = 0
    for i in range(max(len(have), len(want))):
        if i >= len(have) or i >= len(want):
            extra = have[i] if i < len(have) else want[i]
            who = "the tour" if i < len(have) else "JAX's transcript"
            print(f"FAIL: only {who} has cell {i + 1}:\n>>> {extra[1]}")
            failures += 1
            continue
        (hs, hh, hb), (ws, wh, wb) = have[i], want[i]
        if (hs, hh) != (ws, wh):
            print(f"FAIL: cell {i + 1}: the tour shows\n[{hs}]\n>>> {hh}\n"
                  f"where JAX's transcript has\n[{ws}]\n>>> {wh}")
            failures += 1
            continue
        if len(hb) != len(wb) or not all(same_line(a, b) for a, b in zip(hb, wb)):
            print(f"FAIL: cell {i + 1} prints otherwise than JAX:\n>>> {hh}\n--- tour")
            print("\n".join(hb))
            print("--- JAX")
            print("\n".join(wb))
            failures += 1
    if failures:
        return 1
    print(f"ok: the tour's {len(have)} cells print what JAX prints for them")
    return 0


def check_c(tour: str) -> int:
    plain = cells(run([tour]))
    shown = run([tour, "--c"])
    with_c = cells(shown)
    failures = 0
    for section, header, body in with_c:
        if not any(line.startswith("[C] ") for line in body):
            print(f"FAIL: no C line in the cell\n>>> {header}")
            failures += 1
    stripped = [(s, h, [l for l in b if not l.startswith("[C] ")]) for s, h, b in with_c]
    if len(stripped) != len(plain):
        print(f"FAIL: --c prints {len(stripped)} cells, the default run {len(plain)}")
        failures += 1
    for (s1, h1, b1), (s2, h2, b2) in zip(stripped, plain):
        if (s1, h1) != (s2, h2) or len(b1) != len(b2) or not all(
                a == b or (TIMING.match(a) and TIMING.match(b)) for a, b in zip(b1, b2)):
            print(f"FAIL: with --c the cell prints otherwise:\n>>> {h2}")
            failures += 1
    if failures:
        return 1
    count = sum(1 for line in shown.splitlines() if line.startswith("[C] "))
    print(f"ok: each of the {len(with_c)} cells shows its C calls ({count} lines), "
          "and prints what it prints without --c")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "transcript":
        return check_transcript(argv[1], argv[2])
    if len(argv) == 2 and argv[0] == "c":
        return check_c(argv[1])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
