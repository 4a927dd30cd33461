/* The sm90 family: Hopper (sm_90a), TMA + WGMMA, kernel_templates/fwd_sm90.cuh. Its tiles, what it
 * takes, its shared memory, its source, and its argument (TMA maps of Q, K and V). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_internal.h"
#include "mask_internal.h"
#include "split_internal.h"
#include "tma_internal.h"

#define SHORT_KEYS 1024      /* up to this many keys, causal head_dim 128 takes the small tiles */
#define SHORT_KEYS_D64_CAUSAL 1448   /* up to this many causal keys (the tuner's 1k bucket), head_dim 64 takes 64-key tiles */
#define LONG_KEYS_D64 2048          /* from this many keys, head_dim 64 takes three consumer warpgroups ... */
#define LONG_KEYS_D64_CAUSAL 4096   /* ... and from this many causal ones */
#define LONG_KEYS_FP8_D64 4096   /* ... FP8 attention's, causal (without a mask: always) */
#define WIDE_KEYS_FP8 4096          /* from this many keys, FP8 attention takes the wider key tiles ... */
#define WIDE_KEYS_FP8_CAUSAL 8192   /* ... and from this many causal ones (widen_fp8_key_tiles) */
#define TRANSPOSED_KEYS_FP8 4096    /* from this many keys, FP8 attention transposes V ahead (transposes_ahead) */
#define TRANSPOSED_KEYS_FP8_D192_CAUSAL 8192   /* the same at head_dim 192 with a causal mask */
#define VT_GRID_MAX 65535           /* the transposer's grid's y (K/V heads) and z (batch) */
#define WIDE_KEYS_D128 4096  /* from this many keys, head_dim 128's varlen and GQA-packed rows take 192-key tiles ... */
#define WIDE_KEYS_D128_CAUSAL 8192   /* ... and from this many causal ones (widen_key_tiles) */
#define WIDE_KEYS_D96 8192   /* ... head_dim 96 */
#define STATIC_SMEM 256      /* the kernel's mbarriers */
#define SWIZZLE_BYTES 128    /* every tile is 128B-swizzled: rows of 128 bytes */
#define Q_BOX_ROWS 64        /* each consumer warpgroup's Q rows arrive as one box */
#define SM_SMEM_BYTES 233472   /* shared memory of a Hopper SM (228 KB) */
#define CTA_RESERVED_SMEM 1024 /* the driver's share of it per CTA */
#define H100_SMS 132           /* the plan's SM count where the target's is unknown */
/* the module's second kernel: V's transposer (v_transposed) or the split-KV combine (pack_gqa) */
#define SECOND_ENTRY "fc_second_kernel"

/* The warp-specialized schedule: a producer warpgroup beside block_m / 64 consumer warpgroups. */
static int specialized(const struct fc_variant *v)
{
    return v->warps == v->block_m / 16 + 4;
}

/* Bytes of a Q, K or V element: 1 for FP8 attention (q_fp8), else the variant's dtype's. */
static int in_bytes(const struct fc_variant *v)
{
    return v->q_fp8 ? 1 : fc_dtype_bytes(v->dtype);
}

/* A dense problem's warp-specialized kernel runs a persistent grid (fwd_sm90.cuh's PERSISTENT): as many
 * CTAs as fit on the GPU, each looping over row blocks, so that one block's prologue and epilogue
 * overlap the work of the others (PERF_NOTES v10). Varlen, paged and GQA-packed variants keep a CTA
 * per block (packed: few row blocks, each long). */
static int persistent(const struct fc_variant *v)
{
    return specialized(v) && !v->varlen && !v->paged && !v->pack_gqa;
}

/* A persistent causal grid that takes its row blocks from a counter (fwd_sm90.cuh's SCHEDULED_GRID),
 * where a key's K and V rows are at most 128 bytes: FP8 at head_dim 64 and 128 (1.02-1.06x its static
 * pairs from 8k keys, H100, PERF_NOTES v19) and 16-bit head_dim 64 (1.010-1.025x at 4k-16k keys, three
 * consumers; 1.05-1.10x at 1k-2k, PERF_NOTES v33). NOTE: not with rows of 256 bytes or more (16-bit
 * from head_dim 128, FP8 at 256), where the counter ran 0.89-0.98x the static pairs (v19); at 16-bit
 * head_dim 128 0.965x (v33.3), its idle tail gone but each SM's work 4.4% longer, the L2 hit rate no
 * lower (v33.5; with a hold or P in two register sets 0.973x, v33.6). */
static int scheduled(const struct fc_variant *v)
{
    return persistent(v) && v->causal && v->head_dim * in_bytes(v) <= 128;
}

/* A static persistent causal grid (not scheduled) whose last heads' blocks come one a unit, heaviest
 * first (fwd_sm90.cuh's STATIC_TAIL; how many: static_tail): 16-bit head_dim 128, the GQA rows
 * 1.010-1.014x the pairs in three runs, the sweep's causal rows 1.001x from 2k keys and 0.992-0.994x
 * at 512 (no tail taken there: the code; H100, PERF_NOTES v34). NOTE: not at 16-bit head_dim 256
 * (0.97x at 512 keys with no tail taken, 1.00x from 2k) nor FP8 at 256 (0.98x at 512 keys, 0.99-1.03x
 * from 2k): there the kernels keep the pairs and their code. */
static int static_tail_grid(const struct fc_variant *v)
{
    return persistent(v) && v->causal && !scheduled(v) && !v->q_fp8 && v->head_dim == 128;
}

/* GQA-packed rows (fwd_sm90.cuh's PACK_GQA): each consumer warpgroup's 64 rows are 64 / q_per_kv query
 * rows x the q_per_kv query heads of one K/V head, so a problem's rows per K/V head are seqlen_q x
 * q_per_kv, in blocks of this many query rows. */
#define PACK_GQA_MAX 64   /* query heads per K/V head: at least one query row a warpgroup */
static int packed_block_rows(int block_m, int q_per_kv)
{
    return block_m / 64 * (64 / q_per_kv);
}

/* The head_dim the kernel computes: whole 128-byte column blocks (fwd_sm90.cuh's PADDED_DIM; an odd
 * multiple of 32 is half a block short, and TMA fills that half with zeros). */
static int padded_dim(const struct fc_variant *v)
{
    const int line = SWIZZLE_BYTES / in_bytes(v);
    return (v->head_dim + line - 1) / line * line;
}

#define FP8_V_STAGING 2   /* FP8: staged V tiles (fwd_sm90.cuh's VS_STAGES) */

/* Q, then the stages of K and V, 128B-swizzled, plus 1 KB to align them. FP8: the V stages hold V^T
 * (head_dim rows of block_n keys, in lines of 128 keys past 128: fc_args.h's FC_SM90_FP8_VT_KEYS),
 * and FP8_V_STAGING V tiles as TMA writes them follow (v_transposed: none, V^T comes from memory). */
static int smem_bytes(const struct fc_variant *v)
{
    if (v->q_fp8)
        return 1024 + (v->block_m + v->stages * v->block_n + (v->v_transposed ? 0 : FP8_V_STAGING) * v->block_n) *
               padded_dim(v) + v->stages * v->head_dim * FC_SM90_FP8_VT_KEYS(v->block_n);
    return 1024 + (v->block_m + 2 * v->stages * v->block_n) * padded_dim(v) * fc_dtype_bytes(v->dtype);
}

/* Static shared memory: the mbarriers, and where the consumers may hold their wait for P V mid-softmax
 * (fwd_sm90.cuh's HOLD_TILES: warp-specialized 16-bit kernels without a softcap), a 4-byte word a
 * consumer thread; an upper bound (the kernel takes the words only where its rule holds). */
static int static_smem(const struct fc_variant *v)
{
    const int hold = specialized(v) && !v->q_fp8 && !v->softcap ? 4 * 128 * (v->block_m / 64) : 0;
    return STATIC_SMEM + hold;
}

/* CTAs of the variant that one SM holds at once: the kernel's own minimum (fc_args.h's
 * FC_SM90_MIN_BLOCKS, for which ptxas fits the registers), as far as the shared memory takes them
 * (each CTA also holds 1 KB the driver reserves); at least one. */
static int ctas_per_sm(const struct fc_variant *v)
{
    const int min_blocks = FC_SM90_MIN_BLOCKS(specialized(v), v->block_m / 64, v->head_dim);
    const int fit = SM_SMEM_BYTES / (smem_bytes(v) + static_smem(v) + CTA_RESERVED_SMEM);
    return fit >= min_blocks ? min_blocks : fit > 1 ? fit : 1;
}

