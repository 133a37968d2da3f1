/*
 * base_time: the monotonic clock, read in one place.
 *
 * Every duration the project measures or waits for (timings in reports,
 * deadlines of the refinement, the parameter server's timeouts, request
 * latencies) is on CLOCK_MONOTONIC, which never jumps with the wall clock.
 */
#ifndef BASE_TIME_H
#define BASE_TIME_H

#include <stdint.h>
#include <time.h>

/* Seconds on CLOCK_MONOTONIC. */
double base_now(void);

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t base_now_ns(void);

/* The CLOCK_MONOTONIC time s >= 0 seconds from now, as a timespec for
 * pthread_cond_timedwait on a condition variable whose clock is
 * CLOCK_MONOTONIC (pthread_condattr_setclock). */
struct timespec base_deadline(double s);

#endif /* BASE_TIME_H */
