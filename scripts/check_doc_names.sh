#!/usr/bin/env bash
# Every `Class::Member` name a doc gives (docs/ARCHITECTURE.md unless files
# are named), nested ones (`Class::Inner::member`) whole, exists in the code: defined as Class::Member in a source file,
# or declared in the header that declares Class (a method, a field, an enum
# value). Prints each name that does not; fails if there is one.
#   bash scripts/check_doc_names.sh [DOC...]
set -euo pipefail
cd "$(dirname "$0")/.."
docs=("$@")
((${#docs[@]})) || docs=(docs/ARCHITECTURE.md)
/usr/bin/python3 - "${docs[@]}" <<'PY'
import glob, re, sys
sources = [f for d in ("kv", "core", "server", "cli", "bench")
           for f in glob.glob(f"{d}/**/*.[hc]*", recursive=True)
           if f.endswith((".h", ".cc"))]
texts = {f: open(f, encoding="utf-8").read() for f in sources}
missing = []
for doc in sys.argv[1:]:
    # A::b, and nested names (A::B::c): the whole chain is one name.
    names = set(re.findall(
        r"\b((?:[A-Z][A-Za-z0-9]*::)+)(~?[A-Za-z_][A-Za-z0-9_]*)",
        open(doc, encoding="utf-8").read()))
    for chain, member in sorted(names):
        classes = chain.rstrip(":").split("::")
        qualified = f"{chain}{member}"
        if any(qualified in t for t in texts.values()):
            continue
        # Declared in the file that declares the innermost class, which
        # names the outer ones too.
        cls = classes[-1]
        declares = re.compile(
            r"^\s*(?:class|struct|enum class)\s+(?:\w+::)*" + cls + r"\b", re.M)
        word = re.compile(r"\b" + re.escape(member.lstrip("~")) + r"\b")
        outer = [re.compile(r"\b" + c + r"\b") for c in classes[:-1]]
        if any(declares.search(t) and word.search(t) and
               all(o.search(t) for o in outer) for t in texts.values()):
            continue
        missing.append(f"{doc}: {qualified}")
for m in missing:
    print(f"doc names: {m} is not in the code", file=sys.stderr)
if missing:
    sys.exit(1)
print(f"doc names: every Class::Member of {', '.join(sys.argv[1:])} is in the code")
PY
