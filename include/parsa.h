/*
 * parsa.h: the C API of parsa (libparsa), version 0.1.0.
 *
 * Partition a sparse dataset (examples x features) for a parameter server:
 * examples to workers, features to servers, with the same pipeline, the
 * same options and the same results as `parsa partition` (README, "C
 * library").  Link with `pkg-config --cflags --libs parsa`.
 *
 * Naming.  Every public name starts with psa_ (functions, types) or PSA_
 * (constants, macros).  The library's internal symbols use other prefixes
 * (parsa_, part_, ps_, base_); no internal symbol starts with psa_, so
 * the API cannot collide with them in the static archive libparsa.a (the
 * install test checks it).  libparsa.so exports the psa_ names only.
 *
 * Handles.  psa_graph (a dataset), psa_opts (partition options) and
 * psa_result (a placement with its metrics and report) are opaque; each
 * is created by one function and freed by its _free (which accepts
 * NULL).  A psa_result keeps a reference to its graph: psa_graph_free may
 * be called before the results made from it are freed.
 *
 * Errors.  Every fallible call returns 0 (PSA_OK) or one of enum
 * psa_status and, when err is not NULL, fills *err with the code and a
 * one-line message (input errors: "file:line:col: reason").  Nothing
 * exits, aborts or prints.  On error every output argument is left as it
 * was (a handle output is not set) and nothing leaks.
 *
 * Ownership.  Arrays passed in are borrowed for the call only (copied
 * when kept).  Arrays returned by accessors (const pointers) belong to
 * the handle and live as long as it.  Strings returned by psa_*_json
 * are malloc'ed: free them with psa_free.
 *
 * Thread-safety.  The library has no global state.  A psa_graph and a
 * psa_result are immutable once made: any number of threads may read,
 * partition, evaluate and assign with them at once.  A psa_opts is
 * written by psa_opts_set* (one thread at a time) and only read by
 * psa_partition, so several partitions may share one; psa_opts_cancel
 * may be called from any thread or a signal handler at any time.
 * Callbacks run on the thread that called psa_partition, or (with
 * threads > 1) on one of its worker threads; never two at once for one
 * call.
 */
#ifndef PARSA_H
#define PARSA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PSA_API __attribute__((visibility("default")))
#else
#define PSA_API
#endif

#define PSA_VERSION "0.1.0"
#define PSA_VERSION_MAJOR 0
#define PSA_VERSION_MINOR 1
#define PSA_VERSION_PATCH 0

/* Status codes (the same numbers as the program's internal ones). */
enum psa_status {
	PSA_OK = 0,
	PSA_ENOMEM = 1,     /* out of memory */
	PSA_EINVAL = 2,     /* bad argument or option */
	PSA_EIO = 3,        /* a file cannot be read or written */
	PSA_EPARSE = 4,     /* malformed input ("file:line:col: reason") */
	PSA_ERANGE = 5,     /* a number or size out of range */
	PSA_EMPI = 6,       /* transport failure (not used by the API) */
	PSA_ESTATE = 7,     /* call not valid in this state */
	PSA_ECANCELLED = 8, /* cancelled (psa_opts_cancel or the callback) */
};

#define PSA_ERR_MSG 512

/* An error: caller-owned (on the stack is fine). */
typedef struct psa_error {
	int code;                /* 0 = none */
	char message[PSA_ERR_MSG];
} psa_error;

typedef struct psa_graph psa_graph;
typedef struct psa_opts psa_opts;
typedef struct psa_result psa_result;

/* The library's version, "0.1.0" (static). */
PSA_API const char *psa_version(void);

/* A static name of a status code ("invalid argument", ...); never NULL. */
PSA_API const char *psa_strerror(int code);

/* free() for strings the library returns (psa_result_report_json). */
PSA_API void psa_free(void *p);

/* ---- graphs ------------------------------------------------------------ */

/*
 * A dataset from CSR arrays: n_examples rows; example r has the feature
 * ids col_ids[row_ptr[r] .. row_ptr[r+1]) (any order; a repeated id in a
 * row counts once; any 64-bit value, as the readers allow).  row_ptr has
 * n_examples + 1 entries, row_ptr[0] == 0, non-decreasing.  Features get
 * compact indices 0..n-1 in order of first appearance (row by row), as
 * the LIBSVM reader does, so a file and its arrays give the same graph
 * and the same placement.  Errors: PSA_EINVAL (NULL arrays, n_examples ==
 * 0, a bad row_ptr), PSA_ERANGE (more than 2^32-2 features or examples),
 * PSA_ENOMEM.  The arrays are copied.
 */
