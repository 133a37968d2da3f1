/*
 * test_allocfail: every allocation of parsa/ (and of the parameter server,
 * server/) made to fail in turn, in the spirit of SQLite's malloc tests.
 *
 * The binary is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
 * --wrap=free (Makefile), so every call our static libraries make goes
 * through the __wrap_ functions below; calls inside libc itself do not.
 * For each scenario (a library call on a small input): a first run counts
 * its allocations; then for every n from 1 to that count the n-th
 * allocation fails, and the call must return a non-zero code with a
 * message (or 0 when it documents the failure as benign, e.g. parsa_fm's
 * swap candidates), must not crash, and once the caller has released what
 * it owns, nothing the call allocated may be live (tracked here by
 * address, so the check works without a sanitizer; under `make check`
 * LeakSanitizer checks again at exit).  A run that succeeds despite the
 * failure must give the same result as the undisturbed run.
 */
#include "harness.h"
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "part_lanes.h"
#include "parsa_fm.h"
#include "parsa_kfm.h"
#include "parsa_metrics.h"
#include "parsa_ml.h"
#include "parsa_partu.h"
#include "parsa_partv.h"
#include "parsa_pcap.h"
#include "parsa_rb.h"
#include "parsa_refine.h"
#include "ps.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/* ---- the allocator's switch and the live set (test code: globals) ---- */

#define LIVE_SLOTS (1u << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int tracking;     /* count and track while non-zero */
static atomic_ulong calls;      /* allocations seen while tracking */
static unsigned long fail_at;   /* fail the fail_at-th (1-based), 0 never */
static unsigned long failed;    /* allocations failed in this run */
static void *live[LIVE_SLOTS];  /* open addressing; (void *)1 = deleted */
static unsigned long n_live;

static size_t slot_of(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 44) & (LIVE_SLOTS - 1);
}

static void live_add(void *p)
{
	size_t i = slot_of(p);

	while (live[i] && live[i] != (void *)1)
		i = (i + 1) & (LIVE_SLOTS - 1);
	live[i] = p;
	n_live++;
}

/* Remove p if tracked. */
static void live_del(void *p)
{
	size_t i = slot_of(p);

	for (;;) {
		if (!live[i])
			return;
		if (live[i] == p) {
			live[i] = (void *)1;
			n_live--;
			return;
		}
		i = (i + 1) & (LIVE_SLOTS - 1);
	}
}

/* 1: this allocation must fail. */
static int should_fail(void)
{
	unsigned long c;

	if (!atomic_load(&tracking))
		return 0;
	c = atomic_fetch_add(&calls, 1) + 1;
	if (fail_at && c == fail_at) {
		pthread_mutex_lock(&mu);
		failed++;
		pthread_mutex_unlock(&mu);
		return 1;
	}
	return 0;
}

static void track(void *p)
{
	if (!p || !atomic_load(&tracking))
		return;
	pthread_mutex_lock(&mu);
	live_add(p);
	pthread_mutex_unlock(&mu);
}

void *__wrap_malloc(size_t n)
{
	void *p;

	if (should_fail())
		return NULL;
	p = __real_malloc(n);
	track(p);
	return p;
}

void *__wrap_calloc(size_t n, size_t m)
{
	void *p;

	if (should_fail())
		return NULL;
	p = __real_calloc(n, m);
	track(p);
	return p;
}

void *__wrap_realloc(void *p, size_t n)
{
	void *q;

	if (n && should_fail())
		return NULL; /* p stays valid, as realloc's contract says */
	q = __real_realloc(p, n);
	if (q || n == 0) {
		pthread_mutex_lock(&mu);
		if (p)
			live_del(p);
		if (q && atomic_load(&tracking))
			live_add(q);
		pthread_mutex_unlock(&mu);
	}
	return q;
}

void __wrap_free(void *p)
{
	if (p) {
		pthread_mutex_lock(&mu);
		live_del(p);
		pthread_mutex_unlock(&mu);
	}
	__real_free(p);
}

static void arm(unsigned long n)
{
	memset(live, 0, sizeof(live));
	n_live = 0;
	failed = 0;
	fail_at = n;
	atomic_store(&calls, 0);
	atomic_store(&tracking, 1);
}

static void disarm(void)
{
	atomic_store(&tracking, 0);
}

/* ---- scenarios ---- */

/* A scenario: run() makes one call on its fixture and returns its rc
 * (err filled); release() frees what the caller owns afterwards (the call's
 * outputs, whatever rc was); same() compares the output with the
 * undisturbed run's (1: equal). */
struct scenario {
	const char *name;
	void (*setup)(void);
	int (*run)(struct parsa_err *err);
	void (*release)(void);
	int (*same)(void);
	void (*save)(void);
	void (*teardown)(void);
};

