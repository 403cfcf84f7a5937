"""The Julia binding's CTests (bindings/julia/CMakeLists.txt), one mode each.

    run_tests.py test     --library LIB --model JSON --venv-python PY
        With `julia` on PATH: Pkg.test() of bindings/julia/SPMD.
        Without: the static checks (check_julia.py: tree-sitter parse of every
        .jl file, every ccall against the library and SWIG's parse; and
        bindings/gen/check_coverage.py: the C API is used by the idiomatic
        layer). The output says which.
    run_tests.py negative --library LIB --model JSON --venv-python PY
        The checker's negative control: check_julia.py on
        tests/negative/bad.jl must fail with exactly its four problems.
    run_tests.py example  --tour TOUR
        With julia: examples/intro.jl through bindings/gen/check_example_output.py.
        Without: exit 77, which CTest reports as skipped.

Julia finds the library through $JULIA_SPMD_LIBRARY, set here to --library.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PACKAGE = os.path.join(HERE, "SPMD")
GEN = os.path.join(ROOT, "bindings", "gen")
SKIP = 77


def venv_python(path: str) -> str:
    if not path or not os.path.exists(path):
        raise SystemExit(f"FAIL: {path or 'the venv python'} does not exist: run "
                         "bindings/julia/setup (it makes .venv-bindings with tree-sitter and "
                         "tree-sitter-julia), or set SPMD_JULIA_CHECK_PYTHON")
    return path


def checker(args, *paths: str) -> subprocess.CompletedProcess:
    cmd = [venv_python(args.venv_python), os.path.join(HERE, "check_julia.py"),
           "--library", args.library, "--model", args.model, *paths]
    return subprocess.run(cmd, capture_output=True, text=True)


def coverage(args) -> subprocess.CompletedProcess:
    """bindings/gen/check_coverage.py on the idiomatic layer alone."""
    cmd = [sys.executable, os.path.join(GEN, "check_coverage.py"), "--library", args.library,
           "--model", args.model, "--binding", "julia=" + os.path.join(PACKAGE, "src")]
    return subprocess.run(cmd, capture_output=True, text=True)


def julia_env(library: str) -> dict:
    return dict(os.environ, JULIA_SPMD_LIBRARY=library, SPMD_PLATFORM="cpu")


def mode_test(args) -> int:
    julia = shutil.which("julia")
    if julia:
        print(f"julia found ({julia}): running Pkg.test() of bindings/julia/SPMD", flush=True)
        proc = subprocess.run([julia, f"--project={PACKAGE}", "-e", "using Pkg; Pkg.test()"],
                              env=julia_env(args.library))
        print("ran Pkg.test() of bindings/julia/SPMD: " + ("passed" if proc.returncode == 0 else "FAILED"))
        return proc.returncode
    procs = [checker(args), coverage(args)]
    for proc in procs:
        sys.stdout.write(proc.stdout + proc.stderr)
    print("julia not found: ran the static checks (tree-sitter parse, ccall signatures, "
          "coverage of the C API), not Pkg.test")
    return next((proc.returncode for proc in procs if proc.returncode != 0), 0)


# The problems tests/negative/bad.jl holds, by kind: (line, text in the message).
EXPECTED = {
    "arity": (13, "spmd_mesh_size"),
    "type": (16, "spmd_array_size"),
    "unknown-symbol": (19, "spmd_no_such_function"),
    "syntax": (22, "cannot parse"),
}


def mode_negative(args) -> int:
    bad = os.path.join(HERE, "tests", "negative", "bad.jl")
    proc = checker(args, bad)
    sys.stdout.write(proc.stdout + proc.stderr)
    found = re.findall(r"^[^\s:]+:(\d+): \[([\w-]+)\] (.*)$", proc.stdout, re.M)
    failures = []
    if proc.returncode != 1:
        failures.append(f"check_julia.py exited with {proc.returncode}, expected 1")
    kinds = [kind for _, kind, _ in found]
    if sorted(kinds) != sorted(EXPECTED):
        failures.append(f"reported {sorted(kinds)}, expected exactly {sorted(EXPECTED)}")
    for line, kind, msg in found:
        want = EXPECTED.get(kind)
        if want and (int(line) != want[0] or want[1] not in msg):
            failures.append(f"[{kind}] at line {line} ({msg}); expected line {want[0]} "
                            f"naming {want[1]}")
    if failures:
        print("FAIL: the checker does not reject the bad fixture as it should:")
        print("\n".join("  " + f for f in failures))
        return 1
    print(f"ok: the checker rejects tests/negative/bad.jl with exactly its {len(EXPECTED)} "
          f"problems ({', '.join(sorted(EXPECTED))})")
    return 0


def mode_example(args) -> int:
    julia = shutil.which("julia")
    if not julia:
        print("julia not found: the example examples/intro.jl is not run; the static checks "
              "of binding_julia_test cover it (parse, ccalls). Skipped.")
        return SKIP
    cmd = [sys.executable, os.path.join(GEN, "check_example_output.py"),
           "--tour", args.tour, "--", julia, f"--project={PACKAGE}",
           os.path.join(PACKAGE, "examples", "intro.jl")]
    return subprocess.run(cmd, env=julia_env(args.library)).returncode


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["test", "negative", "example"])
    ap.add_argument("--library", required=True)
    ap.add_argument("--model")
    ap.add_argument("--venv-python")
    ap.add_argument("--tour")
    args = ap.parse_args(argv)
    return {"test": mode_test, "negative": mode_negative, "example": mode_example}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
