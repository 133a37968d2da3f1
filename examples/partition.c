/*
 * partition: the C library (include/parsa.h) in a few lines.
 *
 *   partition                          a small graph from CSR arrays, k = 2
 *   partition DATA K [SEED [PREFIX]]   read DATA (LIBSVM, SNAP, pairs; .gz),
 *                                      partition it into K parts and, with
 *                                      PREFIX, write PREFIX.examples,
 *                                      PREFIX.features and PREFIX.json as
 *                                      `parsa partition --out PREFIX` does
 *
 * Prints the metrics of the placement and of the random baseline, then
 * places two new examples against the placement (incremental assignment).
 * Build against an installed parsa:
 *
 *   cc partition.c $(pkg-config --cflags --libs parsa) -o partition
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <parsa.h>

static void progress(void *arg, double fraction, const char *phase)
{
	(void)arg;
	fprintf(stderr, "\r%-12s %3.0f%%", phase, 100 * fraction);
	if (fraction >= 1)
		fputc('\n', stderr);
}

static int fail(const char *what, const psa_error *e)
{
	fprintf(stderr, "partition: %s: %s (%s)\n", what, e->message,
		psa_strerror(e->code));
	return 1;
}

int main(int argc, char **argv)
{
	/* 6 examples over the features 10..15 (64-bit ids, any order) */
	static const uint64_t row_ptr[] = {0, 2, 4, 6, 8, 10, 12};
	static const uint64_t col_ids[] = {10, 11, 11, 10, 12, 13, 13, 12,
					   14, 15, 15, 14};
	static const uint64_t new_ptr[] = {0, 2, 3};
	static const uint64_t new_ids[] = {12, 13, 99};
	psa_graph *g = NULL;
	psa_opts *o = NULL;
	psa_result *r = NULL;
	psa_metrics m, rnd;
	psa_error e;
	uint32_t k = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 2;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	uint32_t assigned[2];
	int rc = 1;

	if (argc > 1 ? psa_graph_read(&g, argv[1], NULL, NULL, &e)
		     : psa_graph_from_csr(&g, 6, row_ptr, col_ids, &e))
		return fail("graph", &e);
	if (psa_opts_new(&o, &e) || psa_opts_set_k(o, k, &e) ||
	    psa_opts_set_seed(o, seed, &e)) {
		fail("options", &e);
		goto end;
	}
	psa_opts_set_progress(o, progress, NULL);
	if (psa_partition(g, o, &r, &e)) {
		fail("partition", &e);
		goto end;
	}
	psa_result_metrics(r, PSA_PLACEMENT, &m, NULL);
	psa_result_metrics(r, PSA_RANDOM, &rnd, NULL);
	printf("parsa %s: %" PRIu32 " examples, %" PRIu32 " features, k=%" PRIu32 "\n",
	       psa_version(), psa_graph_examples(g), psa_graph_features(g),
	       psa_result_k(r));
	printf("M_max %.0f T_max %.0f T_sum %.0f RF %.3f imbalance %.3f local %.3f\n",
	       m.M_max, m.T_max, m.T_sum, m.RF, m.imbalance, m.local_fraction);
	printf("random: M_max %.1f T_max %.1f T_sum %.1f\n", rnd.M_max,
	       rnd.T_max, rnd.T_sum);
	if (psa_assign(r, 2, new_ptr, new_ids, assigned, &e)) {
		fail("assign", &e);
		goto end;
	}
	printf("new examples go to parts %" PRIu32 " and %" PRIu32 "\n",
	       assigned[0], assigned[1]);
	if (argc > 4 && psa_result_write(r, argv[4], &e)) {
		fail("write", &e);
		goto end;
	}
	rc = 0;
end:
	psa_result_free(r);
	psa_opts_free(o);
	psa_graph_free(g);
	return rc;
}