/* the shared fixture: a small graph and a starting partition */
static struct parsa_graph G;
static uint32_t K = 5;
static uint32_t *part0, *part, *saved;
static uint32_t *owner, *owner_saved;
static struct parsa_nbrset used;
static int used_ready;

static void fixture(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 42);
	tu_heavy_graph(&G, &r, 300, 120, 10, 60);
	part0 = malloc(G.n_rows * sizeof(uint32_t));
	part = malloc(G.n_rows * sizeof(uint32_t));
	saved = malloc(G.n_rows * sizeof(uint32_t));
	owner = malloc(G.n_cols * sizeof(uint32_t));
	owner_saved = malloc(G.n_cols * sizeof(uint32_t));
	REQUIRE(part0 && part && saved && owner && owner_saved);
	for (uint32_t u = 0; u < G.n_rows; u++)
		part0[u] = u % K;
}

static void fixture_release(void)
{
	free(part0);
	free(part);
	free(saved);
	free(owner);
	free(owner_saved);
	parsa_graph_release(&G);
}

/* part = part0 and used = its sets (allocated outside the tracked run) */
static void setup_used(void)
{
	memcpy(part, part0, G.n_rows * sizeof(uint32_t));
	REQUIRE(parsa_nbrset_init(&used, G.n_cols, K, NULL) == 0);
	REQUIRE(parsa_used_sets(&G, part, &used, NULL) == 0);
	used_ready = 1;
}

static void release_used(void)
{
	if (used_ready)
		parsa_nbrset_release(&used);
	used_ready = 0;
}

static void save_part(void)
{
	memcpy(saved, part, G.n_rows * sizeof(uint32_t));
}

static int same_part(void)
{
	return memcmp(saved, part, G.n_rows * sizeof(uint32_t)) == 0;
}

static void save_owner(void)
{
	memcpy(owner_saved, owner, G.n_cols * sizeof(uint32_t));
}

static int same_owner(void)
{
	return memcmp(owner_saved, owner, G.n_cols * sizeof(uint32_t)) == 0;
}

static void nothing(void)
{
}

/* Algorithm 13 over blocks, with warm-up blocks; S made by the caller */
static void setup_s(void)
{
	REQUIRE(parsa_nbrset_init(&used, G.n_cols, K, NULL) == 0);
	used_ready = 1;
}

static int run_partu(struct parsa_err *err)
{
	struct parsa_partu_opts o;

	parsa_partu_opts_default(&o);
	o.k = K;
	o.blocks = 4;
	o.init_blocks = 1;
	o.seed = 3;
	return parsa_partition_u(&G, &o, &used, part, NULL, err);
}

/* Algorithm 13 in lanes on 2 threads (partitioner/part_lanes: its
 * scatter back to row order falls back to the cycles in place) */
static int run_lanes(struct parsa_err *err)
{
	struct parsa_partu_opts o;

	parsa_partu_opts_default(&o);
	o.k = K;
	o.blocks = 8;
	o.init_blocks = 0;
	o.seed = 3;
	return part_lanes_partition_u(&G, &o, 4, 2, &used, part, NULL, NULL,
				      err);
}

static int run_partv(struct parsa_err *err)
{
	return parsa_partition_v(&used, 4, owner, NULL, err);
}

static int run_pcap(struct parsa_err *err)
{
	return parsa_param_cap(&used, 1.0, owner, NULL, NULL, err);
}

static void setup_pcap(void)
{
	setup_used();
	for (uint32_t v = 0; v < G.n_cols; v++)
		owner[v] = v % K;
}

static int run_mmax(struct parsa_err *err)
{
	return parsa_refine_mmax(&G, part, &used,
				 parsa_balance_cap(G.n_rows, K, 1.03), 8, NULL,
				 err);
}

static int run_fm(struct parsa_err *err)
{
	struct parsa_fm_opts o = { 4, parsa_balance_cap(G.n_rows, K, 1.03),
				   UINT64_MAX, 0.0, 5, 1, 2, 0, NULL };

	return parsa_fm_refine(&G, part, &used, &o, NULL, err);
}

static int run_fm_chunked(struct parsa_err *err)
{
	struct parsa_fm_opts o = { 3, parsa_balance_cap(G.n_rows, K, 1.03),
				   UINT64_MAX, 0.0, 5, 1, 0, 0, NULL };

	o.chunk = 16;
	o.chunk_min_rows = 1;
	o.par_tasks = 3;
	return parsa_fm_refine(&G, part, &used, &o, NULL, err);
}

