#!/usr/bin/env python3
"""make layers-check: every include and every library symbol points down.

Usage: scripts/layers-check.py [ROOT [BUILD]]

The allowed arrows are the Makefile's table (LAYERS and USES_<layer>:
the layers whose headers a layer's files may include besides its own);
nothing here repeats them.  Two checks:

1. Includes.  Every `#include "x.h"` (or <x.h>) in ROOT/<layer>/*.[ch]
   that names a header of a layer (by file name, or by a path through a
   layer's folder) must name the file's own layer or one of its USES.
2. Symbols (when BUILD holds the libraries, LIB_<layer> in the Makefile,
   and the app's objects BUILD/obj/app/*.o).  Every symbol a layer's
   library (or the app) leaves undefined that another layer's library
   defines must come from one of its USES: each library links only with
   the layers below it.

Prints one line per violation and "layers-check: ok" or
"layers-check: N violations"; exits 1 on a violation, 2 on a bad table.
"""
import os
import re
import subprocess
import sys


def read_table(root):
    """(layers in order, {layer: set of allowed layers}, {layer: lib})."""
    text = open(os.path.join(root, "Makefile")).read()
    m = re.search(r"^LAYERS\s*=\s*(.*)$", text, re.M)
    if not m:
        sys.exit("layers-check: no LAYERS line in the Makefile")
    layers = m.group(1).split()
    uses, libs = {}, {}
    for name, val in re.findall(r"^USES_(\w+)\s*=[ \t]*(.*)$", text, re.M):
        uses[name] = set(val.split())
    for name, val in re.findall(r"^LIB_(\w+)\s*=\s*\$\(BUILD\)/(\S+)", text, re.M):
        libs[name] = val
    for layer in layers:
        if layer not in uses:
            print("layers-check: no USES_%s line in the Makefile" % layer)
            sys.exit(2)
        bad = uses[layer] - set(layers)
        if bad:
            print("layers-check: USES_%s names unknown layers %s" % (layer, sorted(bad)))
            sys.exit(2)
    return layers, uses, libs


def headers_of(root, layers):
    """{header file name: layer}."""
    owner = {}
    for layer in layers:
        d = os.path.join(root, layer)
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if f.endswith(".h"):
                owner.setdefault(f, layer)
    return owner


INCLUDE = re.compile(r'^\s*#\s*include\s*["<]([^">]+)[">]')


def include_layer(root, src_dir, name, owner, layers):
    """The layer a header named in an include line belongs to, or None."""
    if "/" in name:
        # relative to the including file (as the compiler looks first),
        # else to the root (an -I. build); a missing file is judged by
        # the folder it names
        here = os.path.normpath(os.path.join(src_dir, name))
        there = os.path.normpath(os.path.join(root, name))
        if os.path.exists(here) or (name.startswith("..") and not os.path.exists(there)):
            path = here
        else:
            path = there
        top = os.path.relpath(path, root).split(os.sep)[0]
        return top if top in layers else None
    return owner.get(name)


def check_includes(root, layers, uses):
    owner = headers_of(root, layers)
    bad = []
    for layer in layers:
        d = os.path.join(root, layer)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            with open(path, errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    to = include_layer(root, d, m.group(1), owner, layers)
                    if to is None or to == layer or to in uses[layer]:
                        continue
                    bad.append("%s/%s:%d: includes %s (layer %s); %s may use only: %s"
                               % (layer, f, lineno, m.group(1), to, layer,
                                  " ".join(sorted(uses[layer])) or "nothing"))
    return bad


def nm(paths, undefined):
    """Global symbol names defined (or, with undefined, needed) by paths."""
    args = ["nm", "-g", "--undefined-only" if undefined else "--defined-only"]
    p = subprocess.run(args + paths, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("layers-check: nm failed: %s" % p.stderr.strip())
    syms = set()
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.endswith(":"):
            syms.add(parts[-1])
    return syms


def check_symbols(build, layers, uses, libs):
    files = {}
    for layer in layers:
        if layer in libs:
            path = os.path.join(build, libs[layer])
            if os.path.exists(path):
                files[layer] = [path]
        else:
            d = os.path.join(build, "obj", layer)
            objs = sorted(os.path.join(d, f) for f in os.listdir(d)
                          if f.endswith(".o")) if os.path.isdir(d) else []
            if objs:
                files[layer] = objs
    if not files:
        return [], 0
    defined = {layer: nm(paths, False) for layer, paths in files.items()}
    where = {}
    for layer, syms in defined.items():
        for s in syms:
            where.setdefault(s, layer)
    bad = []
    for layer, paths in files.items():
        for s in sorted(nm(paths, True) - defined[layer]):
            to = where.get(s)
            if to is not None and to != layer and to not in uses[layer]:
                bad.append("%s: needs %s from layer %s; %s may use only: %s"
                           % (" ".join(os.path.relpath(p) for p in paths[:1])
                              + (" ..." if len(paths) > 1 else ""), s, to,
                              layer, " ".join(sorted(uses[layer])) or "nothing"))
    return bad, len(files)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    build = sys.argv[2] if len(sys.argv) > 2 else None
    layers, uses, libs = read_table(root)
    bad = check_includes(root, layers, uses)
    nlibs = 0
    if build:
        sbad, nlibs = check_symbols(build, layers, uses, libs)
        bad += sbad
    for line in bad:
        print("layers-check: " + line)
    if bad:
        print("layers-check: %d violations" % len(bad))
        return 1
    print("layers-check: ok (%d layers%s)" %
          (len(layers), ", %d libraries' symbols" % nlibs if nlibs else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
