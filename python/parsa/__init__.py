"""parsa: partition sparse data for a parameter server, from Python.

Examples go to workers, features to servers, so that each worker touches
few parameters and most of them live on its own machine (Parsa, Mu Li's
thesis ch. 9).  The package calls the C library (libparsa, include/
parsa.h) through ctypes: the same pipeline, options and placement as
`parsa partition`.  The GIL is released while partitioning; Ctrl-C
cancels at the next checkpoint and raises KeyboardInterrupt.

>>> import scipy.sparse as sp, parsa
>>> X = sp.random(1000, 300, density=0.02, format="csr", random_state=0)
>>> pl = parsa.partition(X, 4, seed=1)
>>> pl.examples.shape, pl.features.shape
((1000,), (300,))
>>> pl.metrics["T_sum"] <= pl.random_metrics["T_sum"]
True
>>> pl.save("/tmp/x.k4")      # /tmp/x.k4.examples, .features, .json

Also: `evaluate` (the metrics of any placement), `assign` (place new
examples against a placement), `graph_partition` (a graph's vertices or
edges), `Client` (the HTTP service, `parsa serve`).
"""
import ctypes
import json
import os
import threading

import numpy as np

from ._lib import (CANCEL, PROGRESS, PSA_ECANCELLED, PSA_EINVAL, PSA_EIO,
                   PSA_ENOMEM, PSA_EPARSE, PSA_ERANGE, PSA_PLACEMENT,
                   PSA_RANDOM, Error, Metrics, lib)
from .client import Client

__all__ = ["partition", "graph_partition", "evaluate", "assign", "Placement",
           "Client", "Cancelled", "ParsaError", "version", "load_libsvm"]
__version__ = lib.psa_version().decode()

METRICS = ("M_max", "T_max", "T_sum", "M_sum", "RF", "imbalance",
           "local_fraction", "V_used", "U_max")


class ParsaError(Exception):
    """An error of the library that is none of the built-in kinds."""


class Cancelled(ParsaError):
    """The partition was cancelled (by the cancel callback)."""


def version():
    """The library's version, e.g. "0.1.0"."""
    return __version__


def _raise(rc, err):
    msg = err.message.decode(errors="replace") or lib.psa_strerror(rc).decode()
    if rc == PSA_ENOMEM:
        raise MemoryError(msg)
    if rc == PSA_EIO:
        raise OSError(msg)
    if rc in (PSA_EINVAL, PSA_EPARSE, PSA_ERANGE):
        raise ValueError(msg)
    if rc == PSA_ECANCELLED:
        raise Cancelled(msg)
    raise ParsaError(msg)


def _check(rc, err):
    if rc:
        _raise(rc, err)


def _u64(a):
    return np.ascontiguousarray(a, dtype=np.uint64)


def _ptr(a, t):
    return a.ctypes.data_as(ctypes.POINTER(t))


class _Graph:
    """A libparsa graph (psa_graph) and how its features map to columns."""

    def __init__(self, X):
        self.h = ctypes.c_void_p()
        self.n_cols = None            # matrices: columns; files: None
        self.convert_seconds = 0.0
        err = Error()
        if isinstance(X, (str, bytes, os.PathLike)):
            path = os.fsencode(X)
            if not os.path.exists(path):
                raise FileNotFoundError("parsa: no such file: %s" % os.fsdecode(path))
            _check(lib.psa_graph_read(ctypes.byref(self.h), path, None, None,
                                      ctypes.byref(err)), err)
        else:
            import time
            t0 = time.perf_counter()
            indptr, indices, n_rows, self.n_cols = _csr_arrays(X)
            self.convert_seconds = time.perf_counter() - t0
            _check(lib.psa_graph_from_csr(ctypes.byref(self.h), n_rows,
                                          _ptr(indptr, ctypes.c_uint64),
                                          _ptr(indices, ctypes.c_uint64),
                                          ctypes.byref(err)), err)
        self.n_rows = lib.psa_graph_examples(self.h)
        self.n_feat = lib.psa_graph_features(self.h)
        ids = lib.psa_graph_feature_ids(self.h)
        self.feature_ids = (np.ctypeslib.as_array(ids, (self.n_feat,)).copy()
                            if self.n_feat else np.zeros(0, np.uint64))

    def __del__(self):
        if getattr(self, "h", None):
            lib.psa_graph_free(self.h)
            self.h = None


