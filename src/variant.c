/* Variants: names, parsing, and the family-independent half of the compile-ability check; the
 * family-specific halves (defaults, tiles, shared memory) are in src/family_*.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dtype_internal.h"
#include "family_internal.h"
#include "variant_internal.h"

/* NOTE: the largest dynamic shared memory one CTA may opt into, per architecture (CUDA
 * programming guide, "Technical Specifications per Compute Capability"). */
#define SMEM_BYTES_MAX_SM75 (64 * 1024)
#define SMEM_BYTES_MAX_SM80 (163 * 1024)    /* also sm_87 */
#define SMEM_BYTES_MAX_SM86 (99 * 1024)     /* also sm_88, sm_89, sm_120, sm_121 */
#define SMEM_BYTES_MAX_SM90 (227 * 1024)    /* also sm_100, sm_103, sm_110 */

#define HEAD_DIM_MIN 8
#define HEAD_DIM_MAX 256

void fc_arch_name(int arch, int arch_specific, char out[FC_ARCH_NAME_MAX])
{
    snprintf(out, FC_ARCH_NAME_MAX, "sm_%d%s", arch, arch_specific ? "a" : "");
}

int fc_arch_parse(const char *text, int *arch, int *arch_specific)
{
    const char *p = text;
    if (strncasecmp(p, "sm_", 3) == 0 || strncasecmp(p, "sm", 2) == 0)
        p += p[2] == '_' ? 3 : 2;
    int major = 0, minor = 0;
    char suffix = 0;
    if (strchr(p, '.')) {
        if (sscanf(p, "%d.%d%c", &major, &minor, &suffix) < 2)
            return -1;
    } else {
        int value = 0, used = 0;
        if (sscanf(p, "%d%n", &value, &used) != 1 || value < 10 || value > 199)
            return -1;
        major = value / 10;
        minor = value % 10;
        suffix = p[used];
        if (suffix && p[used + 1])
            return -1;
    }
    if (suffix && suffix != 'a')
        return -1;
    if (major < 7 || minor < 0 || minor > 9)
        return -1;
    *arch = major * 10 + minor;
    *arch_specific = suffix == 'a';
    return 0;
}

void fc_variant_name(const struct fc_variant *v, char out[FC_VARIANT_NAME_MAX])
{
    char arch[FC_ARCH_NAME_MAX];
    fc_arch_name(v->arch, v->arch_specific, arch);
    snprintf(out, FC_VARIANT_NAME_MAX, "%s_%s_d%d%s%s%s%s%s%s%s%s%s%s_m%dn%ds%dw%d%s_%s",
             fc_kernel_family_name(v->family), fc_dtype_name(v->dtype), v->head_dim, v->causal ? "_causal" : "",
             v->window ? "_win" : "", v->softcap ? "_cap" : "", v->varlen ? "_var" : "", v->paged ? "_pg" : "",
             v->kv_fp8 ? "_kv8" : "", v->q_fp8 ? "_q8" : "", v->v_transposed ? "_vt" : "", v->pack_gqa ? "_gqa" : "",
             v->quick ? "_quick" : "", v->block_m, v->block_n,
             v->stages, v->warps, v->pingpong ? "p" : "", arch);
}

int fc_variant_parse_name(const char *name, struct fc_variant *v)
{
    char family[16], dtype[8], rest[96];
    memset(v, 0, sizeof *v);
    /* family_dtype_dHEAD[_causal][_win][_cap][_var][_pg][_kv8][_q8][_vt][_gqa][_quick]_mMnNsSwW[p]_ARCH */
    if (sscanf(name, "%15[a-z0-9]_%7[a-z0-9]_d%d_%95s", family, dtype, &v->head_dim, rest) != 4 ||
        fc_kernel_family_parse(family, &v->family) || fc_dtype_parse(dtype, &v->dtype))
        return -1;
    const char *p = rest;
    if (strncmp(p, "causal_", 7) == 0) {
        v->causal = 1;
        p += 7;
    }
    if (strncmp(p, "win_", 4) == 0) {
        v->window = 1;
        p += 4;
    }
    if (strncmp(p, "cap_", 4) == 0) {
        v->softcap = 1;
        p += 4;
    }
    if (strncmp(p, "var_", 4) == 0) {
        v->varlen = 1;
        p += 4;
    }
    if (strncmp(p, "pg_", 3) == 0) {
        v->paged = 1;
        p += 3;
    }
    if (strncmp(p, "kv8_", 4) == 0) {
        v->kv_fp8 = 1;
        p += 4;
    }
    if (strncmp(p, "q8_", 3) == 0) {
        v->q_fp8 = 1;
        p += 3;
    }
    if (strncmp(p, "vt_", 3) == 0) {
        v->v_transposed = 1;
        p += 3;
    }
    if (strncmp(p, "gqa_", 4) == 0) {
        v->pack_gqa = 1;
        p += 4;
    }
    if (strncmp(p, "quick_", 6) == 0) {
        v->quick = 1;
        p += 6;
    }
    int used = 0;
    if (sscanf(p, "m%dn%ds%dw%d%n", &v->block_m, &v->block_n, &v->stages, &v->warps, &used) != 4)
        return -1;
    p += used;
    if (*p == 'p') {
        v->pingpong = 1;
        p++;
    }
    if (*p++ != '_' || fc_arch_parse(p, &v->arch, &v->arch_specific))
        return -1;
    char again[FC_VARIANT_NAME_MAX];   /* only a name this function's inverse writes */
    fc_variant_name(v, again);
    return strcmp(again, name) == 0 ? 0 : -1;
}

