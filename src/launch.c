/* Launching: the common kernel argument, one cuLaunchKernel, and the call a family makes of them. */
#include <string.h>

#include "family_internal.h"
#include "launch_internal.h"
#include "plan_internal.h"

void fc_launch_common_args(const struct fc_problem *p, const struct fc_plan *plan, struct fc_kernel_args *a)
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
    a->splits = plan->splits > 0 ? plan->splits : 1;
    a->split_keys = plan->split_keys;
    a->mask = p->mask;
    a->sinks = p->sinks;
    a->k_descale = p->k_descale;
    a->v_descale = p->v_descale;
    a->q_descale = p->q_descale;
    if (p->softcap > 0.f) {   /* S -> softcap tanh(scale S / softcap), into exp2 */
        a->softcap_scale = p->softmax_scale / p->softcap;
        a->softcap_log2 = p->softcap * LOG2E;
    }
}

void fc_launch_seqlens(const struct fc_problem *p, struct fc_seqlens *s)
{
    s->cu_seqlens_q = p->varlen ? p->cu_seqlens_q : NULL;
    s->cu_seqlens_k = p->varlen ? p->cu_seqlens_k : NULL;
    s->seqused_k = p->seqused_k;
}

void fc_launch_pages(const struct fc_problem *p, struct fc_pages *pages)
{
    pages->page_table = p->page_table;
    pages->page_size = p->page_size;
    pages->page_table_stride = p->page_table_stride;
}

_Static_assert(sizeof(struct fc_paged_args) <= FC_LAUNCH_ARGS_BYTES, "fc_launch_args holds fc_paged_args");

enum fc_status fc_launch_plain_args(const struct fc_launch *l, struct fc_launch_args *args)
{
    /* the PAGED argument's prefixes are the VARLEN one and the dense one */
    struct fc_paged_args *a = (struct fc_paged_args *)args->bytes;
    fc_launch_common_args(l->problem, l->plan, &a->base);
    if (l->plan->variant.varlen)
        fc_launch_seqlens(l->problem, &a->seqlens);
    if (l->plan->variant.paged)
        fc_launch_pages(l->problem, &a->pages);
    args->params[0] = a;
    return FC_OK;
}

enum fc_status fc_launch_args_build(const struct fc_launch *l, struct fc_launch_args *args)
{
    return fc_family_of(l->plan->variant.family)->kernel_args(l, args);
}

enum fc_status fc_launch_kernel(const struct fc_launch *l, CUfunction function, unsigned grid, unsigned threads,
                                unsigned smem_bytes, void **params, const char *what)
{
    CUresult r = l->cuda->cuLaunchKernel(function, grid, 1, 1, threads, 1, 1, smem_bytes, l->stream, params, NULL);
    return r == CUDA_SUCCESS ? FC_OK : fc_cuda_fail(l->cuda, r, what, l->msg, l->msg_size);
}

enum fc_status fc_launch_run(const struct fc_launch *l)
{
    const struct fc_family *family = fc_family_of(l->plan->variant.family);
    if (family->launch)
        return family->launch(l);
    struct fc_launch_args args;
    enum fc_status status = family->kernel_args(l, &args);
    if (status != FC_OK)
        return status;
    return fc_launch_kernel(l, l->kernel->function, l->plan->grid, l->plan->threads, l->plan->smem_bytes,
                            args.params, "cuLaunchKernel");
}
