/* Internal: a kernel family, DeepGEMM-style: one device template (kernel_templates/fwd_*.cuh),
 * one host file (src/family_*.c) holding everything about it, and one row in the table
 * (src/families.c). Nothing outside those asks which family a variant is. */
#ifndef FC_FAMILY_INTERNAL_H
#define FC_FAMILY_INTERNAL_H

#include <stddef.h>

#include "launch_internal.h"
#include "plan_internal.h"

struct fc_family {
    enum fc_kernel_family id;
    const char *name;            /* "sm90": variant names, FC_FORCE_VARIANT, specs */
    const char *template_file;   /* what the generated translation unit includes */
    const char *args_type;       /* the kernel's argument type (kernel_templates/fc_args.h) */
    const char *varlen_args_type;   /* ... of its VARLEN variants (per-sequence lengths); NULL: it has none */
    const char *paged_args_type;    /* ... of its PAGED variants (a page table); NULL: it has none */
    const char *second_entry;    /* a second kernel in the module (decode: the combine; sm90: V's transposer,
                                    where second_source writes one), or NULL */
    int tuned;                   /* a tuned winner may replace the heuristic's choice of it */
    int splits_option;           /* FC_FORCE_VARIANT's `k` (CTAs along the keys) applies */
    int pingpong_option;         /* a variant's pingpong (consumers taking turns) may be 1 */
    int pack_gqa_option;         /* a variant's pack_gqa (rows of a K/V head's query heads) may be 1 */
    int v_transposed_option;     /* a variant's v_transposed (FP8: V^T written before the kernel) may be 1 */
    int fp8_kv;                  /* takes e4m3 K/V (kv_fp8 variants: an FP8 KV cache) */
    const char *fp8_kv_why_not;  /* without fp8_kv: why not, for the selector's record (NULL: nothing to say) */
    int fp8_q;                   /* takes an e4m3 q too (q_fp8 variants: FP8 attention) */
    const char *fp8_q_why_not;   /* without fp8_q: why not, as fp8_kv_why_not */

    /** Tiles for v's dtype, head_dim, causality and arch, fitted to the arch's shared memory. */
    void (*defaults)(struct fc_variant *v);
    /** After fc_variant_check's family-independent rules: 0 if the kernel compiles for v, else
     *  -1 and why. */
    int (*check)(const struct fc_variant *v, char *why, size_t why_size);
    /** Dynamic shared memory the kernel is launched with (the generated unit asserts that the
     *  template needs no more). */
    int (*smem_bytes)(const struct fc_variant *v);
    /** The selector's question. Takes the problem on the target: fills v's tiles (v holds the
     *  problem's dtype, head_dim, causality and arch) and returns why this kernel, a constant
     *  sentence. Else NULL, with *why_not a constant sentence for the record, or NULL. NULL for a
     *  family that is not an attention kernel (merge): the selector never asks it. */
    const char *(*select)(const struct fc_problem *problem, const struct fc_target *target,
                          struct fc_variant *v, const char **why_not);
    /** Whether a tuned winner of this family (measured without a window, softcap or paging) may
     *  replace the heuristic's choice for the problem. NULL: every winner may. */
    int (*takes_winner)(const struct fc_problem *problem, const struct fc_variant *winner);
    /** After FC_FORCE_VARIANT replaced some tiles but named no ping-pong: re-derive the defaults
     *  that depend on them. NULL: nothing does. */
    void (*fit_forced)(struct fc_variant *v);
    /** The block_m a forced variant that names none takes for the problem, before the defaults
     *  (decode: the tile its packed rows need). NULL: the family's default. */
    int (*forced_block_m)(const struct fc_problem *problem);
    /** The quick first call's kernel for v (src/plan.c's fc_plan_quick): a variant of this family
     *  that NVRTC compiles in a fraction of v's time, as the forced choices it takes. 0 if there is none
     *  (v compiles quickly already, or nothing quicker takes it). NULL: the family has none. */
    int (*quick_override)(const struct fc_variant *v, struct fc_plan_override *quick);
    /** The kernel's C++ type, e.g. "fc::Sm80Forward<fc::half_t, 128, true, 128, 64, 4>". */
    int (*kernel_type)(const struct fc_variant *v, char *out, size_t size);
    /** Source of the second entry, appended to the unit (NULL without one); 0 characters: this
     *  variant's unit has none. */
    int (*second_source)(const struct fc_variant *v, char *out, size_t size);
    /** The grid when it is not one CTA per block_m query rows of a (batch, query head); NULL: that. */
    enum fc_status (*launch_shape)(const struct fc_problem *problem, const struct fc_target *target,
                                   struct fc_plan *plan, char *msg, size_t msg_size);
    /** Fills the kernel's one argument (into args->bytes) and args->params (NULL for merge, whose
     *  public call builds its own). */
    enum fc_status (*kernel_args)(const struct fc_launch *launch, struct fc_launch_args *args);
    /** Launches a call; NULL: the kernel once, with plan->grid CTAs. */
    enum fc_status (*launch)(const struct fc_launch *launch);
};

/** Whether the sm90 family packs the problem's GQA rows on the target (dense, 16-bit, few query rows;
 *  their keys split across CTAs where these leave SMs idle): the decode family then leaves it to it. */
int fc_sm90_packs(const struct fc_problem *problem, const struct fc_target *target);

/** The families, in the selector's order of preference; NULL-terminated. */
extern const struct fc_family *const fc_families[];

/** The family of an id, or NULL if there is none. */
const struct fc_family *fc_family_of(enum fc_kernel_family id);

#endif
