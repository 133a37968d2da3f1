/*
 * app_main: the `parsa` program: main and its command table.
 *
 * This is the only file that knows every subcommand.  Each layer keeps
 * its commands' entry points (partitioner/part_cmd.h: partition, eval,
 * gen; http/http_main.h: serve; trainer/train_main.h: train); the table
 * below registers them with a one-line help, and `parsa help` and
 * `parsa help COMMAND` are driven by it.  A new subcommand is one entry
 * here plus its entry point in its layer.
 *
 * Exit status: 0 success, 1 runtime error, 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "http_main.h"
#include "part_cmd.h"
#include "train_convert.h"
#include "train_main.h"

#ifndef PARSA_VERSION
#define PARSA_VERSION "unknown"
#endif

#define EXIT_USAGE 2

/* One subcommand: argv[0] of entry is the command's name; entry handles
 * "--help" itself (which `parsa help NAME` relies on). */
struct app_cmd {
	const char *name;
	int (*entry)(int argc, char **argv);
	const char *args;  /* synopsis of the arguments */
	const char *help;  /* one line */
};

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct app_cmd commands[] = {
	{"partition", part_cmd_partition, "DATA -k K [options]",
	 "partition and write a placement"},
	{"eval", part_cmd_eval, "DATA --placement PREFIX",
	 "metrics of an existing placement"},
	{"gen", part_cmd_gen, "--examples N ... --out FILE",
	 "write a synthetic LIBSVM dataset"},
	{"convert", train_cmd_convert, "DATA --out FILE.pcsr",
	 "write a binary cache of DATA (.pcsr)"},
	{"serve", http_main, "[--listen HOST:PORT ...]",
	 "run the HTTP partitioning service"},
	{"train", train_main, "DATA --placement P ...",
	 "train L1 logistic regression on a placement"},
	{"help", cmd_help, "[COMMAND]", "this text, or a command's help"},
	{"--version", cmd_version, "", "the version of parsa"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct app_cmd *find(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	char left[64];

	fputs("usage: parsa <command> [options]\n"
	      "\n"
	      "Partition a sparse dataset (examples x features) for a parameter\n"
	      "server: examples to workers, features to servers.\n"
	      "\n"
	      "commands:\n", f);
	for (size_t i = 0; i < N_COMMANDS; i++) {
		snprintf(left, sizeof(left), "%s %s", commands[i].name,
			 commands[i].args);
		fprintf(f, "  %-32s %s\n", left, commands[i].help);
	}
	fputs("\nRun 'parsa COMMAND --help' for the options of a command;\n"
	      "every command also answers --version.\n", f);
}

/* parsa help [COMMAND]: this text, or COMMAND's own --help. */
static int cmd_help(int argc, char **argv)
{
	const struct app_cmd *c = argc > 1 ? find(argv[1]) : NULL;
	char help_opt[] = "--help";
	char *args[3];

	if (argc > 2) {
		fprintf(stderr, "parsa: help takes one COMMAND\n");
		return EXIT_USAGE;
	}
	if (argc < 2 || (c && c->entry == cmd_help)) {
		usage(stdout);
		return 0;
	}
	if (!c) {
		fprintf(stderr, "parsa: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	args[0] = argv[1];
	args[1] = help_opt;
	args[2] = NULL;
	return c->entry(2, args);
}

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("parsa %s\n", PARSA_VERSION);
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	const struct app_cmd *c;

	if (!name || strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
		usage(name ? stdout : stderr);
		return name ? 0 : EXIT_USAGE;
	}
	c = find(name);
	if (!c) {
		fprintf(stderr, "parsa: unknown command '%s'\n", name);
		usage(stderr);
		return EXIT_USAGE;
	}
	/* every command answers --version (until a "--" ends the options) */
	for (int i = 2; c->entry != cmd_help && i < argc &&
			strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--version") == 0)
			return cmd_version(0, NULL);
	return c->entry(argc - 1, argv + 1);
}
