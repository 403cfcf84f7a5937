#!/usr/bin/env python3
"""Checks that the public headers carry Doxygen documentation.

The Go, Rust and Julia bindings are generated from SWIG's parse of the
headers and carry their comments as docstrings, so every public
declaration needs a machine-readable one. A header fails when:

  - it has no /** @file */ comment;
  - an SPMD_API function has no /** */ comment directly above it (no blank
    line between), or one without a description before its first command;
  - its @param lines miss a parameter, name one the prototype does not
    have, repeat one, or are not in the prototype's order (a variadic
    function documents "..." too);
  - a function that returns a value has no @return, or one that returns
    void has one (Doxygen warns about a documented empty return type);
  - a typedef (struct, enum, opaque handle, function pointer) has no
    /** */ comment directly above it;
  - a struct field or enumerator has neither a /** */ comment above it nor
    a /**< */ comment after it;
  - a macro (other than the include guard) has neither a /** */ comment
    directly above it nor an @def block naming it.

usage:
  check-docs.py PATH...                      headers, or directories searched
                                             for *.h recursively; exit 1 on
                                             any failure, each listed
  check-docs.py --expect-failures HEADER...  the negative control: each
                                             header lists the failures the
                                             check must report in lines
                                             "EXPECT: <message>"; exit 0 only
                                             when it reports exactly those
"""

import re
import sys
from pathlib import Path

IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {"const", "volatile", "restrict", "struct", "enum", "union", "unsigned",
            "signed", "short", "long", "int", "char", "float", "double", "void",
            "size_t", "_Bool"}


class Source:
    """A header split into comments and code (comments blanked, offsets kept)."""

    def __init__(self, path):
        self.path = path
        self.text = path.read_text(encoding="utf-8")
        self.comments = []  # (start, end, text), end exclusive
        code = list(self.text)
        i, n = 0, len(self.text)
        t = self.text
        while i < n:
            if t.startswith("/*", i):
                j = t.find("*/", i + 2)
                j = n if j < 0 else j + 2
                self.comments.append((i, j, t[i:j]))
                for k in range(i, j):
                    if code[k] != "\n":
                        code[k] = " "
                i = j
            elif t.startswith("//", i):
                j = t.find("\n", i)
                j = n if j < 0 else j
                self.comments.append((i, j, t[i:j]))
                for k in range(i, j):
                    code[k] = " "
                i = j
            elif t[i] in "\"'":
                q = t[i]
                j = i + 1
                while j < n and t[j] != q and t[j] != "\n":
                    j += 2 if t[j] == "\\" else 1
                i = j + 1
            else:
                i += 1
        self.code = "".join(code)
        self.comment_ending_at = {end: (start, text) for start, end, text in self.comments}
        # Offsets of lines that are preprocessor directives (with continuations).
        self.pp_spans = []
        pos = 0
        lines = self.code.split("\n")
        k = 0
        while k < len(lines):
            line = lines[k]
            start = pos
            if line.lstrip().startswith("#"):
                end = pos + len(line)
                while line.rstrip().endswith("\\") and k + 1 < len(lines):
                    pos += len(line) + 1
                    k += 1
                    line = lines[k]
                    end = pos + len(line)
                self.pp_spans.append((start, end))
            pos += len(line) + 1
            k += 1

    def line_of(self, offset):
        return self.text.count("\n", 0, offset) + 1

    def in_pp(self, offset):
        return any(s <= offset <= e for s, e in self.pp_spans)

    def doc_above(self, offset):
        """The /** */ comment directly above `offset` (no blank line), or None,
        with the reason when there is none."""
        j = offset
        while j > 0 and self.text[j - 1] in " \t\r\n":
            j -= 1
        found = self.comment_ending_at.get(j)
        doc = found is not None and is_doc(found[1]) and not found[1].startswith("/**<")
        if self.text[j:offset].count("\n") > 1:
            return None, ("a blank line between its doc comment and it" if doc
                          else "no doc comment directly above")
        if found is None:
            return None, "no doc comment directly above"
        if not doc:
            return None, "a plain comment above, not a doc comment"
        return found[1], None

    def code_without_pp(self, start, end):
        """code[start:end] with preprocessor lines blanked."""
        out = list(self.code[start:end])
        for s, e in self.pp_spans:
            for k in range(max(s, start), min(e, end)):
                if out[k - start] != "\n":
                    out[k - start] = " "
        return "".join(out)


