#!/usr/bin/python3
"""Keeps README.md's example outputs true. Each block

    <!-- example: ridge analyze examples/mlp.onnxtxt --dim batch=32 -->
    ```
    ...output...
    ```

is the real output of that command (run from the repository root with the
build's ridge first on PATH; stderr included). --update rewrites the blocks,
--check (the default) fails listing the blocks that differ.
"""
import os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(<!-- example: (.+?) -->\n```[a-z]*\n)(.*?)(```)", re.S)


def run(cmd, bindir):
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], NO_COLOR="1")
    p = subprocess.run(cmd, shell=True, cwd=ROOT, env=env, capture_output=True, text=True)
    out = p.stdout + p.stderr
    return out if out.endswith("\n") or not out else out + "\n"


def main():
    update = "--update" in sys.argv
    bindir = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--bindir=")),
                  os.path.join(ROOT, "build", "bin"))
    path = os.path.join(ROOT, "README.md")
    text = open(path).read()
    stale = []

    def replace(m):
        out = run(m.group(2), bindir)
        if out != m.group(3):
            stale.append(m.group(2))
        return m.group(1) + out + m.group(4)

    new = BLOCK.sub(replace, text)
    if update:
        open(path, "w").write(new)
        print(f"readme: {len(stale)} example(s) updated")
        return 0
    for cmd in stale:
        print(f"readme: stale output for: {cmd}")
    if stale:
        print("readme: run scripts/readme-examples.py --update")
        return 1
    print(f"readme: {len(BLOCK.findall(text))} examples up to date")
    return 0


sys.exit(main())
