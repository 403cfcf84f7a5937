"""Checks that a binding's example prints what the C tour prints for the
same notebook cells.

    check_example_output.py --tour build/examples/spmd-tour -- go run ./examples/intro

Both programs print cells as the tour does: a header of the Python the cell
reproduces (">>> " then "... " lines) followed by its output. Every cell the
example prints must be a cell of the tour, header and output alike, and the
example must print every cell of the first seed notebook (REQUIRED below).
Lines outside cells (titles, "=== section ===" lines, and the tour's
remarks: lines starting with "# ") are not compared, and end a cell.
Both run on the cpu platform, the tour's default.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys

# The first seed notebook, end to end: devices, a 3-device 'x' mesh, a (3, 8)
# array laid out P('x'), its picture, 2*sin(x)+1 keeping the sharding, the
# sums along each axis, and the shard_map whose psum gives 276 as `result`.
REQUIRED = [
    "jax.devices()",
    "mesh = jax.make_mesh((3,), ('x',))",
    "arr = jnp.arange(24.0).reshape(3, 8); arr.shape",
    "arr_sharded = jax.device_put(arr, sharding); arr_sharded.sharding",
    "jax.debug.visualize_array_sharding(arr_sharded)",
    "@jax.jit\n... def f(x):\n...     return 2 * jnp.sin(x) + 1",
    "arr_sharded.sharding == result.sharding",
    "@jax.jit\n... def f(x):\n...     return x.sum(axis=0)",
    "arr.sum(axis=1)",
    "@jax.jit\n... def f(x):\n...     return x.sum(axis=1)",
    "def f(x):\n...     sum_in_shard = x.sum()\n...     return jax.lax.psum(sum_in_shard, 'x')\n"
    "... result = shard_map(f, mesh=mesh, in_specs=PartitionSpec('x'),",
    "result.sharding",
]


def cells(text: str) -> list[tuple[str, str]]:
    """(header, output) pairs, in order."""
    out: list[tuple[str, list[str], list[str]]] = []
    for line in text.splitlines():
        if line.startswith(">>> "):
            out.append((line, [line], []))
        elif not out:
            continue
        elif (line.startswith("=== ") and line.endswith(" ===")) or line.startswith("# "):
            out.append(("", [], []))  # a section line or a remark ends the cell
        elif line.startswith("... ") and not out[-1][2]:
            out[-1][1].append(line)
        elif out[-1][1]:
            out[-1][2].append(line)
    result = []
    for _, header, body in out:
        if not header:
            continue
        while body and not body[-1].strip():
            body.pop()
        result.append(("\n".join(header)[4:], "\n".join(body)))
    return result


def run(cmd: list[str]) -> str:
    env = dict(os.environ, SPMD_PLATFORM="cpu")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited with {proc.returncode}")
    return proc.stdout


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tour", required=True, help="the C tour program")
    ap.add_argument("--cwd", help="directory to run the example in")
    ap.add_argument("example", nargs="+", help="the example's command line")
    args = ap.parse_args(argv)

    tour = dict(cells(run([args.tour])))
    if args.cwd:
        os.chdir(args.cwd)
    example = cells(run(args.example))
    failures = 0
    for header, body in example:
        if header not in tour:
            print(f"FAIL: the example prints a cell the tour does not have:\n>>> {header}")
            failures += 1
        elif tour[header] != body:
            print(f"FAIL: cell differs from the tour's:\n>>> {header}")
            diff = difflib.unified_diff(tour[header].splitlines(), body.splitlines(),
                                        "tour", "example", lineterm="")
            print("\n".join(diff))
            failures += 1
    for needed in REQUIRED:
        if not any(h.startswith(needed) for h, _ in example):
            print(f"FAIL: the example lacks the notebook cell\n>>> {needed}")
            failures += 1
    if failures:
        return 1
    print(f"ok: {len(example)} cells match the tour's, the {len(REQUIRED)} cells of the first "
          "notebook among them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
