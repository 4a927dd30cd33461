/* The context: device, kernel cache and JIT, the in-memory kernel table, per-thread messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "context_internal.h"
#include "embedded_internal.h"
#include "family_internal.h"

#define KERNEL_TABLE_START 64   /* a power of two */

/* The message of the last failed call, per thread: no lock, and a call on another thread cannot
 * overwrite the message this thread is about to read. */
static _Thread_local struct {
    unsigned long long owner;   /* the serial of the context it belongs to; 0: none */
    char text[FC_MESSAGE_MAX];
} last_message;

static unsigned long long next_serial = 1;

char *fc_context_message(const struct fc_context *ctx)
{
    last_message.owner = ctx->serial;
    last_message.text[0] = 0;
    return last_message.text;
}

const char *fc_context_errmsg(const struct fc_context *ctx)
{
    if (!ctx)
        return "the context is NULL (fc_context_create failed for lack of memory?)";
    if (last_message.owner == ctx->serial)
        return last_message.text;
    return ctx->create_message;
}

void fc_options_init(struct fc_options *options)
{
    if (options)
        memset(options, 0, sizeof *options);
}

static enum fc_status open_device(struct fc_context *ctx, char *msg, size_t size)
{
    char why[512];
    ctx->cuda = fc_cuda_load(why, sizeof why);
    if (!ctx->cuda) {
        snprintf(msg, size, "%s", why);
        return FC_ERR_NO_DEVICE;
    }
    const struct fc_cuda_api *cu = ctx->cuda;
    int count = 0;
    cu->cuDeviceGetCount(&count);
    if (ctx->device < 0 || ctx->device >= count) {
        snprintf(msg, size, "device %d does not exist: this machine has %d CUDA device%s",
                 ctx->device, count, count == 1 ? "" : "s");
        ctx->cuda = NULL;
        return FC_ERR_NO_DEVICE;
    }
    CUresult r;
    int major = 0, minor = 0;
    if ((r = cu->cuDeviceGet(&ctx->cu_device, ctx->device)) ||
        (r = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->cu_device)) ||
        (r = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->cu_device)) ||
        (r = cu->cuDeviceGetAttribute(&ctx->target.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx->cu_device)) ||
        (r = cu->cuDeviceGetName(ctx->gpu_name, sizeof ctx->gpu_name, ctx->cu_device)) ||
        (r = cu->cuDevicePrimaryCtxRetain(&ctx->cu_context, ctx->cu_device))) {
        enum fc_status status = fc_cuda_fail(cu, r, "opening the device", msg, size);
        ctx->cuda = NULL;
        return status;
    }
    ctx->target.arch = major * 10 + minor;
    ctx->target.arch_specific = ctx->target.arch == 90;   /* Hopper: build for sm_90a (wgmma, setmaxnreg) */
    fc_log(&ctx->logger, FC_LOG_INFO, "device %d: %s, sm_%d%s, %d SMs, driver %d", ctx->device, ctx->gpu_name,
           ctx->target.arch, ctx->target.arch_specific ? "a" : "", ctx->target.sm_count, cu->driver_version);
    return FC_OK;
}

static enum fc_status open_cache_and_jit(struct fc_context *ctx, const struct fc_options *o,
                                         char *msg, size_t size)
{
    enum fc_status status;
    if (!o->no_disk_cache) {   /* a cache file never stops the context: read only, or memory only */
        status = fc_cache_open_usable(o->cache_path, &ctx->cache, &ctx->cache_state, ctx->cache_warning,
                                      sizeof ctx->cache_warning);
        if (status != FC_OK) {
            snprintf(msg, size, "%s", ctx->cache_warning);
            return status;
        }
        if (ctx->cache_warning[0])
            fc_log(&ctx->logger, FC_LOG_WARN, "%s", ctx->cache_warning);
    }
    const char *dir = o->template_dir ? o->template_dir : getenv("FC_TEMPLATE_DIR");
    if ((status = fc_jit_create(dir, ctx->cache, &ctx->jit, msg, size)) != FC_OK)
        return status;
    fc_jit_set_logger(ctx->jit, &ctx->logger);
    return FC_OK;
}

