/* Internal: the one selector. Answers both "is this supported?" and "which kernel?", for
 * fc_attention_forward, fc_attention_plan and fcjit alike. */
#ifndef FC_PLAN_INTERNAL_H
#define FC_PLAN_INTERNAL_H

#include <stddef.h>

#include "problem_internal.h"
#include "variant_internal.h"

/** A forced choice for tuning and debugging (FC_FORCE_VARIANT): family, and tiles where nonzero. */
struct fc_plan_override {
    int active;
    enum fc_kernel_family family;
    int block_m, block_n, warps, stages;   /* 0: the family default */
    int pingpong;                          /* 0: the default, 1: off, 2: on */
    int splits;                            /* decode family: CTAs per (batch, K/V head); 0: chosen */
};

/** Parses "reference", "sm80", "sm90:m128n128s2w12p1" or "decode:n64w4k8" (any of m, n, s, w, p0/p1 and k,
 * the decode family's split count, optional). 0 on success. */
int fc_plan_override_parse(const char *text, struct fc_plan_override *out);

struct fc_plan {
    struct fc_variant variant;
    unsigned grid;          /* CTAs */
    unsigned threads;       /* per CTA */
    unsigned smem_bytes;    /* dynamic shared memory */
    int m_blocks;           /* query row blocks per (batch, head) */
    int splits, split_keys; /* decode family: CTAs per (batch, K/V head) and keys each; else 1, 0 */
    int requested_splits;   /* decode family: the splits wanted (fewer if there are too few tiles); 0: chosen */
    const char *reason;     /* a constant sentence: why this kernel */
};

/**
 * Chooses the variant for a validated problem on a target (arch = major * 10 + minor) with
 * sm_count SMs (0: unknown, planned as an H100's 132; it only sets the decode family's splits).
 * @return FC_OK or FC_ERR_UNSUPPORTED with the reason in msg
 */
enum fc_status fc_plan_select(const struct fc_problem *problem, int arch, int arch_specific, int sm_count,
                              const struct fc_plan_override *override, struct fc_plan *plan,
                              char *msg, size_t msg_size);

/**
 * Checks plan->variant and fills the rest of the plan from it: grid, threads, shared memory, and
 * the decode family's splits. fc_plan_select ends with it; a caller that already knows the
 * variant (a tuned winner) calls it alone.
 * @return FC_OK or FC_ERR_UNSUPPORTED with the reason in msg
 */
enum fc_status fc_plan_launch_shape(const struct fc_problem *problem, int sm_count, struct fc_plan *plan, char *msg,
                                    size_t msg_size);

struct fc_kernel_args;
/** The kernel's one argument, from a validated problem and its plan. */
void fc_plan_kernel_args(const struct fc_problem *problem, const struct fc_plan *plan,
                         struct fc_kernel_args *args);

#endif
