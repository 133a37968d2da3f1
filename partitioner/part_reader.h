/*
 * part_reader: read a dataset (LIBSVM, SNAP edge list, user-item pairs;
 * plain or gzip) into the bipartite CSR of parsa (README "Input formats").
 *
 * The result is a struct part_dataset: g has one row per example, in the
 * order below, and one column per distinct feature (compact ids); feat_id
 * maps a compact feature id back to the input's own 64-bit id.  Compact
 * feature ids are given in order of first appearance (see each format).
 *
 * Lines.  Every format reads the input line by line (LF or CRLF, a last line
 * without '\n' included).  Blank lines (only spaces, tabs, '\r', '\v', '\f')
 * and comment lines (first non-blank byte '#') are skipped everywhere.  A NUL
 * byte in a line is an error.  Fields are separated by runs of spaces/tabs
 * (pairs also accept one ',').  Ids and indices are unsigned 64-bit
 * decimals: digits only (leading zeros allowed, no sign), at most
 * 18446744073709551615.
 *
 * Formats.
 *   LIBSVM / SVMlight: `label [qid:N] idx:val idx:val ... [# comment]`.
 *     Every data line is one example, in file order.  label is any token
 *     without ':' (not checked further).  An optional `qid:N` (N unsigned)
 *     right after the label is ignored.  idx is an unsigned 64-bit decimal
 *     (0 allowed), in any order; a repeated idx in one line counts once (the
 *     extra entries are counted in ->duplicates).  val must be a number as
 *     strtod reads it ("1", "-2.5e-3", "inf", "nan" ...), though it is not
 *     kept; "1:", "1:abc" are errors.  A token starting with '#' ends the
 *     line.  A label-only line is an example without features (counted in
 *     ->empty_rows).  Features: compact ids in order of first appearance.
 *   SNAP edge list: `a b [more columns ignored]`, vertex ids a, b.
 *     adjacency mode (default): examples are the distinct vertex ids in order
 *       of first appearance (a before b on each line); the graph is taken as
 *       undirected: line `a b` gives a the feature b and b the feature a.  A
 *       self-loop line `a a` introduces vertex a but adds no feature (counted
 *       in ->self_loops).  Features are vertices: the compact feature id of a
 *       vertex is its example index, except that vertices without any
 *       neighbour (only self-loops) are no features (their rows are empty,
 *       counted in ->empty_rows) and the columns after them move down so the
 *       columns stay contiguous (same relative order).  Duplicate edges
 *       (either direction) count once; ->entries counts 2 per non-loop line,
 *       ->duplicates the entries dropped.
 *     edges mode: each distinct undirected edge {a, b}, a != b, is an example,
 *       in order of first appearance, with the features a and b (compact
 *       ids: vertices in order of first appearance in non-loop lines, a
 *       before b).  Self-loop lines are skipped (->self_loops); a repeated
 *       edge in either direction is dropped and counted in ->duplicates (one
 *       per repeated line); ->entries counts 2 per non-loop line.
 *   pairs (TSV/CSV): `user item [more columns ignored]`, fields separated by
 *     tabs, spaces or a comma (decided per line).  Optional header: the first
 *     data line is skipped when it cannot be data, i.e. none of its fields
 *     (split at blanks and commas) is a number (e.g. MovieLens
 *     `userId,movieId,rating,timestamp`); otherwise it is data and a
 *     malformed one an error ("1,-2": line 1, column 3).  A header and no
 *     data is PARSA_EPARSE "name:line:1: only a header line ...".  Examples
 *     are the distinct users in order of first appearance; features the
 *     items (compact ids in order of first appearance); a repeated
 *     (user, item) pair counts once (->duplicates).  User and item ids are
 *     separate id spaces.
 *
 * Choosing the format.  PART_FMT_AUTO first guesses by the file name
 * (part_format_guess); when that says nothing, the first data line decides:
 * it contains ':' -> LIBSVM; it contains ',', or its first column is named
 * user... (a header line such as "userId,movieId" or "user<TAB>item"), or
 * the last '#' comment before it begins with a column named user... (as
 * "# UserId<TAB>ItemId<TAB>IsTest") -> pairs; else SNAP.  The HTTP
 * service's uploads use the same rule.  An input without any data line
 * gives an empty dataset whose format stays AUTO when nothing decided it.
 *
 * Errors.  Malformed input stops the read with PARSA_EPARSE and the message
 * "file:line:col: reason", col being the 1-based byte column of the
 * offending token (of the value for a bad LIBSVM value, of the place where
 * a missing field was expected); e.g. "expected 'index:value', got 'abc'",
 * "feature index out of range (more than 64 bits)", "expected two vertex
 * ids", "user id is not an unsigned integer, got 'x'".  I/O errors are
 * PARSA_EIO (see part_io.h), too many examples or features PARSA_ERANGE,
 * allocation failures PARSA_ENOMEM.  On any error *ds is left as it was
 * and nothing leaks.  An input without examples is not an error: the
 * dataset is empty (g.n_rows == 0) and the caller decides.
 *
 * Memory.  LIBSVM rows are added as they are read; SNAP adjacency and pairs
 * collect (example, feature) pairs as two uint32 arrays (8 bytes per entry),
 * bucket them by example in place and then add the rows in order, so the
 * peak is about the final CSR plus 8 bytes per entry; the text is never
 * held.  Ids are mapped through open-addressing hash tables (part_hash.h).
 *
 * Threads.  part_read_file reads LIBSVM files (format LIBSVM given or
 * guessed by name) with part_preader (o->threads threads, part_preader.h):
 * the same dataset and errors as part_read_lines, which reads line by line
 * on the calling thread (SNAP, pairs, AUTO without a guess, memory).
 *
 * Progress.  When o->progress is set it is called every 64Ki lines and at
 * the end with (bytes consumed, file size or 0 if unknown), compressed bytes
 * for gzip files.
 */
