/*
 * rv_nn_cuda() and rv_nn_cuda_devices(): the CUDA backend is a plugin,
 * <dir of the program>/../lib/rv/librv-cuda.so (build/bin and
 * build/lib/rv; PREFIX/bin and PREFIX/lib/rv), opened with dlopen on
 * first use, so that programs neither load cuDNN, cuBLAS and the CUDA
 * runtime (0.4 s of CPU at every start) nor need them installed unless
 * they train on a GPU.  Where no NVIDIA driver (libcuda.so.1) is
 * installed, counting devices gives 0 without opening the plugin.  The
 * plugin calls back into librv (nn_cuda_plugin.h); `imports` below keeps
 * those functions in every program that links this file, and the
 * Makefile exports the programs' rv_* symbols for it.  No state here:
 * dlopen counts references and returns the same handle every time, and
 * the plugin is never closed.
 */
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_cuda_plugin.h"

#ifndef RV_HAVE_CUDA

#define NOT_BUILT "this rv was built without CUDA (CUDA=0 or no nvcc)"

const struct rv_nn_ops *
rv_nn_cuda(void)
{
	rv_seterr(NOT_BUILT);
	return NULL;
}

int
rv_nn_cuda_devices(void)
{
	rv_seterr(NOT_BUILT);
	return 0;
}

#else

/*
 * librv's functions the plugin calls (nm -u lib/nn_cuda.o | grep rv_):
 * referenced here so that the static link keeps them in the program,
 * whose dynamic symbol table then offers them to the plugin (one copy,
 * one error buffer).
 */
__attribute__((used)) static void (*const imports[])(void) = {
	(void (*)(void))rv_net_copy,
	(void (*)(void))rv_net_init,
	(void (*)(void))rv_nn_check_batch,
	(void (*)(void))rv_nn_check_net,
	(void (*)(void))rv_nn_check_norm,
	(void (*)(void))rv_preferr,
	(void (*)(void))rv_rng_init,
	(void (*)(void))rv_seterr,
};

struct plugin {
	const struct rv_nn_ops *ops;
	int (*devices)(void);
};

/* path: the plugin's, next to the running program. */
static int
plugin_path(char *path, size_t len)
{
	static const char rel[] = "/lib/rv/" RV_CUDA_PLUGIN_NAME;
	ssize_t n;
	char *s;
	int i;

	n = readlink("/proc/self/exe", path, len);
	if (n < 0)
		return rv_seterr("cannot load the CUDA backend: "
		    "'/proc/self/exe':");
	if ((size_t)n >= len - sizeof(rel))
		return rv_seterr("cannot load the CUDA backend: the program's "
		    "path is too long");
	path[n] = '\0';
	/* /proc/self/exe is canonical: dropping two names is "/..". */
	for (i = 0; i < 2; i++)
		if ((s = strrchr(path, '/')) != NULL)
			*s = '\0';
	memcpy(path + strlen(path), rel, sizeof(rel));
	return 0;
}

/*
 * Open the plugin (again: the same handle), find its entry points and
 * check that it was built with this program.  0, or -1 with rv_errmsg()
 * "cannot load the CUDA backend: REASON", REASON dlerror()'s when dlopen
 * fails ("PATH: cannot open shared object file: ...", or the library or
 * symbol it lacks).
 */
static int
plugin_load(struct plugin *p)
{
	char path[PATH_MAX + sizeof("/lib/rv/" RV_CUDA_PLUGIN_NAME)];
	const struct rv_nn_ops *(*ops)(int);
	const char *why;
	void *h;

	if (plugin_path(path, sizeof(path)) < 0)
		return -1;
	/* RTLD_NOW: a missing library or symbol fails here, not mid-run. */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		why = dlerror();
		return rv_seterr("cannot load the CUDA backend: %s",
		    why != NULL ? why : path);
	}
	ops = (const struct rv_nn_ops *(*)(int))dlsym(h, "rv_cuda_plugin_ops");
	p->devices = (int (*)(void))dlsym(h, "rv_cuda_plugin_devices");
	if (ops == NULL || p->devices == NULL)
		return rv_seterr("cannot load the CUDA backend: '%s': no "
		    "rv_cuda_plugin_ops or rv_cuda_plugin_devices", path);
	p->ops = ops(RV_CUDA_PLUGIN_ABI);
	if (p->ops == NULL)
		return rv_seterr("cannot load the CUDA backend: '%s': built "
		    "for another version of rv", path);
	return 0;
}

const struct rv_nn_ops *
rv_nn_cuda(void)
{
	struct plugin p;

	return plugin_load(&p) < 0 ? NULL : p.ops;
}

int
rv_nn_cuda_devices(void)
{
	struct plugin p;
	int n;

	/* The driver's library, which the CUDA runtime would open first. */
	if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) == NULL) {
		rv_seterr("no CUDA device found");
		return 0;
	}
	if (plugin_load(&p) < 0)
		return 0;
	n = p.devices();
	if (n <= 0) {
		rv_seterr("no CUDA device found");
		return 0;
	}
	return n;
}

#endif
