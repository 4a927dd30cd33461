/* The selector: problem + target -> variant and launch shape. No GPU, no compile, no allocation. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_args.h"
#include "plan_internal.h"

#define GRID_X_MAX INT_MAX   /* gridDim.x limit on sm_30 and later */
#define SHORT_KEYS 1024      /* up to this many keys, causal head_dim 128 takes the small sm90 tiles */
#define LONG_KEYS_D64 8192   /* from this many keys, head_dim 64 takes three consumer warpgroups */
#define DECODE_ROWS 16       /* (query heads per K/V head) x seqlen_q up to this: the decode kernel */
#define DEFAULT_SM_COUNT 132 /* H100 SXM, H200 */
#define MAX_SPLITS 128
#define MIN_SPLIT_TILES 4    /* keys per split: at least this many tiles, to amortize the prologue */

int fc_plan_override_parse(const char *text, struct fc_plan_override *out)
{
    memset(out, 0, sizeof *out);
    char family[32] = "";
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    if (n == 0 || n >= sizeof family)
        return -1;
    memcpy(family, text, n);
    if (fc_kernel_family_parse(family, &out->family))
        return -1;
    for (const char *p = colon ? colon + 1 : ""; *p;) {
        char *end;
        long value = strtol(p + 1, &end, 10);
        if (end == p + 1 || value < 0 || value > 1024 || (value == 0 && *p != 'p'))
            return -1;
        if (*p == 'm')
            out->block_m = (int)value;
        else if (*p == 'n')
            out->block_n = (int)value;
        else if (*p == 'w')
            out->warps = (int)value;
        else if (*p == 's')
            out->stages = (int)value;
        else if (*p == 'p' && value <= 1)
            out->pingpong = (int)value + 1;
        else if (*p == 'k' && out->family == FC_KERNEL_DECODE)
            out->splits = (int)value;
        else
            return -1;
        p = end;
    }
    out->active = 1;
    return 0;
}

/* The family's defaults for the problem (already fitted to the arch's shared memory). */
static int choose_tiles(struct fc_variant *v)
{
    fc_variant_defaults(v);
    return fc_variant_check(v, NULL, 0);
}

static void base_variant(const struct fc_problem *problem, int arch, int arch_specific, struct fc_variant *v)
{
    memset(v, 0, sizeof *v);   /* the kernel table compares variants bytewise */
    v->dtype = problem->dtype;
    v->head_dim = problem->head_dim;
    v->causal = problem->causal;
    v->arch = arch;
    v->arch_specific = arch_specific;
}

/* The selector proper: the fastest family that takes the problem, and why. */
static const char *select_family(const struct fc_problem *problem, int arch, struct fc_variant *v)
{
    const int d = problem->head_dim;
    const long long packed_rows = (long long)problem->seqlen_q * (problem->heads_q / problem->heads_kv);
    if (arch >= 80 && d % 16 == 0 && packed_rows <= DECODE_ROWS) {
        v->family = FC_KERNEL_DECODE;
        if (choose_tiles(v) == 0)
            return "decode kernel: the query heads of a K/V head and their rows fit one 16-row tile, so each K/V "
                   "element read serves them all; keys split across CTAs to fill the GPU";
    }
    if (arch == 90 && v->arch_specific && d % 64 == 0 && d <= 256) {   /* 64-wide swizzle blocks */
        v->family = FC_KERNEL_SM90;
        if (choose_tiles(v) == 0 && d == 128 && problem->causal && problem->seqlen_k <= SHORT_KEYS) {
            /* NOTE: few causal key tiles leave too little to hide a 165 KB CTA's prologue: one
             * consumer warpgroup x 64 keys (82 KB, two CTAs per SM) measured faster on the H200
             * at 512 keys (264 vs 226 TF/s) and 1k (357 vs 341); slower from 2k on (428 vs 451). */
            v->block_m = 64;
            v->warps = 8;
            v->block_n = 64;
            v->pingpong = 0;   /* one consumer: nobody to take turns with */
        } else if (d == 64 && problem->seqlen_k >= LONG_KEYS_D64 && problem->seqlen_q >= 1024) {
            /* NOTE: three consumer warpgroups sharing each K/V tile: faster from 8k keys on (H200,
             * 16k: 520 vs 486 TF/s non-causal, 489 vs 463 causal), slower below (2k: 428 vs 455). */
            v->block_m = 192;
            v->warps = 16;
            v->block_n = 128;
            v->pingpong = 0;
        }
        if (fc_variant_check(v, NULL, 0) == 0)
            return "sm90 kernel: TMA + WGMMA, warp-specialized from head_dim 128 (1.3-2.6x the sm80 kernel in "
                   "the H200 sweep)";
    }
    if (arch >= 80 && problem->head_dim % 16 == 0) {
        v->family = FC_KERNEL_SM80;
        if (choose_tiles(v) == 0)
            return arch >= 90
                       ? "sm80 kernel: mma.sync tensor cores (the Hopper kernel takes multiples of 64 only, so far)"
                       : "sm80 kernel: mma.sync tensor cores, cp.async double-buffered K/V";
        v->family = FC_KERNEL_REFERENCE;
        choose_tiles(v);
        return "reference kernel: no sm80 tile configuration fits this arch's shared memory";
    }
    v->family = FC_KERNEL_REFERENCE;
    choose_tiles(v);
    if (arch < 80)
        return "reference kernel: the tensor-core kernels need sm_80 or later (bf16 mma.sync)";
    return "reference kernel: head_dim is not a multiple of 16, which the tensor-core kernels need";
}

