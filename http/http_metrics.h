/*
 * http_metrics: the counters behind GET /metrics, rendered in the
 * Prometheus text exposition format (version 0.0.4):
 *   parsa_http_requests_total{route,status}        counter
 *   parsa_http_request_duration_seconds{route}     histogram
 *   parsa_jobs{state}                              gauge (given at render)
 *   parsa_partition_jobs_total, parsa_partition_nonzeros_total,
 *   parsa_partition_seconds_total                  counters (throughput =
 *                                                  rate(nonzeros)/rate(s))
 *   parsa_datasets                                 gauge
 * Thread-safe (one mutex); recording is O(buckets).
 */
#ifndef HTTP_METRICS_H
#define HTTP_METRICS_H

#include <stdint.h>

#include "http_route.h"

struct http_metrics;

/* New metrics (all zero); NULL on out of memory.  Free with _destroy. */
struct http_metrics *http_metrics_create(void);
void http_metrics_destroy(struct http_metrics *m);  /* NULL is a no-op */

/* One request answered on route with status after seconds. */
void http_metrics_request(struct http_metrics *m, enum http_route_id route,
			  int status, double seconds);

/* One partition job finished: its nonzeros and seconds partitioning. */
void http_metrics_partition(struct http_metrics *m, uint64_t nonzeros,
			    double seconds);

#define HTTP_JOB_NSTATES 5

/*
 * New string (caller frees): the exposition text, with the job gauge
 * parsa_jobs{state=names[i]} = jobs[i] and parsa_datasets = datasets.
 * NULL on out of memory.
 */
char *http_metrics_text(struct http_metrics *m,
			const uint64_t jobs[HTTP_JOB_NSTATES],
			const char *const names[HTTP_JOB_NSTATES],
			uint64_t datasets);

#endif /* HTTP_METRICS_H */
