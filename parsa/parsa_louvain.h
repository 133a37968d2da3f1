/*
 * parsa_louvain: communities by Louvain modularity maximisation, for the
 * community-aware coarsening of parsa_ml (as KaHyPar and Mt-KaHyPar do:
 * Heuer & Schlag 2017, "Improving coarsening schemes for hypergraph
 * partitioning by exploiting community structure").
 *
 * The graph is undirected and weighted, in CSR form with every edge
 * listed at both ends; a node may list itself (a self-loop, counted once).
 * With A the adjacency, k_a = Σ_b A_ab, 2m = Σ_a k_a and tot_C = Σ_{a∈C}
 * k_a, the modularity of a clustering is
 *
 *     Q = Σ_C [ Σ_{a,b∈C} A_ab / 2m − (tot_C / 2m)^2 ].
 *
 * Louvain: the nodes, in a seeded random order, each move to the
 * neighbouring community with the largest gain k_{a,D} − k_a tot_D / 2m
 * (a taken out of its own community first; ties: stay, then the lowest
 * community id), only when that gain is larger than staying's, so every
 * move raises Q by exactly 2 (gain(D) − gain(own)) / 2m.  Passes repeat
 * until fewer than min_move_frac of the nodes moved (or max_passes), then
 * the communities are contracted to the nodes of the next level (the
 * weights inside a community become its self-loop, so Q is the same on
 * both levels) and the next level starts, up to max_levels or until a
 * level moves nothing.  Deterministic for a seed (one thread).
 *
 * parsa_louvain_star runs it on the star expansion of a parsa_graph read
 * as a hypergraph (rows = vertices, columns = nets): one node per row and
 * per column, an edge per nonzero (u, v) weighing 1 (uniform) or
 * deg(u) / |v| (degree; KaHyPar's "non-uniform" weighting), and hybrid
 * choosing uniform when there are at least 0.75 nets per vertex, degree
 * otherwise (as KaHyPar).  The rows' communities are what it returns.
 *
 * Cost: O(|E|) per pass and level (nodes' rows are scanned once per
 * visit); memory: the expansion, 24 bytes per nonzero (both ends, a
 * 4-byte neighbour and an 8-byte weight), and at most as much again for
 * the first contracted level.
 *
 * stop (parsa_stop.h): polled before every pass and every PARSA_STOP_POPS
 * nodes within one; once due, no node moves any more and the communities
 * found so far are returned (a valid clustering, only a coarser or finer
 * one).
 */
#ifndef PARSA_LOUVAIN_H
#define PARSA_LOUVAIN_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_stop.h"

struct parsa_wgraph {
	uint32_t n;     /* nodes */
	uint64_t *ptr;  /* n + 1 offsets */
	uint32_t *adj;  /* ptr[n] neighbours (a node may list itself) */
	double *w;      /* ptr[n] weights, >= 0, symmetric */
};

enum parsa_louvain_weight {
	PARSA_LOUVAIN_HYBRID = 0, /* uniform at >= 0.75 nets per vertex */
	PARSA_LOUVAIN_UNIFORM,
	PARSA_LOUVAIN_DEGREE,
};

/* Called after every move (tests): the level (0: the given graph), the
 * level's communities after the move, the node, where it went, and the
 * modularity gain the move was predicted to make. */
typedef void (*parsa_louvain_trace_fn)(void *arg, uint32_t level,
				       const uint32_t *comm, uint32_t node,
				       uint32_t from, uint32_t to,
				       double dq);

struct parsa_louvain_opts {
	uint64_t seed;
	uint32_t max_passes;  /* local-moving passes per level (0 counts as 1) */
	double min_move_frac; /* a level ends after a pass moving fewer */
	uint32_t max_levels;  /* contraction levels (0 counts as 1) */
	enum parsa_louvain_weight weight; /* parsa_louvain_star only */
	const struct parsa_stop *stop;    /* may be NULL */
	parsa_louvain_trace_fn trace;     /* may be NULL */
	void *trace_arg;
};

/* Mt-KaHyPar's settings: 5 passes, 1% of the nodes, levels until none
 * moves (ML_MAX_LEVELS-like bound: 32). */
void parsa_louvain_opts_default(struct parsa_louvain_opts *o);

/*
 * comm (g->n entries) receives each node's community, numbered 0..*nc-1
 * in order of their lowest node; *nc (may be NULL) their number.
 * 0, PARSA_ENOMEM.
 */
int parsa_louvain(const struct parsa_wgraph *g,
		  const struct parsa_louvain_opts *o, uint32_t *comm,
		  uint32_t *nc, struct parsa_err *err);

/* The modularity Q of comm on g (0 when g has no weight, or out of
 * memory: tests and diagnostics). */
double parsa_modularity(const struct parsa_wgraph *g, const uint32_t *comm);

/*
 * The star expansion of h (o->weight) into x (owned: release it with
 * parsa_wgraph_release): rows are nodes 0..n_rows-1, column v is node
 * n_rows + v.  0, PARSA_ENOMEM, PARSA_ERANGE (n_rows + n_cols >= 2^32).
 */
int parsa_louvain_expand(const struct parsa_graph *h,
			 enum parsa_louvain_weight weight,
			 struct parsa_wgraph *x, struct parsa_err *err);

void parsa_wgraph_release(struct parsa_wgraph *g);

/*
 * Louvain on the star expansion of h: comm (h->n_rows entries) receives
 * each row's community, numbered 0..*nc-1 in order of their lowest row.
 * 0, PARSA_ENOMEM, PARSA_ERANGE.
 */
int parsa_louvain_star(const struct parsa_graph *h,
		       const struct parsa_louvain_opts *o, uint32_t *comm,
		       uint32_t *nc, struct parsa_err *err);

#endif /* PARSA_LOUVAIN_H */
