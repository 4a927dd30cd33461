/* The merge family: fc_attention_merge, two partial attention results of the same queries merged
 * through their LSEs (kernel_templates/merge.cuh). Not an attention kernel: the selector never asks
 * it; its public call validates, plans and launches here. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "context_internal.h"
#include "family_internal.h"

#define WARPS 4                  /* rows per CTA: one warp each */
#define HEAD_DIM_MAX 256         /* a row's 16-byte chunks, one per lane */
#define POINTER_ALIGN_BYTES 16   /* 16-byte loads and stores */
/* fc_merge_params as 0.2 first versioned it */
#define PARAMS_SIZE_MIN (offsetof(struct fc_merge_params, o_stride) + sizeof(int64_t[3]))

static int smem_bytes(const struct fc_variant *v)
{
    (void)v;
    return 0;
}

static void defaults(struct fc_variant *v)
{
    v->warps = WARPS;
    v->block_m = WARPS;   /* rows per CTA */
    v->block_n = 1;
    v->stages = 1;
}

static int check(const struct fc_variant *v, char *why, size_t size)
{
    const int per_chunk = 16 / fc_dtype_bytes(v->dtype);
    if (v->head_dim % per_chunk || v->head_dim / per_chunk > 32)
        return fc_variant_fail(why, size, "the merge kernel takes head_dim in whole 16-byte chunks, up to 32 of them, "
                               "not %d", v->head_dim);
    if (v->causal || v->window || v->softcap || v->varlen || v->paged || v->block_n != 1 || v->stages != 1 || v->block_m != v->warps)
        return fc_variant_fail(why, size, "the merge kernel takes one row per warp, no mask, no tiles");
    return 0;
}

static int kernel_type(const struct fc_variant *v, char *out, size_t size)
{
    return snprintf(out, size, "fc::MergeKernel<%s, %d, %d>", fc_dtype_traits(v->dtype)->device_type, v->head_dim,
                    v->warps);
}

const struct fc_family fc_family_merge = {
    .id = FC_KERNEL_MERGE,
    .name = "merge",
    .template_file = "merge.cuh",
    .args_type = "fc_merge_args",
    .defaults = defaults,
    .check = check,
    .smem_bytes = smem_bytes,
    .kernel_type = kernel_type,
};

void fc_merge_params_init(struct fc_merge_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
}

/* Every rule, before anything is compiled or launched; strides resolved into p. */
static enum fc_status validate(struct fc_merge_params *p, char *msg)
{
    const struct fc_dtype_traits *dtype = fc_dtype_traits(p->dtype);
    if (!dtype || !dtype->has_kernels) {
        snprintf(msg, FC_MESSAGE_MAX, "dtype %d: the merge takes FC_F16 or FC_BF16 outputs", (int)p->dtype);
        return dtype ? FC_ERR_UNSUPPORTED : FC_ERR_INVALID_ARG;
    }
    const struct fc_named_size sizes[] = {
        {"batch", p->batch}, {"seqlen", p->seqlen}, {"heads", p->heads}, {"head_dim", p->head_dim}};
    const enum fc_status sized = fc_problem_positive(sizes, sizeof sizes / sizeof sizes[0], msg, FC_MESSAGE_MAX);
    if (sized != FC_OK)
        return sized;
    if (p->head_dim % 8 || p->head_dim > HEAD_DIM_MAX) {
        snprintf(msg, FC_MESSAGE_MAX, "head_dim %d is not supported: a multiple of 8 up to %d", p->head_dim,
                 HEAD_DIM_MAX);
        return FC_ERR_UNSUPPORTED;
    }
    int64_t rows;   /* one warp each, WARPS to a CTA: the grid is rows / WARPS */
    if (__builtin_mul_overflow((int64_t)p->batch, (int64_t)p->heads, &rows) ||
        __builtin_mul_overflow(rows, (int64_t)p->seqlen, &rows) || rows / WARPS >= INT_MAX) {
        snprintf(msg, FC_MESSAGE_MAX, "batch * heads * seqlen = %d * %d * %d rows: more than one launch takes",
                 p->batch, p->heads, p->seqlen);
        return FC_ERR_UNSUPPORTED;
    }
    enum fc_status status;
    const int bytes = dtype->bytes;
    if ((status = fc_problem_pointer("out_a", p->out_a, POINTER_ALIGN_BYTES, msg, FC_MESSAGE_MAX)) ||
        (status = fc_problem_pointer("out_b", p->out_b, POINTER_ALIGN_BYTES, msg, FC_MESSAGE_MAX)) ||
        (status = fc_problem_pointer("out", p->out, POINTER_ALIGN_BYTES, msg, FC_MESSAGE_MAX)) ||
        (status = fc_problem_pointer("lse_a", p->lse_a, sizeof(float), msg, FC_MESSAGE_MAX)) ||
        (status = fc_problem_pointer("lse_b", p->lse_b, sizeof(float), msg, FC_MESSAGE_MAX)) ||
        (p->lse && (status = fc_problem_pointer("lse", p->lse, sizeof(float), msg, FC_MESSAGE_MAX))))
        return status;
    int64_t *strides[3] = {p->a_stride, p->b_stride, p->o_stride};
    const char *names[3] = {"out_a", "out_b", "out"};
    for (int i = 0; i < 3; i++) {
        int64_t given[3] = {strides[i][0], strides[i][1], strides[i][2]};
        if ((status = fc_problem_strides(names[i], given, p->batch, p->seqlen, p->heads, p->head_dim, bytes,
                                         strides[i], msg, FC_MESSAGE_MAX)))
            return status;
    }
    return FC_OK;
}

