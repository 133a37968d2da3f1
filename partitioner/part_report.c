/*
 * part_report: JSON report and human summary (see part_report.h).
 */
#include "part_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "part_opts.h"
#include "part_out.h"
#include "part_parallel.h"
#include "part_pool.h"
#include "part_stream.h"

/* A JSON number, or null when x is not finite (an improvement over a
 * placement with zero traffic is infinite). */
static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *metrics_json(const struct parsa_metrics *m)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}",
			 "M_max", m->M_max, "T_max", m->T_max, "T_sum",
			 m->T_sum, "RF", m->RF, "imbalance", m->imbalance,
			 "local_fraction", m->local_fraction, "M_sum",
			 m->M_sum, "V_used", (json_int_t)m->V_used, "U_max",
			 (json_int_t)m->U_max);
}

static json_t *u64_array(const uint64_t *x, uint32_t k)
{
	json_t *a = json_array();

	for (uint32_t i = 0; a && i < k; i++)
		if (json_array_append_new(a, json_integer((json_int_t)x[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *part_report_parts_json(const struct parsa_partfig *pf)
{
	if (!pf || !pf->k)
		return json_null();
	return json_pack("{s:o*, s:o*, s:o*, s:o*, s:o*, s:o*, s:o*}",
			 "U", u64_array(pf->U, pf->k),
			 "nnz", u64_array(pf->nnz, pf->k),
			 "M", u64_array(pf->M, pf->k),
			 "V", u64_array(pf->V, pf->k),
			 "T", u64_array(pf->T, pf->k),
			 "in", u64_array(pf->in, pf->k),
			 "out", u64_array(pf->out, pf->k));
}

/* Dataset counts: from the loaded dataset, or a streaming run's. */
struct ds_counts {
	uint64_t examples, features, nnz, empty_rows, duplicates;
	enum part_format format;
	enum part_graph_mode graph;
};

static struct ds_counts ds_counts(const struct part_report_info *in)
{
	const struct part_stream_result *s = in->stream;
	const struct part_dataset *ds = in->ds;

	if (s)
		return (struct ds_counts){s->n_rows, s->n_feat, s->nnz,
					  s->empty_rows, s->duplicates,
					  PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY};
	return (struct ds_counts){ds->g.n_rows, ds->g.n_cols,
				  parsa_graph_nnz(&ds->g), ds->empty_rows,
				  ds->duplicates, ds->format, ds->graph};
}

static json_t *params_json(const struct part_report_info *in)
{
	const struct part_run_opts *o = in->opts;
	struct ds_counts dc = ds_counts(in);
	struct part_opts_facts facts;
	json_t *p = json_object(), *opts;

	if (!p)
		return NULL;
	json_object_set_new(p, "format",
			    json_string(part_format_name(dc.format)));
	if (dc.format == PART_FMT_SNAP)
		json_object_set_new(p, "graph",
				    json_string(part_graph_mode_name(dc.graph)));
	if (!o)
		return p;
	facts.examples = dc.examples;
	facts.features = dc.features;
	facts.blocks = in->stream ? in->stream->blocks
		       : in->par && in->par->blocks ? in->par->blocks : 0;
	/* part_run sizes the automatic blocks to the dataset */
	facts.fit_bytes = in->ds && !in->stream && !facts.blocks
				  ? part_dataset_csr_bytes(in->ds) : 0;
	opts = part_opts_report(o, &facts);
	if (json_object_update(p, opts) == 0 && o->method == PART_METHOD_PARSA)
		/* set by the preset only, not an option */
		json_object_set_new(p, "refine_skip_ratio",
				    json_integer(o->refine_skip));
	json_decref(opts);
	return p;
}

/* A bound of the refinement as JSON: null for none. */
static json_t *bound_json(uint64_t b)
{
	return b == UINT64_MAX ? json_null() : json_integer((json_int_t)b);
}

/* The dataset's in-memory size (the CSR: row offsets and column ids,
 * and the feature id map) beside the peak, and each phase's peak when the
 * command measured them (null otherwise). */
static uint64_t csr_bytes(const struct part_dataset *ds)
{
	return part_dataset_csr_bytes(ds);
}

static json_t *memory_json(const struct part_report_info *in)
{
	static const char *const names[PART_MEM_PHASES] = {
		"load", "partition_u", "refine", "partition_v", "metrics"
	};
	uint64_t csr = csr_bytes(in->ds);
	json_t *ph = json_null();

	if (in->mem && in->mem->ok) {
		ph = json_object();
		for (int i = 0; ph && i < PART_MEM_PHASES; i++)
			if (in->mem->kb[i] > 0)
				json_object_set_new(ph, names[i],
						    json_integer(in->mem->kb[i]));
	}
	return json_pack("{s:I, s:f, s:o, s:s}", "csr_bytes", (json_int_t)csr,
			 "peak_per_csr",
			 csr ? (double)in->peak_rss_kb * 1024.0 / (double)csr
			     : 0.0,
			 "phases_peak_rss_kb", ph, "id_maps",
			 in->ds->map ? "cache" : in->ds->ids_map ? "file"
							       : "heap");
}

/* What Parsa's refinement phases did (part_run.h); bound_M_max/T_max:
 * what the last round kept them under (null: no bound); bound_T_sum: the
 * objective tmax search's (--max-tsum; null: none); caps_met: false when
 * a --max-memory/--max-traffic below the step-1 result (or a --max-tsum
 * below the search's start) was held at it. */
static json_t *refine_json(const struct part_result *r)
{
	json_t *j = json_pack("{s:I, s:I, s:i, s:I, s:I, s:I, s:i, s:b, s:b, s:I, "
			 "s:I, s:o, s:o, s:o, s:b}",
			 "mmax_moves", (json_int_t)r->refine_stats.moves,
			 "tsum_moves", (json_int_t)r->fm_stats.moves,
			 "tsum_passes", (int)r->fm_stats.passes,
			 "conn_before", (json_int_t)r->fm_stats.conn_before,
			 "conn_after", (json_int_t)r->fm_stats.conn_after,
			 "restream_kept", (json_int_t)r->restream_kept,
			 "guard_rejects", r->guard_reverted,
			 "multilevel_kept", r->scratch_kept,
			 "time_limited", r->time_limited,
			 "step1_T_max", (json_int_t)r->step1_tmax,
			 "step1_M_max", (json_int_t)r->step1_mmax,
			 "bound_T_max", bound_json(r->bound_tmax),
			 "bound_M_max", bound_json(r->bound_mmax),
			 "bound_T_sum", bound_json(r->bound_tsum),
			 "caps_met", r->step1_tmax ? r->caps_met : 1);

	/* objective tmax: what its phase did (parsa_tmax.h) */
	if (j && r->tmax_ran)
		json_object_set_new(
			j, "tmax",
			json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:b, s:f}",
				  "T_max_before", (json_int_t)r->tmax_stats.tmax_before,
				  "T_max_after", (json_int_t)r->tmax_stats.tmax_after,
				  "T_sum_before", (json_int_t)r->tmax_stats.tsum_before,
				  "T_sum_after", (json_int_t)r->tmax_stats.tsum_after,
				  "u_moves", (json_int_t)r->tmax_stats.u_moves,
				  "v_moves", (json_int_t)r->tmax_stats.v_moves,
				  "v_trades", (json_int_t)r->tmax_stats.v_trades,
				  "pull_moves", (json_int_t)r->tmax_stats.pull_moves,
				  "swaps", (json_int_t)r->tmax_stats.swaps,
				  "group_moves", (json_int_t)r->tmax_stats.group_moves,
				  "polish_moves", (json_int_t)r->tmax_stats.polish_moves,
				  "rounds", (int)r->tmax_stats.rounds,
				  "kicks", (int)r->tmax_stats.kicks,
				  "kicks_kept", (int)r->tmax_stats.kicks_kept,
				  "stopped", r->tmax_stats.stopped,
				  "seconds", r->t_tmax));
	return j;
}

/* Algorithm 13's work: examples placed, bits added to S, cost-list
 * decrements (with several workers, summed over them). */
static json_t *partu_json(const struct part_result *r)
{
	json_t *j = json_pack("{s:I, s:I, s:I}", "assigned",
			      (json_int_t)r->pu_stats.assigned, "new_bits",
			      (json_int_t)r->pu_stats.new_bits, "decrements",
			      (json_int_t)r->pu_stats.decrements);
	const struct part_lanes_stats *ls = &r->lanes_stats;

	/* lanes on threads (part_lanes.h): rounds and CPU work and span */
	if (j && ls->rounds)
		json_object_set_new(j, "lanes",
				    json_pack("{s:i, s:i, s:i, s:f, s:f}",
					      "lanes", (int)ls->lanes,
					      "threads", (int)ls->threads,
					      "rounds", (int)ls->rounds,
					      "cpu_work_seconds", ls->cpu_work,
					      "cpu_span_seconds", ls->cpu_span));
	return j;
}

static json_t *seconds_json(const struct part_report_info *in)
{
	const struct part_result *r = in->res;
	double part = r->t_partition_u + r->t_refine + r->t_partition_v;
	uint64_t nnz = ds_counts(in).nnz;

	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "load",
			 in->t_load, "partition", part, "partition_u",
			 r->t_partition_u, "refine", r->t_refine,
			 "partition_v", r->t_partition_v,
			 "metrics", r->t_metrics, "total", in->t_total,
			 "ns_per_nnz", nnz ? part * 1e9 / (double)nnz : 0.0);
}

/* Traffic of a parallel run: what every node sent (each message once). */
static json_t *traffic_json(const struct ps_counters *c)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "bytes_local",
			 (json_int_t)c->bytes_sent[PS_LOCAL], "bytes_remote",
			 (json_int_t)c->bytes_sent[PS_REMOTE],
			 "messages_local", (json_int_t)c->msgs_sent[PS_LOCAL],
			 "messages_remote",
			 (json_int_t)c->msgs_sent[PS_REMOTE]);
}

