/* Internal: a context's compile worker, for the quick first call (src/context.c's
 * fc_context_forward_kernel): a planned kernel that is in neither cache compiles on this worker
 * thread while a kernel that compiles in a fraction of the time serves the calls. The worker runs
 * NVRTC only (fc_jit_compile_detached); the caller's thread stores the cubin in SQLite and loads
 * it, so the cache's connection, the CUDA context and the log stay on the user's threads. */
#ifndef FC_COMPILE_WORKER_INTERNAL_H
#define FC_COMPILE_WORKER_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>

#include "jit_internal.h"

struct fc_compile_job;

struct fc_compile_worker {
    struct fc_jit *jit;                 /* not owned */
    pthread_mutex_t lock;
    pthread_cond_t wake;                /* a job was queued, or the worker is to stop */
    pthread_cond_t idle;                /* a job finished */
    pthread_t thread;
    pid_t owner;                        /* the process that started the thread (a forked child has none) */
    int started, stopping;
    struct fc_compile_job *jobs;        /* every job of the context, newest first */
};

/** What fc_compile_worker_request found. */
enum fc_compile_state {
    FC_COMPILE_UNAVAILABLE = -2,   /* no worker (its thread could not start): nothing queued, compile in place */
    FC_COMPILE_UNKNOWN = -1,       /* never requested, and not queued now (queue 0) */
    FC_COMPILE_PENDING = 0,   /* queued or compiling: serve the call otherwise */
    FC_COMPILE_READY,         /* compiled: *out holds the cubin (the caller stores and loads it) */
    FC_COMPILE_FAILED,        /* the compile failed: msg says why, *status the status (every later request too) */
    FC_COMPILE_TAKEN,         /* compiled and handed out before: the kernel table has it (or had it) */
};

void fc_compile_worker_init(struct fc_compile_worker *w, struct fc_jit *jit);

/**
 * Says where variant's compile stands and, with `queue`, queues it if it was never requested
 * (starting the thread on the first); without, a variant never requested is FC_COMPILE_UNKNOWN.
 * FC_COMPILE_READY moves the cubin to *out, once: the job reads TAKEN after. FC_COMPILE_FAILED sets
 * *status and msg (the compile's own message). Thread-safe.
 */
enum fc_compile_state fc_compile_worker_request(struct fc_compile_worker *w, const struct fc_variant *variant,
                                                int queue, struct fc_cubin *out, enum fc_status *status,
                                                char *msg, size_t msg_size);

/** Blocks until no job is queued or compiling. Returns the number of jobs that failed, ever. */
int fc_compile_worker_wait(struct fc_compile_worker *w);

/**
 * Stops the worker: queued jobs are dropped (nothing was compiled for them), the compiling one is
 * waited for, and every compiled cubin not handed out goes to fc_jit_store (nothing compiled is
 * lost). Then frees everything. In a child forked after the thread started (which has no such
 * thread), request answers FC_COMPILE_UNAVAILABLE, wait returns at once, and destroy frees the
 * child's copies without waiting, storing or touching the locks.
 */
void fc_compile_worker_destroy(struct fc_compile_worker *w);

#endif
