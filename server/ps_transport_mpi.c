/*
 * ps_transport_mpi: the MPI transport's functions, forwarded to the plugin
 * parsa-mpi.so (ps_mpi_plugin.h), which is opened on first use.
 *
 * No state of its own: dlopen counts its own references and returns the
 * object already loaded, so each call finds the plugin again (a few
 * system calls, a handful of times a run).  The plugin is loaded with
 * RTLD_GLOBAL (OpenMPI's components expect its libraries' symbols global)
 * and never closed: MPI cannot be initialised twice in a process anyway.
 */
#include "ps_transport_mpi.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps_mpi_plugin.h"

/* Non-NULL when the program links ps_mpi_plugin.c itself. */
#pragma weak ps_mpi_plugin_v1

/* Where the plugin is looked for, relative to each directory below:
 * beside it (the build tree, build/), one up (build/tests/), the install
 * layout from bin/ (PREFIX/lib/parsa/) and from lib/ (lib/parsa/). */
static const char *const plugin_rel[] = { "", "/..", "/../lib/parsa",
					  "/parsa" };

typedef const struct ps_mpi_plugin *(*plugin_entry)(void);

static plugin_entry entry_of(void *sym)
{
	plugin_entry f;

	memcpy(&f, &sym, sizeof(f)); /* POSIX: dlsym's object is the function */
	return f;
}

static const struct ps_mpi_plugin *checked(const struct ps_mpi_plugin *p,
					   const char *where,
					   struct parsa_err *err)
{
	if (!p) {
		parsa_fail(err, PARSA_EINVAL, "%s: not a parsa MPI plugin",
			   where);
		return NULL;
	}
	if (p->abi != PS_MPI_PLUGIN_ABI || p->sizes != PS_MPI_PLUGIN_SIZES) {
		parsa_fail(err, PARSA_EINVAL, "%s is from another build of "
			   "parsa (plugin ABI %u/%08x, this program %u/%08x): "
			   "use the one built with this program", where,
			   p->abi, p->sizes, PS_MPI_PLUGIN_ABI,
			   (unsigned)PS_MPI_PLUGIN_SIZES);
		return NULL;
	}
	return p;
}

/* The plugin if it is in the process already (linked in, or loaded). */
static const struct ps_mpi_plugin *plugin_loaded(void)
{
	plugin_entry f = ps_mpi_plugin_v1;

	if (!f)
		f = entry_of(dlsym(RTLD_DEFAULT, PS_MPI_PLUGIN_ENTRY));
	return f ? checked(f(), PS_MPI_PLUGIN_FILE, NULL) : NULL;
}

static const struct ps_mpi_plugin *plugin_open(const char *path,
					       struct parsa_err *err)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	void *sym;

	if (!h) {
		const char *why = dlerror();

		if (access(path, F_OK) != 0) /* the file is not there */
			parsa_fail(err, PARSA_EINVAL, "cannot load the MPI "
				   "transport: %s", why);
		else /* most likely a library it needs */
			parsa_fail(err, PARSA_EINVAL, "cannot load the MPI "
				   "transport: %s (it needs OpenMPI's libraries:"
				   " apt-get install openmpi-bin)", why);
		return NULL;
	}
	sym = dlsym(h, PS_MPI_PLUGIN_ENTRY);
	return checked(sym ? entry_of(sym)() : NULL, path, err);
}

/* dir of path (in place); 0 if path has no '/'. */
static int dir_of(char *path)
{
	char *slash = strrchr(path, '/');

	if (!slash)
		return 0;
	*(slash == path ? slash + 1 : slash) = '\0';
	return 1;
}

/*
 * The directories to search from: the program's (/proc/self/exe) and the
 * object's holding this code (libparsa.so when parsa is a library), as
 * resolved paths; *n of them.
 */
