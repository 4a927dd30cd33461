/* fc_quantize's fp64 CPU reference (the rotation) and its device check: random 16-bit inputs with
 * optional outlier dimensions, NaN-poisoned outputs, every element judged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "quantize_internal.h"

#define E4M3_MAX 448.0
#define POISON_16 0x7fffu        /* a NaN in fp16 and bf16 */
#define POISON_E4M3 0x7fu        /* a NaN in e4m3 */
#define POISON_32 0x7fc00000u    /* a NaN in fp32 */
#define OUTLIER_EVERY 16         /* outlier dimensions: 3, 19, 35, ... */
#define OUTLIER_FIRST 3
#define GIVEN_FRACTION 0.75      /* FC_SCALE_GIVEN's check: descales 3/4 of amax / 448, so the largest saturate */
/* fp32 arithmetic's allowance beside the rounding's half step: a few ulps of the row's norm per
 * butterfly stage (the rotation), or of the value (a plain scale) */
#define FP32_SLACK 0x1p-21

int fc_rotation_sign(uint64_t seed, int d)
{
    return fc_mix64(seed + (uint64_t)(d + 1) * 0x9e3779b97f4a7c15ull) >> 63 ? -1 : 1;
}

int fc_rotation_order(int head_dim)
{
    return head_dim & -head_dim;
}

void fc_rotate_reference(double *x, int head_dim, uint64_t seed)
{
    const int n = fc_rotation_order(head_dim);
    for (int d = 0; d < head_dim; d++)
        x[d] *= fc_rotation_sign(seed, d);
    for (int block = 0; block < head_dim; block += n)
        for (int stride = 1; stride < n; stride *= 2)
            for (int i = 0; i < n; i++)
                if (!(i & stride)) {
                    const double a = x[block + i], b = x[block + i + stride];
                    x[block + i] = a + b;
                    x[block + i + stride] = a - b;
                }
    const double norm = 1.0 / sqrt((double)n);
    for (int d = 0; d < head_dim; d++)
        x[d] *= norm;
}

/* The spacing of out_dtype's values around y (e4m3: 3 mantissa bits, subnormal below 2^-6). */
static double step_at(enum fc_dtype out, double y)
{
    const double a = fabs(y);
    const int bits = out == FC_E4M3 ? 3 : out == FC_BF16 ? 7 : 10;
    const double min_normal = out == FC_E4M3 ? 0x1p-6 : out == FC_BF16 ? 0x1p-126 : 0x1p-14;
    if (a < min_normal)
        return ldexp(min_normal, -bits);
    int exponent;
    frexp(a, &exponent);   /* a = f 2^exponent, f in [0.5, 1) */
    return ldexp(1.0, exponent - 1 - bits);
}

struct quantize_run {
    const struct fc_cuda_api *cu;
    struct fc_quantize_params p;
    int tokens, rows_per_token, slots;   /* tokens: allocated (varlen: with the pad) */
    int32_t *host_cu;
    uint16_t *host_in;
    double *exact;                       /* R x per element, fp64, packed like in */
    unsigned char *host_out;
    float *host_descale;
    CUdeviceptr in, out, descale, cu_seqlens;
};

static void release(struct quantize_run *run)
{
    if (run->cu) {
        CUdeviceptr buffers[] = {run->in, run->out, run->descale, run->cu_seqlens};
        for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
            if (buffers[i])
                run->cu->cuMemFree(buffers[i]);
    }
    free(run->host_cu);
    free(run->host_in);
    free(run->exact);
    free(run->host_out);
    free(run->host_descale);
}

/* Sequence b's first token and token count. */
static void sequence(const struct quantize_run *run, int b, int *first, int *count)
{
    *first = run->host_cu ? run->host_cu[b] : b * run->p.seqlen;
    *count = run->host_cu ? run->host_cu[b + 1] - run->host_cu[b] : run->p.seqlen;
}

