/* The decode family: split-KV for a few query rows against many keys, sm_80 and later,
 * kernel_templates/fwd_decode.cuh. The query heads of a K/V head and their rows share one tile of
 * 16, 32, 64 or 128 rows; keys are split across CTAs by wave efficiency, each writing fp32 partials to
 * a stream-ordered scratch buffer that the module's second kernel combines. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "family_internal.h"
#include "mask_internal.h"
#include "split_internal.h"

#define M_TILE_ROWS 16       /* one mma.sync m-tile of packed rows: a warp's rows */
#define MAX_ROWS 128         /* (query heads per K/V head) x seqlen_q up to this: one CTA's tile */
#define WIDE_ROWS 64         /* past this, a 128-row tile: only for few query rows at head_dim 128 */
#define WIDE_QUERY_ROWS 16
#define DEFAULT_SM_COUNT 132 /* H100 SXM, H200 */
#define GRID_X_MAX INT_MAX
#define CHUNK_BYTES 16

/* A problem's packed rows: the query heads of a K/V head times its (longest) query rows. */
static long long packed_rows_of(const struct fc_problem *problem)
{
    return (long long)problem->max_seqlen_q * (problem->heads_q / problem->heads_kv);
}

/* The tile of packed rows a problem needs: 16, 32, 64 or 128, or 0 past MAX_ROWS. */
static int rows_tile(long long packed_rows)
{
    if (packed_rows > MAX_ROWS)
        return 0;
    return packed_rows <= 16 ? 16 : packed_rows <= 32 ? 32 : packed_rows <= 64 ? 64 : 128;
}

/* Keys of each tile per warp: the warps split into block_m / 16 row groups, each taking the tile's
 * keys in warps / (block_m / 16) slices; 0 where they do not divide. */
static int warp_keys(const struct fc_variant *v)
{
    const int m_tiles = v->block_m / M_TILE_ROWS;
    if (m_tiles < 1 || v->warps % m_tiles || v->block_n % (v->warps / m_tiles))
        return 0;
    return v->block_n / (v->warps / m_tiles);
}

/* block_m packed rows of Q (padded), the K/V ring (its space reused for the warps' merge). */
static int smem_bytes(const struct fc_variant *v)
{
    const int row_bytes = v->head_dim * fc_dtype_bytes(v->dtype), kv_row_bytes = v->kv_fp8 ? v->head_dim : row_bytes;
    const int pitch = row_bytes + CHUNK_BYTES;
    const int kv_pitch = kv_row_bytes % 128 ? kv_row_bytes + CHUNK_BYTES : kv_row_bytes;   /* swizzled: no padding */
    const int ring = 2 * v->stages * v->block_n * kv_pitch, merge = v->warps * M_TILE_ROWS * (v->head_dim + 2) * 4;
    return v->block_m * pitch + (ring > merge ? ring : merge);
}

/* NOTE: four warps x 16 keys of each 64-key tile; three stages where two CTAs still fit an SM,
 * else two; two warps x 16 keys where even that does not fit (head_dim 192 and 256 on 99 KB
 * parts). On Hopper up to head_dim 128, eight warps x 16 keys of 128-key tiles, two stages, one
 * CTA an SM: 703 vs 711 us at B64 Sk 8k and 365 vs 373 us at B8 Sk 32k on an H100, where cuDNN
 * took 706 and 367 (PERF_NOTES v4.4). Decode is bound by reading K and V: what matters is bytes
 * in flight per SM and how they reach L2, not the MMAs. A paged cache keeps the 64-key tiles and
 * three stages on Hopper too: each row's page-table read sits in front of its copies, and two CTAs
 * an SM with three stages each hide it (B64 Sk 8k, page 16, H100: 90.9% of the copy bandwidth
 * against 75.4% with the dense choice and 85.7% with it at three stages; PERF_NOTES v8.2). */