#ifndef PART_READER_H
#define PART_READER_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "part_io.h"

enum part_format {
	PART_FMT_AUTO = 0,
	PART_FMT_LIBSVM,
	PART_FMT_SNAP,
	PART_FMT_PAIRS
};

enum part_graph_mode { PART_GRAPH_ADJACENCY = 0, PART_GRAPH_EDGES };

struct part_read_opts {
	enum part_format format;      /* AUTO = guess (see above) */
	enum part_graph_mode graph;   /* SNAP only */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
	uint32_t threads;             /* LIBSVM files: parsing threads
					 (part_preader.h); 0 = the CPUs
					 this process may use */
	size_t chunk;                 /* tests only: bytes per parse chunk
					 and read block; 0 = default */
	int no_map;                   /* tests only: LIBSVM files are read,
					 never mapped (part_preader.h) */
	uint32_t stamp_restart;       /* tests only: the LIBSVM reader's row
					 stamps start again past this
					 (part_preader.c; 0 = 2^31) */
	int verify_later;             /* binary cache only: the checksums of
					 the sections the dataset does not
					 use (the transpose, the trainer's
					 labels and values) are checked on a
					 thread of their own while the
					 caller works; the caller must call
					 part_dataset_verify before it
					 trusts the file (writes a result) */
};

struct part_cache_check; /* part_cache.c: a deferred check */

struct part_dataset {
	struct parsa_graph g;     /* rows = examples in the order of README
				     "Input formats"; cols = compact
				     feature ids */
	uint64_t *feat_id;        /* g.n_cols entries: the input's own 64-bit
				     feature id of each compact id */
	uint64_t *ex_id;          /* g.n_rows entries or NULL: the input's id
				     of each example (pairs: the user; SNAP
				     adjacency: the vertex); NULL for LIBSVM
				     and SNAP edges (an edge's ids are its
				     two features) */
	enum part_format format;  /* the format actually read (AUTO resolved) */
	enum part_graph_mode graph;
	uint64_t lines;           /* lines read */
	uint64_t entries;         /* feature entries read before de-dup */
	uint64_t duplicates;      /* duplicate (example, feature) entries
				     dropped (edges mode: repeated edges) */
	uint64_t self_loops;      /* SNAP self-loop lines (add no feature) */
	uint64_t empty_rows;      /* examples without features */
	void *map;                /* read from a binary cache (part_cache.h):
				     g's arrays and feat_id point into this
				     mapping of map_len bytes, which
				     part_dataset_release unmaps */
	size_t map_len;
	struct part_cache_check *check; /* the deferred check of
					   verify_later, or NULL */
	void *ids_map;            /* part_dataset_spill_ids: feat_id and
				     ex_id point into this mapping of
				     ids_map_len bytes of an unlinked file,
				     which part_dataset_release unmaps */
	size_t ids_map_len;
};

