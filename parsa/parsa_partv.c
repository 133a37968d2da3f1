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

/*
 * Working state of one run (all arrays owned).  The features are cut into
 * S slices of consecutive ids (slice s: [n s / S, n (s + 1) / S)), each
 * run as a task that reads the shared T and writes only its own entries:
 * its features' c, order, owner, and its row D_s of k deltas.  A slice
 * sees part i at V_i = T_i + S D_s,i (its own changes count S times, as if
 * every slice made the same ones), and the deltas are added into T after
 * each step.  S = 1 is the plain serial algorithm.
 */
struct partv_ctx {
	const struct parsa_nbrset *used; /* the masks, or NULL: the lists */
	const struct parsa_users *lists;
	uint32_t k, words, n, S;
	uint32_t *c;       /* n: users per feature */
	uint32_t *order;   /* slice s: its used features, decreasing c,
			    * stable, from the slice's first id */
	uint32_t *n_order; /* S: features with c >= 1 per slice */
	uint64_t *start;   /* S x (k + 2): each slice's counting sort */
	int64_t *T;        /* k: traffic per part */
	int64_t *D;        /* S x k: each slice's deltas of the step */
	uint64_t *moved;   /* S: moves of the slice's sweep */
	uint32_t *owner;
	int64_t tmax;      /* max T before the sweep (sweeps only) */
};

static void ctx_free(struct partv_ctx *x)
{
	free(x->c);
	free(x->order);
	free(x->n_order);
	free(x->start);
	free(x->T);
	free(x->D);
	free(x->moved);
}

static uint32_t slice_lo(const struct partv_ctx *x, uint32_t s)
{
	return (uint32_t)((uint64_t)x->n * s / x->S);
}

static uint32_t mask_popcount(const uint64_t *m, uint32_t words)
{
	uint32_t c = 0;

	for (uint32_t w = 0; w < words; w++)
		c += parsa_popcount64(m[w]);
	return c;
}

/* Step 1 of slice s: c_v for its features; D_s,i = its part of M_i. */
static void count_users(struct partv_ctx *x, uint32_t s)
{
	int64_t *M = x->D + (uint64_t)s * x->k;
	uint32_t lo = slice_lo(x, s), hi = slice_lo(x, s + 1);

	for (uint32_t v = lo; x->lists && v < hi; v++) {
		x->c[v] = (uint32_t)(x->lists->ptr[v + 1] - x->lists->ptr[v]);
		for (uint64_t e = x->lists->ptr[v]; e < x->lists->ptr[v + 1];
		     e++)
			M[x->lists->part[e]]++;
	}
	for (uint32_t v = lo; !x->lists && v < hi; v++) {
		const uint64_t *m = parsa_nbrset_mask(x->used, v);

		x->c[v] = mask_popcount(m, x->words);
		for (uint32_t w = 0; w < x->words; w++) {
			for (uint64_t b = m[w]; b; b &= b - 1) {
				uint32_t i = w * 64 +
					     (uint32_t)__builtin_ctzll(b);

				assert(i < x->k);
				M[i]++;
			}
		}
	}
}

/* Step 2 of slice s: stable counting sort of its used features by
 * decreasing c. */
static void sort_by_users(struct partv_ctx *x, uint32_t s)
{
	uint64_t *start = x->start + (uint64_t)s * (x->k + 2);
	uint32_t lo = slice_lo(x, s), hi = slice_lo(x, s + 1);

	memset(start, 0, ((size_t)x->k + 2) * sizeof(*start));
	/* bucket of c is k - c, so higher c sorts first */
	for (uint32_t v = lo; v < hi; v++)
		if (x->c[v] > 0)
			start[x->k - x->c[v] + 1]++;
	for (uint32_t b = 1; b <= x->k + 1; b++)
		start[b] += start[b - 1];
	x->n_order[s] = (uint32_t)start[x->k + 1];
	for (uint32_t v = lo; v < hi; v++)
		if (x->c[v] > 0)
			x->order[lo + start[x->k - x->c[v]]++] = v;
}

/*
 * The user of v (its mask or its list: increasing part ids either way)
 * with the smallest view T_i + S D_i, skipping part `skip` (UINT32_MAX:
 * none); ties to the lowest index.  UINT32_MAX if none.
 */
