// The device rule of which keys a query row sees (kernel_templates/mask.cuh, compiled here for the
// host: its rule is plain integer arithmetic) against the host's (src/mask.c), on the masks
// src/problem.c resolves from the caller's fields: every row and key of many small problems, the
// key ranges of blocks of rows (where the kernels' loops start and stop), and that a tile the
// kernels use unmasked hides nothing. No GPU: this is the check that the two rules agree.
#include <cstdio>
#include <cstring>
#include <initializer_list>

// What the device headers need of CUDA, for the host.
#define __device__
#define __forceinline__ inline
#define __shared__ static
static inline void __syncthreads() {}
struct HostThreadIndex {
    unsigned x;
};
static HostThreadIndex threadIdx;
static inline float __int_as_float(int bits)
{
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
static inline float __shfl_xor_sync(unsigned, float x, int) { return x; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline float fmaxf(float a, float b) { return a > b ? a : b; }

#include "mask.cuh"   // its #pragma unroll means nothing here (-Wno-unknown-pragmas)

extern "C" {
#include "mask_internal.h"
#include "problem_internal.h"
}

namespace {

int failures;

#define EXPECT(condition, ...)                                                                     \
    do {                                                                                           \
        if (!(condition) && failures++ < 20) {                                                     \
            std::printf("FAIL %s: ", #condition);                                                  \
            std::printf(__VA_ARGS__);                                                              \
            std::printf("\n");                                                                     \
        }                                                                                          \
    } while (0)

struct Problem {
    int seqlen_q, seqlen_k, causal, window_left, window_right;
};

// Rows in blocks of block_m, as the kernels take them; padding rows past seqlen_q included.
template <bool CAUSAL, bool WINDOW>
void check_blocks(const fc::KeyMask<CAUSAL, WINDOW> &mask, const fc_mask *host, const Problem &p, int block_m)
{
    for (int row0 = 0; row0 < p.seqlen_q; row0 += block_m) {
        const int rows_end = row0 + block_m < p.seqlen_q ? row0 + block_m : p.seqlen_q;
        const fc_key_range keys = fc_mask_keys(host, p.seqlen_q, p.seqlen_k, row0, rows_end);
        const int begin = mask.key_begin(row0), end = mask.key_end(row0 + block_m);
        // every key a real row of the block sees is inside the loop's range
        EXPECT(keys.begin == keys.end || (begin <= keys.begin && end >= keys.end),
               "Sq %d Sk %d rows [%d, %d): loop [%d, %d), keys [%d, %d)", p.seqlen_q, p.seqlen_k, row0, rows_end,
               begin, end, keys.begin, keys.end);
        EXPECT(keys.begin == keys.end || begin == keys.begin, "Sq %d Sk %d row %d: begin %d, host %d", p.seqlen_q,
               p.seqlen_k, row0, begin, keys.begin);
        EXPECT(begin >= 0 && end <= p.seqlen_k, "loop [%d, %d)", begin, end);
        // a tile the kernels use as it is (not partial) hides no key from a real row of the block
        for (int key0 = begin / 16 * 16; key0 < end; key0 += 16) {
            if (mask.partial(row0, row0 + block_m - 1, key0, 16))
                continue;
            for (int row = row0; row < rows_end; row++)
                for (int key = key0; key < key0 + 16; key++)
                    EXPECT(fc_mask_visible(host, p.seqlen_q, p.seqlen_k, row, key),
                           "Sq %d Sk %d: tile %d unmasked, but row %d does not see key %d", p.seqlen_q, p.seqlen_k,
                           key0, row, key);
        }
    }
}

template <bool CAUSAL, bool WINDOW>
void check_rule(const fc_kernel_args &args, const Problem &p)
{
    const fc::KeyMask<CAUSAL, WINDOW> mask(args);
    const fc_mask *host = &args.mask;
    for (int row = 0; row < p.seqlen_q + 130; row++)   // and the padding rows of a last block
        for (int key = 0; key < p.seqlen_k + 130; key++) {
            const bool seen = fc_mask_visible(host, p.seqlen_q, p.seqlen_k, row, key);
            EXPECT(mask.visible(row, key) == seen && mask.hidden(row, key) == !seen,
                   "Sq %d Sk %d causal %d window [%d, %d]: row %d key %d: device %d, host %d", p.seqlen_q, p.seqlen_k,
                   p.causal, p.window_left, p.window_right, row, key, mask.visible(row, key), seen);
            if constexpr (WINDOW)   // the per-row form the kernels mask tiles with
                EXPECT(mask.span(row).hides(key) == !seen, "Sq %d Sk %d window [%d, %d]: row %d key %d: span [%d +%d)",
                       p.seqlen_q, p.seqlen_k, p.window_left, p.window_right, row, key, mask.span(row).first,
                       mask.span(row).count);
        }
    for (int block_m : {1, 16, 64, 128})
        check_blocks(mask, host, p, block_m);
    // the decode kernel: its packed rows are the query rows 0 .. seqlen_q - 1, and its splits run
    // from their first key to seqlen_k
    const fc_key_range keys = fc_mask_keys(host, p.seqlen_q, p.seqlen_k, 0, p.seqlen_q);
    EXPECT(keys.begin == keys.end || (mask.key_begin(0) == keys.begin && keys.end == p.seqlen_k),
           "decode: begin %d, keys [%d, %d)", mask.key_begin(0), keys.begin, keys.end);
}

// Resolves the caller's fields as the library does, then checks the kernel's instantiation.
void check(const Problem &p)
{
    fc_attention_params params;
    fc_attention_params_init(&params);
    params.batch = params.heads_q = params.heads_kv = 1;
    params.head_dim = 64;
    params.seqlen_q = p.seqlen_q;
    params.seqlen_k = p.seqlen_k;
    params.causal = p.causal;
    params.window_left = p.window_left;
    params.window_right = p.window_right;
    fc_problem problem;
    char msg[512];
    if (fc_problem_shape(&params, &problem, msg, sizeof msg) != FC_OK)
        return;   // causal with window_right > 0: refused, nothing to run
    fc_kernel_args args;
    std::memset(&args, 0, sizeof args);
    args.seqlen_q = p.seqlen_q;
    args.seqlen_k = p.seqlen_k;
    args.mask = problem.mask;
    const fc_mask &m = problem.mask;
    if (m.causal && m.window)
        check_rule<true, true>(args, p);
    else if (m.causal)
        check_rule<true, false>(args, p);
    else if (m.window)
        check_rule<false, true>(args, p);
    else
        check_rule<false, false>(args, p);
}

}  // namespace

int main()
{
    const int seqlens[] = {1, 2, 7, 16, 17, 33, 100};
    const int windows[] = {-1, 0, 1, 3, 15, 16, 40, 99, 200};
    long problems = 0;
    for (int seqlen_q : seqlens)
        for (int seqlen_k : seqlens)
            for (int causal = 0; causal <= 1; causal++)
                for (int left : windows)
                    for (int right : windows) {
                        check({seqlen_q, seqlen_k, causal, left, right});
                        problems++;
                    }
    std::printf("%ld problems: %s\n", problems, failures ? "FAILED" : "the device and host rules agree");
    return failures ? 1 : 0;
}
