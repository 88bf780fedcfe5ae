#!/usr/bin/env python3
"""Lists the longest functions and classes of C++ sources, by lines from the opening line of the
definition to its closing brace (a lambda counts toward the function holding it; a member function
defined in its class counts on its own and toward its class).

  scripts/function-lengths.py [--top N] [--functions-over L] [--classes-over L] PATH...

PATH: files or folders (their .cpp/.h files). Prints the N longest functions (default 10) and the
classes of more than 300 lines; with --functions-over / --classes-over it exits 1 when a function or
class passes that many lines (the "no function over ~150 lines, no class over ~600" of
src/schedule). A reader of braces, not a compiler: comments, strings and character literals are
blanked first; a brace opens a function when what precedes it since the last ';', '{' or '}' ends in
a parameter list (plus const/override/noexcept/a trailing return type/an initializer list) and is no
control statement, and a class when it starts with class/struct/union."""
import argparse
import os
import re
import sys

CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|return|case)\b")
CLASS = re.compile(r"(?:^|\s)(class|struct|union)\s+([A-Za-z_]\w*)[^()]*$")
FUNC_NAME = re.compile(r"([~A-Za-z_][\w:~<>,\s*&]*?)\s*\(")


def blank(text):
    """Comments, strings and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is no character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def head_kind(head):
    """('function', name), ('class', name) or None for the text before an opening brace."""
    h = " ".join(head.split())
    if not h or CONTROL.match(h):
        return None
    m = CLASS.search(h)
    if m and "(" not in h.split(m.group(0).strip().split()[0], 1)[0][-1:]:
        if not re.search(r"\)\s*$", h):
            return ("class", m.group(2))
    if re.match(r"^(namespace|extern|enum)\b", h) or h.startswith("="):
        return None
    # A parameter list, then qualifiers, a trailing return type or a constructor's initializers.
    stripped = re.sub(r"\s*(const|override|final|noexcept|mutable|volatile|&|&&)\s*$", "", h)
    while stripped != h:
        h, stripped = stripped, re.sub(r"\s*(const|override|final|noexcept|mutable|volatile|&|&&)\s*$", "", stripped)
    h = re.sub(r"\s*->\s*[\w:<>,\s*&]+$", "", h)
    if not re.search(r"\)\s*$", h) and ":" not in h:
        return None
    depth, i = 0, 0
    # The function's name: the identifier before the first top-level '('.
    for i, ch in enumerate(h):
        if ch == "(" and depth == 0:
            break
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
    else:
        return None
    before = h[:i].rstrip()
    if before.endswith("]") or before.endswith("=") or not before or before.endswith(","):
        return None  # a lambda, a brace initializer
    m = re.search(r"([~\w:]+(?:operator\S*)?)$", before)
    if not m or m.group(1) in ("if", "for", "while", "switch", "catch", "return"):
        return None
    return ("function", m.group(1))


def scan(path):
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    results = []  # (kind, lines, name, path, first line)
    stack = []  # (kind or None, name, line) per open brace
    head_start = 0
    line = 1
    line_at = []  # line number of each character offset, computed lazily by counting
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "{":
            head = text[head_start:i]
            kind = None
            # Only definitions at namespace or class scope are counted (not blocks inside functions).
            if all(k in (None, "namespace", "class") for k, _, _ in stack) and not any(k == "block" for k, _, _ in stack):
                hk = head_kind(head)
                if hk is None and re.match(r"^\s*namespace\b", " ".join(head.split())):
                    kind = ("namespace", "")
                elif hk:
                    kind = hk
            if kind is None:
                inside_function = any(k in ("function",) for k, _, _ in stack)
                kind = ("block" if inside_function else None, "")
            start = line - head[head.rstrip().rfind("\n") + 1 :].count("\n") if False else line
            # The definition starts on the line of the head's first non-blank character.
            stripped = head.lstrip()
            start = line - head[len(head) - len(stripped):].count("\n")
            stack.append((kind[0], kind[1], start))
            head_start = i + 1
        elif ch == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind in ("function", "class"):
                    results.append((kind, line - start + 1, name, path, start))
            head_start = i + 1
        elif ch == ";":
            head_start = i + 1
        elif ch == ":" and i + 1 < len(text) and text[i + 1] != ":" and text[i - 1] != ":":
            # `public:` / `private:` / a case label end a head; an initializer list's ':' does not.
            seg = text[head_start:i].strip()
            if seg in ("public", "private", "protected") or seg.startswith("case ") or seg == "default":
                head_start = i + 1
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--functions-over", type=int)
    ap.add_argument("--classes-over", type=int)
    a = ap.parse_args()
    files = []
    for p in a.paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, f) for f in sorted(names) if f.endswith((".cpp", ".h"))]
        else:
            files.append(p)
    found = [r for f in sorted(files) for r in scan(f)]
    funcs = sorted((r for r in found if r[0] == "function"), key=lambda r: -r[1])
    classes = sorted((r for r in found if r[0] == "class"), key=lambda r: -r[1])
    print(f"The {a.top} longest functions (lines):")
    for kind, n, name, path, start in funcs[: a.top]:
        print(f"  {n:5d}  {name}  {path}:{start}")
    big = [c for c in classes if c[1] > 300]
    print("Classes over 300 lines:" if big else "No class over 300 lines.")
    for kind, n, name, path, start in big:
        print(f"  {n:5d}  {name}  {path}:{start}")
    bad = False
    if a.functions_over is not None:
        over = [f for f in funcs if f[1] > a.functions_over]
        for kind, n, name, path, start in over:
            print(f"function over {a.functions_over} lines: {name} ({n}) {path}:{start}", file=sys.stderr)
        bad = bad or bool(over)
    if a.classes_over is not None:
        over = [c for c in classes if c[1] > a.classes_over]
        for kind, n, name, path, start in over:
            print(f"class over {a.classes_over} lines: {name} ({n}) {path}:{start}", file=sys.stderr)
        bad = bad or bool(over)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
