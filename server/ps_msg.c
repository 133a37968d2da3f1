/*
 * ps_msg: encode and validate parameter-server messages (see ps_msg.h).
 *
 * Header layout (byte offsets, little-endian):
 *    0 magic u32    4 version u16   6 type u16     8 src u32   12 dst u32
 *   16 table u32   20 flags u32    24 ts u64      32 aux u64   40 nkeys u64
 *   48 value_bytes u32             52 blob_len u32             56 payload u64
 * The header's blob_len counts the 8 clock bytes of PS_MSGF_CLOCK.
 */
#include "ps_msg.h"

#include <inttypes.h>
#include <stdlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ps_msg assumes a little-endian host"
#endif

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint16_t get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

const char *ps_msg_type_name(unsigned type)
{
	static const char *const names[PS_MSG_NTYPES] = {
		[PS_MSG_PUSH] = "PUSH",
		[PS_MSG_PUSH_ACK] = "PUSH_ACK",
		[PS_MSG_PULL] = "PULL",
		[PS_MSG_PULL_REPLY] = "PULL_REPLY",
		[PS_MSG_HOOK] = "HOOK",
		[PS_MSG_HOOK_REPLY] = "HOOK_REPLY",
		[PS_MSG_TASK] = "TASK",
		[PS_MSG_TASK_DONE] = "TASK_DONE",
		[PS_MSG_PROGRESS] = "PROGRESS",
		[PS_MSG_BARRIER] = "BARRIER",
		[PS_MSG_BARRIER_RELEASE] = "BARRIER_RELEASE",
		[PS_MSG_SHUTDOWN] = "SHUTDOWN",
		[PS_MSG_SHUTDOWN_ACK] = "SHUTDOWN_ACK",
		[PS_MSG_HEARTBEAT] = "HEARTBEAT",
		[PS_MSG_ABORT] = "ABORT",
		[PS_MSG_CLOCK] = "CLOCK",
		[PS_MSG_EAGER] = "EAGER",
	};

	if (type == 0 || type >= PS_MSG_NTYPES)
		return "?";
	return names[type];
}

/* Payload bytes for the given sizes, or UINT64_MAX on overflow/too large. */
static uint64_t payload_size(uint64_t nkeys, uint32_t vbytes, uint32_t blob,
			     int has_keys)
{
	uint64_t per_key = (has_keys ? 8u : 0u) + (uint64_t)vbytes;

	if (per_key && nkeys > PS_MSG_MAX_PAYLOAD / per_key)
		return UINT64_MAX;
	if (nkeys * per_key + blob > PS_MSG_MAX_PAYLOAD)
		return UINT64_MAX;
	return nkeys * per_key + blob;
}

/* Blob bytes on the wire: the clock, then the blob. */
static uint64_t wire_blob(const struct ps_msg *m)
{
	return (uint64_t)m->blob_len + (m->flags & PS_MSGF_CLOCK ? 8 : 0);
}

size_t ps_msg_size(const struct ps_msg *m)
{
	uint64_t p;

	if (wire_blob(m) > UINT32_MAX)
		return 0;
	p = payload_size(m->nkeys, m->value_bytes, (uint32_t)wire_blob(m),
			 !(m->flags & PS_MSGF_NOKEYS));

	return p == UINT64_MAX ? 0 : (size_t)(PS_MSG_HEADER_SIZE + p);
}

static void write_header(unsigned char *b, const struct ps_msg *m,
			 uint64_t payload)
{
	put32(b + 0, PS_MSG_MAGIC);
	put16(b + 4, PS_MSG_VERSION);
	put16(b + 6, m->type);
	put32(b + 8, m->src);
	put32(b + 12, m->dst);
	put32(b + 16, m->table);
	put32(b + 20, m->flags);
	put64(b + 24, m->ts);
	put64(b + 32, m->aux);
	put64(b + 40, m->nkeys);
	put32(b + 48, m->value_bytes);
	put32(b + 52, (uint32_t)wire_blob(m));
	put64(b + 56, payload);
}

