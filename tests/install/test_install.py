"""The installed C library: make install / uninstall into temporary prefixes.

Runs `make install PREFIX=...` (and with DESTDIR), builds examples/
partition.c against the installed tree through pkg-config, shared (with
LD_LIBRARY_PATH) and static, runs it, and checks that its placement is
`parsa partition`'s for the same data, k and seed; that libparsa.so
exports only the API's psa_ names and carries the soname libparsa.so.0;
that no internal symbol of libparsa.a uses the API's prefix; that the man
pages render with `man -l`; and that `make uninstall` leaves the prefix
empty.  Needs the release build (PARSA_BUILD=build): the sanitizer builds
make no shared library, so there it skips.  No root, no network.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import Skip, finish, test, tmp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("PARSA_BUILD", "build")
SANITIZED = re.search(r"(^|/)(asan|tsan)(/|$)", BUILD) is not None
SAMPLE = os.path.join(ROOT, "data", "a9a-sample.svm.gz")
VERSION = "0.1.0"
MAN = ["parsa"] + ["parsa-" + c for c in ("partition", "eval", "gen", "serve", "train")]
PREFIX = tmp("prefix")


def sh(cmd, env=None, cwd=ROOT, ok=True):
    p = subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True,
                       text=True, env=env, cwd=cwd, timeout=600)
    if ok and p.returncode != 0:
        raise AssertionError("%s failed (%d): %s%s" % (cmd, p.returncode,
                                                       p.stdout[-2000:], p.stderr[-2000:]))
    return p


def make(*args):
    # a clean make: not the options or variables of a `make test` above us
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    return sh(["make", "-s", "--no-print-directory", "BUILD=" + BUILD] + list(args), env=env)


def need_release():
    if SANITIZED:
        raise Skip("the install test runs on the release build (%s is a "
                   "sanitizer build without libparsa.so)" % BUILD)


def pkg_env(prefix):
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.path.join(prefix, "lib", "pkgconfig")
    return env


def installed_files(root):
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(out)


def api_names():
    """Every function parsa.h declares with PSA_API."""
    text = open(os.path.join(ROOT, "include", "parsa.h")).read()
    return set(re.findall(r"PSA_API[^;(]*?\b(psa_\w+)\s*\(", text))


@test
def test_install():
    need_release()
    make("install", "PREFIX=" + PREFIX)
    files = installed_files(PREFIX)
    want = ["bin/parsa", "include/parsa.h", "lib/libparsa.a",
            "lib/libparsa.so", "lib/libparsa.so.0", "lib/libparsa.so.%s" % VERSION,
            "lib/pkgconfig/parsa.pc"] + ["share/man/man1/%s.1" % m for m in MAN]
    plugin = os.path.exists(os.path.join(ROOT, BUILD, "parsa-mpi.so"))
    if plugin:  # the MPI transport, loaded by --mpi (server/ps_mpi_plugin.h)
        want.append("lib/parsa/parsa-mpi.so")
    assert files == sorted(want), files
    if plugin and shutil.which("mpirun"):
        # the installed program finds it in PREFIX/lib/parsa
        out = tmp("installed-mpi")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        env.pop("PARSA_MPI_PLUGIN", None)
        sh(["timeout", "120", "mpirun", "-np", "1", "--mca", "btl", "self,tcp",
            os.path.join(PREFIX, "bin", "parsa"), "partition", SAMPLE, "-k", "4",
            "--mpi", "-q", "--out", out], env=env)
        assert json.load(open(out + ".json"))["parallel"]["transport"] == "mpi"
    lib = os.path.join(PREFIX, "lib")
    assert os.readlink(os.path.join(lib, "libparsa.so.0")) == "libparsa.so.%s" % VERSION
    assert os.readlink(os.path.join(lib, "libparsa.so")) == "libparsa.so.0"
    out = sh([os.path.join(PREFIX, "bin", "parsa"), "--version"]).stdout
    assert VERSION in out, out
    pc = sh(["pkg-config", "--cflags", "--libs", "parsa"], env=pkg_env(PREFIX)).stdout
    assert "-I%s/include" % PREFIX in pc and "-lparsa" in pc, pc
    static = sh(["pkg-config", "--static", "--libs", "parsa"], env=pkg_env(PREFIX)).stdout
    assert "-lmetis" in static and "-ljansson" in static, static


@test
def test_soname_and_exports():
    need_release()
    so = os.path.join(PREFIX, "lib", "libparsa.so.%s" % VERSION)
    dyn = sh(["readelf", "-d", so]).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    assert m and m.group(1) == "libparsa.so.0", dyn
    names = set()
    for line in sh(["nm", "-D", "--defined-only", so]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            names.add(parts[2])
    extra = sorted(n for n in names if not n.startswith("psa_"))
    assert not extra, "exported besides the API: %s" % extra[:20]
    want = api_names()
    assert len(want) >= 30, want
    assert names == want, (sorted(want - names), sorted(names - want))


@test
def test_static_archive_prefix():
    """psa_ is the API's alone: no other object of libparsa.a defines or
    uses a psa_ name, so the API cannot collide with an internal one."""
    need_release()
    out = sh(["nm", "-A", "-g", "--defined-only",
              os.path.join(PREFIX, "lib", "libparsa.a")]).stdout
    owners = set()
    for line in out.splitlines():
        parts = line.split()
        if parts and re.match(r"(?i)psa_", parts[-1]):
            owners.add(parts[0].split(":")[1])
    assert owners == {"psa.o"}, owners


def build_example(kind):
    env = pkg_env(PREFIX)
    cflags = sh(["pkg-config", "--cflags", "parsa"], env=env).stdout.split()
    if kind == "shared":
        libs = sh(["pkg-config", "--libs", "parsa"], env=env).stdout.split()
    else:
        libs = sh(["pkg-config", "--static", "--libs", "parsa"], env=env).stdout.split()
        libs = ["-l:libparsa.a" if a == "-lparsa" else a for a in libs]
    exe = tmp("partition-" + kind)
    sh(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic",
        os.path.join(ROOT, "examples", "partition.c"), "-o", exe] + cflags + libs)
    needed = sh(["readelf", "-d", exe]).stdout
    assert ("libparsa.so.0" in needed) == (kind == "shared"), needed
    return exe


def same_as_cli(exe, env, name):
    """The example on the sample (k=4, seed 3) writes the files the CLI
    writes for the same options."""
    if not os.path.exists(SAMPLE):
        raise Skip("data/a9a-sample.svm.gz is missing")
    ours, cli = tmp(name + "-lib"), tmp(name + "-cli")
    out = sh([exe, SAMPLE, "4", "3", ours], env=env).stdout
    assert "M_max" in out and "random:" in out, out
    sh([os.path.join(PREFIX, "bin", "parsa"), "partition", SAMPLE, "-k", "4",
        "--seed", "3", "--out", cli, "-q"])
    for ext in (".examples", ".features"):
        a, b = open(ours + ext).read(), open(cli + ext).read()
        assert a == b, "%s differs from the CLI's" % ext
    ja, jb = json.load(open(ours + ".json")), json.load(open(cli + ".json"))
    assert sorted(ja) == sorted(jb), (sorted(ja), sorted(jb))
    for key in ("k", "method", "params", "dataset", "metrics", "random",
                "improvement", "parts", "random_parts"):
        if key in jb:
            assert ja[key] == jb[key], (key, ja[key], jb[key])
    return out


@test
def test_example_shared():
    need_release()
    exe = build_example("shared")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(PREFIX, "lib"))
    out = sh([exe], env=env).stdout  # the CSR arrays in the program
    assert "6 examples, 6 features, k=2" in out, out
    same_as_cli(exe, env, "shared")


@test
def test_example_static():
    need_release()
    exe = build_example("static")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = sh([exe], env=env).stdout
    assert "6 examples, 6 features, k=2" in out, out
    same_as_cli(exe, env, "static")


@test
def test_header_cplusplus():
    need_release()
    if not shutil.which("g++"):
        raise Skip("no g++")
    sh("echo '#include <parsa.h>' | g++ -x c++ -fsyntax-only -Wall -Wextra -I%s/include -"
       % PREFIX)


@test
def test_man_pages():
    need_release()
    if not shutil.which("man"):
        raise Skip("man is not installed (man-db)")
    for m in MAN:
        path = os.path.join(PREFIX, "share", "man", "man1", m + ".1")
        p = sh(["man", "-l", path], env=dict(os.environ, MANWIDTH="80", MANPAGER="cat",
                                              PAGER="cat"))
        assert "NAME" in p.stdout and m in p.stdout and "SYNOPSIS" in p.stdout, p.stdout[:500]
        assert "warning" not in p.stderr, p.stderr


@test
def test_uninstall():
    need_release()
    make("uninstall", "PREFIX=" + PREFIX)
    assert os.listdir(PREFIX) == [], installed_files(PREFIX) or os.listdir(PREFIX)


@test
def test_destdir():
    need_release()
    dest = tmp("dest")
    make("install", "PREFIX=/opt/parsa", "DESTDIR=" + dest)
    root = os.path.join(dest, "opt", "parsa")
    assert "lib/libparsa.so.%s" % VERSION in installed_files(root)
    pc = open(os.path.join(root, "lib", "pkgconfig", "parsa.pc")).read()
    assert "prefix=/opt/parsa" in pc and dest not in pc, pc
    assert "Requires.private:" in pc and "Libs.private:" in pc, pc
    make("uninstall", "PREFIX=/opt/parsa", "DESTDIR=" + dest)
    assert installed_files(dest) == [], installed_files(dest)
    assert os.listdir(root) == [], os.listdir(root)


finish()