/* NOTE: from the H200 tile sweeps (docs/PERF_NOTES.md, v2 and v3): head_dim 64, the plain schedule
 * with one warpgroup of 64 rows and 128-key tiles (several CTAs per SM); 128, 192 and 256, the
 * warp-specialized schedule with two consumer warpgroups (661 vs 574 TF/s at head_dim 128, 16k;
 * 678 vs 622 at 256), taking turns on the tensor cores, 128-key tiles up to head_dim 128; above,
 * the widest that fit (128 would need 246 / 296 KB of shared memory): 112 keys at head_dim 192 (and
 * 160), 80 at 256 (and 224), 1.03-1.15x and 1.05-1.09x the 64 before at 1k-16k keys (H100, PERF_NOTES
 * v14); a paged cache's boxes keep 64. */
static void defaults(struct fc_variant *v)
{
    v->stages = 2;
    if (v->q_fp8) {   /* FP8: warp-specialized (its producer warpgroup transposes V), 128-key tiles */
        /* NOTE: head_dim 64, three consumer warpgroups sharing each K/V tile: 1.15-1.18x two at 4k and
         * 16k keys (H100, PERF_NOTES v12); FP8's GEMMs are short beside the softmax there */
        v->block_m = v->head_dim <= 64 ? 192 : 128;
        v->warps = v->block_m / 16 + 4;
        v->block_n = 128;
        v->pingpong = v->block_m == 128;
        return;
    }
    if (v->head_dim <= 64) {   /* GQA-packed rows take the warp-specialized schedule */
        v->block_m = 64;
        v->warps = v->pack_gqa ? 8 : 4;
        v->block_n = 128;
        return;
    }
    v->block_m = 128;
    v->warps = 12;   /* two consumer warpgroups and the producer's */
    v->block_n = v->head_dim <= 128 ? 128 : v->paged ? 64 : padded_dim(v) == 192 ? 112 : 80;
    v->pingpong = 1;   /* +0-4% over letting the two interleave freely (H200, v3.1) */
}

/* NOTE: key tiles wider than 128 (or between 64 and 128) amortize each tile's fixed work over more
 * keys where the consumers' registers hold S and P of that many: FlashAttention-3's widths (176
 * keys at head_dim 128, 112 at 192, 80 at 256), 16-bit WGMMA forms only (fwd_sm90.cuh's wgmma_ss);
 * a paged cache's boxes take 64 or 128 (page_box_rows). */
#define WIDE_KEY_TILES "80, 112, 176 or 192; FP8: 160, 192 or 224"
static int wide_keys(const struct fc_variant *v)
{
    const int n = v->block_n;
    if (v->q_fp8)   /* FlashAttention-3's FP8 widths: 160 at head_dim 64, 224 at 128 (e4m3 WGMMA forms) */
        return n == 160 || n == 192 || n == 224;
    return !v->paged && (n == 80 || n == 112 || n == 176 || n == 192);
}

static int check(const struct fc_variant *v, char *why, size_t size)
{
    if (v->arch != 90 || !v->arch_specific)
        return fc_variant_fail(why, size, "WGMMA and TMA need the sm_90a target, not sm_%d", v->arch);
    if (v->head_dim % 32 || v->head_dim > 256)
        return fc_variant_fail(why, size, "the sm90 kernel takes head_dim of a multiple of 32 up to 256, not %d",
                               v->head_dim);
    if (v->paged && v->head_dim % 64)
        return fc_variant_fail(why, size, "the sm90 kernel reads a paged cache at head_dim 64, 128, 192 or 256, not %d",
                               v->head_dim);
    if (v->block_n != 64 && v->block_n != 128 && !wide_keys(v) && !(v->quick && v->block_n == 32))
        return fc_variant_fail(why, size, "the sm90 kernel takes block_n 64 or 128 (not paged: also %s; the quick "
                               "first call's kernel: also 32), not %d", WIDE_KEY_TILES, v->block_n);
    if (v->quick && (specialized(v) || v->q_fp8 || v->paged))
        return fc_variant_fail(why, size, "the sm90 kernel's quick first-call form (quick) takes the plain schedule "
                               "(no producer warpgroup), 16-bit inputs and no paged cache; not %d warps%s%s", v->warps,
                               v->q_fp8 ? ", FP8 attention" : "", v->paged ? ", a paged cache" : "");
    if (v->q_fp8 && (v->head_dim % 64 || !specialized(v) || v->paged))
        return fc_variant_fail(why, size, "the sm90 kernel's FP8 attention takes head_dim 64, 128, 192 or 256, the "
                               "warp-specialized schedule (its producer warpgroup transposes V) and no paged cache; not "
                               "head_dim %d, %d warps%s", v->head_dim, v->warps, v->paged ? ", a paged cache" : "");
    if (v->v_transposed && (!v->q_fp8 || v->varlen || v->block_n < 128))
        return fc_variant_fail(why, size, "the sm90 kernel reads V transposed ahead (v_transposed) in FP8 attention on "
                               "dense batches, in lines of 128 keys; not %s%sblock_n %d",
                               v->q_fp8 ? "" : "16-bit inputs, ", v->varlen ? "per-sequence lengths, " : "", v->block_n);
    if (v->pack_gqa && (!specialized(v) || v->q_fp8 || v->varlen))
        return fc_variant_fail(why, size, "the sm90 kernel packs the query heads of a K/V head (pack_gqa) with the "
                               "warp-specialized schedule, 16-bit inputs and dense batches only; not %d warps%s%s",
                               v->warps, v->q_fp8 ? ", FP8 attention" : "", v->varlen ? ", per-sequence lengths" : "");
    if (v->block_m != 64 && v->block_m != 128 && v->block_m != 192)
        return fc_variant_fail(why, size, "the sm90 kernel takes one to three warpgroups of 64 rows, not block_m %d",
                               v->block_m);
    if (specialized(v)) {
        if (v->stages < 2 || v->stages > 4)
            return fc_variant_fail(why, size, "the warp-specialized sm90 kernel takes 2 to 4 stages, not %d",
                                   v->stages);
        if (v->pingpong && v->block_m < 128)
            return fc_variant_fail(why, size, "ping-pong needs two or more consumer warpgroups, not block_m %d",
                                   v->block_m);
    } else if (v->warps != v->block_m / 16 || v->stages != 2 || v->block_m > 128 || v->pingpong) {
        return fc_variant_fail(why, size, "the sm90 kernel takes 4 warps per 64 rows (plus 4 for a producer "
                               "warpgroup), and 2 stages and no ping-pong without one; not %d warps", v->warps);
    }
    /* PAGED: the gather path's K and V offsets of a tile's rows (fwd_sm90.cuh's produce_gathered) */
    if (smem_bytes(v) + static_smem(v) + (v->paged ? 16 * v->block_n : 0) > fc_arch_smem_limit(v->arch))
        return fc_variant_fail(why, size, "needs %d bytes of shared memory, more than the arch allows",
                               smem_bytes(v));
    return 0;
}

/* How the kernel reads a paged cache (fwd_sm90.cuh), K and V each: the rows of its TMA boxes (> 0),
 * 0 to gather rows by cp.async, -1 when it cannot. Boxes are the largest divisor of page and tile, a
 * multiple of 8 (whole 128B swizzle atoms, so that a box lands where the tile's swizzle expects it),
 * each one copy of every column block of its rows (encode_pages' grouped view, which needs a head's
 * rows followed by the next head's, or one column block a head). TMA costs about as much per copy
 * whatever its size (PERF_NOTES v8.4), so the warp-specialized schedule takes boxes up to 8 a tile for
 * both tensors (chunked prefill at head_dim 128, H100, v8.5: pages of 16 0.95-0.98x the non-paged run,
 * where a copy per column block, 16 a tile, ran 0.74x, and V gathered 0.85x) and up to 16 for K with
 * V gathered (pages of 8: 0.83x; both gathered 0.74x); its producer warps gather the rest. The plain
 * schedule (no producer warpgroup) takes boxes of any count. */
#define MAX_TMA_BOXES_PER_TILE 8
#define MAX_K_BOXES_PER_TILE 16
#define PLAIN_PAGES_RULE "the sm90 kernel's plain schedule reads pages by TMA boxes of a multiple of 8 tokens, each " \
    "head's K/V row followed by the next head's from head_dim 128"
struct page_paths {
    int k, v;   /* rows of K's and V's TMA boxes (> 0), 0 gathered, -1 neither */
};
/* Whether a paged tensor (strides {page, token, head}) has encode_pages' grouped view. */
static int groupable(const struct fc_problem *p, const int64_t stride[3])
{
    return p->head_dim * fc_dtype_bytes(p->dtype) <= SWIZZLE_BYTES || stride[2] == p->head_dim;
}
static struct page_paths page_box_rows(const struct fc_variant *v, const struct fc_problem *p)
{
    int rows = p->page_size, b = v->block_n;   /* gcd(page_size, block_n) */
    while (b) {
        const int r = rows % b;
        rows = b;
        b = r;
    }
    const int boxes = rows % 8 ? 1 << 30 : v->block_n / rows;
    const int k_boxes = groupable(p, p->k_stride) ? boxes : 1 << 30;
    const int v_boxes = groupable(p, p->v_stride) ? boxes : 1 << 30;
    if (!specialized(v))
        return (struct page_paths){k_boxes <= v->block_n ? rows : -1, v_boxes <= v->block_n ? rows : -1};
    return (struct page_paths){k_boxes <= MAX_K_BOXES_PER_TILE ? rows : 0, v_boxes <= MAX_TMA_BOXES_PER_TILE ? rows : 0};
}

