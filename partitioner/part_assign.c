/*
 * part_assign: the incremental assignment rule of part_assign.h.  The
 * features a batch adds to each part live in a small open-addressing set
 * of (feature id, part) pairs, so the placement's masks are never copied.
 */
#include <stdlib.h>
#include <string.h>

#include "base_cmp.h"
#include "base_greedy.h"
#include "base_hash.h"
#include "parsa_partu.h"
#include "part_assign.h"

struct pairset {
	uint64_t *key;   /* feature ids */
	uint32_t *part;  /* part + 1; 0 = empty slot */
	uint64_t cap;    /* power of two */
};

static uint64_t mix(uint64_t f, uint32_t p)
{
	return base_mix64(f ^ base_mix64((uint64_t)p + 1));
}

static int pairset_init(struct pairset *s, uint64_t entries)
{
	s->cap = 16;
	while (s->cap < 2 * entries + 16)
		s->cap <<= 1;
	s->key = malloc(s->cap * sizeof(uint64_t));
	s->part = calloc(s->cap, sizeof(uint32_t));
	return s->key && s->part ? 0 : -1;
}

static void pairset_release(struct pairset *s)
{
	free(s->key);
	free(s->part);
}

/* 1 if (f, p) is in the set; with add, insert it when missing. */
static int pairset_has(struct pairset *s, uint64_t f, uint32_t p, int add)
{
	uint64_t h = mix(f, p) & (s->cap - 1);

	while (s->part[h]) {
		if (s->key[h] == f && s->part[h] == p + 1)
			return 1;
		h = (h + 1) & (s->cap - 1);
	}
	if (add) {
		s->key[h] = f;
		s->part[h] = p + 1;
	}
	return 0;
}

/* Sort and de-duplicate f[0..n); returns the distinct count. */
static uint64_t distinct(uint64_t *f, uint64_t n)
{
	uint64_t m = 0;

	qsort(f, n, sizeof(*f), base_cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		if (m == 0 || f[m - 1] != f[i])
			f[m++] = f[i];
	return m;
}

/* cost_i(u) = |N(u) \ (S_i ∪ added_i)| for every part. */
static void costs(const struct part_assign_model *m, struct pairset *added,
		  const uint64_t *f, uint64_t nf, uint64_t *cost)
{
	memset(cost, 0, m->k * sizeof(uint64_t));
	for (uint64_t j = 0; j < nf; j++) {
		const uint64_t *mask = NULL;
		uint32_t v;

		if (m->map && part_idmap_find(m->map, f[j], &v))
			mask = m->bits + (uint64_t)v * m->words;
		for (uint32_t i = 0; i < m->k; i++) {
			int in = mask && (mask[i / 64] >> (i % 64) & 1);

			if (!in && !pairset_has(added, f[j], i, 0))
				cost[i]++;
		}
	}
}

/* The part for one example (cnt: current sizes; cap: the bound): the
 * greedy rule of parsa_greedy_u (base_greedy.h). */
static uint32_t choose(uint32_t k, const uint64_t *cost, const uint64_t *cnt,
		       uint64_t cap)
{
	uint32_t best = base_greedy_pick(k, cost, cnt, cap);

	/* every part full (cannot happen with cap >= ceil(total/k)):
	 * the smallest part */
	return best != UINT32_MAX ? best : base_greedy_smallest(k, cnt);
}

int part_assign_batch(const struct part_assign_model *m, const uint64_t *off,
		      const uint64_t *ids, uint32_t n, uint32_t *out,
		      struct parsa_err *err)
{
	struct pairset added = {0};
	uint64_t *cnt = NULL, *cost = NULL, *f = NULL, total = 0, cap;
	uint64_t nnz = n ? off[n] - off[0] : 0;
	int rc = 0;

	if (m->k == 0)
		return parsa_fail(err, PARSA_EINVAL, "assign: k must be >= 1");
	cnt = malloc(m->k * sizeof(uint64_t));
	cost = malloc(m->k * sizeof(uint64_t));
	f = malloc((nnz ? nnz : 1) * sizeof(uint64_t));
	if (!cnt || !cost || !f || pairset_init(&added, nnz)) {
		rc = parsa_fail(err, PARSA_ENOMEM, "assign: out of memory");
		goto end;
	}
	for (uint32_t i = 0; i < m->k; i++)
		total += cnt[i] = m->count[i];
	cap = parsa_balance_cap(total + n, m->k, m->imbalance);
	for (uint32_t e = 0; e < n; e++) {
		uint64_t len = off[e + 1] - off[e], nf;
		uint32_t p;

		memcpy(f, ids + off[e], len * sizeof(uint64_t));
		nf = distinct(f, len);
		costs(m, &added, f, nf, cost);
		p = choose(m->k, cost, cnt, cap);
		out[e] = p;
		cnt[p]++;
		for (uint64_t j = 0; j < nf; j++)
			pairset_has(&added, f[j], p, 1);
	}
end:
	pairset_release(&added);
	free(cnt);
	free(cost);
	free(f);
	return rc;
}
