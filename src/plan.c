/* The selector: problem + target -> variant and launch shape. No GPU, no compile, no allocation. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fc_args.h"
#include "plan_internal.h"

#define GRID_X_MAX INT_MAX   /* gridDim.x limit on sm_30 and later */

enum fc_status fc_plan_select(const struct fc_problem *problem, int arch, int arch_specific,
                              struct fc_plan *plan, char *msg, size_t size)
{
    memset(plan, 0, sizeof *plan);
    struct fc_variant *v = &plan->variant;
    v->family = FC_KERNEL_REFERENCE;
    v->dtype = problem->dtype;
    v->head_dim = problem->head_dim;
    v->causal = problem->causal;
    v->arch = arch;
    v->arch_specific = arch_specific;
    fc_variant_defaults(v);
    plan->reason = "reference kernel: the only kernel family so far (CUDA cores, fp32 softmax)";

    char why[256];
    if (fc_variant_check(v, why, sizeof why)) {
        snprintf(msg, size, "no kernel for this problem on sm_%d: %s", arch, why);
        return FC_ERR_UNSUPPORTED;
    }
    plan->m_blocks = (problem->seqlen_q + v->block_m - 1) / v->block_m;
    long long grid = (long long)plan->m_blocks * problem->heads_q * problem->batch;
    if (grid > GRID_X_MAX) {
        snprintf(msg, size, "batch * heads_q * ceil(seqlen_q / %d) = %lld blocks: more than one launch "
                 "takes (%d)", v->block_m, grid, GRID_X_MAX);
        return FC_ERR_UNSUPPORTED;
    }
    plan->grid = (unsigned)grid;
    plan->threads = (unsigned)v->warps * 32;
    plan->smem_bytes = (unsigned)fc_variant_smem_bytes(v);
    return FC_OK;
}

void fc_plan_kernel_args(const struct fc_problem *p, const struct fc_plan *plan, struct fc_kernel_args *a)
{
    static const float LOG2E = 1.4426950408889634f;
    memset(a, 0, sizeof *a);
    a->q = p->q;
    a->k = p->k;
    a->v = p->v;
    a->o = p->out;
    a->lse = p->lse;
    for (int i = 0; i < 3; i++) {
        a->q_stride[i] = p->q_stride[i];
        a->k_stride[i] = p->k_stride[i];
        a->v_stride[i] = p->v_stride[i];
        a->o_stride[i] = p->o_stride[i];
    }
    a->batch = p->batch;
    a->seqlen_q = p->seqlen_q;
    a->seqlen_k = p->seqlen_k;
    a->heads_q = p->heads_q;
    a->heads_kv = p->heads_kv;
    a->q_per_kv = p->heads_q / p->heads_kv;
    a->scale_log2 = p->softmax_scale * LOG2E;
    a->m_blocks = plan->m_blocks;
}