static void choose_tiles(struct fc_variant *v)
{
    if (v->arch >= 90 && v->arch < 100 && v->kv_fp8 && !v->paged) {
        /* NOTE: FP8 K/V on Hopper: the 16-bit choice's bytes a stage, in 256-key tiles up to head_dim
         * 128 and 128-key ones above (two stages, eight warps). At B8 Sk 32k D128 (two splits) 201 us
         * against 221 with 128-key tiles and four stages, at B64 Sk 8k equal (380 us); at head_dim 256
         * 196 us against 211 with the 16-bit default's 64-key tiles (H100, PERF_NOTES v11). */
        v->block_n = v->head_dim <= 128 ? 256 : 128;
        v->warps = 8;
        v->stages = 2;
        return;
    }
    if (v->arch >= 90 && v->arch < 100 && v->head_dim <= 128 && !v->paged) {
        v->block_n = 128;
        v->warps = 8;
        v->stages = 2;
        return;
    }
    v->block_n = 64;
    v->warps = 4;
    v->stages = 3;
    if (2 * smem_bytes(v) > fc_arch_smem_limit(v->arch))
        v->stages = 2;
    if (smem_bytes(v) > fc_arch_smem_limit(v->arch)) {   /* 99 KB parts, head_dim 192/256 */
        v->warps = 2;
        v->block_n = 32;
    }
}

/* Keys of a tile per warp, at most, with more than 16 rows: its S beside O's accumulators (head_dim
 * / 2 registers). NOTE: at head_dim 256 with 32 keys, ptxas spilled 8-12 bytes (window + softcap). */
static int max_warp_keys(int head_dim)
{
    return head_dim <= 128 ? 64 : head_dim <= 192 ? 32 : 16;
}

/* block_m: 16 unless the selector asked for 32, 64 or 128 rows (select_for sets it first). With more
 * rows than one m-tile, two warps per m-tile up to eight warps (128 rows: one each), and tiles
 * halved (stages doubled, so the bytes in flight stay) until a warp takes at most max_warp_keys keys
 * of each. */
static void defaults(struct fc_variant *v)
{
    v->block_m = v->block_m == 32 || v->block_m == 64 || v->block_m == 128 ? v->block_m : M_TILE_ROWS;
    const int block_m = v->block_m;
    v->block_m = M_TILE_ROWS;   /* the 16-row choice first: its smem rules */
    choose_tiles(v);
    v->block_m = block_m;
    if (block_m == M_TILE_ROWS)
        return;
    const int m_tiles = block_m / M_TILE_ROWS;
    if (v->warps < 2 * m_tiles)
        v->warps = 2 * m_tiles > 8 ? 8 : 2 * m_tiles;
    while (warp_keys(v) > max_warp_keys(v->head_dim)) {
        v->block_n /= 2;
        v->stages = 2 * v->stages > 4 ? 4 : 2 * v->stages;
    }
    while (v->stages > 2 && smem_bytes(v) > fc_arch_smem_limit(v->arch))
        v->stages--;
}

/* FC_FORCE_VARIANT=decode without an m: the tile the problem's packed rows need (16 past 128: the
 * launch then says why not). */
static int forced_block_m(const struct fc_problem *problem)
{
    const int tile = rows_tile(packed_rows_of(problem));
    return tile ? tile : M_TILE_ROWS;
}

