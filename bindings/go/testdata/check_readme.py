"""Follows the Go README's "Install and a first program" as written.

    check_readme.py --readme bindings/go/README.md --build build --go /usr/bin/go

The section holds five fenced blocks, in this order: the shell lines that
clone and build libspmd and end by exporting SPMD_BUILD; the shell lines
that make a module of one's own; the program (main.go); the command that
runs it; the text it prints. The first block is the build this test runs
in, so SPMD_BUILD is set to it (--build) instead; the others run as written
in bash, from a fresh temporary directory outside the repository, with
PKG_CONFIG_PATH, GOFLAGS, GOPROXY, GOWORK and SPMD_PLATFORM removed from
the environment (the README must set what it needs), and what the program
prints must be the README's text, byte for byte, and made of what JAX
printed for the tour's cells (tests/tour/tour_cells.py).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

SECTION = "## Install and a first program"
KINDS = ["sh", "sh", "go", "sh", "text"]
UNSET = ["PKG_CONFIG_PATH", "GOFLAGS", "GOPROXY", "GOWORK", "GO111MODULE", "SPMD_PLATFORM"]


def blocks(readme: str) -> list[tuple[str, str]]:
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    section = readme[start:end if end >= 0 else len(readme)]
    return re.findall(r"^```(\w*)\n(.*?)^```$", section, re.M | re.S)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--readme", required=True)
    ap.add_argument("--build", required=True, help="the build tree: what SPMD_BUILD names")
    ap.add_argument("--go", default="go", help="the go command CMake found")
    args = ap.parse_args()

    with open(args.readme, encoding="utf-8") as f:
        found = blocks(f.read())
    kinds = [kind for kind, _ in found]
    if kinds != KINDS:
        print(f"README: the section {SECTION!r} has blocks {kinds}, expected {KINDS}")
        return 1
    (_, build), (_, setup), (_, program), (_, run), (_, expected) = found
    if not build.rstrip().endswith("export SPMD_BUILD=$PWD/build"):
        print("README: the build block no longer ends with 'export SPMD_BUILD=$PWD/build'")
        return 1

    repo = os.path.realpath(os.path.join(os.path.dirname(args.readme), "..", ".."))
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    go = shutil.which(args.go)
    if go is None:
        print(f"no {args.go}")
        return 1
    env["PATH"] = os.path.dirname(os.path.realpath(go)) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory(prefix="spmd-go-readme-") as tmp:
        tmp = os.path.realpath(tmp)
        if os.path.commonpath([tmp, repo]) == repo:
            print(f"the temporary directory {tmp} is inside the repository {repo}")
            return 1
        env["TMPDIR"] = tmp  # mktemp -d makes the module's directory in here
        env["SPMD_BUILD"] = os.path.realpath(args.build)
        if not any(k in env for k in ("GOCACHE", "HOME", "XDG_CACHE_HOME")):
            env["GOCACHE"] = os.path.join(tmp, "gocache")
        script = (
            "set -euo pipefail\n"
            + setup
            + "cat > main.go <<'SPMD_README_MAIN_GO'\n" + program + "SPMD_README_MAIN_GO\n"
            + 'echo "module directory: $PWD" >&2\n'
            + run
        )
        print("running, with SPMD_BUILD=" + env["SPMD_BUILD"] + ":\n" + script, flush=True)
        proc = subprocess.run(["bash", "-c", script], cwd=tmp, env=env,
                              stdout=subprocess.PIPE, stderr=sys.stderr.buffer, timeout=600)
    got = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        print(f"the README's steps failed (exit status {proc.returncode}); output:\n{got}")
        return 1
    if got != expected:
        print("the program's output differs from the README's:")
        sys.stdout.writelines(difflib.unified_diff(
            expected.splitlines(True), got.splitlines(True), "README.md", "go run ."))
        return 1
    missing = jax_lines_missing(repo, got)
    if missing:
        print("the output is the README's, but these lines are not what JAX printed for the "
              "tour's cells (tests/conformance/tour/transcript.txt):")
        print("".join(f"  {line}\n" for line in missing), end="")
        return 1
    print("the README's steps work as written; the output is the README's and JAX's, "
          "cell by cell")
    return 0


def jax_lines_missing(repo: str, output: str) -> list[str]:
    """The output's lines that no tour cell's output accounts for."""
    sys.path.insert(0, os.path.join(repo, "tests", "tour"))
    import tour_cells
    return tour_cells.unmatched(output)


if __name__ == "__main__":
    sys.exit(main())
