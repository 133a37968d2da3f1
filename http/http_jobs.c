/*
 * http_jobs: job registry, queue and worker pool (see http_jobs.h).
 *
 * Invariants (under J->mu): a job's state only moves forward as in the
 * header; a job is in the queue only while queued; J->running counts the
 * jobs a worker is executing; job->place and job->report are set before
 * the state becomes succeeded and never change afterwards.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base_time.h"
#include "part_parallel.h"
#include "part_pool.h"
#include "part_progress.h"
#include "part_report.h"
#include "http_jobs.h"
#include "http_store.h"

const char *const http_job_state_names[HTTP_JOB_NSTATES] = {
	"queued", "running", "succeeded", "failed", "cancelled",
};

const char *const http_job_phase_names[HTTP_PHASE_COUNT] = {
	"queued", "loading", "partition_u", "refine", "partition_v",
	"metrics", "saving", "done",
};

struct http_job {
	char id[HTTP_ID_MAX];
	struct http_job_spec spec;
	enum http_job_state state;
	atomic_int cancel;          /* set by cancel/interrupt, read by part_run */
	int requeue;                /* interrupted by shutdown: store as queued */
	atomic_uint progress_ppm;   /* 0..1000000 */
	atomic_int phase;           /* enum http_job_phase */
	double t_start;             /* running: monotonic start (under mu) */
	double elapsed;             /* ended: seconds it ran; -1 unknown */
	char *error;                /* failed: the message */
	char *report;               /* succeeded: the report JSON text */
	struct http_place *place;   /* succeeded: NULL until loaded */
	char created[32], started[32], finished[32];
	pthread_mutex_t pmu;        /* orders writes of job.json */
	struct http_job *qnext;     /* queue link */
};

struct http_jobs {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct http_jobs_opts o;
	char dir[4096];             /* STATE/jobs */
	struct http_job **v;        /* v[n-1] = job "jn" */
	uint64_t n, cap;
	struct http_job *qhead, *qtail;
	unsigned running;
	int stopping;
	pthread_t *threads;
	unsigned nthreads;
};

/* ---- spec ---- */

static int bad(char *field, const char *name, struct parsa_err *err,
	       const char *what)
{
	snprintf(field, 64, "%s", name);
	return parsa_fail(err, PARSA_EINVAL, "'%s' %s", name, what);
}

int http_job_spec_parse(json_t *body, struct http_job_spec *s, char *field,
			struct parsa_err *err)
{
	static const char *const own[] = {"dataset", NULL};
	const struct part_opts *o = &s->o;
	json_t *v;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = part_opts_from_json(body, own, &s->o, field, err);
	if (rc)
		return rc;
	v = json_object_get(body, "dataset");
	if (!v)
		return bad(field, "dataset", err, "is required");
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) >= HTTP_ID_MAX)
		return bad(field, "dataset", err, "must be a dataset id string");
	snprintf(s->dataset, sizeof(s->dataset), "%s", json_string_value(v));
	if (!part_opts_given(o, "k"))
		return bad(field, "k", err, "is required");
	if (o->run.pu.init_blocks &&
	    (!o->run.pu.blocks || o->run.pu.init_blocks > o->run.pu.blocks))
		return bad(field, "init_blocks", err,
			   "needs 'blocks' and cannot exceed it");
	if (o->parallel && o->run.method != PART_METHOD_PARSA)
		return bad(field, "workers", err,
			   "(and tau, syncs) need method parsa");
	if (o->run.max_tsum.v != 0 && o->run.objective != PART_OBJ_TMAX)
		return bad(field, "max_tsum", err,
			   "applies to objective tmax only");
	return 0;
}

/* ---- persistence ---- */

/* The job's params: dataset and the options (part_opts_to_json). */
static json_t *spec_json(const struct http_job_spec *s)
{
	json_t *j = json_pack("{s:s}", "dataset", s->dataset);
	json_t *o = part_opts_to_json(&s->o);

	if (!j || !o || json_object_update(j, o)) {
		json_decref(j);
		j = NULL;
	}
	json_decref(o);
	return j;
}

/* The job's JSON; under J->mu. */
static json_t *job_json_locked(const struct http_job *job, int with_report)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:f, s:o, s:s}",
			      "id", job->id, "dataset", job->spec.dataset,
			      "state", http_job_state_names[job->state],
			      "progress", atomic_load(&job->progress_ppm) / 1e6,
			      "params", spec_json(&job->spec),
			      "created", job->created);

	if (!j)
		return NULL;
	if (job->started[0])
		json_object_set_new(j, "started", json_string(job->started));
	if (job->finished[0])
		json_object_set_new(j, "finished", json_string(job->finished));
	if (job->error)
		json_object_set_new(j, "error", json_string(job->error));
	json_object_set_new(j, "phase", json_string(
		http_job_phase_names[atomic_load(&job->phase)]));
	if (job->state == HTTP_JOB_RUNNING)
		json_object_set_new(j, "elapsed", json_real(base_now() - job->t_start));
	else if (job->state != HTTP_JOB_QUEUED && job->elapsed >= 0)
		json_object_set_new(j, "elapsed", json_real(job->elapsed));
	if (with_report && job->report) {
		json_t *r = json_loads(job->report, 0, NULL);

		if (r)
			json_object_set_new(j, "report", r);
	}
	return j;
}