int ps_msg_encode(const struct ps_msg *m, const uint64_t *keys,
		  const void *values, const void *blob, void **out,
		  size_t *out_len, struct parsa_err *err)
{
	size_t len = ps_msg_size(m), kb, vb;
	unsigned char *b, *p;

	*out = NULL;
	if (len == 0)
		return parsa_fail(err, PARSA_ERANGE,
				  "message too large: %" PRIu64 " keys of %u "
				  "bytes + %u blob bytes", m->nkeys,
				  m->value_bytes, m->blob_len);
	b = malloc(len);
	if (!b)
		return parsa_fail(err, PARSA_ENOMEM, "message of %zu bytes",
				  len);
	write_header(b, m, len - PS_MSG_HEADER_SIZE);
	kb = (m->flags & PS_MSGF_NOKEYS) ? 0 : (size_t)m->nkeys * 8;
	vb = (size_t)m->nkeys * m->value_bytes;
	p = b + PS_MSG_HEADER_SIZE;
	if (kb)
		memcpy(p, keys, kb);
	if (vb && values)
		memcpy(p + kb, values, vb);
	else if (vb)
		memset(p + kb, 0, vb);
	p += kb + vb;
	if (m->flags & PS_MSGF_CLOCK) {
		put64(p, (uint64_t)m->clock);
		p += 8;
	}
	if (m->blob_len)
		memcpy(p, blob, m->blob_len);
	*out = b;
	*out_len = len;
	return 0;
}

unsigned char *ps_msg_values_mut(void *buf)
{
	unsigned char *b = buf;
	uint32_t flags = get32(b + 20);
	uint64_t nkeys = get64(b + 40);

	return b + PS_MSG_HEADER_SIZE +
	       ((flags & PS_MSGF_NOKEYS) ? 0 : (size_t)nkeys * 8);
}

static void read_header(const unsigned char *b, struct ps_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = get16(b + 6);
	m->src = get32(b + 8);
	m->dst = get32(b + 12);
	m->table = get32(b + 16);
	m->flags = get32(b + 20);
	m->ts = get64(b + 24);
	m->aux = get64(b + 32);
	m->nkeys = get64(b + 40);
	m->value_bytes = get32(b + 48);
	m->blob_len = get32(b + 52);
}

static int is_data_type(unsigned t)
{
	return t == PS_MSG_PUSH || t == PS_MSG_PULL ||
	       t == PS_MSG_PULL_REPLY || t == PS_MSG_EAGER;
}

/* Types that may carry a clock, and those that must. */
static int clock_allowed(unsigned t)
{
	return t == PS_MSG_PUSH || t == PS_MSG_PULL ||
	       t == PS_MSG_PULL_REPLY || t == PS_MSG_HOOK ||
	       t == PS_MSG_HOOK_REPLY || t == PS_MSG_CLOCK ||
	       t == PS_MSG_EAGER;
}

static int is_reply_type(unsigned t)
{
	return t == PS_MSG_PUSH_ACK || t == PS_MSG_PULL_REPLY ||
	       t == PS_MSG_HOOK_REPLY || t == PS_MSG_TASK_DONE;
}

/* Per-type rules on flags, nodes and sections. */
static int check_type_rules(const struct ps_msg *m, struct parsa_err *err)
{
	unsigned t = m->type, op = m->flags & PS_MSGF_OP_MASK;
	int transport = t == PS_MSG_HEARTBEAT || t == PS_MSG_ABORT;

	if (m->src >= PS_MSG_MAX_NODES ||
	    (transport ? m->dst != PS_NODE_TRANSPORT
		       : m->dst >= PS_MSG_MAX_NODES))
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: bad node ids src=%u dst=%u",
				  ps_msg_type_name(t), m->src, m->dst);
	if ((t == PS_MSG_PUSH) != (op != 0) || op > PS_MSG_MAX_OP)
		return parsa_fail(err, PARSA_EPARSE, "%s: bad merge op %u",
				  ps_msg_type_name(t), op);
	if ((m->flags & PS_MSGF_ERROR) && !is_reply_type(t))
		return parsa_fail(err, PARSA_EPARSE, "%s: error flag on a "
				  "request", ps_msg_type_name(t));
	if (!is_data_type(t) && (m->nkeys || m->value_bytes))
		return parsa_fail(err, PARSA_EPARSE, "%s: carries %" PRIu64
				  " keys", ps_msg_type_name(t), m->nkeys);
	if ((m->flags & PS_MSGF_CLOCK) && !clock_allowed(t))
		return parsa_fail(err, PARSA_EPARSE, "%s: carries a clock",
				  ps_msg_type_name(t));
	if ((t == PS_MSG_CLOCK || t == PS_MSG_EAGER) &&
	    !(m->flags & PS_MSGF_CLOCK))
		return parsa_fail(err, PARSA_EPARSE, "%s: no clock",
				  ps_msg_type_name(t));
	if (m->flags & PS_MSGF_ERROR)
		return 0;
	if (t == PS_MSG_EAGER) {
		if (m->value_bytes == 0 || (m->flags & PS_MSGF_NOKEYS))
			return parsa_fail(err, PARSA_EPARSE, "EAGER: needs "
					  "keys and values");
		return 0;
	}
	if ((t == PS_MSG_PUSH || t == PS_MSG_PULL) &&
	    (m->nkeys == 0 || (m->flags & PS_MSGF_NOKEYS)))
		return parsa_fail(err, PARSA_EPARSE, "%s: no keys",
				  ps_msg_type_name(t));
	if ((t == PS_MSG_PUSH) != (m->value_bytes != 0) && t != PS_MSG_PULL_REPLY)
		return parsa_fail(err, PARSA_EPARSE, "%s: bad value width %u",
				  ps_msg_type_name(t), m->value_bytes);
	if (t == PS_MSG_PULL_REPLY && !(m->flags & PS_MSGF_NOKEYS))
		return parsa_fail(err, PARSA_EPARSE, "PULL_REPLY: carries keys");
	return 0;
}

