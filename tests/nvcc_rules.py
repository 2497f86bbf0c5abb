#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The rules nvcc enforces on extended (device) lambdas and g++ does not (docs/gpu.md).

A CPU build compiles these happily; only the GPU build (tests/gpu_build.sh) would refuse them, and
it needs a CUDA Kokkos and many minutes. This check reads the sources instead, in about a second,
everywhere. An extended lambda is KOKKOS_LAMBDA, KOKKOS_CLASS_LAMBDA or `[..] __host__ __device__`.
Each rule below was confirmed against nvcc 13.0 with a small file (g++ accepts every one):

  private-member     its enclosing function is a private or protected member function
  private-class      ... a member of a class that is private or protected within another class
  ctor-dtor          ... a constructor or destructor (nvcc: "must allow its address to be taken")
  deduced-return     ... has a deduced return type (auto f() without a trailing return type)
  local-class        ... a member of a class defined inside a function
  generic-lambda     the extended lambda is generic (an `auto` parameter)
  in-generic-lambda  it is defined inside a generic lambda
  nested-extended    it is defined inside another extended lambda

  tests/nvcc_rules.py ROOT [DIR...]    check DIR... under ROOT (default src apps tests); exit 1 on
                                       a violation, one line each: file:line: rule: why
  tests/nvcc_rules.py --self-test FILE...  every `// expect: RULE` comment must be reported on
                                       its line, and nothing else (the check can fail)

It is a reader of declarations and braces, not a compiler: it sees classes, access sections,
function and lambda headers; macros are not expanded (bar the two Kokkos lambda macros), and a
member declared in several places with different access is taken as public (no false alarms).
"""
import bisect
import os
import re
import sys

CXX_EXT = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inl", ".ipp")
SKIP_DIRS = ("tests/nvcc_rules",)  # the self-test's fixtures, bad on purpose
LAMBDA_MACRO = re.compile(r"\bKOKKOS_(?:CLASS_)?LAMBDA\s*$")
CONTROL = {"if", "for", "while", "switch", "catch", "else", "do", "try", "return"}
SPECIFIERS = {"static", "inline", "constexpr", "virtual", "friend", "explicit", "extern",
              "KOKKOS_INLINE_FUNCTION", "KOKKOS_FUNCTION", "KOKKOS_FORCEINLINE_FUNCTION",
              "__host__", "__device__", "[[nodiscard]]", "[[maybe_unused]]"}


# What strip_code blanks: preprocessor lines (with their continuations), comments, raw strings,
# string and character literals. One alternation, tried left to right at each match.
NOISE = re.compile(r"""(?mx)
    ^[ \t]*\#(?:[^\n]*\\\n)*[^\n]*         # a directive
  | //[^\n]*                                # a line comment
  | /\*.*?(?:\*/|\Z)                          # a block comment
  | (?<![\w])R"([^()\\\s]{0,16})\(.*?\)\1"   # a raw string
  | "(?:\\.|[^"\\\n])*"                      # a string
  | (?<![\w])'(?:\\.|[^'\\\n])*'              # a character (not a digit separator: 1'000)
""", re.S)


def strip_code(text):
    """Comments, string and character literals and preprocessor lines blanked (newlines kept)."""
    def blank(m):
        t = m.group(0)
        if t[0] in "\"'R" and not t.startswith(("//", "/*")):
            q = '"' if t[0] in '"R' else "'"
            return q + re.sub(r"[^\n]", " ", t[1:-1]) + q
        return re.sub(r"[^\n]", " ", t)
    return NOISE.sub(blank, text)


def strip_trailing(h):
    """h without trailing cv/ref qualifiers, override, final, mutable, constexpr, noexcept(...)."""
    while True:
        h = h.rstrip()
        m = re.search(r"(?:\b(?:const|volatile|override|final|mutable|constexpr|noexcept)|&&?|"
                      r"\bnoexcept\s*\([^()]*\))$", h[-40:])
        if not m:
            return h
        h = h[:len(h) - (len(h[-40:]) - m.start())]


def match_back(s, close):
    """Index of the bracket opening the one that closes at s[close]."""
    pair = {")": "(", "]": "[", ">": "<"}[s[close]]
    depth = 0
    for i in range(close, -1, -1):
        if s[i] == s[close]:
            depth += 1
        elif s[i] == pair:
            depth -= 1
            if depth == 0:
                return i
    return -1


def top_level(s):
    """(index, char) of s's characters outside (), [] and {} (opening brackets included)."""
    depth = 0
    for i, c in enumerate(s):
        if c in ")]}":
            depth -= 1
        elif depth == 0:
            yield i, c
        if c in "([{":
            depth += 1