static void merge_args(const struct fc_merge_params *p, struct fc_merge_args *a)
{
    memset(a, 0, sizeof *a);
    a->out_a = p->out_a;
    a->out_b = p->out_b;
    a->out = p->out;
    a->lse_a = p->lse_a;
    a->lse_b = p->lse_b;
    a->lse = p->lse;
    for (int i = 0; i < 3; i++) {
        a->a_stride[i] = p->a_stride[i];
        a->b_stride[i] = p->b_stride[i];
        a->o_stride[i] = p->o_stride[i];
    }
    a->batch = p->batch;
    a->seqlen = p->seqlen;
    a->heads = p->heads;
}

enum fc_status fc_attention_merge(struct fc_context *ctx, const struct fc_merge_params *params, void *stream)
{
    if (!ctx)
        return FC_ERR_INVALID_ARG;
    char *msg = fc_context_message(ctx);
    struct fc_merge_params p;
    struct fc_merge_params initial;   /* what fields a caller's struct predates take */
    fc_merge_params_init(&initial);
    enum fc_status status = fc_read_struct(params, &initial, sizeof p, PARAMS_SIZE_MIN, &p, "params",
                                           "fc_merge_params_init", msg, FC_MESSAGE_MAX);
    if (status == FC_OK)
        status = validate(&p, msg);
    if (status != FC_OK)
        return status;
    struct fc_plan plan;
    fc_plan_utility(&plan, FC_KERNEL_MERGE, p.dtype, p.head_dim, &ctx->target,
                    "merge kernel: two partial results through their LSEs");
    const long long rows = (long long)p.batch * p.heads * p.seqlen;
    plan.grid = (unsigned)((rows + WARPS - 1) / WARPS);
    int pushed;
    struct fc_kernel kernel;
    if ((status = fc_context_begin_launch(ctx, &plan, NULL, &kernel, &pushed, msg)) != FC_OK)
        return status;
    struct fc_merge_args args;
    merge_args(&p, &args);
    void *launch_params[1] = {&args};
    const struct fc_launch launch = {ctx->cuda, &plan, NULL, &kernel, (CUstream)stream, msg, FC_MESSAGE_MAX, NULL, NULL};
    status = fc_launch_kernel(&launch, kernel.function, plan.grid, plan.threads, 0, launch_params,
                              "cuLaunchKernel (merge)");
    fc_context_leave(ctx, pushed);
    return status;
}