def is_doc(comment):
    return comment.startswith("/**") and not comment.startswith("/**/") or comment.startswith("/*!")


def comment_body(comment):
    """The text of a comment without its markers and leading stars."""
    body = comment[3:-2] if comment.endswith("*/") else comment[3:]
    if body.startswith("<"):
        body = body[1:]
    return "\n".join(re.sub(r"^\s*\*?", "", line) for line in body.split("\n"))


def split_top(text, sep):
    """Splits text at `sep` outside (), [] and {}; yields (offset, part)."""
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            yield start, text[start:i]
            start = i + 1
    yield start, text[start:]


def declarator_name(decl):
    """The name a parameter or field declaration declares, or None."""
    decl = decl.strip()
    if decl == "...":
        return "..."
    m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)", decl)  # function pointer
    if m:
        return m.group(1)
    decl = re.sub(r"\[[^\]]*\]", "", decl)  # arrays
    decl = re.sub(r"__attribute__\s*\(\(.*\)\)", "", decl)
    words = IDENT.findall(decl)
    if len(words) < 2 or words[-1] in KEYWORDS:
        return None  # a type alone
    return words[-1]


def matching(text, open_at, open_ch, close_ch):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def check_function(src, at, fail):
    """The SPMD_API declaration starting at `at`."""
    end = at
    depth = 0
    while end < len(src.code):
        if src.in_pp(end):
            end += 1
            continue
        ch = src.code[end]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch in ";{" and depth == 0:
            break
        end += 1
    decl = src.code_without_pp(at, end)
    open_at = decl.find("(")
    m = re.search(r"([A-Za-z_]\w*)\s*$", decl[:open_at]) if open_at >= 0 else None
    if m is None:
        fail(at, f"cannot read the SPMD_API declaration '{' '.join(decl.split())[:60]}'")
        return
    name = m.group(1)
    returns = decl[len("SPMD_API"):m.start()].split()
    returns_void = [w for w in returns if w != "const"] == ["void"]
    close = matching(decl, open_at, "(", ")")
    inner = decl[open_at + 1:close].strip()
    params = []
    if inner and inner != "void":
        for k, (_, part) in enumerate(split_top(inner, ",")):
            pname = declarator_name(part)
            if pname is None:
                fail(at, f"function {name}: parameter {k + 1} has no name to document")
            else:
                params.append(pname)

    doc, why = src.doc_above(at)
    if doc is None:
        fail(at, f"function {name}: {why}")
        return
    body = comment_body(doc)
    first_command = re.search(r"[@\\]\w", body)
    if not body[:first_command.start() if first_command else len(body)].strip():
        fail(at, f"function {name}: no description before its first command")
    documented = []
    for m in re.finditer(r"[@\\]param(?:\[[^\]]*\])?[ \t]+(\.\.\.|[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)", body):
        documented += [p.strip() for p in m.group(1).split(",")]
    for p in params:
        if p not in documented:
            fail(at, f"function {name}: no @param for '{p}'")
    for p in documented:
        if p not in params:
            fail(at, f"function {name}: @param '{p}' names no parameter")
    for p in sorted({p for p in documented if documented.count(p) > 1}):
        fail(at, f"function {name}: @param '{p}' given twice")
    known = [p for p in documented if p in params]
    if len(set(known)) == len(known) and known != [p for p in params if p in known]:
        fail(at, f"function {name}: @param lines are not in the order of the prototype")
    has_return = re.search(r"[@\\](returns?|retval)\b", body) is not None
    if returns_void and has_return:
        fail(at, f"function {name}: returns void but has @return")
    if not returns_void and not has_return:
        fail(at, f"function {name}: no @return")


def check_members(src, kind, tname, body_start, body_end, fail):
    """Each field of a struct body, or enumerator of an enum body, has a doc."""
    code = src.code[body_start:body_end]
    sep = ";" if kind == "struct" else ","
    members = []  # (first code offset, end offset, name)
    for off, part in split_top(code, sep):
        if not part.strip():
            continue
        lead = len(part) - len(part.lstrip())
        first = body_start + off + lead
        if kind == "enum":
            name = IDENT.match(part.strip())
            name = name.group(0) if name else None
        else:
            name = declarator_name(part)
        members.append((first, body_start + off + len(part), name or part.strip()[:30]))
    docs = [(s, e, t) for s, e, t in src.comments if body_start <= s < body_end and is_doc(t)]
    for i, (first, end, name) in enumerate(members):
        prev_end = members[i - 1][1] if i else body_start
        next_first = members[i + 1][0] if i + 1 < len(members) else body_end
        above = any(not t.startswith("/**<") and prev_end <= s and e <= first for s, e, t in docs)
        after = any(t.startswith("/**<") and first < s < next_first for s, e, t in docs)
        if not (above or after):
            what = "field" if kind == "struct" else "enumerator"
            fail(first, f"{kind} {tname}: {what} {name} has no doc comment")


