"""The static checks of the Julia binding, for machines without a Julia runtime.

    .venv-bindings/bin/python bindings/julia/check_julia.py \\
        --library build/src/libspmd.so --model build/bindings/spmd-model.json \\
        [FILE_OR_DIR ...]

(a) Parses every .jl file with the tree-sitter Julia grammar (PyPI packages
    tree-sitter and tree-sitter-julia) and fails on any ERROR or MISSING node.
(b) Finds every `ccall` and checks it:
    - `ccall((:spmd_xxx, libspmd[]), RetT, (ArgT...,), args...)`: spmd_xxx is
      exported by the library (`nm -D --defined-only`, read by
      bindings/gen/check_coverage.py) and is a function of SWIG's parse (the
      model JSON of bindings/gen/swig_model.py, or the XML),
      not variadic, with as many argument types as the C function has
      parameters, each type (and the result type) one that the C type maps to
      (the table TYPE MAPPING below, printed on a mismatch), and as many values
      as types;
    - `ccall(:jl_xxx, ...)` (no library: the Julia runtime): only the functions
      of RUNTIME, with their signatures;
    - any other form (a function pointer, `@ccall`, another library) fails, so
      nothing escapes the check.
    - `LibSPMD.spmd_xxx(args...)`, a call of a generated wrapper: the function
      exists and gets as many arguments as the C function has parameters.

That every C function is used by the idiomatic layer is checked by
bindings/gen/check_coverage.py, for every binding (run_tests.py runs it too).

Problems print as `file:line: [kind] message`, kinds: syntax, arity, type,
unknown-symbol, form. Exit status 1 when there is any.
Without arguments it checks every .jl file under bindings/julia but the
deliberately broken fixtures of bindings/julia/tests/negative.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bindings", "gen"))
from check_coverage import exported_functions  # noqa: E402

# The Julia runtime's functions the binding may ccall (no library), and their
# signatures: entering and leaving a GC-safe region around a C call that
# blocks while other threads run Julia code.
RUNTIME = {
    "jl_gc_safe_enter": ("Int8", []),
    "jl_gc_safe_leave": ("Cvoid", ["Int8"]),
}

# Functions that LibSPMD leaves out on purpose.
VARIADIC_NOTE = "variadic: not wrapped; format in Julia and call spmd_ctx_print"

TYPE_MAPPING = """\
TYPE MAPPING (C -> accepted Julia):
  void -> Cvoid | Nothing            int -> Cint | Int32
  unsigned int -> Cuint | UInt32     size_t -> Csize_t | UInt | UInt64
  int64_t -> Int64                   uint64_t -> UInt64
  int32_t -> Int32 | Cint            uint32_t -> UInt32 | Cuint
  double -> Cdouble | Float64        char -> Cchar | Int8 | UInt8
  an enum E -> E | Cint | Int32      a callback type F -> F | Ptr{Cvoid}
  a struct S (by value) -> S
  const char * -> Cstring | Ptr{Cchar} | Ptr{UInt8} | Ptr{Int8}
  char * -> Ptr{Cchar} | Ptr{UInt8} | Ptr{Int8}
  void * -> Ptr{Cvoid} | Ptr{Nothing}
  H * (H an opaque handle) -> Ptr{H} | Ptr{Cvoid}
  const char *const * -> Ptr{Cstring} | Ptr{Ptr{Cchar}} | Ptr{Ptr{UInt8}}
  T * (anything else) -> Ptr{J} | Ref{J} for every J that T maps to
  (types may be qualified: LibSPMD.spmd_array, SPMD.LibSPMD.spmd_array)"""

BASE = {
    "void": {"Cvoid", "Nothing"},
    "int": {"Cint", "Int32"},
    "unsigned int": {"Cuint", "UInt32"},
    "unsigned": {"Cuint", "UInt32"},
    "size_t": {"Csize_t", "UInt", "UInt64"},
    "int64_t": {"Int64"},
    "uint64_t": {"UInt64"},
    "int32_t": {"Int32", "Cint"},
    "uint32_t": {"UInt32", "Cuint"},
    "double": {"Cdouble", "Float64"},
    "char": {"Cchar", "Int8", "UInt8"},
}
CHAR_PTR = {"Ptr{Cchar}", "Ptr{UInt8}", "Ptr{Int8}"}


class Model:
    def __init__(self, path: str, includes: list[str]):
        if path.endswith(".json"):
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        else:
            import swig_model
            data = swig_model.load(path, includes).to_json()
        self.functions = {f["name"]: f for f in data["functions"]}
        self.enums = {e["name"] for e in data["enums"]}
        self.callbacks = {c["name"] for c in data["callbacks"]}
        self.opaque = {s["name"] for s in data["structs"] if s["opaque"]}
        self.structs = {s["name"] for s in data["structs"] if not s["opaque"]}
        self.fields = {s["name"]: s["fields"] for s in data["structs"] if not s["opaque"]}

    def accepted(self, t: dict, where: str) -> set[str]:
        """The Julia spellings C type t may take; where: param, return, pointee."""
        kind = t["kind"]
        if kind == "base":
            name = t["name"]
            if name in BASE:
                return set(BASE[name])
            if name in self.enums:
                return {name, "Cint", "Int32"}
            if name in self.callbacks:
                return {name, "Ptr{Cvoid}"}
            if name in self.structs:
                return {name}
            return set()
        if kind == "pointer":
            to = t["to"]
            if to["kind"] == "base" and to["name"] == "char":
                return (CHAR_PTR | {"Cstring"}) if to.get("const") else set(CHAR_PTR)
            if to["kind"] == "base" and to["name"] == "void":
                return {"Ptr{Cvoid}", "Ptr{Nothing}"}
            if to["kind"] == "base" and to["name"] in self.opaque:
                return {f"Ptr{{{to['name']}}}", "Ptr{Cvoid}"}
            if to["kind"] == "function":
                return {"Ptr{Cvoid}"}
            inner = self.accepted(to, "pointee")
            out = {f"Ptr{{{j}}}" for j in inner}
            if where == "param":
                out |= {f"Ref{{{j}}}" for j in inner}
            return out
        return set()  # an array or function type is never an argument or result


def exported_symbols(library: str) -> set[str]:
    try:
        return exported_functions(library)
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"check_julia.py: {' '.join(e.cmd)} failed: {e.stderr}")


def parser():
    try:
        import tree_sitter
        import tree_sitter_julia
    except ImportError as e:
        raise SystemExit(f"check_julia.py: {e}: run bindings/julia/setup and use "
                         ".venv-bindings/bin/python")
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_julia.language()))


def norm(text: str) -> str:
    text = re.sub(r"\s+", "", text)
    return re.sub(r"\b(?:SPMD\.)?LibSPMD\.", "", text)


def named(node) -> list:
    return [c for c in node.children if c.is_named and c.type not in ("comment", "line_comment",
                                                                       "block_comment")]


class Checker:
    def __init__(self, model: Model, symbols: set[str]):
        self.model = model
        self.symbols = symbols
        self.problems: list[tuple[str, int, str, str]] = []
        self.ccalls = 0
        self.wrapper_calls = 0
        self.files = 0

    def problem(self, path: str, node_or_line, kind: str, msg: str) -> None:
        line = node_or_line if isinstance(node_or_line, int) else node_or_line.start_point[0] + 1
        self.problems.append((path, line, kind, msg))

    def check_file(self, path: str, ts) -> None:
        with open(path, "rb") as fh:
            src = fh.read()
        self.files += 1
        tree = ts.parse(src)
        self.walk_errors(path, tree.root_node)
        self.walk_calls(path, tree.root_node)

    def walk_errors(self, path: str, node) -> None:
        if node.type == "ERROR" or node.is_missing:
            first, last = node.start_point[0] + 1, node.end_point[0] + 1
            what = f"missing {node.type}" if node.is_missing else "cannot parse"
            if last > first:
                what += f" (lines {first}-{last})"
            snippet = node.text.decode(errors="replace").split("\n")[0][:60]
            self.problem(path, node, "syntax", f"{what}: {snippet!r}")
            if node.type == "ERROR":
                return
        if node.has_error or node.is_missing:
            for c in node.children:
                self.walk_errors(path, c)

    def walk_calls(self, path: str, node) -> None:
        if node.type == "call_expression" and node.children:
            callee = node.children[0]
            if callee.type == "identifier" and callee.text == b"ccall":
                self.check_ccall(path, node)
            elif callee.type == "field_expression" and \
                    re.fullmatch(r"(?:SPMD\.)?LibSPMD\.spmd_\w+", callee.text.decode()):
                self.check_wrapper_call(path, node, callee.text.decode().split(".")[-1])
            elif callee.type == "field_expression" and callee.text.endswith(b".ccall"):
                self.problem(path, node, "form", "qualified ccall: write ccall(...)")
        if node.type == "macrocall_expression" and b"@ccall" in node.text.split(b"(")[0]:
            self.problem(path, node, "form", "@ccall is not checked: write ccall(...)")
        for c in node.children:
            self.walk_calls(path, c)

    def check_wrapper_call(self, path: str, node, name: str) -> None:
        """A call of a LibSPMD wrapper, `LibSPMD.spmd_xxx(args...)`: the
        function exists (not the variadic one) and gets one argument per C
        parameter, as its generated wrapper takes."""
        self.wrapper_calls += 1
        arglist = next((c for c in node.children if c.type == "argument_list"), None)
        args = named(arglist) if arglist is not None else []
        if name in self.model.fields:  # a struct's default constructor
            if len(args) != len(self.model.fields[name]):
                self.problem(path, node, "arity",
                             f"LibSPMD.{name}(...) with {len(args)} values; the struct has "
                             f"{len(self.model.fields[name])} fields")
            return
        f = self.model.functions.get(name)
        if f is None or f["variadic"]:
            why = "no function of SWIG's parse" if f is None else VARIADIC_NOTE
            self.problem(path, node, "unknown-symbol", f"LibSPMD.{name}: {why}")
            return
        if any(a.type in ("splat_expression", "keyword_argument") or
               (a.type == "assignment") for a in args):
            self.problem(path, node, "form", f"LibSPMD.{name}: pass plain positional arguments")
            return
        if len(args) != len(f["params"]):
            self.problem(path, node, "arity",
                         f"LibSPMD.{name} called with {len(args)} arguments, its C function has "
                         f"{len(f['params'])}")

    def check_ccall(self, path: str, node) -> None:
        self.ccalls += 1
        arglist = next((c for c in node.children if c.type == "argument_list"), None)
        args = named(arglist) if arglist is not None else []
        if len(args) < 3:
            self.problem(path, node, "form", f"ccall with {len(args)} arguments")
            return
        target, ret, types, values = args[0], args[1], args[2], args[3:]
        if types.type != "tuple_expression":
            self.problem(path, types, "form",
                         f"ccall argument types must be a tuple, not {norm(types.text.decode())}")
            return
        jtypes = [norm(t.text.decode()) for t in named(types)]
        jret = norm(ret.text.decode())
        if any(v.type == "splat_expression" for v in values):
            self.problem(path, node, "form", "splatted ccall values cannot be counted")
        elif len(values) != len(jtypes):
            self.problem(path, node, "arity",
                         f"ccall passes {len(values)} values for {len(jtypes)} argument types")
        # The target: (:name, libspmd[]) or :jl_name.
        if target.type == "quote_expression":
            name = target.text.decode().lstrip(":")
            if name not in RUNTIME:
                self.problem(path, target, "unknown-symbol",
                             f"ccall(:{name}, ...) without a library: only the Julia runtime's "
                             f"{', '.join(sorted(RUNTIME))} may be called so")
                return
            want_ret, want_args = RUNTIME[name]
            if jret != want_ret or jtypes != want_args:
                self.problem(path, node, "type",
                             f"{name}: ({', '.join(jtypes)}) -> {jret}, expected "
                             f"({', '.join(want_args)}) -> {want_ret}")
            return
        parts = named(target) if target.type == "tuple_expression" else []
        if len(parts) != 2 or parts[0].type != "quote_expression":
            self.problem(path, target, "form",
                         f"ccall target {target.text.decode()!r}: write (:spmd_xxx, libspmd[])")
            return
        name = parts[0].text.decode().lstrip(":")
        lib = norm(parts[1].text.decode())
        if lib != "libspmd[]":
            self.problem(path, parts[1], "form", f"ccall of {name} opens {lib!r}, not libspmd[]")
        f = self.model.functions.get(name)
        if name not in self.symbols:
            where = "nor is it in SWIG's parse" if f is None else "though SWIG's parse has it"
            self.problem(path, target, "unknown-symbol",
                         f"{name} is not exported by the library ({where})")
            return
        if f is None:
            self.problem(path, target, "unknown-symbol",
                         f"{name} is exported but is no function of SWIG's parse")
            return
        if f["variadic"]:
            self.problem(path, target, "form", f"{name} is {VARIADIC_NOTE}")
            return
        params = f["params"]
        if len(jtypes) != len(params):
            csig = ", ".join(p["c"] + " " + p["name"] for p in params)
            self.problem(path, node, "arity",
                         f"ccall {name}: {len(jtypes)} argument types, the C function has "
                         f"{len(params)}: {f['returns_c']} {name}({csig})")
            return
        ok_ret = self.model.accepted(f["returns"], "return")
        if jret not in ok_ret:
            self.problem(path, ret, "type",
                         f"ccall {name}: result {jret} does not match C {f['returns_c']} "
                         f"(accepted: {' | '.join(sorted(ok_ret))})")
        for i, (jt, p) in enumerate(zip(jtypes, params)):
            ok = self.model.accepted(p["type"], "param")
            if jt not in ok:
                self.problem(path, named(types)[i], "type",
                             f"ccall {name}: argument {i + 1} ({p['c']} {p['name']}) is {jt}, "
                             f"accepted: {' | '.join(sorted(ok)) or 'nothing'}")


def jl_files(paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not (
                    os.path.abspath(os.path.join(root, d)) ==
                    os.path.join(HERE, "tests", "negative")))
                out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".jl")]
        else:
            out.append(p)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", required=True, help="the built libspmd.so")
    ap.add_argument("--model", required=True, help="spmd-model.json, or SWIG's spmd.xml")
    ap.add_argument("--include", action="append", default=[],
                    help="header directories (only with an XML --model)")
    ap.add_argument("paths", nargs="*", help="files or directories (default: bindings/julia)")
    args = ap.parse_args(argv)

    for what, path in (("library", args.library), ("model", args.model)):
        if not os.path.exists(path):
            print(f"FAIL: the {what} {path} does not exist (build libspmd and the target "
                  "spmd_bindings_parse first)")
            return 1
    model = Model(args.model, args.include)
    checker = Checker(model, exported_symbols(args.library))
    ts = parser()
    files = jl_files(args.paths or [HERE])
    for f in files:
        checker.check_file(f, ts)
    for path, line, kind, msg in sorted(checker.problems, key=lambda p: (p[0], p[1])):
        print(f"{os.path.relpath(path, ROOT)}:{line}: [{kind}] {msg}")
    if any(k == "type" for _, _, k, _ in checker.problems):
        print(TYPE_MAPPING)
    nvar = sum(1 for f in model.functions.values() if f["variadic"])
    summary = (f"{checker.files} .jl files parsed with tree-sitter-julia, {checker.ccalls} ccalls "
               f"checked against {os.path.basename(args.library)} and SWIG's parse "
               f"({len(model.functions)} functions, {nvar} variadic and not wrapped), "
               f"{checker.wrapper_calls} calls of LibSPMD wrappers checked for their argument count")
    if checker.problems:
        print(f"FAIL: {len(checker.problems)} problems; {summary}")
        return 1
    print(f"ok: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