/* The staleness histogram up to its last non-empty bucket. */
static json_t *stale_json(const struct part_par_info *p)
{
	json_t *a = json_array();
	int last = -1;

	for (int b = 0; b < PS_STALE_BUCKETS; b++)
		if (p->stale_hist[b])
			last = b;
	for (int b = 0; a && b <= last; b++)
		json_array_append_new(a, json_integer((json_int_t)p->stale_hist[b]));
	return a;
}

/* ssp/bsp: keys read with staleness s (clocks missing), all workers */
static json_t *read_stale_json(const struct part_par_info *p)
{
	json_t *a = json_array();
	int last = -1;

	for (int b = 0; b < PS_STALE_BUCKETS; b++)
		if (p->read_hist[b])
			last = b;
	for (int b = 0; a && b <= last; b++)
		json_array_append_new(a, json_integer((json_int_t)p->read_hist[b]));
	return a;
}

static json_t *parallel_json(const struct part_par_info *p)
{
	json_t *j = json_pack("{s:s, s:i, s:i, s:i, s:s, s:I, s:f, s:I, "
			      "s:I, s:i, s:f, s:f, s:f, s:f}",
			      "transport", p->transport, "workers",
			      (int)p->workers, "servers", (int)p->servers,
			      "ranks", (int)p->ranks, "init", p->init,
			      "init_blocks", (json_int_t)p->init_blocks,
			      "init_sample", p->init_sample, "init_rows",
			      (json_int_t)p->init_rows, "iterations",
			      (json_int_t)p->iters, "stale_max",
			      (int)p->stale_max, "tau_wait_seconds",
			      p->tau_wait_s, "wait_seconds", p->wait_s,
			      "init_seconds", p->t_init, "workers_seconds",
			      p->t_workers);

	if (!j)
		return NULL;
	json_object_set_new(j, "tau", p->tau < 0 ? json_string("inf")
						 : json_integer(p->tau));
	json_object_set_new(j, "consistency", json_string(p->consistency));
	json_object_set_new(j, "read_staleness", read_stale_json(p));
	json_object_set_new(j, "syncs", json_integer((json_int_t)p->syncs));
	json_object_set_new(j, "traffic", traffic_json(&p->traffic));
	json_object_set_new(j, "staleness", stale_json(p));
	return j;
}