void fc_context_tuning_identity(const struct fc_context *ctx, struct fc_tuning_identity *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->gpu_name, sizeof id->gpu_name, "%s", ctx->gpu_name);
    id->sm_count = ctx->target.sm_count;
    const int driver = ctx->cuda ? ctx->cuda->driver_version : 0;
    snprintf(id->driver, sizeof id->driver, "%d.%d", driver / 1000, driver % 1000 / 10);
    fc_jit_kernel_set_hash(ctx->jit, id->kernel_set);   /* the templates this context compiles */
}

/* The tuned winners for this GPU; FC_TUNED=0 leaves the selector's heuristic alone. A database
 * that cannot be read costs the tuning, not the context: a warning. */
static void load_tuned(struct fc_context *ctx)
{
    fc_context_tuning_identity(ctx, &ctx->tuning_id);
    const char *env = getenv("FC_TUNED");
    if (env && strcmp(env, "0") == 0)
        return;
    const struct fc_embedded_file *shipped = fc_embedded_find(fc_embedded_data, "winners.tsv");
    char msg[512];
    if (fc_tuned_load(&ctx->tuned, ctx->cache, &ctx->tuning_id, ctx->target.arch, ctx->target.arch_specific,
                      shipped ? shipped->text : NULL, msg, sizeof msg) != FC_OK)
        fc_log(&ctx->logger, FC_LOG_WARN, "tuned winners not read, the heuristic decides: %s", msg);
    fc_log(&ctx->logger, FC_LOG_DEBUG, "%zu tuned buckets for %s", ctx->tuned.count, ctx->gpu_name);
}

enum fc_status fc_context_create(int device, const struct fc_options *options, struct fc_context **out)
{
    if (!out)
        return FC_ERR_INVALID_ARG;
    struct fc_context *ctx = calloc(1, sizeof *ctx);
    *out = ctx;
    if (!ctx)
        return FC_ERR_NOMEM;
    struct fc_options defaults;
    fc_options_init(&defaults);
    const struct fc_options *o = options ? options : &defaults;
    pthread_mutex_init(&ctx->kernels_lock, NULL);
    fc_counters_init(&ctx->counters);
    fc_scratch_init(&ctx->scratch, device);
    ctx->serial = __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
    ctx->device = device;
    ctx->target.arch = 90;            /* what a device-less context plans for */
    ctx->target.arch_specific = 1;
    ctx->logger.level = o->log_level != FC_LOG_OFF ? o->log_level : fc_log_level_from_env(FC_LOG_OFF);
    ctx->logger.fn = o->log_fn;
    ctx->logger.user = o->log_user;
    enum fc_status status = FC_OK;
    if (device < 0 && device != FC_DEVICE_NONE) {
        snprintf(ctx->create_message, sizeof ctx->create_message,
                 "device %d is not a CUDA ordinal (use 0, 1, ... or FC_DEVICE_NONE)", device);
        status = FC_ERR_INVALID_ARG;
    }
    const char *forced = getenv("FC_FORCE_VARIANT");
    if (status == FC_OK && forced && *forced && fc_plan_override_parse(forced, &ctx->override)) {
        snprintf(ctx->create_message, sizeof ctx->create_message,
                 "FC_FORCE_VARIANT=%.200s: expected a family, optionally with tiles (m block_m, n block_n, "
                 "s stages, w warps, p1 ping-pong, k splits of decode or sm90 g1): reference (e.g. reference:m16w4), sm80 "
                 "(e.g. sm80:m128n64w4), sm90 (e.g. sm90:m128n64s2w12p1), decode (e.g. decode:n64w4k8)", forced);
        status = FC_ERR_CONFIG;
    }
    if (status == FC_OK)
        status = open_cache_and_jit(ctx, o, ctx->create_message, sizeof ctx->create_message);
    if (status == FC_OK)
        fc_compile_worker_init(&ctx->worker, ctx->jit);
    const char *quick = getenv("FC_QUICK_FIRST_CALL");
    __atomic_store_n(&ctx->quick_first_call, !(quick && strcmp(quick, "0") == 0), __ATOMIC_RELAXED);
    if (status == FC_OK && device != FC_DEVICE_NONE)
        status = open_device(ctx, ctx->create_message, sizeof ctx->create_message);
    if (status == FC_OK && device != FC_DEVICE_NONE)
        load_tuned(ctx);
    if (status != FC_OK)
        fc_log(&ctx->logger, FC_LOG_ERROR, "%s", ctx->create_message);
    return status;
}

