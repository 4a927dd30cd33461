/* Split-KV (src/split_internal.h): the splits, the combine kernel's source and the two launches. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "dtype_internal.h"
#include "split_internal.h"

#define MIN_SPLIT_TILES 4    /* keys per split: at least this many tiles, to amortize the prologue */
#define WAVE_EFFICIENCY 0.85 /* the fewest splits whose last wave is this near the best */
#define COMBINE_WARPS 4      /* rows each combine CTA merges, a warp each (split_kv.cuh's COMBINE_WARPS) */
#define COMBINE_THREADS (COMBINE_WARPS * 32)

void fc_split_choose(long long blocks, long long slots, int tiles, int block_n, int requested, struct fc_plan *plan)
{
    int most = tiles / MIN_SPLIT_TILES;
    most = most < 1 ? 1 : most > FC_SPLITS_MAX ? FC_SPLITS_MAX : most;
    double efficiency[FC_SPLITS_MAX + 1], best = 0.;
    for (int s = 1; s <= most; s++) {
        const long long ctas = blocks * s, waves = (ctas + slots - 1) / slots;
        efficiency[s] = (double)ctas / (double)(waves * slots);
        best = efficiency[s] > best ? efficiency[s] : best;
    }
    int splits = 1;
    while (splits < most && efficiency[splits] < WAVE_EFFICIENCY * best)
        splits++;
    if (requested > 0)   /* forced: as asked, but no split without a tile */
        splits = requested < tiles ? requested : tiles > 0 ? tiles : 1;
    const int tiles_each = (tiles + splits - 1) / splits;
    plan->split_keys = tiles_each * block_n;
    plan->splits = tiles_each > 0 ? (tiles + tiles_each - 1) / tiles_each : 1;   /* no empty split */
}

int fc_split_combine_source(const struct fc_variant *v, const char *entry, const char *args_type, const char *base,
                            char *out, size_t size)
{
    return snprintf(out, size,
                    "static_assert(fc::COMBINE_WARPS == %d, \"the combine's rows a CTA\");\n"
                    "extern \"C\" __global__ void __launch_bounds__(%d)\n"
                    "%s(const __grid_constant__ %s args)\n"
                    "{\n"
                    "    fc::combine_splits<%s, %d%s>(args%s);\n"
                    "}\n",
                    COMBINE_WARPS, COMBINE_THREADS, entry, args_type, fc_dtype_traits(v->dtype)->device_type,
                    v->head_dim, v->varlen ? ", true" : "", base);
}

enum fc_status fc_split_launch(const struct fc_launch *l, struct fc_launch_args *args, struct fc_kernel_args *a)
{
    const struct fc_plan *plan = l->plan;
    const struct fc_problem *p = l->problem;
    if (plan->splits <= 1)
        return fc_launch_kernel(l, l->kernel->function, plan->grid, plan->threads, plan->smem_bytes, args->params,
                                "cuLaunchKernel");
    /* the partials' rows: [batch, heads_q, seqlen_q]; varlen [heads_q, tokens] */
    const size_t rows = (size_t)(p->varlen ? 1 : p->batch) * (size_t)p->heads_q * (size_t)p->seqlen_q;
    if (rows > INT_MAX) {
        snprintf(l->msg, l->msg_size, "batch * heads_q * seqlen_q = %zu rows: more than one combine launch takes",
                 rows);
        return FC_ERR_UNSUPPORTED;
    }
    const size_t o_bytes = (size_t)plan->splits * rows * (size_t)p->head_dim * sizeof(float);
    const size_t bytes = o_bytes + (size_t)plan->splits * rows * sizeof(float);
    const struct fc_cuda_api *cu = l->cuda;
    CUdeviceptr scratch;
    CUresult r = fc_scratch_alloc(l->scratch, cu, &scratch, bytes, l->stream);
    if (r != CUDA_SUCCESS)
        return fc_cuda_fail(cu, r, "allocating the split-KV scratch", l->msg, l->msg_size);
    a->o_partial = (float *)(uintptr_t)scratch;
    a->lse_partial = (float *)(uintptr_t)(scratch + o_bytes);
    enum fc_status status = fc_launch_kernel(l, l->kernel->function, plan->grid, plan->threads, plan->smem_bytes,
                                             args->params, "cuLaunchKernel");
    if (status == FC_OK)
        status = fc_launch_kernel(l, l->kernel->second, (unsigned)((rows + COMBINE_WARPS - 1) / COMBINE_WARPS),
                                  COMBINE_THREADS, 0, args->params, "cuLaunchKernel (combine)");
    r = cu->cuMemFreeAsync(scratch, l->stream);
    if (r != CUDA_SUCCESS && status == FC_OK)
        status = fc_cuda_fail(cu, r, "cuMemFreeAsync (split-KV scratch)", l->msg, l->msg_size);
    return status;
}