/* The inputs, rounded through dtype, and their exact rotations. */
static void draw(struct quantize_run *run, const struct fc_quantize_case *c)
{
    struct fc_random random;
    fc_random_seed(&random, c->seed);
    const int d = run->p.head_dim;
    const size_t rows = (size_t)run->tokens * (size_t)run->p.heads;
    for (size_t r = 0; r < rows; r++) {
        double *x = run->exact + r * (size_t)d;
        for (int i = 0; i < d; i++) {
            double value = fc_random_normal(&random);
            if (c->outlier_scale > 1.0 && i % OUTLIER_EVERY == OUTLIER_FIRST)
                value *= c->outlier_scale;
            run->host_in[r * (size_t)d + (size_t)i] = fc_float_to_storage(run->p.dtype, (float)value);
            x[i] = fc_storage_to_float(run->p.dtype, run->host_in[r * (size_t)d + (size_t)i]);
        }
        if (run->p.rotate)
            fc_rotate_reference(x, d, run->p.rotation_seed);
    }
}

/* |x|max over slot's rows, of R x (rotated) or x. */
static double slot_amax(const struct quantize_run *run, int slot, int rotated)
{
    const int b = slot / run->p.descale_heads, group = run->p.heads / run->p.descale_heads;
    const int first_head = slot % run->p.descale_heads * group, d = run->p.head_dim;
    int first, count;
    sequence(run, b, &first, &count);
    double amax = 0.0;
    for (int t = first; t < first + count; t++)
        for (int h = first_head; h < first_head + group; h++) {
            const size_t at = ((size_t)t * (size_t)run->p.heads + (size_t)h) * (size_t)d;
            for (int i = 0; i < d; i++) {
                const double x = rotated ? run->exact[at + (size_t)i]
                                         : fc_storage_to_float(run->p.dtype, run->host_in[at + (size_t)i]);
                amax = fmax(amax, fabs(x));
            }
        }
    return amax;
}

static enum fc_status setup(struct fc_context *ctx, struct quantize_run *run, const struct fc_quantize_case *c,
                            char *msg, size_t size)
{
    run->p = c->shape;
    run->p.in = run->p.out = NULL;
    run->p.descale = NULL;
    run->p.cu_seqlens = NULL;
    memset(run->p.in_stride, 0, sizeof run->p.in_stride);
    memset(run->p.out_stride, 0, sizeof run->p.out_stride);
    if (run->p.descale_heads == 0)
        run->p.descale_heads = run->p.heads;
    if (run->p.out_dtype == FC_DTYPE_SAME)
        run->p.out_dtype = run->p.dtype;
    if (c->lens) {
        if (!(run->host_cu = malloc(((size_t)run->p.batch + 1) * sizeof *run->host_cu)))
            goto no_memory;
        run->host_cu[0] = 0;
        run->p.max_seqlen = 0;
        for (int b = 0; b < run->p.batch; b++) {
            run->host_cu[b + 1] = run->host_cu[b] + c->lens[b];
            run->p.max_seqlen = c->lens[b] > run->p.max_seqlen ? c->lens[b] : run->p.max_seqlen;
        }
        run->tokens = run->host_cu[run->p.batch] + FC_CHECK_PAD_TOKENS;
        run->p.seqlen = run->tokens;
        if (run->p.max_seqlen == 0) {
            snprintf(msg, size, "the check's varlen batch has no token (every length is 0)");
            return FC_ERR_INVALID_ARG;
        }
    } else {
        run->tokens = run->p.batch * run->p.seqlen;
    }
    run->slots = run->p.batch * run->p.descale_heads;
    const size_t elements = (size_t)run->tokens * (size_t)run->p.heads * (size_t)run->p.head_dim;
    const int out_bytes = run->p.out_dtype == FC_E4M3 ? 1 : 2;
    if (!(run->host_in = malloc(elements * 2)) || !(run->exact = malloc(elements * sizeof(double))) ||
        !(run->host_out = malloc(elements * (size_t)out_bytes)) ||
        !(run->host_descale = malloc((size_t)run->slots * sizeof(float))))
        goto no_memory;
    draw(run, c);
    const struct fc_cuda_api *cu = run->cu;
    CUresult r;
    if ((r = cu->cuMemAlloc(&run->in, elements * 2)) || (r = cu->cuMemAlloc(&run->out, elements * (size_t)out_bytes)) ||
        (r = cu->cuMemcpyHtoD(run->in, run->host_in, elements * 2)))
        return fc_cuda_fail(cu, r, "the quantize check's tensors", msg, size);
    r = out_bytes == 1 ? cu->cuMemsetD32(run->out, POISON_E4M3 * 0x01010101u, elements / 4)
                       : cu->cuMemsetD16(run->out, POISON_16, elements);
    if (r)
        return fc_cuda_fail(cu, r, "poisoning the quantize check's out", msg, size);
    if (run->p.out_dtype == FC_E4M3) {
        for (int s = 0; s < run->slots; s++)   /* FC_SCALE_GIVEN's; else poison */
            run->host_descale[s] = (float)(slot_amax(run, s, 1) / E4M3_MAX * GIVEN_FRACTION);
        if ((r = cu->cuMemAlloc(&run->descale, (size_t)run->slots * sizeof(float))))
            return fc_cuda_fail(cu, r, "the quantize check's descales", msg, size);
        r = run->p.scaling == FC_SCALE_GIVEN
                ? cu->cuMemcpyHtoD(run->descale, run->host_descale, (size_t)run->slots * sizeof(float))
                : cu->cuMemsetD32(run->descale, POISON_32, (size_t)run->slots);
        if (r)
            return fc_cuda_fail(cu, r, "the quantize check's descales", msg, size);
        run->p.descale = (float *)(uintptr_t)run->descale;
    }
    if (run->host_cu) {
        const size_t bytes = ((size_t)run->p.batch + 1) * sizeof *run->host_cu;
        if ((r = cu->cuMemAlloc(&run->cu_seqlens, bytes)) || (r = cu->cuMemcpyHtoD(run->cu_seqlens, run->host_cu, bytes)))
            return fc_cuda_fail(cu, r, "the quantize check's cu_seqlens", msg, size);
        run->p.cu_seqlens = (const int32_t *)(uintptr_t)run->cu_seqlens;
    }
    run->p.in = (const void *)(uintptr_t)run->in;
    run->p.out = (void *)(uintptr_t)run->out;
    (void)ctx;
    return FC_OK;
no_memory:
    snprintf(msg, size, "out of host memory for the quantize check");
    return FC_ERR_NOMEM;
}