static uint32_t argmin_of(const struct partv_ctx *x, const int64_t *D,
			  uint32_t v, uint32_t skip, int64_t *view)
{
	uint32_t best = UINT32_MAX;
	int64_t bv = 0;

	if (!x->lists) {
		const uint64_t *m = parsa_nbrset_mask(x->used, v);

		for (uint32_t w = 0; w < x->words; w++) {
			for (uint64_t b = m[w]; b; b &= b - 1) {
				uint32_t i = w * 64 +
					     (uint32_t)__builtin_ctzll(b);
				int64_t t = x->T[i] + (int64_t)x->S * D[i];

				if (i != skip && (best == UINT32_MAX || t < bv)) {
					best = i;
					bv = t;
				}
			}
		}
	}
	for (uint64_t e = x->lists ? x->lists->ptr[v] : 0;
	     x->lists && e < x->lists->ptr[v + 1]; e++) {
		uint32_t i = x->lists->part[e];
		int64_t t = x->T[i] + (int64_t)x->S * D[i];

		if (i != skip && (best == UINT32_MAX || t < bv)) {
			best = i;
			bv = t;
		}
	}
	*view = bv;
	return best;
}

/* Step 3 of slice s: Algorithm 11 in LPT order on its features, against
 * its view; unused features to v mod k. */
static void greedy_assign(struct partv_ctx *x, uint32_t s)
{
	int64_t *D = x->D + (uint64_t)s * x->k;
	uint32_t lo = slice_lo(x, s), hi = slice_lo(x, s + 1);

	for (uint32_t v = lo; v < hi; v++)
		if (x->c[v] == 0)
			x->owner[v] = v % x->k;
	for (uint32_t j = lo; j < lo + x->n_order[s]; j++) {
		uint32_t v = x->order[j];
		int64_t view;
		uint32_t xi = argmin_of(x, D, v, UINT32_MAX, &view);

		assert(xi < x->k);
		x->owner[v] = xi;
		D[xi] += (int64_t)x->c[v] - 2;
	}
}

/*
 * Step 4 of slice s: one improving sweep over its features with c >= 3:
 * v moves from owner o to its user ξ of smallest view when
 * V_ξ + S (c - 2) < min(V_o, tmax) (tmax: max T before the sweep).  Each
 * slice then keeps S D_s,ξ < tmax - T_ξ for every part it raised, so after
 * the deltas are summed no part exceeds the old T_max: T_max never
 * worsens.  With S = 1, V_o <= tmax always and the rule is the serial one,
 * T_ξ + (c - 2) < T_o.
 */
static void sweep_once(struct partv_ctx *x, uint32_t s)
{
	int64_t *D = x->D + (uint64_t)s * x->k;
	uint32_t lo = slice_lo(x, s);
	uint64_t moves = 0;

	/* order is by decreasing c: stop at the first c < 3 */
	for (uint32_t j = lo;
	     j < lo + x->n_order[s] && x->c[x->order[j]] >= 3; j++) {
		uint32_t v = x->order[j], o = x->owner[v];
		int64_t gain = (int64_t)x->c[v] - 2, view;
		int64_t vo = x->T[o] + (int64_t)x->S * D[o];
		uint32_t xi = argmin_of(x, D, v, o, &view);

		assert(xi < x->k);
		if (vo > x->tmax)
			vo = x->tmax;
		if (view + (int64_t)x->S * gain < vo) {
			D[o] -= gain;
			D[xi] += gain;
			x->owner[v] = xi;
			moves++;
		}
	}
	x->moved[s] = moves;
}

enum partv_step { STEP_COUNT, STEP_SORT, STEP_GREEDY, STEP_SWEEP };

struct partv_call {
	struct partv_ctx *x;
	enum partv_step step;
};

static void partv_task(void *arg, uint32_t s)
{
	struct partv_call *c = arg;

	switch (c->step) {
	case STEP_COUNT:
		count_users(c->x, s);
		break;
	case STEP_SORT:
		sort_by_users(c->x, s);
		break;
	case STEP_GREEDY:
		greedy_assign(c->x, s);
		break;
	case STEP_SWEEP:
		sweep_once(c->x, s);
		break;
	}
}

/* Run one step on every slice (on par's threads if given), then add the
 * slices' deltas into T (in slice order: the sums do not depend on the
 * threads) and clear them. */
