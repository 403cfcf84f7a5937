"""Checks what a binding's example prints under mpiexec, process by process.

    check_mpi_example.py --expected distributed.expected [--timeout S] -- \
        mpiexec -np 2 target/debug/examples/distributed

The example starts each line it prints with "[<process index>] ". mpiexec
forwards the processes' lines as they come, so lines of different processes
interleave in any order: the lines are grouped by that prefix, and each
process's lines must be, in order, exactly those the expected file gives it
(lines starting with '#' and blank lines there are comments). Lines without
the prefix (MPI's own) are shown, not compared. The command must exit 0.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

PREFIX = re.compile(r"^\[(\d+)\] ")


def by_process(lines: list[str]) -> dict[int, list[str]]:
    groups: dict[int, list[str]] = {}
    for line in lines:
        m = PREFIX.match(line)
        if m:
            groups.setdefault(int(m.group(1)), []).append(line)
    return groups


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--expected", required=True, help="the expected lines, '[i] ' prefixed")
    parser.add_argument("--timeout", type=float, default=110, help="seconds the command may run")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")

    with open(args.expected, encoding="utf-8") as f:
        expected = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(out)
        print(f"FAIL: {' '.join(command)} ran past {args.timeout:g} s")
        return 1
    sys.stdout.write(proc.stdout)
    sys.stdout.write(proc.stderr)

    failures = []
    if proc.returncode != 0:
        failures.append(f"the command exited {proc.returncode}")
    got, want = by_process(proc.stdout.splitlines()), by_process(expected)
    for p in sorted(set(got) | set(want)):
        g, w = got.get(p, []), want.get(p, [])
        if g == w:
            continue
        failures.append(f"process {p} printed {len(g)} lines, {len(w)} expected; first difference:")
        for i in range(max(len(g), len(w))):
            gi = g[i] if i < len(g) else "(nothing)"
            wi = w[i] if i < len(w) else "(nothing)"
            if gi != wi:
                failures.append(f"  got:  {gi}\n  want: {wi}")
                break
    if failures:
        print("FAIL: " + "\n".join(failures))
        return 1
    print(f"OK: {len(got)} processes printed the {len(expected)} expected lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
