/*
 * fuzz_psmsg: the parameter server's wire-message decoder on arbitrary bytes.
 *
 * ps_msg_decode must never read outside the buffer or crash; whatever it
 * accepts must re-encode to exactly the same bytes (so every accepted field
 * and section was understood).  Built with tests/fuzz_main.c to replay
 * tests/corpus/psmsg/ in `make test`, and with libFuzzer by `make fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ps_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_roundtrip(const uint8_t *data, size_t size,
			    const struct ps_msg *m)
{
	uint64_t *keys = NULL, i;
	void *buf = NULL;
	size_t len = 0;

	if (m->keys) {
		keys = malloc(m->nkeys * sizeof(*keys));
		if (!keys)
			return;
		for (i = 0; i < m->nkeys; i++)
			keys[i] = ps_msg_key(m, i);
	}
	if (ps_msg_encode(m, keys, m->values, m->blob, &buf, &len, NULL) != 0 ||
	    len != size || memcmp(buf, data, size) != 0)
		__builtin_trap(); /* accepted but not understood */
	free(buf);
	free(keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_msg m;
	struct parsa_err err = { 0 };

	if (ps_msg_decode(data, size, &m, &err) == 0)
		check_roundtrip(data, size, &m);
	else if (err.code != PARSA_EPARSE || err.msg[0] == '\0')
		__builtin_trap(); /* a rejection always explains itself */
	return 0;
}
