/*
 * ps_transport_mpi: the parameter-server transport over OpenMPI.
 *
 * Rank r is machine r: it hosts server i and worker i for every i with
 * i % nranks == r, and rank 0 also hosts the scheduler.  With the defaults
 * (S = W = nranks) rank r runs exactly worker r and server r.
 *
 * One communication thread per rank owns every MPI call (MPI_Init_thread
 * with MPI_THREAD_FUNNELED; a caller that initialised MPI itself must have
 * asked for MPI_THREAD_SERIALIZED or more and must not call MPI while the
 * transport lives).  Messages between nodes of the same rank go straight to
 * the mailbox; others are queued for the comm thread, which posts
 * MPI_Isend, polls MPI_Improbe/MPI_Mrecv and MPI_Test, and otherwise sleeps
 * on a condition variable with a timeout growing from 20 us to 1 ms (woken
 * at once by new outgoing messages), so it never busy-spins; while a
 * hosted worker waits in recv the timeout stops at 100 us (the reply it
 * waits for is picked up sooner); ps_transport_mpi_relax lets it sleep
 * longer while no hosted worker waits.
 *
 * Failures never hang: the communicator uses MPI_ERRORS_RETURN, every
 * received message is validated (ps_msg_decode + sender rank), every rank
 * sends a heartbeat every min(0.5 s, timeout / 4) and a rank silent for the
 * timeout is declared dead ("no message from rank r within T s"), and a
 * rank that fails for any reason sends ABORT with the reason to every other
 * rank before stopping, so all ranks stop with a clear message.  After a
 * failure MPI_Finalize is skipped (it could block on the dead peer): the
 * program should print the error and exit non-zero.
 *
 * MPI can be initialised only once per process: create at most one MPI
 * transport per process.
 *
 * The transport lives in a plugin, parsa-mpi.so (ps_mpi_plugin.h), the
 * only part of parsa linked with OpenMPI; these functions load it on first
 * use, so a process that never calls them never maps OpenMPI.  It is
 * looked for in the directory of the program (/proc/self/exe) and of the
 * object holding this code (libparsa.so), in each: beside it, one folder
 * up, ../lib/parsa/ and parsa/; $PARSA_MPI_PLUGIN, when set, names the
 * file instead.  Without it (or without OpenMPI's libraries) start and
 * create fail with PARSA_EINVAL and a message saying where it was looked
 * for.
 */
#ifndef PARSA_PS_TRANSPORT_MPI_H
#define PARSA_PS_TRANSPORT_MPI_H

#include "ps.h"
#include "ps_transport.h"

/* 1 if the MPI transport's plugin is found and loads (it is then loaded). */
int ps_mpi_available(void);

/*
 * Initialise MPI now, from the calling thread (MPI_THREAD_SERIALIZED), so
 * that every rank passes MPI_Init before long work (loading data): the
 * transport's start-up handshake then names a rank that stalls in that
 * work instead of every other rank waiting in MPI_Init.  The caller then
 * makes no MPI call while a transport lives, and ends with ps_mpi_finish
 * after the transport is destroyed (on success; after a failure the
 * program exits without it).  start fails without the plugin; finish does
 * nothing when the plugin was never loaded.
 */
int ps_mpi_start(struct parsa_err *err);
void ps_mpi_finish(void);

/*
 * Initialise MPI (on the new comm thread) and create the transport.
 * l->num_servers / num_workers of 0 mean one per rank; l->num_machines is
 * ignored (= number of ranks).  timeout_s <= 0 means 60 s.  NULL on error
 * (PARSA_EMPI with MPI's message; PARSA_EINVAL without the plugin).
 */
struct ps_transport *ps_transport_mpi_create(const struct ps_layout *l,
					     double timeout_s,
					     struct parsa_err *err);

/*
 * Relaxed polling, for applications whose requests are pipelined (an
 * answer is needed a step after its request: a prefetched pull, a push not
 * waited for).  While no worker of this rank waits in recv, the comm
 * thread restarts its back-off at 250 us after activity instead of 20 us,
 * lets it grow to max_s instead of 1 ms, also while its own sends are in
 * flight (over TCP a large send then takes up to max_s longer), so it wakes
 * (and takes a computing worker's core) several times less often; a
 * worker that starts waiting wakes it at once and it polls briskly until
 * the wait ends.  The
 * cost: a request from another rank may wait up to max_s here before this
 * rank's servers see it.  max_s <= 250 us turns it off (the default); a
 * transport that is not MPI ignores the call.  Call it before ps_run: a
 * recv already blocked when it is called does not count as waiting.
 */
void ps_transport_mpi_relax(struct ps_transport *tp, double max_s);

/*
 * Run app on the MPI transport: every rank calls this with the same cfg
 * (cfg->num_machines is ignored).  Returns on every rank; on failure every
 * rank returns an error naming the root cause.  res: as ps_run (complete on
 * rank 0).  *rank / *nranks (may be NULL) receive this process's rank.
 */
int ps_run_mpi(const struct ps_config *cfg, const struct ps_app *app,
	       struct ps_result *res, int *rank, int *nranks,
	       struct parsa_err *err);

#endif /* PARSA_PS_TRANSPORT_MPI_H */
