/*
 * base_cmp: qsort comparators of plain integers and a sort of uint32_t
 * arrays, written once.
 */
#ifndef BASE_CMP_H
#define BASE_CMP_H

#include <stddef.h>
#include <stdint.h>

/* Ascending uint64_t (for qsort and bsearch). */
int base_cmp_u64(const void *a, const void *b);

/* Ascending uint32_t. */
int base_cmp_u32(const void *a, const void *b);

/*
 * Sort a[0..n) ascending in place: quicksort (median of three, recursion
 * into the smaller side) down to insertion sort of short ranges; fast on
 * the short rows of a CSR, no comparator calls.
 */
void base_sort_u32(uint32_t *a, size_t n);

/*
 * Sort a[0..n) ascending in place, in O(n log n) whatever the input:
 * introsort (quicksort, median of three, heapsort past 2 log2 n levels,
 * insertion sort of short ranges).  No memory beyond the stack (qsort's
 * merge sort takes a copy of the array).
 */
void base_sort_u64(uint64_t *a, size_t n);

/* The first i in [0, n) with a[i] >= x (a ascending), or n. */
size_t base_lower_bound_u64(const uint64_t *a, size_t n, uint64_t x);

#endif /* BASE_CMP_H */
