/*
 * ps_link: emulated network link as a transport decorator (ps_link.h).
 *
 * Remote messages go into a min-heap ordered by (delivery time, sequence
 * number); one delivery thread sleeps until the earliest is due and hands
 * it to the inner transport.  Per machine pair the delivery times never
 * decrease, and ties keep the send order, so per-pair FIFO holds.
 */
#include "ps_link.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ps_msg.h"

struct pending {
	double due;   /* monotonic time of delivery */
	uint64_t seq; /* send order: tie-break */
	uint32_t dst;
	void *buf;    /* owned until handed to the inner transport */
	size_t len;
};

/*
 * Invariants: heap[0..n) is a min-heap by (due, seq); free_at has M * M
 * entries (M = machines); busy is 1 while the thread delivers a message
 * it popped (close waits for n == 0 && !busy).
 */
struct ps_link {
	struct ps_transport base; /* first: cast from ps_transport */
	struct ps_transport *inner;
	struct ps_link_spec spec;
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* heap changed / stop */
	pthread_cond_t idle;      /* heap drained */
	struct pending *heap;
	size_t n, cap;
	uint64_t seq;
	double *free_at;          /* token bucket per machine pair */
	int stop, busy, thread_ok;
	pthread_t thread;
	struct ps_link_stats st;
};

static const struct ps_transport_ops link_ops;

/* ------------------------------------------------------------- parsing */

/* Number at *s with a unit from units[] (NULL-terminated, scale each). */
static int parse_unit(const char *s, size_t len, const char *const *units,
		      const double *scale, double *out)
{
	char buf[64], *end;
	double v;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (errno || end == buf || !isfinite(v) || v < 0)
		return -1;
	for (int i = 0; units[i]; i++) {
		if (strcasecmp(end, units[i]) == 0) {
			*out = v * scale[i];
			return 0;
		}
	}
	return -1;
}

int ps_link_parse(const char *s, struct ps_link_spec *spec,
		  struct parsa_err *err)
{
	static const char *const bw_u[] = {"", "bit", "k", "kbit", "m",
					   "mbit", "g", "gbit", NULL};
	static const double bw_s[] = {1, 1, 1e3, 1e3, 1e6, 1e6, 1e9, 1e9};
	static const char *const lat_u[] = {"", "s", "ms", "us", NULL};
	static const double lat_s[] = {1, 1, 1e-3, 1e-6};
	const char *comma = s ? strchr(s, ',') : NULL;
	const char *mode = comma ? strchr(comma + 1, ',') : NULL;

	if (!comma)
		return parsa_fail(err, PARSA_EINVAL, "link '%s': expected "
				  "BANDWIDTH,LATENCY (e.g. 1gbit,0.1ms)",
				  s ? s : "");
	if ((size_t)(comma - s) == 3 && strncmp(s, "inf", 3) == 0)
		spec->bits_per_s = INFINITY; /* latency only */
	else if (parse_unit(s, (size_t)(comma - s), bw_u, bw_s,
			    &spec->bits_per_s) || !(spec->bits_per_s > 0))
		return parsa_fail(err, PARSA_EINVAL, "link '%s': bad bandwidth "
				  "(a positive number with k, m, g or gbit...)",
				  s);
	if (parse_unit(comma + 1, mode ? (size_t)(mode - comma - 1)
				       : strlen(comma + 1),
		       lat_u, lat_s, &spec->latency_s))
		return parsa_fail(err, PARSA_EINVAL, "link '%s': bad latency "
				  "(a number >= 0 with s, ms or us)", s);
	spec->per_machine = mode && strcmp(mode + 1, "nic") == 0;
	if (mode && !spec->per_machine && strcmp(mode + 1, "pair") != 0)
		return parsa_fail(err, PARSA_EINVAL, "link '%s': the third "
				  "field is 'pair' or 'nic'", s);
	return 0;
}

/* ---------------------------------------------------------------- heap */