def _csr_arrays(X):
    """(indptr, indices as uint64, rows, columns) of a scipy sparse matrix."""
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a dependency
        sp = None
    if sp is None or not sp.issparse(X):
        raise TypeError("parsa: X must be a scipy.sparse matrix (rows = examples, "
                        "columns = features) or a file path, not %s"
                        % type(X).__name__)
    if X.ndim != 2:
        raise ValueError("parsa: X must be 2-dimensional")
    n_rows, n_cols = X.shape
    if n_rows == 0:
        raise ValueError("parsa: X has no rows (no examples to partition)")
    if n_rows >= 2**32 - 1:
        raise ValueError("parsa: X has too many rows (at most 2^32-2)")
    if not sp.isspmatrix_csr(X) and not (hasattr(sp, "csr_array") and
                                         isinstance(X, sp.csr_array)):
        X = X.tocsr()
    return _u64(X.indptr), _u64(X.indices), n_rows, n_cols


class _Opts:
    def __init__(self, k, method, quality, seed, threads, imbalance,
                 time_limit, options):
        self.h = ctypes.c_void_p()
        err = Error()
        _check(lib.psa_opts_new(ctypes.byref(self.h), ctypes.byref(err)), err)
        self.set("parts", _check_k(k))
        if method is not None:
            self.set("method", method)
        if quality is not None:
            self.set("quality", quality)
        if seed is not None:
            self.set("seed", _check_int("seed", seed, 0))
        if threads is not None:
            self.set("threads", _check_int("threads", threads, 0))
        if imbalance is not None:
            self.set("imbalance", repr(float(imbalance)))
        if time_limit is not None:
            self.set("time-limit", repr(float(time_limit)))
        for name, value in options.items():
            if isinstance(value, bool):
                value = "on" if value else "off"
            self.set(name.replace("_", "-"), value)

    def set(self, name, value):
        err = Error()
        _check(lib.psa_opts_set(self.h, str(name).encode(), str(value).encode(),
                                ctypes.byref(err)), err)

    def __del__(self):
        if getattr(self, "h", None):
            lib.psa_opts_free(self.h)
            self.h = None


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError("parsa: %s must be an integer, not %s" % (name, type(v).__name__))
    if v < lo:
        raise ValueError("parsa: %s must be >= %d, got %d" % (name, lo, v))
    return int(v)


def _check_k(k):
    k = _check_int("k", k, 1)
    if k > 65536:
        raise ValueError("parsa: k must be in 1..65536, got %d" % k)
    return k


def _run(opts, call, progress):
    """call() (a C call on opts) with progress, exceptions in the callback
    and Ctrl-C turned into cancelling; returns its status."""
    state = {"exc": None}

    def on_progress(_arg, fraction, phase):
        if progress is None or state["exc"] is not None:
            return
        try:
            progress(fraction, phase.decode())
        except BaseException as e:  # noqa: BLE001 - re-raised below
            state["exc"] = e

    def on_cancel(_arg):
        return 1 if state["exc"] is not None else 0

    pcb, ccb = PROGRESS(on_progress), CANCEL(on_cancel)
    lib.psa_opts_set_progress(opts.h, pcb, None)
    lib.psa_opts_set_cancel(opts.h, ccb, None)
    box = {}
    try:
        if threading.current_thread() is threading.main_thread():
            # run in a thread so that Ctrl-C reaches this one, which then
            # cancels the partition at its next checkpoint
            t = threading.Thread(target=lambda: box.setdefault("rc", call()),
                                 daemon=True)
            t.start()
            try:
                while t.is_alive():
                    t.join(0.05)
            except KeyboardInterrupt:
                lib.psa_opts_cancel(opts.h, 1)
                t.join()
                raise
        else:
            box["rc"] = call()
    finally:
        lib.psa_opts_set_progress(opts.h, PROGRESS(), None)
        lib.psa_opts_set_cancel(opts.h, CANCEL(), None)
    if state["exc"] is not None:
        raise state["exc"]
    return box["rc"]


