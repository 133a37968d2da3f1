"""ctypes bindings of libparsa (include/parsa.h); private to the package.

The library is looked up, in order: $PARSA_LIB (a path); libparsa.so.0
beside this file (`make python` puts it there, `pip install ./python`
then ships it); the source tree's build/libparsa.so.0 (running from a
checkout); the system's libparsa.so.0 (`make install`).
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

PSA_OK, PSA_ENOMEM, PSA_EINVAL, PSA_EIO, PSA_EPARSE, PSA_ERANGE = 0, 1, 2, 3, 4, 5
PSA_EMPI, PSA_ESTATE, PSA_ECANCELLED = 6, 7, 8
PSA_PLACEMENT, PSA_RANDOM = 0, 1


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 512)]


class Metrics(ctypes.Structure):
    _fields_ = [("k", ctypes.c_uint32),
                ("M_max", ctypes.c_double), ("T_max", ctypes.c_double),
                ("T_sum", ctypes.c_double), ("M_sum", ctypes.c_double),
                ("RF", ctypes.c_double), ("imbalance", ctypes.c_double),
                ("local_fraction", ctypes.c_double),
                ("V_used", ctypes.c_uint64), ("U_max", ctypes.c_uint64)]


PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_double, ctypes.c_char_p)
CANCEL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)

_vp = ctypes.c_void_p
_u32p = ctypes.POINTER(ctypes.c_uint32)
_u64p = ctypes.POINTER(ctypes.c_uint64)
_errp = ctypes.POINTER(Error)
_vpp = ctypes.POINTER(ctypes.c_void_p)

_PROTOS = {
    "psa_version": (ctypes.c_char_p, []),
    "psa_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "psa_free": (None, [_vp]),
    "psa_graph_from_csr": (ctypes.c_int, [_vpp, ctypes.c_uint32, _u64p, _u64p, _errp]),
    "psa_graph_read": (ctypes.c_int, [_vpp, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_char_p, _errp]),
    "psa_graph_examples": (ctypes.c_uint32, [_vp]),
    "psa_graph_features": (ctypes.c_uint32, [_vp]),
    "psa_graph_nnz": (ctypes.c_uint64, [_vp]),
    "psa_graph_feature_ids": (_u64p, [_vp]),
    "psa_graph_free": (None, [_vp]),
    "psa_opts_new": (ctypes.c_int, [_vpp, _errp]),
    "psa_opts_free": (None, [_vp]),
    "psa_opts_set": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.c_char_p, _errp]),
    "psa_opts_set_progress": (None, [_vp, PROGRESS, _vp]),
    "psa_opts_set_cancel": (None, [_vp, CANCEL, _vp]),
    "psa_opts_cancel": (None, [_vp, ctypes.c_int]),
    "psa_partition": (ctypes.c_int, [_vp, _vp, _vpp, _errp]),
    "psa_evaluate": (ctypes.c_int, [_vp, ctypes.c_uint32, _u32p, _u32p, _vp, _vpp, _errp]),
    "psa_result_free": (None, [_vp]),
    "psa_result_k": (ctypes.c_uint32, [_vp]),
    "psa_result_parts": (_u32p, [_vp]),
    "psa_result_owners": (_u32p, [_vp]),
    "psa_result_metrics": (ctypes.c_int, [_vp, ctypes.c_int, ctypes.POINTER(Metrics), _errp]),
    "psa_result_report_json": (_vp, [_vp]),
    "psa_result_write": (ctypes.c_int, [_vp, ctypes.c_char_p, _errp]),
    "psa_assign": (ctypes.c_int, [_vp, ctypes.c_uint32, _u64p, _u64p, _u32p, _errp]),
}


def _candidates():
    env = os.environ.get("PARSA_LIB")
    if env:
        yield env
    yield os.path.join(_HERE, "libparsa.so.0")
    yield os.path.join(_HERE, "..", "..", "build", "libparsa.so.0")
    yield "libparsa.so.0"


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (res, args) in _PROTOS.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        return lib
    raise ImportError("parsa: libparsa.so.0 not found (tried %s): build it with "
                      "`make` (or `make python`, `make install`), or set PARSA_LIB"
                      % ", ".join(tried))


lib = _load()