def check_typedefs(src, fail):
    for m in re.finditer(r"\btypedef\b", src.code):
        if src.in_pp(m.start()):
            continue
        end = src.code.find(";", m.end())
        brace = src.code.find("{", m.end())
        if 0 <= brace < end:
            close = matching(src.code, brace, "{", "}")
            end = src.code.find(";", close)
        decl = src.code[m.start():end]
        head = re.match(r"typedef\s+(struct|enum|union)\s+([A-Za-z_]\w*)?\s*(\{)?", decl)
        if head:
            kind = head.group(1)
            alias = IDENT.findall(decl[decl.rfind("}") + 1:] if head.group(3) else decl)[-1]
            label = f"{kind} {alias}"
        elif "(*" in decl.replace(" ", ""):
            alias = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)", decl).group(1)
            label = f"function pointer type {alias}"
        else:
            alias = IDENT.findall(decl)[-1]
            label = f"typedef {alias}"
        doc, why = src.doc_above(m.start())
        if doc is None:
            fail(m.start(), f"{label}: {why}")
        if head and head.group(3):
            close = matching(src.code, brace, "{", "}")
            check_members(src, kind, alias, brace + 1, close, fail)


def check_macros(src, fail):
    guard = re.search(r"#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+\1\b", src.code)
    guard = guard.group(1) if guard else None
    defs = set(re.findall(r"[@\\]def\s+(\w+)", "".join(t for _, _, t in src.comments if is_doc(t))))
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", src.code, re.M):
        name = m.group(1)
        if name == guard or name in defs:
            continue
        doc, why = src.doc_above(m.start() + len(m.group(0)) - len(m.group(0).lstrip()))
        if doc is None:
            fail(m.start(), f"macro {name}: {why}")


def check(path):
    """The failures of one header, as 'file:line: message'."""
    src = Source(path)
    failures = []

    def fail(offset, message):
        failures.append((src.line_of(offset), message))

    if not any(is_doc(t) and re.search(r"[@\\]file\b", t) for _, _, t in src.comments):
        fail(0, "no @file doc comment")
    functions = [m.start() for m in re.finditer(r"\bSPMD_API\b", src.code) if not src.in_pp(m.start())]
    for at in functions:
        check_function(src, at, fail)
    check_typedefs(src, fail)
    check_macros(src, fail)
    return sorted(failures), len(functions)


def headers(paths):
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(p.rglob("*.h"))
        elif p.is_file():
            out.append(p)
        else:
            sys.exit(f"check-docs.py: {p}: no such file or directory")
    return out


def main(argv):
    expect = argv[:1] == ["--expect-failures"]
    paths = argv[1:] if expect else argv
    if not paths or any(a.startswith("--") for a in paths):
        sys.exit(__doc__)
    files = headers(paths)
    if not files:
        sys.exit("check-docs.py: no headers found in " + " ".join(paths))
    bad = 0
    functions = 0
    for h in files:
        failures, n = check(h)
        functions += n
        if not expect:
            for line, msg in failures:
                print(f"FAIL: {h.name}:{line}: {msg}")
            bad += len(failures)
            continue
        wanted = re.findall(r"EXPECT:[ \t]*(.+?)[ \t]*$", h.read_text(encoding="utf-8"), re.M)
        got = [msg for _, msg in failures]
        for line, msg in failures:
            print(f"{'reported' if msg in wanted else 'FAIL: unexpected'}: {h.name}:{line}: {msg}")
        for msg in wanted:
            if msg not in got:
                print(f"FAIL: not reported: {h.name}: {msg}")
                bad += 1
        bad += len([m for m in got if m not in wanted])
        if not wanted:
            print(f"FAIL: {h.name} lists no EXPECT: lines")
            bad += 1
    if bad:
        print(f"{bad} failure(s)")
        return 1
    if expect:
        print(f"ok: every expected failure, and no other, reported in {len(files)} header(s)")
    else:
        print(f"ok: {functions} functions and every type, field, enumerator "
              f"and macro in {len(files)} headers are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
