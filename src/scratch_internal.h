/* Internal: stream-ordered scratch memory for launches (split-KV partials, quantize's amax).
 *
 * A kernel pair that needs a buffer between its two launches takes it stream-ordered (alloc, the
 * kernels, free, all on the launch's stream: no synchronization, concurrent streams each get their
 * own). From the device's default pool that costs 50-75 us a call wherever the caller synchronizes
 * between calls (a decode loop reading its sampled token): the pool's release threshold is 0, so it
 * hands its memory back to the driver at every synchronization and maps it again at the next
 * allocation (PERF_NOTES v18, v19). The context's own pool keeps up to FC_SCRATCH_KEEP bytes across
 * synchronizations. While the stream is being captured into a CUDA graph, the allocation comes from
 * the device's default pool as before (the graph owns it, for every replay).
 */
#ifndef FC_SCRATCH_INTERNAL_H
#define FC_SCRATCH_INTERNAL_H

#include <pthread.h>

#include "cuda_api_internal.h"

#define FC_SCRATCH_KEEP (64u << 20)   /* bytes the context's pool keeps mapped between calls */

struct fc_scratch {
    pthread_mutex_t lock;
    CUmemoryPool pool;   /* NULL until the first allocation, or if it could not be made */
    int tried;
    int device;          /* the CUDA ordinal the pool's memory lives on */
};

void fc_scratch_init(struct fc_scratch *s, int device);

/** Destroys the pool (the caller has made the context current); memory still in use by queued
 *  work is released when that work is done. */
void fc_scratch_free(struct fc_scratch *s, const struct fc_cuda_api *cuda);

/** Destroys what fc_scratch_init made. */
void fc_scratch_destroy(struct fc_scratch *s);

/** A stream-ordered buffer for `stream` (free it with cuMemFreeAsync on the same stream); s NULL:
 *  the device's default pool. */
CUresult fc_scratch_alloc(struct fc_scratch *s, const struct fc_cuda_api *cuda, CUdeviceptr *ptr, size_t bytes,
                          CUstream stream);

#endif
