/* The quantize family: fc_quantize, one 16-bit tensor to FP8 e4m3 with its descales, optionally
 * Hadamard-rotated first (kernel_templates/quantize.cuh). Not an attention kernel: the selector
 * never asks it; its public call validates, plans and launches here. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "context_internal.h"
#include "family_internal.h"
#include "quantize_internal.h"

#define THREADS 256              /* quantize.cuh's QuantizeRows::THREADS */
#define HEAD_DIM_MAX 256
#define POINTER_ALIGN_BYTES 16   /* 16-byte loads and stores */
#define MIN_ARCH 89              /* cvt.rn.satfinite.e4m3x2.f32 */
#define CTAS_PER_SM 4            /* the grid's target when the slots alone are fewer */
#define GRID_Y_MAX 65535         /* CUDA's limit on gridDim.y (a slot's CTAs) */
/* fc_quantize_params as 0.3 first versioned it */
#define PARAMS_SIZE_MIN (offsetof(struct fc_quantize_params, max_seqlen) + sizeof(int))

static int smem_bytes(const struct fc_variant *v)
{
    (void)v;
    return 0;
}

static void defaults(struct fc_variant *v)
{
    v->warps = THREADS / 32;
    v->block_m = THREADS / (v->head_dim / 8);   /* rows per pass */
    v->block_n = 1;
    v->stages = 1;
}

static int check(const struct fc_variant *v, char *why, size_t size)
{
    if (v->head_dim % 16)
        return fc_variant_fail(why, size, "the quantize kernel takes head_dim in multiples of 16, not %d", v->head_dim);
    if (v->arch < MIN_ARCH)
        return fc_variant_fail(why, size, "the quantize kernel converts to e4m3 in hardware: sm_89 or newer, not sm_%d",
                               v->arch);
    if (v->causal || v->window || v->softcap || v->varlen || v->paged || v->kv_fp8 || v->q_fp8 || v->pingpong ||
        v->block_n != 1 || v->stages != 1 || v->warps != THREADS / 32 || v->block_m != THREADS / (v->head_dim / 8))
        return fc_variant_fail(why, size, "the quantize kernel has no mask, no tiles and %d threads", THREADS);
    return 0;
}

static int kernel_type(const struct fc_variant *v, char *out, size_t size)
{
    return snprintf(out, size, "fc::QuantizeAmax<%s, %d>", fc_dtype_traits(v->dtype)->device_type, v->head_dim);
}

/* The module's second kernel: the rows again, quantized. */
static int second_source(const struct fc_variant *v, char *out, size_t size)
{
    return snprintf(out, size,
        "extern \"C\" __global__ void __launch_bounds__(%d)\n"
        "fc_quantize_kernel(const __grid_constant__ fc_quantize_args args)\n"
        "{\n"
        "    fc::quantize_store<%s, %d>(args);\n"
        "}\n",
        THREADS, fc_dtype_traits(v->dtype)->device_type, v->head_dim);
}

const struct fc_family fc_family_quantize = {
    .id = FC_KERNEL_QUANTIZE,
    .name = "quantize",
    .template_file = "quantize.cuh",
    .args_type = "fc_quantize_args",
    .second_entry = "fc_quantize_kernel",
    .defaults = defaults,
    .check = check,
    .smem_bytes = smem_bytes,
    .kernel_type = kernel_type,
    .second_source = second_source,
};

void fc_quantize_params_init(struct fc_quantize_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->out_dtype = FC_E4M3;
    params->scaling = FC_SCALE_PER_HEAD;
}