int fc_arch_smem_limit(int arch)
{
    if (arch == 75)
        return SMEM_BYTES_MAX_SM75;
    if (arch == 80 || arch == 87)
        return SMEM_BYTES_MAX_SM80;
    if (arch >= 90 && arch < 120)
        return SMEM_BYTES_MAX_SM90;
    return SMEM_BYTES_MAX_SM86;   /* sm_86/88/89 and the consumer Blackwells, sm_120/121 */
}

int fc_variant_fail(char *why, size_t size, const char *format, ...)
{
    if (why && size) {
        va_list args;
        va_start(args, format);
        vsnprintf(why, size, format, args);
        va_end(args);
    }
    return -1;
}

void fc_variant_defaults(struct fc_variant *v)
{
    const struct fc_family *family = fc_family_of(v->family);
    if (family)
        family->defaults(v);
}

int fc_variant_check(const struct fc_variant *v, char *why, size_t why_size)
{
    const struct fc_family *family = fc_family_of(v->family);
    const struct fc_dtype_traits *dtype = fc_dtype_traits(v->dtype);
    if (!family)
        return fc_variant_fail(why, why_size, "unknown kernel family %d", (int)v->family);
    if (!dtype || !dtype->has_kernels)
        return fc_variant_fail(why, why_size, "dtype %d has no kernel (f16 and bf16 do)", (int)v->dtype);
    if (v->head_dim < HEAD_DIM_MIN || v->head_dim > HEAD_DIM_MAX || v->head_dim % 8)
        return fc_variant_fail(why, why_size, "head_dim %d is not a multiple of 8 in [8, 256]", v->head_dim);
    if (v->causal != 0 && v->causal != 1)
        return fc_variant_fail(why, why_size, "causal must be 0 or 1, not %d", v->causal);
    if (v->window != 0 && v->window != 1)
        return fc_variant_fail(why, why_size, "window must be 0 or 1, not %d", v->window);
    if (v->softcap != 0 && v->softcap != 1)
        return fc_variant_fail(why, why_size, "softcap must be 0 or 1, not %d", v->softcap);
    if (v->varlen != 0 && v->varlen != 1)
        return fc_variant_fail(why, why_size, "varlen must be 0 or 1, not %d", v->varlen);
    if (v->paged != 0 && v->paged != 1)
        return fc_variant_fail(why, why_size, "paged must be 0 or 1, not %d", v->paged);
    if (v->paged && !v->varlen)   /* a paged kernel finds each sequence's keys through its table row */
        return fc_variant_fail(why, why_size, "a paged variant takes per-sequence lengths too (varlen)");
    if (v->kv_fp8 != 0 && v->kv_fp8 != 1)
        return fc_variant_fail(why, why_size, "kv_fp8 must be 0 or 1, not %d", v->kv_fp8);
    if (v->kv_fp8 && !v->q_fp8 && !family->fp8_kv)
        return fc_variant_fail(why, why_size, "the %s kernel reads 16-bit K/V only: %s", family->name,
                               family->fp8_kv_why_not ? family->fp8_kv_why_not : "FP8 K/V is not its work");
    if (v->q_fp8 != 0 && v->q_fp8 != 1)
        return fc_variant_fail(why, why_size, "q_fp8 must be 0 or 1, not %d", v->q_fp8);
    if (v->q_fp8 && !v->kv_fp8)
        return fc_variant_fail(why, why_size, "an FP8 q (q_fp8) takes FP8 K/V too (kv_fp8)");
    if (v->q_fp8 && !family->fp8_q)
        return fc_variant_fail(why, why_size, "the %s kernel reads a 16-bit q only: %s", family->name,
                               family->fp8_q_why_not ? family->fp8_q_why_not : "FP8 attention is not its work");
    if (v->kv_fp8 && v->head_dim % 16)
        return fc_variant_fail(why, why_size, "FP8 K/V take head_dim in multiples of 16 (16-byte rows), not %d",
                               v->head_dim);
    if (v->arch < 75)
        return fc_variant_fail(why, why_size, "arch sm_%d is older than sm_75, which NVRTC 13 still targets",
                               v->arch);
    if (v->arch_specific && v->arch != 90)
        return fc_variant_fail(why, why_size, "only sm_90 has an arch-specific ('a') target here, not sm_%d",
                               v->arch);
    if (v->warps < 1 || v->warps > 16)
        return fc_variant_fail(why, why_size, "warps %d is outside [1, 16]", v->warps);
    if (v->stages < 1 || v->stages > 8)
        return fc_variant_fail(why, why_size, "stages %d is outside [1, 8]", v->stages);
    if (v->pack_gqa != 0 && (v->pack_gqa != 1 || !family->pack_gqa_option))
        return fc_variant_fail(why, why_size, "pack_gqa (%d) is a choice of the sm90 kernel only, 0 or 1 (the decode "
                               "kernel always packs)", v->pack_gqa);
    if (v->v_transposed != 0 && (v->v_transposed != 1 || !family->v_transposed_option))
        return fc_variant_fail(why, why_size, "v_transposed (%d) is a choice of the sm90 kernel only, 0 or 1",
                               v->v_transposed);
    if (v->quick != 0 && (v->quick != 1 || !family->quick_override))
        return fc_variant_fail(why, why_size, "quick (%d), the quick first call's kernel, is a choice of the sm90 "
                               "kernel only, 0 or 1", v->quick);
    if (v->pingpong != 0 && (v->pingpong != 1 || !family->pingpong_option))
        return fc_variant_fail(why, why_size, "pingpong (%d) is a choice of the sm90 kernel only, 0 or 1",
                               v->pingpong);
    return family->check(v, why, why_size);
}

