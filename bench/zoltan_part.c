/*
 * zoltan_part: the Zoltan PHG baseline of `make bench` (not part of the
 * product; built by scripts/bench.sh when Zoltan is installed).
 *
 *   zoltan_part DATA K PREFIX [--graph adjacency|edges] [--seed S]
 *
 * Reads DATA with the project's reader (the same graph every method sees),
 * partitions the hypergraph whose vertices are the examples and whose nets
 * are the features with Zoltan PHG on one MPI rank (connectivity
 * objective, PHG_EDGE_SIZE_THRESHOLD=1.0 so no net is dropped, imbalance
 * 1.03), places V with Algorithm 11 exactly as `parsa partition` does for
 * every method (parsa_partition_v, 4 sweeps), and writes PREFIX.examples
 * and PREFIX.features for `parsa eval`.  Prints one JSON line:
 * {"seconds": {"partition": ..., "partition_u": ..., "partition_v": ...}}
 * where partition covers everything after the load, as in parsa's report.
 * Exit 0 on success, 1 on an error (message on stderr).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zoltan.h>

#include "base_time.h"
#include "parsa_metrics.h"
#include "parsa_nbrset.h"
#include "parsa_partv.h"
#include "part_placement.h"
#include "part_reader.h"

#define ZP_SWEEPS 4 /* = PART_DEFAULT_SWEEPS of part_run.c */

static int num_obj(void *data, int *ierr)
{
	const struct parsa_graph *g = data;

	*ierr = ZOLTAN_OK;
	return (int)g->n_rows;
}

static void obj_list(void *data, int ngid, int nlid, ZOLTAN_ID_PTR gids,
		     ZOLTAN_ID_PTR lids, int wdim, float *w, int *ierr)
{
	const struct parsa_graph *g = data;

	(void)ngid; (void)nlid; (void)wdim; (void)w;
	for (uint32_t u = 0; u < g->n_rows; u++)
		gids[u] = lids[u] = (ZOLTAN_ID_TYPE)u;
	*ierr = ZOLTAN_OK;
}

static void hg_size(void *data, int *nlists, int *npins, int *format,
		    int *ierr)
{
	const struct parsa_graph *g = data;

	*nlists = (int)g->n_rows;
	*npins = (int)parsa_graph_nnz(g);
	*format = ZOLTAN_COMPRESSED_VERTEX;
	*ierr = ZOLTAN_OK;
}

/* Compressed vertex format: our CSR (rows = vertices, cols = nets). */
static void hg_cs(void *data, int ngid, int nv, int npins, int format,
		  ZOLTAN_ID_PTR vgid, int *vptr, ZOLTAN_ID_PTR pins, int *ierr)
{
	const struct parsa_graph *g = data;

	(void)ngid; (void)npins; (void)format;
	for (int u = 0; u < nv; u++) {
		vgid[u] = (ZOLTAN_ID_TYPE)u;
		vptr[u] = (int)g->row_ptr[u];
	}
	for (uint64_t e = 0; e < parsa_graph_nnz(g); e++)
		pins[e] = (ZOLTAN_ID_TYPE)g->col[e];
	*ierr = ZOLTAN_OK;
}