/*
 * Parse one LIBSVM data line (not blank, not a comment: see
 * part_line_is_skippable) with the rules above: *n = its feature indices,
 * in line order, repeats kept, in (*ids)[0..*n) (grown with realloc;
 * *cap its capacity).  Errors: PARSA_EPARSE "name:lineno:col: reason",
 * PARSA_ENOMEM.  Used by the streaming mode (part_stream.h), which never
 * holds the whole dataset.
 */
int part_libsvm_row(const char *name, unsigned long lineno, const char *line,
		    uint64_t **ids, size_t *n, size_t *cap,
		    struct parsa_err *err);

/* An empty dataset (no allocation). */
void part_dataset_init(struct part_dataset *ds);

/* The dataset's in-memory size the reports compare the peak with (the
 * report's memory.csr_bytes): the CSR (row offsets, column ids) and the
 * feature id map, 8 bytes a feature. */
uint64_t part_dataset_csr_bytes(const struct part_dataset *ds);

/* Free the graph and feat_id and reset to empty.  ds may be NULL.  A
 * deferred check still running (verify_later) is stopped first. */
void part_dataset_release(struct part_dataset *ds);

/*
 * Move the id maps of a dataset read from text (feat_id, and ex_id when
 * there is one) off the heap: they are written to an unlinked temporary
 * file in dir (NULL: $TMPDIR, else /tmp) and mapped from it (private,
 * writable), so their pages are resident only while something reads them.
 * `partition` reads them only to write the placement's files, after the
 * partition's phases: at 100M nonzeros (2M features) that is 15.3 MiB
 * less in every phase, as from a binary cache, whose id section is
 * mapped.  Done only when the maps take at least min_bytes and ds is not
 * a cache's mapping (already file-backed).  Nothing is lost on failure:
 * when the directory cannot take the file (missing, full, read-only) the
 * maps stay on the heap.  Returns 1 when they were moved, else 0.
 */
int part_dataset_spill_ids(struct part_dataset *ds, const char *dir,
			   size_t min_bytes);

/*
 * Wait for the deferred check of ds (part_read_opts.verify_later) and
 * report it: 0 when there is none or the sections it checked are intact,
 * else PARSA_EPARSE "path: corrupt pcsr file (checksum mismatch in section
 * NAME)".  Called once; later calls return 0.
 */
int part_dataset_verify(struct part_dataset *ds, struct parsa_err *err);

/*
 * Read the file at path ("-" = stdin; gzip or plain) into *ds (which must
 * be initialised; its old content is released on success only).  o may be
 * NULL (= AUTO, adjacency).  Returns 0 or an error code (see above).  A
 * binary cache (a file starting with the pcsr magic, part_cache.h) is read
 * by part_cache_read instead, whatever its name.
 */
int part_read_file(const char *path, const struct part_read_opts *o,
		   struct part_dataset *ds, struct parsa_err *err);

/*
 * As part_read_file, from an open line reader (which stays open; the caller
 * closes it).  The reader's name is used for the guess by name and in
 * messages.
 */
int part_read_lines(struct part_lines *l, const struct part_read_opts *o,
		    struct part_dataset *ds, struct parsa_err *err);

/*
 * "auto", "libsvm" (or "svmlight", "svm"), "snap" (or "edgelist"),
 * "pairs" (or "tsv", "csv"); case-insensitive.  0 or PARSA_EINVAL.
 */
int part_format_parse(const char *s, enum part_format *f);

/* "auto", "libsvm", "snap", "pairs" ("unknown" for other values). */
const char *part_format_name(enum part_format f);

/* "adjacency", "edges" (case-insensitive); 0 or PARSA_EINVAL. */
int part_graph_mode_parse(const char *s, enum part_graph_mode *m);

/* "adjacency", "edges" ("unknown" for other values). */
const char *part_graph_mode_name(enum part_graph_mode m);

/*
 * Guess by the name (case-insensitive, a trailing ".gz" ignored):
 * .svm .libsvm .svmlight -> LIBSVM; .csv .tsv -> PAIRS;
 * .txt .edges .el .snap -> SNAP; anything else (or NULL) -> AUTO.
 */
enum part_format part_format_guess(const char *path);

#endif /* PART_READER_H */
