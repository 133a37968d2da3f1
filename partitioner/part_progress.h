/*
 * part_progress: a progress bar on stderr, drawn only when stderr is a
 * terminal (and not disabled), throttled to ~10 redraws a second.
 * The callback matches parsa_progress_fn so library code can report
 * progress without knowing about terminals.
 */
#ifndef PART_PROGRESS_H
#define PART_PROGRESS_H

#include <stddef.h>
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

/* A phase without a measure of its progress: its label on the line
 * ("label ...") until the next begin/end. */
void part_progress_phase(struct part_progress *p, const char *label);

/*
 * The bar's "  ETA 12s" (or "  ETA 3m05s") into buf: the time left at the
 * pace so far, frac of the phase done in `elapsed` seconds; empty before
 * 2% and half a second (the first moments' pace says little) and at the
 * end.
 */
void part_progress_eta(char *buf, size_t len, double frac, double elapsed);

/* Monotonic clock in seconds (base_now). */
static inline double part_now(void)
{
	return base_now();
}

/* Peak resident set size of this process in KiB. */
long part_peak_rss_kb(void);

/*
 * Per-phase peaks of the resident set, for a command's report: at each
 * phase boundary the process's peak (VmHWM) is read and then reset
 * (/proc/self/clear_refs "5"), so each phase's figure is the peak reached
 * while it ran (a phase that runs several times keeps the largest).  The
 * reset also resets getrusage's ru_maxrss: a command that uses this takes
 * its overall peak from part_mem_peak_kb.  Process-wide: not for a server
 * running several jobs.  Phases: PART_MEM_LOAD, then enum part_phase + 1.
 */
#define PART_MEM_LOAD 0
#define PART_MEM_PHASES 5 /* load, partition_u, refine, partition_v, metrics */

struct part_mem_phases {
	long kb[PART_MEM_PHASES]; /* 0: not run */
	int cur;                  /* the phase running, -1: none */
	int ok;                   /* peaks could be read and reset */
};

/* Start with phase PART_MEM_LOAD (the peak so far is reset). */
void part_mem_phases_init(struct part_mem_phases *m);

/* Phase cur ends (its peak recorded), phase next (-1: none) begins. */
void part_mem_phase(struct part_mem_phases *m, int next);

/* The largest peak of any phase, at least part_peak_rss_kb(). */
long part_mem_peak_kb(const struct part_mem_phases *m);

#endif /* PART_PROGRESS_H */