/* A streaming run: blocks, the memory bound and the workers' peak. */
static json_t *stream_json(const struct part_report_info *in)
{
	const struct part_stream_result *s = in->stream;

	return json_pack("{s:I, s:I, s:I, s:f, s:I}", "block_rows",
			 (json_int_t)s->block_rows, "blocks",
			 (json_int_t)s->blocks, "mem_limit_bytes",
			 (json_int_t)in->mem_limit, "row_bytes_estimate",
			 s->row_bytes, "worker_peak_rss_kb",
			 (json_int_t)s->worker_peak_rss_kb);
}

json_t *part_report_json(const struct part_report_info *in)
{
	struct ds_counts dc = ds_counts(in);
	const struct part_result *r = in->res;
	json_t *j;

	j = json_pack("{s:{s:s, s:I, s:I, s:I, s:I, s:I}, s:i, s:s}",
		      "dataset", "path", in->data_path ? in->data_path : "",
		      "examples", (json_int_t)dc.examples, "features",
		      (json_int_t)dc.features, "nonzeros", (json_int_t)dc.nnz,
		      "empty_rows", (json_int_t)dc.empty_rows, "duplicates",
		      (json_int_t)dc.duplicates, "k", (int)r->k, "method",
		      in->method);
	if (!j)
		return NULL;
	json_object_set_new(j, "params", params_json(in));
	json_object_set_new(j, "metrics", metrics_json(&r->m));
	json_object_set_new(j, "random", metrics_json(&r->rnd));
	json_object_set_new(
		j, "improvement",
		json_pack("{s:o, s:o, s:o}", "M_max",
			  num(parsa_improvement(r->rnd.M_max, r->m.M_max)),
			  "T_max",
			  num(parsa_improvement(r->rnd.T_max, r->m.T_max)),
			  "T_sum",
			  num(parsa_improvement(r->rnd.T_sum, r->m.T_sum))));
	if (r->parts.k) {
		json_object_set_new(j, "parts", part_report_parts_json(&r->parts));
		json_object_set_new(j, "random_parts",
				    part_report_parts_json(&r->rnd_parts));
	}
	if (in->opts && in->opts->method == PART_METHOD_PARSA)
	{
		json_object_set_new(j, "partition_u", partu_json(r));
		json_object_set_new(j, "refine", refine_json(r));
	}
	json_object_set_new(j, "seconds", seconds_json(in));
	json_object_set_new(j, "peak_rss_kb", json_integer(in->peak_rss_kb));
	if (in->ds)
		json_object_set_new(j, "memory", memory_json(in));
	if (in->par)
		json_object_set_new(j, "parallel", parallel_json(in->par));
	if (in->stream)
		json_object_set_new(j, "stream", stream_json(in));
	return j;
}

