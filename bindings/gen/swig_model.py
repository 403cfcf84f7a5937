"""The C API as SWIG parsed it: bindings/swig/spmd.i read by `swig -xml`,
turned into a small model the Rust and Julia generators and the binding
checks share.

    model = swig_model.load(xml_path, include_dirs)

gives functions, enums, structs (opaque or with fields), callback types and
constants, each with the Doxygen comment of its declaration. Types are
`CType` trees built from SWIG's type strings ("p.q(const).int64_t" is
`const int64_t *`), so a generator never parses C itself.

Run as a program it prints the model as JSON:

    python3 swig_model.py spmd.xml --include include --include build/include
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field


# ---- Types -----------------------------------------------------------------


@dataclass(frozen=True)
class CType:
    """A C type: kind is 'base' (name), 'pointer' (to), 'array' (to, length)
    or 'function' (to = return type, params). const qualifies this level."""

    kind: str
    name: str = ""
    to: "CType | None" = None
    const: bool = False
    length: str = ""
    params: tuple = ()

    def is_pointer(self) -> bool:
        return self.kind == "pointer"

    def pointee(self) -> "CType":
        assert self.to is not None
        return self.to

    def c(self, declarator: str = "") -> str:
        """The C spelling, with an optional declarator name."""
        if self.kind == "base":
            text = ("const " if self.const else "") + self.name
            return f"{text} {declarator}".rstrip()
        if self.kind == "pointer":
            inner = "*" + (" const" if self.const else "")
            if declarator:
                inner += " " + declarator if self.const else declarator
            assert self.to is not None
            if self.to.kind in ("function", "array"):
                inner = f"({inner})"
            return self.to.c(inner)
        if self.kind == "array":
            assert self.to is not None
            return self.to.c(f"{declarator}[{self.length}]")
        if self.kind == "function":
            assert self.to is not None
            args = ", ".join(p.c() for p in self.params) or "void"
            return self.to.c(f"{declarator}({args})")
        raise ValueError(self.kind)

    def to_json(self):
        d = {"kind": self.kind}
        if self.name:
            d["name"] = self.name
        if self.const:
            d["const"] = True
        if self.to is not None:
            d["to"] = self.to.to_json()
        if self.length:
            d["length"] = self.length
        if self.kind == "function":
            d["params"] = [p.to_json() for p in self.params]
        return d


_QUALIFIER = re.compile(r"q\(([^)]*)\)\.")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Splits at `sep` outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def parse_type(swig: str) -> CType:
    """SWIG's type string ("p.q(const).p.q(const).char") as a CType."""
    if swig.startswith("p."):
        rest = swig[2:]
        const = False
        m = _QUALIFIER.match(rest)
        if m:
            const = "const" in m.group(1)
            rest = rest[m.end():]
        # A qualifier after "p." qualifies the pointee, not the pointer.
        inner = parse_type(rest)
        if const:
            inner = _with_const(inner)
        return CType("pointer", to=inner)
    m = _QUALIFIER.match(swig)
    if m:
        return _with_const(parse_type(swig[m.end():]))
    if swig.startswith("a("):
        close = swig.index(")")
        return CType("array", length=swig[2:close], to=parse_type(swig[close + 2:]))
    if swig.startswith("f("):
        depth, i = 0, 1
        while True:
            if swig[i] == "(":
                depth += 1
            elif swig[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        args = _split_top(swig[2:i])
        params = tuple(parse_type(a) for a in args if a not in ("", "void"))
        return CType("function", to=parse_type(swig[i + 2:]), params=params)
    name = swig.replace("struct ", "").replace("enum ", "").strip()
    return CType("base", name=name)


def _with_const(t: CType) -> CType:
    return CType(t.kind, t.name, t.to, True, t.length, t.params)


def combine(decl: str, base: str) -> CType:
    """A declaration's full type: SWIG keeps the declarator ("p.", "f(..).")
    apart from the base type."""
    return parse_type(decl + base)


# ---- Model -----------------------------------------------------------------


@dataclass
class Param:
    name: str
    type: CType

    def to_json(self):
        return {"name": self.name, "type": self.type.to_json(), "c": self.type.c()}


@dataclass
class Function:
    name: str
    header: str
    returns: CType
    params: list[Param]
    variadic: bool = False
    doc: str = ""

    def to_json(self):
        return {"name": self.name, "header": self.header, "returns": self.returns.to_json(),
                "returns_c": self.returns.c(), "params": [p.to_json() for p in self.params],
                "variadic": self.variadic, "doc": self.doc}


@dataclass
class EnumItem:
    name: str
    value: int
    doc: str = ""


@dataclass
class Enum:
    name: str
    header: str
    items: list[EnumItem]
    doc: str = ""

    def to_json(self):
        return {"name": self.name, "header": self.header, "doc": self.doc,
                "items": [{"name": i.name, "value": i.value, "doc": i.doc} for i in self.items]}


@dataclass
class Field:
    name: str
    type: CType
    doc: str = ""


@dataclass
class Struct:
    name: str
    header: str
    fields: list[Field]  # empty for an opaque handle type
    opaque: bool
    doc: str = ""

    def to_json(self):
        return {"name": self.name, "header": self.header, "opaque": self.opaque, "doc": self.doc,
                "fields": [{"name": f.name, "type": f.type.to_json(), "c": f.type.c(), "doc": f.doc}
                           for f in self.fields]}


@dataclass
class Callback:
    name: str
    header: str
    returns: CType
    params: list[Param]
    doc: str = ""

    def to_json(self):
        return {"name": self.name, "header": self.header, "returns": self.returns.to_json(),
                "params": [p.to_json() for p in self.params], "doc": self.doc}


@dataclass
class Constant:
    name: str
    header: str
    type: str
    value: str
    doc: str = ""


@dataclass
class Model:
    functions: list[Function] = field(default_factory=list)
    enums: list[Enum] = field(default_factory=list)
    structs: list[Struct] = field(default_factory=list)
    callbacks: list[Callback] = field(default_factory=list)
    constants: list[Constant] = field(default_factory=list)

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_json(self):
        return {
            "functions": [f.to_json() for f in self.functions],
            "enums": [e.to_json() for e in self.enums],
            "structs": [s.to_json() for s in self.structs],
            "callbacks": [c.to_json() for c in self.callbacks],
            "constants": [{"name": c.name, "header": c.header, "type": c.type, "value": c.value,
                           "doc": c.doc} for c in self.constants],
        }


def _attrs(node: ET.Element) -> dict[str, str]:
    lst = node.find("attributelist")
    if lst is None:
        return {}
    return {a.get("name"): a.get("value") for a in lst.findall("attribute")}


def _params(node: ET.Element) -> tuple[list[Param], bool]:
    lst = node.find("attributelist")
    plist = lst.find("parmlist") if lst is not None else None
    params, variadic = [], False
    if plist is None:
        return params, variadic
    for p in plist.findall("parm"):
        a = _attrs(p)
        if a.get("type") == "v(...)":
            variadic = True
            continue
        if a.get("type") == "void" and not a.get("name"):
            continue
        params.append(Param(a.get("name", ""), parse_type(a["type"])))
    return params, variadic


def _header_of(stack: list[str]) -> str:
    for name in reversed(stack):
        if "/spmd/" in name:
            return "spmd/" + name.split("/spmd/", 1)[1]
    return ""


def load(xml_path: str, include_dirs: list[str] | None = None) -> Model:
    """The model of the parse at xml_path; include_dirs (where the public
    headers are) supply the Doxygen comments."""
    root = ET.parse(xml_path).getroot()
    model = Model()
    seen_enums: set[str] = set()

    def walk(node: ET.Element, includes: list[str]) -> None:
        for child in node:
            tag = child.tag
            if tag == "include":
                walk(child, includes + [_attrs(child).get("name", "")])
                continue
            header = _header_of(includes)
            if not header:
                continue  # SWIG's own library files
            a = _attrs(child)
            if tag == "cdecl":
                kind = a.get("kind")
                name = a.get("name", "")
                decl = a.get("decl", "")
                if kind == "function" and decl.startswith("f("):
                    params, variadic = _params(child)
                    ret = combine(decl[_close_of(decl) + 2:], a["type"])
                    model.functions.append(Function(name, header, ret, params, variadic))
                elif kind == "typedef" and decl.startswith("p.f("):
                    params, _ = _params(child)
                    ret = parse_type(a["type"])
                    model.callbacks.append(Callback(name, header, ret, params))
                elif kind == "typedef" and a.get("type", "").startswith("struct ") and decl == "":
                    # typedef struct x x; an opaque handle unless a class
                    # node defines it (handled below).
                    if not any(s.name == name for s in model.structs):
                        model.structs.append(Struct(name, header, [], True))
            elif tag == "class":
                name = a.get("tdname") or a.get("name", "")
                fields = []
                for member in child.findall("cdecl"):
                    m = _attrs(member)
                    if m.get("kind") != "variable":
                        continue
                    fields.append(Field(m["name"], combine(m.get("decl", ""), m["type"])))
                model.structs = [s for s in model.structs if s.name != name]
                model.structs.append(Struct(name, header, fields, False))
            elif tag == "enum":
                name = a.get("tdname") or a.get("name", "")
                if name in seen_enums:
                    continue
                seen_enums.add(name)
                items = []
                for it in child.findall("enumitem"):
                    ia = _attrs(it)
                    items.append(EnumItem(ia["name"], int(ia.get("enumvalue", "0"), 0)))
                model.enums.append(Enum(name, header, items))
            elif tag == "constant":
                model.constants.append(Constant(a["name"], header, a.get("type", ""),
                                                a.get("value", "")))

    walk(root, [])
    _add_unevaluated_macros(model, include_dirs or [])
    _evaluate_constants(model)
    # A struct defined by a class node wins over its opaque forward typedef.
    defined = {s.name for s in model.structs if not s.opaque}
    model.structs = [s for s in model.structs if not (s.opaque and s.name in defined)]
    if include_dirs:
        _attach_docs(model, include_dirs)
    return model


# Values SWIG leaves out because they name a limit of <stdint.h>.
_LIMITS = {"INT64_MAX": ("int64_t", str(2**63 - 1))}


def _add_unevaluated_macros(model: Model, include_dirs: list[str]) -> None:
    """Object-like macros SWIG could not turn into constants: limits of
    <stdint.h> (SPMD_TIMEOUT_FOREVER) and aliases of enumerators
    (SPMD_UNARY_SIGMOID), typed as what they stand for."""
    known = {c.name for c in model.constants}
    items = {it.name: (e.name, it.value) for e in model.enums for it in e.items}
    for header in sorted({f.header for f in model.functions}):
        path = next((os.path.join(d, header) for d in include_dirs
                     if os.path.exists(os.path.join(d, header))), None)
        if path is None:
            continue
        for m in re.finditer(r"^#define\s+(SPMD_\w+)[ \t]+(\w+)[ \t]*$",
                             open(path, encoding="utf-8").read(), re.M):
            name, value = m.group(1), m.group(2)
            if name in known:
                continue
            if value in _LIMITS:
                ctype, number = _LIMITS[value]
                model.constants.append(Constant(name, header, ctype, number))
            elif value in items:
                enum, number = items[value]
                model.constants.append(Constant(name, header, enum, str(number)))


def _evaluate_constants(model: Model) -> None:
    """Integer constants as plain decimal text: SWIG keeps the macro's
    arithmetic ("(1*10000+2*100+0)" for SPMD_VERSION_NUMBER)."""
    for c in model.constants:
        if parse_type(c.type).is_pointer() or re.fullmatch(r"-?\d+", c.value):
            continue
        if not re.fullmatch(r"[\d\s()+\-*/]+", c.value):
            raise ValueError(f"constant {c.name}: cannot evaluate {c.value!r}")
        c.value = str(int(eval(c.value, {"__builtins__": {}})))  # integer arithmetic only


def _close_of(decl: str) -> int:
    depth = 0
    for i, ch in enumerate(decl):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(decl)


# ---- Doxygen comments ------------------------------------------------------

_BLOCK = re.compile(r"/\*\*(?!<)(.*?)\*/", re.S)
_TRAILING = re.compile(r"/\*\*<(.*?)\*/", re.S)


def clean_comment(body: str) -> str:
    """A comment's text without the leading stars, lines kept."""
    lines = []
    for line in body.splitlines():
        line = re.sub(r"^\s*\*( |$)?", "", line).rstrip()
        lines.append(line)
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines).strip()