/* The shape rules: sizes, types, the scaling and the rotation. */
static enum fc_status validate_shape(struct fc_quantize_params *p, char *msg)
{
    const struct fc_dtype_traits *dtype = fc_dtype_traits(p->dtype);
    if (!dtype || !dtype->has_kernels)
        return fc_problem_fail(dtype ? FC_ERR_UNSUPPORTED : FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX,
                               "dtype %d: fc_quantize reads FC_F16 or FC_BF16", (int)p->dtype);
    if (p->out_dtype == FC_DTYPE_SAME)
        p->out_dtype = p->dtype;
    if (p->out_dtype != FC_E4M3 && p->out_dtype != p->dtype)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "out_dtype %d: FC_E4M3, or dtype (%s) to rotate only", (int)p->out_dtype,
                               dtype->name);
    const struct fc_named_size sizes[] = {
        {"batch", p->batch}, {"seqlen", p->seqlen}, {"heads", p->heads}, {"head_dim", p->head_dim}};
    const enum fc_status status = fc_problem_positive(sizes, sizeof sizes / sizeof sizes[0], msg, FC_MESSAGE_MAX);
    if (status != FC_OK)
        return status;
    if (p->head_dim % 16 || p->head_dim > HEAD_DIM_MAX)
        return fc_problem_fail(FC_ERR_UNSUPPORTED, msg, FC_MESSAGE_MAX, "head_dim %d is not supported: a multiple of 16 up to %d", p->head_dim,
                               HEAD_DIM_MAX);
    if (p->descale_heads == 0)
        p->descale_heads = p->heads;
    if (p->descale_heads < 0 || p->heads % p->descale_heads)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "descale_heads (%d) must divide heads (%d): one descale covers heads / "
                               "descale_heads heads (0 = heads)", p->descale_heads, p->heads);
    if (p->scaling != FC_SCALE_PER_HEAD && p->scaling != FC_SCALE_PER_TENSOR && p->scaling != FC_SCALE_GIVEN)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "scaling %d: FC_SCALE_PER_HEAD, FC_SCALE_PER_TENSOR or FC_SCALE_GIVEN",
                               (int)p->scaling);
    if (p->out_dtype != FC_E4M3 && p->scaling != FC_SCALE_PER_HEAD)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "scaling is FP8's: with a 16-bit out_dtype (rotation only) leave it "
                               "FC_SCALE_PER_HEAD, the default");
    if (p->out_dtype != FC_E4M3 && !p->rotate)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "a 16-bit out_dtype only rotates: set rotate, or out_dtype FC_E4M3");
    if (p->rotate != 0 && p->rotate != 1)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "rotate must be 0 or 1 (got %d)", p->rotate);
    if (p->max_seqlen < 0 || (p->max_seqlen > 0) != (p->cu_seqlens != NULL))
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "varlen takes both cu_seqlens and max_seqlen > 0 (got %s and %d); dense "
                               "neither", p->cu_seqlens ? "cu_seqlens" : "no cu_seqlens", p->max_seqlen);
    if (p->max_seqlen > p->seqlen)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "max_seqlen (%d) is more than seqlen (%d), the total token count",
                               p->max_seqlen, p->seqlen);
    int64_t slots;
    if (__builtin_mul_overflow((int64_t)p->batch, (int64_t)p->descale_heads, &slots) || slots > INT_MAX)
        return fc_problem_fail(FC_ERR_UNSUPPORTED, msg, FC_MESSAGE_MAX, "batch * descale_heads = %d * %d descales: more than one launch takes",
                               p->batch, p->descale_heads);
    return FC_OK;
}

