/*
 * ps_mpi_plugin: the MPI transport's plugin interface.
 *
 * The MPI transport (ps_mpi_plugin.c) is built into its own shared object,
 * parsa-mpi.so, the only part of parsa that links OpenMPI.  The loader
 * (ps_transport_mpi.c, the functions of ps_transport_mpi.h) opens it with
 * dlopen the first time an MPI function is called, so a process that never
 * runs over MPI (every thread run, the HTTP service, libparsa.so under
 * Python) neither maps OpenMPI's libraries (1.0-1.2 MiB of resident memory
 * in every command, BENCHMARKS.md) nor needs them installed.
 *
 * The plugin exports one function, PS_MPI_PLUGIN_ENTRY, returning a static
 * table.  It carries its own copies of the base and server functions it
 * calls (hidden, linked from the same build's objects), so it shares only
 * data with the loader: the ps_transport it creates, messages (malloc'd
 * by one side, freed by the other: one C library), parsa_err.  The table's
 * abi and sizes must equal the loader's, or the plugin is refused (one from
 * another build).
 *
 * A program that links ps_mpi_plugin.c itself (tests/mpi/test_ps_mpi.sh
 * compiles every server source with the MPI flags) uses that copy through a weak
 * reference, without dlopen.
 */
#ifndef PARSA_PS_MPI_PLUGIN_H
#define PARSA_PS_MPI_PLUGIN_H

#include <stdint.h>

#include "parsa_err.h"
#include "ps_transport.h"

/* Bumped when the table or anything it passes changes meaning. */
#define PS_MPI_PLUGIN_ABI 1u
/* The sizes both sides must agree on, folded into one number. */
#define PS_MPI_PLUGIN_SIZES                                                   \
	((uint32_t)(sizeof(struct ps_transport) * 65599u +                  \
		    sizeof(struct parsa_err) * 257u +                           \
		    sizeof(struct ps_transport_ops) * 17u +                     \
		    sizeof(struct ps_layout)))
#define PS_MPI_PLUGIN_ENTRY "ps_mpi_plugin_v1"
/* The plugin's file name (ps_transport_mpi.h says where it is looked for). */
#define PS_MPI_PLUGIN_FILE "parsa-mpi.so"

/* What ps_transport_mpi.h's functions forward to; see the contracts there. */
struct ps_mpi_plugin {
	uint32_t abi;   /* PS_MPI_PLUGIN_ABI */
	uint32_t sizes; /* PS_MPI_PLUGIN_SIZES */
	int (*start)(struct parsa_err *err);
	void (*finish)(void);
	struct ps_transport *(*create)(const struct ps_layout *l,
				       double timeout_s,
				       struct parsa_err *err);
	void (*relax)(struct ps_transport *tp, double max_s);
};

/* The entry (exported from the plugin's otherwise hidden symbols). */
__attribute__((visibility("default"))) const struct ps_mpi_plugin *
ps_mpi_plugin_v1(void);

#endif /* PARSA_PS_MPI_PLUGIN_H */
