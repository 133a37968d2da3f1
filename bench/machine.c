/*
 * machine: what a second thread gives on this machine right now, for the
 * thread floors of the scale benchmark (bench/scale.py, BENCHMARKS.md).
 *
 * Parsa's phases are memory-bound: random reads of per-feature state
 * (masks, counts) and streams over the CSR.  On a shared virtual machine
 * what two threads get from the memory system changes with the other
 * tenants: on 2026-11-27 the same VM gave a random-access loop 1.92-1.96x
 * on two threads in the morning and 1.08-1.59x in the afternoon.  A floor
 * like "2 threads at least 1.75x faster than 1" can only be judged beside
 * what the hardware gave at the time; this prints it.
 *
 * Two loops, each run on 1 thread and on 2 threads at once, REPS times,
 * medians:
 *   random: independent 4-byte loads at pseudo-random places of a 512 MiB
 *           table (past every cache), STEPS per thread;
 *   stream: a sum over a 400 MB array, the whole on 1 thread, a half each
 *           on 2.
 * The 2-thread figure is work per second against the 1-thread one (2.00
 * = two cores' worth).
 *
 * usage: machine [--json] [--reps N]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TABLE_WORDS (UINT64_C(1) << 27) /* 512 MiB of uint32 */
#define STREAM_WORDS UINT64_C(100000000)  /* 400 MB */
#define STEPS UINT64_C(20000000)
#define MAX_REPS 99

struct job {
	const uint32_t *a;
	uint64_t lo, hi; /* stream: the words; random: the seed in lo */
	int random;
	uint64_t out;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *work(void *arg)
{
	struct job *j = arg;
	uint64_t acc = 0;

	if (j->random) {
		uint64_t s = j->lo * 0x9E3779B97F4A7C15ULL + 1;

		for (uint64_t i = 0; i < STEPS; i++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			acc += j->a[(s >> 20) & (TABLE_WORDS - 1)];
		}
	} else {
		for (uint64_t i = j->lo; i < j->hi; i++)
			acc += j->a[i];
	}
	j->out = acc;
	return NULL;
}

/* Seconds of one run of the loop on `threads` (1 or 2) threads. */
static double run(const uint32_t *a, int random, int threads, uint64_t *sink)
{
	struct job j[2];
	pthread_t th;
	int two = 0;
	double t0;

	for (int t = 0; t < 2; t++) {
		j[t].a = a;
		j[t].random = random;
		j[t].lo = random ? (uint64_t)t + 1
				 : (threads == 1 ? 0 : STREAM_WORDS / 2 * (uint64_t)t);
		j[t].hi = threads == 1 ? STREAM_WORDS
				       : STREAM_WORDS / 2 * ((uint64_t)t + 1);
	}
	t0 = now();
	if (threads == 2)
		two = pthread_create(&th, NULL, work, &j[1]) == 0;
	work(&j[0]);
	if (threads == 2 && two)
		pthread_join(th, NULL);
	else if (threads == 2)
		work(&j[1]); /* no second thread: the figure shows it */
	*sink += j[0].out + (threads == 2 ? j[1].out : 0);
	return now() - t0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int json = 0, reps = 5;
	double t1[2][MAX_REPS], t2[2][MAX_REPS], m1[2], m2[2];
	uint64_t sink = 0;
	uint32_t *a;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			reps = atoi(argv[++i]);
			if (reps < 1 || reps > MAX_REPS) {
				fprintf(stderr, "machine: --reps takes 1..%d\n", MAX_REPS);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: machine [--json] [--reps N]\n");
			return strcmp(argv[i], "--help") == 0 ? 0 : 2;
		}
	}
	a = malloc(TABLE_WORDS * sizeof(uint32_t));
	if (!a) {
		fprintf(stderr, "machine: out of memory (512 MiB)\n");
		return 1;
	}
	for (uint64_t i = 0; i < TABLE_WORDS; i++)
		a[i] = (uint32_t)i;
	/* interleaved, so a slow moment of the machine falls on both */
	for (int r = 0; r < reps; r++)
		for (int random = 0; random < 2; random++) {
			t1[random][r] = run(a, random, 1, &sink);
			t2[random][r] = run(a, random, 2, &sink);
		}
	for (int random = 0; random < 2; random++) {
		m1[random] = median(t1[random], reps);
		m2[random] = median(t2[random], reps);
	}
	/* random: twice the work on 2 threads; stream: the same work */
	if (json)
		printf("{\"random_1t_s\": %.4f, \"random_2t_s\": %.4f, "
		       "\"random_2v1\": %.3f, \"stream_1t_s\": %.4f, "
		       "\"stream_2t_s\": %.4f, \"stream_2v1\": %.3f, "
		       "\"reps\": %d, \"sink\": %llu}\n",
		       m1[1], m2[1], 2 * m1[1] / m2[1], m1[0], m2[0],
		       m1[0] / m2[0], reps, (unsigned long long)(sink & 1));
	else
		printf("random reads of a 512 MiB table: 1 thread %.1f M/s, "
		       "2 threads %.1f M/s: %.2fx\n"
		       "a stream over 400 MB: 1 thread %.2f GB/s, "
		       "2 threads %.2f GB/s: %.2fx\n"
		       "(medians of %d interleaved runs; 2.00x = two cores' "
		       "worth)\n",
		       STEPS / m1[1] / 1e6, 2 * STEPS / m2[1] / 1e6,
		       2 * m1[1] / m2[1], STREAM_WORDS * 4 / m1[0] / 1e9,
		       STREAM_WORDS * 4 / m2[0] / 1e9, m1[0] / m2[0], reps);
	free(a);
	return 0;
}
