/*
 * parsa_pcount: sparse per-(feature, part) example counts, the state of the
 * T_sum sweeps (parsa_fm.h) in O(Σ_v λ_v) memory instead of the dense
 * 2 k |V| bytes.
 *
 * cnt(v, j) = the number of examples of part j using feature v, saturating
 * at PARSA_PCOUNT_SAT (a saturated count is never decremented, as in
 * parsa_conn.h).  The parts holding v are the set bits of v's mask in a
 * struct parsa_nbrset kept beside the counts (bit (v, j) set iff
 * cnt(v, j) > 0); v's counts are stored in the order of those bits: the
 * count of part j is slot rank(j) = #{set bits of v's mask below j} of v's
 * region of the pool.  So a count costs its byte, a lookup a popcount
 * over the mask's words before j, and a part joining or leaving a feature
 * shifts the feature's later slots by one (O(λ_v)).
 *
 * Slots are one byte: a count below PARSA_PCOUNT_BIG (255) is its slot; a
 * slot of PARSA_PCOUNT_BIG means cnt >= 255, its value in `big`, a hash
 * table keyed by (v, j) (so shifts and growth never touch it), or, when
 * (v, j) is not there, PARSA_PCOUNT_SAT.  What the sweeps' gains read
 * (cnt == 1, cnt <= 2, the p-fanout weight, 0 from 40 on) needs the slot
 * only; a move reads and writes the table only where a count crosses
 * 254/255 or is above it (the table held 0.15% of the slots at 10M
 * nonzeros, 0.13% at 100M, but those counts are the hot features', on a
 * large share of the nonzeros).  The build counts in 2 bytes a slot and
 * then narrows in place (one table insert per big count, not one lookup
 * per nonzero).  A table that cannot grow (out of memory) saturates the
 * count instead: still a valid (sticky) state, with the saturation flag
 * raised.
 *
 * Regions: v's region is cap(v) slots at off(v) (hdr[v]: the offset in its
 * low 47 bits, cap in its high 17), λ_v <= cap(v) <= k.  A part can join
 * v only when cap(v) > λ_v: parsa_pcount_reserve grows a full region (by
 * half, at least 4, at the pool's end; the old region is left unused,
 * counted in `waste`), which may move the pool (pointers into it are then
 * stale).
 * A part leaving never shrinks the region, so undoing a move (the moves
 * of parsa_pcount_move in reverse order) never needs room.
 *
 * Memory: 8 bytes per feature plus 1 byte per slot (2 during the build;
 * 2 all along until 2026-11-28) plus 8 bytes per big count (at a load of
 * at most 1/2); built with cap(v) = min(λ_v + 1, k).
 * Ownership: owns hdr, pool and big.  Not thread-safe for writing;
 * concurrent readers are fine.
 */
#ifndef PARSA_PCOUNT_H
#define PARSA_PCOUNT_H

#include <stdint.h>
#include <string.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"

#define PARSA_PCOUNT_SAT UINT16_MAX
#define PARSA_PCOUNT_BIG UINT8_MAX
#define PARSA_PCOUNT_CAP_SHIFT 47
#define PARSA_PCOUNT_OFF ((1ULL << PARSA_PCOUNT_CAP_SHIFT) - 1)

/*
 * The counts of at least PARSA_PCOUNT_BIG, by (v, j): open addressing with
 * linear probing over `cap` (a power of two, or 0) words, each
 * (v << 16 | j) << 16 | cnt, 0 = empty (a count here is 255..65534).
 */
struct parsa_pcount_big {
	uint64_t *slot;
	uint64_t cap, n;
};

struct parsa_pcount {
	uint32_t n_feat, k, words;
	uint64_t *hdr;   /* n_feat: offset | cap << PARSA_PCOUNT_CAP_SHIFT */
	uint8_t *pool;   /* the regions */
	struct parsa_pcount_big big;
	uint64_t len;    /* slots handed out */
	uint64_t alloc;  /* slots allocated */
	uint64_t waste;  /* slots of regions left behind by growth */
};

