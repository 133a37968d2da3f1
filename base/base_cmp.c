/*
 * base_cmp: qsort comparators and integer sorts (see base_cmp.h).
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

static void sift_u64(uint64_t *c, size_t i, size_t n)
{
	for (size_t j; (j = 2 * i + 1) < n; i = j) {
		uint64_t t;

		if (j + 1 < n && c[j] < c[j + 1])
			j++;
		if (c[i] >= c[j])
			return;
		t = c[i];
		c[i] = c[j];
		c[j] = t;
	}
}

static void intro_u64(uint64_t *c, size_t n, int depth)
{
	while (n > 16) {
		size_t m = n / 2, i = 0, j = n - 1;
		uint64_t pv, t;

		if (depth-- == 0) { /* heapsort */
			for (size_t h = n / 2; h-- > 0;)
				sift_u64(c, h, n);
			for (size_t e = n; e-- > 1;) {
				t = c[0];
				c[0] = c[e];
				c[e] = t;
				sift_u64(c, 0, e);
			}
			return;
		}
		/* median of three into c[m], the pivot */
		if (c[m] < c[0]) {
			t = c[m]; c[m] = c[0]; c[0] = t;
		}
		if (c[n - 1] < c[m]) {
			t = c[n - 1]; c[n - 1] = c[m]; c[m] = t;
			if (c[m] < c[0]) {
				t = c[m]; c[m] = c[0]; c[0] = t;
			}
		}
		pv = c[m];
		for (;;) { /* Hoare: c[0..j] <= pv <= c[j+1..n) */
			while (c[i] < pv)
				i++;
			while (pv < c[j])
				j--;
			if (i >= j)
				break;
			t = c[i]; c[i] = c[j]; c[j] = t;
			i++;
			j--;
		}
		if (j + 1 < n - j - 1) {
			intro_u64(c, j + 1, depth);
			c += j + 1;
			n -= j + 1;
		} else {
			intro_u64(c + j + 1, n - j - 1, depth);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++) {
		uint64_t t = c[i];
		size_t j = i;

		for (; j > 0 && t < c[j - 1]; j--)
			c[j] = c[j - 1];
		c[j] = t;
	}
}

void base_sort_u64(uint64_t *a, size_t n)
{
	int depth = 0;

	for (size_t m = n; m > 1; m >>= 1)
		depth += 2;
	intro_u64(a, n, depth);
}

size_t base_lower_bound_u64(const uint64_t *a, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
