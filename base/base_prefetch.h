/*
 * base_prefetch: software prefetches the compiler keeps.
 *
 * GCC 12 at -O2 deletes loops whose only statements are
 * __builtin_prefetch calls under a condition (it takes them for loops
 * without effects), and with them the whole point of prefetching a row's
 * slots ahead of the loop that uses them: the reader's map_row then waited
 * on every slot (BENCHMARKS.md, issue 17).  An empty volatile asm that
 * takes the address keeps each prefetch, and its loop, in the code; it
 * emits no instruction and is no memory barrier.
 *
 * base_prefetch(p): read soon; base_prefetch_w(p): written soon.  Hints
 * only: p need not be valid (a prefetch never faults).
 */
#ifndef BASE_PREFETCH_H
#define BASE_PREFETCH_H

static inline void base_prefetch(const void *p)
{
	__builtin_prefetch(p);
	__asm__ volatile("" : : "r"(p));
}

static inline void base_prefetch_w(const void *p)
{
	__builtin_prefetch(p, 1);
	__asm__ volatile("" : : "r"(p));
}

#endif /* BASE_PREFETCH_H */
