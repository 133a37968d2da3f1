/*
 * ps_mailbox: a FIFO of message buffers with a blocking, timed get.
 *
 * Used by both transports: one mailbox per hosted node.  put never blocks;
 * get waits on a condition variable (no polling) until a message arrives,
 * the timeout passes, or the mailbox is failed.
 *
 * Invariants: count == length of the list; once failed, stays failed.
 * Ownership: queued buffers belong to the mailbox until taken by get;
 * release frees whatever is left.
 * Thread-safety: put/get/fail from any threads concurrently.
 */
#ifndef PARSA_PS_MAILBOX_H
#define PARSA_PS_MAILBOX_H

#include <pthread.h>
#include <stddef.h>

struct ps_mail {
	struct ps_mail *next;
	void *buf;
	size_t len;
};

struct ps_mailbox {
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* signalled on put and on fail */
	struct ps_mail *head, *tail; /* FIFO */
	size_t count;
	int failed;
};

/* 0 or -1 (pthread init failed). */
int ps_mailbox_init(struct ps_mailbox *mb);
void ps_mailbox_release(struct ps_mailbox *mb);

/* Append buf (stolen, also on failure).  0, or -1 on ENOMEM/failed box. */
int ps_mailbox_put(struct ps_mailbox *mb, void *buf, size_t len);

/*
 * Take the oldest message.  timeout_s < 0 waits forever, 0 polls.
 * Returns 1 (got *buf), 0 (timeout) or -1 (mailbox failed).
 */
int ps_mailbox_get(struct ps_mailbox *mb, double timeout_s, void **buf,
		   size_t *len);

/* Mark failed and wake all waiters. */
void ps_mailbox_fail(struct ps_mailbox *mb);

#endif /* PARSA_PS_MAILBOX_H */