def strip_template_prefix(h):
    h = h.strip()
    while h.startswith("template"):
        i = h.find("<")
        if i < 0:
            break
        depth = 0
        for j in range(i, len(h)):
            depth += {"<": 1, ">": -1}.get(h[j], 0)
            if depth == 0:
                h = h[j + 1:].strip()
                break
        else:
            break
    return h


def strip_trailing_return(h):
    """h without a trailing return type (`) const -> T`), and whether it had one."""
    for i, c in top_level(h):
        if c == "-" and h[i + 1:i + 2] == ">":
            close = h.rfind(")", 0, i)
            if close >= 0 and not strip_trailing(h[close + 1:i]):
                return h[:i].rstrip(), True
    return h, False


def last_name(pre):
    """The (possibly qualified) name that ends pre: A::B<T>::f, ~X, operator()..."""
    m = re.search(r"((?:[A-Za-z_]\w*\s*(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>)?\s*::\s*)*"
                  r"(?:~\s*[A-Za-z_]\w*|operator\s*(?:\(\s*\)|[^\s(]+)|[A-Za-z_]\w*))\s*$", pre)
    if not m:
        return None, pre
    name = re.sub(r"<[^<>]*(?:<[^<>]*>[^<>]*)*>", "", m.group(1))
    return re.sub(r"\s+", "", name), pre[:m.start(1)]


class Block:
    def __init__(self, kind, line, **kw):
        self.kind = kind  # namespace, class, function, lambda, control, other
        self.line = line
        self.__dict__.update(kw)


def classify(header, parent):
    """What a `{` opens, from the text since the last ; { or }."""
    h = header.strip()
    if parent is not None and parent.kind == "class":
        h = re.sub(r"^(?:\b(?:public|private|protected)\s*:(?!:)\s*)+", "", h)
    if not h:
        return Block("other", 0)
    body = strip_template_prefix(h)
    if re.match(r"(?:inline\s+)?namespace\b|extern\s*\"", body):
        return Block("namespace", 0)
    if re.match(r"(?:typedef\s+)?enum\b", body):
        return Block("other", 0)
    m = re.match(r"(?:class|struct|union)\b\s*(?:alignas\s*\([^)]*\)\s*|\[\[[^\]]*\]\]\s*)*([A-Za-z_]\w*)?", body)
    if m and "(" not in body[:m.end()] and not re.search(r"[=;]", body):
        return Block("class", 0, name=m.group(1), access="private" if body.startswith("class") else "public")
    h2, trailing_return = strip_trailing_return(h)
    h2 = strip_trailing(h2)
    if h2.endswith("]"):  # [=] { ... }: a lambda without parameters
        return Block("lambda", 0, extended=False, generic=False)
    if h2.endswith(")"):
        open_ = match_back(h2, len(h2) - 1)
        pre = h2[:open_].rstrip() if open_ >= 0 else ""
        params = h2[open_ + 1:-1] if open_ >= 0 else ""
        if LAMBDA_MACRO.search(pre) or pre.endswith("]") or re.search(r"\]\s*(?:__host__|__device__|\s)+$", pre):
            extended = bool(LAMBDA_MACRO.search(pre) or re.search(r"__device__\s*$|__host__\s*$", pre))
            return Block("lambda", 0, extended=extended, generic=bool(re.search(r"\bauto\b", params)))
    first = re.match(r"\s*([A-Za-z_]\w*)", body)
    if first and first.group(1) in CONTROL:
        return Block("control", 0)
    if parent is not None and parent.kind in ("function", "lambda", "control", "other"):
        return Block("other", 0)  # a block, a macro's block (SECTION), a brace initialiser
    # A function definition: the first top-level ( after a name is its parameter list.
    for i, c in top_level(body):
        if c == "=" or c == ";":
            if not re.search(r"operator\s*[^\s(]*$", body[:i + 1]):
                return Block("other", 0)
        if c == "(":
            name, ret = last_name(body[:i])
            if not name or name in CONTROL:
                return Block("other", 0)
            words = [w for w in re.split(r"\s+", ret.strip()) if w and w not in SPECIFIERS]
            rest = " ".join(words)
            deduced = (rest in ("auto", "auto&", "auto &", "auto&&", "const auto&", "const auto &",
                                "decltype(auto)", "auto*", "const auto") and not trailing_return)
            return Block("function", 0, name=name, deduced=deduced, is_ctor=not rest)
    return Block("other", 0)