static int run_kfm(struct parsa_err *err)
{
	struct parsa_kfm_opts o = { 2, parsa_balance_cap(G.n_rows, K, 1.03),
				    UINT64_MAX, 7, 0, NULL, 0, NULL };

	return parsa_kfm_refine(&G, part, &used, &o, NULL, err);
}

static int run_ml(struct parsa_err *err)
{
	struct parsa_fm_opts o = { 2, parsa_balance_cap(G.n_rows, K, 1.03),
				   UINT64_MAX, 0.0, 5, 1, 0, 0, NULL, 1, NULL };

	return parsa_ml_refine(&G, part, &used, &o, 4, NULL, err);
}

static int run_ml_partition(struct parsa_err *err)
{
	struct parsa_partu_opts pu;
	struct parsa_fm_opts o = { 2, parsa_balance_cap(G.n_rows, K, 1.03),
				   UINT64_MAX, 0.0, 5, 1, 0, 0, NULL, 1, NULL };

	parsa_partu_opts_default(&pu);
	pu.k = K;
	pu.seed = 9;
	return parsa_ml_partition(&G, &pu, part, &used, &o, 4, NULL, err);
}

/* The same with the third start of objective tsum (o.rb_ml). */
static int run_ml_partition_rb_ml(struct parsa_err *err)
{
	struct parsa_partu_opts pu;
	struct parsa_fm_opts o = { 2, parsa_balance_cap(G.n_rows, K, 1.03),
				   UINT64_MAX, 0.0, 5, 1, 0, 0, NULL, 1, NULL };

	o.rb_ml = 2;
	parsa_partu_opts_default(&pu);
	pu.k = K;
	pu.seed = 9;
	return parsa_ml_partition(&G, &pu, part, &used, &o, 4, NULL, err);
}

static void setup_empty_used(void)
{
	memset(part, 0, G.n_rows * sizeof(uint32_t));
	REQUIRE(parsa_nbrset_init(&used, G.n_cols, K, NULL) == 0);
	used_ready = 1;
}

static int run_rb(struct parsa_err *err)
{
	struct parsa_rb_opts o = { K, 0.03, 3, 11, NULL };

	return parsa_rb_partition(&G, NULL, &o, part, NULL, err);
}

/* With multilevel starts per bisection (300 rows: the top ones coarsen). */
static int run_rb_ml(struct parsa_err *err)
{
	struct parsa_rb_opts o = { K, 0.03, 3, 11, NULL, 2 };

	return parsa_rb_partition(&G, NULL, &o, part, NULL, err);
}

static struct parsa_metrics mref, mgot;
static struct parsa_partfig pf;

static int run_metrics(struct parsa_err *err)
{
	int rc;

	rc = parsa_partfig_init(&pf, K, err);
	if (rc == 0)
		rc = parsa_metrics_figures(&G, K, part0, owner, &pf, &mgot, err);
	if (rc == 0)
		rc = parsa_metrics_random_figures(&G, K, 3, 3, &mgot, &pf, err);
	return rc;
}

static void setup_metrics(void)
{
	for (uint32_t v = 0; v < G.n_cols; v++)
		owner[v] = (v * 7) % K;
	memset(&pf, 0, sizeof(pf));
}

static void release_metrics(void)
{
	parsa_partfig_release(&pf);
}

static void save_metrics(void)
{
	mref = mgot;
}

static int same_metrics(void)
{
	return mref.T_sum == mgot.T_sum && mref.M_max == mgot.M_max &&
	       mref.T_max == mgot.T_max;
}

/* The parameter server on threads: 2 servers, 2 workers pushing (ADD)
 * and pulling the same keys, with a barrier between; the pulled sums are
 * the result.  A failed allocation in any thread must end the run with an
 * error (a lost message: within the 1 s timeout), never a hang. */
#define PS_KEYS 6
static double ps_got[2][PS_KEYS], ps_ref[2][PS_KEYS];
static struct ps_result ps_res;

