/*
 * part_progress: terminal progress bar, clock and peak-memory helpers.
 */
#include "part_progress.h"

#include <stdio.h>
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
	fflush(stderr);
	p->drawn = 1;
}

void part_progress_end(struct part_progress *p)
{
	if (!p->enabled || !p->drawn)
		return;
	fprintf(stderr, "\r%*s\r", 70, "");
	fflush(stderr);
	p->drawn = 0;
}
