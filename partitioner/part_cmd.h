/*
 * part_cmd: the partitioner's subcommands of the `parsa` program.
 *
 * Each takes the command's own argv (argv[0] = the command's name), parses
 * its options (COMMAND --help prints its help on stdout) and returns the
 * exit status: 0 success, 1 runtime error (one line "parsa: ..." on
 * stderr), 2 usage error.  They print to stdout/stderr and are meant for
 * the program's main (app/), not for library callers.
 */
#ifndef PART_CMD_H
#define PART_CMD_H

/* parsa partition DATA -k K [options]: partition and write a placement. */
int part_cmd_partition(int argc, char **argv);

/* parsa eval DATA --placement PREFIX: metrics of an existing placement. */
int part_cmd_eval(int argc, char **argv);

/* parsa gen ... --out FILE: write a synthetic LIBSVM dataset. */
int part_cmd_gen(int argc, char **argv);

#endif /* PART_CMD_H */
