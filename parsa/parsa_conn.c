/*
 * parsa_conn: shared start of the connectivity refiners (parsa_conn.h).
 */
#include "parsa_conn.h"

int parsa_conn_check(const struct parsa_graph *g, const uint32_t *part,
		     const struct parsa_nbrset *used, const char *who,
		     struct parsa_err *err)
{
	if (!g || !part || !used)
		return parsa_fail(err, PARSA_EINVAL, "%s: NULL argument", who);
	if (used->n_feat != g->n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "%s: sets over %u features, graph has %u",
				  who, used->n_feat, g->n_cols);
	for (uint32_t u = 0; u < g->n_rows; u++)
		if (part[u] >= used->k)
			return parsa_fail(err, PARSA_EINVAL,
					  "example %u in part %u, k is %u", u,
					  part[u], used->k);
	return 0;
}

int parsa_conn_counts(const struct parsa_graph *g, const uint32_t *part,
		      const struct parsa_nbrset *used, const uint32_t *weight,
		      uint16_t *cnt, uint32_t *lam, uint64_t *size)
{
	uint32_t k = used->k;
	int saturated = 0;

	for (uint32_t v = 0; v < g->n_cols; v++)
		lam[v] = parsa_nbrset_count(used, v);
	for (uint32_t u = 0; u < g->n_rows; u++) {
		size[part[u]] += weight ? weight[u] : 1;
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint16_t *c = &cnt[(uint64_t)g->col[e] * k + part[u]];

			if (*c < PARSA_CONN_SAT)
				++*c;
			saturated |= *c == PARSA_CONN_SAT;
		}
	}
	return saturated;
}

int parsa_conn_counts_t(const struct parsa_graph *g,
			const struct parsa_graph *t, const uint32_t *part,
			const struct parsa_nbrset *used, const uint32_t *weight,
			uint16_t *cnt, uint32_t *lam, uint64_t *size)
{
	uint32_t k = used->k;
	int saturated = 0;

	for (uint32_t u = 0; u < g->n_rows; u++)
		size[part[u]] += weight ? weight[u] : 1;
	for (uint32_t v = 0; v < g->n_cols; v++) {
		uint16_t *row = &cnt[(uint64_t)v * k];

		lam[v] = parsa_nbrset_count(used, v);
		for (uint64_t i = t->row_ptr[v]; i < t->row_ptr[v + 1]; i++) {
			uint16_t *c = &row[part[t->col[i]]];

			if (*c < PARSA_CONN_SAT)
				++*c;
			saturated |= *c == PARSA_CONN_SAT;
		}
	}
	return saturated;
}

static int dense(const struct parsa_nbrset *s, uint32_t lam)
{
	return 2 * (uint64_t)lam > s->k;
}

/* Add x·2^lo to the bit-sliced counters c[lo..nsl) (bit j of c[i] = bit
 * i of counter j); no counter may exceed 2^nsl − 1 after the add. */
static void slice_add(uint64_t *c, uint32_t lo, uint32_t nsl, uint64_t x)
{
	for (uint32_t i = lo; i < nsl; i++) {
		uint64_t t = c[i] & x;

		c[i] ^= x;
		x = t;
	}
}

/* Carry-save add of a, b, c per bit: *hi the carries, *lo the sums. */
static void csa(uint64_t *hi, uint64_t *lo, uint64_t a, uint64_t b,
		uint64_t c)
{
	uint64_t u = a ^ b;

	*hi = (a & b) | (u & c);
	*lo = u ^ c;
}

/* v's mask if λ_v ≥ 2 (else 0), counting it in *base if dense and in
 * *any. */
static uint64_t shared_mask(const struct parsa_nbrset *s, uint32_t v,
			    uint32_t *base, uint64_t *any)
{
	uint64_t m = s->bits[v];
	uint64_t x = m & (m - 1) ? m : 0; /* λ_v ≥ 2 */

	*base += x && dense(s, parsa_popcount64(m));
	*any |= x;
	return x;
}