PSA_API int psa_graph_from_csr(psa_graph **out, uint32_t n_examples,
			       const uint64_t *row_ptr,
			       const uint64_t *col_ids, psa_error *err);

/*
 * A dataset read from a file, as `parsa partition` reads it: LIBSVM, SNAP
 * edge list or user-item pairs, plain or gzip.  format: NULL or "auto"
 * (by name, then content), "libsvm", "snap", "pairs"; graph_mode (SNAP):
 * NULL or "adjacency", "edges".  An empty dataset is PSA_EINVAL.
 */
PSA_API int psa_graph_read(psa_graph **out, const char *path,
			   const char *format, const char *graph_mode,
			   psa_error *err);

PSA_API uint32_t psa_graph_examples(const psa_graph *g);
PSA_API uint32_t psa_graph_features(const psa_graph *g);
PSA_API uint64_t psa_graph_nnz(const psa_graph *g);

/* The input's id of every compact feature index (psa_graph_features
 * entries; owned by g; NULL when g has no features). */
PSA_API const uint64_t *psa_graph_feature_ids(const psa_graph *g);

/* Drop the caller's reference (results made from g keep theirs). */
PSA_API void psa_graph_free(psa_graph *g);

/* ---- options ----------------------------------------------------------- */

/* Options with the defaults of `parsa partition` (k must still be set). */
PSA_API int psa_opts_new(psa_opts **out, psa_error *err);
PSA_API void psa_opts_free(psa_opts *o);

/*
 * Set an option of `parsa partition` by its long name without "--" and
 * its value as on the command line: "parts" (or "k"), "method" (parsa,
 * random, metis, greedy), "quality" (fast, default, best), "seed",
 * "threads", "imbalance", "time-limit", "refine-passes", "fm-passes", ...
 * (`parsa partition --help`; on-off options take "on" or "off").  As on
 * the command line, --quality is applied before every other option
 * whatever the order of the calls.  Options about files, output and
 * parallel or streamed runs (--out, --format, --workers, --stream,
 * --init-from, ...) are not options of the library: PSA_EINVAL.  A bad
 * value: PSA_EINVAL with the command line's message ("--imbalance must
 * be a number >= 1, got '0'").
 */
PSA_API int psa_opts_set(psa_opts *o, const char *name, const char *value,
			 psa_error *err);

/* Shorthands of psa_opts_set (same checks, same messages). */
PSA_API int psa_opts_set_k(psa_opts *o, uint32_t k, psa_error *err);
PSA_API int psa_opts_set_method(psa_opts *o, const char *method,
				psa_error *err);
PSA_API int psa_opts_set_quality(psa_opts *o, const char *quality,
				 psa_error *err);
PSA_API int psa_opts_set_seed(psa_opts *o, uint64_t seed, psa_error *err);
PSA_API int psa_opts_set_threads(psa_opts *o, uint32_t threads,
				 psa_error *err);
PSA_API int psa_opts_set_imbalance(psa_opts *o, double imbalance,
				   psa_error *err);
/* seconds; 0 = none.  Only Parsa's refinement phases are cut. */
PSA_API int psa_opts_set_time_limit(psa_opts *o, double seconds,
				    psa_error *err);

/*
 * Progress: fn(arg, fraction, phase) with fraction in [0, 1], never
 * decreasing within one psa_partition call, and phase one of "partition
 * U", "refine", "partition V", "metrics", "done" (the last call:
 * fraction 1).  fn NULL: none.
 */
typedef void (*psa_progress_fn)(void *arg, double fraction,
				const char *phase);
PSA_API void psa_opts_set_progress(psa_opts *o, psa_progress_fn fn,
				   void *arg);

/*
 * Cancel callback: fn(arg) is polled at every progress point (and at
 * each phase); a non-zero return cancels as psa_opts_cancel(o, 1) does
 * (the flag then stays set until psa_opts_cancel(o, 0)).
 */
typedef int (*psa_cancel_fn)(void *arg);
PSA_API void psa_opts_set_cancel(psa_opts *o, psa_cancel_fn fn, void *arg);