/* Write job.json with the job's state, or with state `as` (>= 0): a
 * state is stored before clients can see it, so none sees a state that a
 * kill or a full disk would take back. */
static int persist_as(struct http_jobs *J, struct http_job *job, int as,
		      struct parsa_err *err)
{
	char path[4400];
	enum http_job_state saved;
	json_t *j;
	int rc;

	snprintf(path, sizeof(path), "%s/%s/job.json", J->dir, job->id);
	pthread_mutex_lock(&job->pmu);
	pthread_mutex_lock(&J->mu);
	saved = job->state; /* as it will be shown: no one sees it here */
	if (as >= 0)
		job->state = (enum http_job_state)as;
	j = job_json_locked(job, 0);
	job->state = saved;
	pthread_mutex_unlock(&J->mu);
	rc = j ? http_store_put_json(path, j, err)
	       : parsa_fail(err, PARSA_ENOMEM, "out of memory");
	pthread_mutex_unlock(&job->pmu);
	json_decref(j);
	return rc;
}

static int persist(struct http_jobs *J, struct http_job *job,
		   struct parsa_err *err)
{
	return persist_as(J, job, -1, err);
}

static void persist_or_warn(struct http_jobs *J, struct http_job *job)
{
	struct parsa_err err;

	parsa_err_clear(&err);
	if (persist(J, job, &err))
		fprintf(stderr, "parsa serve: job %s: %s\n", job->id, err.msg);
}

static struct http_job *job_new(const char *id)
{
	struct http_job *job = calloc(1, sizeof(*job));

	if (!job)
		return NULL;
	snprintf(job->id, sizeof(job->id), "%s", id);
	job->elapsed = -1;
	pthread_mutex_init(&job->pmu, NULL);
	return job;
}

static void job_free(struct http_job *job)
{
	if (!job)
		return;
	free(job->error);
	free(job->report);
	http_place_free(job->place);
	pthread_mutex_destroy(&job->pmu);
	free(job);
}

/* Make slot i (1-based) exist, and ids up to i taken. */
static int reserve_id(struct http_jobs *J, uint64_t i, struct parsa_err *err)
{
	if (i > J->cap) {
		uint64_t cap = J->cap ? J->cap : 64;
		struct http_job **v;

		while (cap < i)
			cap *= 2;
		v = realloc(J->v, cap * sizeof(*v));
		if (!v)
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		memset(v + J->cap, 0, (cap - J->cap) * sizeof(*v));
		J->v = v;
		J->cap = cap;
	}
	if (i > J->n)
		J->n = i;
	return 0;
}

/* Put job at its slot (under mu or before the workers start). */
static int put_job(struct http_jobs *J, struct http_job *job,
		   struct parsa_err *err)
{
	uint64_t i = http_id_number(job->id, 'j');
	int rc = reserve_id(J, i, err);

	if (rc == 0)
		J->v[i - 1] = job;
	return rc;
}

static void remove_job_dir(const char *dir);

static void enqueue_locked(struct http_jobs *J, struct http_job *job)
{
	job->qnext = NULL;
	if (J->qtail)
		J->qtail->qnext = job;
	else
		J->qhead = job;
	J->qtail = job;
	pthread_cond_signal(&J->cv);
}

static void copy_str(char *dst, json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));

	snprintf(dst, 32, "%s", s ? s : "");
}

/* A job from its job.json; NULL if unusable. */
static struct http_job *job_from_json(struct http_jobs *J, const char *id,
				      json_t *j)
{
	struct http_job *job = job_new(id);
	const char *state = json_string_value(json_object_get(j, "state"));
	const char *error = json_string_value(json_object_get(j, "error"));
	char field[64], path[4400];
	struct parsa_err err;
	size_t len;

	parsa_err_clear(&err);
	if (!job || !state ||
	    http_job_spec_parse(json_object_get(j, "params"), &job->spec,
				field, &err)) {
		job_free(job);
		return NULL;
	}
	for (int s = 0; s < HTTP_JOB_NSTATES; s++)
		if (strcmp(state, http_job_state_names[s]) == 0)
			job->state = (enum http_job_state)s;
	copy_str(job->created, j, "created");
	copy_str(job->started, j, "started");
	copy_str(job->finished, j, "finished");
	if (json_is_number(json_object_get(j, "elapsed")))
		job->elapsed = json_number_value(json_object_get(j, "elapsed"));
	if (job->state != HTTP_JOB_QUEUED && job->state != HTTP_JOB_RUNNING)
		atomic_store(&job->phase, HTTP_PHASE_DONE);
	job->error = error ? strdup(error) : NULL;
	if (job->state == HTTP_JOB_SUCCEEDED) {
		snprintf(path, sizeof(path), "%s/%s/report.json", J->dir, id);
		if (http_store_slurp(path, &job->report, &len, &err)) {
			job_free(job);
			return NULL;
		}
		atomic_store(&job->progress_ppm, 1000000);
	}
	return job;
}