/* Which path each of K and V takes (page_box_rows), and why, for the selector's reason. */
static const char *page_path_reason(const struct fc_variant *v, const struct fc_problem *p, struct page_paths paths)
{
    if (paths.k > 0 && paths.v > 0)
        return paths.k == v->block_n ? "sm90 kernel: TMA + WGMMA on a paged cache, each key tile one TMA box inside one "
                                       "page"
                                     : "sm90 kernel: TMA + WGMMA on a paged cache, each key tile several TMA boxes "
                                       "(gcd(page_size, block_n) tokens each, inside one page, every column block of "
                                       "them in one copy)";
    if (p->page_size % 8)
        return "sm90 kernel: WGMMA on a paged cache gathered by the producer warpgroup (pages not of a multiple of 8 "
               "tokens, which TMA boxes cannot tile: each row's page read from the table once a tile, rows copied "
               "by cp.async)";
    if (paths.k > 0 && groupable(p, p->v_stride))
        return "sm90 kernel: WGMMA on a paged cache, K by TMA boxes (gcd(page_size, block_n) tokens each, inside one "
               "page), V gathered by two producer warps (rows copied by cp.async): more than 8 boxes a tile cost the "
               "TMA unit more than gathering";
    return "sm90 kernel: WGMMA on a paged cache, K or V (or both) gathered by the producer warpgroup (rows copied by "
           "cp.async): their TMA boxes need each head's row followed by the next head's (head stride = head_dim) "
           "from head_dim 128";
}

/* NOTE: head_dim 128's two consumer warpgroups hold S and P of 192 keys in their registers, and the
 * wider tile amortizes each tile's fixed work (barriers, the row max and sum, O's rescale) over
 * more keys: 1.04x and 1.09x the 128-key tile at 4k and 16k keys without a mask, 1.02x and 1.07x
 * causal; at 1k 0.97x and 0.91x, where a wider last tile is more padding (H100, PERF_NOTES v14).
 * Since the 128-key tile rescales lazily (fwd_sm90.cuh's RESCALE_SLACK), causal rows keep it up to
 * 4k keys: 1.025x the 192-key tile at 4k, 1.024x GQA (Hq32 Hkv8) 4k, 0.996x at 8k, 0.984x at 16k
 * (H100, PERF_NOTES v28.2). Since the consumers' loop runs the unmasked tiles without mask code
 * (fwd_sm90.cuh's LOOP_SPLIT), the 128-key tile is ahead at every length: without a mask 1.043x the
 * 192-key tile at 2k keys, 1.042x at 4k, 1.023x at 8k, 1.007x at 16k; causal 1.024x at 8k, 1.004x at
 * 16k (bf16, H100, PERF_NOTES v29.4), so dense head_dim 128 keeps it; varlen
 * and GQA-packed rows (not measured since) still widen. Head_dim 96 (its Q and K padded to 128) gains
 * from 8k keys: 1.04-1.05x (`fcjit tune`, H100). */
static void widen_key_tiles(const struct fc_problem *problem, struct fc_variant *v)
{
    const int d = problem->head_dim, keys = problem->max_seqlen_k;
    const int wide_d128 = problem->mask.causal ? WIDE_KEYS_D128_CAUSAL : WIDE_KEYS_D128;
    /* a window's rows see its span, not the sequence: its keys do not tell the tiles it crosses; a
     * softcap's tanh needs the registers (its 192-key variants spill 16-40 bytes) */
    const int wide = (d == 128 && (v->varlen || v->pack_gqa) && keys >= wide_d128) || (d == 96 && keys >= WIDE_KEYS_D96);
    if (!wide || v->paged || v->window || v->softcap || !specialized(v) || v->block_m != 128)
        return;
    v->block_n = 192;
    if (fc_variant_check(v, NULL, 0))
        v->block_n = 128;
}

/* NOTE: FP8 attention's wider key tiles (FlashAttention-3's: 224 keys at head_dim 128, 160 at 64),
 * from `fcjit tune` on an H100 (PERF_NOTES v18): head_dim 128 without a mask 1.04x the 128-key tile
 * at 4k keys, 1.07-1.09x at 8k-16k (192 keys; 224 within 1%); causal 1.04-1.06x at 8k-16k (224; 192
 * 1-2% behind), none at 4k; below 4k slower (1k: 0.93x, causal 0.82-0.86x). Head_dim 64 (three
 * consumers, taking turns): 1.03x at 4k, 1.05x at 16k, causal 1.07x. A window's rows see its span,
 * not the sequence, and a softcap's tanh needs the registers (wide softcap variants spill up to 480
 * bytes): both keep 128. These variants spill 12-28 bytes (loop counters, once a row block), so they
 * are not precompiled (tuning_db/precompile.yaml). */
static void widen_fp8_key_tiles(const struct fc_problem *problem, struct fc_variant *v)
{
    const int d = problem->head_dim, keys = problem->max_seqlen_k;
    if (keys < (problem->mask.causal ? WIDE_KEYS_FP8_CAUSAL : WIDE_KEYS_FP8) || v->window || v->softcap)
        return;
    if (d == 128 && v->block_m == 128) {
        v->block_n = problem->mask.causal ? 224 : 192;
    } else if (d == 64 && v->block_m == 192) {
        v->block_n = 160;
        v->pingpong = 1;
    }
}

/* FP8 attention transposes V ahead (a kernel of its own writes V^T, which the attention kernel loads
 * by TMA, where it otherwise transposes each tile in shared memory with its producer warpgroup) from
 * TRANSPOSED_KEYS_FP8 keys at head_dim 256 and 192 (192 with a causal mask from
 * TRANSPOSED_KEYS_FP8_D192_CAUSAL), on dense batches whose grid the transposer takes.
 * NOTE: head_dim 256 ran 1.026-1.076x as fast at 4k keys, 1.095-1.117x at 16k, outputs bit for bit the
 * same; head_dim 128 0.960-1.013x (4k-16k), so it keeps the transposes in shared memory; at 1k keys
 * neither was taken; a third stage of the V^T ring moved nothing (0.984-1.019x) (H100, PERF_NOTES
 * v35.3). head_dim 192 (v36.5): 1.055x at 4k keys without a mask, 0.990x with one, 1.051-1.078x at 8k
 * and 16k, 0.901-0.991x at 2k. The transposer reads and writes V once a call. */
static int transposes_ahead(const struct fc_problem *problem, const struct fc_variant *v)
{
    if (!v->q_fp8 || v->varlen || v->paged || v->block_n < 128 || (v->head_dim != 192 && v->head_dim != 256) ||
        problem->heads_kv > VT_GRID_MAX || problem->batch > VT_GRID_MAX)
        return 0;
    const int from = v->head_dim == 192 && problem->mask.causal ? TRANSPOSED_KEYS_FP8_D192_CAUSAL : TRANSPOSED_KEYS_FP8;
    return problem->max_seqlen_k >= from;
}

/* NOTE: FlashAttention-3's rule for packing a K/V head's query heads into a tile's rows: where the
 * packed rows fill the tiles better than the query rows of one head do (by PACK_FILL: 0.9, FA3's
 * should_pack_gqa), i.e. few query rows (speculative decoding, chunked-prefill tails) with GQA. Dense
 * 16-bit problems only (the kernel's PACK_GQA). 0, or the packed tile's block_m: 64 (one consumer
 * warpgroup, so one or two CTAs per (batch, K/V head), each reading all its K/V) up to
 * PACK_ONE_CONSUMER_ROWS rows of a K/V head, else 128. NOTE: B8 Hkv8 Sk16000 head_dim 128 causal,
 * H200: 64 rows (Hq32 Sq16) 155.8 us with 64 rows a CTA against 194.0 with 128; 128 rows (Hq64 Sq16)
 * 166.5 against 197.3 (183.9 with 192-key tiles; FA3 183.1); 256 rows (Hq32 Sq64), four CTAs a K/V
 * head, 304.3 against 226.0 (192-key tiles), where four reads of each K/V tile bound it (PERF_NOTES v21). */