static int check(const struct fc_variant *v, char *why, size_t size)
{
    if (v->arch < 80)
        return fc_variant_fail(why, size, "mma.sync m16n8k16 with bf16 needs sm_80 or later, not sm_%d", v->arch);
    if (v->head_dim % 16)
        return fc_variant_fail(why, size, "the decode kernel takes head_dim in multiples of 16, not %d", v->head_dim);
    if (v->block_m != 16 && v->block_m != 32 && v->block_m != 64 && v->block_m != 128)
        return fc_variant_fail(why, size, "the decode kernel packs 16, 32, 64 or 128 rows (block_m), not %d",
                               v->block_m);
    if (v->warps != 2 && v->warps != 4 && v->warps != 8 && v->warps != 16)
        return fc_variant_fail(why, size, "the decode kernel takes 2, 4, 8 or 16 warps, not %d", v->warps);
    if (v->warps % (v->block_m / M_TILE_ROWS))
        return fc_variant_fail(why, size, "the decode kernel needs whole warps per 16-row m-tile: %d warps, block_m %d",
                               v->warps, v->block_m);
    const int keys = warp_keys(v);
    if (keys != 16 && keys != 32 && keys != 64)
        return fc_variant_fail(why, size, "the decode kernel takes 16, 32 or 64 keys of a tile per warp (block_n / "
                               "(warps / (block_m / 16))), not block_n %d with %d warps at block_m %d",
                               v->block_n, v->warps, v->block_m);
    if (v->stages < 2 || v->stages > 4)
        return fc_variant_fail(why, size, "the decode kernel takes 2 to 4 stages, not %d", v->stages);
    if (v->kv_fp8 && v->arch < 89)
        return fc_variant_fail(why, size, "the decode kernel converts FP8 K/V with cvt.f16x2.e4m3x2, which needs sm_89 "
                               "or later, not sm_%d", v->arch);
    if (v->kv_fp8 && v->head_dim % 32)
        return fc_variant_fail(why, size, "the decode kernel takes FP8 K/V at head_dim in multiples of 32 (its P V "
                               "reads 32-dim groups), not %d", v->head_dim);
    if (smem_bytes(v) > fc_arch_smem_limit(v->arch))
        return fc_variant_fail(why, size, "needs %d bytes of shared memory, more than the arch allows", smem_bytes(v));
    return 0;
}

static const char *select_for(const struct fc_problem *problem, const struct fc_target *target,
                              struct fc_variant *v, const char **why_not)
{
    /* many query rows are not a reason worth a word */
    const long long packed_rows = packed_rows_of(problem);
    if (target->arch < 80 || problem->head_dim % 16 || !rows_tile(packed_rows))
        return NULL;
    if (fc_sm90_packs(problem, target)) {
        /* NOTE: short: fc_plan_info's 256 characters also hold the sm90 kernel's reason */
        *why_not = "the decode kernel leaves GQA-packed rows to the Hopper kernel, which splits their keys where SMs "
                   "would idle (B8 Hq32 Hkv8 Sq1 Sk32768: 253 against 325 us, H200)";
        return NULL;
    }
    /* NOTE: past one 16-row m-tile, only where K/V rows are whole 128-byte lines and long enough that
     * reading them, not the mma.sync work beside each, bounds the kernel: at B8 Hq32 Hkv8 Sq16 Sk16000
     * (H100) 253 against 389 us for the Hopper kernel at head_dim 128, 408 against 507 at 192, 552
     * against 629 at 256, but 182 against 154 at 64 and 352 against 343 at 96 (PERF_NOTES v15). An
     * FP8 cache has no Hopper kernel beside it: always. */
    if (packed_rows > M_TILE_ROWS && !problem->kv_fp8 && (problem->head_dim % 64 || problem->head_dim < 128)) {
        *why_not = "the decode kernel takes more than 16 packed rows (query heads per K/V head x query rows) at "
                   "head_dim 128, 192 and 256: below, its mma.sync work per K/V byte bounds it";
        return NULL;
    }
    /* NOTE: a 128-row tile only for at most 16 query rows (a GQA group of 5-8 heads) at head_dim 128:
     * B8 Hq64 Hkv8 Sq16 Sk16000 370 against 701 us for the Hopper kernel, whose 128-row tiles then
     * hold 16 rows of one head; but 128 rows as Sq32 x GQA 4, 389 against 357 (H100, PERF_NOTES v15) */
    if (packed_rows > WIDE_ROWS && (problem->max_seqlen_q > WIDE_QUERY_ROWS || problem->head_dim != 128)) {
        *why_not = "the decode kernel takes more than 64 packed rows only for at most 16 query rows at head_dim 128";
        return NULL;
    }
    v->block_m = rows_tile(packed_rows);
    defaults(v);
    if (fc_variant_check(v, NULL, 0)) {
        if (problem->kv_fp8 && (target->arch < 89 || problem->head_dim % 32))   /* the FP8 rules: say which */
            *why_not = target->arch < 89 ? "the decode kernel dequantizes FP8 K/V on sm_89 and later"
                                         : "the decode kernel takes FP8 K/V at head_dim in multiples of 32";
        else   /* the shared memory of a 32- or 64-row tile on a small part */
            *why_not = "the decode kernel's tile of this problem's packed rows does not fit the arch's shared memory";
        return NULL;
    }
    if (problem->kv_fp8)
        return problem->paged ? "decode kernel: a K/V head's query rows (query heads per K/V head x query rows, at "
                                "most 128) fit one tile, keys split across CTAs; FP8 K/V (half the bytes) gathered "
                                "through the page table, dequantized in registers"
                              : "decode kernel: a K/V head's query rows (query heads per K/V head x query rows, at "
                                "most 128) fit one tile, keys split across CTAs; FP8 K/V read at half the bytes and "
                                "dequantized in registers";
    if (problem->paged)
        return "decode kernel: a K/V head's query rows (query heads per K/V head x query rows, at most 128) fit one "
               "tile, keys split across CTAs; paged K/V gathered (one table read per key row, rows copied by cp.async)";
    return "decode kernel: the query heads of a K/V head and their rows (query heads per K/V head x query rows, at "
           "most 128) fit one tile, so each K/V element read serves them all; keys split across CTAs to fill the GPU";
}

