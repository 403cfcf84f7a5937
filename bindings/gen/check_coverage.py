"""Fails when a function libspmd exports has no wrapper in a binding.

    check_coverage.py --library build/src/libspmd.so --model build/bindings/spmd-model.json \
        --binding go=bindings/go --binding rust=bindings/rust/spmd/src \
        --binding julia=bindings/julia/SPMD/src

The exported functions are read from the library itself (nm -D), and each
must also be in SWIG's parse of bindings/swig/spmd.i (a header the interface
forgets shows up here). A binding wraps a function when its handwritten
idiomatic sources call it: the name `spmd_<name>` appears as a word in code,
comments and string literals removed (`capi.Spmd_mesh_create`,
`sys::spmd_mesh_create`, `LibSPMD.spmd_mesh_create`). Generated raw layers,
tests and examples do not count. EXEMPT lists the functions no binding calls
directly, each with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

EXEMPT = {
    "spmd_ctx_printf": "variadic: each binding formats in its own language and calls spmd_ctx_print",
}

# Per language: file suffixes read, and path parts that mark files that do
# not count (generated raw layers, tests, examples).
LANGUAGES = {
    "go": ((".go", ".c", ".h"), ("_test.go", "/examples/", "/internal/capi/spmd.go",
                                  "/internal/capi/spmd_wrap.c")),
    "rust": ((".rs",), ("/tests/", "/examples/", "/benches/")),
    "julia": ((".jl",), ("LibSPMD.jl", "/test/", "/examples/")),
}


def strip_c_like(text: str) -> str:
    """C, Go and Rust source without comments and string literals."""
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|`[^`]*`', " ", text, flags=re.S)


def strip_julia(text: str) -> str:
    """Julia source without comments, docstrings and string literals."""
    text = re.sub(r'"""(?:\\.|[^\\])*?"""', " ", text, flags=re.S)
    text = re.sub(r"#=.*?=#", " ", text, flags=re.S)
    return re.sub(r'#[^\n]*|"(?:\\.|[^"\\\n])*"', " ", text)


def exported_functions(library: str) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True,
                         check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "W"):
            name = parts[2].split("@")[0]
            if name.startswith("spmd_"):
                names.add(name)
    return names


def sources(root: str, language: str) -> list[str]:
    suffixes, excluded = LANGUAGES[language]
    found = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            if f.endswith(suffixes) and not any(x in path for x in excluded):
                found.append(path)
    return sorted(found)


def called_names(paths: list[str], language: str) -> set[str]:
    strip = strip_julia if language == "julia" else strip_c_like
    names = set()
    for path in paths:
        code = strip(open(path, encoding="utf-8").read())
        names.update(m.lower() for m in re.findall(r"\b[Ss]pmd_[a-z0-9_]+\b", code))
    return names


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", required=True)
    ap.add_argument("--model", required=True, help="the JSON of swig_model.py")
    ap.add_argument("--binding", action="append", default=[], metavar="LANGUAGE=DIR")
    args = ap.parse_args(argv)

    exported = exported_functions(args.library)
    parsed = {f["name"] for f in json.load(open(args.model))["functions"]}
    failures = 0
    for name in sorted(exported - parsed):
        print(f"FAIL: {name} is exported but not in SWIG's parse of spmd.i (a header left out?)")
        failures += 1
    if not exported:
        print(f"FAIL: {args.library} exports no spmd_ function")
        failures += 1

    for spec in args.binding:
        language, root = spec.split("=", 1)
        paths = sources(root, language)
        if not paths:
            print(f"FAIL: {language}: no sources under {root}")
            failures += 1
            continue
        called = called_names(paths, language)
        missing = sorted(n for n in exported if n not in called and n not in EXEMPT)
        for name in missing:
            print(f"FAIL: {language}: {name} is not wrapped (no call in {root})")
        failures += len(missing)
        print(f"{language}: {len(exported) - len(missing)} of {len(exported)} exported functions "
              f"wrapped ({len(EXEMPT)} exempt: {', '.join(sorted(EXEMPT))}), {len(paths)} files")
    for name, why in sorted(EXEMPT.items()):
        if name not in exported:
            print(f"FAIL: exemption for {name}, which the library does not export")
            failures += 1
        else:
            print(f"exempt: {name}: {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
