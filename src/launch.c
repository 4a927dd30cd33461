/* The kernel argument of a plan: the common fields, and for the Hopper kernel its TMA maps. */
#include <string.h>

#include "launch_internal.h"
#include "tma_internal.h"

#define TMA_COLUMN_BLOCK 64   /* elements: one 128-byte swizzle span of 16-bit values */
#define ELEMENT_BYTES 2
#define SM90_Q_BOX_ROWS 64    /* each warpgroup's Q rows arrive as one box */

/* A 4-D view (head_dim, seq, head, batch) of one tensor, boxes of (64, rows, 1, 1). */
static enum fc_status encode(const struct fc_cuda_api *cuda, struct fc_tensor_map *map, const void *base,
                             const int64_t stride[3], int head_dim, int seqlen, int heads, int batch,
                             int box_rows, int is_bf16, char *msg, size_t size)
{
    struct fc_tma_desc desc = {
        4,
        {(uint64_t)head_dim, (uint64_t)seqlen, (uint64_t)heads, (uint64_t)batch},
        {(uint64_t)stride[1] * ELEMENT_BYTES, (uint64_t)stride[2] * ELEMENT_BYTES, (uint64_t)stride[0] * ELEMENT_BYTES},
        {TMA_COLUMN_BLOCK, (uint32_t)box_rows, 1, 1},
        128,
    };
    return fc_tma_encode(cuda, (CUtensorMap *)map, base, is_bf16, &desc, msg, size);
}

enum fc_status fc_launch_args_build(const struct fc_cuda_api *cuda, const struct fc_plan *plan,
                                    const struct fc_problem *p, struct fc_launch_args *out, char *msg, size_t size)
{
    if (plan->variant.family != FC_KERNEL_SM90) {
        fc_plan_kernel_args(p, plan, &out->arg.common);
        out->params[0] = &out->arg.common;
        return FC_OK;
    }
    struct fc_sm90_args *a = &out->arg.sm90;
    fc_plan_kernel_args(p, plan, &a->base);
    const int bf16 = p->dtype == FC_BF16, block_n = plan->variant.block_n;
    enum fc_status status;
    if ((status = encode(cuda, &a->q_map, p->q, p->q_stride, p->head_dim, p->seqlen_q, p->heads_q, p->batch,
                         SM90_Q_BOX_ROWS, bf16, msg, size)) ||
        (status = encode(cuda, &a->k_map, p->k, p->k_stride, p->head_dim, p->seqlen_k, p->heads_kv, p->batch,
                         block_n, bf16, msg, size)) ||
        (status = encode(cuda, &a->v_map, p->v, p->v_stride, p->head_dim, p->seqlen_k, p->heads_kv, p->batch,
                         block_n, bf16, msg, size)))
        return status;
    out->params[0] = a;
    return FC_OK;
}
