/* The Hopper building blocks on the GPU, each alone so that a failure points at a part:
 * one WGMMA product against a CPU product, and TMA tile loads (in bounds and past the edge)
 * against the source, placement in 128-byte-swizzled shared memory included.
 * Skips (exit 77) without an sm_90 GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "probe_compile.h"
#include "reference_cpu_internal.h"
#include "tma_internal.h"

#define SKIP_EXIT 77
#define TILE 64
#define SMEM_SPARE 1024                      /* the probes align their tiles to 1024 bytes */

static const struct fc_cuda_api *cu;
static CUcontext context;
static CUmodule module;

static CUfunction function(const char *name, int smem)
{
    CUfunction f;
    assert_int_equal(cu->cuModuleGetFunction(&f, module, name), CUDA_SUCCESS);
    assert_int_equal(cu->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem), CUDA_SUCCESS);
    return f;
}

static void check_wgmma(enum fc_dtype dtype, const char *kernel)
{
    enum { N = TILE * TILE };
    uint16_t a[N], b[N];
    float d[N];
    struct fc_random random;
    fc_random_seed(&random, 1234 + (uint64_t)dtype);
    for (int i = 0; i < N; i++) {
        a[i] = fc_float_to_storage(dtype, (float)fc_random_normal(&random));
        b[i] = fc_float_to_storage(dtype, (float)fc_random_normal(&random));
    }
    CUdeviceptr da, db, dd;
    assert_int_equal(cu->cuMemAlloc(&da, sizeof a), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemAlloc(&db, sizeof b), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemAlloc(&dd, sizeof d), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyHtoD(da, a, sizeof a), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyHtoD(db, b, sizeof b), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemsetD32(dd, 0x7fc00000u, N), CUDA_SUCCESS);   /* NaN poison */
    int smem = 2 * N * 2 + SMEM_SPARE;
    void *params[] = {&da, &db, &dd};
    assert_int_equal(cu->cuLaunchKernel(function(kernel, smem), 1, 1, 1, 128, 1, 1, (unsigned)smem, NULL, params, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(cu->cuCtxSynchronize(), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyDtoH(d, dd, sizeof d), CUDA_SUCCESS);
    double worst = 0;
    for (int m = 0; m < TILE; m++)
        for (int n = 0; n < TILE; n++) {
            double expected = 0;
            for (int k = 0; k < TILE; k++)
                expected += (double)fc_storage_to_float(dtype, a[m * TILE + k]) * fc_storage_to_float(dtype, b[n * TILE + k]);
            double error = fabs(d[m * TILE + n] - expected);
            worst = isnan(d[m * TILE + n]) ? INFINITY : fmax(worst, error);
        }
    print_message("%s: max |D - A B^T| = %.3g over 64 x 64 (fp32 accumulation of 64 products)\n", kernel, worst);
    assert_true(worst < 1e-3);
    cu->cuMemFree(da);
    cu->cuMemFree(db);
    cu->cuMemFree(dd);
}

/* P (64 x 64, values in [0, 1) like softmax weights) times V (64 x 128), P from registers. */
static void check_wgmma_pv(enum fc_dtype dtype, const char *kernel)
{
    enum { KEYS = 64, COLUMNS = 128 };
    static uint16_t p[TILE * KEYS], v[KEYS * COLUMNS];
    static float d[TILE * COLUMNS];
    struct fc_random random;
    fc_random_seed(&random, 99 + (uint64_t)dtype);
    for (int i = 0; i < TILE * KEYS; i++)
        p[i] = fc_float_to_storage(dtype, (float)(fc_random_below(&random, 1 << 20) / 1048576.0));
    for (int i = 0; i < KEYS * COLUMNS; i++)
        v[i] = fc_float_to_storage(dtype, (float)fc_random_normal(&random));
    CUdeviceptr dp, dv, dd;
    assert_int_equal(cu->cuMemAlloc(&dp, sizeof p), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemAlloc(&dv, sizeof v), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemAlloc(&dd, sizeof d), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyHtoD(dp, p, sizeof p), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyHtoD(dv, v, sizeof v), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemsetD32(dd, 0x7fc00000u, TILE * COLUMNS), CUDA_SUCCESS);
    int smem = (int)sizeof v + SMEM_SPARE;
    void *params[] = {&dp, &dv, &dd};
    assert_int_equal(cu->cuLaunchKernel(function(kernel, smem), 1, 1, 1, 128, 1, 1, (unsigned)smem, NULL, params, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(cu->cuCtxSynchronize(), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyDtoH(d, dd, sizeof d), CUDA_SUCCESS);
    double worst = 0;
    for (int m = 0; m < TILE; m++)
        for (int n = 0; n < COLUMNS; n++) {
            double expected = 0;
            for (int k = 0; k < KEYS; k++)
                expected += (double)fc_storage_to_float(dtype, p[m * KEYS + k]) * fc_storage_to_float(dtype, v[k * COLUMNS + n]);
            worst = isnan(d[m * COLUMNS + n]) ? INFINITY : fmax(worst, fabs(d[m * COLUMNS + n] - expected));
        }
    print_message("%s: max |D - P V| = %.3g over 64 x 128 (P in registers, V transposed, two column blocks)\n",
                  kernel, worst);
    assert_true(worst < 1e-3);
    cu->cuMemFree(dp);
    cu->cuMemFree(dv);
    cu->cuMemFree(dd);
}

static void test_wgmma_pv_f16_registers_times_transposed_smem(void **state)
{
    (void)state;
    check_wgmma_pv(FC_F16, "fc_probe_wgmma_pv_f16");
}

static void test_wgmma_pv_bf16_registers_times_transposed_smem(void **state)
{
    (void)state;
    check_wgmma_pv(FC_BF16, "fc_probe_wgmma_pv_bf16");
}

static void test_wgmma_f16_matches_cpu_product(void **state)
{
    (void)state;
    check_wgmma(FC_F16, "fc_probe_wgmma_f16");
}

static void test_wgmma_bf16_matches_cpu_product(void **state)
{
    (void)state;
    check_wgmma(FC_BF16, "fc_probe_wgmma_bf16");
}

/* Loads the box at (x, y) of a rows x cols tensor with padded rows; checks every element of
 * the shared-memory image: source value at its 128B-swizzled place, zeros past the edge. */
static void check_tma_box(int x, int y)
{
    enum { ROWS = 200, COLS = 96, PITCH = 128, BOX_BYTES = TILE * TILE * 2 };
    static uint16_t src[ROWS * PITCH];
    uint16_t image[TILE * TILE];
    for (int i = 0; i < ROWS * PITCH; i++)
        src[i] = (uint16_t)(i * 2654435761u >> 16);
    CUdeviceptr dsrc, dout;
    assert_int_equal(cu->cuMemAlloc(&dsrc, sizeof src), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemAlloc(&dout, BOX_BYTES), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyHtoD(dsrc, src, sizeof src), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemsetD16(dout, 0x7fff, TILE * TILE), CUDA_SUCCESS);
    struct fc_tma_desc desc = {2, {COLS, ROWS}, {PITCH * 2}, {TILE, TILE}, 128};
    CUtensorMap map;
    char msg[512];
    assert_int_equal(fc_tma_encode(cu, &map, (void *)dsrc, 0, &desc, msg, sizeof msg), FC_OK);
    int smem = BOX_BYTES + SMEM_SPARE;
    void *params[] = {&map, &x, &y, &dout};
    assert_int_equal(cu->cuLaunchKernel(function("fc_probe_tma", smem), 1, 1, 1, 128, 1, 1, (unsigned)smem, NULL,
                                        params, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(cu->cuCtxSynchronize(), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyDtoH(image, dout, BOX_BYTES), CUDA_SUCCESS);
    int wrong = 0;
    for (int r = 0; r < TILE; r++)
        for (int c = 0; c < TILE; c++) {
            int chunk = c / 8, place = r * TILE + ((chunk ^ (r % 8)) * 8) + c % 8;
            int row = y + r, col = x + c;
            uint16_t expected = row < ROWS && col < COLS ? src[row * PITCH + col] : 0;
            wrong += image[place] != expected;
        }
    print_message("TMA box at (%d, %d): %d of %d elements misplaced or wrong\n", x, y, wrong, TILE * TILE);
    assert_int_equal(wrong, 0);
    cu->cuMemFree(dsrc);
    cu->cuMemFree(dout);
}

static void test_tma_loads_a_box_in_bounds(void **state)
{
    (void)state;
    check_tma_box(0, 0);
    check_tma_box(32, 64);
}

static void test_tma_fills_zeros_past_the_edge(void **state)
{
    (void)state;
    check_tma_box(64, 150);   /* columns 96.. and rows 200.. lie outside */
}

static void test_tma_encode_refuses_what_it_cannot_describe(void **state)
{
    (void)state;
    CUtensorMap map;
    char msg[512];
    struct fc_tma_desc odd_stride = {2, {64, 64}, {136}, {64, 64}, 128};
    assert_int_equal(fc_tma_encode(cu, &map, (void *)(uintptr_t)4096, 0, &odd_stride, msg, sizeof msg),
                     FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "multiples of 16 bytes"));
    struct fc_tma_desc wide_box = {2, {256, 64}, {512}, {128, 64}, 128};
    assert_int_equal(fc_tma_encode(cu, &map, (void *)(uintptr_t)4096, 0, &wide_box, msg, sizeof msg),
                     FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "swizzle span"));
}

static int setup(void **state)
{
    (void)state;
    CUdevice device;
    if (cu->cuDeviceGet(&device, 0) || cu->cuDevicePrimaryCtxRetain(&context, device) || cu->cuCtxPushCurrent(context))
        return -1;
    char msg[16384];
    struct fc_nvrtc_output out;
    if (fc_test_compile_probe(&out, msg, sizeof msg) != FC_OK) {
        print_error("probe compile failed: %s\n", msg);
        return -1;
    }
    CUresult r = cu->cuModuleLoadData(&module, out.cubin);
    fc_nvrtc_output_free(&out);
    return r == CUDA_SUCCESS ? 0 : -1;
}

int main(void)
{
    char why[1024];
    cu = fc_cuda_load(why, sizeof why);
    int count = 0, major = 0;
    CUdevice device;
    if (cu)
        cu->cuDeviceGetCount(&count);
    if (count > 0 && cu->cuDeviceGet(&device, 0) == CUDA_SUCCESS)
        cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    if (!cu || count == 0 || major != 9) {
        printf("SKIP: the Hopper probes need an sm_90 GPU: %s\n",
               !cu ? why : count == 0 ? "the driver reports no device" : "device 0 is not sm_90");
        return SKIP_EXIT;
    }
    if (fc_nvrtc_load(why, sizeof why)) {
        printf("SKIP: the Hopper probes are compiled at run time and NVRTC is missing: %s\n", why);
        return SKIP_EXIT;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wgmma_f16_matches_cpu_product),
        cmocka_unit_test(test_wgmma_bf16_matches_cpu_product),
        cmocka_unit_test(test_wgmma_pv_f16_registers_times_transposed_smem),
        cmocka_unit_test(test_wgmma_pv_bf16_registers_times_transposed_smem),
        cmocka_unit_test(test_tma_loads_a_box_in_bounds),
        cmocka_unit_test(test_tma_fills_zeros_past_the_edge),
        cmocka_unit_test(test_tma_encode_refuses_what_it_cannot_describe),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
