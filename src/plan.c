/* Planning: problem + target -> variant, reason and launch shape. No GPU, no compile, no allocation.
 * The families decide what they take and how (src/family_*.c); this file only asks them, in the
 * table's order, and applies a forced variant or a tuned winner. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_internal.h"
#include "plan_internal.h"

#define GRID_X_MAX INT_MAX   /* gridDim.x limit on sm_30 and later */
#define OVERRIDE_VALUE_MAX 1024

int fc_plan_override_parse(const char *text, struct fc_plan_override *out)
{
    memset(out, 0, sizeof *out);
    char name[32] = "";
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    if (n == 0 || n >= sizeof name)
        return -1;
    memcpy(name, text, n);
    if (fc_kernel_family_parse(name, &out->family))
        return -1;
    const struct fc_family *family = fc_family_of(out->family);
    for (const char *p = colon ? colon + 1 : ""; *p;) {
        char *end;
        long value = strtol(p + 1, &end, 10);
        if (end == p + 1 || value < 0 || value > OVERRIDE_VALUE_MAX ||
            (value == 0 && *p != 'p' && *p != 'g' && *p != 'v' && *p != 'q'))
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
        else if (*p == 'g' && value <= 1 && family->pack_gqa_option)
            out->pack_gqa = (int)value + 1;
        else if (*p == 'v' && value <= 1 && family->v_transposed_option)
            out->v_transposed = (int)value + 1;
        else if (*p == 'q' && value <= 1 && family->quick_override)
            out->quick = (int)value + 1;
        else if (*p == 'k' && family->splits_option)
            out->splits = (int)value;
        else
            return -1;
        p = end;
    }
    out->active = 1;
    return 0;
}

static void base_variant(const struct fc_problem *problem, const struct fc_target *target, struct fc_variant *v)
{
    memset(v, 0, sizeof *v);   /* the kernel table compares variants bytewise */
    v->dtype = problem->dtype;
    v->head_dim = problem->head_dim;
    v->causal = problem->mask.causal;
    v->window = problem->mask.window;
    v->softcap = problem->softcap > 0.f;
    v->varlen = fc_problem_per_sequence(problem);
    v->paged = problem->paged;
    v->kv_fp8 = problem->kv_fp8;
    v->q_fp8 = problem->q_fp8;
    v->arch = target->arch;
    v->arch_specific = target->arch_specific;
}

/* Whether the family takes the problem's FP8 inputs, one rule for every family (the table says):
 * FP8 attention needs fp8_q, an FP8 cache beside a 16-bit q fp8_kv. NULL if it does, else why not. */
static const char *fp8_why_not(const struct fc_problem *problem, const struct fc_family *family)
{
    if (problem->q_fp8)
        return family->fp8_q ? NULL : family->fp8_q_why_not;
    if (problem->kv_fp8)
        return family->fp8_kv ? NULL : family->fp8_kv_why_not;
    return NULL;
}

/* The heuristic: the first family of the table that takes the problem. The reference family, last,
 * takes every valid problem. */
static void select_family(const struct fc_problem *problem, const struct fc_target *target, struct fc_plan *plan)
{
    const char *declined = NULL, *declined_fp8 = NULL;   /* a family's own reason wins over the FP8 rule's */
    for (int i = 0; fc_families[i]; i++) {
        if (!fc_families[i]->select)   /* not an attention kernel (merge) */
            continue;
        base_variant(problem, target, &plan->variant);
        plan->variant.family = fc_families[i]->id;
        const char *fp8_declined = fp8_why_not(problem, fc_families[i]);
        if (fp8_declined) {
            declined_fp8 = declined_fp8 ? declined_fp8 : fp8_declined;
            continue;
        }
        const char *why_not = NULL;
        const char *reason = fc_families[i]->select(problem, target, &plan->variant, &why_not);
        if (reason) {
            plan->reason = reason;
            plan->declined = declined ? declined : declined_fp8;
            return;
        }
        declined = why_not ? why_not : declined;
    }
}

