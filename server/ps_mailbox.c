/*
 * ps_mailbox: mutex + condition-variable FIFO (see ps_mailbox.h).
 */
#include "ps_mailbox.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "base_time.h"

int ps_mailbox_init(struct ps_mailbox *mb)
{
	pthread_condattr_t ca;

	mb->head = mb->tail = NULL;
	mb->count = 0;
	mb->failed = 0;
	if (pthread_mutex_init(&mb->mu, NULL))
		return -1;
	if (pthread_condattr_init(&ca) ||
	    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
	    pthread_cond_init(&mb->cv, &ca)) {
		pthread_mutex_destroy(&mb->mu);
		return -1;
	}
	pthread_condattr_destroy(&ca);
	return 0;
}

void ps_mailbox_release(struct ps_mailbox *mb)
{
	struct ps_mail *m, *next;

	for (m = mb->head; m; m = next) {
		next = m->next;
		free(m->buf);
		free(m);
	}
	mb->head = mb->tail = NULL;
	mb->count = 0;
	pthread_cond_destroy(&mb->cv);
	pthread_mutex_destroy(&mb->mu);
}

int ps_mailbox_put(struct ps_mailbox *mb, void *buf, size_t len)
{
	struct ps_mail *m = malloc(sizeof(*m));

	if (!m) {
		free(buf);
		return -1;
	}
	m->next = NULL;
	m->buf = buf;
	m->len = len;
	pthread_mutex_lock(&mb->mu);
	if (mb->failed) {
		pthread_mutex_unlock(&mb->mu);
		free(buf);
		free(m);
		return -1;
	}
	if (mb->tail)
		mb->tail->next = m;
	else
		mb->head = m;
	mb->tail = m;
	mb->count++;
	pthread_cond_signal(&mb->cv);
	pthread_mutex_unlock(&mb->mu);
	return 0;
}

int ps_mailbox_get(struct ps_mailbox *mb, double timeout_s, void **buf,
		   size_t *len)
{
	struct timespec dl = base_deadline(timeout_s > 0 ? timeout_s : 0);
	struct ps_mail *m;
	int rc = 0;

	*buf = NULL;
	*len = 0;
	pthread_mutex_lock(&mb->mu);
	while (!mb->head && !mb->failed && rc != ETIMEDOUT && timeout_s != 0) {
		if (timeout_s < 0)
			pthread_cond_wait(&mb->cv, &mb->mu);
		else
			rc = pthread_cond_timedwait(&mb->cv, &mb->mu, &dl);
	}
	if (mb->failed) {
		pthread_mutex_unlock(&mb->mu);
		return -1;
	}
	m = mb->head;
	if (m) {
		mb->head = m->next;
		if (!mb->head)
			mb->tail = NULL;
		mb->count--;
	}
	pthread_mutex_unlock(&mb->mu);
	if (!m)
		return 0;
	*buf = m->buf;
	*len = m->len;
	free(m);
	return 1;
}

void ps_mailbox_fail(struct ps_mailbox *mb)
{
	pthread_mutex_lock(&mb->mu);
	mb->failed = 1;
	pthread_cond_broadcast(&mb->cv);
	pthread_mutex_unlock(&mb->mu);
}