/* After a crash: running -> failed; queued -> queue again. */
static void recover(struct http_jobs *J, struct http_job *job)
{
	if (job->state == HTTP_JOB_RUNNING) {
		job->state = HTTP_JOB_FAILED;
		free(job->error);
		job->error = strdup("interrupted: the server stopped while this "
				    "job was running; submit it again");
		http_now_iso(job->finished);
		job->elapsed = -1;
		atomic_store(&job->phase, HTTP_PHASE_DONE);
		persist_or_warn(J, job);
	} else if (job->state == HTTP_JOB_QUEUED) {
		job->started[0] = '\0';
		enqueue_locked(J, job);
	}
}

/* Start-up recovery: the temporary files of writes a kill interrupted
 * (placement, report, job.json) go. */
static void sweep_job_dir(const char *dir)
{
	struct parsa_err err;
	unsigned files = 0;
	uint64_t bytes = 0;

	parsa_err_clear(&err);
	if (http_store_sweep(dir, &files, &bytes, &err) == 0 && files)
		fprintf(stderr, "parsa serve: recovery: removed %u unfinished "
			"temporary file%s (%llu bytes) in %s\n", files,
			files == 1 ? "" : "s", (unsigned long long)bytes, dir);
}

static int load_all(struct http_jobs *J, struct parsa_err *err)
{
	DIR *dir = opendir(J->dir);
	struct dirent *e;
	int rc = 0;

	if (!dir)
		return parsa_fail(err, PARSA_EIO, "%s: cannot open", J->dir);
	sweep_job_dir(J->dir); /* last-id's temporary files */
	while (rc == 0 && (e = readdir(dir))) {
		char path[4400];
		struct parsa_err e2;
		struct http_job *job;
		json_t *j;

		if (http_id_number(e->d_name, 'j') == 0 ||
		    strlen(e->d_name) >= HTTP_ID_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%s", J->dir, e->d_name);
		parsa_err_clear(&e2);
		sweep_job_dir(path);
		snprintf(path, sizeof(path), "%s/%s/job.json", J->dir, e->d_name);
		if (access(path, F_OK) != 0 && errno == ENOENT) {
			/* never acknowledged, or half deleted: no job */
			snprintf(path, sizeof(path), "%s/%s", J->dir, e->d_name);
			remove_job_dir(path);
			fprintf(stderr, "parsa serve: recovery: removed %s (no "
				"job.json: a job never submitted, or deleted "
				"midway)\n", path);
			rc = reserve_id(J, http_id_number(e->d_name, 'j'), err);
			continue;
		}
		parsa_err_clear(&e2);
		j = http_store_get_json(path, &e2);
		job = j ? job_from_json(J, e->d_name, j) : NULL;
		json_decref(j);
		if (!job) {
			fprintf(stderr, "parsa serve: skipping job %s: %s\n",
				e->d_name, e2.msg[0] ? e2.msg : "unreadable");
			rc = reserve_id(J, http_id_number(e->d_name, 'j'), err);
			continue;
		}
		rc = put_job(J, job, err);
		if (rc)
			job_free(job);
	}
	closedir(dir);
	for (uint64_t i = 0; rc == 0 && i < J->n; i++)
		if (J->v[i])
			recover(J, J->v[i]);
	return rc;
}

/* ---- running ---- */

/* job's progress: done/total of the span [lo, lo + span] (ppm). */
static void set_progress(void *arg, unsigned lo, unsigned span, uint64_t done,
			 uint64_t total)
{
	struct http_job *job = arg;
	double f = total ? (double)done / (double)total : 0;

	atomic_store(&job->progress_ppm, lo + (unsigned)(span * f));
}

/* Algorithm 13's blocks: 0.05 to 0.9. */
static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	set_progress(arg, 50000, 850000, done, total);
}

/* The refinement's steps: 0.9 to 0.99 (1 once the job has succeeded). */
static void on_refine_progress(void *arg, uint64_t done, uint64_t total)
{
	struct http_job *job = arg;

	atomic_store(&job->phase, HTTP_PHASE_REFINE);
	set_progress(arg, 900000, 90000, done, total);
}

/* The metrics' tasks (the placement's, each random trial's): 0.99 to
 * 0.999. */
static void on_metrics_progress(void *arg, uint64_t done, uint64_t total)
{
	set_progress(arg, 990000, 9000, done, total);
}