void fc_context_destroy(struct fc_context *ctx)
{
    if (!ctx)
        return;
    fc_compile_worker_destroy(&ctx->worker);   /* stores what it compiled: before the cache closes */
    if (ctx->cuda) {
        int pushed = 0;
        if (fc_context_enter(ctx, &pushed) == FC_OK) {
            for (unsigned i = 0; i < ctx->kernel_capacity; i++)
                if (ctx->kernels[i].occupied)
                    ctx->cuda->cuModuleUnload(ctx->kernels[i].module);
            fc_counters_free(&ctx->counters, ctx->cuda);
            fc_scratch_free(&ctx->scratch, ctx->cuda);
            fc_context_leave(ctx, pushed);
        }
        ctx->cuda->cuDevicePrimaryCtxRelease(ctx->cu_device);
    }
    free(ctx->kernels);
    fc_tuned_free(&ctx->tuned);
    fc_jit_destroy(ctx->jit);
    fc_cache_close(ctx->cache);
    pthread_mutex_destroy(&ctx->kernels_lock);
    fc_counters_destroy(&ctx->counters);
    fc_scratch_destroy(&ctx->scratch);
    free(ctx);
}

enum fc_status fc_context_enter(struct fc_context *ctx, int *pushed)
{
    CUcontext current = NULL;
    *pushed = 0;
    ctx->cuda->cuCtxGetCurrent(&current);
    if (current == ctx->cu_context)
        return FC_OK;
    CUresult r = ctx->cuda->cuCtxPushCurrent(ctx->cu_context);
    if (r != CUDA_SUCCESS)
        return fc_cuda_fail(ctx->cuda, r, "cuCtxPushCurrent", fc_context_message(ctx), FC_MESSAGE_MAX);
    *pushed = 1;
    return FC_OK;
}

/* begin_launch's and begin_forward's: the kernel from fc_context_kernel, or with `forward`
 * fc_context_forward_kernel (which may replace *plan). */
static enum fc_status begin(struct fc_context *ctx, struct fc_plan *plan, int forward,
                            const struct fc_problem *problem, CUstream stream, struct fc_kernel *kernel, int *pushed,
                            char *msg)
{
    *pushed = 0;
    if (!ctx->cuda) {
        snprintf(msg, FC_MESSAGE_MAX, "this context has no GPU (%.4000s)",
                 ctx->device == FC_DEVICE_NONE ? "it was created with FC_DEVICE_NONE" : ctx->create_message);
        return FC_ERR_NO_DEVICE;
    }
    enum fc_status status = fc_context_enter(ctx, pushed);
    if (status == FC_OK)
        status = forward ? fc_context_forward_kernel(ctx, plan, problem, stream, kernel)
                         : fc_context_kernel(ctx, plan, problem, kernel);
    if (status != FC_OK) {
        fc_context_leave(ctx, *pushed);
        *pushed = 0;
    }
    return status;
}

enum fc_status fc_context_begin_launch(struct fc_context *ctx, const struct fc_plan *plan,
                                       const struct fc_problem *problem, struct fc_kernel *kernel, int *pushed,
                                       char *msg)
{
    struct fc_plan copy = *plan;   /* fc_context_kernel never replaces it */
    return begin(ctx, &copy, 0, problem, NULL, kernel, pushed, msg);
}

enum fc_status fc_context_begin_forward(struct fc_context *ctx, struct fc_plan *plan,
                                        const struct fc_problem *problem, CUstream stream, struct fc_kernel *kernel,
                                        int *pushed, char *msg)
{
    return begin(ctx, plan, 1, problem, stream, kernel, pushed, msg);
}