/* Splits of the decode kernel: the fewest whose last wave of CTAs is nearly as full as the best
 * (FlashAttention's wave-efficiency rule), with at least MIN_SPLIT_TILES tiles of keys each. */
static void choose_splits(const struct fc_problem *problem, const struct fc_variant *v, int sm_count,
                          struct fc_plan *plan)
{
    const int smem = fc_variant_smem_bytes(v), limit = fc_arch_smem_limit(v->arch);
    const int per_sm = smem > 0 && limit / smem > 1 ? limit / smem : 1;
    const long long slots = (long long)(sm_count > 0 ? sm_count : DEFAULT_SM_COUNT) * per_sm;
    const long long blocks = (long long)problem->batch * problem->heads_kv;
    const int tiles = (problem->seqlen_k + v->block_n - 1) / v->block_n;
    int most = tiles / MIN_SPLIT_TILES;
    most = most < 1 ? 1 : most > MAX_SPLITS ? MAX_SPLITS : most;
    double efficiency[MAX_SPLITS + 1], best = 0.;
    for (int s = 1; s <= most; s++) {
        const long long ctas = blocks * s, waves = (ctas + slots - 1) / slots;
        efficiency[s] = (double)ctas / (double)(waves * slots);
        best = efficiency[s] > best ? efficiency[s] : best;
    }
    int splits = 1;
    while (splits < most && efficiency[splits] < 0.85 * best)
        splits++;
    if (plan->requested_splits > 0)   /* forced: as asked, but no split without a tile */
        splits = plan->requested_splits < tiles ? plan->requested_splits : tiles > 0 ? tiles : 1;
    const int tiles_each = (tiles + splits - 1) / splits;
    plan->split_keys = tiles_each * v->block_n;
    plan->splits = tiles_each > 0 ? (tiles + tiles_each - 1) / tiles_each : 1;   /* no empty split */
}

enum fc_status fc_plan_select(const struct fc_problem *problem, int arch, int arch_specific, int sm_count,
                              const struct fc_plan_override *override, struct fc_plan *plan,
                              char *msg, size_t size)
{
    memset(plan, 0, sizeof *plan);
    struct fc_variant *v = &plan->variant;
    base_variant(problem, arch, arch_specific, v);
    if (override && override->active) {
        v->family = override->family;
        fc_variant_defaults(v);
        v->block_m = override->block_m ? override->block_m : v->block_m;
        v->block_n = override->block_n ? override->block_n : v->block_n;
        v->warps = override->warps ? override->warps : v->warps;
        v->stages = override->stages ? override->stages : v->stages;
        plan->requested_splits = override->splits;
        if (override->pingpong)
            v->pingpong = override->pingpong - 1;
        else   /* the default where it still applies: warp-specialized, two or more consumers */
            v->pingpong = v->pingpong && fc_variant_specialized(v) && v->block_m >= 128;
        plan->reason = "forced by FC_FORCE_VARIANT";
    } else {
        plan->reason = select_family(problem, arch, v);
    }
    return fc_plan_launch_shape(problem, sm_count, plan, msg, size);
}

enum fc_status fc_plan_launch_shape(const struct fc_problem *problem, int sm_count, struct fc_plan *plan, char *msg,
                                    size_t size)
{
    const struct fc_variant *v = &plan->variant;
    char why[256];
    if (fc_variant_check(v, why, sizeof why)) {
        snprintf(msg, size, "no kernel for this problem on sm_%d: %s", v->arch, why);
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
    plan->splits = 1;
    if (v->family == FC_KERNEL_DECODE) {
        choose_splits(problem, v, sm_count, plan);
        grid = (long long)plan->splits * problem->heads_kv * problem->batch;
        if (grid > GRID_X_MAX) {
            snprintf(msg, size, "batch * heads_kv * splits = %lld blocks: more than one launch takes (%d)", grid,
                     GRID_X_MAX);
            return FC_ERR_UNSUPPORTED;
        }
        plan->grid = (unsigned)grid;
        plan->m_blocks = 1;
    }
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
    a->splits = plan->splits > 0 ? plan->splits : 1;
    a->split_keys = plan->split_keys;
}
