/*
 * base_huge: ask the kernel for transparent huge pages (2 MiB) behind a
 * large array that is read and written at random: the per-feature tables
 * of the refinement and of Algorithm 13 at a billion nonzeros (20M
 * features: 160 MB of masks, as much of count headers, several hundred MB
 * of counts).  With 4 KiB pages nearly every such access also misses the
 * TLB; measured at 1B nonzeros (BENCHMARKS.md, issue 17), the sweeps'
 * count build took 34 instead of 51 CPU seconds.
 *
 * Advice only: where THP is "never" (or the kernel lacks it) nothing
 * changes, and a failed madvise is ignored.  Only the 2 MiB-aligned
 * interior of [p, p + n) is advised, and only for n of at least
 * BASE_HUGE_MIN, so small arrays and the heap around them are untouched.
 * Call it right after the allocation, before the array is written, so
 * that its pages are huge from their first touch.
 */
#ifndef BASE_HUGE_H
#define BASE_HUGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BASE_HUGE_MIN ((size_t)8 << 20)

static inline void base_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t h = (uintptr_t)2 << 20;
	uintptr_t a = ((uintptr_t)p + h - 1) & ~(h - 1);
	uintptr_t b = ((uintptr_t)p + n) & ~(h - 1);

	if (p && n >= BASE_HUGE_MIN && b > a)
		(void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

/*
 * Grow the array p of old bytes to n >= old bytes, the new bytes zeroed:
 * the new pointer, or NULL with p unchanged.  From BASE_HUGE_MIN a fresh
 * array advised with base_huge and copied (realloc would move the old 4
 * KiB pages along, leaving the table's first half on small pages; calloc
 * leaves fresh pages untouched for the advice), below that realloc.  For tables grown by doubling and read at random.
 */
static inline void *base_huge_grow(void *p, size_t old, size_t n)
{
	unsigned char *q;

	if (n < BASE_HUGE_MIN) {
		q = realloc(p, n ? n : 1);
		if (q)
			memset(q + old, 0, n - old);
		return q;
	}
	q = calloc(1, n);  /* fresh pages: zero without touching them */
	if (!q)
		return NULL;
	base_huge(q, n);
	if (old)
		memcpy(q, p, old);
	free(p);
	return q;
}

/*
 * The whole pages inside [p, p + n) given back to the kernel
 * (MADV_DONTNEED): the array's memory stays allocated (free it as usual),
 * but those pages' contents are lost and the caller must not read them
 * again.  For an array read once front to back whose read part is dead:
 * the pages leave the resident set as it goes.  Advice only: a failed
 * madvise is ignored.
 */
static inline void base_huge_drop(void *p, size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a, b;

	if (!p || pg <= 0)
		return;
	a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
	b = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
	if (b > a)
		(void)madvise((void *)a, b - a, MADV_DONTNEED);
}

#endif /* BASE_HUGE_H */
