#!/usr/bin/env python3
"""Checks what is kept by hand against the op table (src/exec/ops/table.cpp):
include/spmd/ops.h (every enumerator and entry point, values included),
docs/ops.md (printed from the table), and the op lists of the Go, Rust and
Julia bindings (every enumerator and entry point used, Go's values equal).

usage: check.py DUMP_PROGRAM SOURCE_DIR
"""
import json
import pathlib
import re
import subprocess
import sys

FAMILIES = {"unary": "spmd_unary_op", "binary": "spmd_binary_op", "reduce": "spmd_reduce_op"}


def header_enums(text, enum):
    body = re.search(r"typedef enum %s \{(.*?)\} %s;" % (enum, enum), text, re.S)
    if not body:
        return None
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"(SPMD_\w+)\s*=\s*(\d+)", body.group(1))}


def header_functions(text):
    names = set(re.findall(r"SPMD_API\s+spmd_status\s+(spmd_\w+)\s*\(", text))
    return {n for n in names if not n.endswith("_init")}


def squash(name):
    return name.replace("_", "").lower()


def check_header(table, root, errors):
    text = (root / "include/spmd/ops.h").read_text()
    for family, enum in FAMILIES.items():
        want = {r["c_name"]: r["c_value"] for r in table[family]}
        have = header_enums(text, enum)
        if have is None:
            errors.append(f"ops.h: no typedef enum {enum}")
            continue
        for name in sorted(set(have) - set(want)):
            errors.append(f"ops.h: {name} has no row in the op table's {family} family")
        for name in sorted(set(want) - set(have)):
            errors.append(f"op table: {name} is not in ops.h's {enum}")
        for name in sorted(set(want) & set(have)):
            if want[name] != have[name]:
                errors.append(f"ops.h: {name} = {have[name]}, the op table says {want[name]}")
    want = {f["c_name"] for f in table["functions"]}
    have = header_functions(text)
    for name in sorted(have - want):
        errors.append(f"ops.h: {name} has no row in the op table's functions")
    for name in sorted(want - have):
        errors.append(f"op table: {name} is not declared in ops.h")


def check_docs(markdown, root, errors):
    path = root / "docs/ops.md"
    if not path.exists() or path.read_text() != markdown:
        errors.append("docs/ops.md: stale; regenerate with `build/tests/spmd-op-table --markdown > docs/ops.md`")


def sources(root, folder, suffix):
    return "\n".join(p.read_text() for p in sorted((root / folder).rglob("*" + suffix))
                     if "/examples/" not in str(p) and not p.name.endswith("_test.go"))


def check_references(lang, text, pattern, table, errors):
    used = set(re.findall(pattern, text))
    for family in FAMILIES:
        for r in table[family]:
            if r["c_name"] not in used:
                errors.append(f"{lang}: {r['c_name']} ({family} '{r['name']}') is not in its op list")
    for f in table["functions"]:
        if f["c_name"] not in used:
            errors.append(f"{lang}: {f['c_name']} is never called")
    known = {r["c_name"] for fam in FAMILIES for r in table[fam]} | {f["c_name"] for f in table["functions"]}
    prefixes = ("SPMD_UNARY_", "SPMD_BINARY_", "SPMD_REDUCE_")
    for name in sorted(used):
        if name.startswith(prefixes) and name not in known and name != "SPMD_UNARY_SIGMOID":
            errors.append(f"{lang}: {name} is not in the op table")


def check_go(table, root, errors):
    text = sources(root, "bindings/go", ".go")
    types = {"unary": "UnaryOp", "binary": "BinaryOp", "reduce": "ReduceOp"}
    for family, gotype in types.items():
        consts = {m.group(1): int(m.group(2))
                  for m in re.finditer(r"^\s*(\w+)\s+%s\s*=\s*(\d+)" % gotype, text, re.M)}
        by_value = {v: k for k, v in consts.items()}
        for r in table[family]:
            stem = r["c_name"].split("_", 2)[2]
            go = by_value.get(r["c_value"])
            if go is None:
                errors.append(f"Go: no {gotype} constant = {r['c_value']} ({r['c_name']})")
            elif squash(go).removeprefix(squash(gotype[:-2])) != squash(stem):
                errors.append(f"Go: {go} = {r['c_value']}, but {r['c_value']} is {r['c_name']}")
        extra = set(consts.values()) - {r["c_value"] for r in table[family]}
        for v in sorted(extra):
            errors.append(f"Go: {by_value[v]} {gotype} = {v} is not in the op table")
    called = {"spmd_" + n for n in re.findall(r"capi\.Spmd_(\w+)\(", text)}
    for f in table["functions"]:
        if f["c_name"] not in called:
            errors.append(f"Go: {f['c_name']} is never called")


def main():
    dump, root = sys.argv[1], pathlib.Path(sys.argv[2])
    table = json.loads(subprocess.run([dump, "--json"], check=True, capture_output=True, text=True).stdout)
    markdown = subprocess.run([dump, "--markdown"], check=True, capture_output=True, text=True).stdout
    errors = []
    check_header(table, root, errors)
    check_docs(markdown, root, errors)
    check_go(table, root, errors)
    check_references("Rust", sources(root, "bindings/rust/spmd/src", ".rs"), r"sys::((?:spmd|SPMD)_\w+)",
                     table, errors)
    check_references("Julia", sources(root, "bindings/julia/SPMD/src", ".jl"),
                     r"LibSPMD\.((?:spmd|SPMD)_\w+)", table, errors)
    for e in errors:
        print(e)
    n = sum(len(table[f]) for f in FAMILIES) + len(table["functions"])
    if errors:
        print(f"op_table: {len(errors)} differences from the op table ({n} rows)")
        return 1
    print(f"op_table: ops.h, docs/ops.md and the Go, Rust and Julia op lists agree with the {n} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