enum fc_status fc_context_set_quick_first_call(struct fc_context *ctx, int enabled)
{
    if (!ctx)
        return FC_ERR_INVALID_ARG;
    __atomic_store_n(&ctx->quick_first_call, enabled != 0, __ATOMIC_RELAXED);
    return FC_OK;
}

enum fc_status fc_context_wait_compiles(struct fc_context *ctx)
{
    if (!ctx)
        return FC_ERR_INVALID_ARG;
    char *msg = fc_context_message(ctx);
    if (!ctx->worker.jit)
        return FC_OK;
    int failed = fc_compile_worker_wait(&ctx->worker);
    if (!failed)
        return FC_OK;
    snprintf(msg, FC_MESSAGE_MAX, "%d kernel%s compiled for the quick first call failed; the next forward call "
             "of such a problem returns the compile's error", failed, failed == 1 ? "" : "s");
    return FC_ERR_COMPILE;
}

void fc_context_leave(struct fc_context *ctx, int pushed)
{
    CUcontext popped;
    if (pushed)
        ctx->cuda->cuCtxPopCurrent(&popped);
}

/* ---- the in-memory kernel table ---- */

static unsigned variant_slot(const struct fc_variant *v, unsigned capacity)
{
    return (unsigned)XXH3_64bits(v, sizeof *v) & (capacity - 1);
}

static int same_variant(const struct fc_variant *a, const struct fc_variant *b)
{
    return memcmp(a, b, sizeof *a) == 0;   /* plans memset variants: no stray padding bytes */
}

/* Finds the kernel under the lock; returns 1 and copies it out on a hit. */
static int table_find(struct fc_context *ctx, const struct fc_variant *v, struct fc_kernel *out)
{
    if (!ctx->kernel_capacity)
        return 0;
    for (unsigned i = variant_slot(v, ctx->kernel_capacity);; i = (i + 1) & (ctx->kernel_capacity - 1)) {
        if (!ctx->kernels[i].occupied)
            return 0;
        if (same_variant(&ctx->kernels[i].variant, v)) {
            *out = ctx->kernels[i];
            return 1;
        }
    }
}

static void table_put(struct fc_kernel *table, unsigned capacity, const struct fc_kernel *kernel)
{
    unsigned i = variant_slot(&kernel->variant, capacity);
    while (table[i].occupied)
        i = (i + 1) & (capacity - 1);
    table[i] = *kernel;
}

static enum fc_status table_insert(struct fc_context *ctx, const struct fc_kernel *kernel)
{
    if (2 * (ctx->kernel_count + 1) > ctx->kernel_capacity) {   /* keep the load under one half */
        unsigned capacity = ctx->kernel_capacity ? 2 * ctx->kernel_capacity : KERNEL_TABLE_START;
        struct fc_kernel *grown = calloc(capacity, sizeof *grown);
        if (!grown)
            return FC_ERR_NOMEM;
        for (unsigned i = 0; i < ctx->kernel_capacity; i++)
            if (ctx->kernels[i].occupied)
                table_put(grown, capacity, &ctx->kernels[i]);
        free(ctx->kernels);
        ctx->kernels = grown;
        ctx->kernel_capacity = capacity;
    }
    table_put(ctx->kernels, ctx->kernel_capacity, kernel);
    ctx->kernel_count++;
    return FC_OK;
}