#define PACK_FILL 0.9
#define UNPACKED_ROWS 128           /* the tile of one head's query rows it is compared with */
#define PACK_ONE_CONSUMER_ROWS 128  /* packed rows of a K/V head up to which each CTA takes 64 */
static int packed_block_m(const struct fc_problem *p)
{
    const int r = p->heads_q / p->heads_kv;
    if (r < 2 || r > PACK_GQA_MAX || fc_problem_per_sequence(p) || p->q_fp8 || p->kv_fp8)   /* paged: per sequence */
        return 0;
    const long long rows = (long long)p->seqlen_q * r;
    const int block_m = rows <= PACK_ONE_CONSUMER_ROWS ? 64 : 128, positions = packed_block_rows(block_m, r);
    const double unpacked = (double)p->seqlen_q / (double)(((long long)p->seqlen_q + UNPACKED_ROWS - 1) /
                                                           UNPACKED_ROWS * UNPACKED_ROWS);
    const double packed = (double)rows / (double)(((long long)p->seqlen_q + positions - 1) / positions * block_m);
    return unpacked < PACK_FILL * packed ? block_m : 0;
}

/* NOTE: the decode kernel (first in the table) leaves every problem whose rows pack here to these
 * packed rows, which split their keys across CTAs where their row blocks leave SMs idle
 * (packed_grid). Before the split they took only problems whose CTAs (batch x K/V heads x row blocks)
 * were at least 2/5 of the SMs (each then reading its K/V head at 50-60 GB/s): head_dim 128, Hq32
 * Hkv8 Sq16 Sk16000 causal, H100 (H200): B8, 64 CTAs, 184 us against the decode kernel's 208 (156
 * against 195); B4, 32 CTAs, 154 against 124; Sq1 Sk8192 B64: 712 against 703 (491 against 618;
 * cuDNN 707 and 494); B8 Sk32768: 356 against 365 (288 against 325, cuDNN 258; PERF_NOTES v21, v42). */
static long long packed_ctas(const struct fc_problem *problem, int block_m)
{
    const int positions = packed_block_rows(block_m, problem->heads_q / problem->heads_kv);
    return (long long)problem->batch * problem->heads_kv * ((problem->seqlen_q + positions - 1) / positions);
}
static long long sms_of(const struct fc_target *target)
{
    return target->sm_count > 0 ? target->sm_count : H100_SMS;
}
int fc_sm90_packs(const struct fc_problem *problem, const struct fc_target *target)
{
    const int d = problem->head_dim;
    return target->arch == 90 && target->arch_specific && d % 32 == 0 && d <= 256 && packed_block_m(problem);
}

static const char *select_for(const struct fc_problem *problem, const struct fc_target *target,
                              struct fc_variant *v, const char **why_not)
{
    const int d = problem->head_dim;
    if (target->arch != 90 || !target->arch_specific)
        return NULL;
    if (d % 32 || d > 256) {   /* 64-wide swizzle blocks, the last one maybe half zeros */
        *why_not = "the Hopper kernel takes head_dim of a multiple of 32 up to 256";
        return NULL;
    }
    if (problem->paged && d % 64) {
        *why_not = "the Hopper kernel reads a paged cache at head_dim 64, 128, 192 or 256 (whole 128-byte lines)";
        return NULL;
    }
    if (problem->q_fp8) {
        if (d % 64) {
            *why_not = "the Hopper kernel's FP8 attention takes head_dim 64, 128, 192 or 256 (whole 64-byte lines)";
            return NULL;
        }
        if (problem->paged) {
            *why_not = "the Hopper kernel's FP8 attention takes no paged cache so far (its V goes through a staging "
                       "ring that only TMA boxes of whole tiles fill)";
            return NULL;
        }
        defaults(v);
        if (d == 64 && problem->mask.causal && problem->max_seqlen_k < LONG_KEYS_FP8_D64) {
            /* NOTE: few causal key tiles: two consumers (H100, PERF_NOTES v12: 512 to 2k keys 0.83-0.98x
             * the time of three, which win from 4k on and at every length without a mask) */
            v->block_m = 128;
            v->warps = 12;
            v->pingpong = 1;
        }
        widen_fp8_key_tiles(problem, v);
        v->v_transposed = transposes_ahead(problem, v);
        if (fc_variant_check(v, NULL, 0))
            return NULL;
        if (v->v_transposed)
            return "sm90 kernel: FP8 attention on WGMMA e4m3, warp-specialized, persistent grid; V transposed ahead "
                   "by a kernel of its own into scratch, loaded by TMA (head_dim 256 from 4k keys, 192 from 4k-8k: "
                   "1.03-1.12x the transposes in shared memory)";
        if (v->varlen)
            return "sm90 kernel: FP8 attention on WGMMA e4m3 (V transposed in shared memory, P rounded to e4m3), "
                   "warp-specialized, with per-sequence lengths (keys past a sequence's end masked, their staged "
                   "V rows zeroed)";
        return "sm90 kernel: FP8 attention on WGMMA e4m3 (V transposed in shared memory, P rounded to e4m3), "
               "warp-specialized, persistent grid";
    }
    defaults(v);
    const int packed = packed_block_m(problem);
    if (packed) {   /* the warp-specialized schedule: one consumer warpgroup where its rows hold them all */
        v->pack_gqa = 1;
        v->block_m = packed;
        v->warps = packed / 16 + 4;
        v->pingpong = packed >= 128;
        /* NOTE: one consumer's CTAs past one a SM take 64-key tiles, so that two fit an SM (82 KB at
         * head_dim 128): Hq32 Hkv8 Sq1 Sk8192 B64 (512 CTAs) 705 us against 712 with 128 keys (cuDNN
         * 706), Hq28 Hkv4 362 against 364 (H100, PERF_NOTES v21) */
        if (packed == 64 && packed_ctas(problem, packed) > sms_of(target) && problem->head_dim <= 128)
            v->block_n = 64;
        widen_key_tiles(problem, v);
        if (fc_variant_check(v, NULL, 0))
            return NULL;
        /* NOTE: short: fc_plan_info's 256 characters also hold the decode kernel's reason */
        return "sm90 kernel: TMA + WGMMA, a K/V head's query heads packed into each CTA's rows";
    }
    /* varlen: the longest sequence's lengths, as a dense batch of them (the tiles' reasons hold
     * per sequence); dense: max_seqlen_q/_k are seqlen_q/_k */
    if (check(v, NULL, 0) == 0 && d == 128 && problem->mask.causal && problem->max_seqlen_k <= SHORT_KEYS &&
        !persistent(v)) {
        /* NOTE: few causal key tiles leave too little to hide a 165 KB CTA's prologue: one
         * consumer warpgroup x 64 keys (82 KB, two CTAs per SM) measured faster on the H200
         * at 512 keys (264 vs 226 TF/s) and 1k (357 vs 341); slower from 2k on (428 vs 451).
         * Varlen and paged problems only: on a persistent grid (dense) the next block's prologue
         * hides under this one's work, and two consumers x 128 keys are as fast at 512 keys and
         * 11% faster at 1k (H100, PERF_NOTES v10). */
        v->block_m = 64;
        v->warps = 8;
        v->block_n = 64;
        v->pingpong = 0;   /* one consumer: nobody to take turns with */
    } else if (d == 64 && problem->mask.causal && problem->max_seqlen_k <= SHORT_KEYS_D64_CAUSAL) {
        /* NOTE: few causal key tiles: the plain warpgroup on 64-key tiles, both GPUs' tuned winners
         * at 512 and 1k keys. Against 128-key tiles, f16 / bf16: at 512 keys 1.091x / 1.091x, at 1k
         * 1.024x / 1.042x (H100, tools/ab_rounds.py, PERF_NOTES v31.1); 1.095x / 1.091x and 1.021x /
         * 1.012x (H200, bench.py against the old winners, v41.2); at 2k the 128-key tiles stay. */
        v->block_n = 64;
    } else if (d == 64 && problem->max_seqlen_k >= (problem->mask.causal ? LONG_KEYS_D64_CAUSAL : LONG_KEYS_D64) &&
               problem->max_seqlen_q >= 1024) {
        /* NOTE: three consumer warpgroups sharing each K/V tile, taking turns on the tensor cores
         * (tools/ab_rounds.py, H100, PERF_NOTES v23.9: against the plain m64n128, 1.06-1.08x at 2k
         * keys, 1.09-1.10x at 4k, causal 1.04-1.05x at 4k and 0.92x at 2k; the turns 1.02-1.04x
         * causal at 4k-16k, 1.00-1.01x without a mask). H200 (v3, before the persistent grid):
         * three consumers slower at 2k (428 vs 455 TF/s), faster at 16k. */
        v->block_m = 192;
        v->warps = 16;
        v->block_n = 128;
        v->pingpong = 1;
    }
    widen_key_tiles(problem, v);
    if (problem->paged && d == 64) {
        /* NOTE: a paged cache at head_dim 64 takes one consumer warpgroup beside the producer's,
         * whose warps look pages up a tile ahead; the plain schedule's thread 0 looks each box's
         * page up as it issues it (chunked prefill, 512 queries on a 16k prefix, H100, PERF_NOTES
         * v8.5: pages of 16 0.165 against 0.582 ms, of 7 0.240 against sm80's 0.490; the three
         * consumers' m192 0.282) */
        v->block_m = 64;
        v->warps = 8;
        v->block_n = 128;
        v->pingpong = 0;
    }
    if (fc_variant_check(v, NULL, 0))
        return NULL;
    if (problem->paged) {
        const struct page_paths paths = page_box_rows(v, problem);
        if (paths.k < 0 || paths.v < 0) {   /* not so far: paged problems take the warp-specialized one */
            *why_not = PLAIN_PAGES_RULE "; only its warp-specialized schedule gathers rows";
            return NULL;
        }
        return page_path_reason(v, problem, paths);
    }
    if (v->varlen)
        return "sm90 kernel: TMA + WGMMA, warp-specialized from head_dim 128, with per-sequence lengths (each "
               "sequence's rows from its first token; keys past its end masked and their V rows zeroed)";
    if (scheduled(v))
        return "sm90 kernel: TMA + WGMMA, warp-specialized (1.3-2.6x the sm80 kernel in the H200 sweep), on a "
               "persistent grid (as many CTAs as the SMs hold) whose CTAs take their causal row blocks from a "
               "counter, each its next when free (K and V rows of at most 128 bytes: 1.01-1.10x the static pairs)";
    if (static_tail_grid(v))
        return "sm90 kernel: TMA + WGMMA, warp-specialized (1.3-2.6x the sm80 kernel in the H200 sweep), on a "
               "persistent grid (as many CTAs as the SMs hold, each looping over causal row blocks in pairs of equal "
               "work, the last heads' blocks one at a time, heaviest first, dealt so that the CTAs finish together)";
    if (persistent(v))
        return "sm90 kernel: TMA + WGMMA, warp-specialized (1.3-2.6x the sm80 kernel in the H200 sweep), on a "
               "persistent grid (as many CTAs as the SMs hold, each looping over row blocks)";
    if (d == 64 && problem->mask.causal && v->block_n == 64 && v->block_m == 64)
        return "sm90 kernel: TMA + WGMMA, one warpgroup on 64-key tiles: few causal keys (up to 1448: 1.01-1.09x "
               "the 128-key tiles on an H100 and an H200)";
    return "sm90 kernel: TMA + WGMMA, warp-specialized from head_dim 128 (1.3-2.6x the sm80 kernel in the H200 "
           "sweep)";
}