static int before(const struct pending *a, const struct pending *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_up(struct pending *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		struct pending t;

		if (!before(&h[i], &h[p]))
			break;
		t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static void heap_down(struct pending *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct pending t;

		if (l < n && before(&h[l], &h[m]))
			m = l;
		if (r < n && before(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* ------------------------------------------------------------ delivery */

static void abs_time(double t_mono, struct timespec *ts)
{
	double s = floor(t_mono);

	ts->tv_sec = (time_t)s;
	ts->tv_nsec = (long)((t_mono - s) * 1e9);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Free every pending message (after a failure or at destroy). */
static void drop_all(struct ps_link *lk)
{
	for (size_t i = 0; i < lk->n; i++)
		free(lk->heap[i].buf);
	lk->n = 0;
	pthread_cond_broadcast(&lk->idle);
}

static void *deliver_main(void *arg)
{
	struct ps_link *lk = arg;

	pthread_setname_np(pthread_self(), "ps-link");
	pthread_mutex_lock(&lk->mu);
	while (!lk->stop) {
		struct pending p;
		struct parsa_err e = {0};
		struct timespec ts;
		double now;
		int rc;

		if (lk->n == 0) {
			pthread_cond_wait(&lk->cv, &lk->mu);
			continue;
		}
		now = ps_clock_now();
		if (lk->heap[0].due > now) {
			abs_time(lk->heap[0].due, &ts);
			pthread_cond_timedwait(&lk->cv, &lk->mu, &ts);
			continue;
		}
		p = lk->heap[0];
		lk->heap[0] = lk->heap[--lk->n];
		heap_down(lk->heap, lk->n, 0);
		lk->busy = 1;
		pthread_mutex_unlock(&lk->mu);
		rc = ps_transport_send(lk->inner, p.dst, p.buf, p.len, &e);
		if (rc)
			ps_transport_fail(&lk->base, rc, "%s", e.msg);
		pthread_mutex_lock(&lk->mu);
		lk->busy = 0;
		if (lk->n == 0)
			pthread_cond_broadcast(&lk->idle);
	}
	pthread_mutex_unlock(&lk->mu);
	return NULL;
}

/* ----------------------------------------------------------------- ops */

/* Machine of the message's sender, or -1 if it cannot be read. */
static long sender_machine(const struct ps_link *lk, const void *buf,
			   size_t len)
{
	struct ps_msg m;
	struct parsa_err e = {0};

	if (ps_msg_decode(buf, len, &m, &e) ||
	    m.src >= ps_layout_nodes(&lk->base.layout))
		return -1;
	return (long)ps_layout_machine(&lk->base.layout, m.src);
}

static int enqueue(struct ps_link *lk, uint32_t a, uint32_t b, uint32_t dst,
		   void *buf, size_t len, struct parsa_err *err)
{
	uint32_t M = lk->base.layout.num_machines;
	double now = ps_clock_now();
	double *fa = &lk->free_at[(size_t)a * M + (lk->spec.per_machine ? a : b)];
	struct pending p;

	if (lk->n == lk->cap) {
		size_t nc = lk->cap ? 2 * lk->cap : 64;
		struct pending *h = realloc(lk->heap, nc * sizeof(*h));

		if (!h) {
			free(buf);
			return parsa_fail(err, PARSA_ENOMEM, "link queue");
		}
		lk->heap = h;
		lk->cap = nc;
	}
	*fa = (*fa > now ? *fa : now) + 8.0 * (double)len / lk->spec.bits_per_s;
	p = (struct pending){*fa + lk->spec.latency_s, lk->seq++, dst, buf,
			     len};
	lk->st.delayed_msgs++;
	lk->st.delayed_bytes += len;
	lk->st.delay_s += p.due - now;
	lk->heap[lk->n] = p;
	heap_up(lk->heap, lk->n++);
	pthread_cond_signal(&lk->cv);
	return 0;
}

static int link_send(struct ps_transport *tp, uint32_t dst, void *buf,
		     size_t len, struct parsa_err *err)
{
	struct ps_link *lk = (struct ps_link *)tp;
	long a = sender_machine(lk, buf, len);
	uint32_t b;
	int rc = ps_transport_failed(tp, err);

	if (rc) {
		free(buf);
		return rc;
	}
	if (a < 0 || dst >= ps_layout_nodes(&tp->layout) ||
	    (b = ps_layout_machine(&tp->layout, dst)) == (uint32_t)a) {
		pthread_mutex_lock(&lk->mu);
		lk->st.direct_msgs++;
		pthread_mutex_unlock(&lk->mu);
		return ps_transport_send(lk->inner, dst, buf, len, err);
	}
	pthread_mutex_lock(&lk->mu);
	rc = enqueue(lk, (uint32_t)a, b, dst, buf, len, err);
	pthread_mutex_unlock(&lk->mu);
	return rc;
}

static int link_recv(struct ps_transport *tp, uint32_t node,
		     double timeout_s, void **buf, size_t *len,
		     struct parsa_err *err)
{
	struct ps_link *lk = (struct ps_link *)tp;
	int rc = ps_transport_failed(tp, err);

	*buf = NULL;
	return rc ? rc : ps_transport_recv(lk->inner, node, timeout_s, buf,
					   len, err);
}

/* A failure of the link: drop the queue, fail the inner transport. */
static void link_wake(struct ps_transport *tp)
{
	struct ps_link *lk = (struct ps_link *)tp;
	struct parsa_err e = {0};
	int code = ps_transport_failed(tp, &e);

	pthread_mutex_lock(&lk->mu);
	drop_all(lk);
	pthread_cond_broadcast(&lk->cv);
	pthread_mutex_unlock(&lk->mu);
	ps_transport_fail(lk->inner, code, "%s", e.msg);
}

/* Deliver everything still queued, then close the inner transport. */
static int link_close(struct ps_transport *tp, double timeout_s,
		      struct parsa_err *err)
{
	struct ps_link *lk = (struct ps_link *)tp;
	double until = ps_clock_now() + (timeout_s > 0 ? timeout_s : 60.0);
	struct timespec ts;
	int late = 0;

	abs_time(until, &ts);
	pthread_mutex_lock(&lk->mu);
	while ((lk->n > 0 || lk->busy) && !late)
		late = pthread_cond_timedwait(&lk->idle, &lk->mu, &ts) ==
		       ETIMEDOUT;
	pthread_mutex_unlock(&lk->mu);
	if (late)
		return parsa_fail(err, PARSA_EMPI, "link: queued messages not "
				  "delivered within %g s", timeout_s);
	return ps_transport_close(lk->inner, timeout_s, err);
}

static void link_destroy(struct ps_transport *tp)
{
	struct ps_link *lk = (struct ps_link *)tp;

	if (lk->thread_ok) {
		pthread_mutex_lock(&lk->mu);
		lk->stop = 1;
		pthread_cond_broadcast(&lk->cv);
		pthread_mutex_unlock(&lk->mu);
		pthread_join(lk->thread, NULL);
	}
	drop_all(lk);
	free(lk->heap);
	free(lk->free_at);
	pthread_cond_destroy(&lk->cv);
	pthread_cond_destroy(&lk->idle);
	pthread_mutex_destroy(&lk->mu);
	ps_transport_destroy(lk->inner);
	ps_transport_base_release(tp);
	free(lk);
}

static const struct ps_transport_ops link_ops = {
	.name = "link",
	.send = link_send,
	.recv = link_recv,
	.wake = link_wake,
	.close = link_close,
	.destroy = link_destroy,
};

static int link_init_sync(struct ps_link *lk, struct parsa_err *err)
{
	pthread_condattr_t ca;
	int rc = 0;

	if (pthread_condattr_init(&ca))
		return parsa_fail(err, PARSA_ENOMEM, "link: condattr");
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_mutex_init(&lk->mu, NULL) ||
	    pthread_cond_init(&lk->cv, &ca) ||
	    pthread_cond_init(&lk->idle, &ca))
		rc = parsa_fail(err, PARSA_ENOMEM, "link: mutex");
	pthread_condattr_destroy(&ca);
	return rc;
}

struct ps_transport *ps_link_create(struct ps_transport *inner,
				    const struct ps_link_spec *spec,
				    struct parsa_err *err)
{
	struct ps_link *lk;
	uint32_t M;

	if (!inner)
		return NULL;
	if (!spec || !(spec->bits_per_s > 0) || !(spec->latency_s >= 0)) {
		parsa_fail(err, PARSA_EINVAL, "link: bandwidth must be > 0 "
			   "and latency >= 0");
		ps_transport_destroy(inner);
		return NULL;
	}
	lk = calloc(1, sizeof(*lk));
	M = inner->layout.num_machines;
	if (!lk || !(lk->free_at = calloc((size_t)M * M, sizeof(double)))) {
		free(lk);
		ps_transport_destroy(inner);
		parsa_fail(err, PARSA_ENOMEM, "link: out of memory");
		return NULL;
	}
	lk->inner = inner;
	lk->spec = *spec;
	if (ps_transport_base_init(&lk->base, &link_ops, &inner->layout, err)
	    || link_init_sync(lk, err)) {
		free(lk->free_at);
		free(lk);
		ps_transport_destroy(inner);
		return NULL;
	}
	lk->base.rank = inner->rank;
	lk->base.nranks = inner->nranks;
	lk->base.all_local = inner->all_local;
	if (pthread_create(&lk->thread, NULL, deliver_main, lk)) {
		parsa_fail(err, PARSA_ENOMEM, "link: cannot start its thread");
		link_destroy(&lk->base);
		return NULL;
	}
	lk->thread_ok = 1;
	return &lk->base;
}

int ps_link_is_link(const struct ps_transport *tp)
{
	return tp && tp->ops == &link_ops;
}

void ps_link_get_stats(struct ps_transport *tp, struct ps_link_stats *st)
{
	struct ps_link *lk = (struct ps_link *)tp;

	memset(st, 0, sizeof(*st));
	if (!ps_link_is_link(tp))
		return;
	pthread_mutex_lock(&lk->mu);
	*st = lk->st;
	pthread_mutex_unlock(&lk->mu);
}
