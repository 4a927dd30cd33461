/* TMA tensor maps: validation against the documented rules, then cuTensorMapEncodeTiled. */
#include <stdio.h>

#include "tma_internal.h"

#define GLOBAL_ALIGN 16          /* bytes, without interleave */
#define STRIDE_MULTIPLE 16       /* bytes */
#define STRIDE_LIMIT (1ull << 40)
#define BOX_LIMIT 256

static enum fc_status unsupported(char *msg, size_t size, const char *rule, unsigned long long value)
{
    snprintf(msg, size, "TMA cannot describe this tensor: %s (got %llu)", rule, value);
    return FC_ERR_UNSUPPORTED;
}

static enum fc_status check(const void *global, int element_bytes, const struct fc_tma_desc *d, char *msg,
                            size_t size)
{
    if (d->rank < 1 || d->rank > FC_TMA_RANK_MAX)
        return unsupported(msg, size, "rank must be 1 to 5", (unsigned long long)d->rank);
    if ((uintptr_t)global % GLOBAL_ALIGN)
        return unsupported(msg, size, "the global address must be 16-byte aligned", (uintptr_t)global);
    for (int i = 0; i < d->rank - 1; i++)
        if (d->strides[i] % STRIDE_MULTIPLE || d->strides[i] >= STRIDE_LIMIT)
            return unsupported(msg, size, "strides must be multiples of 16 bytes below 2^40", d->strides[i]);
    for (int i = 0; i < d->rank; i++) {
        if (d->dims[i] == 0 || d->dims[i] > (1ull << 32))
            return unsupported(msg, size, "each dimension must be 1 to 2^32", d->dims[i]);
        if (d->box[i] == 0 || d->box[i] > BOX_LIMIT)
            return unsupported(msg, size, "each box dimension must be 1 to 256", d->box[i]);
    }
    if ((d->box[0] * element_bytes) % 16)
        return unsupported(msg, size, "the inner box must be a multiple of 16 bytes", d->box[0] * element_bytes);
    if (d->swizzle_bytes && d->box[0] * element_bytes > (unsigned)d->swizzle_bytes)
        return unsupported(msg, size, "the inner box must fit the swizzle span", d->box[0] * element_bytes);
    return FC_OK;
}

static CUtensorMapSwizzle swizzle_mode(int bytes)
{
    switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

enum fc_status fc_tma_encode(const struct fc_cuda_api *cuda, CUtensorMap *map, const void *global,
                             enum fc_dtype dtype, const struct fc_tma_desc *d, char *msg, size_t size)
{
    const struct fc_dtype_traits *element = fc_dtype_traits(dtype);
    if (!element)
        return unsupported(msg, size, "the dtype must be an enum fc_dtype value", (unsigned long long)dtype);
    if (d->swizzle_bytes != 0 && d->swizzle_bytes != 32 && d->swizzle_bytes != 64 && d->swizzle_bytes != 128)
        return unsupported(msg, size, "swizzle must be 0, 32, 64 or 128 bytes", (unsigned long long)d->swizzle_bytes);
    enum fc_status status = check(global, element->bytes, d, msg, size);
    if (status != FC_OK)
        return status;
    cuuint64_t dims[FC_TMA_RANK_MAX], strides[FC_TMA_RANK_MAX - 1];
    cuuint32_t box[FC_TMA_RANK_MAX], element_strides[FC_TMA_RANK_MAX];
    for (int i = 0; i < d->rank; i++) {
        dims[i] = d->dims[i];
        box[i] = d->box[i];
        element_strides[i] = 1;
        if (i < d->rank - 1)
            strides[i] = d->strides[i];
    }
    CUresult r = cuda->cuTensorMapEncodeTiled(
        map, (CUtensorMapDataType)element->tma_type, (cuuint32_t)d->rank,
        (void *)global, dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle_mode(d->swizzle_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? FC_OK : fc_cuda_fail(cuda, r, "cuTensorMapEncodeTiled", msg, size);
}
