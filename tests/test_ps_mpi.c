/*
 * test_ps_mpi: the parameter server on the OpenMPI transport, for real.
 *
 * Run plainly, this is a harness test program: it launches itself with
 * `timeout mpirun -np N` (loopback TCP only) in several modes and checks
 * each run's exit status, time and messages:
 *   sum      pushes/pulls/hooks/tasks with known results; every rank exits 0
 *   die      worker 1 calls _exit(3) mid-run: mpirun must end the job
 *            with a non-zero exit well within the timeout and every other
 *            rank must print why it stopped (killed by mpirun: the SIGTERM
 *            handler below; with orte_abort_on_non_zero_status=0 the ranks
 *            detect the silent peer themselves: "no message from rank 1")
 *   garbage  worker 1 sends a malformed message to the scheduler's rank:
 *            every rank stops with "malformed message"
 *   idle     the cluster idles for 3 s: the comm threads must not spin
 *            (each rank reports its CPU time)
 *   relax    relaxed polling (ps_transport_mpi_relax): a worker waiting
 *            for a slow server's answer gets it when it arrives, not when
 *            its comm thread next wakes (relax_worker)
 *   sum-ssp, sum-essp, die-ssp, die-essp
 *            the same under the consistency models ssp:1 / essp:1 (clocks,
 *            parked pulls, eager pushes): known totals; worker 1 dies
 *            while the others wait in a parked pull or for eager pushes
 * Run as `test_ps_mpi --rank MODE TIMEOUT` it is the MPI program itself.
 * Skips (counted as skipped) without mpirun or without the MPI transport.
 */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "ps.h"
#include "ps_transport_mpi.h"

#define ITERS 40
#define NKEYS 100
#define MPI_TIMEOUT 60
#define RELAX_S 0.4      /* relax mode: the comm threads' longest sleep, */
#define SERVER_DELAY 0.3 /* the servers' delay before answering, */
#define RELAX_ROUNDS 4
#define RELAX_LATE_MAX 0.1 /* and the most an answer may come late */

/* ------------------------------------------------------ the MPI program */

struct prog {
	const char *mode;
	int model;               /* consistency model: *-ssp, *-essp modes */
	struct ps_transport *tp; /* garbage mode only */
	uint64_t keys[NKEYS];
};

static int fail_if(int cond, struct parsa_err *err, const char *what)
{
	return cond ? parsa_fail(err, PARSA_EINVAL, "check failed: %s", what)
		    : 0;
}

static uint32_t or_bit(uint32_t w) { return (w * 13 + 64) % 65; }

/* SSP: pull the ADD table for this clock; its totals hold every worker's
 * updates of clocks < it - 1 (S = 1).  ESSP: wait for that snapshot. */
static int clocked_read(struct ps_node *w, const struct prog *p, int it,
			struct parsa_err *err)
{
	static double sum[NKEYS];
	uint32_t nw = ps_num_workers(w), j;
	uint64_t ts;
	int rc;

	if (p->model == PS_CONS_ESSP && it > 0)
		return ps_eager_wait(w, it - 1, err);
	rc = ps_pull(w, 1, p->keys, NKEYS, sum, &ts, err); /* ESSP: subscribe */
	if (!rc)
		rc = ps_wait(w, ts, err);
	for (j = 0; !rc && j < NKEYS; j++)
		rc = fail_if(sum[j] < (double)nw * (it - 1), err,
			     "an SSP read misses updates older than the bound");
	return rc;
}

static int push_rounds(struct ps_node *w, const struct prog *p,
		       struct parsa_err *err)
{
	unsigned char bits[NKEYS * 9] = { 0 };
	double one[NKEYS];
	uint32_t me = ps_node_index(w), b = or_bit(me), j;
	uint64_t ts;
	int it, rc = 0;

