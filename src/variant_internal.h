/* Internal: a kernel variant, the unit of specialization, compilation and caching. */
#ifndef FC_VARIANT_INTERNAL_H
#define FC_VARIANT_INTERNAL_H

#include <stddef.h>

#include "dtype_internal.h"
#include "flashcore.h"

/** Ids of the kernel families (src/families.c is their table, src/family_<name>.c each one).
 *  Values are stored in the cache: never reuse. */
enum fc_kernel_family {
    FC_KERNEL_REFERENCE = 0,   /* kernel_templates/reference.cuh: simple, obviously correct */
    FC_KERNEL_SM80 = 1,        /* kernel_templates/fwd_sm80.cuh: mma.sync tensor cores, sm_80+ */
    FC_KERNEL_SM90 = 2,        /* kernel_templates/fwd_sm90.cuh: TMA + WGMMA, sm_90a */
    FC_KERNEL_DECODE = 3,      /* kernel_templates/fwd_decode.cuh: split-KV, GQA-packed rows, sm_80+ */
    FC_KERNEL_MERGE = 4,       /* kernel_templates/merge.cuh: fc_attention_merge, not an attention kernel */
    FC_KERNEL_QUANTIZE = 5,    /* kernel_templates/quantize.cuh: fc_quantize, not an attention kernel */
    FC_KERNEL_FAMILY_COUNT
};

/** Everything that changes the generated code. Anything else is a run-time kernel argument. */
struct fc_variant {
    enum fc_kernel_family family;
    enum fc_dtype dtype;
    int head_dim;
    int causal;        /* 0 or 1 */
    int window;        /* 0 or 1: a sliding window (kernel_templates/mask.cuh); its bounds are run time */
    int softcap;       /* 0 or 1: logit soft-capping (tanh); the cap is run time */
    int varlen;        /* 0 or 1: per-sequence lengths (cu_seqlens and/or seqused_k, read on the device) */
    int paged;         /* 0 or 1: K/V through a page table (kernel_templates/kv_source.cuh's PagedRows); needs varlen */
    int kv_fp8;        /* 0 or 1: K/V are e4m3 (an FP8 KV cache), dequantized as they are read; q and out stay dtype */
    int q_fp8;         /* 0 or 1 (kv_fp8 too): FP8 attention, q e4m3 as well; dtype is out's */
    int pack_gqa;      /* 0 or 1: a CTA's rows are the query heads of one K/V head (the sm90 kernel's PACK_GQA) */
    int v_transposed;  /* 0 or 1: FP8 attention's V transposed before the kernel (sm90's module's second kernel
                          writes V^T in P's key order to scratch; the kernel loads it by TMA: no transposes) */
    int quick;         /* 0 or 1: the quick first call's kernel (sm90's quick_override), written for NVRTC's time:
                          32-key tiles, P V 64 columns a WGMMA, O by 4-byte stores (fwd_sm90.cuh's QUICK) */
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

/** Readable, unique name, e.g. "reference_f16_d128_causal_m16n32s1w4_sm_90a"; a window adds "_win" and
 *  a softcap "_cap", per-sequence lengths "_var", a paged cache "_pg", FP8 K/V "_kv8", an FP8 q "_q8",
 *  a V transposed before the kernel "_vt", GQA-packed rows "_gqa" and the quick first call's kernel
 *  "_quick" after the causality ("..._causal_win_cap_var_pg_kv8_q8_vt_gqa_quick_m16..."), so that the names
 *  of variants without them never change. */
void fc_variant_name(const struct fc_variant *variant, char out[FC_VARIANT_NAME_MAX]);

/** Reads a name fc_variant_name wrote back into a variant; 0 on success, -1 if it is not one. */
int fc_variant_parse_name(const char *name, struct fc_variant *variant);

/** Fills the family's default tile, stage and warp choices for variant->head_dim. */
void fc_variant_defaults(struct fc_variant *variant);

/** Checks a variant is one its family can compile (sizes, shared memory): the family-independent
 *  rules, then the family's; 0 if so, else -1 and a reason in why. */
int fc_variant_check(const struct fc_variant *variant, char *why, size_t why_size);

/** Writes a reason (printf-style) into why (may be NULL) and returns -1: for the checks. */
int fc_variant_fail(char *why, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

/** The largest dynamic shared memory one CTA may opt into on the arch, in bytes. */
int fc_arch_smem_limit(int arch);

/** Dynamic shared memory, in bytes, the variant's kernel is launched with. */
int fc_variant_smem_bytes(const struct fc_variant *variant);

/** Orders variants field by field (memcmp would also compare padding): <0, 0, >0. */
int fc_variant_compare(const struct fc_variant *a, const struct fc_variant *b);

/** Keeps the first of each set of equal variants, in order; *count shrinks. -1 if out of memory. */
int fc_variants_unique(struct fc_variant *items, size_t *count);

#endif
