/*
 * test_progress: the progress bar's ETA (part_progress_eta): empty until
 * the pace says something (2% done, half a second in) and at the end;
 * seconds, then minutes and seconds, then hours; the time left at the
 * pace so far; never more than the buffer.
 */
#include <string.h>

#include "harness.h"
#include "part_progress.h"

static void eta(double frac, double elapsed, const char *want)
{
	char buf[32];

	part_progress_eta(buf, sizeof(buf), frac, elapsed);
	CHECK_STR(buf, want);
}

static void test_eta_when(void)
{
	eta(0.0, 10.0, "");
	eta(0.019, 10.0, "");  /* under 2% */
	eta(0.5, 0.49, "");    /* under half a second */
	eta(1.0, 10.0, "");    /* done */
	eta(1.5, 10.0, "");
	eta(0.02, 0.5, "  ETA 24s");
}

static void test_eta_pace(void)
{
	eta(0.5, 10.0, "  ETA 10s");  /* as long again */
	eta(0.25, 10.0, "  ETA 30s");
	eta(0.9, 9.0, "  ETA 1s");
	eta(0.999, 1.0, "  ETA 0s");
	eta(0.5, 59.4, "  ETA 59s");
	eta(0.5, 59.7, "  ETA 1m00s"); /* rounded before it is split */
	eta(0.5, 60.0, "  ETA 1m00s");
	eta(0.5, 119.6, "  ETA 2m00s");
	eta(0.1, 20.5, "  ETA 3m04s"); /* 184.5 s */
	eta(0.5, 3599.0, "  ETA 59m59s");
	eta(0.02, 20000.0, "  ETA 272h"); /* 980,000 s */
}

static void test_eta_small_buffers(void)
{
	char buf[8] = "xxxxxxx";

	part_progress_eta(buf, sizeof(buf), 0.5, 10.0);
	CHECK_STR(buf, "  ETA 1"); /* cut, terminated */
	part_progress_eta(buf, 1, 0.5, 10.0);
	CHECK_STR(buf, "");
	memset(buf, 'x', sizeof(buf));
	part_progress_eta(buf, 0, 0.5, 10.0); /* nothing written */
	CHECK(buf[0] == 'x');
}

int main(void)
{
	RUN(test_eta_when);
	RUN(test_eta_pace);
	RUN(test_eta_small_buffers);
	return harness_done();
}