/* NOTE: a scheduled grid's last heads (attention_common.cuh's scheduled_block) give their blocks
 * heaviest first, enough of them for TAIL_ROUNDS rounds of the grid's CTAs: those blocks even out
 * where the CTAs finish. 4: 1.006-1.022x the time of 2, 8 the same as 4, 16 or every head 0.97-1.0x,
 * a single head 0.93-0.96x (FP8 causal, H100, PERF_NOTES v19). */
#define TAIL_ROUNDS 4

static int schedule_tail(const struct fc_problem *p, int m_blocks, unsigned grid)
{
    const int64_t all = (int64_t)p->heads_q * p->batch;
    int64_t heads = ((int64_t)TAIL_ROUNDS * grid + m_blocks - 1) / m_blocks;
    if (heads < 1)
        heads = 1;
    return (int)(heads < all ? heads : all);
}

/* NOTE: a static persistent causal grid (not scheduled) deals its last heads' blocks one a unit,
 * heaviest first (fc_args.h's fc_static_tail_rank): the CTAs that the pairs' last round
 * leaves without a unit take the heaviest, and the rounds after it even out the sums. How many
 * heads: static_tail's, up to STATIC_TAIL_ROUNDS rounds' worth of blocks. By the sums it forms, the
 * pairs alone keep the busiest CTA 3% above the mean at head_dim 128 from 2k keys (1024 or 2048 units
 * on 132 CTAs); the tail brings it within 0.1-0.5% with 2-16 heads. */
#define STATIC_TAIL_ROUNDS 4

/* A row block's weight in the static tail's sums: its key tiles, and a quarter tile for its Q load
 * and its output (the kernel's key_tiles; a window's first tile on). */
static int64_t tail_weight(const struct fc_problem *p, const struct fc_variant *v, int64_t m)
{
    const int64_t first = m * v->block_m, end = first + v->block_m;
    const struct fc_key_range keys = fc_mask_keys(&p->mask, p->seqlen_q, p->seqlen_k, (int)first,
                                                  (int)(end < p->seqlen_q ? end : p->seqlen_q));
    if (keys.end <= keys.begin)
        return 1;
    return 4 * ((keys.end + v->block_n - 1) / v->block_n - keys.begin / v->block_n) + 1;
}

/* The busiest CTA's sum with the last t (batch, head)s in the static tail (0: none; load: g entries of
 * scratch): unit u on CTA u % g, the pairs at their mean weight, the tail's units by fc_args.h's
 * fc_static_tail_rank, the kernel's deal. */
static int64_t busiest_cta(const int64_t *weight, int m_blocks, int64_t pair_sum, int64_t pairs, int64_t front,
                           int64_t t, int64_t g, int64_t *load)
{
    const int64_t n = t * m_blocks;
    for (int64_t c = 0; c < g; c++)
        load[c] = pair_sum * (front / g + (c < front % g)) / pairs;
    for (int64_t unit = front; unit < front + n; unit++)   /* int: the host checked the units fit one */
        load[unit % g] += weight[m_blocks - 1 - fc_static_tail_rank((int)unit, (int)front, (int)n, (int)g) / t];
    int64_t busiest = 0;
    for (int64_t c = 0; c < g; c++)
        busiest = load[c] > busiest ? load[c] : busiest;
    return busiest;
}

/* The static tail's (batch, head)s for a causal persistent grid of `fit` CTAs (0: pairs throughout,
 * and where the sums cannot be formed); *grid: its CTAs, min(units, fit), where the count is not 0.
 * Of none and the counts whose blocks fill about two and four rounds of the grid, the one whose
 * busiest CTA's sum is least (the fewest heads on a tie). NOTE: not every count up to four rounds'
 * worth: that search cost 15-250 us a plan (and every call plans), and these two came within 0.3%
 * of its sums on average (400 shapes of 66 to 264 CTAs, PERF_NOTES v34). */
static int choose_static_tail(const struct fc_problem *p, const struct fc_variant *v, int m_blocks, unsigned fit,
                              int64_t limit, unsigned *grid)
{
    const int64_t heads = (int64_t)p->heads_q * p->batch, pairs = FC_PERSISTENT_HEAD_UNITS(m_blocks, 1);
    int64_t *weight = calloc((size_t)m_blocks, sizeof *weight), *load = calloc(fit, sizeof *load);
    if (!weight || !load) {
        free(weight);
        free(load);
        return 0;
    }
    int64_t pair_sum = 0;
    for (int64_t m = 0; m < m_blocks; m++)
        pair_sum += weight[m] = tail_weight(p, v, m);
    const int64_t front = pairs * heads, g = front < (int64_t)fit ? front : (int64_t)fit;
    int64_t best_max = busiest_cta(weight, m_blocks, pair_sum, pairs, front, 0, g, load);
    int best = 0;
    for (int rounds = 2; rounds <= STATIC_TAIL_ROUNDS; rounds += 2) {
        int64_t t = (int64_t)rounds * fit / m_blocks;
        t = t < heads ? t : heads;
        const int64_t tail_front = (heads - t) * pairs, units = tail_front + t * m_blocks;
        if (t <= best || units > limit)
            continue;
        const int64_t tail_g = units < (int64_t)fit ? units : (int64_t)fit;
        const int64_t busiest = busiest_cta(weight, m_blocks, pair_sum, pairs, tail_front, t, tail_g, load);
        if (busiest < best_max) {
            best_max = busiest;
            best = (int)t;
            *grid = (unsigned)tail_g;
        }
    }
    free(weight);
    free(load);
    return best;
}

/* What choose_static_tail depends on (zeroed, then set: compared as bytes). */
struct static_tail_key {
    int64_t heads, limit;
    struct fc_mask mask;
    int seqlen_q, seqlen_k, block_m, block_n, m_blocks;
    unsigned fit;
};

/* choose_static_tail, its last answer kept per thread: every call plans, and its sums cost 7-8 us on
 * the development VM (the plan alone 0.1 us; PERF_NOTES v34), while a caller's calls mostly repeat
 * one shape. */
