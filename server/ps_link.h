/*
 * ps_link: an emulated network link between machines, as a transport
 * decorator.
 *
 * ps_link_create wraps any transport (threads or MPI) and delays every
 * message whose sender and receiver sit on different machines (by the
 * layout: ps_layout_machine), so that one host shows what remote traffic
 * would cost on a real network.  Messages between nodes of the same
 * machine, and transport-level messages, pass straight through.
 *
 * Model: one token bucket per ordered machine pair (a, b): a message of
 * len bytes sent at time t leaves the bucket at
 *     free[a][b] = max(t, free[a][b]) + 8 * len / bandwidth
 * and is delivered latency seconds later.  With per_machine set, machine a
 * has one bucket for all its remote messages (an egress NIC shared by
 * every destination) instead.  Delivery order per pair is the
 * send order, so the FIFO order the parameter server relies on is kept.
 * send() never blocks: delayed messages wait in a heap served by one
 * delivery thread, which hands them to the inner transport.
 *
 * Ownership: the link owns the inner transport (ps_transport_destroy of
 * the link destroys it; also when ps_link_create fails).  Failures are
 * shared both ways: a failure of the link is recorded on the inner
 * transport too (so MPI tells the other ranks), and the inner transport's
 * failure surfaces through recv.
 *
 * Thread-safety: as any transport (ps_transport.h).
 */
#ifndef PARSA_PS_LINK_H
#define PARSA_PS_LINK_H

#include <stdint.h>

#include "parsa_err.h"
#include "ps_transport.h"

struct ps_link_spec {
	double bits_per_s; /* bandwidth of each machine pair, > 0 */
	double latency_s;  /* one-way latency, >= 0 */
	int per_machine;   /* 0: bucket per machine pair; 1: per sender */
};

/*
 * Parse "BW,LAT": BW a number with an optional unit (bit/s: k, m, g with
 * optional "bit", e.g. "1gbit", "100mbit", "1e9"; "inf": latency only), LAT a number with an
 * optional unit (s, ms, us; default s), e.g. "1gbit,0.1ms", optionally
 * ",pair" (the default: a bucket per machine pair) or ",nic" (one per
 * sending machine).  0 or PARSA_EINVAL with a message naming the bad part.
 */
int ps_link_parse(const char *s, struct ps_link_spec *spec,
		  struct parsa_err *err);

/*
 * Wrap inner (stolen, also on failure) in an emulated link.  NULL on error
 * (EINVAL for a bad spec, ENOMEM, or a thread that cannot start).
 */
struct ps_transport *ps_link_create(struct ps_transport *inner,
				    const struct ps_link_spec *spec,
				    struct parsa_err *err);

/* Statistics of a link (all zero for a transport that is not a link). */
struct ps_link_stats {
	uint64_t delayed_msgs, delayed_bytes; /* remote messages delayed */
	uint64_t direct_msgs;                 /* passed straight through */
	double delay_s;                       /* sum of the delays applied */
};
void ps_link_get_stats(struct ps_transport *tp, struct ps_link_stats *st);

/* 1 if tp is a link made by ps_link_create. */
int ps_link_is_link(const struct ps_transport *tp);

#endif /* PARSA_PS_LINK_H */
