/*
 * part_report: the JSON report of a partition run (README "Outputs":
 * stable keys) and the short human summary printed by the CLI.
 */
#ifndef PART_REPORT_H
#define PART_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "part_reader.h"
#include "part_progress.h"
#include "part_run.h"

struct part_par_info;
struct part_stream_result;

struct part_report_info {
	const char *data_path;            /* borrowed */
	const struct part_dataset *ds;    /* borrowed */
	const struct part_run_opts *opts; /* borrowed; NULL for eval */
	const struct part_result *res;    /* borrowed */
	const char *method;               /* name printed in the report */
	double t_load;                    /* seconds reading the data */
	double t_total;                   /* seconds for the whole command */
	long peak_rss_kb;
	/* the peak of each phase (part_progress.h; NULL: not measured) */
	const struct part_mem_phases *mem;
	/* parallel runs (part_parallel.h): adds the "parallel" object and a
	 * summary line; NULL for sequential runs and eval */
	const struct part_par_info *par;
	/* streaming runs (part_stream.h): the dataset counts come from here
	 * (ds is NULL) and a "stream" object is added */
	const struct part_stream_result *stream;
	uint64_t mem_limit;               /* --mem-limit of the run, bytes */
	int per_part;                     /* the summary lists every part */
};

/* New reference: the report object.  NULL on out of memory. */
json_t *part_report_json(const struct part_report_info *info);

/* New reference: per-part figures as {"U": [...], "nnz", "M", "V", "T",
 * "in", "out"} (k entries each; parsa_metrics.h); null when pf has none. */
json_t *part_report_parts_json(const struct parsa_partfig *pf);

/* Write j to path through part_out (atomic replacement), pretty-printed. */
int part_report_write(const char *path, const json_t *j,
		      struct parsa_err *err);

/* The human summary: dataset, metrics, random, improvement, timings (and
 * with info->per_part the table of part_report_print_parts). */
void part_report_print(FILE *f, const struct part_report_info *info);

/* The per-part table: one row per part (U_i, nnz_i, M_i, V_i, T_i, in_i,
 * out_i), then max and mean rows, and the random baseline's first seed's
 * max and mean.  Nothing when r has no per-part figures. */
void part_report_print_parts(FILE *f, const struct part_result *r);

#endif /* PART_REPORT_H */