static int check_keys(const struct ps_msg *m, struct parsa_err *err)
{
	uint64_t i, prev, k;

	if (!m->keys || m->nkeys == 0)
		return 0;
	prev = ps_msg_key(m, 0);
	for (i = 1; i < m->nkeys; i++) {
		k = ps_msg_key(m, i);
		if (k <= prev)
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: keys not sorted and unique at "
					  "index %" PRIu64,
					  ps_msg_type_name(m->type), i);
		prev = k;
	}
	return 0;
}

/* Sections: sizes must add up to the payload exactly. */
static int check_sections(const unsigned char *b, size_t len,
			  struct ps_msg *m, struct parsa_err *err)
{
	int has_keys = !(m->flags & PS_MSGF_NOKEYS);
	uint64_t want = payload_size(m->nkeys, m->value_bytes, m->blob_len,
				     has_keys);
	uint64_t have = len - PS_MSG_HEADER_SIZE;
	const unsigned char *p = b + PS_MSG_HEADER_SIZE;

	if (want != have || get64(b + 56) != have)
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: length mismatch: %" PRIu64 " keys x %u "
				  "value bytes + %u blob bytes need %s%" PRIu64
				  " payload bytes, header says %" PRIu64
				  ", got %" PRIu64, ps_msg_type_name(m->type),
				  m->nkeys, m->value_bytes, m->blob_len,
				  want == UINT64_MAX ? "more than " : "",
				  want == UINT64_MAX ? PS_MSG_MAX_PAYLOAD : want,
				  get64(b + 56), have);
	if (has_keys && m->nkeys)
		m->keys = p;
	p += has_keys ? m->nkeys * 8 : 0;
	if (m->value_bytes && m->nkeys)
		m->values = p;
	p += m->nkeys * m->value_bytes;
	if (m->flags & PS_MSGF_CLOCK) {
		if (m->blob_len < 8)
			return parsa_fail(err, PARSA_EPARSE, "%s: clock flag "
					  "with %u blob bytes",
					  ps_msg_type_name(m->type),
					  m->blob_len);
		m->clock = (int64_t)get64(p);
		p += 8;
		m->blob_len -= 8;
		if (m->clock < 0)
			return parsa_fail(err, PARSA_EPARSE, "%s: clock %"
					  PRId64, ps_msg_type_name(m->type),
					  m->clock);
	}
	if (m->blob_len)
		m->blob = p;
	return 0;
}

int ps_msg_decode(const void *buf, size_t len, struct ps_msg *m,
		  struct parsa_err *err)
{
	const unsigned char *b = buf;
	int rc;

	memset(m, 0, sizeof(*m));
	if (!b || len < PS_MSG_HEADER_SIZE)
		return parsa_fail(err, PARSA_EPARSE, "message too short: %zu "
				  "bytes (header is %d)", len,
				  PS_MSG_HEADER_SIZE);
	if (get32(b) != PS_MSG_MAGIC)
		return parsa_fail(err, PARSA_EPARSE, "bad magic 0x%08x",
				  get32(b));
	if (get16(b + 4) != PS_MSG_VERSION)
		return parsa_fail(err, PARSA_EPARSE, "unsupported version %u",
				  get16(b + 4));
	read_header(b, m);
	if (m->type == 0 || m->type >= PS_MSG_NTYPES)
		return parsa_fail(err, PARSA_EPARSE, "unknown type %u",
				  m->type);
	if (m->flags & ~PS_MSGF_KNOWN)
		return parsa_fail(err, PARSA_EPARSE, "%s: unknown flags 0x%x",
				  ps_msg_type_name(m->type), m->flags);
	if (m->value_bytes > PS_MSG_MAX_VALUE_BYTES)
		return parsa_fail(err, PARSA_EPARSE, "%s: value width %u over "
				  "%u", ps_msg_type_name(m->type),
				  m->value_bytes, PS_MSG_MAX_VALUE_BYTES);
	rc = check_type_rules(m, err);
	if (!rc)
		rc = check_sections(b, len, m, err);
	if (!rc)
		rc = check_keys(m, err);
	if (rc) {
		memset(m, 0, sizeof(*m));
		return rc;
	}
	return 0;
}
