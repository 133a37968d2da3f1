/*
 * test_ps_store: the server store (hash map and direct window) against a
 * plain array oracle, including ps_store_take (entries handed over, the
 * store left empty and usable).
 */
#include "harness.h"

#include "ps_store.h"
#include "parsa_rng.h"

#define W 3 /* value width: not a power of two */

struct oracle {
	uint64_t keys[4096];
	unsigned char vals[4096][W];
	size_t n;
};

static long oracle_find(const struct oracle *o, uint64_t key)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->keys[i] == key)
			return (long)i;
	return -1;
}

/* Random writes (ps_store_get + OR) on both; then every key compared. */
static void fill(struct ps_store *s, struct oracle *o, struct parsa_rng *g,
		 uint64_t lo, uint64_t span, int ops)
{
	struct parsa_err err = {0};

	for (int i = 0; i < ops; i++) {
		uint64_t key = lo + parsa_rng_next(g) % span;
		unsigned char src[W], *v = NULL;
		long j = oracle_find(o, key);

		for (int b = 0; b < W; b++)
			src[b] = (unsigned char)parsa_rng_next(g);
		REQUIRE(ps_store_get(s, key, &v, &err) == 0);
		ps_op_merge(PS_OP_OR, v, src, W);
		if (j < 0) {
			REQUIRE(o->n < 4096);
			j = (long)o->n++;
			o->keys[j] = key;
			memset(o->vals[j], 0, W);
		}
		ps_op_merge(PS_OP_OR, o->vals[j], src, W);
	}
}

static void compare(struct ps_store *s, const struct oracle *o, uint64_t lo,
		    uint64_t span)
{
	CHECK_INT(ps_store_size(s), ==, o->n);
	for (size_t i = 0; i < o->n && i < ps_store_size(s); i++) {
		CHECK(ps_store_keys(s)[i] == o->keys[i]);
		CHECK(memcmp(ps_store_values(s) + i * W, o->vals[i], W) == 0);
	}
	for (uint64_t key = lo; key < lo + span; key++) {
		const unsigned char *v = ps_store_find(s, key);
		long j = oracle_find(o, key);

		CHECK((v != NULL) == (j >= 0));
		if (v && j >= 0)
			CHECK(memcmp(v, o->vals[j], W) == 0);
	}
}

/* Two rounds: fill, compare, take (the arrays equal the oracle's), and
 * again on the emptied store. */
static void run(int window)
{
	struct parsa_err err = {0};
	struct ps_store *s = ps_store_create(W, &err);
	struct parsa_rng g;
	uint64_t lo = 1000, span = 3000;
	static struct oracle o;

	REQUIRE(s != NULL);
	parsa_rng_seed(&g, 17 + (uint64_t)window);
	/* the window covers half the keys: the rest go through the hash */
	if (window)
		CHECK(ps_store_set_window(s, lo, span / 2) == 0);
	for (int round = 0; round < 2; round++) {
		uint64_t *keys = NULL;
		unsigned char *vals = NULL;
		size_t n = 0;

		memset(&o, 0, sizeof(o));
		fill(s, &o, &g, lo, span, 2500);
		compare(s, &o, lo, span);
		ps_store_take(s, &keys, &vals, &n);
		CHECK_INT(n, ==, o.n);
		for (size_t i = 0; i < n && i < o.n; i++) {
			CHECK(keys[i] == o.keys[i]);
			CHECK(memcmp(vals + i * W, o.vals[i], W) == 0);
		}
		free(keys);
		free(vals);
		CHECK_INT(ps_store_size(s), ==, 0);
		CHECK(ps_store_find(s, lo) == NULL);
		CHECK(ps_store_find(s, lo + span - 1) == NULL);
	}
	ps_store_destroy(s);
}

static void test_hash_take(void) { run(0); }
static void test_window_take(void) { run(1); }

static void test_take_empty(void)
{
	struct parsa_err err = {0};
	struct ps_store *s = ps_store_create(8, &err);
	uint64_t *keys = (uint64_t *)1;
	unsigned char *vals = (unsigned char *)1, *v;
	size_t n = 7;

	REQUIRE(s != NULL);
	ps_store_take(s, &keys, &vals, &n);
	CHECK(keys == NULL && vals == NULL && n == 0);
	CHECK(ps_store_get(s, 5, &v, &err) == 0);
	CHECK_INT(ps_store_size(s), ==, 1);
	ps_store_destroy(s);
}

int main(void)
{
	RUN(test_hash_take);
	RUN(test_window_take);
	RUN(test_take_empty);
	return harness_done();
}
