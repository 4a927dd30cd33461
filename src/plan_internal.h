/* Internal: planning, in one place. Answers both "is this supported?" and "which kernel, and
 * why?" for fc_attention_forward, fc_attention_plan, fcjit and the tuner alike: the selector's
 * heuristic (the first family of the table that takes the problem), a forced variant, or the
 * tuned winner of the problem's bucket, then the launch shape. Needs no GPU, no tensors. */
#ifndef FC_PLAN_INTERNAL_H
#define FC_PLAN_INTERNAL_H

#include <stddef.h>

#include "problem_internal.h"
#include "tuning_internal.h"
#include "variant_internal.h"

/** What a plan is made for: a device, or the sm_90a H100 a device-less context assumes. */
struct fc_target {
    int arch, arch_specific;   /* e.g. 90 and 1: sm_90a */
    int sm_count;              /* 0: unknown, planned as an H100's 132 (it only sets splits) */
};

/** A forced choice for tuning and debugging (FC_FORCE_VARIANT): family, and tiles where nonzero. */
struct fc_plan_override {
    int active;
    enum fc_kernel_family family;
    int block_m, block_n, warps, stages;   /* 0: the family default */
    int pingpong;                          /* 0: the default, 1: off, 2: on */
    int pack_gqa;                          /* as pingpong: GQA-packed rows (the sm90 kernel's g0 / g1) */
    int v_transposed;                      /* as pingpong: FP8's V transposed ahead (the sm90 kernel's v0 / v1) */
    int quick;                             /* as pingpong: the quick first call's kernel (the sm90 kernel's q0 / q1) */
    int splits;                            /* families that split keys: CTAs per (batch, K/V head); 0: chosen */
};

/** Parses "reference", "sm80", "sm90:m128n128s2w12p1g1" or "decode:n64w4k8" (any of m, n, s, w, p0/p1, g0/g1,
 * v0/v1, q0/q1 and k, the splits of a family that splits keys, optional). 0 on success. */
int fc_plan_override_parse(const char *text, struct fc_plan_override *out);

struct fc_plan {
    struct fc_variant variant;
    unsigned grid;          /* CTAs */
    unsigned threads;       /* per CTA */
    unsigned smem_bytes;    /* dynamic shared memory */
    int m_blocks;           /* query row blocks per (batch, head); GQA-packed rows: per (batch, K/V head) */
    int splits, split_keys; /* CTAs per (batch, K/V head) along the keys and keys each; else 1, 0 */
    int requested_splits;   /* the splits forced (fewer if there are too few tiles); 0: chosen */
    unsigned units;         /* a persistent grid's units of row blocks, which its CTAs take in turn; 0: none */
    int scheduled;          /* a persistent grid whose CTAs take row blocks from a counter (fwd_sm90.cuh's
                               run_scheduled); 0: static units */
    int tail_heads;         /* a causal persistent grid's last (batch, head)s (fc_sm90_args), whose blocks come
                               heaviest first (scheduled: from the counter; static: one a unit); 0: none */
    const char *reason;     /* a constant sentence: why this kernel */
    const char *declined;   /* why the family before it in the table did not take the problem, or NULL */
    struct fc_variant heuristic;   /* the selector's own choice: the variant, unless a winner replaced it */
    const struct fc_tuned *tuned;  /* the tuned winner that replaced it, or NULL */
};

/**
 * Plans a validated problem (shape rules are enough: no tensor is read) on a target: the forced
 * variant if `forced` is active, else the selector's heuristic, which the nearest bucket's winner
 * in `tuned` (NULL: none) replaces where the family is tuned; then grid, threads, shared memory
 * and splits.
 * @return FC_OK or FC_ERR_UNSUPPORTED with the reason in msg
 */
enum fc_status fc_plan_make(const struct fc_problem *problem, const struct fc_target *target,
                            const struct fc_plan_override *forced, const struct fc_tuned_table *tuned,
                            struct fc_plan *plan, char *msg, size_t msg_size);

/**
 * The quick first call's plan for a planned problem (src/context.c's fc_context_forward_kernel): the
 * family's kernel that compiles in a fraction of the planned one's time (its quick_override), planned for
 * the same problem. 1 and *quick if there is one; 0 if the family has none or it does not take the problem.
 */
int fc_plan_quick(const struct fc_problem *problem, const struct fc_target *target, const struct fc_plan *plan,
                  struct fc_plan *quick);

/** The plan's reason as one sentence: why this kernel, and why the one before it did not take it. */
void fc_plan_explain(const struct fc_plan *plan, char *out, size_t size);

/** The plan of a family that is not an attention kernel (merge, quantize: their public calls plan
 *  themselves): its default variant for dtype and head_dim on the target, its threads, and reason;
 *  the grid is the caller's. */
void fc_plan_utility(struct fc_plan *plan, enum fc_kernel_family family, enum fc_dtype dtype, int head_dim,
                     const struct fc_target *target, const char *reason);

/** The default grid, for a family's launch_shape that adds its own checks: one CTA per block_m
 *  query rows of each (batch, query head), sized with overflow checks. */
enum fc_status fc_plan_row_block_grid(const struct fc_problem *problem, struct fc_plan *plan, char *msg,
                                      size_t size);

/** The same for `rows` query rows of each (batch, one of `heads`): a family whose blocks are other
 *  rows than block_m of one query head's (sm90's GQA-packed rows: rows of each K/V head). */
enum fc_status fc_plan_block_grid(const struct fc_problem *problem, struct fc_plan *plan, int rows, int heads,
                                  const char *heads_name, char *msg, size_t size);

#endif