/* part_run's phases (part_run.h). */
static void on_phase(void *arg, enum part_phase p)
{
	static const enum http_job_phase map[] = {
		[PART_PHASE_U] = HTTP_PHASE_PARTITION_U,
		[PART_PHASE_REFINE] = HTTP_PHASE_REFINE,
		[PART_PHASE_V] = HTTP_PHASE_PARTITION_V,
		[PART_PHASE_METRICS] = HTTP_PHASE_METRICS,
	};
	struct http_job *job = arg;

	if ((unsigned)p < sizeof(map) / sizeof(*map))
		atomic_store(&job->phase, map[p]);
	if (p != PART_PHASE_U && atomic_load(&job->progress_ppm) < 900000)
		atomic_store(&job->progress_ppm, 900000);
}

/* Threads of a job without its own: --job-threads, else the CPUs shared
 * by the jobs that may run at once (the placement is the same for any). */
static uint32_t job_threads(const struct http_jobs *J)
{
	uint32_t n = J->o.workers ? J->o.workers : 1;

	if (J->o.threads)
		return J->o.threads;
	n = part_pool_cpus() / n;
	return n ? n : 1;
}

static void run_opts(const struct http_jobs *J, const struct http_job *job,
		     struct part_run_opts *o)
{
	*o = job->spec.o.run;
	o->pu.progress = on_progress;
	o->pu.progress_arg = (void *)job;
	o->pu.cancel = &job->cancel;
	o->refine_progress = on_refine_progress;
	o->refine_progress_arg = (void *)job;
	o->phase = on_phase;
	o->phase_arg = (void *)job;
	o->metrics_progress = on_metrics_progress;
	o->metrics_progress_arg = (void *)job;
	if (!part_opts_given(&job->spec.o, "threads"))
		o->threads = job_threads(J);
	if (J->o.time_limit > 0 &&
	    (o->time_limit <= 0 || o->time_limit > J->o.time_limit))
		o->time_limit = J->o.time_limit;
}

/* The report JSON text of a finished run. */
static char *report_text(const struct http_job *job,
			 const struct part_dataset *ds,
			 const struct part_run_opts *o,
			 const struct part_result *r,
			 const struct part_par_info *pi, double t_load,
			 double t_total, const char *name)
{
	struct part_report_info info = {
		.data_path = name, .ds = ds, .opts = o, .res = r,
		.method = part_method_name(o->method), .t_load = t_load,
		.t_total = t_total, .peak_rss_kb = part_peak_rss_kb(),
		.par = job->spec.o.parallel ? pi : NULL,
	};
	json_t *j = part_report_json(&info);
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;

	json_decref(j);
	return s;
}

/* Save report and placement; on success job->report/place are set. */
static int store_result(struct http_jobs *J, struct http_job *job,
			const struct part_dataset *ds, struct part_result *r,
			char *report, struct parsa_err *err)
{
	char path[4400];
	struct http_place *pl;
	int rc;

	rc = http_place_build(&pl, ds, r->k, r->part, r->owner, err);
	r->part = NULL;
	r->owner = NULL;
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s/placement", J->dir, job->id);
	rc = http_place_save(pl, path, err);
	snprintf(path, sizeof(path), "%s/%s/report.json", J->dir, job->id);
	if (rc == 0)
		rc = http_store_put(path, report, strlen(report), err);
	if (rc) {
		http_place_free(pl);
		return rc;
	}
	pthread_mutex_lock(&J->mu);
	job->place = pl;
	job->report = report;
	pthread_mutex_unlock(&J->mu);
	return 0;
}

static int execute(struct http_jobs *J, struct http_job *job,
		   struct parsa_err *err)
{
	const struct part_dataset *ds = NULL;
	const struct http_dataset *d = http_datasets_find(J->o.data, job->spec.dataset);
	struct part_run_opts o;
	struct part_result r;
	struct part_par_info pi;
	double t0 = part_now(), t_load = 0, t1;
	char *rep = NULL;
	int rc, is_root = 1;

	part_result_init(&r);
	atomic_store(&job->phase, HTTP_PHASE_LOADING);
	rc = http_datasets_acquire(J->o.data, job->spec.dataset, &ds, &t_load, err);
	if (rc)
		return rc;
	atomic_store(&job->progress_ppm, 50000);
	atomic_store(&job->phase, HTTP_PHASE_PARTITION_U);
	run_opts(J, job, &o);
	t1 = part_now();
	if (job->spec.o.parallel) {
		struct part_par_opts po = job->spec.o.par;

		rc = part_par_run(ds, &o, &po, &r, &pi, &is_root, NULL, err);
	} else {
		rc = part_run(ds, &o, &r, err);
	}
	if (rc == 0 && job->cancel)
		rc = parsa_fail(err, PARSA_ECANCEL, "cancelled");
	if (rc == 0) {
		atomic_store(&job->phase, HTTP_PHASE_SAVING);
		http_metrics_partition(J->o.metrics, ds->g.row_ptr[ds->g.n_rows],
				       part_now() - t1);
		rep = report_text(job, ds, &o, &r, &pi, t_load,
				  part_now() - t0, d ? d->name : job->spec.dataset);
		if (!rep)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (report)");
	}
	if (rc == 0)
		rc = store_result(J, job, ds, &r, rep, err);
	if (rc)
		free(rep);
	part_result_release(&r);
	http_datasets_release(J->o.data, job->spec.dataset);
	return rc;
}

