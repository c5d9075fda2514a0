"""The docs' settings tables against the binary's table (--helpfull).

  python3 flag_table_test.py BINARY DOC.md...

The tables headed HEADER in the documents named (docs/FLAGS.md, and the
alerting flags' in docs/OPERATIONS.md) together must hold:

Every setting and command option the binary has has a row, every row names
one the binary has, the config key column holds each named setting's key
(marked "(GreptimeDB)" exactly when it is GreptimeDB's), and a default
written as a literal (`value`) is the setting's default. Exits 1 naming each
disagreement.
"""

import re
import subprocess
import sys

HEADER = "| flag | config key | default | meaning |"


def binary_flags(binary):
    """Flag name -> (default, config key or None), from --helpfull."""
    out = subprocess.run([binary, "--helpfull"], capture_output=True,
                         text=True, check=True).stdout
    own = out.split("metasrv flags:", 1)[1]
    flags = {}
    for m in re.finditer(r'^  --(\w+) \(default "(.*)"\)\n.*\n'
                         r'(?:      (GreptimeDB key|key): ([\w.]+); env \w+$)?',
                         own, re.M):
        key = None
        if m.group(4):
            key = f"`{m.group(4)}`" + (" (GreptimeDB)" if m.group(3) ==
                                       "GreptimeDB key" else "")
        flags[m.group(1)] = (m.group(2), key)
    return flags


def readme_rows(readme):
    """Flag name -> (the default column, the key column), from every table
    headed HEADER (the main one, and the alerting flags')."""
    rows, inside = {}, False
    for line in open(readme, encoding="utf-8"):
        if line.startswith(HEADER):
            inside = True
            continue
        if inside and not line.startswith("|"):
            inside = False
        if not inside or line.startswith("| ---"):
            continue
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in re.findall(r"`--(\w+)`", cols[0]):
            rows[name] = (cols[2], cols[1])
    return rows


def main(binary, *docs):
    flags, rows = binary_flags(binary), {}
    for doc in docs:
        rows.update(readme_rows(doc))
    problems = []
    if not rows:
        problems.append("no flag table found in the README")
    for name in sorted(set(flags) - set(rows)):
        problems.append(f"--{name}: defined by the binary, missing from the README")
    for name in sorted(set(rows) - set(flags)):
        problems.append(f"--{name}: in the README, not a flag of the binary")
    for name, (default, keys) in sorted(rows.items()):
        if name not in flags:
            continue
        want_default, want_key = flags[name]
        literal = re.fullmatch(r"`([^`]*)`", default)
        if literal and literal.group(1) != want_default:
            problems.append(f"--{name}: the README says {literal.group(1)!r}, "
                            f"the binary {want_default!r}")
        listed = [k.strip() for k in keys.split(", ")] if keys else []
        if want_key is None and listed:
            problems.append(f"--{name}: a command option has no config key")
        if want_key is not None and want_key not in listed:
            problems.append(f"--{name}: the README's key column {keys!r} lacks "
                            f"{want_key!r}")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(flags)} flags, {len(rows)} README rows, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *sys.argv[2:]))
