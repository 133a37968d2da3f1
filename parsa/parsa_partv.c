/*
 * parsa_partv: partition the features V given N(U_1..U_k) (thesis
 * Algorithm 11) plus improving sweeps; see parsa_partv.h.
 *
 * Phases: (1) count c_v = |{i : v ∈ N(U_i)}| and M_i from the masks;
 * (2) order the used features by decreasing c with a stable counting sort
 * (LPT: largest items first); (3) give each feature to its user with the
 * smallest running T (T_i starts at M_i, owning v adds c_v - 2);
 * (4) sweeps move a feature with c >= 3 from owner o to user ξ while
 * T_ξ + (c-2) < T_o.  All ties go to the lowest part index.
 * Cost: O(Σ_v (words + c_v)) per pass, plus O(n + k) for the sort.
 */
#include "parsa_partv.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Working state of one run (all arrays owned). */
struct partv_ctx {
	const struct parsa_nbrset *used; /* the masks, or NULL: the lists */
	const struct parsa_users *lists;
	uint32_t k, words, n;
	uint32_t *c;      /* n: users per feature */
	uint32_t *order;  /* n_order used features, decreasing c, stable */
	uint32_t n_order; /* features with c >= 1 */
	int64_t *T;       /* k: running traffic per part */
};

static void ctx_free(struct partv_ctx *x)
{
	free(x->c);
	free(x->order);
	free(x->T);
}

static uint32_t mask_popcount(const uint64_t *m, uint32_t words)
{
	uint32_t c = 0;

	for (uint32_t w = 0; w < words; w++)
		c += parsa_popcount64(m[w]);
	return c;
}

/* Phase 1: c_v for every feature and T_i = M_i for every part. */
static void count_users(struct partv_ctx *x)
{
	for (uint32_t v = 0; x->lists && v < x->n; v++) {
		x->c[v] = (uint32_t)(x->lists->ptr[v + 1] - x->lists->ptr[v]);
		for (uint64_t e = x->lists->ptr[v]; e < x->lists->ptr[v + 1];
		     e++)
			x->T[x->lists->part[e]]++;
	}
	for (uint32_t v = 0; !x->lists && v < x->n; v++) {
		const uint64_t *m = parsa_nbrset_mask(x->used, v);

		x->c[v] = mask_popcount(m, x->words);
		for (uint32_t w = 0; w < x->words; w++) {
			for (uint64_t b = m[w]; b; b &= b - 1) {
				uint32_t i = w * 64 +
					     (uint32_t)__builtin_ctzll(b);

				assert(i < x->k);
				x->T[i]++;
			}
		}
	}
}

/* Phase 2: stable counting sort of the used features by decreasing c. */
static int sort_by_users(struct partv_ctx *x, struct parsa_err *err)
{
	uint64_t *start = calloc((size_t)x->k + 2, sizeof(*start));

	if (!start)
		return parsa_fail(err, PARSA_ENOMEM,
				  "partition V: out of memory (k=%u)", x->k);
	/* bucket of c is k - c, so higher c sorts first */
	for (uint32_t v = 0; v < x->n; v++)
		if (x->c[v] > 0)
			start[x->k - x->c[v] + 1]++;
	for (uint32_t b = 1; b <= x->k + 1; b++)
		start[b] += start[b - 1];
	x->n_order = (uint32_t)start[x->k + 1];
	for (uint32_t v = 0; v < x->n; v++)
		if (x->c[v] > 0)
			x->order[start[x->k - x->c[v]]++] = v;
	free(start);
	return 0;
}

/*
 * The user of mask m with the smallest T, skipping part `skip` (pass
 * UINT32_MAX to skip none); ties to the lowest index.  UINT32_MAX if none.
 */
static uint32_t argmin_user(const uint64_t *m, uint32_t words,
			    const int64_t *T, uint32_t skip)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t w = 0; w < words; w++) {
		for (uint64_t b = m[w]; b; b &= b - 1) {
			uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(b);

			if (i == skip)
				continue;
			if (best == UINT32_MAX || T[i] < T[best])
				best = i;
		}
	}
	return best;
}

/* argmin_user over v's users: its mask or its list (increasing part ids,
 * so the same ties). */