/* The tensor rules: pointers and strides. */
static enum fc_status validate_tensors(struct fc_quantize_params *p, char *msg)
{
    enum fc_status status;
    const int fp8 = p->out_dtype == FC_E4M3, out_bytes = fp8 ? 1 : 2;
    if ((status = fc_problem_pointer("in", p->in, POINTER_ALIGN_BYTES, msg, FC_MESSAGE_MAX)) ||
        (status = fc_problem_pointer("out", p->out, POINTER_ALIGN_BYTES, msg, FC_MESSAGE_MAX)))
        return status;
    if (fp8 && (status = fc_problem_pointer("descale", p->descale, sizeof(float), msg, FC_MESSAGE_MAX)))
        return status;
    if (!fp8 && p->descale)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "descale is FP8's: NULL with a 16-bit out_dtype (rotation only)");
    if (fp8 && p->out == p->in)
        return fc_problem_fail(FC_ERR_INVALID_ARG, msg, FC_MESSAGE_MAX, "out is in: an e4m3 out must not overlap in");
    if (p->cu_seqlens && (status = fc_problem_pointer("cu_seqlens", p->cu_seqlens, sizeof(int32_t), msg,
                                                      FC_MESSAGE_MAX)))
        return status;
    int64_t in_stride[3], out_stride[3];
    if (p->cu_seqlens) {
        if ((status = fc_problem_varlen_strides("in", p->in_stride, p->seqlen, p->heads, p->head_dim, 2, in_stride,
                                                msg, FC_MESSAGE_MAX)) ||
            (status = fc_problem_varlen_strides("out", p->out_stride, p->seqlen, p->heads, p->head_dim, out_bytes,
                                                out_stride, msg, FC_MESSAGE_MAX)))
            return status;
    } else if ((status = fc_problem_strides("in", p->in_stride, p->batch, p->seqlen, p->heads, p->head_dim, 2,
                                            in_stride, msg, FC_MESSAGE_MAX)) ||
               (status = fc_problem_strides("out", p->out_stride, p->batch, p->seqlen, p->heads, p->head_dim,
                                            out_bytes, out_stride, msg, FC_MESSAGE_MAX))) {
        return status;
    }
    memcpy(p->in_stride, in_stride, sizeof in_stride);
    memcpy(p->out_stride, out_stride, sizeof out_stride);
    return FC_OK;
}

enum fc_status fc_quantize_validate(struct fc_quantize_params *p, char *msg)
{
    enum fc_status status = validate_shape(p, msg);
    return status == FC_OK ? validate_tensors(p, msg) : status;
}

static void quantize_args(const struct fc_quantize_params *p, unsigned *amax, struct fc_quantize_args *a)
{
    memset(a, 0, sizeof *a);
    a->in = p->in;
    a->out = p->out;
    a->descale = p->descale;
    a->amax = amax;
    a->cu_seqlens = p->cu_seqlens;
    for (int i = 0; i < 3; i++) {
        a->in_stride[i] = p->in_stride[i];
        a->out_stride[i] = p->out_stride[i];
    }
    a->rotation_seed = p->rotation_seed;
    a->seqlen = p->seqlen;
    a->descale_heads = p->descale_heads;
    a->group = p->heads / p->descale_heads;
    a->per_tensor = p->scaling == FC_SCALE_PER_TENSOR;
    a->given = p->scaling == FC_SCALE_GIVEN;
    a->rotate = p->rotate;
    a->out_fp8 = p->out_dtype == FC_E4M3;
}

/* CTAs per slot: enough passes for the longest sequence, no more than fill the GPU CTAS_PER_SM times. */
static unsigned slot_ctas(const struct fc_quantize_params *p, int sm_count)
{
    const int64_t rows_per_pass = THREADS / (p->head_dim / 8);
    const int64_t tokens = p->cu_seqlens ? p->max_seqlen : p->seqlen;
    const int64_t passes = (tokens * (p->heads / p->descale_heads) + rows_per_pass - 1) / rows_per_pass;
    const int64_t slots = (int64_t)p->batch * p->descale_heads;
    const int64_t wanted = ((int64_t)(sm_count > 0 ? sm_count : 132) * CTAS_PER_SM + slots - 1) / slots;
    int64_t ctas = wanted < passes ? wanted : passes;
    if (ctas > GRID_Y_MAX)
        ctas = GRID_Y_MAX;
    return (unsigned)(ctas > 0 ? ctas : 1);
}

