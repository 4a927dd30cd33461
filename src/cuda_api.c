/* The CUDA driver, loaded at run time: dlopen(libcuda.so.1) and cuGetProcAddress, once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api_internal.h"

/* NOTE: every entry point is asked for at the CUDA 12.0 ABI, the one cuda.h's plain prototypes
 * describe for the calls we make. Asking at the toolkit's own version is wrong: from CUDA 13.0
 * the driver answers "cuCtxSynchronize" with cuCtxSynchronize_v2(CUcontext), while the header's
 * cuCtxSynchronize takes no argument. */
#define ENTRY_POINT_CUDA_VERSION 12000

typedef CUresult (*get_proc_address_fn)(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);

static struct fc_cuda_api api;
static char load_error[512];
static int load_ok;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static int resolve(get_proc_address_fn get, const char *name, void **out)
{
    CUdriverProcAddressQueryResult status;
    if (get(name, out, ENTRY_POINT_CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS && *out)
        return 0;
    snprintf(load_error, sizeof load_error, "the CUDA driver has no %s (driver too old?)", name);
    return -1;
}

static void load(void)
{
    const char *path = getenv("FC_CUDA_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_error, sizeof load_error,
                 "no CUDA driver: %s could not be loaded (%s); is an NVIDIA driver installed?",
                 path && *path ? path : "libcuda.so.1", dlerror());
        return;
    }
    get_proc_address_fn get = (get_proc_address_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!get) {
        snprintf(load_error, sizeof load_error,
                 "the CUDA driver has no cuGetProcAddress_v2: it is older than CUDA 12, too old");
        return;
    }
#define FC_CUDA_RESOLVE(name) if (resolve(get, #name, (void **)&api.name)) return;
    FC_CUDA_FUNCTIONS(FC_CUDA_RESOLVE)
#undef FC_CUDA_RESOLVE
    CUresult result = api.cuInit(0);
    if (result != CUDA_SUCCESS) {
        const char *name = "?";
        api.cuGetErrorName(result, &name);
        snprintf(load_error, sizeof load_error, "cuInit failed: %s (no usable GPU?)", name);
        return;
    }
    api.cuDriverGetVersion(&api.driver_version);
    load_ok = 1;   /* the library handle stays open for the life of the process */
}

const struct fc_cuda_api *fc_cuda_load(char *why, size_t why_size)
{
    pthread_once(&load_once, load);
    if (load_ok)
        return &api;
    if (why && why_size)
        snprintf(why, why_size, "%s", load_error);
    return NULL;
}

enum fc_status fc_cuda_fail(const struct fc_cuda_api *cuda, CUresult result, const char *call,
                            char *out, size_t out_size)
{
    const char *name = "?", *text = "?";
    cuda->cuGetErrorName(result, &name);
    cuda->cuGetErrorString(result, &text);
    snprintf(out, out_size, "%s failed: %s (%s)", call, name, text);
    return FC_ERR_CUDA;
}
