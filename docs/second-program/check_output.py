"""Runs one of the second programs and compares what it prints with
expected.txt, line for line.

    check_output.py --expected FILE [--cwd DIR] -- COMMAND...   # the CTest tests
    python second.py | check_output.py --from-jax > expected.txt

--from-jax turns JAX's output into expected.txt: it maps the two forms
that libspmd prints as the seed notebooks did (conformance/refio.py,
seed_form; docs/differences.md): "Mesh('x': 2, 'y': 4)" without
", axis_types=(Auto, Auto)", and "PartitionSpec(" for "P(". Every other
character is JAX's, and the comparison is exact.
"""

from __future__ import annotations

import argparse
import difflib
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from-jax", action="store_true", help="write expected.txt from JAX's output on stdin")
    ap.add_argument("--cwd", help="directory to run the command in")
    ap.add_argument("--expected", help="the expected output (expected.txt)")
    ap.add_argument("command", nargs="*", help="the program's command line")
    args = ap.parse_args()
    if args.from_jax:
        sys.path.insert(0, str(ROOT / "conformance"))
        from refio import seed_form

        sys.stdout.write(seed_form(sys.stdin.read()))
        return 0
    if not args.expected or not args.command:
        ap.error("--expected and a command are needed")
    env = dict(os.environ, SPMD_PLATFORM="cpu", SPMD_CPU_DEVICES="8")
    run = subprocess.run(args.command, cwd=args.cwd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        print(f"{args.command[0]} exited with {run.returncode}")
        return 1
    expected = pathlib.Path(args.expected).read_text().splitlines(keepends=True)
    got = run.stdout.splitlines(keepends=True)
    if got != expected:
        sys.stdout.writelines(difflib.unified_diff(expected, got, "expected", "got"))
        return 1
    print(f"{len(got)} lines, as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