static enum fc_status load_module(struct fc_context *ctx, const struct fc_plan *plan, const struct fc_cubin *cubin,
                                  struct fc_kernel *out, char *msg)
{
    const struct fc_cuda_api *cu = ctx->cuda;
    CUresult r = cu->cuModuleLoadData(&out->module, cubin->record.cubin);
    if (r != CUDA_SUCCESS) {
        fc_cuda_fail(cu, r, "cuModuleLoadData", msg, FC_MESSAGE_MAX);
        size_t n = strlen(msg);
        snprintf(msg + n, FC_MESSAGE_MAX - n, " loading kernel %s", cubin->record.name);
        return FC_ERR_CUDA;
    }
    if ((r = cu->cuModuleGetFunction(&out->function, out->module, FC_KERNEL_ENTRY)) ||
        (r = cu->cuFuncSetAttribute(out->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    (int)plan->smem_bytes))) {
        cu->cuModuleUnload(out->module);
        return fc_cuda_fail(cu, r, "preparing the kernel", msg, FC_MESSAGE_MAX);
    }
    out->second = NULL;
    const struct fc_family *family = fc_family_of(plan->variant.family);
    const char *second = family->second_entry;
    if (second && family->second_source && family->second_source(&plan->variant, NULL, 0) == 0)
        second = NULL;   /* this variant's unit has none (sm90: only v_transposed variants) */
    if (second && (r = cu->cuModuleGetFunction(&out->second, out->module, second))) {
        cu->cuModuleUnload(out->module);
        return fc_cuda_fail(cu, r, "preparing the module's second kernel", msg, FC_MESSAGE_MAX);
    }
    out->variant = plan->variant;
    out->occupied = 1;
    return FC_OK;
}

static int find_loaded(struct fc_context *ctx, const struct fc_variant *v, struct fc_kernel *out)
{
    pthread_mutex_lock(&ctx->kernels_lock);
    int hit = table_find(ctx, v, out);
    pthread_mutex_unlock(&ctx->kernels_lock);
    return hit;
}

/* Loads a cubin of the plan's variant into *out and the kernel table (a kernel another thread loaded
 * meanwhile wins). Frees the cubin. */
static enum fc_status load_cubin(struct fc_context *ctx, const struct fc_plan *plan, const struct fc_problem *problem,
                                 struct fc_cubin *cubin, struct fc_kernel *out, char *msg)
{
    enum fc_status status = load_module(ctx, plan, cubin, out, msg);
    const char *origin = cubin->origin == FC_CUBIN_COMPILED ? "compiled" : "from cache";
    if (status == FC_OK && problem)
        fc_log(&ctx->logger, FC_LOG_DEBUG,
               "B=%d Sq=%d Sk=%d Hq=%d Hkv=%d D=%d %s%s -> %s (%s; %s)", problem->batch,
               problem->seqlen_q, problem->seqlen_k, problem->heads_q, problem->heads_kv,
               problem->head_dim, fc_dtype_name(problem->dtype), problem->mask.causal ? " causal" : "",
               cubin->record.name, origin, plan->reason);
    else if (status == FC_OK)
        fc_log(&ctx->logger, FC_LOG_DEBUG, "%s (%s; %s)", cubin->record.name, origin, plan->reason);
    fc_cubin_free(cubin);
    if (status != FC_OK)
        return status;

    pthread_mutex_lock(&ctx->kernels_lock);
    struct fc_kernel existing;
    if (table_find(ctx, &plan->variant, &existing)) {   /* another thread loaded it meanwhile */
        ctx->cuda->cuModuleUnload(out->module);
        *out = existing;
    } else {
        status = table_insert(ctx, out);
        if (status != FC_OK)
            ctx->cuda->cuModuleUnload(out->module);
    }
    pthread_mutex_unlock(&ctx->kernels_lock);
    return status;
}

enum fc_status fc_context_kernel(struct fc_context *ctx, const struct fc_plan *plan,
                                 const struct fc_problem *problem, struct fc_kernel *out)
{
    if (find_loaded(ctx, &plan->variant, out))
        return FC_OK;
    char *msg = fc_context_message(ctx);
    struct fc_cubin cubin;
    enum fc_status status = fc_jit_get_cubin(ctx->jit, &plan->variant, 0, &cubin, msg, FC_MESSAGE_MAX);
    return status == FC_OK ? load_cubin(ctx, plan, problem, &cubin, out, msg) : status;
}