/*
 * on != 0: cancel every psa_partition running or started with o (they
 * return PSA_ECANCELLED, "cancelled", without a result); on == 0: clear
 * the flag.  Parsa stops at its next checkpoint (between blocks of
 * Algorithm 13, within a refinement sweep or pass); the methods random,
 * greedy and metis run to their end first.  Async-signal-safe.
 */
PSA_API void psa_opts_cancel(psa_opts *o, int on);

/* ---- partitioning and results ------------------------------------------ */

/*
 * Partition g with o: the same pipeline and the same placement as
 * `parsa partition DATA` with the same options and seed.  *out is a new
 * result.  Errors: PSA_EINVAL (a NULL argument, k not set),
 * PSA_ECANCELLED, PSA_ENOMEM.
 */
PSA_API int psa_partition(const psa_graph *g, const psa_opts *o,
			  psa_result **out, psa_error *err);

/*
 * Metrics of a given placement, as `parsa eval` computes them: parts has
 * psa_graph_examples(g) entries, owners psa_graph_features(g) entries
 * (in compact feature order), each < k.  o may be NULL; its seed,
 * random-trials and threads are used for the metrics and the random
 * baseline (as parsa eval's), its imbalance by
 * psa_assign.  Errors: PSA_EINVAL (NULL, k == 0, an id >= k).
 */
PSA_API int psa_evaluate(const psa_graph *g, uint32_t k,
			 const uint32_t *parts, const uint32_t *owners,
			 const psa_opts *o, psa_result **out,
			 psa_error *err);

/*
 * Read PREFIX.examples and PREFIX.features (the files psa_result_write or
 * `parsa partition` wrote, of this dataset) into parts and owners
 * (caller-owned, examples / features entries); *k = 1 + the largest part
 * id seen.  Errors: PSA_EIO, PSA_EPARSE ("PREFIX.examples:line:col: ..."),
 * PSA_EINVAL.
 */
PSA_API int psa_placement_read(const psa_graph *g, const char *prefix,
			       uint32_t *parts, uint32_t *owners,
			       uint32_t *k, psa_error *err);

PSA_API void psa_result_free(psa_result *r);

PSA_API uint32_t psa_result_k(const psa_result *r);
/* The part of every example (psa_graph_examples entries; owned by r). */
PSA_API const uint32_t *psa_result_parts(const psa_result *r);
/* The server of every feature, compact order (owned by r). */
PSA_API const uint32_t *psa_result_owners(const psa_result *r);
/* The graph the result is of (borrowed from r). */
PSA_API const psa_graph *psa_result_graph(const psa_result *r);

/* The report's metrics (README "What the numbers mean"). */
typedef struct psa_metrics {
	uint32_t k;
	double M_max, T_max, T_sum, M_sum;
	double RF, imbalance, local_fraction;
	uint64_t V_used, U_max;
} psa_metrics;

/* which: PSA_PLACEMENT (this placement) or PSA_RANDOM (the random
 * baseline, mean of random-trials seeds). */
enum { PSA_PLACEMENT = 0, PSA_RANDOM = 1 };
PSA_API int psa_result_metrics(const psa_result *r, int which,
			       psa_metrics *m, psa_error *err);

/* The JSON report, as `parsa partition --out PREFIX` writes it to
 * PREFIX.json (for psa_evaluate: as `parsa eval --report`); free with
 * psa_free.  NULL on out of memory. */
PSA_API char *psa_result_report_json(const psa_result *r);

/*
 * Write PREFIX.examples, PREFIX.features and PREFIX.json exactly as
 * `parsa partition --out PREFIX` does (the timings in the report are this
 * call's).  Errors: PSA_EIO, PSA_ENOMEM.
 */
PSA_API int psa_result_write(const psa_result *r, const char *prefix,
			     psa_error *err);

/*
 * Incremental assignment (the rule of POST /v1/jobs/{id}/assign): place n
 * new examples, example e with the feature ids col_ids[row_ptr[e] ..
 * row_ptr[e+1]), one after another against r's placement: to the part
 * that already uses most of its features (fewest new ones) among the
 * parts below the balance bound over the old and new examples (the
 * imbalance of r's options); ties to the smaller part, then the lower
 * id.  Ids the dataset never had are new everywhere.  parts_out: n
 * entries.  r is not changed.  Errors: PSA_EINVAL, PSA_ENOMEM.
 */
PSA_API int psa_assign(const psa_result *r, uint32_t n,
		       const uint64_t *row_ptr, const uint64_t *col_ids,
		       uint32_t *parts_out, psa_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PARSA_H */