/* Splits: src/split.c's wave-efficiency rule over the keys some packed row sees. */
static void choose_splits(const struct fc_problem *problem, const struct fc_target *target, struct fc_plan *plan)
{
    const struct fc_variant *v = &plan->variant;
    const int smem = smem_bytes(v), limit = fc_arch_smem_limit(v->arch);
    /* NOTE: CTAs an SM by shared memory; with more than 16 rows one: their 150-250 registers a thread
     * (eight warps) leave no room for a second, and splits counted for two ran in two waves (H100,
     * head_dim 64, 64 rows: 6 splits, 195 us against 182 with 2; PERF_NOTES v15) */
    const int per_sm = v->block_m == M_TILE_ROWS && smem > 0 && limit / smem > 1 ? limit / smem : 1;
    const long long slots = (long long)(target->sm_count > 0 ? target->sm_count : DEFAULT_SM_COUNT) * per_sm;
    /* the keys some packed row sees (its rows are the query rows 0 .. seqlen_q - 1): the kernel
     * splits that range, from its first key (a window's; 0 without) to its last */
    const struct fc_key_range range = fc_mask_keys(&problem->mask, problem->max_seqlen_q, problem->max_seqlen_k, 0,
                                                   problem->max_seqlen_q);
    const int keys = range.end - range.begin;
    const int tiles = (int)(((long long)keys + v->block_n - 1) / v->block_n);
    fc_split_choose((long long)problem->batch * problem->heads_kv, slots, tiles, v->block_n, plan->requested_splits,
                    plan);
}