static int static_tail(const struct fc_problem *p, const struct fc_variant *v, int m_blocks, unsigned fit,
                       int64_t limit, unsigned *grid)
{
    static _Thread_local struct {
        int valid, tail;
        unsigned grid;
        struct static_tail_key key;
    } last;
    if (m_blocks < 2 || FC_PERSISTENT_HEAD_UNITS(m_blocks, 1) * (int64_t)p->heads_q * p->batch <= fit)
        return 0;
    struct static_tail_key key;
    memset(&key, 0, sizeof key);
    key.heads = (int64_t)p->heads_q * p->batch;
    key.limit = limit;
    key.mask = p->mask;
    key.seqlen_q = p->seqlen_q;
    key.seqlen_k = p->seqlen_k;
    key.block_m = v->block_m;
    key.block_n = v->block_n;
    key.m_blocks = m_blocks;
    key.fit = fit;
    if (!last.valid || memcmp(&key, &last.key, sizeof key)) {
        last.grid = *grid;
        last.tail = choose_static_tail(p, v, m_blocks, fit, limit, &last.grid);
        last.key = key;
        last.valid = 1;
    }
    if (last.tail)
        *grid = last.grid;
    return last.tail;
}

/* GQA-packed rows: a CTA a row block of a K/V head's query heads (packed_block_rows query rows of
 * each (batch, K/V head), the blocks fastest: fwd_sm90.cuh's packed_block_coordinates), and where
 * those CTAs leave slots of the GPU idle, the keys split across CTAs (split-KV, src/split.c: the
 * wave-efficiency rule over the key tiles the packed rows see, whole tiles a split, then the
 * combine): a few query rows of a few (batch, K/V head)s against a long cache, which one CTA each
 * reads at 50-60 GB/s, then fill every SM. NOTE: B8 Hq32 Hkv8 Sq1 Sk32768 head_dim 128, H200: 64
 * CTAs 287 us (88% of the copy figure), two splits 253 us (100%; cuDNN 252); B4 138 against 282
 * unsplit (the decode kernel 169); Sq16 Sk16000 causal 137 against 149 (PERF_NOTES v42). */
static enum fc_status packed_grid(const struct fc_problem *problem, const struct fc_target *target,
                                  struct fc_plan *plan, char *msg, size_t size)
{
    const int q_per_kv = problem->heads_q / problem->heads_kv;
    if (q_per_kv > PACK_GQA_MAX) {   /* per-sequence lengths: the variant's check refused them */
        snprintf(msg, size, "the sm90 kernel packs up to %d query heads per K/V head into its rows (pack_gqa), not %d",
                 PACK_GQA_MAX, q_per_kv);
        return FC_ERR_UNSUPPORTED;
    }
    const struct fc_variant *v = &plan->variant;
    enum fc_status status = fc_plan_block_grid(problem, plan, packed_block_rows(v->block_m, q_per_kv),
                                               problem->heads_kv, "heads_kv", msg, size);
    if (status != FC_OK)
        return status;
    /* the key tiles some packed row sees (rows 0 .. seqlen_q - 1), whole tiles from the first's */
    const struct fc_key_range range = fc_mask_keys(&problem->mask, problem->seqlen_q, problem->seqlen_k, 0,
                                                   problem->seqlen_q);
    const int tiles = range.end > range.begin
                          ? (int)(((long long)range.end + v->block_n - 1) / v->block_n - range.begin / v->block_n)
                          : 0;
    const long long slots = sms_of(target) * ctas_per_sm(v);
    fc_split_choose(plan->grid, slots, tiles, v->block_n, plan->requested_splits, plan);
    const long long grid = (long long)plan->grid * plan->splits;   /* splits <= FC_SPLITS_MAX */
    if (grid > INT_MAX) {
        snprintf(msg, size, "batch * heads_kv * row blocks * splits = %lld blocks: more than one launch takes (%d)",
                 grid, INT_MAX);
        return FC_ERR_UNSUPPORTED;
    }
    plan->grid = (unsigned)grid;
    return FC_OK;
}

/* The default grid; first, a forced plain schedule that cannot read the problem's pages is refused by
 * the plan (`fcjit plan` says so), before anything is compiled: the selector never plans one. */
static enum fc_status launch_shape(const struct fc_problem *problem, const struct fc_target *target,
                                   struct fc_plan *plan, char *msg, size_t size)
{
    const struct page_paths paths = problem->paged ? page_box_rows(&plan->variant, problem) : (struct page_paths){0, 0};
    if (paths.k < 0 || paths.v < 0) {
        snprintf(msg, size, PLAIN_PAGES_RULE ": page_size %d, head strides %lld and %lld at head_dim %d (its "
                 "warp-specialized schedule, and the sm80 and decode kernels, take any page size and strides)",
                 problem->page_size, (long long)problem->k_stride[2],
                 (long long)problem->v_stride[2], problem->head_dim);
        return FC_ERR_UNSUPPORTED;
    }
    if (plan->variant.pack_gqa)
        return packed_grid(problem, target, plan, msg, size);
    if (plan->requested_splits > 0) {
        snprintf(msg, size, "the sm90 kernel splits the keys (k) of GQA-packed rows (g1) only");
        return FC_ERR_UNSUPPORTED;
    }
    const enum fc_status status = fc_plan_row_block_grid(problem, plan, msg, size);
    if (status == FC_OK && persistent(&plan->variant)) {
        /* the kernel's units: a scheduled grid's row blocks, else attention_common.cuh's
         * persistent_units (causal: row blocks in pairs) */
        const int list = scheduled(&plan->variant);
        unsigned units = list ? plan->grid
                              : plan->grid / (unsigned)plan->m_blocks *
                                    (unsigned)FC_PERSISTENT_HEAD_UNITS(plan->m_blocks, plan->variant.causal);
        const unsigned fit = (unsigned)(target->sm_count > 0 ? target->sm_count : H100_SMS) *
                             (unsigned)ctas_per_sm(&plan->variant);
        /* the kernel's int counters step past units by gridDim.x (a scheduled grid without a counter
         * counts twice its units of two blocks, up to its row blocks plus twice the grid) */
        const unsigned limit = (unsigned)INT_MAX - (list ? 2 : 1) * fit;
        if (units > limit) {
            snprintf(msg, size, "%u units of row blocks are more than a persistent grid of %u CTAs counts (%u)",
                     units, fit, limit);
            return FC_ERR_UNSUPPORTED;
        }
        plan->grid = units < fit ? units : fit;
        plan->scheduled = list;
        if (list) {
            plan->tail_heads = schedule_tail(problem, plan->m_blocks, plan->grid);
        } else if (static_tail_grid(&plan->variant)) {   /* the static tail's units: one block each */
            plan->tail_heads = static_tail(problem, &plan->variant, plan->m_blocks, fit, limit, &plan->grid);
            const unsigned pairs = (unsigned)FC_PERSISTENT_HEAD_UNITS(plan->m_blocks, 1);
            units += (unsigned)plan->tail_heads * ((unsigned)plan->m_blocks - pairs);
        }
        plan->units = units;
    }
    return status;
}

/* A paged cache takes no plain-schedule winner: its thread 0 would look each box's page up as it
 * issues it (the selector's NOTE on head_dim 64). A window or a softcap takes no winner wider than
 * 128 keys (winners are measured without them): the selector keeps them off those tiles
 * (widen_key_tiles, widen_fp8_key_tiles). */
static int takes_winner(const struct fc_problem *problem, const struct fc_variant *winner)
{
    if (packed_block_m(problem))   /* winners are measured on unpacked rows */
        return 0;
    if (winner->block_n > 128 && (problem->mask.window || problem->softcap > 0.f))
        return 0;
    return !problem->paged || specialized(winner);
}

/* The default ping-pong stays only where it still applies: warp-specialized, two or more consumers. */
static void fit_forced(struct fc_variant *v)
{
    v->pingpong = v->pingpong && specialized(v) && v->block_m >= 128;
}

static int kernel_type(const struct fc_variant *v, char *out, size_t size)
{
    /* the VARLEN, PAGED and PERSISTENT arguments only where set (PERSISTENT: neither of the others;
     * SCHEDULED_GRID and STATIC_TAIL, the last, after PERSISTENT only): the other variants' source (and
     * cache key) stays */
    if (v->q_fp8) {   /* every switch spelled out up to FP8; then PACK_GQA (off), SCHEDULED_GRID, STATIC_TAIL
                         (off) and V_TRANSPOSED, up to the last one set */
        const char *after = v->v_transposed ? (scheduled(v) ? ", false, true, false, true" : ", false, false, false, true")
                            : scheduled(v)  ? ", false, true"
                                            : "";
        return snprintf(out, size, "fc::Sm90Forward<%s, %d, %s, %d, %d, %d, %d, %s, %s, %s, %s, false, %s, true%s>",
                        fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false", v->block_m,
                        v->block_n, v->stages, v->warps, v->pingpong ? "true" : "false", v->window ? "true" : "false",
                        v->softcap ? "true" : "false", v->varlen ? "true" : "false", persistent(v) ? "true" : "false",
                        after);
    }
    if (v->quick)   /* the plain schedule, 16-bit, not paged (check): every switch spelled out up to QUICK, the last */
        return snprintf(out, size, "fc::Sm90Forward<%s, %d, %s, %d, %d, %d, %d, false, %s, %s, %s, false, false, false, "
                        "false, false, false, false, true>",
                        fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false", v->block_m,
                        v->block_n, v->stages, v->warps, v->window ? "true" : "false", v->softcap ? "true" : "false",
                        v->varlen ? "true" : "false");
    return snprintf(out, size, "fc::Sm90Forward<%s, %d, %s, %d, %d, %d, %d, %s, %s, %s%s%s%s%s%s%s>",
                    fc_dtype_traits(v->dtype)->device_type, v->head_dim, v->causal ? "true" : "false", v->block_m,
                    v->block_n, v->stages, v->warps, v->pingpong ? "true" : "false", v->window ? "true" : "false",
                    v->softcap ? "true" : "false", v->varlen ? ", true" : "", v->paged ? ", true" : "",
                    persistent(v) ? ", false, false, true" : "", scheduled(v) ? ", false, false, true" : "",
                    static_tail_grid(v) ? ", false, false, false, true" : "",
                    v->pack_gqa ? ", false, false, false, false, true" : "");
}