/* Element at (packed index) against the exact value y (already scaled into out's units). */
static void judge(const struct quantize_run *run, size_t at, double y, double row_norm, double scale,
                  struct fc_quantize_result *res, double *error_sq, double *exact_sq)
{
    const int fp8 = run->p.out_dtype == FC_E4M3;
    const double got = fp8 ? fc_e4m3_to_float(run->host_out[at])
                           : fc_storage_to_float(run->p.dtype, ((const uint16_t *)run->host_out)[at]);
    const double target = fp8 ? fmax(-E4M3_MAX, fmin(E4M3_MAX, y)) : y;
    const double stages = run->p.rotate ? log2((double)fc_rotation_order(run->p.head_dim)) : 0.0;
    const double slack = FP32_SLACK * (fabs(y) + stages * row_norm);
    const double step = step_at(run->p.out_dtype, target);
    const double excess = isnan(got) ? INFINITY : (fabs(got - target) - 0.5 * step - slack) / step;
    res->elements++;
    if (!(excess <= 0.0))
        res->bad++;
    if (excess > res->worst_excess)
        res->worst_excess = excess;
    *error_sq += (got / scale - y / scale) * (got / scale - y / scale);
    *exact_sq += (y / scale) * (y / scale);
}

static void verify(const struct quantize_run *run, struct fc_quantize_result *res)
{
    const int d = run->p.head_dim, group = run->p.heads / run->p.descale_heads;
    const int fp8 = run->p.out_dtype == FC_E4M3;
    double error_sq = 0.0, exact_sq = 0.0, descale_sum = 0.0, plain_sum = 0.0, tensor_amax = 0.0;
    res->worst_excess = -INFINITY;
    for (int s = 0; s < run->slots; s++)
        tensor_amax = fmax(tensor_amax, slot_amax(run, s, 1));
    for (int s = 0; s < run->slots; s++) {
        double amax = run->p.scaling == FC_SCALE_PER_TENSOR ? tensor_amax : slot_amax(run, s, 1);
        double scale = 1.0;
        if (fp8) {
            const double descale = run->host_descale[s];   /* the device's (FC_SCALE_GIVEN: the given) */
            if (run->p.scaling != FC_SCALE_GIVEN) {
                const double expected = amax > 0.0 ? amax / E4M3_MAX : 1.0;
                const double error = fabs(descale - expected) / expected;
                res->descale_error = isnan(error) ? INFINITY : fmax(res->descale_error, error);
            }
            scale = 1.0 / descale;
            const double plain = slot_amax(run, s, 0);
            if (plain > 0.0) {   /* a slot without rows (an empty sequence) has descale 1: not a ratio */
                descale_sum += descale;
                plain_sum += plain / E4M3_MAX;
            }
        }
        const int b = s / run->p.descale_heads, first_head = s % run->p.descale_heads * group;
        int first, count;
        sequence(run, b, &first, &count);
        for (int t = first; t < first + count; t++)
            for (int h = first_head; h < first_head + group; h++) {
                const size_t at = ((size_t)t * (size_t)run->p.heads + (size_t)h) * (size_t)d;
                double norm = 0.0;
                for (int i = 0; i < d; i++)
                    norm += run->exact[at + (size_t)i] * run->exact[at + (size_t)i];
                norm = sqrt(norm) * scale;
                for (int i = 0; i < d; i++)
                    judge(run, at + (size_t)i, run->exact[at + (size_t)i] * scale, norm, scale, res, &error_sq,
                          &exact_sq);
            }
    }
    if (run->host_cu)   /* tokens of no sequence: untouched */
        for (size_t at = (size_t)run->host_cu[run->p.batch] * (size_t)run->p.heads * (size_t)d;
             at < (size_t)run->tokens * (size_t)run->p.heads * (size_t)d; at++)
            if (fp8 ? run->host_out[at] != POISON_E4M3 : ((const uint16_t *)run->host_out)[at] != POISON_16)
                res->bad++;
    res->relative_rmse = exact_sq > 0.0 ? sqrt(error_sq / exact_sq) : 0.0;
    res->amax_ratio = plain_sum > 0.0 ? descale_sum / plain_sum : 1.0;
}

