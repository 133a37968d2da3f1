/*
 * part_progress: terminal progress bar, clock and peak-memory helpers.
 */
#include "part_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

long part_peak_rss_kb(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return ru.ru_maxrss;
}

/* VmHWM of /proc/self/status in KiB, -1 if unreadable. */
static long hwm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0) {
			v = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Reset the peak to the current resident set; 0 or -1. */
static int hwm_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs("5", f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

void part_mem_phases_init(struct part_mem_phases *m)
{
	memset(m, 0, sizeof(*m));
	m->ok = hwm_kb() >= 0 && hwm_reset() == 0;
	m->cur = PART_MEM_LOAD;
}

void part_mem_phase(struct part_mem_phases *m, int next)
{
	long kb;

	if (m->ok && m->cur >= 0 && m->cur < PART_MEM_PHASES) {
		kb = hwm_kb();
		if (kb > m->kb[m->cur])
			m->kb[m->cur] = kb;
		m->ok = hwm_reset() == 0;
	}
	m->cur = next;
}

long part_mem_peak_kb(const struct part_mem_phases *m)
{
	long kb = part_peak_rss_kb();

	for (int i = 0; i < PART_MEM_PHASES; i++)
		if (m->kb[i] > kb)
			kb = m->kb[i];
	return kb;
}

void part_progress_init(struct part_progress *p, int want)
{
	p->label = "";
	p->enabled = want && isatty(STDERR_FILENO);
	p->start = part_now();
	p->last = 0;
	p->drawn = 0;
}

void part_progress_begin(struct part_progress *p, const char *label)
{
	part_progress_end(p);
	p->label = label;
	p->start = part_now();
	p->last = 0;
}

void part_progress_cb(void *arg, uint64_t done, uint64_t total)
{
	struct part_progress *p = arg;
	double now, frac;
	int width = 30, fill;
	char eta[32];

	if (!p || !p->enabled)
		return;
	now = part_now();
	if (now - p->last < 0.1 && (total == 0 || done < total))
		return;
	p->last = now;
	if (total == 0) { /* unknown total: a count */
		fprintf(stderr, "\r%-14s %14llu done %6.1fs", p->label,
			(unsigned long long)done, now - p->start);
		fflush(stderr);
		p->drawn = 1;
		return;
	}
	frac = total ? (double)done / (double)total : 0.0;
	if (frac > 1.0)
		frac = 1.0;
	fill = (int)(frac * width);
	fprintf(stderr, "\r%-14s [%.*s%*s] %5.1f%% %6.1fs", p->label, fill,
		"##############################", width - fill, "",
		frac * 100.0, now - p->start);
	part_progress_eta(eta, sizeof(eta), frac, now - p->start);
	fprintf(stderr, "%-13s", eta);
	fflush(stderr);
	p->drawn = 1;
}

void part_progress_eta(char *buf, size_t len, double frac, double elapsed)
{
	double left;

	if (len)
		buf[0] = '\0';
	/* the pace of the first moments (allocation, a first block) says
	 * little: from 2% done and half a second in */
	if (frac < 0.02 || frac >= 1.0 || elapsed < 0.5 || len == 0)
		return;
	left = elapsed * (1.0 - frac) / frac;
	if (left < 59.5) {
		snprintf(buf, len, "  ETA %.0fs", left);
	} else if (left < 3600.0 * 99) {
		long sec = (long)(left + 0.5);

		snprintf(buf, len, "  ETA %ldm%02lds", sec / 60, sec % 60);
	} else {
		snprintf(buf, len, "  ETA %.0fh", left / 3600.0);
	}
}

void part_progress_phase(struct part_progress *p, const char *label)
{
	part_progress_begin(p, label);
	if (!p->enabled)
		return;
	fprintf(stderr, "\r%-14s ...", label);
	fflush(stderr);
	p->drawn = 1;
}

void part_progress_end(struct part_progress *p)
{
	if (!p->enabled || !p->drawn)
		return;
	fprintf(stderr, "\r%*s\r", 80, "");
	fflush(stderr);
	p->drawn = 0;
}