class Placement:
    """A placement with its metrics and report.

    examples      numpy int32 array: the part (worker) of every example.
    features      numpy int32 array: the server of every feature.  For a
                  matrix, entry j is column j's (-1 for a column no
                  example uses); for a file, entry j is the feature
                  feature_ids[j]'s (the ids of the input, in order of
                  first appearance).
    feature_ids   numpy uint64 array: the feature id of every entry of
                  features.
    k             the number of parts.
    metrics       dict: M_max, T_max, T_sum, M_sum, RF, imbalance,
                  local_fraction, V_used, U_max of this placement.
    random_metrics  the same for the random baseline (mean of the trials).
    report        dict: the JSON report `parsa partition` writes.
    convert_seconds  time spent converting the matrix for the library.

    save(prefix) writes PREFIX.examples, PREFIX.features and PREFIX.json
    as `parsa partition --out PREFIX` does.
    """

    def __init__(self, graph, h):
        self._graph, self._h = graph, h
        self.k = lib.psa_result_k(h)
        parts = np.ctypeslib.as_array(lib.psa_result_parts(h), (graph.n_rows,))
        self.examples = parts.astype(np.int32)
        owners = (np.ctypeslib.as_array(lib.psa_result_owners(h), (graph.n_feat,))
                  .astype(np.int32) if graph.n_feat else np.zeros(0, np.int32))
        if graph.n_cols is None:
            self.features, self.feature_ids = owners, graph.feature_ids
        else:
            self.features = np.full(graph.n_cols, -1, dtype=np.int32)
            self.features[graph.feature_ids.astype(np.int64)] = owners
            self.feature_ids = np.arange(graph.n_cols, dtype=np.uint64)
        self.metrics = self._metrics(PSA_PLACEMENT)
        self.random_metrics = self._metrics(PSA_RANDOM)
        self.convert_seconds = graph.convert_seconds
        self._report = None

    def _metrics(self, which):
        m, err = Metrics(), Error()
        _check(lib.psa_result_metrics(self._h, which, ctypes.byref(m), ctypes.byref(err)), err)
        return {name: getattr(m, name) for name in METRICS}

    @property
    def report(self):
        if self._report is None:
            p = lib.psa_result_report_json(self._h)
            if not p:
                raise MemoryError("parsa: out of memory (report)")
            try:
                self._report = json.loads(ctypes.string_at(p).decode())
            finally:
                lib.psa_free(p)
        return self._report

    def save(self, prefix):
        """Write PREFIX.examples, PREFIX.features, PREFIX.json."""
        err = Error()
        _check(lib.psa_result_write(self._h, os.fsencode(prefix), ctypes.byref(err)), err)

    def __repr__(self):
        return ("Placement(k=%d, examples=%d, features=%d, T_sum=%g, M_max=%g)"
                % (self.k, len(self.examples), len(self.features),
                   self.metrics["T_sum"], self.metrics["M_max"]))

    def __del__(self):
        if getattr(self, "_h", None):
            lib.psa_result_free(self._h)
            self._h = None