/* A 4-D view (head_dim, seq, head, batch) of one tensor, boxes of one swizzled line (line_bytes: the
 * swizzle, 128 bytes; V at head_dim 96, 64: fwd_sm90.cuh's V_EXACT) x box_rows. A
 * varlen batch's tensors are packed tokens (batch stride 0): one batch of every token, whose
 * sequences the kernel finds through cu_seqlens (its batch stride is then never used: the token
 * stride stands in for it, a valid TMA stride where 0 might not be). */
static enum fc_status encode(const struct fc_launch *l, struct fc_tensor_map *map, const void *base,
                             const int64_t stride[3], int seqlen, int heads, int box_rows, int line_bytes)
{
    const struct fc_problem *p = l->problem;
    const enum fc_dtype dtype = p->q_fp8 ? FC_E4M3 : p->dtype;   /* FP8 attention: q, k and v e4m3 */
    const uint64_t bytes = (uint64_t)fc_dtype_bytes(dtype);
    const uint64_t batches = p->varlen ? 1 : (uint64_t)p->batch;
    const uint64_t batch_stride = (uint64_t)(p->varlen ? stride[1] : stride[0]) * bytes;
    struct fc_tma_desc desc = {
        4,
        {(uint64_t)p->head_dim, (uint64_t)seqlen, (uint64_t)heads, batches},
        {(uint64_t)stride[1] * bytes, (uint64_t)stride[2] * bytes, batch_stride},
        {(uint32_t)(line_bytes / bytes), (uint32_t)box_rows, 1, 1},
        line_bytes,
    };
    return fc_tma_encode(l->cuda, (CUtensorMap *)map, base, dtype, &desc, l->msg, l->msg_size);
}

/* A paged cache's K or V (strides {page, token, head}) as the grouped 5-D view of
 * kernel_templates/kv_source.cuh's PagedTmaRows: (line, row in a group of 8 tokens, column block of
 * the heads' rows, group of 8 tokens in the page, page), boxes of (line, 8, a head's column blocks,
 * box_rows / 8, 1): every column block of box_rows tokens in one copy, inside one page (box_rows
 * divides page_size). The column blocks are 128 bytes apart, across heads too (groupable: head
 * stride = head_dim), or, one a head, the heads themselves at their stride. */
static enum fc_status encode_pages(const struct fc_launch *l, struct fc_tensor_map *map, const void *base,
                                   const int64_t stride[3], int box_rows)
{
    const struct fc_problem *p = l->problem;
    const uint64_t bytes = (uint64_t)fc_dtype_bytes(p->dtype), line = SWIZZLE_BYTES / bytes;
    const uint64_t blocks = (uint64_t)p->head_dim / line, token = (uint64_t)stride[1] * bytes;
    struct fc_tma_desc desc = {
        5,
        {line, 8, blocks * (uint64_t)p->heads_kv, (uint64_t)p->page_size / 8, (uint64_t)p->num_pages},
        {token, blocks > 1 ? SWIZZLE_BYTES : (uint64_t)stride[2] * bytes, 8 * token, (uint64_t)stride[0] * bytes},
        {(uint32_t)line, 8, (uint32_t)blocks, (uint32_t)box_rows / 8, 1},
        SWIZZLE_BYTES,
    };
    return fc_tma_encode(l->cuda, (CUtensorMap *)map, base, p->dtype, &desc, l->msg, l->msg_size);
}

/* GQA-packed rows: Q as a 5-D view (head_dim, query head of the group, K/V head, query row, batch),
 * boxes of (one swizzled line, the group's q_per_kv heads, 1, 64 / q_per_kv query rows, 1): a box's
 * lines are a consumer warpgroup's rows in fwd_sm90.cuh's order (query row x q_per_kv + head). */
static enum fc_status encode_packed_q(const struct fc_launch *l, struct fc_tensor_map *map)
{
    const struct fc_problem *p = l->problem;
    const uint64_t bytes = (uint64_t)fc_dtype_bytes(p->dtype), r = (uint64_t)(p->heads_q / p->heads_kv);
    const uint64_t head = (uint64_t)p->q_stride[2] * bytes;
    struct fc_tma_desc desc = {
        5,
        {(uint64_t)p->head_dim, r, (uint64_t)p->heads_kv, (uint64_t)p->seqlen_q, (uint64_t)p->batch},
        {head, r * head, (uint64_t)p->q_stride[1] * bytes, (uint64_t)p->q_stride[0] * bytes},
        {(uint32_t)(SWIZZLE_BYTES / bytes), (uint32_t)r, 1, (uint32_t)(Q_BOX_ROWS / r), 1},
        SWIZZLE_BYTES,
    };
    return fc_tma_encode(l->cuda, (CUtensorMap *)map, p->q, p->dtype, &desc, l->msg, l->msg_size);
}

/* FP8, v_transposed: V^T in scratch (padded_keys bytes a line, a multiple of 16: the transposer's
 * layout) as a 4-D view (key, head dim, K/V head, batch), boxes of one 128-byte line of keys x
 * head_dim lines, 128B-swizzled: a column block of the kernel's V^T slot (fwd_sm90.cuh's
 * load_transposed). */
static enum fc_status encode_transposed(const struct fc_launch *l, struct fc_tensor_map *map, CUdeviceptr vt,
                                        int padded_keys)
{
    const struct fc_problem *p = l->problem;
    const uint64_t line = (uint64_t)padded_keys, d = (uint64_t)p->head_dim;
    struct fc_tma_desc desc = {
        4,
        {line, d, (uint64_t)p->heads_kv, (uint64_t)p->batch},
        {line, d * line, (uint64_t)p->heads_kv * d * line},
        {SWIZZLE_BYTES, (uint32_t)d, 1, 1},
        SWIZZLE_BYTES,
    };
    return fc_tma_encode(l->cuda, (CUtensorMap *)map, (const void *)(uintptr_t)vt, FC_E4M3, &desc, l->msg,
                         l->msg_size);
}

_Static_assert(sizeof(struct fc_sm90_paged_args) <= FC_LAUNCH_ARGS_BYTES,
               "fc_launch_args holds fc_sm90_paged_args");

static enum fc_status kernel_args(const struct fc_launch *l, struct fc_launch_args *args)
{
    const struct fc_problem *p = l->problem;
    /* dense: its first member's first member; VARLEN: its first member */
    struct fc_sm90_paged_args *paged = (struct fc_sm90_paged_args *)args->bytes;
    struct fc_sm90_varlen_args *varlen = &paged->varlen;
    struct fc_sm90_args *a = &varlen->sm90;
    fc_launch_common_args(p, l->plan, &a->base);
    if (l->plan->variant.varlen)
        fc_launch_seqlens(p, &varlen->seqlens);
    const int block_n = l->plan->variant.block_n;
    struct page_paths paths = {block_n, block_n};
    if (l->plan->variant.paged) {
        paths = page_box_rows(&l->plan->variant, p);   /* launch_shape refused what has no path */
        fc_launch_pages(p, &paged->pages);
        paged->box_rows = paths.k;   /* 0: gathered */
        paged->v_box_rows = paths.v;
    }
    const int v_line = FC_SM90_V_LINE_BYTES(p->head_dim);   /* 64 at head_dim 96: P V at its exact width */
    enum fc_status status = l->plan->variant.pack_gqa
                                ? encode_packed_q(l, &a->q_map)
                                : encode(l, &a->q_map, p->q, p->q_stride, p->seqlen_q, p->heads_q, Q_BOX_ROWS,
                                         SWIZZLE_BYTES);
    if (status == FC_OK && !l->plan->variant.paged &&
        (status = encode(l, &a->k_map, p->k, p->k_stride, p->seqlen_k, p->heads_kv, block_n, SWIZZLE_BYTES)) ==
            FC_OK) {
        if (l->plan->variant.v_transposed)   /* V^T's map, over the scratch launch() fills (transpose_ahead) */
            memset(&a->v_map, 0, sizeof a->v_map);
        else
            status = encode(l, &a->v_map, p->v, p->v_stride, p->seqlen_k, p->heads_kv, block_n, v_line);
    }
    /* paged: a gathered tensor's map is never read (its rows come through the page table): zeros,
     * not encoded, a driver call saved per launch */
    if (l->plan->variant.paged) {
        if (!paths.k)
            memset(&a->k_map, 0, sizeof a->k_map);
        else if (status == FC_OK)
            status = encode_pages(l, &a->k_map, p->k, p->k_stride, paths.k);
        if (!paths.v)
            memset(&a->v_map, 0, sizeof a->v_map);
        else if (status == FC_OK)
            status = encode_pages(l, &a->v_map, p->v, p->v_stride, paths.v);
    }
    if (status != FC_OK)
        return status;
    a->next_block = NULL;   /* launch() gives a scheduled grid its counter */
    a->tail_heads = l->plan->tail_heads;
    a->blocks = (int)l->plan->units;   /* launch_shape checked it fits an int */
    args->params[0] = a;
    return FC_OK;
}

