#!/usr/bin/env python3
"""The MPI transport as a plugin (server/ps_mpi_plugin.h): OpenMPI is
loaded only by a run that uses it, and a missing, broken or foreign plugin
gives a clear error, never a crash or a silent fallback.

Run from the repository root with PARSA_BIN pointing at the binary (the
test runner sets it).  Ends with "N passed, N failed[, N skipped]".
"""
import os
import shutil
import subprocess

from clitest import (BIN, MPI_PLUGIN, MPIRUN, Skip, check_placement, finish,
                     mpirun, run, test, tmp)

DATA = "data/a9a-sample.svm.gz"


def loaded_files(*args, env=None):
    """The shared objects the dynamic loader opened for `parsa args`
    (LD_DEBUG=files), as (the run, the set of their base names)."""
    e = dict(os.environ if env is None else env, LD_DEBUG="files")
    p = subprocess.run([BIN, *map(str, args)], capture_output=True,
                       text=True, timeout=600, env=e)
    names = set()
    for line in p.stderr.splitlines():
        if "file=" in line:
            f = line.split("file=", 1)[1].split()[0]
            names.add(os.path.basename(f))
    return p, names


def have_openmpi_dev():
    return subprocess.run(["pkg-config", "--exists", "ompi-c"]).returncode == 0


def needed(path):
    """The DT_NEEDED entries of an ELF object (readelf -d)."""
    p = subprocess.run(["readelf", "-d", path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return [line.split("[", 1)[1].rstrip("]") for line in p.stdout.splitlines()
            if "(NEEDED)" in line]


@test
def test_plugin_built_beside_the_binary():
    """With OpenMPI's development files the build makes the plugin next to
    the program: the MPI tests cannot quietly skip for want of it."""
    if not have_openmpi_dev():
        raise Skip("OpenMPI's development files (ompi-c) are not installed")
    assert os.path.exists(MPI_PLUGIN), MPI_PLUGIN
    assert any(n.startswith("libmpi") for n in needed(MPI_PLUGIN)), \
        needed(MPI_PLUGIN)


@test
def test_program_and_library_do_not_link_openmpi():
    for path in (BIN, os.path.join(os.path.dirname(BIN), "libparsa.so")):
        if not os.path.exists(path):
            continue  # the sanitizer builds make no libparsa.so
        bad = [n for n in needed(path)
               if n.startswith(("libmpi", "libopen-", "libhwloc"))]
        assert not bad, "%s needs %s" % (path, bad)


@test
def test_thread_run_maps_no_openmpi():
    """A partition on threads never opens the plugin nor OpenMPI."""
    p, names = loaded_files("partition", DATA, "-k", 4, "--workers", 2, "-q",
                            "--out", tmp("threads"))
    assert p.returncode == 0, p.stderr[-2000:]
    assert names, "LD_DEBUG printed nothing"
    assert not [n for n in names
                if n.startswith(("libmpi", "libopen-", "parsa-mpi"))], names
    check_placement(tmp("threads"), 4)


@test
def test_mpi_run_loads_the_plugin():
    """--mpi under mpirun opens parsa-mpi.so (and through it libmpi) and
    writes a valid placement."""
    if not os.path.exists(MPI_PLUGIN):
        raise Skip("no MPI plugin in this build")
    if not MPIRUN:
        raise Skip("mpirun not found")
    p = mpirun(1, "partition", DATA, "-k", 4, "--mpi", "-q", "--out",
               tmp("mpi1"), env={"LD_DEBUG": "files"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert "parsa-mpi.so" in p.stderr and "dynamically loaded by" in p.stderr
    check_placement(tmp("mpi1"), 4)


@test
def test_no_plugin_is_a_clear_error():
    """A program copied away from its plugin: --mpi fails before any work
    with what is missing and where it was looked for; nothing written."""
    d = tmp("alone")
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, "parsa")
    shutil.copy(BIN, exe)
    env = dict(os.environ)
    env.pop("PARSA_MPI_PLUGIN", None)
    p = subprocess.run([exe, "partition", DATA, "-k", "4", "--mpi", "--out",
                        os.path.join(d, "out")], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode != 0
    assert "no MPI transport" in p.stderr and "parsa-mpi.so" in p.stderr, p.stderr
    assert os.path.realpath(d) in p.stderr, p.stderr
    assert "PARSA_MPI_PLUGIN" in p.stderr, p.stderr
    assert not [f for f in os.listdir(d) if f.startswith("out")]
    # the threads still work without it
    q = subprocess.run([exe, "partition", DATA, "-k", "4", "-q", "--out",
                        os.path.join(d, "thr")], capture_output=True,
                       text=True, timeout=120, env=env)
    assert q.returncode == 0, q.stderr
    check_placement(os.path.join(d, "thr"), 4)


def run_with_plugin(path):
    env = dict(os.environ, PARSA_MPI_PLUGIN=path)
    return run("partition", DATA, "-k", 4, "--mpi", "--out", tmp("bad"),
               ok=False, env=env)


@test
def test_plugin_path_that_does_not_exist():
    p = run_with_plugin(tmp("nowhere/parsa-mpi.so"))
    assert p.returncode != 0
    assert "cannot load the MPI transport" in p.stderr, p.stderr
    assert "nowhere/parsa-mpi.so" in p.stderr, p.stderr


def build_so(name, source):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler to build a foreign plugin")
    src, out = tmp(name + ".c"), tmp(name + ".so")
    with open(src, "w") as f:
        f.write(source)
    subprocess.run([cc, "-shared", "-fPIC", "-o", out, src], check=True)
    return out


@test
def test_plugin_from_another_build_is_refused():
    so = build_so("foreign", """
        struct table { unsigned abi, sizes; void *fn[4]; };
        static const struct table t = { 99u, 12345u, { 0, 0, 0, 0 } };
        const struct table *ps_mpi_plugin_v1(void) { return &t; }
    """)
    p = run_with_plugin(so)
    assert p.returncode != 0
    assert "from another build of parsa" in p.stderr, p.stderr
    assert "99/" in p.stderr, p.stderr


@test
def test_object_without_the_entry_is_refused():
    so = build_so("stranger", "int something_else(void) { return 1; }\n")
    p = run_with_plugin(so)
    assert p.returncode != 0
    assert "not a parsa MPI plugin" in p.stderr, p.stderr


finish()
