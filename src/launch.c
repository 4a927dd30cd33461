/* The kernel argument of a plan: the common fields, and for the Hopper kernel its TMA maps. */
#include <string.h>

#include "launch_internal.h"
#include "tma_internal.h"

#define TMA_COLUMN_BLOCK 64   /* elements: one 128-byte swizzle span of 16-bit values */
#define RECENT_MAPS 16        /* per thread; a power of two */

/* Recently encoded tensor maps, per thread: a training loop passes the same tensors call after
 * call, and a map depends only on the pointer, dtype and descriptor (not on the CUDA context),
 * so a hit skips cuTensorMapEncodeTiled (~0.3 us each, three per call) without any lock. */
struct recent_map {
    int valid, is_bf16;
    const void *global;
    struct fc_tma_desc desc;   /* zeroed before filling: compared bytewise */
    struct fc_tensor_map map;
};
static _Thread_local struct recent_map recent_maps[RECENT_MAPS];

static enum fc_status encode_cached(const struct fc_cuda_api *cuda, struct fc_tensor_map *map, const void *global,
                                    int is_bf16, const struct fc_tma_desc *desc, char *msg, size_t size)
{
    uintptr_t h = (uintptr_t)global ^ (uintptr_t)desc->dims[1] * 0x9e3779b97f4a7c15ull ^ desc->box[1];
    struct recent_map *slot = &recent_maps[(h ^ h >> 17) & (RECENT_MAPS - 1)];
    if (slot->valid && slot->global == global && slot->is_bf16 == is_bf16 &&
        memcmp(&slot->desc, desc, sizeof *desc) == 0) {
        *map = slot->map;
        return FC_OK;
    }
    enum fc_status status = fc_tma_encode(cuda, (CUtensorMap *)map, global, is_bf16, desc, msg, size);
    if (status == FC_OK) {
        slot->valid = 1;
        slot->is_bf16 = is_bf16;
        slot->global = global;
        slot->desc = *desc;
        slot->map = *map;
    }
    return status;
}
#define ELEMENT_BYTES 2
#define SM90_Q_BOX_ROWS 64    /* each warpgroup's Q rows arrive as one box */

/* A 4-D view (head_dim, seq, head, batch) of one tensor, boxes of (64, rows, 1, 1). */
static enum fc_status encode(const struct fc_cuda_api *cuda, struct fc_tensor_map *map, const void *base,
                             const int64_t stride[3], int head_dim, int seqlen, int heads, int batch,
                             int box_rows, int is_bf16, char *msg, size_t size)
{
    struct fc_tma_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.rank = 4;
    desc.dims[0] = (uint64_t)head_dim;
    desc.dims[1] = (uint64_t)seqlen;
    desc.dims[2] = (uint64_t)heads;
    desc.dims[3] = (uint64_t)batch;
    desc.strides[0] = (uint64_t)stride[1] * ELEMENT_BYTES;
    desc.strides[1] = (uint64_t)stride[2] * ELEMENT_BYTES;
    desc.strides[2] = (uint64_t)stride[0] * ELEMENT_BYTES;
    desc.box[0] = TMA_COLUMN_BLOCK;
    desc.box[1] = (uint32_t)box_rows;
    desc.box[2] = desc.box[3] = 1;
    desc.swizzle_bytes = 128;
    return encode_cached(cuda, map, base, is_bf16, &desc, msg, size);
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