	for (j = 0; j < NKEYS; j++) {
		one[j] = 1.0;
		bits[j * 9 + b / 8] |= (unsigned char)(1u << (b % 8));
	}
	for (it = 0; !rc && it < ITERS; it++) {
		if (me == 1 && it == ITERS / 4 &&
		    strncmp(p->mode, "die", 3) == 0)
			_exit(3); /* a rank dies abruptly */
		if (p->model != PS_CONS_TAU) {
			rc = clocked_read(w, p, it, err);
			if (!rc)
				rc = ps_push(w, 0, p->keys, NKEYS, bits, &ts,
					     err);
			if (!rc)
				rc = ps_push(w, 1, p->keys, NKEYS, one, &ts,
					     err);
			if (!rc)
				rc = ps_clock(w, err);
			continue;
		}
		rc = ps_iter_begin(w, NULL, err);
		if (!rc)
			rc = ps_push(w, 0, p->keys, NKEYS, bits, &ts, err);
		if (!rc)
			rc = ps_push(w, 1, p->keys, NKEYS, one, &ts, err);
	}
	return rc ? rc : ps_wait_all(w, err);
}

static int check_totals(struct ps_node *w, const struct prog *p,
			struct parsa_err *err)
{
	static unsigned char bits[NKEYS * 9];
	static double sum[NKEYS];
	unsigned char want[9] = { 0 };
	uint32_t nw = ps_num_workers(w), j;
	uint64_t t1, t2;
	int rc;

	rc = ps_pull(w, 0, p->keys, NKEYS, bits, &t1, err);
	if (!rc)
		rc = ps_pull(w, 1, p->keys, NKEYS, sum, &t2, err);
	if (!rc)
		rc = ps_wait_all(w, err);
	for (j = 0; j < nw; j++)
		want[or_bit(j) / 8] |= (unsigned char)(1u << (or_bit(j) % 8));
	for (j = 0; !rc && j < NKEYS; j++) {
		rc = fail_if(sum[j] != (double)ITERS * nw, err, "ADD total");
		if (!rc)
			rc = fail_if(memcmp(bits + j * 9, want, 9) != 0, err,
				     "OR of 65-bit masks");
	}
	return rc;
}

static int prog_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	struct prog *p = arg;
	static const char junk[80] = "this is not a parameter-server message";
	int rc;

	if (strcmp(p->mode, "garbage") == 0 && ps_node_index(w) == 1) {
		void *b = malloc(sizeof(junk));

		if (!b)
			return parsa_fail(err, PARSA_ENOMEM, "junk");
		memcpy(b, junk, sizeof(junk));
		rc = ps_transport_send(p->tp, 0, b, sizeof(junk), err);
		if (rc)
			return rc;
	}
	rc = push_rounds(w, p, err);
	if (!rc)
		rc = ps_barrier(w, err);
	if (!rc)
		rc = check_totals(w, p, err);
	return rc;
}

/*
 * Relax mode: worker 0 pulls keys of server 1 (on rank 1), which answers
 * SERVER_DELAY later, and waits at once.  Its comm thread, sleeping ever
 * longer since the pull went out (no other traffic: worker 1 waits in the
 * barrier), must be woken by the wait itself, so the answer is taken as
 * soon as it arrives instead of at the end of a sleep of up to RELAX_S.
 */
static int relax_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	static double got[NKEYS];
	const struct prog *p = arg;
	const uint64_t *keys = p->keys + NKEYS - 10; /* server 1's range */
	double worst = 0, t;
	uint64_t ts;
	int rc = 0;

	for (int it = 0; !rc && ps_node_index(w) == 0 && it < RELAX_ROUNDS;
	     it++) {
		rc = ps_pull(w, 1, keys, 10, got, &ts, err);
		t = ps_clock_now();
		if (!rc)
			rc = ps_wait(w, ts, err);
		t = ps_clock_now() - t - SERVER_DELAY;
		worst = t > worst ? t : worst;
	}
	if (!rc && ps_node_index(w) == 0)
		printf("rank worker 0: answer at most %.4f s late in %d "
		       "rounds\n", worst, RELAX_ROUNDS);
	if (!rc)
		rc = fail_if(worst > RELAX_LATE_MAX, err, "a waiting worker "
			     "woke its relaxed comm thread");
	return rc ? rc : ps_barrier(w, err);
}

/* Hook 0: how many keys of table 1 this server stores. */
static int count_hook(struct ps_server *s, const void *req, size_t len,
		      struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	const uint64_t *keys;
	unsigned char *vals;
	size_t n;
	uint64_t n64;
	int rc = ps_server_table(s, 1, &keys, &vals, &n, NULL, err);

	(void)req;
	(void)len;
	(void)arg;
	n64 = n;
	return rc ? rc : ps_reply_append(reply, &n64, sizeof(n64), err);
}