static void plugin_bases(char base[2][PATH_MAX], int *n)
{
	Dl_info info;
	ssize_t len = readlink("/proc/self/exe", base[0], PATH_MAX - 1);

	*n = 0;
	if (len > 0) {
		base[0][len] = '\0';
		*n += dir_of(base[0]);
	}
	if (dladdr((void *)plugin_bases, &info) && info.dli_fname &&
	    realpath(info.dli_fname, base[*n]) && dir_of(base[*n]) &&
	    !(*n == 1 && strcmp(base[0], base[1]) == 0))
		(*n)++;
}

/* The plugin: in the process, from $PARSA_MPI_PLUGIN or found; else NULL
 * with a message saying where it was looked for. */
static const struct ps_mpi_plugin *plugin_get(struct parsa_err *err)
{
	const struct ps_mpi_plugin *p = plugin_loaded();
	const char *env = getenv("PARSA_MPI_PLUGIN");
	char base[2][PATH_MAX], path[PATH_MAX + 32], where[2 * PATH_MAX + 8];
	int n, i;
	size_t j;

	if (p)
		return p;
	if (env && *env)
		return plugin_open(env, err);
	plugin_bases(base, &n);
	for (i = 0; i < n; i++)
		for (j = 0; j < sizeof(plugin_rel) / sizeof(*plugin_rel); j++) {
			if (snprintf(path, sizeof(path), "%s%s/%s", base[i],
				     plugin_rel[j], PS_MPI_PLUGIN_FILE) <
				    (int)sizeof(path) &&
			    access(path, F_OK) == 0)
				return plugin_open(path, err);
		}
	if (snprintf(where, sizeof(where), "%s%s%s", n > 0 ? base[0] : "?",
		     n > 1 ? ", " : "", n > 1 ? base[1] : "") < 0)
		where[0] = '\0';
	parsa_fail(err, PARSA_EINVAL, "this parsa has no MPI transport: %s "
		   "is not beside the program or its library (%s; PARSA_MPI_"
		   "PLUGIN names it elsewhere; it is built when the ompi-c "
		   "pkg-config module is installed)", PS_MPI_PLUGIN_FILE,
		   where);
	return NULL;
}

int ps_mpi_available(void)
{
	return plugin_get(NULL) != NULL;
}

int ps_mpi_start(struct parsa_err *err)
{
	const struct ps_mpi_plugin *p = plugin_get(err);

	if (!p)
		return err && err->code ? err->code : PARSA_EINVAL;
	return p->start(err);
}

void ps_mpi_finish(void)
{
	const struct ps_mpi_plugin *p = plugin_loaded();

	if (p)
		p->finish();
}

struct ps_transport *ps_transport_mpi_create(const struct ps_layout *l,
					     double timeout_s,
					     struct parsa_err *err)
{
	const struct ps_mpi_plugin *p = plugin_get(err);

	return p ? p->create(l, timeout_s, err) : NULL;
}

void ps_transport_mpi_relax(struct ps_transport *tp, double max_s)
{
	const struct ps_mpi_plugin *p;

	/* an MPI transport exists only once the plugin is in */
	if (!tp || strcmp(tp->ops->name, "mpi") != 0 || !(p = plugin_loaded()))
		return;
	p->relax(tp, max_s);
}

int ps_run_mpi(const struct ps_config *cfg, const struct ps_app *app,
	       struct ps_result *res, int *rank, int *nranks,
	       struct parsa_err *err)
{
	struct ps_layout l = { cfg->num_servers, cfg->num_workers, 0 };
	struct ps_transport *tp;
	int rc;

	if (res)
		memset(res, 0, sizeof(*res));
	tp = ps_transport_mpi_create(&l, cfg->timeout_s, err);
	if (!tp)
		return err && err->code ? err->code : PARSA_EMPI;
	if (rank)
		*rank = (int)tp->rank;
	if (nranks)
		*nranks = (int)tp->nranks;
	rc = ps_run(tp, cfg, app, res, err);
	ps_transport_destroy(tp);
	return rc;
}
