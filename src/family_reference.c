/* The reference family: simple, obviously correct, fp32 on CUDA cores, kernel_templates/reference.cuh.
 * The correctness oracle, and the fallback that takes every valid problem. */
#include <stdio.h>

#include "family_internal.h"

#define BLOCK_N 32        /* one key per lane */
#define PAD_BYTES 4       /* one spare 32-bit word per K/V row: lane j's row on bank j */

/* fp32 Q rows, and K and V tiles in padded rows. */
static int smem_bytes(const struct fc_variant *v)
{
    const int kv_bytes = v->kv_fp8 ? 1 : fc_dtype_bytes(v->dtype);
    const int kv_pitch = v->head_dim * kv_bytes + PAD_BYTES;
    return v->block_m * v->head_dim * 4 + 2 * v->block_n * kv_pitch;
}

/* NOTE: 4 warps x 4 query rows: each K element read from shared memory serves 4 rows. */
static void defaults(struct fc_variant *v)
{
    v->warps = 4;
    v->block_m = 16;
    v->block_n = BLOCK_N;
    v->stages = 1;
}

static int check(const struct fc_variant *v, char *why, size_t size)
{
    if (v->block_n != BLOCK_N)
        return fc_variant_fail(why, size, "the reference kernel takes block_n 32 (a key per lane), not %d",
                               v->block_n);
    if (v->block_m % v->warps || v->block_m / v->warps < 1 || v->block_m / v->warps > 8)
        return fc_variant_fail(why, size, "block_m %d must be 1 to 8 rows per warp", v->block_m);
    if (v->stages != 1)
        return fc_variant_fail(why, size, "the reference kernel does not pipeline (stages 1, not %d)", v->stages);
    if (smem_bytes(v) > fc_arch_smem_limit(v->arch))
        return fc_variant_fail(why, size, "needs %d bytes of shared memory, more than the arch allows", smem_bytes(v));
    return 0;
}

static const char *select_for(const struct fc_problem *problem, const struct fc_target *target,
                              struct fc_variant *v, const char **why_not)
{
    (void)target;
    (void)why_not;
    defaults(v);
    if (problem->q_fp8)
        return "reference kernel: simple, fp32 on CUDA cores; FP8 q, K and V converted exactly as they are read, P "
               "kept in fp32";
    if (problem->kv_fp8)
        return "reference kernel: simple, fp32 on CUDA cores; FP8 K/V converted exactly as they are read";
    return "reference kernel: simple, fp32 on CUDA cores";
}

static int kernel_type(const struct fc_variant *v, char *out, size_t size)
{
    /* NOTE: the VARLEN argument only where it is set, so that the other variants' source (and cache
     * key) is what it was */
    if (v->kv_fp8)   /* every switch spelled out: KV_FP8 is the last */
        return snprintf(out, size, "fc::ReferenceKernel<%s, %d, %s, %d, %d, %s, %s, %s, %s, true%s>",
                        fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false",
                        v->block_m, v->warps, v->window ? "true" : "false", v->softcap ? "true" : "false",
                        v->varlen ? "true" : "false", v->paged ? "true" : "false", v->q_fp8 ? ", true" : "");
    return snprintf(out, size, "fc::ReferenceKernel<%s, %d, %s, %d, %d, %s, %s%s%s>",
                    fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false", v->block_m,
                    v->warps, v->window ? "true" : "false", v->softcap ? "true" : "false",
                    v->varlen ? ", true" : "", v->paged ? ", true" : "");
}

const struct fc_family fc_family_reference = {
    .id = FC_KERNEL_REFERENCE,
    .name = "reference",
    .template_file = "reference.cuh",
    .args_type = "fc_kernel_args",
    .varlen_args_type = "fc_varlen_args",
    .paged_args_type = "fc_paged_args",
    .tuned = 1,
    .fp8_kv = 1,
    .fp8_q = 1,
    .defaults = defaults,
    .check = check,
    .smem_bytes = smem_bytes,
    .select = select_for,
    .kernel_type = kernel_type,
    .kernel_args = fc_launch_plain_args,
};
