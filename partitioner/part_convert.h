/*
 * part_convert: `parsa convert DATA --out FILE.pcsr`: read a dataset (any
 * input format, or a cache) and write its binary cache (part_cache.h).
 * Exit status as part_cmd.h: 0, 1 runtime error, 2 usage error.
 *
 * The labels and values the trainer needs come from a layer above this
 * one: part_convert_main takes them through ext (the trainer's
 * train_cmd_convert, which `parsa convert` is); part_cmd_convert writes
 * the partitioner's part only.
 */
#ifndef PART_CONVERT_H
#define PART_CONVERT_H

#include "parsa_err.h"
#include "part_cache.h"
#include "part_reader.h"

struct part_convert_ext {
	/*
	 * For a LIBSVM dataset ds read from data: fill *vals (arrays owned by
	 * *priv, freed by release(*priv)) and return 0, or return non-zero
	 * with err saying why there are none (convert then writes the cache
	 * without them and says so).
	 */
	int (*values)(const char *data, const struct part_dataset *ds,
		      struct part_cache_values *vals, void **priv,
		      struct parsa_err *err);
	void (*release)(void *priv);
};

/* parsa convert DATA --out FILE [options]; ext may be NULL. */
int part_convert_main(int argc, char **argv,
		      const struct part_convert_ext *ext);

/* part_convert_main without ext (no labels or values). */
int part_cmd_convert(int argc, char **argv);

#endif /* PART_CONVERT_H */