static void apply_override(const struct fc_problem *problem, const struct fc_plan_override *o, struct fc_plan *plan)
{
    struct fc_variant *v = &plan->variant;
    v->family = o->family;
    const struct fc_family *family = fc_family_of(v->family);
    /* a family whose tiles follow block_m (decode's rows) sees it first */
    v->block_m = o->block_m ? o->block_m : family && family->forced_block_m ? family->forced_block_m(problem) : 0;
    v->pack_gqa = o->pack_gqa ? o->pack_gqa - 1 : 0;   /* before the defaults, whose tiles follow it */
    v->v_transposed = o->v_transposed ? o->v_transposed - 1 : 0;
    v->quick = o->quick ? o->quick - 1 : 0;
    fc_variant_defaults(v);
    v->block_m = o->block_m ? o->block_m : v->block_m;
    v->block_n = o->block_n ? o->block_n : v->block_n;
    v->warps = o->warps ? o->warps : v->warps;
    v->stages = o->stages ? o->stages : v->stages;
    plan->requested_splits = o->splits;
    if (o->pingpong)
        v->pingpong = o->pingpong - 1;
    else if (family && family->fit_forced)
        family->fit_forced(v);
    plan->reason = "forced by FC_FORCE_VARIANT";
}

/* Default grid: one CTA per block_m query rows of each (batch, query head), 64-bit and checked. */
enum fc_status fc_plan_row_block_grid(const struct fc_problem *problem, struct fc_plan *plan, char *msg, size_t size)
{
    return fc_plan_block_grid(problem, plan, plan->variant.block_m, problem->heads_q, "heads_q", msg, size);
}

enum fc_status fc_plan_block_grid(const struct fc_problem *problem, struct fc_plan *plan, int rows, int heads,
                                  const char *heads_name, char *msg, size_t size)
{
    /* varlen: blocks for the longest sequence; those past a shorter one's rows exit at once */
    const int64_t m_blocks = ((int64_t)problem->max_seqlen_q + rows - 1) / rows;
    int64_t grid;
    if (m_blocks > INT_MAX || __builtin_mul_overflow(m_blocks, (int64_t)heads, &grid) ||
        __builtin_mul_overflow(grid, (int64_t)problem->batch, &grid) || grid > GRID_X_MAX) {
        snprintf(msg, size, "batch * %s * ceil(max_seqlen_q / %d) blocks (%d * %d * %lld) is more than one launch "
                 "takes (%d)", heads_name, rows, problem->batch, heads, (long long)m_blocks, GRID_X_MAX);
        return FC_ERR_UNSUPPORTED;
    }
    plan->m_blocks = (int)m_blocks;
    plan->grid = (unsigned)grid;
    plan->splits = 1;
    plan->split_keys = 0;
    plan->units = 0;
    plan->scheduled = 0;
    plan->tail_heads = 0;
    return FC_OK;
}

/* Checks plan->variant and fills the rest of the plan from it. */
static enum fc_status launch_shape(const struct fc_problem *problem, const struct fc_target *target,
                                   struct fc_plan *plan, char *msg, size_t size)
{
    const struct fc_variant *v = &plan->variant;
    char why[256];
    if (fc_variant_check(v, why, sizeof why)) {
        snprintf(msg, size, "no kernel for this problem on sm_%d: %s", v->arch, why);
        return FC_ERR_UNSUPPORTED;
    }
    const struct fc_family *family = fc_family_of(v->family);
    enum fc_status status = family->launch_shape ? family->launch_shape(problem, target, plan, msg, size)
                                                 : fc_plan_row_block_grid(problem, plan, msg, size);
    if (status != FC_OK)
        return status;
    plan->threads = (unsigned)v->warps * 32;
    plan->smem_bytes = (unsigned)fc_variant_smem_bytes(v);
    return FC_OK;
}