static void run_step(struct partv_ctx *x, enum partv_step step,
		     parsa_partv_par_fn par, void *par_arg)
{
	struct partv_call c = { x, step };

	memset(x->D, 0, (size_t)x->S * x->k * sizeof(*x->D));
	if (par && x->S > 1)
		par(par_arg, x->S, partv_task, &c);
	else
		for (uint32_t s = 0; s < x->S; s++)
			partv_task(&c, s);
	for (uint32_t s = 0; s < x->S; s++)
		for (uint32_t i = 0; i < x->k; i++)
			x->T[i] += x->D[(uint64_t)s * x->k + i];
}

static int ctx_alloc(struct partv_ctx *x, const struct parsa_nbrset *used,
		     const struct parsa_users *lists, uint32_t slices,
		     struct parsa_err *err)
{
	memset(x, 0, sizeof(*x));
	x->used = used;
	x->lists = lists;
	x->k = used ? used->k : lists->k;
	x->words = used ? used->words : 0;
	x->n = used ? used->n_feat : lists->n_feat;
	x->S = slices < 1 ? 1 : slices;
	if (x->S > x->n)
		x->S = x->n > 0 ? x->n : 1;
	x->c = malloc(((size_t)x->n + 1) * sizeof(*x->c));
	x->order = malloc(((size_t)x->n + 1) * sizeof(*x->order));
	x->n_order = calloc(x->S, sizeof(*x->n_order));
	x->start = malloc((size_t)x->S * (x->k + 2) * sizeof(*x->start));
	x->T = calloc(x->k, sizeof(*x->T));
	x->D = calloc((size_t)x->S * x->k, sizeof(*x->D));
	x->moved = calloc(x->S, sizeof(*x->moved));
	if (!x->c || !x->order || !x->n_order || !x->start || !x->T ||
	    !x->D || !x->moved) {
		ctx_free(x);
		return parsa_fail(err, PARSA_ENOMEM,
				  "partition V: out of memory (%u features)",
				  x->n);
	}
	return 0;
}

/*
 * The common run in `slices` slices: T (k entries) starts at T0 (NULL: M_i
 * from the sets); with greedy, every used feature is first given by
 * Algorithm 11; then up to sweeps improving sweeps over the current
 * owners.
 */
static int partv_run(const struct parsa_nbrset *used,
		     const struct parsa_users *lists, int greedy,
		     uint32_t sweeps, uint32_t slices, parsa_partv_par_fn par,
		     void *par_arg, uint32_t *owner, const int64_t *T0,
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
	rc = ctx_alloc(&x, used, lists, slices, err);
	if (rc)
		return rc;
	x.owner = owner;
	run_step(&x, STEP_COUNT, par, par_arg); /* T = M */
	if (T0)
		memcpy(x.T, T0, x.k * sizeof(*x.T));
	run_step(&x, STEP_SORT, par, par_arg);
	if (greedy)
		run_step(&x, STEP_GREEDY, par, par_arg);
	while (s.sweeps_run < sweeps) {
		uint64_t moved = 0;

		x.tmax = 0;
		for (uint32_t i = 0; i < x.k; i++)
			if (x.T[i] > x.tmax)
				x.tmax = x.T[i];
		run_step(&x, STEP_SWEEP, par, par_arg);
		for (uint32_t i = 0; i < x.S; i++)
			moved += x.moved[i];
		s.sweeps_run++;
		s.moves += moved;
		if (moved == 0)
			break;
	}
	for (uint32_t i = 0; i < x.k; i++)
		assert(x.T[i] >= 0);
	if (T_out)
		memcpy(T_out, x.T, x.k * sizeof(*x.T));
	if (st)
		*st = s;
	ctx_free(&x);
	return 0;
}

int parsa_partition_v_sliced(const struct parsa_nbrset *used,
			     const struct parsa_users *lists, uint32_t sweeps,
			     uint32_t slices, parsa_partv_par_fn par,
			     void *par_arg, uint32_t *owner, uint64_t *traffic,
			     struct parsa_partv_stats *st, struct parsa_err *err)
{
	uint32_t k = lists ? lists->k : used ? used->k : 0;
	int64_t *T = NULL;
	int rc;

