/* Internal: a kernel variant, the unit of specialization, compilation and caching. */
#ifndef FC_VARIANT_INTERNAL_H
#define FC_VARIANT_INTERNAL_H

#include <stddef.h>

#include "flashcore.h"

/** The kernel templates a variant can be made from. Values are stored in the cache: never reuse. */
enum fc_kernel_family {
    FC_KERNEL_REFERENCE = 0,   /* kernel_templates/reference.cuh: simple, obviously correct */
    FC_KERNEL_SM80 = 1,        /* kernel_templates/fwd_sm80.cuh: mma.sync tensor cores, sm_80+ */
    FC_KERNEL_SM90 = 2,        /* kernel_templates/fwd_sm90.cuh: TMA + WGMMA, sm_90a */
    FC_KERNEL_DECODE = 3,      /* kernel_templates/fwd_decode.cuh: split-KV, GQA-packed rows, sm_80+ */
    FC_KERNEL_FAMILY_COUNT
};

/** Everything that changes the generated code. Anything else is a run-time kernel argument. */
struct fc_variant {
    enum fc_kernel_family family;
    enum fc_dtype dtype;
    int head_dim;
    int causal;        /* 0 or 1 */
    int block_m;       /* query rows per CTA */
    int block_n;       /* keys per K/V tile */
    int stages;        /* K/V pipeline depth (1 = no pipelining) */
    int warps;         /* warps per CTA */
    int pingpong;      /* sm90, warp-specialized: consumers take turns issuing their GEMMs (0 or 1) */
    int arch;          /* compute capability * 10 + minor, e.g. 90, 80, 86 */
    int arch_specific; /* 1: the "a" target (sm_90a): wgmma, setmaxnreg */
};

#define FC_VARIANT_NAME_MAX 96
#define FC_ARCH_NAME_MAX 16

/** "sm_90a", "sm_80". */
void fc_arch_name(int arch, int arch_specific, char out[FC_ARCH_NAME_MAX]);

/** Parses "sm_90a" / "sm_80" / "90a" / "8.6"; returns 0 on success. */
int fc_arch_parse(const char *text, int *arch, int *arch_specific);

const char *fc_kernel_family_name(enum fc_kernel_family family);
/** Returns 0 and sets *family for a known name ("reference"), else -1. */
int fc_kernel_family_parse(const char *name, enum fc_kernel_family *family);

const char *fc_dtype_name(enum fc_dtype dtype);   /* "f16", "bf16", "e4m3" */
int fc_dtype_parse(const char *name, enum fc_dtype *dtype);

/** Readable, unique name, e.g. "reference_f16_d128_causal_m16n32w4_sm_90a". */
void fc_variant_name(const struct fc_variant *variant, char out[FC_VARIANT_NAME_MAX]);

/** Reads a name fc_variant_name wrote back into a variant; 0 on success, -1 if it is not one. */
int fc_variant_parse_name(const char *name, struct fc_variant *variant);

/** Fills the family's default tile, stage and warp choices for variant->head_dim. */
void fc_variant_defaults(struct fc_variant *variant);

/** Checks a variant is one the family can compile (sizes, shared memory); 0 if so, else -1 and a
 *  reason in why. */
int fc_variant_check(const struct fc_variant *variant, char *why, size_t why_size);

/** 1, or 2 where the kernel's registers must leave room for two CTAs per SM (the minimum in its
 *  __launch_bounds__, which the kernel's setmaxnreg counts are derived from). */
int fc_variant_min_blocks(const struct fc_variant *variant);

/** 1 if the variant is the warp-specialized sm90 schedule (a producer warpgroup). */
int fc_variant_specialized(const struct fc_variant *variant);

/** The largest dynamic shared memory one CTA may opt into on the arch, in bytes. */
int fc_arch_smem_limit(int arch);

/** Dynamic shared memory, in bytes, the variant's kernel is launched with. */
int fc_variant_smem_bytes(const struct fc_variant *variant);

/** Orders variants field by field (memcmp would also compare padding): <0, 0, >0. */
int fc_variant_compare(const struct fc_variant *a, const struct fc_variant *b);

/** Keeps the first of each set of equal variants, in order; *count shrinks. -1 if out of memory. */
int fc_variants_unique(struct fc_variant *items, size_t *count);

#endif