/*
 * The counts of the partition part of g (parts < used->k) into pc, used
 * being N(U_1..U_k) of part (parsa_used_sets).  *saturated = 1 if a count
 * saturated.  0, PARSA_ENOMEM or PARSA_EINVAL (sizes); pc is zeroed on
 * failure and needs parsa_pcount_release after success.
 */
int parsa_pcount_build(struct parsa_pcount *pc, const struct parsa_graph *g,
		       const uint32_t *part, const struct parsa_nbrset *used,
		       int *saturated, struct parsa_err *err);

/*
 * parsa_pcount_build in `tasks` tasks (at most PARSA_PCOUNT_MAX_TASKS),
 * each counting a range of the features: par(par_arg, n, fn, fn_arg) must
 * call fn(fn_arg, t) once for every t in [0, n), on any threads in any
 * order (the shape of parsa_fm_par_fn), and return when all have
 * returned.  The same counts and result as parsa_pcount_build, whatever
 * the number of tasks; tasks <= 1 or par NULL: that call.
 */
#define PARSA_PCOUNT_MAX_TASKS 64
typedef void (*parsa_pcount_task_fn)(void *fn_arg, uint32_t t);
typedef void (*parsa_pcount_par_fn)(void *par_arg, uint32_t n,
				    parsa_pcount_task_fn fn, void *fn_arg);
int parsa_pcount_build_par(struct parsa_pcount *pc,
			   const struct parsa_graph *g, const uint32_t *part,
			   const struct parsa_nbrset *used, int *saturated,
			   parsa_pcount_par_fn par, void *par_arg,
			   uint32_t tasks, struct parsa_err *err);

void parsa_pcount_release(struct parsa_pcount *pc);

/* Bytes held (header, pool and big counts, as allocated). */
uint64_t parsa_pcount_bytes(const struct parsa_pcount *pc);

/*
 * Room in v's region for one more part than lam = λ_v: grows the region
 * when it is full.  0, or -1 when out of memory (nothing changed).
 */
int parsa_pcount_grow(struct parsa_pcount *pc, uint32_t v, uint32_t lam);

static inline int parsa_pcount_reserve(struct parsa_pcount *pc, uint32_t v,
				       uint32_t lam)
{
	return (uint64_t)lam < pc->hdr[v] >> PARSA_PCOUNT_CAP_SHIFT
		       ? 0
		       : parsa_pcount_grow(pc, v, lam);
}

/* #{set bits of mask m (words words) below bit j}. */
static inline uint32_t parsa_pcount_rank(const uint64_t *m, uint32_t words,
					 uint32_t j)
{
	uint32_t r = 0, w = j >> 6;

	if (words == 1)
		return parsa_popcount64(m[0] & ((1ULL << (j & 63)) - 1));
	for (uint32_t i = 0; i < w; i++)
		r += parsa_popcount64(m[i]);
	return r + parsa_popcount64(m[w] & ((1ULL << (j & 63)) - 1));
}

/* The slot of cnt(v, j); bit j of v's mask m must be set.  Its value is
 * the count when below PARSA_PCOUNT_BIG, else the count is at least that
 * (parsa_pcount_get has it). */
static inline uint8_t *parsa_pcount_slot(const struct parsa_pcount *pc,
					 const uint64_t *m, uint32_t v,
					 uint32_t j)
{
	return pc->pool + (pc->hdr[v] & PARSA_PCOUNT_OFF) +
	       parsa_pcount_rank(m, pc->words, j);
}

/* The count of a big slot (v, j): its table entry, or PARSA_PCOUNT_SAT. */
uint32_t parsa_pcount_big_get(const struct parsa_pcount_big *t, uint32_t v,
			      uint32_t j);