def _attach_docs(model: Model, include_dirs: list[str]) -> None:
    docs: dict[str, str] = {}       # declaration name -> its /** */ comment
    members: dict[tuple, str] = {}  # (type, member) -> its /**< */ comment
    for header in sorted({x.header for x in model.functions + model.enums + model.structs}):
        path = next((os.path.join(d, header) for d in include_dirs
                     if os.path.exists(os.path.join(d, header))), None)
        if path is None:
            continue
        text = open(path, encoding="utf-8").read()
        _scan_blocks(text, docs)
        _scan_members(text, members)
    for f in model.functions:
        f.doc = docs.get(f.name, "")
    for c in model.callbacks:
        c.doc = docs.get(c.name, "")
    for e in model.enums:
        e.doc = docs.get(e.name, "")
        for it in e.items:
            it.doc = members.get((e.name, it.name), docs.get(it.name, ""))
    for s in model.structs:
        s.doc = docs.get(s.name, "")
        for f in s.fields:
            f.doc = members.get((s.name, f.name), docs.get(f"{s.name}.{f.name}", ""))
    for c in model.constants:
        c.doc = docs.get(c.name, "")


_DECL_NAME = [
    re.compile(r"\s*SPMD_API\s[^;{]*?\b(\w+)\s*\(", re.S),           # function
    re.compile(r"\s*typedef\s+(?:struct|enum)\s+(\w+)", re.S),        # struct, enum
    re.compile(r"\s*typedef\s+[^;(]*\(\s*\*\s*(\w+)\s*\)", re.S),     # callback
    re.compile(r"\s*#\s*define\s+(\w+)", re.S),                       # macro
    re.compile(r"\s*(\w+)\s*=", re.S),                                # enumerator
    re.compile(r"\s*[\w\s\*]+?\b(\w+)\s*(?:\[[^\]]*\])?\s*;", re.S),  # field
]


