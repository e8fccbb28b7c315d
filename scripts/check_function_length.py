#!/usr/bin/env python3
"""No function in src/ over 120 lines without a comment saying why (issue 32).

Reads every .cpp and .h under src/, blanks comments, string and character literals and preprocessor lines, and
matches braces. A function is a `{` at file scope or directly inside a namespace, class, struct or union body whose
preceding declaration ends with `)` (plus qualifiers: const, noexcept, override, final, `-> type`, or a
constructor's member initialiser list); its length runs from the first line of that declaration (its template
line included) to the closing `}`. Lambdas and local classes count as part of the function that holds them.

A function over the limit fails the check (exit 1, naming file:line, function and length) unless the line right
above its declaration, or a line of the comment block right above it, carries the marker

    // long-function: <why it stays in one piece>

    python3 scripts/check_function_length.py          # CTest runs it (test check_function_length, label fast)
    python3 scripts/check_function_length.py --list   # also the functions kept long, with their reasons

Standard library only.
"""

import bisect
import os
import re
import sys

LIMIT = 120
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = (".cpp", ".h")
MARKER = re.compile(r"long-function:\s*(\S.*)")
CONTAINER = re.compile(r"\b(namespace|class|struct|union|enum|extern)\b")
ACCESS = re.compile(r"^\s*(?:(?:public|private|protected)\s*:(?!:)\s*)+")
QUALIFIERS = ("const", "volatile", "override", "final", "mutable", "noexcept", "&")
IDENT = re.compile(r"[A-Za-z_0-9]")


