"""Every relative link of the README and docs/*.md leads somewhere: the file
exists in the checkout, and an anchor (#...) names a heading of it (GitHub's
rules: lower case, punctuation but - and _ dropped, spaces to -).

  python3 link_check.py REPO_ROOT
"""

import glob
import os
import re
import sys


def slug(heading):
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    out, in_code = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"^#+ (.*)", line)
        if m:
            s = slug(m.group(1))
            n = 1
            base = s
            while s in out:
                s = f"{base}-{n}"
                n += 1
            out.add(s)
    return out


def main(root):
    os.chdir(root)
    docs = ["README.md"] + sorted(glob.glob("docs/*.md")) + ["bench/RESULTS.md"]
    bad = []
    for doc in docs:
        text = open(doc, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^(https?:|mailto:|file:)", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(full):
                bad.append(f"{doc}: {target}: no file {full}")
                continue
            if anchor and full.endswith(".md") and anchor not in anchors(full):
                bad.append(f"{doc}: {target}: no heading #{anchor} in {full}")
    for b in bad:
        print(b, file=sys.stderr)
    print(f"links: {len(docs)} documents checked, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