/* Record the outcome of execute (under mu) but the state itself, which
 * it returns: the worker stores it, then sets it (persist_as). */
static enum http_job_state finish_locked(struct http_job *job, int rc,
					 const struct parsa_err *err)
{
	if (job->requeue) {
		job->requeue = 0;
		job->cancel = 0;
		job->started[0] = '\0';
		atomic_store(&job->progress_ppm, 0);
		atomic_store(&job->phase, HTTP_PHASE_QUEUED);
		return HTTP_JOB_QUEUED;
	}
	http_now_iso(job->finished);
	job->elapsed = base_now() - job->t_start;
	atomic_store(&job->phase, HTTP_PHASE_DONE);
	if (job->cancel)
		return HTTP_JOB_CANCELLED;
	if (rc) {
		free(job->error);
		job->error = strdup(err->msg[0] ? err->msg : parsa_strerror(rc));
		return HTTP_JOB_FAILED;
	}
	atomic_store(&job->progress_ppm, 1000000);
	return HTTP_JOB_SUCCEEDED;
}

static struct http_job *next_job(struct http_jobs *J)
{
	struct http_job *job = NULL;

	pthread_mutex_lock(&J->mu);
	while (!J->stopping && !J->qhead)
		pthread_cond_wait(&J->cv, &J->mu);
	if (!J->stopping) {
		job = J->qhead;
		J->qhead = job->qnext;
		if (!J->qhead)
			J->qtail = NULL;
		job->state = HTTP_JOB_RUNNING;
		http_now_iso(job->started);
		job->t_start = base_now();
		atomic_store(&job->phase, HTTP_PHASE_LOADING);
		J->running++;
	}
	pthread_mutex_unlock(&J->mu);
	return job;
}

/* Seconds a worker waits after it could not record a job's start. */
#define PERSIST_RETRY 1.0

/*
 * The job's "running" could not be written (the disk is full, the state
 * dir unwritable): it stays queued, in memory as on disk, at the head of
 * the queue, and this worker waits PERSIST_RETRY before the next try.
 */
static void not_started(struct http_jobs *J, struct http_job *job,
			const struct parsa_err *err)
{
	struct timespec until;

	fprintf(stderr, "parsa serve: job %s stays queued: cannot record its "
		"start: %s\n", job->id, err->msg);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)PERSIST_RETRY;
	pthread_mutex_lock(&J->mu);
	job->state = HTTP_JOB_QUEUED;
	job->started[0] = '\0';
	atomic_store(&job->phase, HTTP_PHASE_QUEUED);
	J->running--;
	job->qnext = J->qhead;
	J->qhead = job;
	if (!J->qtail)
		J->qtail = job;
	while (!J->stopping &&
	       pthread_cond_timedwait(&J->cv, &J->mu, &until) == 0)
		;
	pthread_mutex_unlock(&J->mu);
}

/*
 * The job's end could not be written: the disk still says "running",
 * which a restart reads as failed ("interrupted").  So it is failed now
 * too, whatever it ended as: a client never sees a state that the disk
 * contradicts after a restart.
 */
static void not_stored(struct http_jobs *J, struct http_job *job,
		       const struct parsa_err *err)
{
	char msg[1200];

	fprintf(stderr, "parsa serve: job %s: cannot record its end (%s): it "
		"counts as failed\n", job->id, err->msg);
	snprintf(msg, sizeof(msg), "the job's end could not be saved (%s); it "
		 "counts as failed, as it will after a restart", err->msg);
	pthread_mutex_lock(&J->mu);
	job->state = HTTP_JOB_FAILED;
	free(job->error);
	job->error = strdup(msg);
	pthread_mutex_unlock(&J->mu);
}

static void *worker_main(void *arg)
{
	struct http_jobs *J = arg;
	struct http_job *job;

	pthread_setname_np(pthread_self(), "http-job");
	/* batch work yields to the event loop: lookups keep their latency
	 * while partitions run (Linux: nice applies per thread) */
	if (J->o.nice &&
	    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), J->o.nice) != 0)
		errno = 0;

	while ((job = next_job(J))) {
		struct parsa_err err;
		enum http_job_state end;
		int rc;

		parsa_err_clear(&err);
		/* a job runs only once the disk says it runs: else a restart
		 * would run it again, from "queued" */
		if (persist(J, job, &err)) {
			not_started(J, job, &err);
			continue;
		}
		rc = execute(J, job, &err);
		pthread_mutex_lock(&J->mu);
		end = finish_locked(job, rc, &err);
		pthread_mutex_unlock(&J->mu);
		parsa_err_clear(&err);
		/* the end is on disk before a client can see it */
		rc = persist_as(J, job, (int)end, &err);
		pthread_mutex_lock(&J->mu);
		job->state = end;
		J->running--;
		pthread_mutex_unlock(&J->mu);
		if (rc)
			not_stored(J, job, &err);
		if (J->o.notify)
			J->o.notify(J->o.notify_arg);
	}
	return NULL;
}

