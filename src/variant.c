/* Variants: names, parsing of their parts, family defaults and the compile-ability check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "variant_internal.h"

/* NOTE: the largest dynamic shared memory one CTA may opt into, per architecture (CUDA
 * programming guide, "Technical Specifications per Compute Capability"). */
#define SMEM_BYTES_MAX_SM75 (64 * 1024)
#define SMEM_BYTES_MAX_SM80 (163 * 1024)    /* also sm_87 */
#define SMEM_BYTES_MAX_SM86 (99 * 1024)     /* also sm_88, sm_89, sm_120, sm_121 */
#define SMEM_BYTES_MAX_SM90 (227 * 1024)    /* also sm_100, sm_103, sm_110 */

#define HEAD_DIM_MIN 8
#define HEAD_DIM_MAX 256
#define REFERENCE_BLOCK_N 32   /* one key per lane */

static const char *const FAMILY_NAMES[FC_KERNEL_FAMILY_COUNT] = {"reference", "sm80", "sm90", "decode"};
static const char *const DTYPE_NAMES[] = {"f16", "bf16", "e4m3"};

const char *fc_kernel_family_name(enum fc_kernel_family family)
{
    return (unsigned)family < FC_KERNEL_FAMILY_COUNT ? FAMILY_NAMES[family] : "unknown";
}

int fc_kernel_family_parse(const char *name, enum fc_kernel_family *family)
{
    for (int i = 0; i < FC_KERNEL_FAMILY_COUNT; i++) {
        if (strcmp(name, FAMILY_NAMES[i]) == 0) {
            *family = (enum fc_kernel_family)i;
            return 0;
        }
    }
    return -1;
}

const char *fc_dtype_name(enum fc_dtype dtype)
{
    return (unsigned)dtype <= FC_E4M3 ? DTYPE_NAMES[dtype] : "unknown";
}

int fc_dtype_parse(const char *name, enum fc_dtype *dtype)
{
    static const struct { const char *name; enum fc_dtype dtype; } ALIASES[] = {
        {"f16", FC_F16}, {"fp16", FC_F16}, {"float16", FC_F16}, {"half", FC_F16},
        {"bf16", FC_BF16}, {"bfloat16", FC_BF16}, {"e4m3", FC_E4M3}, {"fp8", FC_E4M3},
    };
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++) {
        if (strcasecmp(name, ALIASES[i].name) == 0) {
            *dtype = ALIASES[i].dtype;
            return 0;
        }
    }
    return -1;
}

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
    snprintf(out, FC_VARIANT_NAME_MAX, "%s_%s_d%d%s_m%dn%ds%dw%d%s_%s",
             fc_kernel_family_name(v->family), fc_dtype_name(v->dtype), v->head_dim,
             v->causal ? "_causal" : "", v->block_m, v->block_n, v->stages, v->warps, v->pingpong ? "p" : "", arch);
}

