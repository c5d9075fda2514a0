"""The README's flag table against the binary's own flags (--helpfull).

  python3 flag_table_test.py BINARY README.md

Every flag the binary defines has a row, every row names a flag the binary
has (or one of absl's own), and a default written as a literal (`value`) is
the flag's default. Exits 1 naming each disagreement.
"""

import re
import subprocess
import sys

ABSL_FLAGS = {"flagfile", "fromenv", "tryfromenv", "undefok"}


def binary_flags(binary):
    """Flag name -> default, from the binary's own section of --helpfull."""
    out = subprocess.run([binary, "--helpfull"], capture_output=True,
                         text=True, check=True).stdout
    own = out.split("metasrv flags:", 1)[1]
    return {m.group(1): m.group(2) for m in re.finditer(
        r'^  --(\w+) \(default "(.*)"\)$', own, re.M)}


def readme_rows(readme):
    """Flag name -> the default column, from every table headed
    `| flag | default | meaning |` (the main one, and the alerting flags')."""
    rows, inside = {}, False
    for line in open(readme, encoding="utf-8"):
        if line.startswith("| flag | default | meaning |"):
            inside = True
            continue
        if inside and not line.startswith("|"):
            inside = False
        if not inside or line.startswith("| ---"):
            continue
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in re.findall(r"`--(\w+)`", cols[0]):
            rows[name] = cols[1]
    return rows


def main(binary, readme):
    flags, rows = binary_flags(binary), readme_rows(readme)
    problems = []
    if not rows:
        problems.append("no flag table found in the README")
    for name in sorted(set(flags) - set(rows)):
        problems.append(f"--{name}: defined by the binary, missing from the README")
    for name in sorted(set(rows) - set(flags) - ABSL_FLAGS):
        problems.append(f"--{name}: in the README, not a flag of the binary")
    for name, default in sorted(rows.items()):
        literal = re.fullmatch(r"`([^`]*)`", default)
        if literal and name in flags and literal.group(1) != flags[name]:
            problems.append(f"--{name}: the README says {literal.group(1)!r}, "
                            f"the binary {flags[name]!r}")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(flags)} flags, {len(rows)} README rows, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
