/* parsa_stop: deadlines and cancel flags for the refinement phases. */
#include "parsa_stop.h"


int parsa_stop_due(const struct parsa_stop *s)
{
	if (!s)
		return PARSA_STOP_NO;
	if (s->cancel && atomic_load_explicit(s->cancel, memory_order_relaxed))
		return PARSA_STOP_CANCEL;
	if (s->deadline > 0 && parsa_stop_clock() >= s->deadline)
		return PARSA_STOP_DEADLINE;
	return PARSA_STOP_NO;
}
