/* Internal: the tile schedulers' counters, owned by a context.
 *
 * A causal persistent grid of the Hopper kernel takes its row blocks from a device counter
 * (fwd_sm90.cuh's run_scheduled) that must read 0 when the kernel starts; the kernel's last take
 * zeroes it again, so a counter serves every later launch ordered after the one before: the
 * launches of one stream. A stream (told by cuStreamGetId, whose ids are never reused) keeps its
 * counter; a launch captured into a CUDA graph gets a counter of its own, so the graph's replays
 * never meet another launch's. No call goes around the launch (a stream-ordered allocation, a
 * memset and a free cost 50-75 us a call in a loop that synchronizes: PERF_NOTES v18).
 *
 * Counters are never handed out twice: a stream pushed out of the lookup table gets a fresh one if
 * it comes back (its old one may still be in use by its last kernel). They come from chunks of
 * device memory, allocated and zeroed outside any capture, freed with the context. When none is
 * left, or the stream is being captured and its chunk would need allocating, the launch gets NULL
 * and the kernel takes its static order instead: slower at worst, never wrong.
 *
 * NOTE: two graph executables instantiated from one captured graph share its counter and must not
 * run at the same time (the replays of one executable are ordered anyway).
 */
#ifndef FC_COUNTERS_INTERNAL_H
#define FC_COUNTERS_INTERNAL_H

#include <pthread.h>

#include "cuda_api_internal.h"

#define FC_COUNTER_CHUNK 4096   /* ints a chunk (16 KB) */
#define FC_COUNTER_CHUNKS 64    /* at most 256 Ki counters (1 MB) a context */
#define FC_COUNTER_STREAMS 64   /* streams whose counters are looked up */

struct fc_stream_counter {
    unsigned long long stream_id;
    CUdeviceptr counter;
    unsigned long long used;   /* the lookup's clock at the stream's last launch; 0: empty */
};

struct fc_counters {
    pthread_mutex_t lock;
    CUdeviceptr chunks[FC_COUNTER_CHUNKS];
    int chunk_count;
    int next;   /* the next unused counter of the last chunk */
    struct fc_stream_counter streams[FC_COUNTER_STREAMS];
    unsigned long long clock;
};

void fc_counters_init(struct fc_counters *c);

/** Frees the chunks (the caller has made the context current); no launch may use them after. */
void fc_counters_free(struct fc_counters *c, const struct fc_cuda_api *cuda);

/** Destroys what fc_counters_init made (after fc_counters_free, or with nothing allocated). */
void fc_counters_destroy(struct fc_counters *c);

/**
 * A zeroed counter for a scheduled launch on `stream` (the context current), or *counter 0 when
 * none can be had (the kernel then takes its static order). FC_ERR_CUDA (and why, in msg) only when
 * a CUDA call failed in a way that says the stream or the device is unusable.
 */
enum fc_status fc_counters_take(struct fc_counters *c, const struct fc_cuda_api *cuda, CUstream stream,
                                CUdeviceptr *counter, char *msg, size_t msg_size);

#endif