static int prog_server_init(struct ps_server *s, void *arg,
			    struct parsa_err *err)
{
	(void)arg;
	return ps_server_register_hook(s, 0, count_hook, NULL, err);
}

static int add_count(void *arg, uint32_t server, const void *resp,
		     size_t len, struct parsa_err *err)
{
	uint64_t *total = arg, n;

	(void)server;
	if (len != 8)
		return parsa_fail(err, PARSA_EPARSE, "hook reply %zu bytes",
				  len);
	memcpy(&n, resp, 8);
	*total += n;
	return 0;
}

static int prog_task(struct ps_node *w, uint64_t id, const void *payload,
		     size_t len, void *arg, struct parsa_err *err)
{
	uint64_t total = 0;
	int rc;

	(void)id;
	(void)arg;
	if (len != 5 || memcmp(payload, "count", 5) != 0)
		return parsa_fail(err, PARSA_EINVAL, "bad task payload");
	rc = ps_call_hook(w, PS_ALL, 0, NULL, 0, add_count, &total, err);
	if (!rc)
		rc = fail_if(total != NKEYS, err, "keys stored over servers");
	return rc ? rc : ps_report_progress(w, &total, sizeof(total), err);
}

static void count_progress(void *arg, uint32_t worker, const void *rec,
			   size_t len)
{
	(void)worker;
	(void)rec;
	if (len == 8)
		++*(int *)arg;
}

static int prog_sched(struct ps_node *s, void *arg, struct parsa_err *err)
{
	int seen = 0, rc;

	(void)arg;
	rc = ps_sched_start_task(s, PS_ALL, "count", 5, NULL, err);
	if (!rc)
		rc = ps_sched_wait_tasks(s, count_progress, &seen, err);
	if (!rc && seen != (int)ps_num_workers(s))
		rc = parsa_fail(err, PARSA_EINVAL, "%d progress records", seen);
	return rc;
}

static int idle_sched(struct ps_node *s, void *arg, struct parsa_err *err)
{
	(void)arg;
	return ps_sched_poll(s, 3.0, NULL, NULL, err);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) *
	       1e-6;
}

static void prog_config(struct ps_config *cfg, double timeout)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->num_tables = 2;
	cfg->tables[0].value_bytes = 9; /* 65-bit masks */
	cfg->tables[0].op = PS_OP_OR;
	cfg->tables[1].value_bytes = 8;
	cfg->tables[1].op = PS_OP_ADD_F64;
	cfg->tau = 2;
	cfg->timeout_s = timeout;
}

static void report_ok(int rank, const struct ps_result *res)
{
	struct ps_counters c;

	if (rank != 0 || !res->nodes)
		return;
	ps_result_total(res, &c);
	printf("rank 0: messages sent local %llu remote %llu, bytes local "
	       "%llu remote %llu\n", (unsigned long long)c.msgs_sent[PS_LOCAL],
	       (unsigned long long)c.msgs_sent[PS_REMOTE],
	       (unsigned long long)c.bytes_sent[PS_LOCAL],
	       (unsigned long long)c.bytes_sent[PS_REMOTE]);
}

/* Garbage and relax modes: the transport is created here (so the worker
 * can misuse it, or to relax its polling). */
static int run_own(struct ps_config *cfg, struct ps_app *app,
		   struct prog *p, int *rank, int *nranks,
		   struct parsa_err *err)
{
	struct ps_layout l = { 0, 0, 0 };
	int rc;

	p->tp = ps_transport_mpi_create(&l, cfg->timeout_s, err);
	if (!p->tp)
		return err->code;
	if (strcmp(p->mode, "relax") == 0)
		ps_transport_mpi_relax(p->tp, RELAX_S);
	*rank = (int)p->tp->rank;
	*nranks = (int)p->tp->nranks;
	rc = ps_run(p->tp, cfg, app, NULL, err);
	ps_transport_destroy(p->tp);
	return rc;
}

/* Rank as a string for the signal handler (set before the run). */
static char term_msg[160];
static volatile sig_atomic_t term_len;

