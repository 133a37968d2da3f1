/*
 * ps_run: run every node a transport hosts: servers and workers each on a
 * thread, the scheduler in the calling thread; any failure fails the
 * transport so that all nodes (on every rank) stop with the root cause.
 */
#include <stdlib.h>
#include <string.h>

#include "ps_internal.h"

struct run {
	struct ps_transport *tp;
	const struct ps_cluster *cl;
	const struct ps_app *app;
};

/* One hosted node and its thread.  rc/err/stats written by the thread. */
struct run_node {
	struct run *run;
	uint32_t node;
	pthread_t th;
	int started;
	int rc;
	struct parsa_err err;
	struct ps_node_stats stats;
};

/* Fail the cluster with this node's error (named once). */
static void node_failed(struct run *run, uint32_t node, int rc,
			const struct parsa_err *err)
{
	char name[48];
	const char *msg = err->msg[0] ? err->msg : parsa_strerror(rc);

	ps_layout_name(&run->cl->layout, node, name, sizeof(name));
	if (strncmp(msg, name, strlen(name)) == 0)
		ps_transport_fail(run->tp, rc, "%s", msg);
	else
		ps_transport_fail(run->tp, rc, "%s: %s", name, msg);
}

static void *server_main(void *p)
{
	struct run_node *rn = p;
	struct run *run = rn->run;
	uint32_t idx;
	struct ps_server *s;

	pthread_setname_np(pthread_self(), "ps-server");
	ps_layout_role(&run->cl->layout, rn->node, &idx);
	s = ps_server_create(run->cl, run->tp, idx, &rn->err);
	rn->rc = s ? 0 : rn->err.code;
	if (!rn->rc && run->app->server_init)
		rn->rc = run->app->server_init(s, run->app->arg, &rn->err);
	if (!rn->rc)
		rn->rc = ps_server_serve(s, &rn->err);
	if (s)
		ps_server_stats(s, &rn->stats);
	if (rn->rc)
		node_failed(run, rn->node, rn->rc, &rn->err);
	ps_server_destroy(s);
	return NULL;
}

static void *worker_main(void *p)
{
	struct run_node *rn = p;
	struct run *run = rn->run;
	struct ps_node *w = ps_node_create(run->cl, run->tp, rn->node,
					   &rn->err);

	pthread_setname_np(pthread_self(), "ps-worker");
	rn->rc = w ? 0 : rn->err.code;
	if (!rn->rc && run->app->worker_main)
		rn->rc = run->app->worker_main(w, run->app->arg, &rn->err);
	if (!rn->rc)
		rn->rc = ps_worker_serve(w, run->app->task, run->app->arg,
					 &rn->err);
	if (w)
		ps_node_stats(w, &rn->stats);
	if (rn->rc)
		node_failed(run, rn->node, rn->rc, &rn->err);
	ps_node_destroy(w);
	return NULL;
}

/* The scheduler, in the calling thread; all stats land in res_nodes. */
static void sched_main(struct run *run, struct run_node *rn,
		       struct ps_node_stats *res_nodes)
{
	uint32_t i, n = ps_layout_nodes(&run->cl->layout);
	struct ps_node *s = ps_node_create(run->cl, run->tp, 0, &rn->err);

	rn->rc = s ? 0 : rn->err.code;
	if (!rn->rc && run->app->sched_main)
		rn->rc = run->app->sched_main(s, run->app->arg, &rn->err);
	if (!rn->rc)
		rn->rc = ps_sched_shutdown(s, &rn->err);
	if (!rn->rc)
		for (i = 0; i < n; i++)
			res_nodes[i] = *ps_sched_stats(s, i);
	if (s)
		ps_node_stats(s, &rn->stats);
	if (rn->rc)
		node_failed(run, 0, rn->rc, &rn->err);
	ps_node_destroy(s);
}

static int start_threads(struct run *run, struct run_node *rn, uint32_t n,
			 struct parsa_err *err)
{
	uint32_t i, idx;

	for (i = 1; i < n; i++) {
		void *(*fn)(void *);

		rn[i].run = run;
		rn[i].node = i;
		if (!ps_transport_is_local(run->tp, i))
			continue;
		fn = ps_layout_role(&run->cl->layout, i, &idx) ==
				     PS_ROLE_SERVER ? server_main : worker_main;
		if (pthread_create(&rn[i].th, NULL, fn, &rn[i])) {
			ps_transport_fail(run->tp, PARSA_ENOMEM,
					  "cannot start a thread for node %u",
					  i);
			return parsa_fail(err, PARSA_ENOMEM, "pthread_create");
		}
		rn[i].started = 1;
	}
	return 0;
}

static void fill_result(struct ps_result *res, struct run_node *rn,
			struct ps_node_stats *all, uint32_t n)
{
	uint32_t i;

	res->num_nodes = n;
	res->nodes = all;
	for (i = 0; i < n; i++)
		if (!all[i].valid && (rn[i].started || (i == 0 && rn[0].run)))
			all[i] = rn[i].stats;
}

int ps_run(struct ps_transport *tp, const struct ps_config *cfg,
	   const struct ps_app *app, struct ps_result *res,
	   struct parsa_err *err)
{
	static const struct ps_app none = { 0 };
	struct parsa_err local = { 0 };
	struct run run = { tp, NULL, app ? app : &none };
	struct ps_cluster *cl;
	uint32_t n = ps_layout_nodes(&tp->layout), i;
	struct run_node *rn;
	struct ps_node_stats *all;
	int rc;

	if (res)
		memset(res, 0, sizeof(*res));
	err = err ? err : &local;
	cl = ps_cluster_create(cfg, &tp->layout, err);
	rn = cl ? calloc(n, sizeof(*rn)) : NULL;
	all = rn ? calloc(n, sizeof(*all)) : NULL;
	if (!all) {
		free(rn);
		ps_cluster_destroy(cl);
		rc = cl ? parsa_fail(err, PARSA_ENOMEM, "run") : err->code;
		ps_transport_fail(tp, rc, "cannot start the nodes: %s",
				  err->msg);
		return rc;
	}
	run.cl = cl;
	rc = start_threads(&run, rn, n, err);
	if (!rc && ps_transport_is_local(tp, 0)) {
		rn[0].run = &run;
		sched_main(&run, &rn[0], all);
	}
	for (i = 1; i < n; i++)
		if (rn[i].started)
			pthread_join(rn[i].th, NULL);
	if (!rc)
		rc = ps_transport_failed(tp, err);
	if (!rc)
		rc = ps_transport_close(tp, cl->timeout_s, err);
	if (res)
		fill_result(res, rn, all, n);
	else
		free(all);
	free(rn);
	ps_cluster_destroy(cl);
	return rc;
}

int ps_run_threads(const struct ps_config *cfg, const struct ps_app *app,
		   struct ps_result *res, struct parsa_err *err)
{
	struct parsa_err local = { 0 };
	struct ps_layout l;
	struct ps_transport *tp;
	int rc;

	err = err ? err : &local;
	l.num_servers = cfg->num_servers ? cfg->num_servers : 1;
	l.num_workers = cfg->num_workers ? cfg->num_workers : 1;
	l.num_machines = cfg->num_machines ? cfg->num_machines
		       : l.num_servers > l.num_workers ? l.num_servers
						       : l.num_workers;
	tp = ps_transport_threads_create(&l, err);
	if (!tp)
		return err->code;
	rc = ps_run(tp, cfg, app, res, err);
	ps_transport_destroy(tp);
	return rc;
}
