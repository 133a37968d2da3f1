/*
 * base_cmp: qsort comparators and an integer sort (see base_cmp.h).
 */
#include "base_cmp.h"

#include <stdint.h>

int base_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int base_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void base_sort_u32(uint32_t *a, size_t n)
{
	while (n > 16) {
		uint32_t x = a[0], y = a[n / 2], z = a[n - 1], piv, t;
		size_t i = 0, j = n - 1;

		piv = x < y ? (y < z ? y : (x < z ? z : x))
			    : (x < z ? x : (y < z ? z : y));
		for (;;) {
			while (a[i] < piv)
				i++;
			while (a[j] > piv)
				j--;
			if (i >= j)
				break;
			t = a[i];
			a[i++] = a[j];
			a[j--] = t;
		}
		/* recurse into the smaller side, loop on the larger */
		if (j + 1 < n - j - 1) {
			base_sort_u32(a, j + 1);
			a += j + 1;
			n -= j + 1;
		} else {
			base_sort_u32(a + j + 1, n - j - 1);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++) {
		uint32_t v = a[i];
		size_t k = i;

		for (; k > 0 && a[k - 1] > v; k--)
			a[k] = a[k - 1];
		a[k] = v;
	}
}