static enum fc_status launch_shape(const struct fc_problem *problem, const struct fc_target *target,
                                   struct fc_plan *plan, char *msg, size_t size)
{
    /* the selector's rule, here too for a forced variant: the kernel computes one tile of block_m
     * packed rows and would leave the rest unwritten */
    const long long packed_rows = packed_rows_of(problem);
    if (packed_rows > plan->variant.block_m) {
        snprintf(msg, size, "the decode kernel packs the query heads of a K/V head and their rows into one %d-row "
                 "tile (block_m; at most %d): this problem has %lld (%d query rows x %d heads per K/V head)",
                 plan->variant.block_m, MAX_ROWS, packed_rows, problem->max_seqlen_q,
                 problem->heads_q / problem->heads_kv);
        return FC_ERR_UNSUPPORTED;
    }
    choose_splits(problem, target, plan);
    const long long grid = (long long)plan->splits * problem->heads_kv * problem->batch;
    if (grid > GRID_X_MAX) {   /* splits <= 128, so no overflow in 64 bits */
        snprintf(msg, size, "batch * heads_kv * splits = %lld blocks: more than one launch takes (%d)", grid,
                 GRID_X_MAX);
        return FC_ERR_UNSUPPORTED;
    }
    plan->grid = (unsigned)grid;
    plan->m_blocks = 1;
    return FC_OK;
}

static int kernel_type(const struct fc_variant *v, char *out, size_t size)
{
    /* the VARLEN argument only where it is set: the other variants' source (and cache key) stays */
    if (v->kv_fp8 || v->block_m != M_TILE_ROWS)   /* every switch spelled out: KV_FP8, then ROWS, are the last */
        return snprintf(out, size, "fc::DecodeForward<%s, %d, %s, %d, %d, %d, %s, %s, %s, %s, %s, %d>",
                        fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false", v->block_n,
                        v->stages, v->warps, v->window ? "true" : "false", v->softcap ? "true" : "false",
                        v->varlen ? "true" : "false", v->paged ? "true" : "false", v->kv_fp8 ? "true" : "false",
                        v->block_m);
    return snprintf(out, size, "fc::DecodeForward<%s, %d, %s, %d, %d, %d, %s, %s%s%s>",
                    fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false", v->block_n,
                    v->stages, v->warps, v->window ? "true" : "false", v->softcap ? "true" : "false",
                    v->varlen ? ", true" : "", v->paged ? ", true" : "");
}

/* The module's second kernel: merges the splits' partials into out and lse (src/split.c). */
static int second_source(const struct fc_variant *v, char *out, size_t size)
{
    /* the argument of VARLEN (and PAGED) variants: its base is the dense one */
    const char *args_type = !v->varlen ? "fc_kernel_args" : v->paged ? "fc_paged_args" : "fc_varlen_args";
    return fc_split_combine_source(v, "fc_combine_kernel", args_type, v->varlen ? ".base" : "", out, size);
}

/* One split: the kernel writes out and lse itself. Several: the splits' fp32 partial O and LSE go
 * to a stream-ordered scratch buffer (src/scratch.c: the context's pool, or while capturing the
 * device's; no synchronization), then the combine kernel merges them, and the buffer goes back to
 * the pool (src/split.c). */
static enum fc_status launch(const struct fc_launch *l)
{
    struct fc_launch_args args;
    fc_launch_plain_args(l, &args);
    return fc_split_launch(l, &args, (struct fc_kernel_args *)args.bytes);   /* the base of fc_varlen_args too */
}

const struct fc_family fc_family_decode = {
    .id = FC_KERNEL_DECODE,
    .name = "decode",
    .template_file = "fwd_decode.cuh",
    .args_type = "fc_kernel_args",
    .varlen_args_type = "fc_varlen_args",
    .paged_args_type = "fc_paged_args",
    .second_entry = "fc_combine_kernel",
    .tuned = 0,   /* not tuned: its splits follow the GPU's size, not a bucket */
    .splits_option = 1,
    .fp8_kv = 1,
    .fp8_q_why_not = "the decode kernel's mma.sync reads a 16-bit q; FP8 attention runs on the Hopper kernel (sm_90a)",
    .defaults = defaults,
    .check = check,
    .smem_bytes = smem_bytes,
    .select = select_for,
    .forced_block_m = forced_block_m,
    .launch_shape = launch_shape,
    .kernel_type = kernel_type,
    .second_source = second_source,
    .kernel_args = fc_launch_plain_args,
    .launch = launch,
};