static enum fc_status launch(struct fc_context *ctx, const struct fc_quantize_params *p, const struct fc_kernel *kernel,
                             CUstream stream, char *msg)
{
    const struct fc_cuda_api *cu = ctx->cuda;
    const unsigned slots = (unsigned)(p->batch * p->descale_heads), ctas = slot_ctas(p, ctx->target.sm_count);
    const int amax_pass = p->out_dtype == FC_E4M3 && p->scaling != FC_SCALE_GIVEN;
    const size_t amax_count = p->scaling == FC_SCALE_PER_TENSOR ? 1 : slots;
    CUdeviceptr scratch = 0;
    CUresult r;
    if (amax_pass) {
        if ((r = fc_scratch_alloc(&ctx->scratch, cu, &scratch, amax_count * sizeof(unsigned), stream)) != CUDA_SUCCESS)
            return fc_cuda_fail(cu, r, "allocating quantize's amax", msg, FC_MESSAGE_MAX);
        if ((r = cu->cuMemsetD32Async(scratch, 0, amax_count, stream)) != CUDA_SUCCESS) {
            cu->cuMemFreeAsync(scratch, stream);
            return fc_cuda_fail(cu, r, "cuMemsetD32Async (quantize amax)", msg, FC_MESSAGE_MAX);
        }
    }
    struct fc_quantize_args args;
    quantize_args(p, (unsigned *)(uintptr_t)scratch, &args);
    void *params[1] = {&args};
    enum fc_status status = FC_OK;
    if (amax_pass && (r = cu->cuLaunchKernel(kernel->function, slots, ctas, 1, THREADS, 1, 1, 0, stream, params,
                                             NULL)) != CUDA_SUCCESS)
        status = fc_cuda_fail(cu, r, "cuLaunchKernel (quantize amax)", msg, FC_MESSAGE_MAX);
    if (status == FC_OK &&
        (r = cu->cuLaunchKernel(kernel->second, slots, ctas, 1, THREADS, 1, 1, 0, stream, params, NULL)) != CUDA_SUCCESS)
        status = fc_cuda_fail(cu, r, "cuLaunchKernel (quantize)", msg, FC_MESSAGE_MAX);
    if (amax_pass && (r = cu->cuMemFreeAsync(scratch, stream)) != CUDA_SUCCESS && status == FC_OK)
        status = fc_cuda_fail(cu, r, "cuMemFreeAsync (quantize amax)", msg, FC_MESSAGE_MAX);
    return status;
}

enum fc_status fc_quantize(struct fc_context *ctx, const struct fc_quantize_params *params, void *stream)
{
    if (!ctx)
        return FC_ERR_INVALID_ARG;
    char *msg = fc_context_message(ctx);
    struct fc_quantize_params p;
    struct fc_quantize_params initial;   /* what fields a caller's struct predates take */
    fc_quantize_params_init(&initial);
    enum fc_status status = fc_read_struct(params, &initial, sizeof p, PARAMS_SIZE_MIN, &p, "params",
                                           "fc_quantize_params_init", msg, FC_MESSAGE_MAX);
    if (status == FC_OK)
        status = fc_quantize_validate(&p, msg);
    if (status != FC_OK)
        return status;
    if (ctx->cuda && ctx->target.arch < MIN_ARCH)
        return fc_problem_fail(FC_ERR_UNSUPPORTED, msg, FC_MESSAGE_MAX, "fc_quantize converts to e4m3 in hardware: sm_89 or newer (this GPU is "
                               "sm_%d)", ctx->target.arch);
    struct fc_plan plan;   /* its grid is launch's: two kernels, (slot, CTAs of the slot) */
    fc_plan_utility(&plan, FC_KERNEL_QUANTIZE, p.dtype, p.head_dim, &ctx->target,
                    "quantize kernel: the amax, then e4m3 (optionally Hadamard-rotated)");
    int pushed;
    struct fc_kernel kernel;
    if ((status = fc_context_begin_launch(ctx, &plan, NULL, &kernel, &pushed, msg)) != FC_OK)
        return status;
    status = launch(ctx, &p, &kernel, (CUstream)stream, msg);
    fc_context_leave(ctx, pushed);
    return status;
}
