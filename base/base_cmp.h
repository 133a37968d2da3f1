/*
 * base_cmp: qsort comparators of plain integers, written once.
 */
#ifndef BASE_CMP_H
#define BASE_CMP_H

/* Ascending uint64_t (for qsort and bsearch). */
int base_cmp_u64(const void *a, const void *b);

/* Ascending uint32_t. */
int base_cmp_u32(const void *a, const void *b);

#endif /* BASE_CMP_H */
