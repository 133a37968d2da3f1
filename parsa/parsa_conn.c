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
