#!/usr/bin/env python3
"""Tests of the layering itself: `make layers-check` (scripts/layers-check.py)
and the per-layer include paths of the Makefile.

Each test works on a temporary copy of the sources (the layer folders,
the Makefile, scripts/): the clean copy must pass, and a planted
wrong-way include (by file name, by a path, a layer beside instead of
above) must make the check fail and name the file, and must fail to
compile with the layer's include path.  The symbol half of the check runs
on the built libraries (PARSA_BUILD, set by scripts/run-tests.sh): clean
they pass; a library with an object that calls up a layer fails.
Ends with "N passed, N failed[, N skipped]".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import Skip, finish, test  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.path.abspath(os.environ.get("PARSA_BUILD", os.path.join(ROOT, "build")))
SCRIPT = os.path.join(ROOT, "scripts", "layers-check.py")
TMP = tempfile.mkdtemp(prefix="parsa-layers-")


def layers():
    text = open(os.path.join(ROOT, "Makefile")).read()
    return re.search(r"^LAYERS\s*=\s*(.*)$", text, re.M).group(1).split()


def copy_tree(name):
    dst = os.path.join(TMP, name)
    for d in layers() + ["scripts"]:
        shutil.copytree(os.path.join(ROOT, d), os.path.join(dst, d))
    shutil.copy(os.path.join(ROOT, "Makefile"), dst)
    return dst


def check(root, build=None):
    args = [sys.executable, SCRIPT, root] + ([build] if build else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def plant(root, path, line):
    with open(os.path.join(root, path), "a") as f:
        f.write("\n" + line + "\n")


def compile_one(root, src):
    """make src's object in the copy, with its layer's include path."""
    obj = "b/obj/" + src[:-2] + ".o"
    return subprocess.run(["make", "-s", "-C", root, "BUILD=b", obj],
                          capture_output=True, text=True, timeout=300)


@test
def test_clean_tree_passes():
    p = check(copy_tree("clean"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "layers-check: ok" in p.stdout, p.stdout


@test
def test_the_repository_passes():
    p = check(ROOT)
    assert p.returncode == 0, p.stdout + p.stderr


@test
def test_upward_include_fails():
    # the arrow issue 16 removed: the partitioner calling the HTTP service
    root = copy_tree("up")
    plant(root, "partitioner/part_cli.c", '#include "http_main.h"')
    p = check(root)
    assert p.returncode == 1, p.stdout
    assert "partitioner/part_cli.c" in p.stdout and "http_main.h" in p.stdout, p.stdout
    assert "layer http" in p.stdout, p.stdout
    c = compile_one(root, "partitioner/part_cli.c")
    assert c.returncode != 0, "a wrong-way include compiled"
    assert "http_main.h" in c.stderr, c.stderr


@test
def test_sideways_include_fails():
    # parsa/ and server/ share base/ without knowing each other
    root = copy_tree("side")
    plant(root, "parsa/parsa_graph.c", '#include "ps.h"')
    p = check(root)
    assert p.returncode == 1 and "parsa/parsa_graph.c" in p.stdout, p.stdout
    assert "layer server" in p.stdout, p.stdout
    c = compile_one(root, "parsa/parsa_graph.c")
    assert c.returncode != 0, "a sideways include compiled"


@test
def test_include_by_path_fails():
    root = copy_tree("path")
    plant(root, "base/base_cmp.c", '#include "../parsa/parsa_graph.h"')
    plant(root, "server/ps_msg.c", '#include "trainer/train_main.h"')
    p = check(root)
    assert p.returncode == 1, p.stdout
    assert "base/base_cmp.c" in p.stdout and "server/ps_msg.c" in p.stdout, p.stdout


@test
def test_allowed_include_passes():
    # a downward include that no file has yet is fine
    root = copy_tree("down")
    plant(root, "trainer/train_prox.c", '#include "parsa_graph.h"')
    plant(root, "app/app_main.c", '#include "http_route.h"')
    p = check(root)
    assert p.returncode == 0, p.stdout


@test
def test_table_is_the_makefile():
    # widening the table in the Makefile is what allows an arrow
    root = copy_tree("table")
    plant(root, "parsa/parsa_graph.c", '#include "ps.h"')
    assert check(root).returncode == 1
    mk = os.path.join(root, "Makefile")
    text = open(mk).read()
    text = re.sub(r"^USES_parsa(\s*)=.*$", r"USES_parsa\1= base server", text, flags=re.M)
    open(mk, "w").write(text)
    p = check(root)
    assert p.returncode == 0, p.stdout


def built_libs():
    text = open(os.path.join(ROOT, "Makefile")).read()
    libs = re.findall(r"^LIB_\w+\s*=\s*\$\(BUILD\)/(\S+)", text, re.M)
    if not all(os.path.exists(os.path.join(BUILD, l)) for l in libs):
        raise Skip("libraries not built in %s" % BUILD)
    return libs


@test
def test_libraries_pass():
    built_libs()
    p = check(ROOT, BUILD)
    assert p.returncode == 0, p.stdout
    assert "libraries' symbols" in p.stdout, p.stdout


@test
def test_library_calling_up_fails():
    libs = built_libs()
    b = os.path.join(TMP, "libs")
    os.makedirs(os.path.join(b, "obj", "app"))
    for l in libs:
        shutil.copy(os.path.join(BUILD, l), b)
    for f in os.listdir(os.path.join(BUILD, "obj", "app")):
        if f.endswith(".o"):
            shutil.copy(os.path.join(BUILD, "obj", "app", f), os.path.join(b, "obj", "app"))
    # a server object that calls the trainer: compiles (declared by hand)
    # but its library would need a layer above it
    src = os.path.join(TMP, "up.c")
    open(src, "w").write("int train_main(int, char **);\n"
                         "int ps_up(void);\n"
                         "int ps_up(void) { return train_main(0, 0); }\n")
    obj = os.path.join(TMP, "up.o")
    subprocess.run(["cc", "-c", src, "-o", obj], check=True)
    subprocess.run(["ar", "rs", os.path.join(b, "libpsserver.a"), obj], check=True,
                   capture_output=True)
    p = check(ROOT, b)
    assert p.returncode == 1, p.stdout
    assert "train_main" in p.stdout and "layer trainer" in p.stdout, p.stdout


shutil.rmtree(TMP, ignore_errors=True)
finish()
