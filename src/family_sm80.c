/* The sm80 family: mma.sync tensor cores with a cp.async double buffer, sm_80 and later,
 * kernel_templates/fwd_sm80.cuh. */
#include <stdio.h>

#include "family_internal.h"

#define CHUNK_BYTES 16   /* one cp.async copy; shared rows are padded by one */

/* Q, and K and V per stage, in rows padded by 16 bytes. NOTE: the template swizzles K and V
 * instead where their rows are whole 128-byte lines, which needs at most this (it asserts so). */
static int smem_bytes(const struct fc_variant *v)
{
    const int row = v->head_dim * fc_dtype_bytes(v->dtype) + CHUNK_BYTES;
    const int kv_row = v->kv_fp8 ? v->head_dim + CHUNK_BYTES : row;   /* FP8 K/V: one byte an element */
    return v->block_m * row + 2 * v->stages * v->block_n * kv_row;
}

/* NOTE: tiles per head_dim, chosen so that the fp32 accumulators of S and O plus the Q fragments
 * fit in registers without spilling (docs/PERF_NOTES.md has the reasons). */
static void defaults(struct fc_variant *v)
{
    v->stages = 2;
    v->block_m = 128;
    if (v->head_dim <= 64 || v->head_dim == 128) {   /* 128: spill-free since v1.4 (docs/PERF_NOTES.md) */
        v->warps = 4;     /* 32 rows per warp: each K/V fragment feeds two m-tiles */
        v->block_n = 64;
        /* 64: 128-key tiles (Q then read from shared memory per k-step), half the barriers per key,
         * +3% over 64 keys on an H100 (v1.5); only where two such CTAs fit in an SM's shared
         * memory (not in sm_80's 164 KB, where it would run one CTA an SM: not measured), and not
         * with a softcap, whose tanh pass leaves ptxas a register short there (a 4-byte spill), nor
         * with a window and a page table together, whose row lookups do the same (20 bytes). */
        if (v->head_dim == 64 && !v->softcap && !(v->window && v->paged)) {
            v->block_n = 128;
            if (2 * smem_bytes(v) > fc_arch_smem_limit(v->arch))
                v->block_n = 64;
        }
    } else if (v->head_dim <= 128) {
        v->warps = 8;     /* 96: 32 rows per warp spill (O 96 + S 64 + Q 48 registers); 16 rows do not */
        v->block_n = 64;
    } else {
        v->warps = 8;     /* 192, 256: O alone takes 96-128 registers */
        v->block_n = 32;
    }
    /* NOTE: FP8 K/V: 16 rows a warp up to head_dim 128 (eight warps): with 32, the conversions and
     * Q's per-step fragments spilled 20-96 bytes */
    if (v->kv_fp8 && v->head_dim <= 128)
        v->warps = v->block_m / 16;
    /* Smaller tiles where the arch has less shared memory (sm_86/89: 99 KB). */
    if (smem_bytes(v) > fc_arch_smem_limit(v->arch))
        v->block_n = 32;
    if (smem_bytes(v) > fc_arch_smem_limit(v->arch)) {
        v->warps = 4;
        v->block_m = 64;
    }
}

static int check(const struct fc_variant *v, char *why, size_t size)
{
    if (v->arch < 80)
        return fc_variant_fail(why, size, "mma.sync m16n8k16 with bf16 needs sm_80 or later, not sm_%d", v->arch);
    if (v->head_dim % 16)
        return fc_variant_fail(why, size, "head_dim %d is not a multiple of 16 (an mma k-step)", v->head_dim);
    if (v->stages != 2)
        return fc_variant_fail(why, size, "the sm80 kernel double-buffers K/V (stages 2, not %d)", v->stages);
    if (v->block_n % 16 || v->block_n < 16 || v->block_n > 128)
        return fc_variant_fail(why, size, "block_n %d is not a multiple of 16 in [16, 128]", v->block_n);
    int rows_per_warp = v->warps ? v->block_m / v->warps : 0;
    if (v->block_m % v->warps || (rows_per_warp != 16 && rows_per_warp != 32))
        return fc_variant_fail(why, size, "block_m %d must give each warp 16 or 32 rows", v->block_m);
    if (v->kv_fp8 && v->arch < 89)
        return fc_variant_fail(why, size, "the sm80 kernel converts FP8 K/V with cvt.f16x2.e4m3x2, which needs sm_89 or "
                               "later, not sm_%d", v->arch);
    if (v->kv_fp8 && v->head_dim % 32)
        return fc_variant_fail(why, size, "the sm80 kernel takes FP8 K/V at head_dim in multiples of 32 (its P V reads "
                               "32-dim groups), not %d", v->head_dim);
    if (smem_bytes(v) > fc_arch_smem_limit(v->arch))
        return fc_variant_fail(why, size, "needs %d bytes of shared memory, more than the arch allows", smem_bytes(v));
    return 0;
}