/* The module's second kernel (v_transposed variants): V's transposer (fwd_sm90.cuh's
 * transpose_v_ahead). Others have none: nothing is appended, their source stays. */
#define VT_THREADS 256
#define VT_KEYS 64   /* keys a transposer CTA */
static int second_source(const struct fc_variant *v, char *out, size_t size)
{
    if (v->pack_gqa)   /* the split-KV combine (src/split.c), for the splits packed_grid chooses */
        return fc_split_combine_source(v, SECOND_ENTRY, "fc_sm90_args", ".base", out, size);
    if (!v->v_transposed) {
        if (size)
            out[0] = '\0';
        return 0;
    }
    return snprintf(out, size,
                    "extern \"C\" __global__ void __launch_bounds__(%d)\n"
                    SECOND_ENTRY "(const __grid_constant__ fc_sm90_vt_args args)\n"
                    "{\n"
                    "    fc::transpose_v_ahead<%d>(args);\n"
                    "}\n",
                    VT_THREADS, v->head_dim);
}

/* v_transposed: V^T into a stream-ordered scratch buffer (src/scratch.c) by the module's second kernel,
 * then the attention kernel, whose V map is the buffer's; the buffer goes back to the pool after it. */
static enum fc_status transpose_ahead(const struct fc_launch *l, struct fc_launch_args *args, CUdeviceptr *vt)
{
    const struct fc_problem *p = l->problem;
    const int64_t padded64 = ((int64_t)p->seqlen_k + 15) / 16 * 16;   /* V^T's lines: whole 16-byte chunks */
    size_t bytes;
    if (padded64 > INT_MAX || __builtin_mul_overflow((size_t)p->batch * (size_t)p->heads_kv,
                                                     (size_t)p->head_dim * (size_t)padded64, &bytes)) {
        snprintf(l->msg, l->msg_size, "V^T of batch %d x heads_kv %d x head_dim %d x %lld keys is more than the "
                 "transposer takes (lines of up to INT_MAX keys, a size_t of bytes)", p->batch, p->heads_kv,
                 p->head_dim, (long long)padded64);
        return FC_ERR_UNSUPPORTED;
    }
    const int padded = (int)padded64;
    const struct fc_cuda_api *cu = l->cuda;
    CUresult r = fc_scratch_alloc(l->scratch, cu, vt, bytes, l->stream);
    if (r != CUDA_SUCCESS)
        return fc_cuda_fail(cu, r, "allocating V^T's scratch", l->msg, l->msg_size);
    struct fc_sm90_vt_args t = {p->v, p->v_stride[1], p->v_stride[2], p->v_stride[0], (void *)(uintptr_t)*vt,
                                p->seqlen_k, padded, p->heads_kv};
    void *params[] = {&t};
    CUfunction function = l->kernel->second;
    r = cu->cuLaunchKernel(function, (unsigned)((padded + VT_KEYS - 1) / VT_KEYS), (unsigned)p->heads_kv,
                           (unsigned)p->batch, VT_THREADS, 1, 1, 0, l->stream, params, NULL);
    enum fc_status status = r == CUDA_SUCCESS ? FC_OK : fc_cuda_fail(cu, r, "cuLaunchKernel (V's transposer)",
                                                                     l->msg, l->msg_size);
    if (status == FC_OK)
        status = encode_transposed(l, &((struct fc_sm90_args *)args->bytes)->v_map, *vt, padded);
    return status;
}

/* A scheduled grid takes its blocks from a counter of the context's (src/counters.c: its stream's,
 * zero when the kernel starts, zeroed again by the kernel's last take); without one (none left, or
 * fcjit's host-time loop, which launches kernel_args alone) the kernel takes its static units of two
 * blocks. A v_transposed variant's V^T comes first (transpose_ahead; fcjit's host-time loop launches
 * none of it). */
static enum fc_status launch(const struct fc_launch *l)
{
    const struct fc_plan *plan = l->plan;
    struct fc_launch_args args;
    enum fc_status status = kernel_args(l, &args);
    if (status != FC_OK)
        return status;
    struct fc_sm90_args *a = (struct fc_sm90_args *)args.bytes;   /* the prefix of every form's argument */
    if (plan->scheduled && l->counters) {
        CUdeviceptr counter;
        if ((status = fc_counters_take(l->counters, l->cuda, l->stream, &counter, l->msg, l->msg_size)) != FC_OK)
            return status;
        a->next_block = (int *)(uintptr_t)counter;
    }
    CUdeviceptr vt = 0;
    if (plan->variant.v_transposed)
        status = transpose_ahead(l, &args, &vt);
    if (status == FC_OK)
        status = plan->variant.pack_gqa ? fc_split_launch(l, &args, &a->base)
                                        : fc_launch_kernel(l, l->kernel->function, plan->grid, plan->threads,
                                                           plan->smem_bytes, args.params, "cuLaunchKernel");
    if (vt) {
        const CUresult r = l->cuda->cuMemFreeAsync(vt, l->stream);
        if (r != CUDA_SUCCESS && status == FC_OK)
            status = fc_cuda_fail(l->cuda, r, "cuMemFreeAsync (V^T's scratch)", l->msg, l->msg_size);
    }
    return status;
}

/* The quick first call's kernel: the plain schedule (one warpgroup, 64 rows), which NVRTC compiles in
 * a third to a half of the warp-specialized one's time (no producer, no peeled tiles, no persistent
 * loop: PERF_NOTES v23.11, v24), in its quick form (the variant's quick, fwd_sm90.cuh's QUICK: P V 64
 * columns a WGMMA, O by 4-byte stores) with 32-key tiles: the fastest to compile (NVRTC's time on the
 * H100's host at head_dim 64 / 128 / 256 about 0.85 / 0.66-0.83 / 0.62 of the plain 64-key kernel's, the
 * first calls 0.78x, 0.21-0.42 s: PERF_NOTES v37.2; 64-key tiles had taken 20%, 23% and 7% off the
 * planned tile's at 64, 192 and 256, v35.2). FP8 attention and paged K/V take the warp-specialized
 * schedule only. */
static int quick_override(const struct fc_variant *v, struct fc_plan_override *quick)
{
    if (!specialized(v) || v->q_fp8 || v->paged)
        return 0;
    memset(quick, 0, sizeof *quick);
    quick->active = 1;
    quick->family = FC_KERNEL_SM90;
    quick->block_m = 64;
    quick->block_n = 32;
    quick->warps = 4;
    quick->stages = 2;
    quick->pingpong = 1;   /* off */
    quick->pack_gqa = 1;   /* off */
    quick->quick = 2;      /* on */
    return 1;
}

const struct fc_family fc_family_sm90 = {
    .id = FC_KERNEL_SM90,
    .name = "sm90",
    .template_file = "fwd_sm90.cuh",
    .args_type = "fc_sm90_args",
    .varlen_args_type = "fc_sm90_varlen_args",
    .paged_args_type = "fc_sm90_paged_args",
    .tuned = 1,
    .pingpong_option = 1,
    .pack_gqa_option = 1,
    .v_transposed_option = 1,
    .second_entry = SECOND_ENTRY,
    .splits_option = 1,
    .fp8_kv_why_not = "the Hopper kernel's WGMMA reads K and V in q's 16-bit type; FP8 K/V go to the decode or sm80 kernel (sm_89 and later)",
    .fp8_q = 1,
    .defaults = defaults,
    .check = check,
    .smem_bytes = smem_bytes,
    .select = select_for,
    .launch_shape = launch_shape,
    .takes_winner = takes_winner,
    .fit_forced = fit_forced,
    .quick_override = quick_override,
    .kernel_type = kernel_type,
    .second_source = second_source,
    .kernel_args = kernel_args,
    .launch = launch,
};