static uint32_t argmin_of(const struct partv_ctx *x, uint32_t v,
			  uint32_t skip)
{
	uint32_t best = UINT32_MAX;

	if (!x->lists)
		return argmin_user(parsa_nbrset_mask(x->used, v), x->words,
				   x->T, skip);
	for (uint64_t e = x->lists->ptr[v]; e < x->lists->ptr[v + 1]; e++) {
		uint32_t i = x->lists->part[e];

		if (i != skip && (best == UINT32_MAX || x->T[i] < x->T[best]))
			best = i;
	}
	return best;
}

/* Phase 3: Algorithm 11 in LPT order; unused features to v mod k. */
static void greedy_assign(struct partv_ctx *x, uint32_t *owner)
{
	for (uint32_t v = 0; v < x->n; v++)
		if (x->c[v] == 0)
			owner[v] = v % x->k;
	for (uint32_t j = 0; j < x->n_order; j++) {
		uint32_t v = x->order[j];
		uint32_t xi = argmin_of(x, v, UINT32_MAX);

		assert(xi < x->k);
		owner[v] = xi;
		x->T[xi] += (int64_t)x->c[v] - 2;
		assert(x->T[xi] >= 0);
	}
}

/* Phase 4: one improving sweep; returns the number of moves. */
static uint64_t sweep_once(struct partv_ctx *x, uint32_t *owner)
{
	uint64_t moves = 0;

	/* order is by decreasing c: stop at the first c < 3 */
	for (uint32_t j = 0; j < x->n_order && x->c[x->order[j]] >= 3; j++) {
		uint32_t v = x->order[j], o = owner[v];
		int64_t gain = (int64_t)x->c[v] - 2;
		uint32_t xi = argmin_of(x, v, o);

		assert(xi < x->k);
		if (x->T[xi] + gain < x->T[o]) {
			x->T[o] -= gain;
			x->T[xi] += gain;
			owner[v] = xi;
			moves++;
		}
	}
	return moves;
}

static int ctx_alloc(struct partv_ctx *x, const struct parsa_nbrset *used,
		     const struct parsa_users *lists, struct parsa_err *err)
{
	memset(x, 0, sizeof(*x));
	x->used = used;
	x->lists = lists;
	x->k = used ? used->k : lists->k;
	x->words = used ? used->words : 0;
	x->n = used ? used->n_feat : lists->n_feat;
	x->c = malloc(((size_t)x->n + 1) * sizeof(*x->c));
	x->order = malloc(((size_t)x->n + 1) * sizeof(*x->order));
	x->T = calloc(x->k, sizeof(*x->T));
	if (!x->c || !x->order || !x->T) {
		ctx_free(x);
		return parsa_fail(err, PARSA_ENOMEM,
				  "partition V: out of memory (%u features)",
				  x->n);
	}
	return 0;
}

/*
 * The common run: T (k entries) starts at T0 (NULL: M_i from the masks);
 * with greedy, every used feature is first given by Algorithm 11; then up
 * to sweeps improving sweeps over the current owners.
 */
static int partv_run(const struct parsa_nbrset *used,
		     const struct parsa_users *lists, int greedy,
		     uint32_t sweeps, uint32_t *owner, const int64_t *T0,
		     int64_t *T_out, struct parsa_partv_stats *st,
		     struct parsa_err *err)
{
	struct partv_ctx x;
	struct parsa_partv_stats s = { 0, 0 };
	int rc;

	if (lists ? lists->k == 0 || !lists->ptr
		  : !used || used->k == 0 ||
			    used->words != (used->k + 63) / 64)
		return parsa_fail(err, PARSA_EINVAL,
				  "partition V: bad neighbor sets");
	if (!owner && (lists ? lists->n_feat : used->n_feat) > 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "partition V: owner is NULL");
	rc = ctx_alloc(&x, used, lists, err);
	if (rc)
		return rc;
	count_users(&x);
	if (T0)
		memcpy(x.T, T0, x.k * sizeof(*x.T));
	rc = sort_by_users(&x, err);
	if (rc) {
		ctx_free(&x);
		return rc;
	}
	if (greedy)
		greedy_assign(&x, owner);
	while (s.sweeps_run < sweeps) {
		uint64_t moved = sweep_once(&x, owner);

		s.sweeps_run++;
		s.moves += moved;
		if (moved == 0)
			break;
	}
	if (T_out)
		memcpy(T_out, x.T, x.k * sizeof(*x.T));
	if (st)
		*st = s;
	ctx_free(&x);
	return 0;
}