static void on_term(int sig)
{
	if (term_len > 0 && write(2, term_msg, (size_t)term_len) < 0)
		sig = 0;
	_exit(128 + (sig ? sig : SIGTERM));
}

/* mpirun stops the other ranks with SIGTERM when one fails: say so.
 * (Program-level policy, like ignoring SIGPIPE: the library sets no
 * handlers; a real main() using the MPI transport should do the same.) */
static void install_term_handler(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	struct sigaction sa;
	int n = snprintf(term_msg, sizeof(term_msg), "rank %s: terminated by "
			 "SIGTERM (mpirun stops the job: another rank "
			 "failed)\n", r ? r : "?");

	term_len = n > 0 && (size_t)n < sizeof(term_msg) ? n : 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a dead peer's socket: EPIPE, not death */
}

static int rank_main(const char *mode, double timeout)
{
	struct prog p;
	struct ps_config cfg;
	struct ps_app app = { 0 };
	struct ps_result res = { 0 };
	struct parsa_err err = { 0 };
	int rank = -1, nranks = 0, rc, j;
	double t0, c0;

	install_term_handler();
	memset(&p, 0, sizeof(p));
	p.mode = mode;
	for (j = 0; j < NKEYS; j++) /* spread over every server's range */
		p.keys[j] = (uint64_t)j * (UINT64_MAX / NKEYS) + 17;
	prog_config(&cfg, timeout);
	if (strstr(mode, "-essp"))
		p.model = PS_CONS_ESSP;
	else if (strstr(mode, "-ssp"))
		p.model = PS_CONS_SSP;
	cfg.consistency = p.model;
	cfg.staleness = 1;
	cfg.tables[1].eager = 1;
	app.server_init = prog_server_init;
	app.worker_main = prog_worker;
	app.task = prog_task;
	app.sched_main = prog_sched;
	app.arg = &p;
	if (strcmp(mode, "idle") == 0) {
		app.worker_main = NULL;
		app.sched_main = idle_sched;
	}
	if (strcmp(mode, "relax") == 0) {
		cfg.server_delay_s = SERVER_DELAY;
		app.worker_main = relax_worker;
		app.sched_main = NULL; /* nothing pushed: no count task */
	}
	t0 = ps_clock_now();
	c0 = cpu_seconds();
	if (strcmp(mode, "garbage") == 0 || strcmp(mode, "relax") == 0)
		rc = run_own(&cfg, &app, &p, &rank, &nranks, &err);
	else
		rc = ps_run_mpi(&cfg, &app, &res, &rank, &nranks, &err);
	if (rc) {
		fprintf(stderr, "rank %d: error: %s\n", rank, err.msg);
		fflush(stderr);
		_exit(1); /* MPI was not finalised: do not run atexit hooks */
	}
	report_ok(rank, &res);
	ps_result_release(&res);
	printf("rank %d: cpu %.3f s in %.3f s\n", rank, cpu_seconds() - c0,
	       ps_clock_now() - t0);
	printf("rank %d of %d: ok\n", rank, nranks);
	return 0;
}

/* ------------------------------------------------------------ launcher */

static char self_path[4096];
static const char *mpirun;

#define NEED_MPI()                                                          \
	do {                                                                \
		if (!mpirun)                                                \
			SKIP("mpirun not found");                           \
		if (!ps_mpi_available())                                    \
			NO_PLUGIN();                                        \
	} while (0)

/* The Makefile says when it built the plugin: then not loading it is a
 * failure (a broken search), not a reason to skip. */
#ifdef PS_EXPECT_MPI_PLUGIN
#define NO_PLUGIN()                                                         \
	do {                                                                \
		struct parsa_err e_ = { 0 };                                \
		struct ps_layout l_ = { 1, 1, 0 };                          \
		/* fails at once without the plugin: its message */         \
		CHECK(ps_transport_mpi_create(&l_, 1.0, &e_) != NULL);      \
		fprintf(stderr, "the MPI plugin was built but does not "    \
			"load: %s\n", e_.msg);                              \
		return;                                                     \
	} while (0)
#else
#define NO_PLUGIN() SKIP("no MPI transport (parsa-mpi.so) in this build")
#endif

