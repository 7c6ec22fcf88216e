#!/usr/bin/env python3
"""Checks the README's "Where things are" map against the tree.

    check_readme_map.py <repository root>     exit 0 when they agree
    check_readme_map.py --self-test           shows that a mismatch fails

Every folder that holds a file must have its own row, and every row must
name a folder that exists.  Files are git's tracked ones when the root is a
git work tree, else every file outside build folders (a source tarball).
The fuzz corpora, thousands of generated inputs, are covered by fuzz/'s row,
and the benchmark runs (one folder each) by bench/results/'s.
"""
import os
import re
import subprocess
import sys
import tempfile

SECTION = "## Where things are"
ROW = re.compile(r"^\| `([^`]+)/` \|")
COVERED_BY_PARENT = ("fuzz/corpus/", "bench/results/")
UNTRACKED = re.compile(r"^(build|build-.*|gpu-bundle|\.git|__pycache__)$")


def mapped_folders(readme_text):
    start = readme_text.find("\n" + SECTION + "\n")
    if start < 0:
        raise SystemExit(f"README.md has no '{SECTION}' section")
    end = readme_text.find("\n## ", start + len(SECTION) + 2)
    section = readme_text[start:end if end >= 0 else None]
    return [m.group(1) for line in section.splitlines() if (m := ROW.match(line))]


def files_in(root):
    if os.path.exists(os.path.join(root, ".git")):
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                             text=True).stdout
        return out.split()
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [s for s in subfolders if not UNTRACKED.match(s)]
        files += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return files


def problems(root):
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        rows = mapped_folders(f.read())
    found = []
    duplicates = {r for r in rows if rows.count(r) > 1}
    found += [f"README map lists {r}/ more than once" for r in sorted(duplicates)]
    found += [f"README map lists {r}/, which is not a folder" for r in rows
              if not os.path.isdir(os.path.join(root, r))]
    holding = {os.path.dirname(f) for f in files_in(root)} - {""}
    holding = {h for h in holding if not (h + "/").startswith(COVERED_BY_PARENT)}
    found += [f"{h}/ holds files but has no row in the README map" for h in
              sorted(holding - set(rows))]
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for folder in ("a", "a/b", "c"):
            os.makedirs(os.path.join(root, folder))
            open(os.path.join(root, folder, "f.txt"), "w").close()
        readme = f"# x\n\n{SECTION}\n\n| Folder | Holds |\n|---|---|\n"
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write(readme + "| `a/` | one |\n| `gone/` | none |\n\n## Next\n| `c/` | late |\n")
        found = problems(root)
        expected = ["README map lists gone/, which is not a folder",
                    "a/b/ holds files but has no row in the README map",
                    "c/ holds files but has no row in the README map"]
        if found != expected:
            print(f"self-test: expected {expected}, got {found}")
            return 1
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write(readme + "| `a/` | one |\n| `a/b/` | two |\n| `c/` | three |\n")
        if problems(root):
            print(f"self-test: a matching map was refused: {problems(root)}")
            return 1
    print("self-test: a missing row and a stale row are both reported")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    found = problems(sys.argv[1])
    for problem in found:
        print(problem)
    if not found:
        print("the README map matches the tree")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
