/*
 * train_main: the `parsa train` command (argv[0] = "train").
 *
 * Reads a LIBSVM dataset and a placement (PREFIX files, the HTTP
 * service's job URL, or "random"), trains L1-regularized logistic
 * regression with train_run, prints one JSON object per data pass to
 * stdout (the last line is the final object) and optionally writes the
 * model and a JSON-lines log.  Exit status: 0 success, 1 runtime error,
 * 2 usage error.
 */
#ifndef TRAIN_MAIN_H
#define TRAIN_MAIN_H

int train_main(int argc, char **argv);

#endif /* TRAIN_MAIN_H */