int fc_variant_smem_bytes(const struct fc_variant *v)
{
    const struct fc_family *family = fc_family_of(v->family);
    return family ? family->smem_bytes(v) : 0;
}

int fc_variant_compare(const struct fc_variant *a, const struct fc_variant *b)
{
    /* Field by field: memcmp would also compare padding. */
    const int left[] = {(int)a->family, (int)a->dtype, a->head_dim, a->causal, a->window, a->softcap, a->varlen, a->paged, a->kv_fp8, a->q_fp8, a->pack_gqa, a->block_m,
                        a->block_n, a->v_transposed, a->quick, a->stages, a->warps, a->pingpong, a->arch, a->arch_specific};
    const int right[] = {(int)b->family, (int)b->dtype, b->head_dim, b->causal, b->window, b->softcap, b->varlen, b->paged, b->kv_fp8, b->q_fp8, b->pack_gqa, b->block_m,
                         b->block_n, b->v_transposed, b->quick, b->stages, b->warps, b->pingpong, b->arch, b->arch_specific};
    for (size_t i = 0; i < sizeof left / sizeof left[0]; i++) {
        if (left[i] != right[i])
            return left[i] < right[i] ? -1 : 1;
    }
    return 0;
}

struct ranked_variant {
    struct fc_variant variant;
    size_t order;   /* index in the list */
};

static int ranked_compare(const void *a, const void *b)
{
    const struct ranked_variant *left = a, *right = b;
    int fields = fc_variant_compare(&left->variant, &right->variant);
    if (fields)
        return fields;
    return left->order < right->order ? -1 : left->order > right->order;
}

/* Sorting a copy keeps this O(n log n) for large sweeps. */
int fc_variants_unique(struct fc_variant *items, size_t *count)
{
    if (*count < 2)
        return 0;
    struct ranked_variant *ranked = malloc(*count * sizeof *ranked);
    unsigned char *keep = calloc(*count, 1);
    if (!ranked || !keep) {
        free(ranked);
        free(keep);
        return -1;
    }
    for (size_t i = 0; i < *count; i++)
        ranked[i] = (struct ranked_variant){items[i], i};
    qsort(ranked, *count, sizeof *ranked, ranked_compare);
    for (size_t i = 0; i < *count; i++)
        keep[ranked[i].order] = i == 0 || fc_variant_compare(&ranked[i - 1].variant,
                                                          &ranked[i].variant) != 0;
    size_t kept = 0;
    for (size_t i = 0; i < *count; i++) {
        if (keep[i])
            items[kept++] = items[i];
    }
    *count = kept;
    free(ranked);
    free(keep);
    return 0;
}
