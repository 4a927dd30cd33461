/* The tile schedulers' counters (counters_internal.h says what they are for and why so). */
#include <string.h>

#include "counters_internal.h"

void fc_counters_init(struct fc_counters *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
}

void fc_counters_free(struct fc_counters *c, const struct fc_cuda_api *cuda)
{
    for (int i = 0; i < c->chunk_count; i++)
        cuda->cuMemFree(c->chunks[i]);
    c->chunk_count = 0;
    c->next = 0;
    memset(c->streams, 0, sizeof c->streams);
}

void fc_counters_destroy(struct fc_counters *c)
{
    pthread_mutex_destroy(&c->lock);
}

/* A counter never handed out before, or 0 when there is none to give without allocating during a
 * capture (cuMemAlloc is not legal there) or past FC_COUNTER_CHUNKS. A new chunk is zeroed on the
 * launch's stream and waited for, so that the zeros are in place before any stream's kernel reads
 * one of its counters (once, then every FC_COUNTER_CHUNK streams and captures). Under c->lock. */
static enum fc_status fresh_counter(struct fc_counters *c, const struct fc_cuda_api *cuda, CUstream stream,
                                    int capturing, CUdeviceptr *counter, char *msg, size_t msg_size)
{
    *counter = 0;
    if (c->chunk_count == 0 || c->next == FC_COUNTER_CHUNK) {
        if (capturing || c->chunk_count == FC_COUNTER_CHUNKS)
            return FC_OK;
        CUdeviceptr chunk;
        CUresult r = cuda->cuMemAlloc(&chunk, FC_COUNTER_CHUNK * sizeof(int));
        if (r == CUDA_ERROR_OUT_OF_MEMORY)   /* the static order needs no memory */
            return FC_OK;
        if (r != CUDA_SUCCESS)
            return fc_cuda_fail(cuda, r, "cuMemAlloc (the tile scheduler's counters)", msg, msg_size);
        if ((r = cuda->cuMemsetD32Async(chunk, 0, FC_COUNTER_CHUNK, stream)) != CUDA_SUCCESS ||
            (r = cuda->cuStreamSynchronize(stream)) != CUDA_SUCCESS) {
            cuda->cuMemFree(chunk);
            return fc_cuda_fail(cuda, r, "zeroing the tile scheduler's counters", msg, msg_size);
        }
        c->chunks[c->chunk_count++] = chunk;
        c->next = 0;
    }
    *counter = c->chunks[c->chunk_count - 1] + sizeof(int) * (CUdeviceptr)c->next++;
    return FC_OK;
}

enum fc_status fc_counters_take(struct fc_counters *c, const struct fc_cuda_api *cuda, CUstream stream,
                                CUdeviceptr *counter, char *msg, size_t msg_size)
{
    *counter = 0;
    CUstreamCaptureStatus capture;
    CUresult r = cuda->cuStreamIsCapturing(stream, &capture);
    if (r != CUDA_SUCCESS)
        return fc_cuda_fail(cuda, r, "cuStreamIsCapturing", msg, msg_size);
    if (capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED)   /* the launch will say so */
        return FC_OK;
    unsigned long long id = 0;
    if (capture == CU_STREAM_CAPTURE_STATUS_NONE && (r = cuda->cuStreamGetId(stream, &id)) != CUDA_SUCCESS)
        return fc_cuda_fail(cuda, r, "cuStreamGetId", msg, msg_size);
    pthread_mutex_lock(&c->lock);
    enum fc_status status = FC_OK;
    if (capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {   /* the graph's own, for every replay */
        status = fresh_counter(c, cuda, stream, 1, counter, msg, msg_size);
    } else {
        struct fc_stream_counter *slot = NULL, *oldest = &c->streams[0];
        for (int i = 0; i < FC_COUNTER_STREAMS && !slot; i++) {
            struct fc_stream_counter *s = &c->streams[i];
            if (s->used && s->stream_id == id)
                slot = s;
            else if (s->used < oldest->used)
                oldest = s;
        }
        if (!slot) {   /* the stream's first launch, or its entry was pushed out: a fresh counter */
            CUdeviceptr fresh;
            status = fresh_counter(c, cuda, stream, 0, &fresh, msg, msg_size);
            if (status == FC_OK && fresh) {
                slot = oldest;
                slot->stream_id = id;
                slot->counter = fresh;
            }
        }
        if (slot) {
            slot->used = ++c->clock;
            *counter = slot->counter;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return status;
}
