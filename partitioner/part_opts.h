/*
 * part_opts: the one table of the partition options.
 *
 * Every option of `parsa partition` and `parsa eval`, and every member of
 * an HTTP job (POST /v1/jobs), is one entry of the table in part_opts.c:
 * its command-line name, its JSON name (the job member and the report's
 * params key), its type and range, where it is stored in a struct
 * part_opts, its help text.  From it come the command line's parser
 * (part_opts_parse_argv) and --help text (part_opts_help), the HTTP job's
 * parser (part_opts_from_json) and its stored params (part_opts_to_json),
 * the report's params (part_opts_report) and the JSON schema that
 * docs/openapi.yaml's JobParams is checked against (part_opts_schema).
 *
 * A new option is one entry plus the code that uses its value (and, for
 * an HTTP one, its line in docs/openapi.yaml, which a test checks).
 *
 * Thread-safety: the table is constant; every function may be called
 * from any thread on its own struct part_opts.
 */
#ifndef PART_OPTS_H
#define PART_OPTS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "parsa_err.h"
#include "part_parallel.h"
#include "part_reader.h"
#include "part_run.h"

/* Upper bound on the table's size (part_opts.given). */
#define PART_OPTS_MAX 96

/* Everything a partition job is told: what the table's entries write. */
struct part_opts {
	struct part_run_opts run;   /* the job: method, k, Parsa's options
				     * (first member: part_opts_report reads
				     * a bare struct part_run_opts) */
	struct part_par_opts par;   /* parallel Parsa */
	struct part_read_opts read; /* --format, --graph */
	const char *out, *shards;   /* output prefix, shards directory */
	const char *init_from;      /* incremental: an earlier placement... */
	const char *init_data;      /* ...of this dataset */
	const char *placement;      /* eval: the placement to evaluate */
	const char *report;         /* eval: also write the report here */
	int json;                   /* print the JSON report */
	int per_part;               /* the summary lists every part's figures */
	int examples_ids;           /* also write PREFIX.example_ids */
	int quiet;                  /* no summary, no progress bar */
	int parallel;               /* an option of parallel Parsa was given */
	int stream;                 /* --stream, --mem-limit or --block-rows */
	uint64_t mem_limit;         /* --mem-limit bytes; 0 = none */
	uint64_t block_rows;        /* --block-rows; 0 = default */
	unsigned char given[PART_OPTS_MAX]; /* given[i]: entry i was set */
};

/* Where an entry applies (struct part_opt.where). */
enum {
	PART_OPT_PARTITION = 1u << 0, /* parsa partition --NAME */
	PART_OPT_EVAL = 1u << 1,      /* parsa eval --NAME */
	PART_OPT_HTTP = 1u << 2,      /* POST /v1/jobs member KEY */
};

/* Value types. */
enum part_opt_type {
	PART_OPT_UINT,  /* unsigned integer in [lo, hi] (uint32_t, uint64_t
			 * or int by the member's size) */
	PART_OPT_NUM,   /* double in [dlo, dhi] */
	PART_OPT_ENUM,  /* one of choices (an enum member) */
	PART_OPT_ONOFF, /* "on" or "off" (int 1/0; JSON true/false) */
	PART_OPT_FLAG,  /* no value: int set to 1 */
	PART_OPT_STR,   /* a string (borrowed from argv) */
	PART_OPT_SIZE,  /* a byte size, "64M" (uint64_t) >= lo */
	PART_OPT_CAP,   /* a cap (struct part_cap): "N", "Fx" or "inf";
			 * JSON: a number (absolute) or such a string */
};

/* Flags (struct part_opt.flags). */
enum {
	PART_OPT_PRESET = 1u << 0,   /* applied before every other option */
	PART_OPT_PAR = 1u << 1,      /* sets part_opts.parallel */
	PART_OPT_STREAM = 1u << 2,   /* sets part_opts.stream and .parallel */
	PART_OPT_ZERO = 1u << 3,     /* 0 is valid too, beside [lo, hi] */
	PART_OPT_JOB = 1u << 4,      /* always in a job's stored params */
	PART_OPT_NULL0 = 1u << 5,    /* 0 = none: null in the report */
};

/* When the report's params carry an entry (struct part_opt.report_when). */
enum {
	PART_REP_NO = 0,      /* never */
	PART_REP_ALWAYS,      /* every partition report */
	PART_REP_NOT_RANDOM,  /* every method but random */
	PART_REP_PARSA,       /* method parsa */
};