int parsa_partition_v_ex(const struct parsa_nbrset *used, uint32_t sweeps,
			 uint32_t *owner, uint64_t *traffic,
			 struct parsa_partv_stats *st, struct parsa_err *err)
{
	int64_t *T = NULL;
	int rc;

	if (traffic && used && used->k > 0) {
		T = malloc(used->k * sizeof(*T));
		if (!T)
			return parsa_fail(err, PARSA_ENOMEM,
					  "partition V: out of memory");
	}
	rc = partv_run(used, NULL, 1, sweeps, owner, NULL, T, st, err);
	for (uint32_t i = 0; !rc && T && i < used->k; i++) {
		assert(T[i] >= 0);
		traffic[i] = (uint64_t)T[i];
	}
	free(T);
	return rc;
}

int parsa_partition_v_part(const struct parsa_nbrset *used, int greedy,
			   uint32_t sweeps, uint32_t *owner, int64_t *T,
			   struct parsa_partv_stats *st, struct parsa_err *err)
{
	if (!T)
		return parsa_fail(err, PARSA_EINVAL, "partition V: T is NULL");
	return partv_run(used, NULL, greedy, sweeps, owner, T, T, st, err);
}

int parsa_partition_v(const struct parsa_nbrset *used, uint32_t sweeps,
		      uint32_t *owner, struct parsa_partv_stats *st,
		      struct parsa_err *err)
{
	return parsa_partition_v_ex(used, sweeps, owner, NULL, st, err);
}

int parsa_partition_v_lists(const struct parsa_users *lists, uint32_t sweeps,
			    uint32_t *owner, uint64_t *traffic,
			    struct parsa_partv_stats *st, struct parsa_err *err)
{
	int64_t *T = NULL;
	int rc;

	if (!lists)
		return parsa_fail(err, PARSA_EINVAL,
				  "partition V: bad neighbor sets");
	if (traffic && lists->k > 0) {
		T = malloc(lists->k * sizeof(*T));
		if (!T)
			return parsa_fail(err, PARSA_ENOMEM,
					  "partition V: out of memory");
	}
	rc = partv_run(NULL, lists, 1, sweeps, owner, NULL, T, st, err);
	for (uint32_t i = 0; !rc && T && i < lists->k; i++)
		traffic[i] = (uint64_t)T[i];
	free(T);
	return rc;
}

void parsa_users_release(struct parsa_users *u)
{
	if (!u)
		return;
	free(u->ptr);
	free(u->part);
	memset(u, 0, sizeof(*u));
}

int parsa_users_build(const struct parsa_graph *g, uint32_t k,
		      const uint32_t *part, struct parsa_users *u,
		      struct parsa_err *err)
{
	struct parsa_sets64 s;
	int rc;

	memset(u, 0, sizeof(*u));
	if (k > 65536)
		return parsa_fail(err, PARSA_EINVAL,
				  "partition V: lists for k <= 65536 only");
	rc = parsa_sets64_init(&s, g, k, part, err);
	if (rc)
		return rc;
	u->k = k;
	u->n_feat = g->n_cols;
	u->ptr = calloc((size_t)g->n_cols + 2, sizeof(*u->ptr));
	if (!u->ptr)
		goto nomem;
	/* two walks over the groups: the counts (into ptr[v + 2]), then the
	 * lists, each group's parts after the previous groups' */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t q = 0; q < s.groups; q++) {
			parsa_sets64_group(&s, g, part, q);
			for (uint32_t v = 0; v < g->n_cols; v++) {
				uint64_t m = s.mask[v];

				if (pass == 0)
					u->ptr[v + 2] += parsa_popcount64(m);
				for (; pass && m; m &= m - 1)
					u->part[u->ptr[v + 1]++] = (uint16_t)(
						q * 64 + (uint32_t)__builtin_ctzll(m));
			}
		}
		if (pass)
			break;
		for (uint32_t v = 0; v < g->n_cols; v++)
			u->ptr[v + 2] += u->ptr[v + 1];
		u->part = malloc((size_t)(u->ptr[g->n_cols + 1] + 1) *
				 sizeof(*u->part));
		if (!u->part)
			goto nomem;
	}
	/* the fill moved ptr[v + 1] to the end of v's list: ptr[v] is v's
	 * start again */
	parsa_sets64_release(&s);
	return 0;
nomem:
	parsa_sets64_release(&s);
	parsa_users_release(u);
	return parsa_fail(err, PARSA_ENOMEM,
			  "partition V: out of memory for the users' lists");
}
