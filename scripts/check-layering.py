#!/usr/bin/python3
"""Checks that ridge's includes follow its libraries' dependencies.

Each folder is one library (a `ridge_library(NAME SOURCES ... DEPENDS ...)`
call in its CMakeLists.txt). A source file may include headers of its own
folder's library and of the libraries that library depends on, directly or
through others; anything else is a dependency the build does not declare
(and that the linker may not catch: a header-only use, or a static library
that happens to be linked anyway). Prints each offending include and exits 1;
also fails on a cycle in the declared dependencies.

  /usr/bin/python3 scripts/check-layering.py [--root DIR]
"""
import argparse, os, re, sys

CALL = re.compile(r"ridge_library\((\w+)(.*?)\)", re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def libraries(root):
    """{folder (relative): (library, [dependencies])} from the CMake files."""
    libs = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        if "CMakeLists.txt" not in files:
            continue
        text = open(os.path.join(dirpath, "CMakeLists.txt")).read()
        text = re.sub(r"#.*", "", text)
        for name, body in CALL.findall(text):
            words = body.split()
            deps, take = [], False
            for w in words:
                if w in ("SOURCES",):
                    take = False
                elif w in ("DEPENDS", "PRIVATE_DEPENDS"):
                    take = True
                elif take and w.startswith("ridge"):
                    deps.append(w)
            libs[os.path.relpath(dirpath, root)] = (name, deps)
    return libs


def closure(libs):
    """{library: every library it may use, itself included}; exits on a cycle."""
    deps = {name: d for name, d in libs.values()}
    out = {}

    def visit(name, stack):
        if name in stack:
            print(f"layering: dependency cycle: {' -> '.join(stack + [name])}")
            sys.exit(1)
        if name in out:
            return out[name]
        seen = {name}
        for d in deps.get(name, []):
            if d in deps:
                seen |= visit(d, stack + [name])
        out[name] = seen
        return seen

    for name in deps:
        visit(name, [])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    root = ap.parse_args().root
    libs = libraries(root)
    allowed = closure(libs)
    bad, files = [], 0
    for folder, (name, _) in sorted(libs.items()):
        for f in sorted(os.listdir(os.path.join(root, folder))):
            if not f.endswith((".cpp", ".h", ".def")):
                continue
            files += 1
            text = open(os.path.join(root, folder, f)).read()
            for inc in INCLUDE.findall(text):
                owner = libs.get(os.path.dirname(inc))
                if owner is None:
                    continue  # LLVM, ONNX, the standard library
                if owner[0] not in allowed[name]:
                    bad.append(f"{folder}/{f}: includes {inc} ({owner[0]}), "
                               f"which {name} does not depend on")
    for b in bad:
        print(f"layering: {b}")
    print(f"layering: {len(libs)} libraries, {files} files, {len(bad)} undeclared includes")
    return 1 if bad else 0


sys.exit(main())