/* What the report knows beside the options, for values it derives. */
struct part_opts_facts {
	uint64_t examples; /* |U| */
	uint64_t features; /* |V| (0: unknown) */
	uint32_t blocks;   /* the blocks a parallel or streamed run used;
			    * 0 = Algorithm 13's own count */
	uint64_t fit_bytes; /* the dataset size that count was fitted to
			     * (parsa_partu_opts.fit_bytes), 0: none */
};

/* One option. */
struct part_opt {
	const char *name;    /* --name on the command line; NULL: none */
	char short_name;     /* -c, or 0 */
	const char *key;     /* JSON name (job member, report params key) */
	unsigned where;      /* PART_OPT_PARTITION | _EVAL | _HTTP */
	unsigned flags;      /* PART_OPT_PRESET, ... */
	enum part_opt_type type;
	size_t off, size;    /* the value: offset and size in part_opts */
	uint64_t lo, hi;     /* PART_OPT_UINT: range (SIZE: lo only) */
	uint64_t http_hi;    /* PART_OPT_UINT over HTTP: its own bound (0: hi) */
	double dlo, dhi;     /* PART_OPT_NUM: range */
	const char *words;   /* words standing for `special`, '|'-separated,
			      * the first the one written back ("inf") */
	double special;      /* the value they stand for */
	const char *choices; /* ENUM: "a, b, c" */
	int (*enum_parse)(const char *s, int *v);    /* ENUM */
	const char *(*enum_name)(int v);             /* ENUM */
	int (*set)(struct part_opts *o, const char *s); /* after the value is
			      * stored (ENUM/PRESET: the preset); 0 or -1 */
	const char *what;    /* the error's "must be ..." (else from range) */
	const char *group;   /* help heading where a group starts */
	const char *arg;     /* help: value name ("N") */
	const char *help;    /* help text; "{}" = the default value */
	int report_when;     /* PART_REP_* */
	json_t *(*report)(const struct part_run_opts *o,
			  const struct part_opts_facts *f); /* derived value */
};

/* The table, and its size. */
extern const struct part_opt part_opts_table[];
extern const size_t part_opts_count;

/* The entry called name on the command line (or with that JSON key when
 * json), NULL if none. */
const struct part_opt *part_opts_find(const char *name, int json);

/* Defaults: part_run_opts_default, part_par_opts_default, auto format. */
void part_opts_default(struct part_opts *o);

/* 1 when the option named by its JSON key was given. */
int part_opts_given(const struct part_opts *o, const char *key);

/*
 * Parse argv (argv[0] = the command, whose options are those with `cmd`
 * in where) into *o (defaults first, the preset --quality applied before
 * the other options whatever their order).  *data = the one positional
 * argument (DATA).  Returns -1 to go on, 0 after printing help (-h), or
 * 2 after printing a usage error "parsa: ..." on stderr.
 */
int part_opts_parse_argv(int argc, char **argv, unsigned cmd,
			 struct part_opts *o, const char **data,
			 void (*help)(void));

/*
 * Set one option of cmd by its command-line name (without "--"; a short
 * name is one letter) from its text s, as the command line does (the
 * preset's side effects included; the caller applies a preset first).
 * 0, or PARSA_EINVAL with the command line's message ("--imbalance must
 * be a number >= 1, got '0'"; "unknown option 'x'").  Used by the C API.
 */
int part_opts_set(struct part_opts *o, unsigned cmd, const char *name,
		  const char *s, struct parsa_err *err);

/* The options of cmd (a PART_OPT_* where bit) as --help lines, with the
 * defaults of part_opts_default. */
void part_opts_help(FILE *f, unsigned cmd);

/*
 * Fill *o from a JSON object of job members (defaults first, then the
 * preset, then the rest), skipping the member names in skip (NULL-ended;
 * e.g. "dataset").  On a mistyped, out-of-range or unknown member returns
 * PARSA_EINVAL with a message "'key' must be ..." and the member's name in
 * field[64].
 */
int part_opts_from_json(json_t *obj, const char *const *skip,
			struct part_opts *o, char *field,
			struct parsa_err *err);

/* The HTTP members of o as a JSON object: the PART_OPT_JOB ones and those
 * given (part_opts_from_json reads it back to the same options).  NULL:
 * out of memory. */
json_t *part_opts_to_json(const struct part_opts *o);

/* The report's params from the options a run used (PART_REP_* entries).
 * NULL: out of memory. */
json_t *part_opts_report(const struct part_run_opts *o,
			 const struct part_opts_facts *f);

/* The JSON schema of every HTTP member (the properties of OpenAPI's
 * JobParams, without descriptions): {"key": {"type", "minimum", ...}}. */
json_t *part_opts_schema(void);

/* The HTTP member names, ", "-separated, in table order. */
void part_opts_http_names(char *buf, size_t len);

#endif /* PART_OPTS_H */