	if (!used == !lists)
		return parsa_fail(err, PARSA_EINVAL,
				  "partition V: bad neighbor sets");
	if (traffic && k > 0) {
		T = malloc(k * sizeof(*T));
		if (!T)
			return parsa_fail(err, PARSA_ENOMEM,
					  "partition V: out of memory");
	}
	rc = partv_run(used, lists, 1, sweeps, slices, par, par_arg, owner,
		       NULL, T, st, err);
	for (uint32_t i = 0; !rc && T && i < k; i++)
		traffic[i] = (uint64_t)T[i];
	free(T);
	return rc;
}

int parsa_partition_v_ex(const struct parsa_nbrset *used, uint32_t sweeps,
			 uint32_t *owner, uint64_t *traffic,
			 struct parsa_partv_stats *st, struct parsa_err *err)
{
	if (!used)
		return parsa_fail(err, PARSA_EINVAL,
				  "partition V: bad neighbor sets");
	return parsa_partition_v_sliced(used, NULL, sweeps, 1, NULL, NULL,
					owner, traffic, st, err);
}

int parsa_partition_v_part(const struct parsa_nbrset *used, int greedy,
			   uint32_t sweeps, uint32_t *owner, int64_t *T,
			   struct parsa_partv_stats *st, struct parsa_err *err)
{
	if (!T)
		return parsa_fail(err, PARSA_EINVAL, "partition V: T is NULL");
	return partv_run(used, NULL, greedy, sweeps, 1, NULL, NULL, owner, T,
			 T, st, err);
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
	if (!lists)
		return parsa_fail(err, PARSA_EINVAL,
				  "partition V: bad neighbor sets");
	return parsa_partition_v_sliced(NULL, lists, sweeps, 1, NULL, NULL,
					owner, traffic, st, err);
}

void parsa_users_release(struct parsa_users *u)
{
	if (!u)
		return;
	free(u->ptr);
	free(u->part);
	memset(u, 0, sizeof(*u));
}

/* One group of parsa_users_build on the features of task t: the masks of
 * [lo, hi), then their counts (pass 0) or their list entries (pass 1). */
struct users_call {
	struct parsa_sets64 *s;
	const struct parsa_graph *g;
	const uint32_t *part;
	struct parsa_users *u;
	uint32_t q, pass, tasks;
};

static void users_task(void *arg, uint32_t t)
{
	const struct users_call *c = arg;
	struct parsa_users *u = c->u;
	uint32_t n = c->g->n_cols;
	uint32_t lo = (uint32_t)((uint64_t)n * t / c->tasks);
	uint32_t hi = (uint32_t)((uint64_t)n * (t + 1) / c->tasks);

	parsa_sets64_group_range(c->s, c->g, c->part, c->q, lo, hi);
	for (uint32_t v = lo; v < hi; v++) {
		uint64_t m = c->s->mask[v];

		if (c->pass == 0)
			u->ptr[v + 2] += parsa_popcount64(m);
		for (; c->pass && m; m &= m - 1)
			u->part[u->ptr[v + 1]++] = (uint16_t)(
				c->q * 64 + (uint32_t)__builtin_ctzll(m));
	}
}

int parsa_users_build(const struct parsa_graph *g, uint32_t k,
		      const uint32_t *part, struct parsa_users *u,
		      struct parsa_err *err)
{
	return parsa_users_build_par(g, k, part, u, NULL, NULL, 1, err);
}

int parsa_users_build_par(const struct parsa_graph *g, uint32_t k,
			  const uint32_t *part, struct parsa_users *u,
			  parsa_partv_par_fn par, void *par_arg,
			  uint32_t tasks, struct parsa_err *err)
{
	struct parsa_sets64 s;
	struct users_call c;
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
	if (!par || tasks < 1)
		tasks = 1;
	if (tasks > g->n_cols)
		tasks = g->n_cols > 0 ? g->n_cols : 1;
	c = (struct users_call){ &s, g, part, u, 0, 0, tasks };
	/* two walks over the groups: the counts (into ptr[v + 2]), then the
	 * lists, each group's parts after the previous groups' */
	for (c.pass = 0; c.pass < 2; c.pass++) {
		for (c.q = 0; c.q < s.groups; c.q++) {
			if (tasks > 1)
				par(par_arg, tasks, users_task, &c);
			else
				users_task(&c, 0);
		}
		if (c.pass)
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