/*
 * A count at 254 or PARSA_PCOUNT_BIG (*c its slot) up by one: into the
 * table t (inserted at 255, raised, or dropped at PARSA_PCOUNT_SAT);
 * *saturated set when the count is (or becomes) saturated, also when t
 * cannot grow.
 */
void parsa_pcount_big_up(struct parsa_pcount_big *t, uint8_t *c, uint32_t v,
			 uint32_t j, int *saturated);

/* A big count (*c == PARSA_PCOUNT_BIG) down by one unless saturated: the
 * slot back to 254 when the count reaches it. */
void parsa_pcount_big_down(struct parsa_pcount_big *t, uint8_t *c,
			   uint32_t v, uint32_t j);

/* cnt(v, j) (slot *c) up by one, saturating; *saturated set at
 * saturation. */
static inline void parsa_pcount_up(struct parsa_pcount_big *t, uint8_t *c,
				   uint32_t v, uint32_t j, int *saturated)
{
	if (*c < PARSA_PCOUNT_BIG - 1)
		++*c;
	else
		parsa_pcount_big_up(t, c, v, j, saturated);
}

/* cnt(v, j) (slot *c, count >= 1) down by one unless saturated; 1 if it
 * reached 0. */
static inline int parsa_pcount_down(struct parsa_pcount_big *t, uint8_t *c,
				    uint32_t v, uint32_t j)
{
	if (*c < PARSA_PCOUNT_BIG)
		return --*c == 0;
	parsa_pcount_big_down(t, c, v, j);
	return 0;
}

/* cnt(v, j) with s the sets kept beside the counts. */
static inline uint32_t parsa_pcount_get(const struct parsa_pcount *pc,
					const struct parsa_nbrset *s,
					uint32_t v, uint32_t j)
{
	const uint64_t *m = parsa_nbrset_mask(s, v);
	uint32_t c;

	if (!(m[j >> 6] >> (j & 63) & 1))
		return 0;
	c = *parsa_pcount_slot(pc, m, v, j);
	return c < PARSA_PCOUNT_BIG ? c : parsa_pcount_big_get(&pc->big, v, j);
}

/*
 * Feature v of an example moving from part a to part b (a != b, the
 * example in a, so bit a is set): cnt(v, a) down unless saturated, v
 * leaves S_a (bit, size, *lam) when it hits 0; v joins S_b when cnt(v, b)
 * was 0 (which needs room: parsa_pcount_reserve(pc, v, *lam) before,
 * unless this undoes the last moves in reverse order); cnt(v, b) up
 * (saturating, *saturated set).  *lam = λ_v.  Returns the change of
 * Σ_j |S_j|: -1, 0 or +1.  The same as parsa_conn_move_feature on dense
 * counts.
 */
static inline int parsa_pcount_move(struct parsa_pcount *pc,
				    struct parsa_nbrset *s, uint32_t v,
				    uint32_t a, uint32_t b, uint32_t *lam,
				    int *saturated)
{
	uint64_t *m = s->bits + (uint64_t)v * s->words;
	uint8_t *base = pc->pool + (pc->hdr[v] & PARSA_PCOUNT_OFF);
	uint32_t ra = parsa_pcount_rank(m, s->words, a), rb;
	int delta = 0;

	if (parsa_pcount_down(&pc->big, base + ra, v, a)) {
		memmove(base + ra, base + ra + 1, (size_t)(*lam - ra - 1));
		m[a >> 6] &= ~(1ULL << (a & 63));
		s->size[a]--;
		--*lam;
		delta--;
	}
	rb = parsa_pcount_rank(m, s->words, b);
	if (!(m[b >> 6] >> (b & 63) & 1)) {
		memmove(base + rb + 1, base + rb, (size_t)(*lam - rb));
		base[rb] = 1;
		m[b >> 6] |= 1ULL << (b & 63);
		s->size[b]++;
		++*lam;
		return delta + 1;
	}
	parsa_pcount_up(&pc->big, base + rb, v, b, saturated);
	return delta;
}

#endif /* PARSA_PCOUNT_H */
