/* The public entry points: validate -> plan -> kernel -> launch. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "context_internal.h"
#include "fc_args.h"
#include "jit_internal.h"
#include "launch_internal.h"

void fc_attention_params_init(struct fc_attention_params *params)
{
    if (params)
        memset(params, 0, sizeof *params);
}

const char *fc_status_name(enum fc_status status)
{
    static const char *const NAMES[] = {
        "FC_OK", "FC_ERR_INVALID_ARG", "FC_ERR_UNSUPPORTED", "FC_ERR_NO_DEVICE", "FC_ERR_NO_COMPILER",
        "FC_ERR_CUDA", "FC_ERR_COMPILE", "FC_ERR_CACHE", "FC_ERR_CONFIG", "FC_ERR_NOMEM", "FC_ERR_INTERNAL",
    };
    return (unsigned)status < sizeof NAMES / sizeof NAMES[0] ? NAMES[status] : "FC_ERR_UNKNOWN";
}

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)

const char *fc_version(void)
{
    return STRINGIFY(FC_VERSION_MAJOR) "." STRINGIFY(FC_VERSION_MINOR) "." STRINGIFY(FC_VERSION_PATCH);
}

/* Validation and selection, shared by forward, plan and fcjit's timings: they can never disagree. */
enum fc_status fc_context_plan(struct fc_context *ctx, const struct fc_attention_params *params,
                               struct fc_problem *problem, struct fc_plan *plan, char *msg)
{
    enum fc_status status = fc_problem_from_params(params, problem, msg, FC_MESSAGE_MAX);
    if (status == FC_OK)
        status = fc_plan_select(problem, ctx->arch, ctx->arch_specific, ctx->sm_count, &ctx->override, plan, msg,
                                FC_MESSAGE_MAX);
    /* A tuned winner for the problem's bucket replaces the heuristic's choice, except where the
     * caller forced a variant or the heuristic chose the split-KV decode kernel (not tuned). */
    const struct fc_tuned *tuned = NULL;
    if (status == FC_OK && !ctx->override.active && plan->variant.family != FC_KERNEL_DECODE)
        tuned = fc_tuned_find(&ctx->tuned, problem);
    if (tuned) {   /* the bucket's dtype, head_dim and causality are the problem's */
        struct fc_plan tuned_plan = {.variant = tuned->variant, .reason = tuned->reason};
        char why[256];
        if (fc_plan_launch_shape(problem, ctx->sm_count, &tuned_plan, why, sizeof why) == FC_OK)
            *plan = tuned_plan;
    }
    return status;
}

enum fc_status fc_attention_plan(struct fc_context *ctx, const struct fc_attention_params *params,
                                 struct fc_plan_info *info)
{
    if (!ctx)
        return FC_ERR_INVALID_ARG;
    char *msg = fc_context_message(ctx);
    struct fc_problem problem;
    struct fc_plan plan;
    enum fc_status status = fc_context_plan(ctx, params, &problem, &plan, msg);
    if (status == FC_OK && info) {
        fc_variant_name(&plan.variant, info->kernel);
        snprintf(info->reason, sizeof info->reason, "%s", plan.reason);
        info->splits = plan.splits;
    }
    return status;
}

static enum fc_status launch_one(struct fc_context *ctx, const struct fc_plan *plan, CUfunction function,
                                 struct fc_launch_args *launch, CUstream stream, char *msg)
{
    CUresult r = ctx->cuda->cuLaunchKernel(function, plan->grid, 1, 1, plan->threads, 1, 1, plan->smem_bytes, stream,
                                           launch->params, NULL);
    return r == CUDA_SUCCESS ? FC_OK : fc_cuda_fail(ctx->cuda, r, "cuLaunchKernel", msg, FC_MESSAGE_MAX);
}

/* Split-KV: the splits' fp32 partial O and LSE go to a stream-ordered scratch buffer (from the
 * device's memory pool: no synchronization, and legal inside a CUDA graph capture), then the
 * combine kernel merges them into out and lse, and the buffer goes back to the pool. */
static enum fc_status launch_split(struct fc_context *ctx, const struct fc_plan *plan, const struct fc_problem *p,
                                   const struct fc_kernel *kernel, struct fc_launch_args *launch, CUstream stream,
                                   char *msg)
{
    const struct fc_cuda_api *cu = ctx->cuda;
    const size_t rows = (size_t)p->batch * (size_t)p->heads_q * (size_t)p->seqlen_q;
    const size_t o_bytes = (size_t)plan->splits * rows * (size_t)p->head_dim * sizeof(float);
    const size_t bytes = o_bytes + (size_t)plan->splits * rows * sizeof(float);
    if (rows > INT_MAX) {
        snprintf(msg, FC_MESSAGE_MAX, "batch * heads_q * seqlen_q = %zu rows: more than one combine launch takes",
                 rows);
        return FC_ERR_UNSUPPORTED;
    }
    CUdeviceptr scratch;
    CUresult r = cu->cuMemAllocAsync(&scratch, bytes, stream);
    if (r != CUDA_SUCCESS)
        return fc_cuda_fail(cu, r, "cuMemAllocAsync (split-KV scratch)", msg, FC_MESSAGE_MAX);
    launch->arg.common.o_partial = (float *)(uintptr_t)scratch;
    launch->arg.common.lse_partial = (float *)(uintptr_t)(scratch + o_bytes);
    enum fc_status status = launch_one(ctx, plan, kernel->function, launch, stream, msg);
    if (status == FC_OK) {
        r = cu->cuLaunchKernel(kernel->combine, (unsigned)rows, 1, 1, FC_COMBINE_THREADS, 1, 1, 0, stream,
                               launch->params, NULL);
        if (r != CUDA_SUCCESS)
            status = fc_cuda_fail(cu, r, "cuLaunchKernel (combine)", msg, FC_MESSAGE_MAX);
    }
    r = cu->cuMemFreeAsync(scratch, stream);
    if (r != CUDA_SUCCESS && status == FC_OK)
        status = fc_cuda_fail(cu, r, "cuMemFreeAsync (split-KV scratch)", msg, FC_MESSAGE_MAX);
    return status;
}

enum fc_status fc_attention_forward(struct fc_context *ctx, const struct fc_attention_params *params,
                                    void *stream)
{
    if (!ctx)
        return FC_ERR_INVALID_ARG;
    char *msg = fc_context_message(ctx);
    struct fc_problem problem;
    struct fc_plan plan;
    enum fc_status status = fc_context_plan(ctx, params, &problem, &plan, msg);
    if (status != FC_OK)
        return status;
    if (!ctx->cuda) {
        snprintf(msg, FC_MESSAGE_MAX, "this context has no GPU (%.4000s)",
                 ctx->device == FC_DEVICE_NONE ? "it was created with FC_DEVICE_NONE" : ctx->create_message);
        return FC_ERR_NO_DEVICE;
    }
    int pushed;
    if ((status = fc_context_enter(ctx, &pushed)) != FC_OK)
        return status;
    struct fc_kernel kernel;
    status = fc_context_kernel(ctx, &plan, &problem, &kernel);
    struct fc_launch_args launch;
    if (status == FC_OK)
        status = fc_launch_args_build(ctx->cuda, &plan, &problem, &launch, msg, FC_MESSAGE_MAX);
    if (status == FC_OK)
        status = plan.splits > 1 ? launch_split(ctx, &plan, &problem, &kernel, &launch, (CUstream)stream, msg)
                                 : launch_one(ctx, &plan, kernel.function, &launch, (CUstream)stream, msg);
    fc_context_leave(ctx, pushed);
    return status;
}
