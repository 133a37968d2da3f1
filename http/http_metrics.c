/*
 * http_metrics: counters and latency histograms for /metrics (see
 * http_metrics.h).  Statuses outside the fixed list are counted as "other".
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_metrics.h"

static const int statuses[] = {200, 201, 202, 204, 400, 401, 404, 405,
			       409, 411, 413, 415, 422, 500, 503, 507, 0};
#define NSTATUS (sizeof(statuses) / sizeof(*statuses))
static const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NBUCKET (sizeof(bounds) / sizeof(*bounds))

struct http_metrics {
	pthread_mutex_t mu;
	uint64_t req[HTTP_R_COUNT][NSTATUS];
	uint64_t hist[HTTP_R_COUNT][NBUCKET + 1]; /* last: +Inf only */
	double lat_sum[HTTP_R_COUNT];
	uint64_t lat_count[HTTP_R_COUNT];
	uint64_t jobs_done, nonzeros;
	double part_seconds;
};

struct http_metrics *http_metrics_create(void)
{
	struct http_metrics *m = calloc(1, sizeof(*m));

	if (m && pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

void http_metrics_destroy(struct http_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void http_metrics_request(struct http_metrics *m, enum http_route_id route,
			  int status, double seconds)
{
	size_t s = NSTATUS - 1, b = NBUCKET;

	if ((unsigned)route >= HTTP_R_COUNT)
		route = HTTP_R_NONE;
	for (size_t i = 0; i + 1 < NSTATUS; i++)
		if (statuses[i] == status)
			s = i;
	for (size_t i = 0; i < NBUCKET; i++)
		if (seconds <= bounds[i]) {
			b = i;
			break;
		}
	pthread_mutex_lock(&m->mu);
	m->req[route][s]++;
	m->hist[route][b]++;
	m->lat_sum[route] += seconds;
	m->lat_count[route]++;
	pthread_mutex_unlock(&m->mu);
}

void http_metrics_partition(struct http_metrics *m, uint64_t nonzeros,
			    double seconds)
{
	pthread_mutex_lock(&m->mu);
	m->jobs_done++;
	m->nonzeros += nonzeros;
	m->part_seconds += seconds;
	pthread_mutex_unlock(&m->mu);
}

/* A growing string; on allocation failure ->oom is set and text dropped. */
struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		char *q = realloc(b->p, b->cap * 2 + (size_t)n);

		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = b->cap * 2 + (size_t)n;
	}
}

static void render_requests(struct http_metrics *m, struct sbuf *b)
{
	sb_printf(b, "# HELP parsa_http_requests_total HTTP requests by route and status.\n"
		  "# TYPE parsa_http_requests_total counter\n");
	for (int r = 0; r < HTTP_R_COUNT; r++)
		for (size_t s = 0; s < NSTATUS; s++) {
			if (!m->req[r][s])
				continue;
			if (statuses[s])
				sb_printf(b, "parsa_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
					  http_route_label(r), statuses[s],
					  (unsigned long long)m->req[r][s]);
			else
				sb_printf(b, "parsa_http_requests_total{route=\"%s\",status=\"other\"} %llu\n",
					  http_route_label(r),
					  (unsigned long long)m->req[r][s]);
		}
}

static void render_latency(struct http_metrics *m, struct sbuf *b)
{
	sb_printf(b, "# HELP parsa_http_request_duration_seconds Time from request to reply.\n"
		  "# TYPE parsa_http_request_duration_seconds histogram\n");
	for (int r = 0; r < HTTP_R_COUNT; r++) {
		uint64_t cum = 0;
		const char *l = http_route_label(r);

		if (!m->lat_count[r])
			continue;
		for (size_t i = 0; i < NBUCKET; i++) {
			cum += m->hist[r][i];
			sb_printf(b, "parsa_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
				  l, bounds[i], (unsigned long long)cum);
		}
		sb_printf(b, "parsa_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n"
			  "parsa_http_request_duration_seconds_sum{route=\"%s\"} %.9g\n"
			  "parsa_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
			  l, (unsigned long long)m->lat_count[r], l,
			  m->lat_sum[r], l, (unsigned long long)m->lat_count[r]);
	}
}

char *http_metrics_text(struct http_metrics *m,
			const uint64_t jobs[HTTP_JOB_NSTATES],
			const char *const names[HTTP_JOB_NSTATES],
			uint64_t datasets)
{
	struct sbuf b = {malloc(4096), 0, 4096, 0};

	if (!b.p)
		return NULL;
	pthread_mutex_lock(&m->mu);
	render_requests(m, &b);
	render_latency(m, &b);
	sb_printf(&b, "# HELP parsa_jobs Partition jobs by state.\n"
		  "# TYPE parsa_jobs gauge\n");
	for (int i = 0; i < HTTP_JOB_NSTATES; i++)
		sb_printf(&b, "parsa_jobs{state=\"%s\"} %llu\n", names[i],
			  (unsigned long long)jobs[i]);
	sb_printf(&b, "# HELP parsa_datasets Registered datasets.\n"
		  "# TYPE parsa_datasets gauge\nparsa_datasets %llu\n"
		  "# HELP parsa_partition_jobs_total Partition jobs finished by this process.\n"
		  "# TYPE parsa_partition_jobs_total counter\nparsa_partition_jobs_total %llu\n"
		  "# HELP parsa_partition_nonzeros_total Nonzeros (edges) partitioned.\n"
		  "# TYPE parsa_partition_nonzeros_total counter\nparsa_partition_nonzeros_total %llu\n"
		  "# HELP parsa_partition_seconds_total Seconds spent partitioning.\n"
		  "# TYPE parsa_partition_seconds_total counter\nparsa_partition_seconds_total %.6f\n",
		  (unsigned long long)datasets, (unsigned long long)m->jobs_done,
		  (unsigned long long)m->nonzeros, m->part_seconds);
	sb_printf(&b, "# HELP parsa_partition_nonzeros_per_second Mean partition throughput.\n"
		  "# TYPE parsa_partition_nonzeros_per_second gauge\n"
		  "parsa_partition_nonzeros_per_second %.1f\n",
		  m->part_seconds > 0 ? (double)m->nonzeros / m->part_seconds : 0.0);
	pthread_mutex_unlock(&m->mu);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