def _scan_blocks(text: str, docs: dict[str, str]) -> None:
    for m in _BLOCK.finditer(text):
        rest = text[m.end():m.end() + 400]
        for pat in _DECL_NAME:
            d = pat.match(rest)
            if d:
                name = d.group(1)
                # A field or enumerator documented by a block above it is
                # keyed by its enclosing type too.
                owner = _enclosing_type(text, m.start())
                if owner and pat in _DECL_NAME[4:]:
                    docs[f"{owner}.{name}"] = clean_comment(m.group(1))
                docs.setdefault(name, clean_comment(m.group(1)))
                break


def _enclosing_type(text: str, pos: int) -> str:
    """The typedef struct/enum whose braces enclose pos, or ""."""
    for m in re.finditer(r"typedef\s+(?:struct|enum)\s+(\w+)\s*\{", text[:pos]):
        close = text.find("}", m.end())
        if close == -1 or close > pos:
            return m.group(1)
    return ""


def _scan_members(text: str, members: dict[tuple, str]) -> None:
    for block in re.finditer(r"typedef\s+(struct|enum)\s+(\w+)\s*\{(.*?)\}", text, re.S):
        owner, body = block.group(2), block.group(3)
        for line_m in _TRAILING.finditer(body):
            before = body[:line_m.start()]
            decl = before[before.rfind("\n") + 1:]
            ident = _member_name(decl)
            if ident:
                members[(owner, ident)] = clean_comment(line_m.group(1))


