/* Stream-ordered scratch memory for launches (scratch_internal.h says why a pool of our own). */
#include <stdint.h>
#include <string.h>

#include "scratch_internal.h"

void fc_scratch_init(struct fc_scratch *s, int device)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    s->device = device;
}

void fc_scratch_free(struct fc_scratch *s, const struct fc_cuda_api *cuda)
{
    if (s->pool)
        cuda->cuMemPoolDestroy(s->pool);
    s->pool = NULL;
}

void fc_scratch_destroy(struct fc_scratch *s)
{
    pthread_mutex_destroy(&s->lock);
}

/* The context's pool, made at its first use; NULL if the driver would not make one (the default
 * pool then serves, as it always can). */
static CUmemoryPool pool_of(struct fc_scratch *s, const struct fc_cuda_api *cuda)
{
    pthread_mutex_lock(&s->lock);
    if (!s->tried) {
        s->tried = 1;
        CUmemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = s->device;
        CUmemoryPool pool;
        if (cuda->cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS) {
            cuuint64_t keep = FC_SCRATCH_KEEP;
            if (cuda->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) == CUDA_SUCCESS)
                s->pool = pool;
            else
                cuda->cuMemPoolDestroy(pool);
        }
    }
    CUmemoryPool pool = s->pool;
    pthread_mutex_unlock(&s->lock);
    return pool;
}

CUresult fc_scratch_alloc(struct fc_scratch *s, const struct fc_cuda_api *cuda, CUdeviceptr *ptr, size_t bytes,
                          CUstream stream)
{
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = cuda->cuStreamIsCapturing(stream, &capture);
    if (r != CUDA_SUCCESS)
        return r;
    CUmemoryPool pool = s && capture == CU_STREAM_CAPTURE_STATUS_NONE ? pool_of(s, cuda) : NULL;
    return pool ? cuda->cuMemAllocFromPoolAsync(ptr, bytes, pool, stream) : cuda->cuMemAllocAsync(ptr, bytes, stream);
}