/*
 * parsa_conn_hits for k ≤ 64: the masks summed in bit-sliced counters
 * (bit j of c[i] = bit i of the count of part j; nsl = the bit length of
 * deg(u) slices hold any count, and every partial sum), then written out.
 * Blocks of 8 masks go through a carry-save tree (Harley-Seal): ones,
 * twos and fours hold the low bits apart, the block's eights ripple into
 * c from slice 3 (a block exists only if deg ≥ 8, so nsl ≥ 4); the rest
 * and those low bits ripple in at the end.  λ_v is the popcount of v's
 * mask (lam is not read): a one-bit mask is skipped by adding 0.
 */
static uint32_t hits1(const struct parsa_graph *g, uint32_t u,
		      const struct parsa_nbrset *s, uint32_t *hits,
		      uint64_t *tmask)
{
	uint64_t c[32] = { 0 }, any = 0, ones = 0, twos = 0, fours = 0;
	uint64_t e = g->row_ptr[u], end = g->row_ptr[u + 1];
	uint32_t base = 0, deg = parsa_graph_degree(g, u);
	uint32_t nsl = deg ? 32 - (uint32_t)__builtin_clz(deg) : 0;
	const uint32_t *col = g->col;

	for (; e + 8 <= end; e += 8) {
		uint64_t m[8], ta, tb, fa, fb, eights;

		for (uint32_t i = 0; i < 8; i++)
			m[i] = shared_mask(s, col[e + i], &base, &any);
		csa(&ta, &ones, ones, m[0], m[1]);
		csa(&tb, &ones, ones, m[2], m[3]);
		csa(&fa, &twos, twos, ta, tb);
		csa(&ta, &ones, ones, m[4], m[5]);
		csa(&tb, &ones, ones, m[6], m[7]);
		csa(&fb, &twos, twos, ta, tb);
		csa(&eights, &fours, fours, fa, fb);
		slice_add(c, 3, nsl, eights);
	}
	for (; e < end; e++)
		slice_add(c, 0, nsl, shared_mask(s, col[e], &base, &any));
	slice_add(c, 0, nsl, ones);
	slice_add(c, 1, nsl, twos);
	slice_add(c, 2, nsl, fours);
	tmask[0] |= any;
	for (uint32_t i = 0; i < nsl; i++)
		for (uint64_t x = c[i]; x; x &= x - 1)
			hits[__builtin_ctzll(x)] += 1U << i;
	return base;
}

/* parsa_conn_hits' dense features for k > 64: +1 to every part, −1 to
 * those missing each (unsigned wrap-around, made good by the +base). */
static void dense_hits(const struct parsa_graph *g, uint32_t u,
		       const struct parsa_nbrset *s, const uint32_t *lam,
		       uint32_t *hits, uint32_t base)
{
	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		const uint64_t *m = parsa_nbrset_mask(s, g->col[e]);

		if (!dense(s, lam[g->col[e]]))
			continue;
		for (uint32_t w = 0; w < s->words; w++) {
			uint64_t full = w + 1 < s->words || s->k % 64 == 0
						? ~0ULL
						: (1ULL << (s->k % 64)) - 1;

			for (uint64_t x = ~m[w] & full; x; x &= x - 1)
				hits[w * 64 + (uint32_t)__builtin_ctzll(x)]--;
		}
	}
	for (uint32_t j = 0; j < s->k; j++)
		hits[j] += base;
}

uint32_t parsa_conn_hits(const struct parsa_graph *g, uint32_t u,
			 const struct parsa_nbrset *s, const uint32_t *lam,
			 uint32_t *hits, uint64_t *tmask)
{
	uint32_t base = 0;

	if (s->words == 1)
		return hits1(g, u, s, hits, tmask);
	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];
		const uint64_t *m = parsa_nbrset_mask(s, v);

		if (lam[v] == 1)
			continue;
		if (dense(s, lam[v])) {
			base++;
			continue;
		}
		for (uint32_t w = 0; w < s->words; w++) {
			tmask[w] |= m[w];
			for (uint64_t x = m[w]; x; x &= x - 1)
				hits[w * 64 + (uint32_t)__builtin_ctzll(x)]++;
		}
	}
	if (base)
		dense_hits(g, u, s, lam, hits, base);
	return base;
}