/* ---- public ---- */

int http_jobs_open(struct http_jobs **out, const struct http_jobs_opts *o,
		   struct parsa_err *err)
{
	struct http_jobs *J = calloc(1, sizeof(*J));
	int rc;

	*out = NULL;
	if (!J)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	J->o = *o;
	pthread_mutex_init(&J->mu, NULL);
	pthread_cond_init(&J->cv, NULL);
	snprintf(J->dir, sizeof(J->dir), "%s/jobs", o->state_dir);
	rc = http_store_mkdirs(J->dir, err);
	if (rc == 0)
		rc = load_all(J, err);
	if (rc == 0) /* deleted jobs' ids are not given again */
		rc = reserve_id(J, http_store_get_last_id(J->dir), err);
	J->threads = calloc(o->workers ? o->workers : 1, sizeof(pthread_t));
	if (rc == 0 && !J->threads)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	for (unsigned i = 0; rc == 0 && i < o->workers; i++) {
		if (pthread_create(&J->threads[i], NULL, worker_main, J) != 0)
			rc = parsa_fail(err, PARSA_ENOMEM, "cannot start worker thread");
		else
			J->nthreads++;
	}
	if (rc) {
		http_jobs_stop(J);
		http_jobs_close(J);
		return rc;
	}
	*out = J;
	return 0;
}

void http_jobs_stop(struct http_jobs *J)
{
	pthread_mutex_lock(&J->mu);
	J->stopping = 1;
	pthread_cond_broadcast(&J->cv);
	pthread_mutex_unlock(&J->mu);
}

void http_jobs_interrupt(struct http_jobs *J)
{
	pthread_mutex_lock(&J->mu);
	for (uint64_t i = 0; i < J->n; i++) {
		struct http_job *job = J->v[i];

		if (job && job->state == HTTP_JOB_RUNNING && !job->cancel) {
			job->requeue = 1;
			job->cancel = 1;
		}
	}
	pthread_mutex_unlock(&J->mu);
}

unsigned http_jobs_running(struct http_jobs *J)
{
	unsigned n;

	pthread_mutex_lock(&J->mu);
	n = J->running;
	pthread_mutex_unlock(&J->mu);
	return n;
}

void http_jobs_close(struct http_jobs *J)
{
	if (!J)
		return;
	for (unsigned i = 0; i < J->nthreads; i++)
		pthread_join(J->threads[i], NULL);
	for (uint64_t i = 0; i < J->n; i++)
		job_free(J->v[i]);
	free(J->v);
	free(J->threads);
	pthread_cond_destroy(&J->cv);
	pthread_mutex_destroy(&J->mu);
	free(J);
}

int http_jobs_submit(struct http_jobs *J, const struct http_job_spec *s,
		     char *id, struct parsa_err *err)
{
	struct http_job *job;
	char dir[4400];
	int rc;

	/* the id is taken at once, the job visible only once job.json is
	 * written: a job that could not be stored (the disk is full) is
	 * never seen, as after a restart (the slot stays empty, as a
	 * deleted job's) */
	pthread_mutex_lock(&J->mu);
	snprintf(id, HTTP_ID_MAX, "j%llu", (unsigned long long)J->n + 1);
	job = job_new(id);
	rc = job ? reserve_id(J, J->n + 1, err)
		 : parsa_fail(err, PARSA_ENOMEM, "out of memory");
	if (rc == 0) {
		job->spec = *s;
		http_now_iso(job->created);
	}
	pthread_mutex_unlock(&J->mu);
	if (rc) {
		job_free(job);
		return rc;
	}
	snprintf(dir, sizeof(dir), "%s/%s", J->dir, id);
	rc = http_store_mkdirs(dir, err);
	if (rc == 0)
		rc = persist(J, job, err);
	if (rc) {
		remove_job_dir(dir);
		job_free(job);
		return rc;
	}
	pthread_mutex_lock(&J->mu);
	J->v[http_id_number(id, 'j') - 1] = job;
	enqueue_locked(J, job);
	pthread_mutex_unlock(&J->mu);
	return 0;
}

static struct http_job *find_locked(struct http_jobs *J, const char *id)
{
	uint64_t i = http_id_number(id, 'j');

	return i >= 1 && i <= J->n ? J->v[i - 1] : NULL;
}

json_t *http_jobs_get_json(struct http_jobs *J, const char *id,
			   int with_report)
{
	struct http_job *job;
	json_t *j = NULL;

	pthread_mutex_lock(&J->mu);
	job = find_locked(J, id);
	if (job)
		j = job_json_locked(job, with_report);
	pthread_mutex_unlock(&J->mu);
	return j;
}