def partition(X, k, *, quality="default", method="parsa", seed=1, threads=None,
              imbalance=1.03, time_limit=None, progress=None, **options):
    """Partition X into k parts; returns a Placement.

    X: a scipy.sparse matrix (rows = examples, columns = features; the
    values are ignored) or the path of a file `parsa partition` reads
    (LIBSVM, SNAP edge list, user-item pairs; .gz).  method: "parsa",
    "random", "metis" or "greedy".  quality: "fast", "default", "best".
    threads: None = the CPUs the process may use (the placement does not
    depend on it).  time_limit: seconds for Parsa's refinement (None =
    none).  progress: progress(fraction, phase), fraction never going
    back, phase "partition U", "refine", "partition V", "metrics", "done".
    Other options of `parsa partition` by name, e.g. refine_passes=3,
    fm_passes=2, restream=1.  The same X, k, options and seed give the
    placement `parsa partition` gives for the same data.

    Raises TypeError (X not sparse, k not an integer), ValueError (bad
    values, empty X, malformed file), OSError (unreadable file),
    KeyboardInterrupt (Ctrl-C: the run is cancelled first).

    >>> import scipy.sparse as sp, parsa
    >>> X = sp.csr_matrix(([1] * 6, [0, 1, 1, 2, 3, 4], [0, 2, 4, 6]), shape=(3, 5))
    >>> parsa.partition(X, 2).k
    2
    """
    opts = _Opts(k, method, quality, seed, threads, imbalance, time_limit, options)
    g = _Graph(X)
    out, err = ctypes.c_void_p(), Error()
    rc = _run(opts, lambda: lib.psa_partition(g.h, opts.h, ctypes.byref(out),
                                               ctypes.byref(err)), progress)
    _check(rc, err)
    return Placement(g, out)


def evaluate(X, examples, features, *, k=None, seed=1):
    """The metrics of a given placement of X (as `parsa eval`): a Placement.

    examples: the part of every row; features: the server of every
    column (matrix; -1 allowed for unused columns) or of every feature in
    the file's order (path; as Placement.features).  k: default 1 + the
    largest id.  seed: the random baseline's.
    """
    g = _Graph(X)
    ex = np.asarray(examples)
    ft = np.asarray(features)
    if ex.ndim != 1 or len(ex) != g.n_rows:
        raise ValueError("parsa: examples must have one entry per example (%d), "
                         "got shape %s" % (g.n_rows, ex.shape))
    want = g.n_cols if g.n_cols is not None else g.n_feat
    if ft.ndim != 1 or len(ft) != want:
        raise ValueError("parsa: features must have one entry per %s (%d), got shape %s"
                         % ("column" if g.n_cols is not None else "feature", want, ft.shape))
    owners = ft[g.feature_ids.astype(np.int64)] if g.n_cols is not None else ft
    if len(ex) and ex.min() < 0:
        raise ValueError("parsa: examples has a negative part")
    if len(owners) and owners.min() < 0:
        raise ValueError("parsa: a feature some example uses has no server (-1)")
    if k is None:
        k = 1 + int(max(ex.max() if len(ex) else 0, owners.max() if len(owners) else 0))
    k = _check_k(k)
    opts = _Opts(k, None, None, seed, None, None, None, {})
    ex32 = np.ascontiguousarray(ex, dtype=np.uint32)
    ow32 = np.ascontiguousarray(owners, dtype=np.uint32)
    out, err = ctypes.c_void_p(), Error()
    _check(lib.psa_evaluate(g.h, k, _ptr(ex32, ctypes.c_uint32), _ptr(ow32, ctypes.c_uint32),
                            opts.h, ctypes.byref(out), ctypes.byref(err)), err)
    return Placement(g, out)


def assign(placement, new_rows):
    """Parts for new examples against a placement (it is not changed).

    new_rows: a scipy.sparse matrix (one row per new example, column j =
    feature id j, as for the matrix the placement was made from) or a
    list of lists of feature ids.  Each goes to the part that already
    uses most of its features among the parts below the balance bound;
    returns a numpy int32 array.
    """
    if not isinstance(placement, Placement):
        raise TypeError("parsa: assign needs a Placement")
    try:
        import scipy.sparse as sp
        sparse = sp.issparse(new_rows)
    except ImportError:  # pragma: no cover
        sparse = False
    if sparse:
        m = new_rows.tocsr()
        indptr, ids, n = _u64(m.indptr), _u64(m.indices), m.shape[0]
    elif isinstance(new_rows, (list, tuple)):
        rows = [list(r) for r in new_rows]
        for r in rows:
            for f in r:
                if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < 0:
                    raise ValueError("parsa: feature ids must be integers >= 0, got %r" % (f,))
        indptr = _u64(np.cumsum([0] + [len(r) for r in rows]))
        ids = _u64([f for r in rows for f in r]) if any(rows) else np.zeros(1, np.uint64)
        n = len(rows)
    else:
        raise TypeError("parsa: new_rows must be a scipy.sparse matrix or a list of "
                        "lists of feature ids, not %s" % type(new_rows).__name__)
    out = np.zeros(max(n, 1), dtype=np.uint32)
    err = Error()
    _check(lib.psa_assign(placement._h, n, _ptr(indptr, ctypes.c_uint64),
                          _ptr(ids if len(ids) else np.zeros(1, np.uint64), ctypes.c_uint64),
                          _ptr(out, ctypes.c_uint32), ctypes.byref(err)), err)
    return out[:n].astype(np.int32)