def _member_name(decl: str) -> str:
    decl = decl.strip()
    m = re.match(r"^(\w+)\s*=", decl)  # enumerator
    if m:
        return m.group(1)
    m = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*;\s*$", decl)  # field
    if m:
        return m.group(1)
    m = re.match(r"^(\w+)\s*,?$", decl)  # enumerator without a value
    return m.group(1) if m else ""


def generator_main(argv: list[str], doc: str, name: str, render) -> int:
    """The command line every generator shares: XML [--include DIR]...
    [-o FILE | --check FILE]. Writes render(model) to FILE (or stdout), or
    with --check compares it with FILE, printing a diff and failing (exit
    1) when FILE is stale."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("xml", help="SWIG's XML parse of bindings/swig/spmd.i (build/bindings/spmd.xml)")
    ap.add_argument("--include", action="append", default=[],
                    help="where the public headers are (for the Doxygen comments)")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("-o", "--output", help="file to write (default: stdout)")
    group.add_argument("--check", metavar="FILE",
                       help="compare with FILE instead of writing; exit 1 on a difference")
    args = ap.parse_args(argv)
    if not os.path.exists(args.xml):
        print(f"{name}: {args.xml} is missing: build the target spmd_bindings_parse",
              file=sys.stderr)
        return 2
    text = render(load(args.xml, args.include))
    if args.check:
        try:
            with open(args.check, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current == text:
            print(f"ok: {args.check} is what {name} makes from the current parse")
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(True), text.splitlines(True), args.check, "regenerated"))
        print(f"FAIL: {args.check} is stale; regenerate it with {name} -o {args.check}")
        return 1
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xml")
    ap.add_argument("--include", action="append", default=[])
    args = ap.parse_args(argv)
    json.dump(load(args.xml, args.include).to_json(), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