def member_name(decl):
    """The name a member declaration (at class scope, ending in ;) declares, if a function."""
    d = strip_template_prefix(decl.strip())
    if re.match(r"(?:friend|using|typedef|static_assert)\b", d):
        return None
    for i, c in top_level(d):
        if c == "=" and not re.search(r"operator\s*[^\s(]*$", d[:i + 1]):
            return None
        if c == "(":
            name, _ = last_name(d[:i])
            return name.split("::")[-1] if name else None
    return None


def scan(path, code, classes, violations):
    """One file (stripped): class tables into `classes`; with violations a list, the checks too."""
    stack = []
    seg = 0
    line_at = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(pos):
        return bisect.bisect_right(line_at, pos)

    def current_class():
        return stack[-1] if stack and stack[-1].kind == "class" else None

    def take_labels(segment):
        cls = current_class()
        if cls is None:
            return segment
        for m in re.finditer(r"\b(public|private|protected)\s*:(?!:)", segment):
            cls.access = m.group(1)
        return re.sub(r"\b(?:public|private|protected)\s*:(?!:)", "", segment)

    parens = 0  # ( depth within the current brace: the ; of for (;;) ends no statement
    saved = []
    for m in re.finditer(r"[;{}()]", code):
        i, c = m.start(), m.group(0)
        if c == "(":
            parens += 1
        elif c == ")":
            parens = max(0, parens - 1)
        elif c == ";" and parens > 0:
            continue
        if c == ";":
            segment = take_labels(code[seg:i])
            cls = current_class()
            if cls is not None and cls.name:
                name = member_name(segment)
                if name:
                    classes.setdefault(cls.name, {"members": {}, "nested": set()})["members"].setdefault(name, set()).add(cls.access)
            seg = i + 1
        elif c == "{":
            segment = take_labels(code[seg:i])
            parent = stack[-1] if stack else None
            b = classify(segment, parent)
            b.line = line_of(i)
            cls = current_class()
            if b.kind == "class" and b.name:
                entry = classes.setdefault(b.name, {"members": {}, "nested": set()})
                if cls is not None:
                    entry["nested"].add(cls.access)
                    b.nested_access = cls.access
            if b.kind == "function":
                if cls is not None:
                    b.access = cls.access
                    b.owner = cls
                    short = b.name.split("::")[-1]
                    if cls.name:
                        classes.setdefault(cls.name, {"members": {}, "nested": set()})["members"].setdefault(short, set()).add(cls.access)
                    b.is_ctor = b.is_ctor and (short == cls.name or short.startswith("~"))
                else:
                    parts = b.name.split("::")
                    b.is_ctor = b.is_ctor and len(parts) >= 2 and (parts[-1] == parts[-2] or parts[-1].startswith("~"))
            if b.kind == "lambda" and b.extended and violations is not None:
                check_lambda(path, b, list(stack), classes, violations)
            stack.append(b)
            saved.append(parens)
            parens = 0
            seg = i + 1
        elif c == "}":
            if stack:
                stack.pop()
                parens = saved.pop()
            seg = i + 1
    return classes