def graph_partition(G, k, mode="adjacency", **kwargs):
    """Partition a graph: its vertices (mode "adjacency") or its edges
    (mode "edges"); keyword arguments as for partition().

    G: a square scipy.sparse adjacency matrix (taken as undirected; the
    diagonal is ignored) or an (m, 2) integer array of edges.
    adjacency: every vertex is an example whose features are its
      neighbours (examples and features are both vertices: features[v] is
      the server of vertex v).
    edges: every distinct undirected edge {a, b}, a != b, is an example
      with the features a and b, in order of first appearance.
    """
    import scipy.sparse as sp
    if mode not in ("adjacency", "edges"):
        raise ValueError("parsa: mode must be 'adjacency' or 'edges', got %r" % (mode,))
    if sp.issparse(G):
        if G.shape[0] != G.shape[1]:
            raise ValueError("parsa: an adjacency matrix must be square, got shape %s"
                             % (G.shape,))
        n = G.shape[0]
        coo = G.tocoo()
        edges = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
    else:
        edges = np.asarray(G)
        if edges.ndim != 2 or edges.shape[1] != 2 or not np.issubdtype(edges.dtype, np.integer):
            raise TypeError("parsa: G must be a scipy.sparse adjacency matrix or an "
                            "(m, 2) integer array of edges")
        if len(edges) and edges.min() < 0:
            raise ValueError("parsa: vertex ids must be >= 0")
        edges = edges.astype(np.int64)
        n = int(edges.max()) + 1 if len(edges) else 0
    edges = edges[edges[:, 0] != edges[:, 1]]
    if len(edges) == 0:
        raise ValueError("parsa: the graph has no edges")
    if mode == "adjacency":
        both = np.concatenate([edges, edges[:, ::-1]])
        A = sp.csr_matrix((np.ones(len(both), np.int8), (both[:, 0], both[:, 1])),
                          shape=(n, n))
        A.sum_duplicates()
        return partition(A, k, **kwargs)
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    pairs = np.stack([lo, hi], axis=1)
    _, first = np.unique(pairs, axis=0, return_index=True)
    keep = edges[np.sort(first)]
    m = len(keep)
    X = sp.csr_matrix((np.ones(2 * m, np.int8), keep.reshape(-1),
                       np.arange(0, 2 * m + 1, 2)), shape=(m, n))
    return partition(X, k, **kwargs)


def load_libsvm(path):
    """A LIBSVM file (plain or .gz) as a scipy CSR matrix of its feature
    indices: rows and their entries in the file's order (so partition()
    of it gives the placement `parsa partition` gives for the file), the
    values and labels dropped.  Pure Python: for samples and tests."""
    import gzip
    import scipy.sparse as sp
    opener = gzip.open if str(path).endswith(".gz") else open
    indptr, idx = [0], []
    with opener(path, "rt") as f:
        for line in f:
            t = line.split("#", 1)[0].split()
            if not t:
                continue
            idx.extend(int(x[:x.index(":")]) for x in t[1:]
                       if ":" in x and not x.startswith("qid:"))
            indptr.append(len(idx))
    idx = np.asarray(idx, dtype=np.int64)
    return sp.csr_matrix((np.ones(len(idx), np.int8), idx, np.asarray(indptr, np.int64)),
                         shape=(len(indptr) - 1, int(idx.max()) + 1 if len(idx) else 0))