/* Whether a launch on stream is being captured into a graph (a launch that cannot tell counts as one). */
static int capturing(const struct fc_context *ctx, CUstream stream)
{
    CUstreamCaptureStatus capture;
    return ctx->cuda->cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS || capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* What the worker did with the plan's variant: READY's cubin stored and loaded into *out (*status the
 * load's), FAILED's *status the compile's. A request that queues (queue) or not; with `wait`, a compile
 * under way is waited for (a call that may not take the quick kernel compiles nothing twice). */
static enum fc_compile_state from_worker(struct fc_context *ctx, const struct fc_plan *plan,
                                         const struct fc_problem *problem, int queue, int wait,
                                         struct fc_kernel *out, enum fc_status *status)
{
    char *msg = fc_context_message(ctx);
    struct fc_cubin cubin;
    const struct fc_variant *v = &plan->variant;
    enum fc_compile_state state = fc_compile_worker_request(&ctx->worker, v, queue, &cubin, status, msg,
                                                            FC_MESSAGE_MAX);
    if (wait && state == FC_COMPILE_PENDING) {
        fc_compile_worker_wait(&ctx->worker);
        state = fc_compile_worker_request(&ctx->worker, v, 0, &cubin, status, msg, FC_MESSAGE_MAX);
    }
    if (state == FC_COMPILE_READY) {
        fc_jit_store(ctx->jit, &cubin);
        *status = load_cubin(ctx, plan, problem, &cubin, out, msg);
    }
    return state;
}

/* The quick plan's kernel for this call (*plan becomes its plan). */
static enum fc_status run_quick(struct fc_context *ctx, struct fc_plan *plan, const struct fc_plan *quick,
                                const struct fc_problem *problem, struct fc_kernel *out)
{
    enum fc_status status = fc_context_kernel(ctx, quick, problem, out);
    if (status != FC_OK)
        return status;
    __atomic_fetch_add(&ctx->quick_calls, 1, __ATOMIC_RELAXED);
    char quick_name[FC_VARIANT_NAME_MAX], planned[FC_VARIANT_NAME_MAX];
    fc_variant_name(&quick->variant, quick_name);
    fc_variant_name(&plan->variant, planned);
    fc_log(&ctx->logger, FC_LOG_DEBUG, "quick first call: %s serves while %s compiles", quick_name, planned);
    *plan = *quick;
    return FC_OK;
}

enum fc_status fc_context_forward_kernel(struct fc_context *ctx, struct fc_plan *plan,
                                         const struct fc_problem *problem, CUstream stream, struct fc_kernel *out)
{
    if (find_loaded(ctx, &plan->variant, out))   /* the hot path: one lookup, as fc_context_kernel's */
        return FC_OK;
    struct fc_plan quick;
    /* NOTE: never into a graph: it would replay the quick kernel for good */
    const int quick_ok = __atomic_load_n(&ctx->quick_first_call, __ATOMIC_RELAXED) && problem &&
                         fc_plan_quick(problem, &ctx->target, plan, &quick) && !capturing(ctx, stream);
    enum fc_status status = FC_OK;
    enum fc_compile_state state = from_worker(ctx, plan, problem, 0, !quick_ok, out, &status);
    if (state == FC_COMPILE_READY || state == FC_COMPILE_FAILED)
        return status;
    if (!quick_ok)   /* never queued, or another thread is loading it: compiled (or found) here as ever */
        return fc_context_kernel(ctx, plan, problem, out);
    if (state == FC_COMPILE_UNKNOWN) {   /* the first call that plans it: the disk cache, once */
        char *msg = fc_context_message(ctx);
        struct fc_cubin cubin;
        int cached = 0;
        if ((status = fc_jit_find_cubin(ctx->jit, &plan->variant, &cubin, &cached, msg, FC_MESSAGE_MAX)) != FC_OK)
            return status;
        if (cached)
            return load_cubin(ctx, plan, problem, &cubin, out, msg);
        state = from_worker(ctx, plan, problem, 1, 0, out, &status);
        if (state == FC_COMPILE_READY || state == FC_COMPILE_FAILED)
            return status;
        if (state == FC_COMPILE_UNAVAILABLE)   /* no worker thread: compiled here */
            return fc_context_kernel(ctx, plan, problem, out);
    }
    return run_quick(ctx, plan, &quick, problem, out);   /* pending, or another thread is loading it */
}