int fc_variant_parse_name(const char *name, struct fc_variant *v)
{
    char family[16], dtype[8], rest[96];
    memset(v, 0, sizeof *v);
    /* family_dtype_dHEAD[_causal]_mMnNsSwW[p]_ARCH */
    if (sscanf(name, "%15[a-z0-9]_%7[a-z0-9]_d%d_%95s", family, dtype, &v->head_dim, rest) != 4 ||
        fc_kernel_family_parse(family, &v->family) || fc_dtype_parse(dtype, &v->dtype))
        return -1;
    const char *p = rest;
    if (strncmp(p, "causal_", 7) == 0) {
        v->causal = 1;
        p += 7;
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

static int fail(char *why, size_t size, const char *text, int value)
{
    if (why && size)
        snprintf(why, size, text, value);
    return -1;
}

/** Shared memory the reference kernel needs: fp32 Q rows, padded 16-bit K and V tiles. */
static int reference_smem_bytes(const struct fc_variant *v)
{
    return v->block_m * v->head_dim * 4 + 2 * v->block_n * (v->head_dim + 2) * 2;
}

/** The mma.sync kernel: Q, and K and V per stage, in rows padded by 16 bytes. */
static int sm80_smem_bytes(const struct fc_variant *v)
{
    return (v->block_m + 2 * v->stages * v->block_n) * (v->head_dim * 2 + 16);
}

/* NOTE: tiles of the mma.sync kernel per head_dim, chosen so that the fp32 accumulators of S and
 * O plus the Q fragments fit in registers without spilling (docs/PERF_NOTES.md has the reasons). */
static void sm80_defaults(struct fc_variant *v)
{
    v->stages = 2;
    v->block_m = 128;
    if (v->head_dim <= 64 || v->head_dim == 128) {   /* 128: spill-free since v1.4 (docs/PERF_NOTES.md) */
        v->warps = 4;     /* 32 rows per warp: each K/V fragment feeds two m-tiles */
        v->block_n = 64;
        /* 64: 128-key tiles (Q then read from shared memory per k-step), half the barriers per key,
         * +3% over 64 keys on an H100 (v1.5); only where two such CTAs fit in an SM's shared
         * memory (not in sm_80's 164 KB, where it would run one CTA an SM: not measured). */
        if (v->head_dim == 64) {
            v->block_n = 128;
            if (2 * sm80_smem_bytes(v) > fc_arch_smem_limit(v->arch))
                v->block_n = 64;
        }
    } else if (v->head_dim <= 128) {
        v->warps = 8;     /* 96: 32 rows per warp spill (O 96 + S 64 + Q 48 registers); 16 rows do not */
        v->block_n = 64;
    } else {
        v->warps = 8;     /* 192, 256: O alone takes 96-128 registers */
        v->block_n = 32;
    }
    /* Smaller tiles where the arch has less shared memory (sm_86/89: 99 KB). */
    if (sm80_smem_bytes(v) > fc_arch_smem_limit(v->arch))
        v->block_n = 32;
    if (sm80_smem_bytes(v) > fc_arch_smem_limit(v->arch)) {
        v->warps = 4;
        v->block_m = 64;
    }
}

/* NOTE: from the H200 tile sweeps (docs/PERF_NOTES.md, v2 and v3): head_dim 64, the plain schedule
 * with one warpgroup of 64 rows and 128-key tiles (several CTAs per SM); 128, 192 and 256, the
 * warp-specialized schedule with two consumer warpgroups (661 vs 574 TF/s at head_dim 128, 16k;
 * 678 vs 622 at 256), taking turns on the tensor cores, 128-key tiles up to head_dim 128 and 64
 * above (128 would need 246 / 296 KB of shared memory). */
static void sm90_defaults(struct fc_variant *v)
{
    v->stages = 2;
    if (v->head_dim <= 64) {
        v->block_m = 64;
        v->warps = 4;
        v->block_n = 128;
        return;
    }
    v->block_m = 128;
    v->warps = 12;   /* two consumer warpgroups and the producer's */
    v->block_n = v->head_dim <= 128 ? 128 : 64;
    v->pingpong = 1;   /* +0-4% over letting the two interleave freely (H200, v3.1) */
}

/** The split-KV kernel: 16 packed rows of Q, the K/V ring (its space reused for the warps' merge). */
static int decode_smem_bytes(const struct fc_variant *v)
{
    const int pitch = v->head_dim * 2 + 16;
    const int kv_pitch = v->head_dim % 64 ? pitch : v->head_dim * 2;   /* swizzled K/V rows: no padding */
    const int ring = 2 * v->stages * v->block_n * kv_pitch, merge = v->warps * 16 * (v->head_dim + 2) * 4;
    return 16 * pitch + (ring > merge ? ring : merge);
}

/* NOTE: four warps x 16 keys of each 64-key tile; three stages where two CTAs still fit an SM,
 * else two; two warps x 16 keys where even that does not fit (head_dim 192 and 256 on 99 KB
 * parts). On Hopper up to head_dim 128, eight warps x 16 keys of 128-key tiles, two stages, one
 * CTA an SM: 703 vs 711 us at B64 Sk 8k and 365 vs 373 us at B8 Sk 32k on an H100, where cuDNN
 * took 706 and 367 (PERF_NOTES v4.4). Decode is bound by reading K and V: what matters is bytes
 * in flight per SM and how they reach L2, not the MMAs. */
static void decode_defaults(struct fc_variant *v)
{
    v->block_m = 16;
    if (v->arch >= 90 && v->arch < 100 && v->head_dim <= 128) {
        v->block_n = 128;
        v->warps = 8;
        v->stages = 2;
        return;
    }
    v->block_n = 64;
    v->warps = 4;
    v->stages = 3;
    if (2 * decode_smem_bytes(v) > fc_arch_smem_limit(v->arch))
        v->stages = 2;
    if (decode_smem_bytes(v) > fc_arch_smem_limit(v->arch)) {   /* 99 KB parts, head_dim 192/256 */
        v->warps = 2;
        v->block_n = 32;
    }
}

void fc_variant_defaults(struct fc_variant *v)
{
    switch (v->family) {
    case FC_KERNEL_DECODE:
        decode_defaults(v);
        break;
    case FC_KERNEL_SM80:
        sm80_defaults(v);
        break;
    case FC_KERNEL_SM90:
        sm90_defaults(v);
        break;
    case FC_KERNEL_REFERENCE:
    default:
        /* NOTE: 4 warps x 4 query rows: each K element read from shared memory serves 4 rows. */
        v->warps = 4;
        v->block_m = 16;
        v->block_n = REFERENCE_BLOCK_N;
        v->stages = 1;
        break;
    }
}

/** The Hopper kernel: Q, then the stages of K and V, 128B-swizzled, plus 1 KB to align them. */
static int sm90_smem_bytes(const struct fc_variant *v)
{
    return 1024 + (v->block_m + 2 * v->stages * v->block_n) * v->head_dim * 2;
}

int fc_variant_specialized(const struct fc_variant *v)
{
    return v->family == FC_KERNEL_SM90 && v->warps == v->block_m / 16 + 4;
}

int fc_variant_min_blocks(const struct fc_variant *v)
{
    /* NOTE: two CTAs per SM leave 128 registers a thread at launch; the n256 P V WGMMA of
     * head_dim 256 alone needs 158 (ptxas C7602), so that pairing stays at one. */
    return fc_variant_specialized(v) && v->block_m == 64 && v->head_dim <= 128 ? 2 : 1;
}

#define SM90_STATIC_SMEM 256   /* the kernel's mbarriers */

static int check_sm90(const struct fc_variant *v, char *why, size_t why_size)
{
    if (v->arch != 90 || !v->arch_specific)
        return fail(why, why_size, "WGMMA and TMA need the sm_90a target, not sm_%d", v->arch);
    if (v->head_dim % 64 || v->head_dim > 256)
        return fail(why, why_size, "the sm90 kernel takes head_dim 64, 128, 192 or 256 so far, not %d", v->head_dim);
    if (v->block_n != 64 && v->block_n != 128)
        return fail(why, why_size, "the sm90 kernel takes block_n 64 or 128, not %d", v->block_n);
    if (v->block_m != 64 && v->block_m != 128 && v->block_m != 192)
        return fail(why, why_size, "the sm90 kernel takes one to three warpgroups of 64 rows, not block_m %d",
                    v->block_m);
    if (fc_variant_specialized(v)) {
        if (v->stages < 2 || v->stages > 4)
            return fail(why, why_size, "the warp-specialized sm90 kernel takes 2 to 4 stages, not %d", v->stages);
        if (v->pingpong && v->block_m < 128)
            return fail(why, why_size, "ping-pong needs two or more consumer warpgroups, not block_m %d",
                        v->block_m);
    } else if (v->warps != v->block_m / 16 || v->stages != 2 || v->block_m > 128 || v->pingpong) {
        return fail(why, why_size, "the sm90 kernel takes 4 warps per 64 rows (plus 4 for a producer warpgroup), "
                    "and 2 stages and no ping-pong without one; not %d warps", v->warps);
    }
    if (sm90_smem_bytes(v) + SM90_STATIC_SMEM > fc_arch_smem_limit(v->arch))
        return fail(why, why_size, "needs %d bytes of shared memory, more than the arch allows", sm90_smem_bytes(v));
    return 0;
}

static int check_sm80(const struct fc_variant *v, char *why, size_t why_size)
{
    if (v->arch < 80)
        return fail(why, why_size, "mma.sync m16n8k16 with bf16 needs sm_80 or later, not sm_%d", v->arch);
    if (v->head_dim % 16)
        return fail(why, why_size, "head_dim %d is not a multiple of 16 (an mma k-step)", v->head_dim);
    if (v->stages != 2)
        return fail(why, why_size, "the sm80 kernel double-buffers K/V (stages 2, not %d)", v->stages);
    if (v->block_n % 16 || v->block_n < 16 || v->block_n > 128)
        return fail(why, why_size, "block_n %d is not a multiple of 16 in [16, 128]", v->block_n);
    int rows_per_warp = v->warps ? v->block_m / v->warps : 0;
    if (v->block_m % v->warps || (rows_per_warp != 16 && rows_per_warp != 32))
        return fail(why, why_size, "block_m %d must give each warp 16 or 32 rows", v->block_m);
    int smem = sm80_smem_bytes(v);
    if (smem > fc_arch_smem_limit(v->arch))
        return fail(why, why_size, "needs %d bytes of shared memory, more than the arch allows", smem);
    return 0;
}

static int check_decode(const struct fc_variant *v, char *why, size_t why_size)
{
    if (v->arch < 80)
        return fail(why, why_size, "mma.sync m16n8k16 with bf16 needs sm_80 or later, not sm_%d", v->arch);
    if (v->head_dim % 16)
        return fail(why, why_size, "the decode kernel takes head_dim in multiples of 16, not %d", v->head_dim);
    if (v->block_m != 16)
        return fail(why, why_size, "the decode kernel packs 16 rows (block_m 16), not %d", v->block_m);
    if (v->warps != 2 && v->warps != 4 && v->warps != 8)
        return fail(why, why_size, "the decode kernel takes 2, 4 or 8 warps, not %d", v->warps);
    if (v->block_n != 16 * v->warps && v->block_n != 32 * v->warps)
        return fail(why, why_size, "the decode kernel takes block_n of 16 or 32 keys per warp, not %d", v->block_n);
    if (v->stages < 2 || v->stages > 4)
        return fail(why, why_size, "the decode kernel takes 2 to 4 stages, not %d", v->stages);
    if (decode_smem_bytes(v) > fc_arch_smem_limit(v->arch))
        return fail(why, why_size, "needs %d bytes of shared memory, more than the arch allows", decode_smem_bytes(v));
    return 0;
}

int fc_variant_check(const struct fc_variant *v, char *why, size_t why_size)
{
    if ((unsigned)v->family >= FC_KERNEL_FAMILY_COUNT)
        return fail(why, why_size, "unknown kernel family %d", (int)v->family);
    if (v->dtype != FC_F16 && v->dtype != FC_BF16)
        return fail(why, why_size, "dtype %d has no kernel (f16 and bf16 do)", (int)v->dtype);
    if (v->head_dim < HEAD_DIM_MIN || v->head_dim > HEAD_DIM_MAX || v->head_dim % 8)
        return fail(why, why_size, "head_dim %d is not a multiple of 8 in [8, 256]", v->head_dim);
    if (v->causal != 0 && v->causal != 1)
        return fail(why, why_size, "causal must be 0 or 1, not %d", v->causal);
    if (v->arch < 75)
        return fail(why, why_size, "arch sm_%d is older than sm_75, which NVRTC 13 still targets",
                    v->arch);
    if (v->arch_specific && v->arch != 90)
        return fail(why, why_size, "only sm_90 has an arch-specific ('a') target here, not sm_%d",
                    v->arch);
    if (v->warps < 1 || v->warps > 16)
        return fail(why, why_size, "warps %d is outside [1, 16]", v->warps);
    if (v->stages < 1 || v->stages > 8)
        return fail(why, why_size, "stages %d is outside [1, 8]", v->stages);
    if (v->pingpong != 0 && (v->pingpong != 1 || v->family != FC_KERNEL_SM90))
        return fail(why, why_size, "pingpong (%d) is a choice of the sm90 kernel only, 0 or 1", v->pingpong);
    if (v->family == FC_KERNEL_SM80)
        return check_sm80(v, why, why_size);
    if (v->family == FC_KERNEL_SM90)
        return check_sm90(v, why, why_size);
    if (v->family == FC_KERNEL_DECODE)
        return check_decode(v, why, why_size);
    if (v->family == FC_KERNEL_REFERENCE) {
        if (v->block_n != REFERENCE_BLOCK_N)
            return fail(why, why_size, "the reference kernel takes block_n 32 (a key per lane), not %d",
                        v->block_n);
        if (v->block_m % v->warps || v->block_m / v->warps < 1 || v->block_m / v->warps > 8)
            return fail(why, why_size, "block_m %d must be 1 to 8 rows per warp", v->block_m);
        if (v->stages != 1)
            return fail(why, why_size, "the reference kernel does not pipeline (stages 1, not %d)",
                        v->stages);
        int smem = reference_smem_bytes(v);
        if (smem > fc_arch_smem_limit(v->arch))
            return fail(why, why_size, "needs %d bytes of shared memory, more than the arch allows",
                        smem);
    }
    return 0;
}

/** Dynamic shared memory, in bytes, a variant's kernel is launched with. */
int fc_variant_smem_bytes(const struct fc_variant *v)
{
    if (v->family == FC_KERNEL_SM90)
        return sm90_smem_bytes(v);
    if (v->family == FC_KERNEL_DECODE)
        return decode_smem_bytes(v);
    return v->family == FC_KERNEL_SM80 ? sm80_smem_bytes(v) : reference_smem_bytes(v);
}

int fc_variant_compare(const struct fc_variant *a, const struct fc_variant *b)
{
    /* Field by field: memcmp would also compare padding. */
    const int left[] = {(int)a->family, (int)a->dtype, a->head_dim, a->causal, a->block_m,
                        a->block_n, a->stages, a->warps, a->pingpong, a->arch, a->arch_specific};
    const int right[] = {(int)b->family, (int)b->dtype, b->head_dim, b->causal, b->block_m,
                         b->block_n, b->stages, b->warps, b->pingpong, b->arch, b->arch_specific};
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