static const char *find_in_path(const char *name)
{
	static char buf[4096];
	const char *path = getenv("PATH"), *p = path, *end;

	while (p && *p) {
		end = strchr(p, ':');
		snprintf(buf, sizeof(buf), "%.*s/%s",
			 (int)(end ? end - p : (long)strlen(p)), p, name);
		if (access(buf, X_OK) == 0)
			return buf;
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

struct launch {
	int status;       /* exit status of timeout+mpirun, -1 on error */
	double seconds;
	char out[1 << 20]; /* stdout + stderr: all of it, or its first and
			    * last LAUNCH_KEEP bytes around a "[...]" line
			    * (a dying TCP peer can make a rank print
			    * thousands of lines, 150 bytes each, between
			    * a survivor's reason and mpirun's verdict) */
};

#define LAUNCH_KEEP 500000
_Static_assert(2 * LAUNCH_KEEP + 16 <= sizeof(((struct launch *)0)->out),
	       "launch: the head, the [...] line and the tail fit out");

static void launch(int np, const char *mode, int timeout, const char *extra,
		   struct launch *l)
{
	static char tail[LAUNCH_KEEP];
	char cmd[8192], buf[4096];
	size_t n = 0, got, t = 0; /* t: bytes past the head, ring in tail */
	struct timespec a, b;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "timeout -k 5 %d %s -np %d --oversubscribe --mca btl self,tcp "
		 "--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo %s "
		 "%s --rank %s %d 2>&1", MPI_TIMEOUT, mpirun, np, extra,
		 self_path, mode, timeout);
	clock_gettime(CLOCK_MONOTONIC, &a);
	l->status = -1;
	l->out[0] = '\0';
	f = popen(cmd, "r");
	if (!f)
		return;
	while ((got = fread(buf, 1, sizeof(buf), f)) > 0)
		for (size_t i = 0; i < got; i++)
			if (n < LAUNCH_KEEP)
				l->out[n++] = buf[i];
			else
				tail[t++ % LAUNCH_KEEP] = buf[i];
	if (t <= LAUNCH_KEEP) {
		memcpy(l->out + n, tail, t);
		n += t;
	} else {
		n += (size_t)snprintf(l->out + n, sizeof(l->out) - n,
				      "\n[...]\n");
		for (size_t i = 0; i < LAUNCH_KEEP; i++)
			l->out[n++] = tail[(t + i) % LAUNCH_KEEP];
	}
	l->out[n] = '\0';
	l->status = pclose(f);
	clock_gettime(CLOCK_MONOTONIC, &b);
	l->seconds = (double)(b.tv_sec - a.tv_sec) +
		     (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
	if (l->status != -1 && WIFEXITED(l->status))
		l->status = WEXITSTATUS(l->status);
	printf("  mpirun -np %d %s %s: exit %d after %.1f s\n", np, extra,
	       mode, l->status, l->seconds);
}

static int count_lines(const char *out, const char *needle)
{
	int n = 0;
	const char *p = out;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

static void dump_on_failure(const struct launch *l)
{
	if (harness_cur_failed > 0)
		fprintf(stderr, "---- output ----\n%s----------------\n",
			l->out);
}

static void check_sum(int np)
{
	static struct launch l;
	char want[64];
	int r;

	NEED_MPI();
	launch(np, "sum", 20, "", &l);
	CHECK_INT(l.status, ==, 0);
	for (r = 0; r < np; r++) {
		snprintf(want, sizeof(want), "rank %d of %d: ok", r, np);
		CHECK_CONTAINS(l.out, want);
	}
	CHECK_CONTAINS(l.out, "rank 0: messages sent local");
	CHECK(strstr(l.out, "remote 0,") == NULL); /* some traffic crossed */
	dump_on_failure(&l);
}

static void test_mpi_sum_2(void) { check_sum(2); }

/* While idle, each rank uses well under 20% of a core (no busy-spin). */
static void test_mpi_idle_no_spin(void)
{
	static struct launch l;
	const char *p;
	int ranks = 0;

	NEED_MPI();
	launch(2, "idle", 20, "", &l);
	CHECK_INT(l.status, ==, 0);
	for (p = l.out; (p = strstr(p, ": cpu ")); p++) {
		double cpu = 0, wall = 1;

		CHECK(sscanf(p, ": cpu %lf s in %lf s", &cpu, &wall) == 2);
		printf("  idle rank: %.3f s CPU in %.3f s\n", cpu, wall);
		CHECK(wall >= 3.0);
		CHECK(cpu < 0.2 * wall);
		ranks++;
	}
	CHECK_INT(ranks, ==, 2);
	dump_on_failure(&l);
}
static void test_mpi_sum_3_oversubscribed(void) { check_sum(3); }

/* Relaxed polling: replies already received reach a worker that starts
 * waiting at once, not after the comm thread's (long) sleep. */
static void test_mpi_relaxed_wait_wakes(void)
{
	static struct launch l;

	NEED_MPI();
	launch(2, "relax", 20, "", &l);
	CHECK_INT(l.status, ==, 0);
	CHECK_INT(count_lines(l.out, " of 2: ok"), ==, 2);
	CHECK_INT(count_lines(l.out, "s late in"), ==, 1);
	dump_on_failure(&l);
}

/* Every rank but `dead` printed a line saying why it stopped. */
static void check_every_rank_said(const struct launch *l, int np, int dead,
				  const char *why1, const char *why2)
{
	char a[96], b[96];
	int r;

	for (r = 0; r < np; r++) {
		if (r == dead)
			continue;
		snprintf(a, sizeof(a), "rank %d: %s", r, why1);
		snprintf(b, sizeof(b), "rank %d: %s", r, why2);
		if (!strstr(l->out, a) && !strstr(l->out, b)) {
			fprintf(stderr, "rank %d printed neither \"%s\" nor "
				"\"%s\"\n", r, a, b);
			harness_cur_failed = 1;
		}
	}
}

/* At least one rank but `dead` printed a line saying why it stopped. */
static void check_some_rank_said(const struct launch *l, int np, int dead,
				 const char *why1, const char *why2)
{
	char a[96], b[96];
	int said = 0;

	for (int r = 0; r < np; r++) {
		if (r == dead)
			continue;
		snprintf(a, sizeof(a), "rank %d: %s", r, why1);
		snprintf(b, sizeof(b), "rank %d: %s", r, why2);
		said += strstr(l->out, a) || strstr(l->out, b);
	}
	if (said == 0) {
		fprintf(stderr, "no surviving rank said why it stopped\n");
		harness_cur_failed = 1;
	}
}

static void check_failure(int np, const char *mode, const char *extra,
			  struct launch *l)
{
	const int timeout = 4;

	launch(np, mode, timeout, extra, l);
	CHECK(l->status != 124 && l->status != 137); /* not timed out */
	CHECK(l->seconds < 3 * timeout + 10);
	CHECK(count_lines(l->out, ": ok") == 0);
}

/* Default mpirun: it ends the job when rank 1 exits with 3. */
static void check_rank_dies(int np)
{
	static struct launch l;

	NEED_MPI();
	check_failure(np, "die", "", &l);
	CHECK_INT(l.status, ==, 3);
	CHECK_CONTAINS(l.out, "exited with non-zero status");
	/* mpirun kills the survivors (SIGTERM, then SIGKILL soon after), so
	 * not every survivor gets to print; at least one must say why */
	check_some_rank_said(&l, np, 1, "terminated by SIGTERM", "error: ");
	dump_on_failure(&l);
}

static void test_mpi_rank_dies_2(void) { check_rank_dies(2); }
static void test_mpi_rank_dies_3(void) { check_rank_dies(3); }

/* mpirun told not to kill: the survivors detect the silent rank. */
static void test_mpi_rank_dies_detected_3(void)
{
	static struct launch l;

	NEED_MPI();
	check_failure(3, "die", "--mca orte_abort_on_non_zero_status 0", &l);
	/* (this mpirun setting makes mpirun itself exit 0).  Each survivor
	 * names the silent peer: "no message from rank 1 within 4.0 s",
	 * "no reply from server 1 (node 2) within 4.0 s", or "rank 0 failed:"
	 * forwarding one of those. */
	if (l.status != 0) {
		/* Open MPI's own run-time sometimes tears the job down first
		 * when the dead rank's sockets close ("connect() failed",
		 * "Data unpack would read past end of buffer"); that still ends
		 * every rank, non-zero and in time (checked above). */
		printf("  mpirun ended the job itself (exit %d)\n", l.status);
		dump_on_failure(&l);
		return;
	}
	check_every_rank_said(&l, 3, 1, "error: ", "error: ");
	CHECK_CONTAINS(l.out, "within 4.0 s");
	CHECK(strstr(l.out, "rank 1 within") || strstr(l.out, "server 1 (node"));
	dump_on_failure(&l);
}

/* Consistency models: the same sums; a dying worker under each model
 * (the others wait in parked pulls / for eager pushes) ends every rank,
 * in time, whether mpirun or the survivors notice. */
static void check_sum_clocked(const char *mode)
{
	static struct launch l;

	NEED_MPI();
	launch(3, mode, MPI_TIMEOUT, "", &l);
	CHECK_INT(l.status, ==, 0);
	CHECK_INT(count_lines(l.out, ": ok"), ==, 3);
	dump_on_failure(&l);
}

static void test_mpi_sum_ssp_3(void) { check_sum_clocked("sum-ssp"); }
static void test_mpi_sum_essp_3(void) { check_sum_clocked("sum-essp"); }

static void check_dies_clocked(const char *mode, const char *extra)
{
	static struct launch l;

	NEED_MPI();
	check_failure(3, mode, extra, &l);
	if (!*extra) {
		CHECK_INT(l.status, ==, 3);
		check_some_rank_said(&l, 3, 1, "terminated by SIGTERM",
				     "error: ");
	} else if (l.status == 0) { /* the survivors found out themselves */
		check_every_rank_said(&l, 3, 1, "error: ", "error: ");
		CHECK_CONTAINS(l.out, "within 4.0 s");
	}
	dump_on_failure(&l);
}

static void test_mpi_dies_ssp(void) { check_dies_clocked("die-ssp", ""); }
static void test_mpi_dies_essp(void) { check_dies_clocked("die-essp", ""); }

static void test_mpi_dies_detected_ssp(void)
{
	check_dies_clocked("die-ssp", "--mca orte_abort_on_non_zero_status 0");
}

static void test_mpi_dies_detected_essp(void)
{
	check_dies_clocked("die-essp",
			   "--mca orte_abort_on_non_zero_status 0");
}

static void test_mpi_malformed_2(void)
{
	static struct launch l;

	NEED_MPI();
	check_failure(2, "garbage", "", &l);
	CHECK(l.status != 0 && l.status != -1);
	check_every_rank_said(&l, 2, -1, "error: malformed message",
			      "error: rank 0 failed: malformed message");
	dump_on_failure(&l);
}

static void setup_env(const char *argv0)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char buf[1024];
	ssize_t n = readlink("/proc/self/exe", self_path,
			     sizeof(self_path) - 1);

	if (n > 0)
		self_path[n] = '\0';
	else
		snprintf(self_path, sizeof(self_path), "%s", argv0);
	mpirun = find_in_path("mpirun");
	if (mpirun)
		mpirun = strdup(mpirun);
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
	/* OpenMPI's own allocations look like leaks to LSan */
	snprintf(buf, sizeof(buf), "%s%sdetect_leaks=0", asan ? asan : "",
		 asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", buf, 1);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--rank") == 0)
		return rank_main(argv[2], strtod(argv[3], NULL));
	setup_env(argv[0]);
	RUN(test_mpi_sum_2);
	RUN(test_mpi_sum_3_oversubscribed);
	RUN(test_mpi_idle_no_spin);
	RUN(test_mpi_relaxed_wait_wakes);
	RUN(test_mpi_rank_dies_2);
	RUN(test_mpi_rank_dies_3);
	RUN(test_mpi_rank_dies_detected_3);
	RUN(test_mpi_malformed_2);
	RUN(test_mpi_sum_ssp_3);
	RUN(test_mpi_sum_essp_3);
	RUN(test_mpi_dies_ssp);
	RUN(test_mpi_dies_essp);
	RUN(test_mpi_dies_detected_ssp);
	RUN(test_mpi_dies_detected_essp);
	return harness_done();
}