json_t *http_jobs_list_json(struct http_jobs *J, const struct http_jobs_query *q)
{
	static const struct http_jobs_query all = {.state = -1};
	json_t *a = json_array(), *out;
	const char *next = NULL;
	unsigned n = 0;

	if (!q)
		q = &all;
	pthread_mutex_lock(&J->mu);
	for (uint64_t i = q->after; a && i < J->n; i++) {
		struct http_job *job = J->v[i];

		if (!job || (q->state >= 0 && (int)job->state != q->state) ||
		    (q->dataset && strcmp(job->spec.dataset, q->dataset) != 0))
			continue;
		if (q->limit && n == q->limit) {
			next = json_string_value(json_object_get(
				json_array_get(a, n - 1), "id"));
			break;
		}
		json_array_append_new(a, job_json_locked(job, 0));
		n++;
	}
	pthread_mutex_unlock(&J->mu);
	if (!a)
		return NULL;
	out = json_pack("{s:o}", "jobs", a);
	if (out && next)
		json_object_set_new(out, "next", json_string(next));
	return out;
}

unsigned http_jobs_using(struct http_jobs *J, const char *dataset)
{
	unsigned n = 0;

	pthread_mutex_lock(&J->mu);
	for (uint64_t i = 0; i < J->n; i++) {
		struct http_job *job = J->v[i];

		n += job && (job->state == HTTP_JOB_QUEUED ||
			     job->state == HTTP_JOB_RUNNING) &&
		     strcmp(job->spec.dataset, dataset) == 0;
	}
	pthread_mutex_unlock(&J->mu);
	return n;
}

/* Remove dir's files, then dir: job.json first, so that a kill midway
 * leaves a directory without job.json, which start-up recovery removes. */