/* The nearest bucket's winner replaces the heuristic's choice where the family is tuned. */
static void apply_tuned(const struct fc_problem *problem, const struct fc_target *target,
                        const struct fc_tuned_table *tuned, struct fc_plan *plan)
{
    const struct fc_family *family = fc_family_of(plan->variant.family);
    const struct fc_tuned *winner = family && family->tuned && tuned ? fc_tuned_find(tuned, problem) : NULL;
    /* the bucket's dtype (q's: FP8 attention's is e4m3), head_dim and causality are the problem's.
     * NOTE: FP8 attention takes only an FP8-attention winner, and a 16-bit problem never one: the
     * kernels differ (WGMMA's e4m3 form, V transposed in shared memory), so their tiles' times do too */
    if (!winner || winner->variant.q_fp8 != problem->q_fp8)
        return;
    /* NOTE: only a family that takes the problem: buckets know no paging, so a paged problem's bucket
     * would hand the heuristic's sm80 choice (pages the sm90 kernel declines) to an sm90 winner */
    const struct fc_family *winner_family = fc_family_of(winner->variant.family);
    struct fc_variant scratch;
    base_variant(problem, target, &scratch);
    scratch.family = winner->variant.family;
    const char *why_not = NULL;
    if (!winner_family || !winner_family->select || fp8_why_not(problem, winner_family) ||
        !winner_family->select(problem, target, &scratch, &why_not))
        return;
    if (winner_family->takes_winner && !winner_family->takes_winner(problem, &winner->variant))
        return;
    struct fc_plan replaced = {.variant = winner->variant, .reason = winner->reason};
    /* NOTE: winners are measured without a window, a softcap or paging, and FP8 attention's with a bf16
     * out: the problem's switches and output type are added to the winner's tiles, which take them as
     * they are (fc_plan_explain says so) */
    replaced.variant.dtype = plan->variant.dtype;
    replaced.variant.window = plan->variant.window;
    replaced.variant.softcap = plan->variant.softcap;
    replaced.variant.varlen = plan->variant.varlen;
    replaced.variant.paged = plan->variant.paged;
    replaced.variant.kv_fp8 = plan->variant.kv_fp8;
    replaced.variant.q_fp8 = plan->variant.q_fp8;
    replaced.variant.v_transposed = plan->variant.v_transposed;   /* the heuristic's rule (FP8: the keys') ... */
    if (replaced.variant.v_transposed && fc_variant_check(&replaced.variant, NULL, 0))
        replaced.variant.v_transposed = 0;   /* ... where the winner's tiles read V^T (sm90: 128 keys or more) */
    char why[256];
    if (launch_shape(problem, target, &replaced, why, sizeof why) != FC_OK)
        return;   /* a winner this problem's launch cannot take: the heuristic's choice stays */
    replaced.heuristic = plan->variant;
    replaced.tuned = winner;
    *plan = replaced;
}

enum fc_status fc_plan_make(const struct fc_problem *problem, const struct fc_target *target,
                            const struct fc_plan_override *forced, const struct fc_tuned_table *tuned,
                            struct fc_plan *plan, char *msg, size_t size)
{
    memset(plan, 0, sizeof *plan);
    base_variant(problem, target, &plan->variant);
    if (forced && forced->active)
        apply_override(problem, forced, plan);
    else
        select_family(problem, target, plan);
    plan->heuristic = plan->variant;
    enum fc_status status = launch_shape(problem, target, plan, msg, size);
    if (status == FC_OK && !(forced && forced->active))
        apply_tuned(problem, target, tuned, plan);
    return status;
}

int fc_plan_quick(const struct fc_problem *problem, const struct fc_target *target, const struct fc_plan *plan,
                  struct fc_plan *quick)
{
    const struct fc_family *family = fc_family_of(plan->variant.family);
    struct fc_plan_override tiles;
    char why[256];
    if (!family || !family->quick_override || !family->quick_override(&plan->variant, &tiles) ||
        fc_plan_make(problem, target, &tiles, NULL, quick, why, sizeof why) != FC_OK ||
        memcmp(&quick->variant, &plan->variant, sizeof plan->variant) == 0)
        return 0;
    quick->reason = "the quick first call's kernel: it compiles in a fifth to a third of the planned kernel's time, "
                    "and serves the calls until that one, compiling on the context's worker thread, is ready";
    return 1;
}

void fc_plan_explain(const struct fc_plan *plan, char *out, size_t size)
{
    const char *reason = plan->reason ? plan->reason : "";
    const struct fc_tuned *tuned = plan->tuned;
    if (!tuned) {
        if (plan->declined)
            snprintf(out, size, "%s (%s)", reason, plan->declined);
        else
            snprintf(out, size, "%s", reason);
        return;
    }
    const char *switches = plan->variant.window || plan->variant.softcap || plan->variant.paged
                               ? "; measured without a window, softcap or page table, its tiles run this one with them"
                               : "";
    if (plan->variant.dtype != tuned->variant.dtype)   /* FP8 attention with another out than the bucket's */
        snprintf(out, size, "%s%s; measured with a %s out, its tiles run this %s one", reason, switches,
                 fc_dtype_name(tuned->variant.dtype), fc_dtype_name(plan->variant.dtype));
    else
        snprintf(out, size, "%s%s", reason, switches);
}

void fc_plan_utility(struct fc_plan *plan, enum fc_kernel_family family, enum fc_dtype dtype, int head_dim,
                     const struct fc_target *target, const char *reason)
{
    memset(plan, 0, sizeof *plan);   /* the kernel table compares variants bytewise */
    plan->variant.family = family;
    plan->variant.dtype = dtype;
    plan->variant.head_dim = head_dim;
    plan->variant.arch = target->arch;
    plan->variant.arch_specific = target->arch_specific;
    fc_variant_defaults(&plan->variant);
    plan->threads = (unsigned)plan->variant.warps * 32;
    plan->reason = reason;
}