enum fc_status fc_quantize_check(struct fc_context *ctx, const struct fc_quantize_case *c,
                                 struct fc_quantize_result *result, char *msg, size_t size)
{
    memset(result, 0, sizeof *result);
    struct quantize_run run;
    memset(&run, 0, sizeof run);
    int pushed = 0;
    if (!ctx->cuda) {
        snprintf(msg, size, "fc_quantize's check needs a GPU");
        return FC_ERR_NO_DEVICE;
    }
    enum fc_status status = fc_context_enter(ctx, &pushed);
    if (status != FC_OK)
        return status;
    run.cu = ctx->cuda;
    status = setup(ctx, &run, c, msg, size);
    if (status == FC_OK && (status = fc_quantize(ctx, &run.p, NULL)) != FC_OK && msg != fc_context_errmsg(ctx))
        snprintf(msg, size, "%s", fc_context_errmsg(ctx));
    CUresult r = CUDA_SUCCESS;
    if (status == FC_OK) {
        const size_t elements = (size_t)run.tokens * (size_t)run.p.heads * (size_t)run.p.head_dim;
        const size_t out_bytes = run.p.out_dtype == FC_E4M3 ? 1 : 2;
        if ((r = run.cu->cuCtxSynchronize()) ||
            (r = run.cu->cuMemcpyDtoH(run.host_out, run.out, elements * out_bytes)) ||
            (run.descale && (r = run.cu->cuMemcpyDtoH(run.host_descale, run.descale,
                                                      (size_t)run.slots * sizeof(float)))))
            status = fc_cuda_fail(run.cu, r, "running the quantize check", msg, size);
    }
    if (status == FC_OK)
        verify(&run, result);
    release(&run);
    fc_context_leave(ctx, pushed);
    return status;
}