static int zoltan_u(const struct parsa_graph *g, int k, unsigned seed,
		    uint32_t *part)
{
	struct Zoltan_Struct *zz = Zoltan_Create(MPI_COMM_WORLD);
	int changes, ngid, nlid, nimp, nexp, *iprocs, *iparts, *eprocs, *eparts;
	ZOLTAN_ID_PTR igids, ilids, egids, elids;
	char kbuf[32], sbuf[32];
	int rc;

	snprintf(kbuf, sizeof(kbuf), "%d", k);
	snprintf(sbuf, sizeof(sbuf), "%u", seed);
	Zoltan_Set_Param(zz, "DEBUG_LEVEL", "0");
	Zoltan_Set_Param(zz, "LB_METHOD", "HYPERGRAPH");
	Zoltan_Set_Param(zz, "HYPERGRAPH_PACKAGE", "PHG");
	Zoltan_Set_Param(zz, "LB_APPROACH", "PARTITION");
	Zoltan_Set_Param(zz, "PHG_CUT_OBJECTIVE", "CONNECTIVITY");
	Zoltan_Set_Param(zz, "PHG_EDGE_SIZE_THRESHOLD", "1.0");
	Zoltan_Set_Param(zz, "IMBALANCE_TOL", "1.03");
	Zoltan_Set_Param(zz, "NUM_GLOBAL_PARTS", kbuf);
	Zoltan_Set_Param(zz, "NUM_GID_ENTRIES", "1");
	Zoltan_Set_Param(zz, "NUM_LID_ENTRIES", "1");
	Zoltan_Set_Param(zz, "OBJ_WEIGHT_DIM", "0");
	Zoltan_Set_Param(zz, "EDGE_WEIGHT_DIM", "0");
	Zoltan_Set_Param(zz, "RETURN_LISTS", "PARTS");
	Zoltan_Set_Param(zz, "SEED", sbuf);
	Zoltan_Set_Num_Obj_Fn(zz, num_obj, (void *)g);
	Zoltan_Set_Obj_List_Fn(zz, obj_list, (void *)g);
	Zoltan_Set_HG_Size_CS_Fn(zz, hg_size, (void *)g);
	Zoltan_Set_HG_CS_Fn(zz, hg_cs, (void *)g);
	rc = Zoltan_LB_Partition(zz, &changes, &ngid, &nlid, &nimp, &igids,
				 &ilids, &iprocs, &iparts, &nexp, &egids,
				 &elids, &eprocs, &eparts);
	if (rc == ZOLTAN_OK) {
		/* RETURN_LISTS=PARTS: every local object is in the export list */
		memset(part, 0, (size_t)g->n_rows * sizeof(uint32_t));
		for (int i = 0; i < nexp; i++)
			part[elids[i]] = (uint32_t)eparts[i];
	}
	Zoltan_LB_Free_Part(&igids, &ilids, &iprocs, &iparts);
	Zoltan_LB_Free_Part(&egids, &elids, &eprocs, &eparts);
	Zoltan_Destroy(&zz);
	return rc == ZOLTAN_OK ? 0 : 1;
}

static int run(const char *data, int k, const char *prefix,
	       const struct part_read_opts *ro, unsigned seed)
{
	struct part_dataset ds;
	struct parsa_nbrset used;
	struct parsa_err err;
	uint32_t *part = NULL, *owner = NULL;
	double t0, t1, t2;
	int rc;

	parsa_err_clear(&err);
	part_dataset_init(&ds);
	rc = part_read_file(data, ro, &ds, &err);
	if (rc == 0) {
		part = calloc((size_t)ds.g.n_rows + 1, sizeof(uint32_t));
		owner = calloc((size_t)ds.g.n_cols + 1, sizeof(uint32_t));
		rc = part && owner ? 0 : parsa_fail(&err, PARSA_ENOMEM, "out of memory");
	}
	t0 = base_now();
	if (rc == 0 && zoltan_u(&ds.g, k, seed, part))
		rc = parsa_fail(&err, PARSA_EINVAL, "Zoltan_LB_Partition failed");
	t1 = base_now();
	if (rc == 0)
		rc = parsa_nbrset_init(&used, ds.g.n_cols, (uint32_t)k, &err);
	if (rc == 0) {
		rc = parsa_used_sets(&ds.g, part, &used, &err);
		if (rc == 0)
			rc = parsa_partition_v(&used, ZP_SWEEPS, owner, NULL, &err);
		parsa_nbrset_release(&used);
	}
	t2 = base_now();
	if (rc == 0)
		rc = part_placement_write(prefix, part, ds.g.n_rows, owner,
					  ds.feat_id, ds.g.n_cols, 0, &err);
	if (rc == 0)
		printf("{\"seconds\": {\"partition\": %.6f, \"partition_u\": %.6f, "
		       "\"partition_v\": %.6f}}\n", t2 - t0, t1 - t0, t2 - t1);
	else
		fprintf(stderr, "zoltan_part: %s\n", err.msg);
	free(part);
	free(owner);
	part_dataset_release(&ds);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct part_read_opts ro = { 0 };
	unsigned seed = 1;
	float ver;
	int rc;

	if (argc < 4) {
		fprintf(stderr, "usage: zoltan_part DATA K PREFIX [--graph adjacency|edges] [--seed S]\n");
		return 2;
	}
	for (int i = 4; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--graph") == 0)
			ro.graph = strcmp(argv[i + 1], "edges") == 0
					   ? PART_GRAPH_EDGES
					   : PART_GRAPH_ADJACENCY;
		else if (strcmp(argv[i], "--seed") == 0)
			seed = (unsigned)strtoul(argv[i + 1], NULL, 10);
	}
	MPI_Init(&argc, &argv);
	if (Zoltan_Initialize(argc, argv, &ver) != ZOLTAN_OK) {
		fprintf(stderr, "zoltan_part: Zoltan_Initialize failed\n");
		MPI_Finalize();
		return 1;
	}
	rc = run(argv[1], (int)strtol(argv[2], NULL, 10), argv[3], &ro, seed);
	MPI_Finalize();
	return rc;
}
