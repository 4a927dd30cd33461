/* The public entry points: validate -> plan -> kernel -> launch. */
#include <stdio.h>
#include <string.h>

#include "context_internal.h"
#include "launch_internal.h"

void fc_attention_params_init_sized(struct fc_attention_params *params, size_t struct_size)
{
    if (!params || struct_size < FC_PARAMS_SIZE_0_2)
        return;   /* not a struct of any version: fc_attention_forward refuses its struct_size */
    struct fc_attention_params defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.window_left = -1;   /* unbounded: no window */
    defaults.window_right = -1;
    defaults.kv_dtype = FC_DTYPE_SAME;
    defaults.out_dtype = FC_DTYPE_SAME;
    /* fields of a newer caller's struct this library does not know: 0, which it takes as unset */
    memset(params, 0, struct_size);
    memcpy(params, &defaults, struct_size < sizeof defaults ? struct_size : sizeof defaults);
    params->struct_size = struct_size;
}

_Static_assert(FC_PARAMS_SIZE_0_2 % _Alignof(struct fc_attention_params) == 0, "0.2.0's struct ended at causal");

/* 0.2.0's symbol: its callers' structs end where 0.2.0's did. The parentheses keep the header's
 * macro of the same name from expanding here. */
void(fc_attention_params_init)(struct fc_attention_params *params)
{
    fc_attention_params_init_sized(params, FC_PARAMS_SIZE_0_2);
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

enum fc_status fc_context_plan(struct fc_context *ctx, const struct fc_attention_params *params,
                               struct fc_problem *problem, struct fc_plan *plan, char *msg)
{
    enum fc_status status = fc_problem_shape(params, problem, msg, FC_MESSAGE_MAX);
    if (status == FC_OK)
        status = fc_plan_make(problem, &ctx->target, &ctx->override, &ctx->tuned, plan, msg, FC_MESSAGE_MAX);
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
        fc_plan_explain(&plan, info->reason, sizeof info->reason);
        info->splits = plan.splits;
    }
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
    if (status == FC_OK)
        status = fc_problem_tensors(params, &problem, msg, FC_MESSAGE_MAX);
    if (status != FC_OK)
        return status;
    int pushed;
    struct fc_kernel kernel;
    if ((status = fc_context_begin_forward(ctx, &plan, &problem, (CUstream)stream, &kernel, &pushed, msg)) != FC_OK)
        return status;
    const struct fc_launch launch = {ctx->cuda, &plan, &problem, &kernel, (CUstream)stream, msg, FC_MESSAGE_MAX,
                                     &ctx->counters, &ctx->scratch};
    status = fc_launch_run(&launch);
    fc_context_leave(ctx, pushed);
    return status;
}
