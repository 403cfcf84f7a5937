"""Generates LibSPMD.jl, the raw layer of the Julia package (bindings/julia/SPMD),
from SWIG's XML parse of bindings/swig/spmd.i (bindings/gen/swig_model.py).

    python3 bindings/gen/gen_julia.py build/bindings/spmd.xml \\
        --include include --include build/include \\
        -o bindings/julia/SPMD/src/LibSPMD.jl

    # the CTest binding_julia_ffi_fresh: regenerate in memory, fail on any
    # difference from the checked-in file
    python3 bindings/gen/gen_julia.py build/bindings/spmd.xml \\
        --include include --include build/include \\
        --check bindings/julia/SPMD/src/LibSPMD.jl

What it writes: one module LibSPMD with `libspmd` (where the library is
found), an opaque `mutable struct` per handle type, an isbits `struct` per C
struct (fixed arrays as NTuple, the C layout), a Cint alias and constants per
enum, the header constants, a Ptr{Cvoid} alias per callback type, and one
function per C function, `spmd_xxx(args...) = ccall((:spmd_xxx, libspmd[]),
RetT, (ArgT...,), args...)`, its Doxygen comment as the docstring.

The variadic spmd_ctx_printf is left out (a comment says so): the idiomatic
layer formats in Julia and calls spmd_ctx_print. bindings/julia/check_julia.py
knows it.

Type mapping (the checker keeps its own, independent copy):
  void -> Cvoid, int -> Cint, unsigned int -> Cuint, size_t -> Csize_t,
  int64_t -> Int64, uint64_t -> UInt64, uint32_t -> UInt32, double -> Cdouble,
  an enum -> its alias (= Cint), a callback type -> its alias (= Ptr{Cvoid}),
  const char * (argument or result) -> Cstring, char * and struct fields of
  char * -> Ptr{Cchar}, const char *const * -> Ptr{Cstring}, void * -> Ptr{Cvoid},
  T * -> Ptr{T}, T[n] -> NTuple{n,T}.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swig_model  # noqa: E402
from swig_model import CType  # noqa: E402

BASE = {
    "void": "Cvoid",
    "int": "Cint",
    "unsigned int": "Cuint",
    "unsigned": "Cuint",
    "size_t": "Csize_t",
    "int64_t": "Int64",
    "uint64_t": "UInt64",
    "int32_t": "Int32",
    "uint32_t": "UInt32",
    "uint16_t": "UInt16",
    "uint8_t": "UInt8",
    "double": "Cdouble",
    "float": "Cfloat",
    "char": "Cchar",
}

# Julia's reserved words: a C parameter so named gets a trailing underscore.
KEYWORDS = {
    "abstract", "baremodule", "begin", "break", "catch", "const", "continue", "do", "else",
    "elseif", "end", "export", "false", "finally", "for", "function", "global", "if", "import",
    "in", "isa", "let", "local", "macro", "module", "mutable", "outer", "primitive", "public",
    "quote", "return", "struct", "true", "try", "type", "using", "where", "while",
}


class Mapper:
    def __init__(self, model: swig_model.Model):
        self.enums = {e.name for e in model.enums}
        self.callbacks = {c.name for c in model.callbacks}
        self.structs = {s.name for s in model.structs}

    def jl(self, t: CType, where: str) -> str:
        """The Julia type of t; where is 'param', 'return', 'field' or 'pointee'."""
        if t.kind == "base":
            if t.name in BASE:
                return BASE[t.name]
            if t.name in self.enums or t.name in self.callbacks or t.name in self.structs:
                return t.name
            raise ValueError(f"no Julia type for C type {t.c()!r}")
        if t.kind == "array":
            assert t.to is not None
            return f"NTuple{{{t.length}, {self.jl(t.to, 'field')}}}"
        if t.kind == "pointer":
            to = t.pointee()
            if to.kind == "base" and to.name == "char":
                if to.const and where in ("param", "return"):
                    return "Cstring"
                return "Ptr{Cchar}"
            if to.kind == "pointer" and to.const and to.pointee().kind == "base" \
                    and to.pointee().name == "char" and to.pointee().const:
                return "Ptr{Cstring}"  # const char *const *: an array of strings
            if to.kind == "function":
                return "Ptr{Cvoid}"
            return f"Ptr{{{self.jl(to, 'pointee')}}}"
        if t.kind == "function":
            return "Ptr{Cvoid}"
        raise ValueError(t.kind)


def julia_string(text: str) -> str:
    """text inside a Julia triple-quoted string: no interpolation, no escapes."""
    return text.replace("\\", "\\\\").replace("$", "\\$").replace('"""', '\\"\\"\\"')