static void remove_job_dir(const char *dir)
{
	char path[4400];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/job.json", dir);
	unlink(path);
	if ((d = opendir(dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

int http_jobs_purge(struct http_jobs *J, const char *id,
		    enum http_job_state *state_out)
{
	struct http_job *job;
	char dir[4400];

	pthread_mutex_lock(&J->mu);
	job = find_locked(J, id);
	if (job) {
		*state_out = job->state;
		if (job->state == HTTP_JOB_QUEUED || job->state == HTTP_JOB_RUNNING) {
			pthread_mutex_unlock(&J->mu);
			return 409;
		}
		J->v[http_id_number(id, 'j') - 1] = NULL;
	}
	pthread_mutex_unlock(&J->mu);
	if (!job)
		return 404;
	{
		struct parsa_err err;
		uint64_t last;

		pthread_mutex_lock(&J->mu);
		last = J->n;
		pthread_mutex_unlock(&J->mu);
		parsa_err_clear(&err);
		if (http_store_put_last_id(J->dir, last, &err)) {
			/* kept: deleted without this record, a restart would
			 * give its id again */
			fprintf(stderr, "parsa serve: %s not deleted: %s\n",
				job->id, err.msg);
			pthread_mutex_lock(&J->mu);
			J->v[http_id_number(id, 'j') - 1] = job;
			pthread_mutex_unlock(&J->mu);
			return http_store_full(&err) ? 507 : 500;
		}
	}
	snprintf(dir, sizeof(dir), "%s/%s", J->dir, job->id);
	remove_job_dir(dir);
	job_free(job);
	return 200;
}

/* "YYYY-MM-DDTHH:MM:SSZ" (http_now_iso) -> seconds since the epoch; -1
 * when malformed or empty. */
static double iso_time(const char *s)
{
	struct tm tm;
	const char *e;

	memset(&tm, 0, sizeof(tm));
	e = s[0] ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
	if (!e || *e)
		return -1;
	return (double)timegm(&tm);
}

size_t http_jobs_expired(struct http_jobs *J, uint64_t max_jobs,
			 double max_age, char (*ids)[HTTP_ID_MAX], size_t cap)
{
	double now = (double)time(NULL);
	uint64_t kept = 0;
	size_t n = 0;

	pthread_mutex_lock(&J->mu);
	/* newest first, so the count keeps the newest; ids collected from
	 * the end of ids[] then reversed (oldest first) */
	for (uint64_t i = J->n; i-- > 0;) {
		struct http_job *job = J->v[i];
		double t;
		int old;

		if (!job || job->state == HTTP_JOB_QUEUED ||
		    job->state == HTTP_JOB_RUNNING)
			continue;
		t = iso_time(job->finished);
		old = max_age > 0 && t >= 0 && now - t > max_age;
		if (!old && (max_jobs == 0 || kept < max_jobs)) {
			kept++;
			continue;
		}
		if (n < cap)
			snprintf(ids[n], HTTP_ID_MAX, "%s", job->id);
		n++;
	}
	pthread_mutex_unlock(&J->mu);
	for (size_t a = 0, m = n < cap ? n : cap; a + 1 < m - a; a++) {
		char t[HTTP_ID_MAX];

		memcpy(t, ids[a], HTTP_ID_MAX);
		memcpy(ids[a], ids[m - 1 - a], HTTP_ID_MAX);
		memcpy(ids[m - 1 - a], t, HTTP_ID_MAX);
	}
	return n;
}

/* Remove job from the queue (under mu). */
static void dequeue_locked(struct http_jobs *J, struct http_job *job)
{
	struct http_job **pp = &J->qhead, *prev = NULL;

	while (*pp && *pp != job) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (!*pp)
		return;
	*pp = job->qnext;
	if (J->qtail == job)
		J->qtail = prev;
}

int http_jobs_cancel(struct http_jobs *J, const char *id,
		     enum http_job_state *state_out)
{
	struct http_job *job;
	int status = 200, write = 0;

	pthread_mutex_lock(&J->mu);
	job = find_locked(J, id);
	if (!job) {
		status = 404;
	} else if (job->state == HTTP_JOB_QUEUED && job->cancel) {
		status = 202; /* another request is storing its cancellation */
	} else if (job->state == HTTP_JOB_QUEUED) {
		/* out of the queue, cancelled once that is on disk; meanwhile
		 * it stays queued (so no purge) and job->cancel marks it */
		job->cancel = 1;
		dequeue_locked(J, job);
		http_now_iso(job->finished);
		job->elapsed = 0;
		write = 1;
	} else if (job->state == HTTP_JOB_RUNNING) {
		job->cancel = 1;
		job->requeue = 0;
		status = 202;
	} else {
		status = 409;
	}
	if (job)
		*state_out = job->state;
	pthread_mutex_unlock(&J->mu);
	if (write) {
		struct parsa_err err;

		parsa_err_clear(&err);
		if (persist_as(J, job, HTTP_JOB_CANCELLED, &err) == 0) {
			pthread_mutex_lock(&J->mu);
			job->state = HTTP_JOB_CANCELLED;
			atomic_store(&job->phase, HTTP_PHASE_DONE);
			*state_out = job->state;
			pthread_mutex_unlock(&J->mu);
		} else { /* still queued, as on disk: back at the head */
			fprintf(stderr, "parsa serve: job %s: cannot record its "
				"cancellation: %s\n", job->id, err.msg);
			pthread_mutex_lock(&J->mu);
			job->finished[0] = '\0';
			job->elapsed = -1;
			job->cancel = 0;
			job->qnext = J->qhead;
			J->qhead = job;
			if (!J->qtail)
				J->qtail = job;
			pthread_cond_signal(&J->cv);
			pthread_mutex_unlock(&J->mu);
			status = http_store_full(&err) ? 507 : 500;
		}
	}
	return status;
}

int http_jobs_place(struct http_jobs *J, const char *id,
		    const struct http_place **p, enum http_job_state *state_out,
		    struct parsa_err *err)
{
	struct http_job *job;
	struct http_place *pl;
	char prefix[4400];
	int rc;

	*p = NULL;
	pthread_mutex_lock(&J->mu);
	job = find_locked(J, id);
	if (!job || job->state != HTTP_JOB_SUCCEEDED) {
		if (job)
			*state_out = job->state;
		pthread_mutex_unlock(&J->mu);
		return job ? 409 : 404;
	}
	*state_out = job->state;
	*p = job->place;
	pthread_mutex_unlock(&J->mu);
	if (*p)
		return 200;
	snprintf(prefix, sizeof(prefix), "%s/%s/placement", J->dir, id);
	rc = http_place_load(&pl, prefix, err);
	if (rc)
		return 500;
	pthread_mutex_lock(&J->mu);
	if (job->place)
		http_place_free(pl);
	else
		job->place = pl;
	*p = job->place;
	pthread_mutex_unlock(&J->mu);
	return 200;
}

void http_jobs_counts(struct http_jobs *J, uint64_t counts[HTTP_JOB_NSTATES])
{
	memset(counts, 0, HTTP_JOB_NSTATES * sizeof(uint64_t));
	pthread_mutex_lock(&J->mu);
	for (uint64_t i = 0; i < J->n; i++)
		if (J->v[i])
			counts[J->v[i]->state]++;
	pthread_mutex_unlock(&J->mu);
}

int http_jobs_status(struct http_jobs *J, const char *id,
		     struct http_job_status *st)
{
	struct http_job *job;

	pthread_mutex_lock(&J->mu);
	job = find_locked(J, id);
	if (job) {
		st->state = job->state;
		st->phase = (enum http_job_phase)atomic_load(&job->phase);
		st->progress = atomic_load(&job->progress_ppm) / 1e6;
		st->eta = -1;
		if (job->state == HTTP_JOB_RUNNING) {
			st->elapsed = base_now() - job->t_start;
			/* the rest at the pace so far, once there is a pace */
			if (st->progress > 0.06 && st->elapsed > 0.2)
				st->eta = st->elapsed * (1 - st->progress) /
					  st->progress;
		} else {
			st->elapsed = job->state == HTTP_JOB_QUEUED ? 0 : job->elapsed;
		}
	}
	pthread_mutex_unlock(&J->mu);
	return job ? 0 : 404;
}