int part_report_write(const char *path, const json_t *j,
		      struct parsa_err *err)
{
	struct part_out o;
	int rc = part_out_open(&o, path, err);

	if (rc)
		return rc;
	if (json_dumpf(j, o.f, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0) {
		part_out_abort(&o);
		return parsa_fail(err, PARSA_EIO, "%s: cannot write: %s", path,
				  strerror(errno));
	}
	return part_out_commit(&o, err);
}

/*
 * "T_sum 37.7% lower, 1.61x less": ours against random as users read it
 * (the reduction relative to random and the ratio), into buf.
 */
static void vs_random(char *buf, size_t len, double ours, double rnd)
{
	if (ours == rnd)
		snprintf(buf, len, "same");
	else if (ours < rnd && ours > 0)
		snprintf(buf, len, "%.1f%% lower, %.2fx less",
			 (rnd - ours) / rnd * 100.0, rnd / ours);
	else if (ours < rnd)
		snprintf(buf, len, "%.1f%% lower", 100.0);
	else if (rnd > 0)
		snprintf(buf, len, "%.1f%% higher, %.2fx more",
			 (ours - rnd) / rnd * 100.0, ours / rnd);
	else
		snprintf(buf, len, "higher");
}

static void print_row(FILE *f, const char *name, double ours, double rnd,
		      int integer)
{
	char vs[64];

	if (integer)
		fprintf(f, "  %-15s %14.0f %14.1f", name, ours, rnd);
	else
		fprintf(f, "  %-15s %14.3f %14.3f", name, ours, rnd);
	if (integer) {
		vs_random(vs, sizeof(vs), ours, rnd);
		fprintf(f, "  %-26s %+11.1f%%", vs,
			parsa_improvement(rnd, ours));
	}
	fputc('\n', f);
}

static void print_parallel(FILE *f, const struct part_par_info *p)
{
	const struct ps_counters *c = &p->traffic;
	char tau[16];

	if (p->tau < 0)
		snprintf(tau, sizeof(tau), "inf");
	else
		snprintf(tau, sizeof(tau), "%d", p->tau);
	fprintf(f, "parallel: %s, %u workers, %u servers, %u rank%s, tau %s, "
		   "init %s (%llu examples, %.3fs); workers %.3fs, tau wait "
		   "%.3fs; traffic local %.1f MiB, remote %.1f MiB\n",
		p->transport, p->workers, p->servers, p->ranks,
		p->ranks == 1 ? "" : "s", tau, p->init,
		(unsigned long long)p->init_rows, p->t_init, p->t_workers,
		p->tau_wait_s,
		(double)c->bytes_sent[PS_LOCAL] / 1048576.0,
		(double)c->bytes_sent[PS_REMOTE] / 1048576.0);
}

static const char *const part_cols[7] = {"U", "nnz", "M", "V", "T", "in", "out"};

static const uint64_t *part_col(const struct parsa_partfig *pf, int c)
{
	const uint64_t *const v[7] = {pf->U, pf->nnz, pf->M, pf->V, pf->T,
				      pf->in, pf->out};

	return v[c];
}

/* "  max" and "  mean" rows of pf under the label. */
static void print_part_stats(FILE *f, const char *label,
			     const struct parsa_partfig *pf, int w)
{
	fprintf(f, "%-13s", label);
	for (int c = 0; c < 7; c++) {
		uint64_t mx = 0;

		for (uint32_t i = 0; i < pf->k; i++)
			mx = part_col(pf, c)[i] > mx ? part_col(pf, c)[i] : mx;
		fprintf(f, " %*llu", w, (unsigned long long)mx);
	}
	fprintf(f, "   max\n%-13s", "");
	for (int c = 0; c < 7; c++) {
		double sum = 0;

		for (uint32_t i = 0; i < pf->k; i++)
			sum += (double)part_col(pf, c)[i];
		fprintf(f, " %*.1f", w, sum / pf->k);
	}
	fprintf(f, "   mean\n");
}

void part_report_print_parts(FILE *f, const struct part_result *r)
{
	const struct parsa_partfig *pf = &r->parts;
	uint64_t big = 0;
	int w = 7;

	if (!pf->k)
		return;
	for (uint32_t i = 0; i < pf->k; i++)
		big = pf->nnz[i] > big ? pf->nnz[i] : big;
	for (uint64_t x = big; x >= 10000; x /= 10)
		w++;
	fprintf(f, "per part: U examples, nnz their nonzeros, M parameters used, "
		   "V owned, T = in (pulled) + out (served)\n%-13s", "  part");
	for (int c = 0; c < 7; c++)
		fprintf(f, " %*s", w, part_cols[c]);
	fputc('\n', f);
	for (uint32_t i = 0; i < pf->k; i++) {
		fprintf(f, "  %-11u", i);
		for (int c = 0; c < 7; c++)
			fprintf(f, " %*llu", w, (unsigned long long)part_col(pf, c)[i]);
		fputc('\n', f);
	}
	print_part_stats(f, "  all parts", pf, w);
	if (r->rnd_parts.k)
		print_part_stats(f, "  random", &r->rnd_parts, w);
}

void part_report_print(FILE *f, const struct part_report_info *in)
{
	struct ds_counts dc = ds_counts(in);
	const struct part_result *r = in->res;
	uint64_t nnz = dc.nnz;
	double part = r->t_partition_u + r->t_refine + r->t_partition_v;

	fprintf(f, "%s: %llu examples, %llu features, %llu nonzeros (%s)\n",
		in->data_path ? in->data_path : "dataset",
		(unsigned long long)dc.examples,
		(unsigned long long)dc.features, (unsigned long long)nnz,
		part_format_name(dc.format));
	fprintf(f, "method %s, k=%u\n", in->method, r->k);
	fprintf(f, "  %-15s %14s %14s  %-26s %12s\n", "metric", in->method,
		"random", "vs random", "improvement");
	print_row(f, "M_max", r->m.M_max, r->rnd.M_max, 1);
	print_row(f, "T_max", r->m.T_max, r->rnd.T_max, 1);
	print_row(f, "T_sum", r->m.T_sum, r->rnd.T_sum, 1);
	print_row(f, "RF", r->m.RF, r->rnd.RF, 0);
	print_row(f, "imbalance", r->m.imbalance, r->rnd.imbalance, 0);
	print_row(f, "local_fraction", r->m.local_fraction,
		  r->rnd.local_fraction, 0);
	fprintf(f, "  (improvement: the thesis's figure, (random - %s) / %s)\n",
		in->method, in->method);
	fprintf(f, "time: load %.3fs, partition %.3fs (U %.3fs, refine %.3fs, "
		   "V %.3fs, %.1f ns/nnz), total %.3fs; peak memory %.1f MiB\n",
		in->t_load, part, r->t_partition_u, r->t_refine,
		r->t_partition_v,
		nnz ? part * 1e9 / (double)nnz : 0.0, in->t_total,
		(double)in->peak_rss_kb / 1024.0);
	if (in->ds && nnz)
		fprintf(f, "memory: the dataset %.1f MiB in memory, peak %.2fx "
			   "that\n", (double)csr_bytes(in->ds) / 1048576.0,
			(double)in->peak_rss_kb * 1024.0 /
				(double)csr_bytes(in->ds));
	if (r->time_limited)
		fprintf(f, "refinement stopped at the time limit (%.3gs)\n",
			in->opts ? in->opts->time_limit : 0.0);
	if (in->par)
		print_parallel(f, in->par);
	if (in->stream)
		fprintf(f, "stream: %llu blocks of %llu examples, worker peak "
			   "memory %.1f MiB\n",
			(unsigned long long)in->stream->blocks,
			(unsigned long long)in->stream->block_rows,
			(double)in->stream->worker_peak_rss_kb / 1024.0);
	if (in->per_part)
		part_report_print_parts(f, r);
}