def docstring(text: str) -> str:
    return '"""\n' + julia_string(text.rstrip()) + '\n"""'


def comment(text: str, indent: str) -> list[str]:
    return [f"{indent}# {line}".rstrip() for line in text.split("\n")] if text else []


def arg_name(name: str, i: int) -> str:
    name = name or f"arg{i + 1}"
    return name + "_" if name in KEYWORDS else name


def constant_value(c: swig_model.Constant, enums: set[str]) -> tuple[str, str]:
    """(Julia expression, note) for a header constant."""
    if c.type.endswith("char"):
        return '"' + c.value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"', "C string"
    if c.type in enums:
        return f"{c.type}({int(c.value)})", c.type
    number = c.value  # evaluated by swig_model
    if c.type == "int64_t":
        return f"Int64({number})", "int64_t"
    if c.type in ("int", "unsigned int"):
        return str(number), f"C {c.type}; a Julia Int here"
    raise ValueError(f"constant {c.name}: unknown type {c.type!r}")


HEADER = '''\
# Generated by bindings/gen/gen_julia.py from bindings/swig/spmd.i (SWIG's XML
# parse of the public headers, include/spmd/*.h); do not edit. Regenerate:
#   python3 bindings/gen/gen_julia.py build/bindings/spmd.xml \\
#       --include include --include build/include -o bindings/julia/SPMD/src/LibSPMD.jl
# The CTest binding_julia_ffi_fresh fails when this file differs from what the
# current headers give.

"""
    LibSPMD

The raw layer of SPMD.jl: one Julia function per C function of libspmd, each
a single `ccall` with the C signature, and the C types, enums and constants.
Every function returns what the C function returns (a `spmd_status` for the
fallible ones); nothing is checked or converted here. The idiomatic layer
(module `SPMD`) is written on top of it.

Types: handles are `Ptr{spmd_xxx}` to opaque `mutable struct`s; the option and
info structs are isbits `struct`s with the C layout, to fill through a `Ref`
with their `spmd_xxx_init` function; enums are `Cint` aliases with one
constant per enumerator; callback types are `Ptr{Cvoid}` aliases (make them
with `@cfunction`).

The variadic `spmd_ctx_printf` is not wrapped: format the text in Julia and
call `spmd_ctx_print`.
"""
module LibSPMD

"""
    libspmd[]

The shared library every `ccall` here opens, resolved when the module is
loaded (`__init__`), not when it is precompiled: the environment variable
`JULIA_SPMD_LIBRARY`, else `SPMD_LIBRARY` (a path to libspmd.so, or a name
the loader finds), else `"libspmd"`, which the system's loader finds on its
search path (`LD_LIBRARY_PATH`, `DYLD_LIBRARY_PATH`, the standard directories,
or a directory pushed onto `Libdl.DL_LOAD_PATH`). The first `ccall` opens it;
changing it afterwards has no effect.
"""
const libspmd = Ref{String}("libspmd")

"""
    find_libspmd() -> String

The library `libspmd[]` is set to: `\\$JULIA_SPMD_LIBRARY`, else
`\\$SPMD_LIBRARY`, else `"libspmd"`.
"""
function find_libspmd()
    for var in ("JULIA_SPMD_LIBRARY", "SPMD_LIBRARY")
        path = get(ENV, var, "")
        isempty(path) || return path
    end
    return "libspmd"
end

function __init__()
    libspmd[] = find_libspmd()
end
'''


