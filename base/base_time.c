/*
 * base_time: CLOCK_MONOTONIC readers (see base_time.h).
 */
#include "base_time.h"

double base_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t base_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec base_deadline(double s)
{
	struct timespec ts;
	double whole;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (!(s > 0))
		return ts;
	whole = (double)(time_t)s;
	ts.tv_sec += (time_t)whole;
	ts.tv_nsec += (long)((s - whole) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}