static int ps_alloc_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	uint64_t keys[PS_KEYS] = { 1, 9, 1000, 1ULL << 40, 1ULL << 62, UINT64_MAX };
	double one[PS_KEYS] = { 1, 2, 3, 4, 5, 6 };
	uint32_t me = ps_node_index(w);
	uint64_t ts;
	int rc;

	(void)arg;
	rc = ps_push(w, 0, keys, PS_KEYS, one, &ts, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	if (!rc)
		rc = ps_barrier(w, err);
	if (!rc)
		rc = ps_pull(w, 0, keys, PS_KEYS, ps_got[me], &ts, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	return rc;
}

static int run_ps(struct parsa_err *err)
{
	struct ps_config cfg;
	struct ps_app app = { 0 };

	memset(&cfg, 0, sizeof(cfg));
	cfg.num_servers = 2;
	cfg.num_workers = 2;
	cfg.timeout_s = 1;
	cfg.tables[0].value_bytes = 8;
	cfg.tables[0].op = PS_OP_ADD_F64;
	cfg.num_tables = 1;
	app.worker_main = ps_alloc_worker;
	memset(ps_got, 0, sizeof(ps_got));
	return ps_run_threads(&cfg, &app, &ps_res, err);
}

static void setup_ps(void)
{
	memset(&ps_res, 0, sizeof(ps_res));
}

static void release_ps(void)
{
	ps_result_release(&ps_res);
}

static void save_ps(void)
{
	memcpy(ps_ref, ps_got, sizeof(ps_ref));
}

static int same_ps(void)
{
	return memcmp(ps_ref, ps_got, sizeof(ps_ref)) == 0;
}

static const struct scenario scenarios[] = {
	{ "partition_u", setup_s, run_partu, release_used, same_part, save_part, nothing },
	{ "lanes_partition_u", setup_s, run_lanes, release_used, same_part, save_part, nothing },
	{ "partition_v", setup_used, run_partv, release_used, same_owner, save_owner, nothing },
	{ "param_cap", setup_pcap, run_pcap, release_used, same_owner, save_owner, nothing },
	{ "refine_mmax", setup_used, run_mmax, release_used, same_part, save_part, nothing },
	{ "fm_refine", setup_used, run_fm, release_used, same_part, save_part, nothing },
	{ "fm_chunked", setup_used, run_fm_chunked, release_used, same_part, save_part, nothing },
	{ "kfm_refine", setup_used, run_kfm, release_used, same_part, save_part, nothing },
	{ "ml_refine", setup_used, run_ml, release_used, same_part, save_part, nothing },
	{ "ml_partition", setup_empty_used, run_ml_partition, release_used, same_part, save_part, nothing },
	{ "rb_partition", setup_empty_used, run_rb, release_used, same_part, save_part, nothing },
	{ "rb_partition_ml", setup_empty_used, run_rb_ml, release_used, same_part, save_part, nothing },
	{ "ml_partition_rb_ml", setup_empty_used, run_ml_partition_rb_ml, release_used, same_part, save_part, nothing },
	{ "metrics", setup_metrics, run_metrics, release_metrics, same_metrics, save_metrics, nothing },
	{ "ps_threads", setup_ps, run_ps, release_ps, same_ps, save_ps, nothing },
};

/*
 * One scenario: the undisturbed run (its allocations counted, its result
 * saved), then a run failing each allocation in turn.  Returns the number
 * of allocations.
 */
static void run_scenario(const struct scenario *s, unsigned long *n_alloc)
{
	struct parsa_err err;
	unsigned long total;
	int rc;

	*n_alloc = 0;
	s->setup();
	arm(0);
	rc = s->run(&err);
	disarm();
	REQUIRE(rc == 0);
	total = *n_alloc = atomic_load(&calls);
	s->save();
	s->release();
	CHECK_INT(n_live, ==, 0);
	for (unsigned long n = 1; n <= total; n++) {
		s->setup();
		memset(&err, 0, sizeof(err));
		arm(n);
		rc = s->run(&err);
		disarm();
		if (failed == 0) {
			/* fewer allocations this time: fine if it ran */
			CHECK_INT(rc, ==, 0);
		} else if (rc == 0) {
			/* documented as benign: the same result */
			if (!s->same())
				fprintf(stderr, "%s: allocation %lu failed, rc 0, "
					"result differs\n", s->name, n);
			CHECK(s->same());
		} else {
			/* out of memory; the parameter server may also see
			 * the failure as a lost message (no reply in time) */
			int ok = rc == PARSA_ENOMEM ||
				 (s->run == run_ps && rc == PARSA_EMPI);

			if (!ok || !err.msg[0])
				fprintf(stderr, "%s: allocation %lu: rc %d, '%s'\n",
					s->name, n, rc, err.msg);
			CHECK(ok);
			CHECK(err.msg[0] != '\0');
		}
		s->release();
		if (n_live)
			fprintf(stderr, "%s: allocation %lu failed: %lu blocks "
				"leaked\n", s->name, n, n_live);
		CHECK_INT(n_live, ==, 0);
	}
	s->teardown();
}

static size_t cur; /* the scenario test_one runs */

static void test_one(void)
{
	unsigned long n;

	run_scenario(&scenarios[cur], &n);
	CHECK(n > 0);
	printf("     %lu allocations, each failed in turn\n", n);
}

int main(void)
{
	fixture();
	for (cur = 0; cur < sizeof(scenarios) / sizeof(*scenarios); cur++)
		harness_run(scenarios[cur].name, test_one);
	fixture_release();
	return harness_done();
}
