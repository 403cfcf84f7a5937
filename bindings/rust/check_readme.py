#!/usr/bin/env python3
"""Follows the section "A first program" of the Rust README as a user would.

The section holds, in order: indented shell lines (make the crate), a
```rust block (its src/main.rs), indented shell lines again (run it), and a
```text block (what the program prints). This script runs the shell lines
as written, in a new temporary directory outside the repository, with
/path/to/libspmd/build and /path/to/libspmd replaced by the build and
source directories given, writes the program where the README says, and
compares what the last command printed on stdout with the text block, then
checks each line is what JAX printed for the tour's cells (tests/tour/tour_cells.py).

The environment is a user's: no LD_LIBRARY_PATH, CARGO_TARGET_DIR,
PKG_CONFIG_PATH, SPMD_LIB_DIR or SPMD_LINK from outside (the README's lines
set what they need), and CARGO_NET_OFFLINE=true, as no registry is reached.

    check_readme.py --readme README.md --source <checkout> --build <build>
                    [--cargo <cargo>] [--keep]
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

SECTION = "## A first program"


def section(readme):
    """The text of SECTION, up to the next heading of its level."""
    text = open(readme, encoding="utf-8").read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:] if end < 0 else text[start:end]


def parts(text):
    """The section's parts in order: ("sh", [lines]), ("rust", code),
    ("text", output)."""
    found = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^```(\w+)\s*$", line)
        if fence:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            found.append((fence.group(1), "\n".join(lines[i + 1:j]) + "\n"))
            i = j + 1
        elif line.startswith("    ") and line.strip() and (i == 0 or not lines[i - 1].strip()):
            block = []
            while i < len(lines) and lines[i].startswith("    "):
                block.append(lines[i][4:])
                i += 1
            found.append(("sh", block))
        else:
            i += 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", required=True)
    ap.add_argument("--source", required=True, help="the libspmd checkout (/path/to/libspmd)")
    ap.add_argument("--build", required=True, help="its build directory (/path/to/libspmd/build)")
    ap.add_argument("--cargo", help="the cargo to run as `cargo` (default: the one on PATH)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    found = parts(section(args.readme))
    kinds = [k for k, _ in found]
    if kinds != ["sh", "rust", "sh", "text"]:
        sys.exit(f"check_readme: expected shell lines, a rust block, shell lines and a text block in "
                 f"'{SECTION}', found {kinds}")
    (_, make), (_, program), (_, run), (_, expected) = found

    def paths(line):
        line = line.replace("/path/to/libspmd/build", os.path.abspath(args.build))
        return line.replace("/path/to/libspmd", os.path.abspath(args.source))

    env = dict(os.environ)
    for var in ["LD_LIBRARY_PATH", "CARGO_TARGET_DIR", "PKG_CONFIG_PATH", "SPMD_LIB_DIR", "SPMD_LINK",
                "RUSTFLAGS", "CARGO_BUILD_TARGET_DIR"]:
        env.pop(var, None)
    env["CARGO_NET_OFFLINE"] = "true"
    if args.cargo:
        env["PATH"] = os.path.dirname(os.path.abspath(args.cargo)) + os.pathsep + env.get("PATH", "")

    work = tempfile.mkdtemp(prefix="spmd-rust-readme-")
    source = os.path.abspath(args.source)
    if os.path.commonpath([work, source]) == source:
        sys.exit(f"check_readme: the temporary directory {work} lies inside the checkout")
    output = os.path.join(work, "stdout.txt")
    # One shell: the `cd` of the first lines holds for the rest.
    script = "set -e\n"
    for line in make:
        script += f"echo '$ {paths(line)}' >&2\n{paths(line)}\n"
    script += f"cat > src/main.rs <<'SPMD_README_PROGRAM'\n{program}SPMD_README_PROGRAM\n"
    for line in run:
        script += f"echo '$ {paths(line)}' >&2\n{paths(line)} > {output}\n"
    try:
        done = subprocess.run(["sh", "-c", script], cwd=work, env=env)
        got = open(output, encoding="utf-8").read() if os.path.exists(output) else ""
        if done.returncode != 0:
            sys.stdout.write(got)
            sys.exit(f"check_readme: the README's steps failed (exit status {done.returncode}) in {work}")
        if got != expected:
            sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True), got.splitlines(True),
                                                       "README.md", "cargo run"))
            sys.exit("check_readme: the program's output differs from the README's")
        sys.path.insert(0, os.path.join(source, "tests", "tour"))
        import tour_cells
        missing = tour_cells.unmatched(got)
        if missing:
            sys.stdout.writelines(f"  {line}\n" for line in missing)
            sys.exit("check_readme: the output is the README's, but the lines above are not what JAX "
                     "printed for the tour's cells (tests/conformance/tour/transcript.txt)")
        print(f"ok: the README's first program prints its {len(expected.splitlines())} lines, "
              "each what JAX printed for the tour's cells")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