def check_lambda(path, lam, stack, classes, violations):
    def report(rule, why):
        violations.append((path, lam.line, rule, why))

    if lam.generic:
        report("generic-lambda", "an extended lambda cannot be generic (auto parameter)")
    k = len(stack) - 1
    while k >= 0 and stack[k].kind in ("control", "other", "lambda"):
        if stack[k].kind == "lambda":
            if stack[k].extended:
                report("nested-extended", f"defined inside the extended lambda of line {stack[k].line}")
            elif stack[k].generic:
                report("in-generic-lambda", f"defined inside the generic lambda of line {stack[k].line}")
        k -= 1
    if k < 0 or stack[k].kind != "function":
        return
    f = stack[k]
    if any(b.kind in ("function", "lambda") for b in stack[:k]):
        report("local-class", f"its enclosing function {f.name} (line {f.line}) belongs to a class defined inside a function")
    if f.deduced:
        report("deduced-return", f"its enclosing function {f.name} (line {f.line}) has a deduced return type")
    if f.is_ctor:
        report("ctor-dtor", f"its enclosing function {f.name} (line {f.line}) is a constructor or destructor")
    if hasattr(f, "owner"):  # defined in its class
        if f.access != "public":
            report("private-member", f"its enclosing function {f.name} (line {f.line}) is {f.access}")
        for b in stack[:k]:
            if b.kind == "class" and getattr(b, "nested_access", "public") != "public":
                report("private-class", f"its enclosing class {b.name} is {b.nested_access} within another class")
        return
    parts = f.name.split("::")
    if len(parts) < 2:
        return
    owner, short = parts[-2], parts[-1]
    entry = classes.get(owner)
    if entry:
        acc = entry["members"].get(short, set())
        if acc and "public" not in acc:
            report("private-member", f"its enclosing function {f.name} (line {f.line}) is {'/'.join(sorted(acc))} in class {owner}")
    for cls in parts[:-1]:
        e = classes.get(cls)
        if e and e["nested"] and "public" not in e["nested"]:
            report("private-class", f"its enclosing class {cls} is {'/'.join(sorted(e['nested']))} within another class")


def files_under(root, dirs):
    for d in dirs:
        for base, subdirs, names in os.walk(os.path.join(root, d)):
            rel = os.path.relpath(base, root)
            if any(rel == s or rel.startswith(s + os.sep) for s in SKIP_DIRS):
                subdirs[:] = []
                continue
            subdirs.sort()
            for n in sorted(names):
                if n.endswith(CXX_EXT):
                    yield os.path.join(base, n)


def check(paths, root=None):
    texts = {}
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            texts[p] = strip_code(f.read())
    classes = {}
    for p, t in texts.items():  # declarations first: definitions are often in another file
        scan(p, t, classes, None)
    violations = []
    for p, t in texts.items():
        scan(os.path.relpath(p, root) if root else p, t, classes, violations)
    return violations


def main(argv):
    if len(argv) >= 2 and argv[0] == "--self-test":
        ok = True
        for p in argv[1:]:
            with open(p, encoding="utf-8") as f:
                lines = f.read().split("\n")
            want = {(i + 1, r) for i, l in enumerate(lines) for r in re.findall(r"//.*?expect:\s*([a-z-]+)", l)}
            got = {(line, rule) for _, line, rule, _ in check([p])}
            for line, rule in sorted(want - got):
                print(f"FAILED: {p}:{line}: {rule} expected, not reported")
                ok = False
            for line, rule in sorted(got - want):
                print(f"FAILED: {p}:{line}: {rule} reported, not expected")
                ok = False
            print(f"nvcc_rules self-test: {p}: {len(got & want)} of {len(want)} expected violations reported, "
                  f"{len(got - want)} unexpected")
        return 0 if ok else 1
    if not argv:
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    root = argv[0]
    dirs = argv[1:] or ["src", "apps", "tests"]
    paths = list(files_under(root, dirs))
    if not paths:
        print(f"nvcc_rules: no C++ sources under {root} ({' '.join(dirs)})", file=sys.stderr)
        return 2
    violations = check(paths, root)
    for path, line, rule, why in violations:
        print(f"{path}:{line}: {rule}: {why} (nvcc refuses it; docs/gpu.md)")
    print(f"nvcc_rules: {len(paths)} files, {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
