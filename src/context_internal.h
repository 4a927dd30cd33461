/* Internal: the context behind the opaque public handle. */
#ifndef FC_CONTEXT_INTERNAL_H
#define FC_CONTEXT_INTERNAL_H

#include <pthread.h>

#include "cache_internal.h"
#include "compile_worker_internal.h"
#include "counters_internal.h"
#include "scratch_internal.h"
#include "cuda_api_internal.h"
#include "jit_internal.h"
#include "launch_internal.h"
#include "log_internal.h"
#include "plan_internal.h"
#include "tuning_internal.h"

#define FC_MESSAGE_MAX 8192

struct fc_context {
    unsigned long long serial;        /* unique per process: tells apart contexts at one address */
    int device;                       /* FC_DEVICE_NONE: compile only */
    const struct fc_cuda_api *cuda;   /* NULL without a device */
    CUdevice cu_device;
    CUcontext cu_context;             /* the device's primary context (shared with the runtime API) */
    struct fc_target target;          /* what plans are made for: the device, or sm_90a without one */
    char gpu_name[128];

    struct fc_plan_override override;   /* FC_FORCE_VARIANT, read once at creation */
    struct fc_logger logger;
    struct fc_cache *cache;           /* NULL with no_disk_cache, or when the file cannot be used */
    enum fc_cache_state cache_state;
    char cache_warning[FC_MESSAGE_MAX];   /* why the cache is read only or not used ("" if it is fine) */
    struct fc_jit *jit;
    struct fc_compile_worker worker;  /* the quick first call's background compiles */
    int quick_first_call;             /* 1 unless FC_QUICK_FIRST_CALL=0 or fc_context_set_quick_first_call(ctx, 0) */
    unsigned long quick_calls;        /* forward calls the quick first call served (atomic; fcjit run reads it) */

    pthread_mutex_t kernels_lock;
    struct fc_kernel *kernels;        /* open addressing on the variant's hash */
    unsigned kernel_capacity, kernel_count;
    struct fc_counters counters;      /* the tile schedulers' (fwd_sm90.cuh's run_scheduled) */
    struct fc_scratch scratch;        /* launches' stream-ordered buffers (split-KV, quantize) */

    struct fc_tuning_identity tuning_id;   /* this GPU, driver and kernel set */
    struct fc_tuned_table tuned;           /* winners that apply here (empty: FC_TUNED=0, no GPU) */

    char create_message[FC_MESSAGE_MAX];   /* why fc_context_create failed, if it did */
};

/** What a tuning measurement on this context's GPU is keyed by. */
void fc_context_tuning_identity(const struct fc_context *ctx, struct fc_tuning_identity *id);

/** This thread's message buffer, now attributed to ctx (cleared). */
char *fc_context_message(const struct fc_context *ctx);

/**
 * Checks the shape rules of params and plans the launch fc_attention_forward makes for them on
 * this context's target (fc_plan_make with its forced variant and tuned winners). Reads no
 * tensor: the forward call checks the tensor rules after it.
 * @param msg FC_MESSAGE_MAX bytes for the reason of a failure
 */
enum fc_status fc_context_plan(struct fc_context *ctx, const struct fc_attention_params *params,
                               struct fc_problem *problem, struct fc_plan *plan, char *msg);

/**
 * The loaded kernel for a variant (copied into *out): the in-memory table, else the JIT (SQLite or NVRTC) and
 * cuModuleLoadData. Thread-safe; the caller has made ctx->cu_context current. problem (may be NULL:
 * fc_attention_merge) is for the debug log.
 */
enum fc_status fc_context_kernel(struct fc_context *ctx, const struct fc_plan *plan,
                                 const struct fc_problem *problem, struct fc_kernel *out);

/**
 * fc_attention_forward's kernel: fc_context_kernel's for the plan, unless that kernel is in neither
 * cache and the quick first call is on and has a kernel for the problem (fc_plan_quick): the planned
 * kernel is then queued on the context's compile worker and the quick one serves (*plan becomes its
 * plan) until a later call finds the planned one compiled, stores and loads it; never while stream
 * is capturing a graph. Thread-safe; the caller has made ctx->cu_context current.
 */
enum fc_status fc_context_forward_kernel(struct fc_context *ctx, struct fc_plan *plan,
                                         const struct fc_problem *problem, CUstream stream, struct fc_kernel *out);

/**
 * What a launch needs from the context: a GPU (else FC_ERR_NO_DEVICE and why there is none), its
 * CUDA context current (*pushed for fc_context_leave) and the plan's kernel (fc_context_kernel).
 * On failure nothing is left pushed. msg is the call's message buffer (FC_MESSAGE_MAX bytes).
 */
enum fc_status fc_context_begin_launch(struct fc_context *ctx, const struct fc_plan *plan,
                                       const struct fc_problem *problem, struct fc_kernel *kernel, int *pushed,
                                       char *msg);

/** The same with fc_context_forward_kernel's kernel (*plan may become the quick first call's). */
enum fc_status fc_context_begin_forward(struct fc_context *ctx, struct fc_plan *plan,
                                        const struct fc_problem *problem, CUstream stream, struct fc_kernel *kernel,
                                        int *pushed, char *msg);

/** Makes the context's CUDA context current; *pushed tells fc_context_leave what to undo. */
enum fc_status fc_context_enter(struct fc_context *ctx, int *pushed);
void fc_context_leave(struct fc_context *ctx, int pushed);

#endif
