/*
 * part_convert: `parsa convert DATA --out FILE.pcsr`: read a dataset (any
 * input format, or a cache) and write its binary cache (part_cache.h).
 * Exit status as part_cmd.h: 0, 1 runtime error, 2 usage error.
 */
#ifndef PART_CONVERT_H
#define PART_CONVERT_H

/* parsa convert DATA --out FILE [options]. */
int part_cmd_convert(int argc, char **argv);

#endif /* PART_CONVERT_H */
