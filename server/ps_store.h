/*
 * ps_store: one server's part of one table: a hash map key → value of a
 * fixed width, plus the merge operations pushes apply to the values.
 *
 * Entries are kept in two dense arrays (keys[], values[]) in insertion order
 * with an open-addressing index over them, so a server-side function can
 * walk every stored entry cheaply (ps_server_table in ps.h).  A key that was
 * never written reads as all-zero bytes.
 *
 * Invariants: size <= cap; slot[] has a power-of-two length > 2*size; every
 * occupied slot holds index+1 of a distinct entry; values are width bytes.
 * Ownership: the store owns its arrays.  Pointers returned into values stay
 * valid until the next insertion (which may grow the arrays).
 * Thread-safety: none; a store belongs to one server thread.
 */
#ifndef PARSA_PS_STORE_H
#define PARSA_PS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"

/* Merge operations (the numbers are part of the wire format). */
enum ps_op {
	PS_OP_OR = 1,      /* bitwise OR of width bytes (k-bit masks, any k) */
	PS_OP_ADD_F32 = 2, /* element-wise float sum (width % 4 == 0) */
	PS_OP_ADD_F64 = 3, /* element-wise double sum (width % 8 == 0) */
	PS_OP_OVERWRITE = 4
};

struct ps_store;

/* New empty store for values of width bytes (>= 1).  NULL on ENOMEM/EINVAL. */
struct ps_store *ps_store_create(uint32_t width, struct parsa_err *err);
void ps_store_destroy(struct ps_store *s); /* NULL is a no-op */

/*
 * Index the keys lo .. lo + n - 1 directly (an array of 4 bytes per key up
 * to the largest key stored, instead of the hash): for servers whose keys
 * are dense, as a range of renumbered feature ids is.  Only on an empty
 * store (PARSA_ESTATE otherwise).  Iteration order is unchanged.
 */
int ps_store_set_window(struct ps_store *s, uint64_t lo, uint64_t n);

/* The value of key, or NULL if never written. */
unsigned char *ps_store_find(const struct ps_store *s, uint64_t key);

/* The value of key, inserted zero-filled if new.  0 or PARSA_ENOMEM. */
int ps_store_get(struct ps_store *s, uint64_t key, unsigned char **val,
		 struct parsa_err *err);

size_t ps_store_size(const struct ps_store *s);
/* Entry number (insertion order) of a value pointer into this store. */
size_t ps_store_entry(const struct ps_store *s, const unsigned char *val);
uint32_t ps_store_width(const struct ps_store *s);
const uint64_t *ps_store_keys(const struct ps_store *s); /* size entries */
unsigned char *ps_store_values(struct ps_store *s);     /* size*width */

/*
 * Hand the entries over: *keys (size keys) and *values (size x width
 * bytes, insertion order), the caller's to free(); the store is left empty
 * (its window kept) and its index freed.  For a table no longer needed as
 * a map, so its arrays need not be copied.  *keys and *values are NULL when
 * the store was empty.
 */
void ps_store_take(struct ps_store *s, uint64_t **keys,
		   unsigned char **values, size_t *n);

/* Is op valid for values of this width?  0 if yes, else PARSA_EINVAL. */
int ps_op_check(int op, uint32_t width, struct parsa_err *err);

/* dst = dst (op) src for one value of width bytes (op already checked). */
void ps_op_merge(int op, unsigned char *dst, const unsigned char *src,
		 uint32_t width);

const char *ps_op_name(int op);

#endif /* PARSA_PS_STORE_H */