def blank(text):
    """The source with comments, string and character literals and preprocessor lines replaced by spaces (quotes
    kept for literals), newlines kept, so that offsets and line numbers stay those of the file."""
    out, i, n = list(text), 0, len(text)
    line_start = True

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if line_start and c == "#":  # a preprocessor line, with its continuations
            j = i
            while j < n and text[j] != "\n":
                if text.startswith("//", j):
                    break
                if text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 2 if text[j] == "\\" else 1
            wipe(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"':
            word = re.search(r"[A-Za-z_0-9]*$", text[max(0, i - 3):i]).group(0)
            if word in ("R", "u8R", "uR", "UR", "LR"):  # a raw string: R"delim( ... )delim"
                open_paren = text.find("(", i)
                delim = text[i + 1:open_paren]
                end = text.find(")" + delim + '"', open_paren)
                j = n if end < 0 else end + len(delim) + 2
            else:
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j += 1
            wipe(i + 1, j - 1)
            i = j
        elif c == "'":
            word = re.search(r"[A-Za-z_0-9]*$", text[max(0, i - 40):i]).group(0)
            if word and word[0].isdigit():  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
            wipe(i + 1, j - 1)
            i = j
        else:
            i += 1
    return "".join(out)


def matching_open(text, close):
    """The index of the `(` that the `)` at `close` closes."""
    depth = 0
    for k in range(close, -1, -1):
        if text[k] == ")":
            depth += 1
        elif text[k] == "(":
            depth -= 1
            if depth == 0:
                return k
    return -1


def without_qualifiers(decl):
    """A declaration without its trailing qualifiers (`const`, `&`, `noexcept(...)`, `override`, ...)."""
    decl = decl.rstrip()
    while True:
        if decl.endswith(")"):
            open_paren = matching_open(decl, len(decl) - 1)
            if open_paren > 0 and decl[:open_paren].rstrip().endswith("noexcept"):
                decl = decl[:open_paren].rstrip()
                continue
        for word in QUALIFIERS:
            if decl.endswith(word) and (word == "&" or not IDENT.match(decl[-len(word) - 1:-len(word)] or " ")):
                decl = decl[:-len(word)].rstrip()
                break
        else:
            return decl


def function_name(decl):
    """The name of a function from its declaration (blanked, initialiser list removed), or None when the
    declaration is not a function's."""
    decl = without_qualifiers(decl)
    if not decl.endswith(")"):
        return None
    open_paren = matching_open(decl, len(decl) - 1)
    if open_paren < 0:
        return None
    m = re.search(r"((?:[A-Za-z_]\w*\s*::\s*)*~?(?:operator\s*[^\s\w(]+|operator\s+\w+|[A-Za-z_]\w*)"
                  r"(?:\s*<[^()]*>)?)\s*$", decl[:open_paren])
    if m:
        return re.sub(r"\s+", "", m.group(1))
    if decl[:open_paren].rstrip().endswith("]"):
        return "<lambda>"
    return None


def declaration(stmt):
    """The part of a declaration before its body that names the function: without a constructor's member
    initialiser list (`) : a_(x), b_{y}`) and a trailing return type (`) -> T`)."""
    depth = 0
    for k, ch in enumerate(stmt):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == ":" and stmt[k - 1:k] != ":" and stmt[k + 1:k + 2] != ":":
            before = stmt[:k].rstrip()
            if without_qualifiers(before).endswith(")") and stmt.rstrip()[-1:] in (")", "}"):
                return before
        elif depth == 0 and stmt.startswith("->", k):
            before = stmt[:k].rstrip()
            if without_qualifiers(before).endswith(")"):
                return before
    return stmt


def functions(text):
    """Yield (name, first line, last line, declaration start offset) for every function body of a file."""
    src = blank(text)
    newlines = [m.start() for m in re.finditer("\n", src)]

    def line_at(offset):
        return bisect.bisect_left(newlines, offset) + 1

    stack = []  # one kind per open brace: "scope" (namespace, class, ...), "function", "other"
    depth_in_scope = 0  # how many of the outer braces are scopes, counted from the outside
    stmt_start = 0
    fn_start = None
    for m in re.finditer(r"[;{}]", src):
        k, ch = m.start(), m.group(0)
        in_scope = depth_in_scope == len(stack)
        if ch == ";" and in_scope:
            stmt_start = k + 1
        elif ch == "{":
            if not in_scope:
                stack.append("other")
                continue
            stmt = src[stmt_start:k]
            access = ACCESS.match(stmt)
            if access:
                stmt_start += access.end()
                stmt = src[stmt_start:k]
            name = function_name(declaration(stmt))
            if name is not None:
                stack.append("function")
                first = stmt_start + len(stmt) - len(stmt.lstrip())
                fn_start = (name, first)
            elif CONTAINER.search(stmt):
                stack.append("scope")
                depth_in_scope += 1
                stmt_start = k + 1
            else:
                stack.append("other")
        elif ch == "}":
            if not stack:
                continue
            kind = stack.pop()
            if kind == "scope":
                depth_in_scope -= 1
            if kind == "function":
                name, first = fn_start
                yield name, line_at(first), line_at(k), first
            if kind != "other":
                stmt_start = k + 1


def marker_reason(lines, first_line):
    """The reason of a `long-function:` marker on the line above `first_line` (1-based) or in the comment block
    right above it, else None."""
    k = first_line - 2
    while k >= 0:
        s = lines[k].strip()
        m = MARKER.search(s)
        if m:
            return m.group(1).strip()
        if not (s.startswith("//") or s.startswith("/*") or s.startswith("*")):
            return None
        k -= 1
    return None


def source_files():
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "src")):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE):
                yield os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/")


def main():
    show_kept = "--list" in sys.argv[1:]
    errors, kept, n_functions = [], [], 0
    for rel in source_files():
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.split("\n")
        for name, first, last, _ in functions(text):
            n_functions += 1
            length = last - first + 1
            if length <= LIMIT:
                continue
            reason = marker_reason(lines, first)
            if reason:
                kept.append(f"{rel}:{first}: {name} ({length} lines): {reason}")
            else:
                errors.append(f"{rel}:{first}: {name} is {length} lines (limit {LIMIT}): split it into named "
                              "parts, or say why it stays whole with `// long-function: <reason>` on the line "
                              "above it")
    if show_kept:
        for k in kept:
            print(f"kept long: {k}")
    for e in errors:
        print(f"check_function_length: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"check_function_length: {n_functions} functions, none over {LIMIT} lines without a reason "
          f"({len(kept)} kept long)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
