/*
 * train_convert: `parsa convert` with the trainer's labels and values: the
 * partitioner's convert command (part_convert.h) given a hook that reads a
 * LIBSVM dataset's labels and values with the trainer's reader
 * (train_data.h), so that `parsa train` reads the cache as it reads the
 * text: same rows, same entries in line order, same values.
 */
#ifndef TRAIN_CONVERT_H
#define TRAIN_CONVERT_H

/* parsa convert DATA --out FILE [options] (part_convert_main). */
int train_cmd_convert(int argc, char **argv);

#endif /* TRAIN_CONVERT_H */
