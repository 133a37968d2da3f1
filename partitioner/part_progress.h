/*
 * part_progress: a progress bar on stderr, drawn only when stderr is a
 * terminal (and not disabled), throttled to ~10 redraws a second.
 * The callback matches parsa_progress_fn so library code can report
 * progress without knowing about terminals.
 */
#ifndef PART_PROGRESS_H
#define PART_PROGRESS_H

#include <stdint.h>

#include "base_time.h"

struct part_progress {
	const char *label; /* borrowed: phase name */
	int enabled;       /* draw at all? */
	double start;      /* monotonic seconds at begin */
	double last;       /* last redraw */
	int drawn;         /* something is on the line */
};

/* enabled = want && isatty(stderr). */
void part_progress_init(struct part_progress *p, int want);

/* Start a new phase (label borrowed until the next begin/end). */
void part_progress_begin(struct part_progress *p, const char *label);

/* parsa_progress_fn-compatible: arg is a struct part_progress *.
 * total 0 = unknown: the count done is shown instead of a bar. */
void part_progress_cb(void *arg, uint64_t done, uint64_t total);

/* Clear the bar line. */
void part_progress_end(struct part_progress *p);

/* Monotonic clock in seconds (base_now). */
static inline double part_now(void)
{
	return base_now();
}

/* Peak resident set size of this process in KiB. */
long part_peak_rss_kb(void);

#endif /* PART_PROGRESS_H */