static const char *select_for(const struct fc_problem *problem, const struct fc_target *target,
                              struct fc_variant *v, const char **why_not)
{
    if (target->arch < 80) {
        *why_not = "the tensor-core kernels need sm_80 or later for bf16 mma.sync";
        return NULL;
    }
    if (problem->head_dim % 16) {
        *why_not = "head_dim is not a multiple of 16, which the tensor-core kernels need";
        return NULL;
    }
    if (problem->kv_fp8 && (target->arch < 89 || problem->head_dim % 32)) {
        *why_not = target->arch < 89 ? "the tensor-core kernels dequantize FP8 K/V on sm_89 and later"
                                     : "the tensor-core kernels take FP8 K/V at head_dim in multiples of 32";
        return NULL;
    }
    defaults(v);
    if (fc_variant_check(v, NULL, 0)) {
        *why_not = "no sm80 tile configuration fits this arch's shared memory";
        return NULL;
    }
    if (problem->kv_fp8)
        return problem->paged ? "sm80 kernel: mma.sync tensor cores; FP8 K/V gathered through the page table and "
                                "dequantized at the fragments"
                              : "sm80 kernel: mma.sync tensor cores; FP8 K/V (half the bytes) dequantized at the "
                                "fragments";
    if (problem->paged)
        return "sm80 kernel: mma.sync tensor cores; paged K/V gathered (one table read per key row, rows copied "
               "by cp.async)";
    return "sm80 kernel: mma.sync tensor cores, cp.async double-buffered K/V";
}

static int kernel_type(const struct fc_variant *v, char *out, size_t size)
{
    /* the VARLEN argument only where it is set: the other variants' source (and cache key) stays */
    if (v->kv_fp8)   /* every switch spelled out: KV_FP8 is the last */
        return snprintf(out, size, "fc::Sm80Forward<%s, %d, %s, %d, %d, %d, %s, %s, %s, %s, true>",
                        fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false",
                        v->block_m, v->block_n, v->warps, v->window ? "true" : "false",
                        v->softcap ? "true" : "false", v->varlen ? "true" : "false", v->paged ? "true" : "false");
    return snprintf(out, size, "fc::Sm80Forward<%s, %d, %s, %d, %d, %d, %s, %s%s%s>",
                    fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false", v->block_m,
                    v->block_n, v->warps, v->window ? "true" : "false", v->softcap ? "true" : "false",
                    v->varlen ? ", true" : "", v->paged ? ", true" : "");
}

const struct fc_family fc_family_sm80 = {
    .id = FC_KERNEL_SM80,
    .name = "sm80",
    .template_file = "fwd_sm80.cuh",
    .args_type = "fc_kernel_args",
    .varlen_args_type = "fc_varlen_args",
    .paged_args_type = "fc_paged_args",
    .tuned = 1,
    .fp8_kv = 1,
    .fp8_q_why_not = "the sm80 kernel's mma.sync reads a 16-bit q; FP8 attention runs on the Hopper kernel (sm_90a)",
    .defaults = defaults,
    .check = check,
    .smem_bytes = smem_bytes,
    .select = select_for,
    .kernel_type = kernel_type,
    .kernel_args = fc_launch_plain_args,
};
