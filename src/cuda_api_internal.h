/* Internal: the CUDA driver API, loaded at run time from libcuda.so.1.
 *
 * The library, fcjit and the CPU tests must load and answer on machines with no driver, so nothing
 * links against libcuda: every entry point is resolved once through cuGetProcAddress. */
#ifndef FC_CUDA_API_INTERNAL_H
#define FC_CUDA_API_INTERNAL_H

#include <stddef.h>

#include <cuda.h>

#include "flashcore.h"

#define FC_CUDA_FUNCTIONS(X) \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) \
    X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
    X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
    X(cuCtxGetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxSynchronize) \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
    X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) \
    X(cuMemAlloc) X(cuMemFree) X(cuMemAllocAsync) X(cuMemFreeAsync) \
    X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolSetAttribute) X(cuMemAllocFromPoolAsync) \
    X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD16) X(cuMemsetD32) X(cuMemsetD32Async) \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamGetId) X(cuStreamIsCapturing) \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) \
    X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuTensorMapEncodeTiled)

struct fc_cuda_api {
#define FC_CUDA_MEMBER(name) __typeof__(name) *name;
    FC_CUDA_FUNCTIONS(FC_CUDA_MEMBER)
#undef FC_CUDA_MEMBER
    int driver_version;   /* e.g. 13000 */
};

/**
 * Loads and initializes the driver once per process (thread-safe).
 * @return the table, or NULL with the reason in why (no libcuda, no GPU, driver too old ...)
 */
const struct fc_cuda_api *fc_cuda_load(char *why, size_t why_size);

/** "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" into out; returns FC_ERR_CUDA. */
enum fc_status fc_cuda_fail(const struct fc_cuda_api *api, CUresult result, const char *call,
                            char *out, size_t out_size);

#endif
