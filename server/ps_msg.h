/*
 * ps_msg: the parameter server's wire format.
 *
 * Every message is one contiguous buffer: a fixed 64-byte header followed by
 * a payload of up to three sections, in this order:
 *
 *   keys    nkeys × uint64, strictly increasing   (absent if PS_MSGF_NOKEYS)
 *   values  nkeys × value_bytes                   (absent if value_bytes == 0)
 *   blob    blob_len opaque bytes (task payload, hook request/response,
 *           progress record, error text, statistics)
 *
 * With PS_MSGF_CLOCK the blob section starts with an 8-byte signed clock
 * (consistency models, ps.h): the requirement of a PULL or HOOK, the
 * snapshot of a reply or an EAGER push, the clocks a CLOCK completes.
 * ps_msg_decode takes it out (struct ps_msg.clock; blob and blob_len are
 * what follows); ps_msg_encode puts it in front of the blob.
 *
 * All integers are little-endian; the project only targets little-endian
 * hosts, and a byte-swapped peer fails the magic check.  Decoding never
 * trusts the buffer: every field is range-checked and the section sizes must
 * add up to the received length exactly, so ps_msg_decode() is safe on
 * arbitrary bytes (tests/fuzz_psmsg.c).  Both transports and every node
 * decode each received message before acting on it.
 *
 * Thread-safety: all functions are reentrant; no shared state.
 */
#ifndef PARSA_PS_MSG_H
#define PARSA_PS_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "parsa_err.h"

#define PS_MSG_MAGIC 0x314d5350u       /* "PSM1" as little-endian bytes */
#define PS_MSG_VERSION 1
#define PS_MSG_HEADER_SIZE 64
#define PS_MSG_MAX_PAYLOAD ((uint64_t)1 << 30) /* 1 GiB: fits an MPI int */
#define PS_MSG_MAX_VALUE_BYTES (1u << 20)
#define PS_MSG_MAX_NODES (1u << 20)     /* node ids are < this */

enum ps_msg_type {
	PS_MSG_PUSH = 1,        /* worker → server: keys + values, op in flags */
	PS_MSG_PUSH_ACK,        /* server → worker: no payload */
	PS_MSG_PULL,            /* worker → server: keys only */
	PS_MSG_PULL_REPLY,      /* server → worker: values only (NOKEYS) */
	PS_MSG_HOOK,            /* client → server: aux = hook id, blob = req */
	PS_MSG_HOOK_REPLY,      /* server → client: blob = response */
	PS_MSG_TASK,            /* scheduler → worker: aux = task id, blob */
	PS_MSG_TASK_DONE,       /* worker → scheduler: aux = task id */
	PS_MSG_PROGRESS,        /* worker → scheduler: blob = record */
	PS_MSG_BARRIER,         /* worker → scheduler: aux = generation */
	PS_MSG_BARRIER_RELEASE, /* scheduler → worker: aux = generation */
	PS_MSG_SHUTDOWN,        /* scheduler → worker/server */
	PS_MSG_SHUTDOWN_ACK,    /* worker/server → scheduler: blob = stats */
	PS_MSG_HEARTBEAT,       /* transport-level liveness (MPI) */
	PS_MSG_ABORT,           /* transport-level: blob = reason */
	PS_MSG_CLOCK,           /* worker → server: clock = clocks completed */
	PS_MSG_EAGER,           /* server → worker: keys + values pushed
				   unasked (ESSP), clock = snapshot, aux =
				   messages of the round still to come */
	PS_MSG_NTYPES
};

/* Flags: the low 8 bits carry an enum ps_op (push) or 0. */
#define PS_MSGF_OP_MASK 0xffu
#define PS_MSGF_NOKEYS (1u << 8) /* no key section (pull replies) */
#define PS_MSGF_ERROR (1u << 9)  /* reply: request failed, blob = text,
				    table = the PARSA_E* code */
#define PS_MSGF_CLOCK (1u << 10) /* blob starts with an int64 clock */
#define PS_MSGF_KNOWN (PS_MSGF_OP_MASK | PS_MSGF_NOKEYS | PS_MSGF_ERROR | \
		       PS_MSGF_CLOCK)
#define PS_MSG_MAX_OP 4          /* highest valid enum ps_op value */

/* Destination of transport-level messages (HEARTBEAT, ABORT). */
#define PS_NODE_TRANSPORT 0xffffffffu

/*
 * A decoded message, or the description of one to encode.  After
 * ps_msg_decode the section pointers point into the decoded buffer (borrowed:
 * valid while that buffer lives) and may be unaligned: read keys with
 * ps_msg_key().  For ps_msg_encode only the scalar fields are used.
 */
struct ps_msg {
	uint16_t type;        /* enum ps_msg_type */
	uint32_t src, dst;    /* node ids */
	uint32_t table;       /* table id (data messages) */
	uint32_t flags;       /* PS_MSGF_* | op */
	uint64_t ts;          /* requester's timestamp */
	uint64_t aux;         /* key offset / task id / hook id / generation */
	uint64_t nkeys;
	uint32_t value_bytes; /* bytes per key in the values section */
	uint32_t blob_len;    /* without the clock (PS_MSGF_CLOCK) */
	int64_t clock;        /* with PS_MSGF_CLOCK, else 0 */
	const unsigned char *keys;   /* decode only; NULL if NOKEYS or none */
	const unsigned char *values; /* decode only; NULL if none */
	const unsigned char *blob;   /* decode only; NULL if blob_len == 0 */
};

/* Bytes a message with these sizes needs, or 0 if over PS_MSG_MAX_PAYLOAD. */
size_t ps_msg_size(const struct ps_msg *m);

/*
 * Build a message: header from *m, then copies of keys (nkeys uint64, if not
 * NOKEYS), values (nkeys*value_bytes; NULL = zero-filled, to be filled in
 * place via ps_msg_values_mut) and blob (blob_len bytes).  *out is new
 * (free() it, or hand it to a transport's send, which steals it).
 * Returns 0, PARSA_ERANGE (too large) or PARSA_ENOMEM.
 */
int ps_msg_encode(const struct ps_msg *m, const uint64_t *keys,
		  const void *values, const void *blob, void **out,
		  size_t *out_len, struct parsa_err *err);

/* The values section of an encoded (own, writable) message buffer. */
unsigned char *ps_msg_values_mut(void *buf);

/*
 * Parse and validate buf[0..len).  On success fills *m (sections borrowed
 * from buf) and returns 0; otherwise PARSA_EPARSE with a message naming the
 * bad field ("bad magic 0x...", "length mismatch ...", "keys not sorted ...").
 * Never reads outside buf.
 */
int ps_msg_decode(const void *buf, size_t len, struct ps_msg *m,
		  struct parsa_err *err);

/* A static name for a message type ("PUSH", ...; "?" if unknown). */
const char *ps_msg_type_name(unsigned type);

/* Key i of a decoded message (i < nkeys, keys present). */
static inline uint64_t ps_msg_key(const struct ps_msg *m, uint64_t i)
{
	uint64_t k;

	memcpy(&k, m->keys + 8 * i, sizeof(k));
	return k;
}

#endif /* PARSA_PS_MSG_H */