def generate(model: swig_model.Model) -> str:
    m = Mapper(model)
    out: list[str] = [HEADER]

    out.append("# ---- Enums: a Cint alias per enum, a constant per enumerator ----------------\n")
    for e in model.enums:
        out.append(docstring(f"C enum `{e.name}` ({e.header}), a `Cint`.\n\n{e.doc}"))
        out.append(f"const {e.name} = Cint\n")
        for it in e.items:
            if it.doc:
                out.append(docstring(f"`{e.name}`: {it.doc}"))
            out.append(f"const {it.name} = {e.name}({it.value})\n")

    out.append("# ---- Handle types: opaque, used through Ptr -------------------------------\n")
    for s in model.structs:
        if s.opaque:
            out.append(docstring(f"C `{s.name}` ({s.header}), an opaque handle: "
                                 f"used as `Ptr{{{s.name}}}`.\n\n{s.doc}"))
            out.append(f"mutable struct {s.name} end\n")

    out.append("# ---- Callback types: C function pointers, made with @cfunction -------------\n")
    for c in model.callbacks:
        params = ", ".join(m.jl(p.type, "param") for p in c.params)
        csig = f"{c.returns.c()} (*)({', '.join(p.type.c() + ' ' + p.name for p in c.params)})"
        out.append(docstring(
            f"C callback type `{c.name}` ({c.header}): `{csig}`.\n\n"
            f"A `Ptr{{Cvoid}}`; make one with `@cfunction(f, {m.jl(c.returns, 'return')}, "
            f"({params}{',' if len(c.params) == 1 else ''}))`.\n\n{c.doc}"))
        out.append(f"const {c.name} = Ptr{{Cvoid}}\n")

    out.append("# ---- Structs, with the C layout --------------------------------------------\n")
    for s in model.structs:
        if s.opaque:
            continue
        out.append(docstring(f"C `struct {s.name}` ({s.header}), with the same layout.\n\n{s.doc}"))
        lines = [f"struct {s.name}"]
        for f in s.fields:
            lines += comment(f.doc, "    ")
            lines.append(f"    {f.name}::{m.jl(f.type, 'field')}  # C: {f.type.c()}")
        lines.append("end\n")
        out.append("\n".join(lines))

    out.append("# ---- Constants of the headers ----------------------------------------------\n")
    for c in model.constants:
        value, note = constant_value(c, m.enums)
        doc = f"{c.doc}\n\n({c.header}; {note})" if c.doc else f"({c.header}; {note})"
        out.append(docstring(doc))
        out.append(f"const {c.name} = {value}\n")

    out.append("# ---- Functions: one ccall each, in the order of the headers ----------------\n")
    for f in model.functions:
        csig = f"{f.returns.c()} {f.name}(" + ", ".join(
            p.type.c(p.name) for p in f.params) + (", ..." if f.variadic else "") + ")"
        if f.variadic:
            out.append(f"# {f.name} ({f.header}) is variadic, `{csig}`: not wrapped.\n"
                       "# The idiomatic layer formats the text in Julia and calls spmd_ctx_print.\n")
            continue
        names = [arg_name(p.name, i) for i, p in enumerate(f.params)]
        types = [m.jl(p.type, "param") for p in f.params]
        ret = m.jl(f.returns, "return")
        sig = f"{f.name}({', '.join(names)}) -> {ret}"
        out.append(docstring(f"    {sig}\n\nC ({f.header}): `{csig}`\n\n{f.doc}"))
        type_tuple = "(" + ", ".join(types) + ("," if len(types) == 1 else "") + ")"
        out.append(f"function {f.name}({', '.join(names)})\n"
                   f"    ccall((:{f.name}, libspmd[]), {ret},\n"
                   f"          {type_tuple}" + (f",\n          {', '.join(names)})\n" if names else ")\n")
                   + "end\n")

    out.append("end # module LibSPMD")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    return swig_model.generator_main(argv, __doc__, "gen_julia.py", generate)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
