/* The gpu suite: every kernel the selector picks, against the fp64 CPU reference over BENCH.md's
 * awkward shapes; determinism; misuse on a real context leaves the GPU usable.
 * Without a GPU it says so and exits 77 (meson's skip). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "check_internal.h"
#include "context_internal.h"
#include "quantize_internal.h"

#define SKIP_EXIT 77
#define CHECK_ROWS 48           /* rows per case checked on the CPU; NaN scan covers every element */
#define DETERMINISM_RUNS 100

static struct fc_context *ctx;            /* the selector's choice */
static struct fc_context *reference_ctx;  /* FC_FORCE_VARIANT=reference: the oracle kernel itself */
/* On sm_90 GPUs only: the Hopper kernel forced, each schedule and consumer count, up to the largest
 * head_dim whose stages fit in shared memory. */
static const struct { const char *variant; int max_head_dim; } SM90_FORCED[] = {
    {"sm90", 256},               /* the defaults: plain at 64, warp-specialized x2 from 128 */
    {"sm90:m128n64w8", 256},     /* plain, two warpgroups */
    {"sm90:m64n64w8", 256},      /* warp-specialized, one consumer */
    {"sm90:m192n128w16", 64},    /* warp-specialized, three consumers (spills at 128) */
    {"sm90:m128n64s3w12", 192},  /* warp-specialized, three stages */
    {"sm90:m128n64w12p1", 256},  /* warp-specialized, two consumers taking turns (ping-pong) */
    {"sm90:m192n128w16p1", 64},  /* ... three consumers taking turns */
    {"sm90:g1", 256},            /* GQA-packed rows (a K/V head's query heads in each tile), two consumers,
                                    their keys split where the row blocks leave SMs idle */
    {"sm90:m64w8g1", 256},       /* ... one consumer */
    {"sm90:m64n64w8g1", 128},    /* ... of 64-key tiles (two CTAs an SM: large-batch decode) */
    {"sm90:m64w8g1k3", 256},     /* ... three splits wherever there are tiles for them (empty ones too) */
};
#define SM90_FORCED_COUNT (sizeof SM90_FORCED / sizeof SM90_FORCED[0])
static struct fc_context *sm90_ctx[SM90_FORCED_COUNT];
static struct fc_context *sm80_ctx;       /* FC_FORCE_VARIANT=sm80: covered even where sm90 is chosen */
static uint64_t seed;

/* (batch, seqlen_q, seqlen_k, heads_q, heads_kv, layout): tile multiples and not, Sq != Sk both
 * ways (causal rows with no visible key when Sq > Sk), GQA 1/4/8, batch 1 and many, strided. */
static const struct { int b, sq, sk, hq, hkv; enum fc_check_layout layout; } SHAPES[] = {
    {1, 128, 128, 8, 8, FC_LAYOUT_PACKED},
    {3, 17, 129, 8, 2, FC_LAYOUT_PACKED},
    {2, 129, 17, 8, 1, FC_LAYOUT_PACKED},
    {1, 1000, 1000, 4, 4, FC_LAYOUT_PACKED},
    {1, 1, 4097, 8, 1, FC_LAYOUT_PACKED},
    {1, 4097, 127, 2, 2, FC_LAYOUT_PACKED},
    {4, 127, 1, 4, 4, FC_LAYOUT_PACKED},
    {2, 129, 1000, 8, 2, FC_LAYOUT_BHSD},
    /* (query heads per K/V head) x Sq <= 16: the split-KV decode kernel where selected */
    {2, 1, 1000, 32, 8, FC_LAYOUT_PACKED},
    {1, 4, 777, 8, 2, FC_LAYOUT_PACKED},      /* 16 packed rows, causal per row */
    {3, 2, 64, 4, 4, FC_LAYOUT_BHSD},
    {1, 1, 20000, 16, 2, FC_LAYOUT_PACKED},   /* many splits */
    /* <= 128: the decode kernel's 64-, 32- and 128-row tiles (27 and 72 rows: partial ones) */
    {2, 16, 3000, 32, 8, FC_LAYOUT_PACKED},
    {1, 9, 1500, 12, 4, FC_LAYOUT_BHSD},
    {1, 9, 2000, 64, 8, FC_LAYOUT_PACKED},
};
static const int HEAD_DIMS[] = {64, 96, 128, 192, 256, 40};   /* 40: not a multiple of 16 */

/* Sliding windows, sinks and softcaps, alone and together, on the shapes of FEATURE_SHAPES: both
 * window sides, causal through the window, wider than the sequence, rows left without a key (Sq >
 * Sk); sinks N(0, 1) and x20 (large positive ones); softcaps 30 and 50 at scale 1, where they bite. */
static const struct { int causal, left, right; float sinks, softcap, scale; } FEATURES[] = {
    {1, 64, -1, 0.f, 0.f, 0.f},
    {0, 40, 17, 0.f, 0.f, 0.f},
    {0, 3, 2, 0.f, 0.f, 0.f},
    {0, 5000, 5000, 0.f, 0.f, 0.f},
    {1, -1, -1, 1.f, 0.f, 0.f},
    {0, 10, 0, 20.f, 0.f, 0.f},
    {1, -1, -1, 0.f, 30.f, 1.f},
    {1, 32, 0, 5.f, 50.f, 1.f},
};
/* Indices into SHAPES: Sq > Sk, strided Sq < Sk, and the decode shapes (16 packed rows; many splits;
 * 64 packed rows). */
static const int FEATURE_SHAPES[] = {2, 7, 9, 11, 12};

static struct fc_check_case make_case(int shape, int head_dim, enum fc_dtype dtype, int causal)
{
    struct fc_check_case c;
    memset(&c, 0, sizeof c);
    fc_attention_params_init(&c.shape);
    c.shape.dtype = dtype;
    c.shape.batch = SHAPES[shape].b;
    c.shape.seqlen_q = SHAPES[shape].sq;
    c.shape.seqlen_k = SHAPES[shape].sk;
    c.shape.heads_q = SHAPES[shape].hq;
    c.shape.heads_kv = SHAPES[shape].hkv;
    c.shape.head_dim = head_dim;
    c.shape.causal = causal;
    c.layout = SHAPES[shape].layout;
    c.want_lse = 1;
    c.check_rows = CHECK_ROWS;
    c.seed = seed++;
    return c;
}

static struct fc_check_case make_feature_case(int shape, int head_dim, enum fc_dtype dtype, int feature)
{
    struct fc_check_case c = make_case(shape, head_dim, dtype, FEATURES[feature].causal);
    c.shape.window_left = FEATURES[feature].left;
    c.shape.window_right = FEATURES[feature].right;
    c.shape.softcap = FEATURES[feature].softcap;
    c.shape.softmax_scale = FEATURES[feature].scale;
    c.sinks_magnitude = FEATURES[feature].sinks;
    return c;
}

/* Prepares, launches once on context, downloads and judges; returns 1 if it passed. */
static int run_case(struct fc_context *context, const struct fc_check_case *c, struct fc_error_stats *stats,
                    char *kernel)
{
    struct fc_context *ctx = context;
    struct fc_check_run run;
    char msg[FC_MESSAGE_MAX] = "";
    enum fc_status status = fc_check_prepare(ctx, c, &run, msg, sizeof msg);
    struct fc_plan_info info = {.kernel = "?"};
    if (status == FC_OK && (status = fc_attention_plan(ctx, &run.params, &info)) == FC_OK &&
        (status = fc_attention_forward(ctx, &run.params, NULL)) == FC_OK)
        status = fc_check_download(&run, msg, sizeof msg);
    else if (status != FC_OK && !*msg)
        snprintf(msg, sizeof msg, "%s", fc_context_errmsg(ctx));
    int passed = status == FC_OK && fc_check_verify(&run, stats);
    if (status != FC_OK)
        print_error("%s: %s\n", fc_status_name(status), status == FC_OK ? "" : msg);
    snprintf(kernel, FC_VARIANT_NAME_MAX, "%s", info.kernel);
    fc_check_release(&run);
    return passed;
}

/* Runs one case and prints its line; returns 1 if it failed. */
static int run_and_report(struct fc_context *context, const struct fc_check_case *c)
{
    struct fc_error_stats e;
    char kernel[FC_VARIANT_NAME_MAX];
    int passed = run_case(context, c, &e, kernel);
    const struct fc_attention_params *p = &c->shape;
    print_message("%s B=%d Sq=%d Sk=%d Hq=%d Hkv=%d %s%s window (%d, %d) sinks %g softcap %g: err %.3g native %.3g "
                  "lse %.2g bad %lld %s\n", passed ? "ok  " : "FAIL", p->batch, p->seqlen_q, p->seqlen_k, p->heads_q,
                  p->heads_kv, c->layout == FC_LAYOUT_BHSD ? "BHSD" : "BSHD",
                  p->kv_dtype == FC_E4M3 ? (c->kv_descale > 0.f ? " kv e4m3" : " kv e4m3 (no descales)") : "",
                  p->window_left, p->window_right, c->sinks_magnitude, p->softcap, e.max_error, e.native_error,
                  e.max_lse_error, e.bad_rows, kernel);
    return !passed;
}

/* Every case on one context, the head dims a family takes (all, or only the multiples of 64 the
 * Hopper kernel takes, up to max_head_dim): the shapes causal and not, then FEATURES on
 * FEATURE_SHAPES; returns the number that failed. */
static int run_matrix_of(struct fc_context *context, int hopper_dims, int max_head_dim, int decode_rows)
{
    const int decode_only = decode_rows > 0;   /* the decode kernel's shapes: up to decode_rows packed rows */
    int failures = 0, cases = 0;
    for (int dtype = FC_F16; dtype <= FC_BF16; dtype++)
        for (size_t d = 0; d < sizeof HEAD_DIMS / sizeof HEAD_DIMS[0]; d++) {
            if ((hopper_dims && (HEAD_DIMS[d] % 64 || HEAD_DIMS[d] > max_head_dim)) ||
                (decode_only && HEAD_DIMS[d] % 16))
                continue;
            for (int causal = 0; causal <= 1; causal++)
                for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
                    if (decode_only && SHAPES[s].sq * (SHAPES[s].hq / SHAPES[s].hkv) > decode_rows)
                        continue;
                    struct fc_check_case c = make_case((int)s, HEAD_DIMS[d], (enum fc_dtype)dtype, causal);
                    failures += run_and_report(context, &c);
                    cases++;
                }
            for (size_t f = 0; f < sizeof FEATURES / sizeof FEATURES[0]; f++)
                for (size_t s = 0; s < sizeof FEATURE_SHAPES / sizeof FEATURE_SHAPES[0]; s++) {
                    const int shape = FEATURE_SHAPES[s];
                    if (decode_only && SHAPES[shape].sq * (SHAPES[shape].hq / SHAPES[shape].hkv) > decode_rows)
                        continue;
                    struct fc_check_case c = make_feature_case(shape, HEAD_DIMS[d], (enum fc_dtype)dtype, (int)f);
                    failures += run_and_report(context, &c);
                    cases++;
                }
        }
    print_message("%d cases, %d failed\n", cases, failures);
    return failures;
}

static int run_matrix(struct fc_context *context, int hopper_dims, int max_head_dim)
{
    return run_matrix_of(context, hopper_dims, max_head_dim, 0);
}

/* The decode kernel forced with its defaults (16- to 128-row tiles, as the rows need) and with
 * other tiles (16 rows), on the shapes it takes, every head_dim that is a multiple of 16. */
static void test_decode_kernel_matches_reference_over_awkward_shapes(void **state)
{
    (void)state;
    if (ctx->target.arch < 80)
        skip();
    int failures = 0;
    for (int i = 0; i < 2; i++) {
        struct fc_context *forced = NULL;
        const char *variant = i == 0 ? "decode" : "decode:n64w2";
        char msg[FC_MESSAGE_MAX];
        setenv("FC_FORCE_VARIANT", variant, 1);
        enum fc_status status = fc_context_create(0, NULL, &forced);
        unsetenv("FC_FORCE_VARIANT");
        snprintf(msg, sizeof msg, "%s", fc_context_errmsg(forced));
        if (status != FC_OK)
            fail_msg("fc_context_create: %s", msg);
        print_message("--- FC_FORCE_VARIANT=%s\n", variant);
        int pushed;
        assert_int_equal(fc_context_enter(forced, &pushed), FC_OK);
        failures += run_matrix_of(forced, 0, 256, i == 0 ? 128 : 16);
        fc_context_leave(forced, pushed);
        fc_context_destroy(forced);
    }
    assert_int_equal(failures, 0);
}

static void test_selected_kernels_match_reference_over_awkward_shapes(void **state)
{
    (void)state;
    assert_int_equal(run_matrix(ctx, 0, 256), 0);
}

static void test_sm80_kernel_matches_reference_over_awkward_shapes(void **state)
{
    (void)state;
    if (!sm80_ctx)
        skip();
    assert_int_equal(run_matrix(sm80_ctx, 1, 256), 0);
}

/* FC_GPU_SM90_SCHEDULE: only the forced schedule of SM90_FORCED with this index (0 to count - 1), so
 * that its schedules can run side by side, one process each (tools/gpu-host.sh gpu-suite-split: the
 * whole test takes longer than one device call); unset: every one. -1: a value that names none (the
 * test then fails rather than pass having run nothing). */
static long sm90_schedule(void)
{
    const char *env = getenv("FC_GPU_SM90_SCHEDULE");
    if (!env || !*env)
        return (long)SM90_FORCED_COUNT;   /* every one */
    char *end;
    const long i = strtol(env, &end, 10);
    return *end || i < 0 || i >= (long)SM90_FORCED_COUNT ? -1 : i;
}

static void test_sm90_kernel_matches_reference_over_awkward_shapes(void **state)
{
    (void)state;
    if (!sm90_ctx[0])
        skip();
    const long only = sm90_schedule();
    if (only < 0)
        fail_msg("FC_GPU_SM90_SCHEDULE=%s names none of the %zu forced schedules (0 to %zu)",
                 getenv("FC_GPU_SM90_SCHEDULE"), SM90_FORCED_COUNT, SM90_FORCED_COUNT - 1);
    int failures = 0;
    for (size_t i = 0; i < SM90_FORCED_COUNT; i++) {
        if (only != (long)SM90_FORCED_COUNT && (long)i != only)
            continue;
        print_message("--- FC_FORCE_VARIANT=%s\n", SM90_FORCED[i].variant);
        failures += run_matrix(sm90_ctx[i], 1, SM90_FORCED[i].max_head_dim);
    }
    assert_int_equal(failures, 0);
}

/* 1 if context plans case c on a static persistent grid with a tail (src/family_sm90.c's static_tail). */
static int takes_static_tail(struct fc_context *context, const struct fc_check_case *c)
{
    struct fc_check_run run;
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[FC_MESSAGE_MAX] = "";
    int tail = 0;
    if (fc_check_prepare(context, c, &run, msg, sizeof msg) == FC_OK &&
        fc_context_plan(context, &run.params, &problem, &plan, msg) == FC_OK)
        tail = plan.units && !plan.scheduled && plan.tail_heads > 0;
    fc_check_release(&run);
    return tail;
}

/* The persistent grid (dense warp-specialized sm90 variants) looping: each forced schedule planned as
 * for a GPU of one SM, so that one CTA (two with one consumer warpgroup) takes every row block in
 * turn: the K/V ring's phases across many blocks, the Q-empty barrier, causal units of two blocks,
 * blocks with no visible key (causal Sq > Sk, windows) between blocks with keys, ping-pong turns
 * starting afresh each block; then planned for 3 and 8 SMs, causal shapes whose last heads' blocks
 * are dealt one a unit (the static tail). Plain-schedule variants run their usual grid. */
static void test_sm90_persistent_grid_loops_over_row_blocks(void **state)
{
    (void)state;
    if (!sm90_ctx[0])
        skip();
    static const int LOOP_SHAPES[] = {0, 2, 3, 5, 7};   /* 8 to 66 row blocks of 128 */
    static const int LOOP_FEATURES[] = {0, 3, 4, 7};    /* causal window, wide window, sinks, all three */
    static const int LOOP_DIMS[] = {64, 96, 128, 256};
    static const int TAIL_SHAPES[] = {3, 5, 7};   /* Sq > Sk, Sq < Sk, GQA strided */
    int failures = 0, tails = 0;
    for (size_t i = 0; i < SM90_FORCED_COUNT; i++) {
        struct fc_context *forced = sm90_ctx[i];
        const int sm_count = forced->target.sm_count;
        forced->target.sm_count = 1;
        print_message("--- FC_FORCE_VARIANT=%s, planned for one SM\n", SM90_FORCED[i].variant);
        int cases = 0, failed = 0;
        for (size_t d = 0; d < sizeof LOOP_DIMS / sizeof LOOP_DIMS[0]; d++) {
            if (LOOP_DIMS[d] > SM90_FORCED[i].max_head_dim)
                continue;
            const enum fc_dtype dtype = d % 2 ? FC_F16 : FC_BF16;
            for (int causal = 0; causal <= 1; causal++)
                for (size_t s = 0; s < sizeof LOOP_SHAPES / sizeof LOOP_SHAPES[0]; s++) {
                    struct fc_check_case c = make_case(LOOP_SHAPES[s], LOOP_DIMS[d], dtype, causal);
                    failed += run_and_report(forced, &c);
                    cases++;
                }
            for (size_t f = 0; f < sizeof LOOP_FEATURES / sizeof LOOP_FEATURES[0]; f++) {
                struct fc_check_case c = make_feature_case(3, LOOP_DIMS[d], dtype, LOOP_FEATURES[f]);
                failed += run_and_report(forced, &c);
                cases++;
            }
        }
        /* a few SMs: causal grids whose last heads' blocks are dealt one a unit (the static tail,
         * fc_args.h's fc_static_tail_rank), its first rounds beside the pairs' last */
        for (int sms = 3; sms <= 8; sms += 5) {
            forced->target.sm_count = sms;
            for (size_t d = 0; d < sizeof LOOP_DIMS / sizeof LOOP_DIMS[0]; d++) {
                if (LOOP_DIMS[d] > SM90_FORCED[i].max_head_dim)
                    continue;
                for (size_t s = 0; s < sizeof TAIL_SHAPES / sizeof TAIL_SHAPES[0]; s++) {
                    struct fc_check_case c = make_case(TAIL_SHAPES[s], LOOP_DIMS[d], s % 2 ? FC_F16 : FC_BF16, 1);
                    tails += takes_static_tail(forced, &c);
                    failed += run_and_report(forced, &c);
                    cases++;
                }
            }
        }
        forced->target.sm_count = sm_count;
        print_message("%d cases, %d failed\n", cases, failed);
        failures += failed;
    }
    print_message("%d cases on a static tail\n", tails);
    assert_int_equal(failures, 0);
    assert_true(tails > 0);   /* the default schedules are persistent: some case must deal a tail */
}

static void test_reference_kernel_matches_reference_over_awkward_shapes(void **state)
{
    (void)state;
    assert_int_equal(run_matrix(reference_ctx, 0, 256), 0);
}

/* DETERMINISM_RUNS launches of one case give the same bits. */
static void assert_bit_identical(const struct fc_check_case *given)
{
    struct fc_check_case c = *given;
    struct fc_check_run run;
    char msg[FC_MESSAGE_MAX] = "";
    assert_int_equal(fc_check_prepare(ctx, &c, &run, msg, sizeof msg), FC_OK);
    /* the output as check.c holds it (varlen: one batch of every sequence's tokens and the padding;
     * the case's batch x seqlen_q read 0.77 MB past its end at the paged varlen case, PERF_NOTES v41.4) */
    const struct fc_attention_params *p = &run.params;
    size_t bytes = (size_t)run.layout_batch * p->seqlen_q * p->heads_q * p->head_dim * 2;
    uint16_t *first = malloc(bytes);
    float *first_lse = malloc(run.lse_count * 4);
    assert_non_null(first);
    assert_non_null(first_lse);
    int differing = 0;
    for (int i = 0; i < DETERMINISM_RUNS; i++) {
        assert_int_equal(fc_check_poison(&run, msg, sizeof msg), FC_OK);
        assert_int_equal(fc_attention_forward(ctx, &run.params, NULL), FC_OK);
        assert_int_equal(fc_check_download(&run, msg, sizeof msg), FC_OK);
        if (i == 0) {
            memcpy(first, run.host_out, bytes);
            memcpy(first_lse, run.host_lse, run.lse_count * 4);
            struct fc_error_stats e;
            const int passed = fc_check_verify(&run, &e);
            if (!passed)
                print_message("FAIL (bit-identical case, first run) B=%d Sq=%d Sk=%d Hq=%d Hkv=%d D=%d: err %.3g "
                              "(past P's bound %.3g) native %.3g lse %.2g native lse %.2g bad %lld\n", c.shape.batch,
                              c.shape.seqlen_q, c.shape.seqlen_k, c.shape.heads_q, c.shape.heads_kv, c.shape.head_dim,
                              e.max_error, e.max_excess, e.native_error, e.max_lse_error, e.native_lse_error,
                              e.bad_rows);
            assert_true(passed);
        } else {
            differing += memcmp(first, run.host_out, bytes) != 0 || memcmp(first_lse, run.host_lse, run.lse_count * 4) != 0;
        }
    }
    if (differing) {   /* which case, and which kernel */
        struct fc_plan_info info;
        memset(&info, 0, sizeof info);
        fc_attention_plan(ctx, &run.params, &info);
        print_message("FAIL (bit-identical case: %d of %d repeats differ from the first run) B=%d Sq=%d Sk=%d Hq=%d "
                      "Hkv=%d D=%d page %d varlen %d: %s\n", differing, DETERMINISM_RUNS - 1, c.shape.batch,
                      c.shape.seqlen_q, c.shape.seqlen_k, c.shape.heads_q, c.shape.heads_kv, c.shape.head_dim,
                      c.page_size, c.lens_q != NULL, info.kernel);
    }
    free(first);
    free(first_lse);
    fc_check_release(&run);
    assert_int_equal(differing, 0);
}

static void test_bit_identical_over_repeated_runs(void **state)
{
    (void)state;
    struct fc_check_case c = make_case(3, 128, FC_F16, 1);
    assert_bit_identical(&c);
    c = make_feature_case(11, 128, FC_BF16, 7);   /* a window, sinks and a softcap, split-KV decode */
    assert_bit_identical(&c);
    c = make_feature_case(3, 128, FC_F16, 7);     /* ... and in prefill */
    assert_bit_identical(&c);
}

/* One poisoned forward call of run's problem on `on`, checked: returns whether the quick first call
 * served it; the output is left in run's host buffers. */
static int checked_call(struct fc_context *on, struct fc_check_run *run, const char *what)
{
    char msg[FC_MESSAGE_MAX] = "";
    const unsigned long before = __atomic_load_n(&on->quick_calls, __ATOMIC_RELAXED);
    assert_int_equal(fc_check_poison(run, msg, sizeof msg), FC_OK);
    if (fc_attention_forward(on, &run->params, NULL) != FC_OK)
        fail_msg("%s: %s", what, fc_context_errmsg(on));
    assert_int_equal(fc_check_download(run, msg, sizeof msg), FC_OK);
    struct fc_error_stats e;
    if (!fc_check_verify(run, &e))
        fail_msg("%s: err %.3g native %.3g lse %.2g bad rows %lld", what, e.max_error, e.native_error,
                 e.max_lse_error, e.bad_rows);
    return __atomic_load_n(&on->quick_calls, __ATOMIC_RELAXED) != before;
}

/* The quick first call (fc_attention_forward): where the planned warp-specialized Hopper kernel is in
 * neither cache, the first call runs the quick kernel (the plain schedule; checked), the planned one
 * compiles on the context's worker, and after fc_context_wait_compiles the calls run it (checked,
 * bit-identical from then on). A context destroyed with the compile under way loses nothing: the
 * next context on the same cache file finds the kernel there. Turned off with the compile queued, the
 * next call runs the planned kernel (the worker's, waited for). */
static void test_quick_first_call(void **state)
{
    (void)state;
    if (ctx->target.arch != 90)
        skip();
    const struct fc_check_case cases[] = {
        make_case(3, 128, FC_F16, 0), make_case(7, 128, FC_BF16, 1), make_feature_case(3, 128, FC_F16, 7),
        make_case(5, 256, FC_BF16, 0), make_case(3, 64, FC_BF16, 1),
    };
    char dir[] = "/tmp/fc-test-quick-XXXXXX", db[64], msg[FC_MESSAGE_MAX] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/kernels.db", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fc_check_case c = cases[i];
        struct fc_context *quick;
        struct fc_options options;
        fc_options_init(&options);
        options.cache_path = db;
        assert_int_equal(fc_context_create(0, &options, &quick), FC_OK);
        assert_int_equal(fc_context_set_quick_first_call(quick, 1), FC_OK);
        struct fc_check_run run;
        assert_int_equal(fc_check_prepare(quick, &c, &run, msg, sizeof msg), FC_OK);
        struct fc_problem problem;
        struct fc_plan plan, quick_plan;
        assert_int_equal(fc_context_plan(quick, &run.params, &problem, &plan, msg), FC_OK);
        const int has_quick = fc_plan_quick(&problem, &quick->target, &plan, &quick_plan);
        char name[FC_VARIANT_NAME_MAX];
        fc_variant_name(&plan.variant, name);
        print_message("case %zu: %s%s\n", i, name, has_quick ? "" : " (no quick kernel)");
        assert_int_equal(checked_call(quick, &run, "first call"), has_quick);
        if (i == 0) {   /* destroyed with its compile under way */
            fc_check_release(&run);
            fc_context_destroy(quick);
            assert_int_equal(fc_context_create(0, &options, &quick), FC_OK);
            assert_int_equal(fc_context_set_quick_first_call(quick, 1), FC_OK);
            assert_int_equal(fc_check_prepare(quick, &c, &run, msg, sizeof msg), FC_OK);
            assert_int_equal(checked_call(quick, &run, "the next context's first call"), 0);   /* stored */
        }
        if (i == 1 && has_quick) {   /* turned off with the compile queued: the next call waits for it */
            assert_int_equal(fc_context_set_quick_first_call(quick, 0), FC_OK);
            assert_int_equal(checked_call(quick, &run, "off, the compile queued"), 0);
        }
        assert_int_equal(fc_context_wait_compiles(quick), FC_OK);
        assert_int_equal(checked_call(quick, &run, "after the wait"), 0);
        size_t bytes = (size_t)run.params.batch * run.params.seqlen_q * run.params.heads_q * run.params.head_dim * 2;
        void *planned = malloc(bytes);
        assert_non_null(planned);
        memcpy(planned, run.host_out, bytes);
        assert_int_equal(checked_call(quick, &run, "again"), 0);
        assert_memory_equal(planned, run.host_out, bytes);
        free(planned);
        fc_check_release(&run);
        fc_context_destroy(quick);
    }
    char command[96];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    assert_int_equal(system(command), 0);
}

/* Each bad call returns its status and launches nothing: out stays poisoned; then a good call on
 * the same context still works. */
static void test_misuse_on_a_real_context_launches_nothing(void **state)
{
    (void)state;
    struct fc_check_case c = make_case(1, 64, FC_BF16, 0);
    struct fc_check_run run;
    char msg[FC_MESSAGE_MAX] = "";
    assert_int_equal(fc_check_prepare(ctx, &c, &run, msg, sizeof msg), FC_OK);
    enum { BAD = 9 };
    struct fc_attention_params bad[BAD];
    for (int i = 0; i < BAD; i++)
        bad[i] = run.params;
    bad[0].heads_kv = 3;
    bad[1].head_dim = 100;
    bad[2].q = (const char *)bad[2].q + 2;
    bad[3].out = NULL;
    bad[4].k_stride[0] = 7;
    bad[4].k_stride[1] = 8;
    bad[4].k_stride[2] = 8;
    bad[5].dtype = FC_E4M3;   /* FP8 attention (since it exists) with an e4m3 out: refused */
    bad[5].out_dtype = FC_E4M3;
    bad[6].sinks = (const float *)((const char *)bad[6].q + 2);   /* misaligned */
    bad[7].causal = 1;
    bad[7].window_right = 5;
    bad[8].softcap = -1.f;
    const enum fc_status expected[BAD] = {FC_ERR_INVALID_ARG, FC_ERR_UNSUPPORTED, FC_ERR_INVALID_ARG,
                                          FC_ERR_INVALID_ARG, FC_ERR_INVALID_ARG, FC_ERR_INVALID_ARG,
                                          FC_ERR_INVALID_ARG, FC_ERR_INVALID_ARG, FC_ERR_INVALID_ARG};
    for (int i = 0; i < BAD; i++) {
        assert_int_equal(fc_attention_forward(ctx, &bad[i], NULL), expected[i]);
        assert_true(strlen(fc_context_errmsg(ctx)) > 0);
    }
    assert_int_equal(run.cuda->cuCtxSynchronize(), CUDA_SUCCESS);
    assert_int_equal(fc_check_download(&run, msg, sizeof msg), FC_OK);
    size_t elements = (size_t)c.shape.batch * c.shape.seqlen_q * c.shape.heads_q * c.shape.head_dim;
    for (size_t i = 0; i < elements; i++)
        assert_int_equal(run.host_out[i], 0x7fff);   /* still the poison: nothing ran */
    assert_int_equal(fc_attention_forward(ctx, &run.params, NULL), FC_OK);
    assert_int_equal(fc_check_download(&run, msg, sizeof msg), FC_OK);
    struct fc_error_stats e;
    assert_true(fc_check_verify(&run, &e));
    fc_check_release(&run);
}

static struct fc_check_case fp8_attention_case(struct fc_check_case c, int n);

/* expect_kernel: a part of the planned kernel's name the case is meant to reach (NULL: any). */
static void capture_and_replay(int shape, int head_dim, int causal, int fp8, const char *expect_kernel)
{
    struct fc_check_case c = make_case(shape, head_dim, FC_BF16, causal);
    if (fp8)
        c = fp8_attention_case(c, 0);
    struct fc_check_run run;
    char msg[FC_MESSAGE_MAX] = "";
    const struct fc_cuda_api *cu;
    assert_int_equal(fc_check_prepare(ctx, &c, &run, msg, sizeof msg), FC_OK);
    cu = run.cuda;
    if (expect_kernel) {
        struct fc_plan_info info;
        assert_int_equal(fc_attention_plan(ctx, &run.params, &info), FC_OK);
        if (!strstr(info.kernel, expect_kernel))
            fail_msg("the case runs %s, not a kernel with %s", info.kernel, expect_kernel);
    }
    assert_int_equal(fc_attention_forward(ctx, &run.params, NULL), FC_OK);   /* load the kernel */
    assert_int_equal(cu->cuCtxSynchronize(), CUDA_SUCCESS);
    CUstream stream;
    CUgraph graph;
    CUgraphExec exec;
    assert_int_equal(cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    assert_int_equal(cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    enum fc_status status = fc_attention_forward(ctx, &run.params, stream);
    assert_int_equal(cu->cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    assert_int_equal(status, FC_OK);
    assert_int_equal(cu->cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    for (int replay = 0; replay < 3; replay++) {   /* a scheduled grid's counter is zero again for each */
        assert_int_equal(fc_check_poison(&run, msg, sizeof msg), FC_OK);
        assert_int_equal(cu->cuGraphLaunch(exec, stream), CUDA_SUCCESS);
        assert_int_equal(cu->cuStreamSynchronize(stream), CUDA_SUCCESS);
        assert_int_equal(fc_check_download(&run, msg, sizeof msg), FC_OK);
        struct fc_error_stats e;
        assert_true(fc_check_verify(&run, &e));
    }
    cu->cuGraphExecDestroy(exec);
    cu->cuGraphDestroy(graph);
    cu->cuStreamDestroy(stream);
    fc_check_release(&run);
}

/* On an in-memory hit the forward call can be captured into a CUDA graph, and its replays compute
 * the right answer on a non-default stream: one launch, the split-KV pair of launches with its
 * stream-ordered scratch buffer, FP8 attention's causal grid with the counter it was captured
 * with (src/counters.c: zero again for each replay), and FP8 attention with V transposed ahead (the
 * transposer's launch, then the kernel's, V^T in a stream-ordered scratch buffer). */
static void test_forward_is_graph_capturable(void **state)
{
    (void)state;
    capture_and_replay(3, 128, 1, 0, NULL);
    capture_and_replay(11, 128, 1, 0, NULL);   /* 20000 keys, Sq 1: split-KV where the decode kernel is selected */
    if (ctx->target.arch == 90) {
        capture_and_replay(3, 128, 1, 1, NULL);
        capture_and_replay(4, 256, 0, 1, "_vt");   /* 4097 keys at head_dim 256 */
    }
}

static int create(struct fc_context **out, const char *forced)
{
    struct fc_options options;
    fc_options_init(&options);
    options.no_disk_cache = 1;   /* compile everything afresh: what this test checks is the kernels */
    if (forced)
        setenv("FC_FORCE_VARIANT", forced, 1);
    else
        unsetenv("FC_FORCE_VARIANT");
    enum fc_status status = fc_context_create(0, &options, out);
    unsetenv("FC_FORCE_VARIANT");
    if (status != FC_OK)
        print_error("fc_context_create: %s: %s\n", fc_status_name(status), fc_context_errmsg(*out));
    return status == FC_OK ? 0 : -1;
}

/* A context with `family` forced (NULL: the shared one, the selector's choice), entered; leave it with
 * leave_family. `what` names the cases in the log. */
static struct fc_context *enter_family(const char *family, const char *what, int *pushed)
{
    struct fc_context *forced = ctx;
    if (family && create(&forced, family))
        fail_msg("fc_context_create for %s", family);
    print_message("--- %s, %s\n", family ? family : "the selector's choice", what);
    assert_int_equal(fc_context_enter(forced, pushed), FC_OK);
    return forced;
}

static void leave_family(struct fc_context *forced, int pushed)
{
    fc_context_leave(forced, pushed);
    if (forced != ctx)
        fc_context_destroy(forced);
}


/* Varlen batches and seqused_k (issue 13): ragged sequences (lengths 0 and 1, tile multiples and
 * not), GQA, causal and not, a window, on the selector's choice and each family forced that takes
 * them (decode only where its rows fit: one query per sequence). check.c poisons the tokens of no
 * sequence and the keys past seqused_k with NaN, and checks that out's padding tokens stay
 * untouched. */
static const int VARLEN_Q[] = {17, 0, 1, 128, 129, 300, 64, 5};
static const int VARLEN_K[] = {40, 7, 0, 128, 1000, 300, 63, 5};
static const int VARLEN_USED[] = {33, 7, 0, 1, 999, 150, 63, 0};
static const int DECODE_Q[] = {1, 0, 1, 1, 1, 1, 1, 1};
#define VARLEN_SEQUENCES ((int)(sizeof VARLEN_Q / sizeof VARLEN_Q[0]))
/* Long sequences (many key tiles, several query blocks, the longest first when causal), beside
 * short and empty ones; seqused_k cutting a long sequence mid-tile and a short one to 1 key. */
static const int LONG_Q[] = {5000, 0, 1, 4097, 129, 300};
static const int LONG_K[] = {5000, 3, 1, 4500, 5000, 17};
static const int LONG_USED[] = {4990, 3, 0, 4097, 1, 17};
#define LONG_SEQUENCES ((int)(sizeof LONG_Q / sizeof LONG_Q[0]))

/* The Hopper kernel's schedules on varlen batches (sm_90a). The selector's choice covers its
 * tiles there (plain at 64, one consumer at causal 128 up to 1k keys, two taking turns above);
 * these force the others, each up to the head dims it takes without spilling. */
static const struct { const char *variant; int max_head_dim, plain; } SM90_VARLEN_FORCED[] = {
    {"sm90", 256, 64},              /* the defaults: two consumers taking turns from 128, causal too */
    {"sm90:m128n64w8", 128, 256},   /* plain, two warpgroups: the V clear's barrier of 256 threads */
    {"sm90:m128n64s3w12", 192, 0},  /* three stages: the last tile's slot (tiles - 1) % 3 */
    {"sm90:m192n128w16p1", 64, 0},  /* three consumers taking turns */
};   /* plain: up to which head_dim the variant has the plain schedule (no producer warpgroup) */
#define SM90_VARLEN_FORCED_COUNT (sizeof SM90_VARLEN_FORCED / sizeof SM90_VARLEN_FORCED[0])

static int run_varlen_on(struct fc_context *context, int decode_only, int max_head_dim)
{
    int failures = 0;
    for (int dtype = FC_F16; dtype <= FC_BF16; dtype++)
        for (int d = 64; d <= max_head_dim; d += 64)
            for (int form = 0; form < 6; form++) {
                const int causal = form % 2, used = form / 2 == 1, window = form / 2 == 2;
                struct fc_check_case c = make_case(0, d, (enum fc_dtype)dtype, causal);
                c.shape.batch = VARLEN_SEQUENCES;
                c.shape.heads_q = 8;
                c.shape.heads_kv = decode_only ? 1 : 2;
                c.shape.window_left = window ? 50 : -1;
                c.lens_q = decode_only ? DECODE_Q : VARLEN_Q;
                c.lens_k = VARLEN_K;
                c.used_k = used ? VARLEN_USED : NULL;
                failures += run_and_report(context, &c);
            }
    /* long sequences, GQA 4: causal fp16 without seqused_k, bf16 with it (not for decode: its rows
     * are one query per sequence) */
    for (int d = 64; !decode_only && d <= max_head_dim; d += 64)
        for (int used = 0; used <= 1; used++) {
            struct fc_check_case c = make_case(0, d, used ? FC_BF16 : FC_F16, !used);
            c.shape.batch = LONG_SEQUENCES;
            c.shape.heads_q = 8;
            c.shape.heads_kv = 2;
            c.lens_q = LONG_Q;
            c.lens_k = LONG_K;
            c.used_k = used ? LONG_USED : NULL;
            failures += run_and_report(context, &c);
        }
    /* dense with seqused_k: a KV cache's filled lengths */
    const int dense_d = max_head_dim < 128 ? max_head_dim : 128;
    struct fc_check_case c = make_case(1, dense_d, FC_F16, 1);
    static const int USED[] = {0, 129, 64};
    c.used_k = USED;
    if (decode_only)   /* 4 query rows x 4 heads per K/V head: the decode tile's 16 rows exactly */
        c.shape.seqlen_q = 4;
    failures += run_and_report(context, &c);
    c = make_case(8, dense_d, FC_BF16, 0);   /* B=2, Sq=1, Sk=1000, decode-shaped */
    static const int USED_DECODE[] = {999, 1};
    c.used_k = USED_DECODE;
    failures += run_and_report(context, &c);
    return failures;
}

static void test_varlen_matches_reference_in_every_family(void **state)
{
    (void)state;
    static const char *const FAMILIES[] = {NULL, "reference", "sm80", "decode"};
    const size_t families = sizeof FAMILIES / sizeof FAMILIES[0];
    /* then the Hopper kernel's schedules, on sm_90a */
    const size_t runs = families + (ctx->target.arch == 90 && ctx->target.arch_specific ? SM90_VARLEN_FORCED_COUNT : 0);
    int failures = 0;
    for (size_t i = 0; i < runs; i++) {
        const char *family = i < families ? FAMILIES[i] : SM90_VARLEN_FORCED[i - families].variant;
        const int max_head_dim = i < families ? 256 : SM90_VARLEN_FORCED[i - families].max_head_dim;
        if (family && strcmp(family, "reference") && ctx->target.arch < 80)
            continue;
        int pushed;
        struct fc_context *forced = enter_family(family, "varlen", &pushed);
        failures += run_varlen_on(forced, family && !strcmp(family, "decode"), max_head_dim);
        leave_family(forced, pushed);
    }
    assert_int_equal(failures, 0);
}

/* A paged K/V cache (issue 13): page sizes that do and do not divide the key tiles (1, 7, 16, 64,
 * 128, 256), dense queries and varlen ones (cu_seqlens_k NULL), with and without seqused_k, GQA
 * 1/4/8, causal and not, a window, fp16 and bf16, every head dim 64..256 in turn, packed pages and
 * padded ones (BHSD rows inside each page); on the selector's choice and each family forced that
 * takes paging (decode only where its rows fit; sm90, forced, on pages of whole tiles). check.c shuffles the pages, fills every slot no
 * used key owns with NaN (unused pages, a last page's tail, keys past seqused_k) and points the
 * table's entries past a sequence's pages at a page of NaN; out is poisoned. */
static const int PAGE_SIZES[] = {1, 7, 16, 64, 128, 256};
static const int PAGED_HEAD_DIMS[] = {64, 96, 128, 192, 256};
#define PAGED_KEYS 1000   /* varlen: every sequence's capacity (VARLEN_USED's keys fit) */

static struct fc_check_case make_paged_case(int page_size, enum fc_dtype dtype, int form, int head_dim,
                                            int decode_only)
{
    static const int DENSE_USED[] = {300, 0, 129};
    struct fc_check_case c = make_case(0, head_dim, dtype, form % 2);
    c.page_size = page_size;
    c.shape.heads_q = 8;
    switch (form) {
    case 0:   /* dense, GQA 1, every key of the capacity */
    case 1:   /* dense, GQA 4, causal, seqused_k, pages with padded rows */
        c.shape.batch = 3;
        c.shape.seqlen_q = decode_only ? (form ? 4 : 1) : 17;
        c.shape.seqlen_k = 300;
        c.shape.heads_kv = form ? 2 : (decode_only ? 1 : 8);
        c.used_k = form ? DENSE_USED : NULL;
        c.layout = form ? FC_LAYOUT_BHSD : FC_LAYOUT_PACKED;
        break;
    case 2:   /* varlen, GQA 8, seqused_k (0 and 1 keys among them) */
    case 3:   /* varlen, GQA 4, causal, every sequence at the capacity, a window */
    default:
        c.shape.batch = VARLEN_SEQUENCES;
        c.shape.seqlen_k = PAGED_KEYS;
        c.shape.heads_kv = form == 2 ? 1 : 2;
        c.lens_q = decode_only ? DECODE_Q : VARLEN_Q;
        c.used_k = form == 2 ? VARLEN_USED : NULL;
        c.shape.window_left = form == 3 ? 300 : -1;
        break;
    }
    return c;
}

/* Chunked prefill against long cached prefixes: LONG_SEQUENCES ragged sequences (LONG_Q queries,
 * LONG_USED keys of 5000), causal, GQA 4, through pages of page_size. */
static struct fc_check_case make_chunk_case(int head_dim, enum fc_dtype dtype, int page_size)
{
    struct fc_check_case c = make_case(0, head_dim, dtype, 1);
    c.page_size = page_size;
    c.shape.batch = LONG_SEQUENCES;
    c.shape.heads_q = 8;
    c.shape.heads_kv = 2;
    c.shape.seqlen_k = 5000;
    c.lens_q = LONG_Q;
    c.used_k = LONG_USED;
    return c;
}

static int run_paged_on(struct fc_context *context, int decode_only)
{
    int failures = 0, cases = 0;
    for (size_t page = 0; page < sizeof PAGE_SIZES / sizeof PAGE_SIZES[0]; page++)
        for (int dtype = FC_F16; dtype <= FC_BF16; dtype++)
            for (int form = 0; form < 4; form++) {
                const int d = PAGED_HEAD_DIMS[(page + (size_t)dtype * 2 + (size_t)form) %
                                              (sizeof PAGED_HEAD_DIMS / sizeof PAGED_HEAD_DIMS[0])];
                struct fc_check_case c = make_paged_case(PAGE_SIZES[page], (enum fc_dtype)dtype, form, d, decode_only);
                print_message("page %d: ", PAGE_SIZES[page]);
                failures += run_and_report(context, &c);
                cases++;
            }
    /* chunked prefill against long cached prefixes: long ragged sequences, causal, pages of 16 and 64
     * (and 7: rows straddle pages inside every tile) */
    static const int CHUNK_PAGES[] = {7, 16, 64};
    for (size_t page = 0; !decode_only && page < sizeof CHUNK_PAGES / sizeof CHUNK_PAGES[0]; page++) {
        struct fc_check_case c = make_chunk_case(128, page % 2 ? FC_BF16 : FC_F16, CHUNK_PAGES[page]);
        print_message("page %d: ", CHUNK_PAGES[page]);
        failures += run_and_report(context, &c);
        cases++;
    }
    /* decode against a long cache: many splits, page 1 and 16 */
    for (int page = 1; page <= 16; page += 15) {
        struct fc_check_case c = make_case(11, 128, FC_BF16, 0);   /* B=1, Sq=1, Sk=20000, 16/2 heads */
        c.page_size = page;
        print_message("page %d: ", page);
        failures += run_and_report(context, &c);
        cases++;
    }
    print_message("%d paged cases, %d failed\n", cases, failures);
    return failures;
}

/* The Hopper kernel's page paths, forced: each schedule of SM90_VARLEN_FORCED on pages of 1 to 256
 * keys (warp-specialized: one TMA box a tile where a page holds whole tiles, as pages of 192 do
 * tiles of 64; grouped boxes of every column block on pages of a multiple of 8 below that, V
 * gathered on pages of 8; rows gathered on pages of 1 and 7, and from head_dim 128 on BHSD pages,
 * whose heads are not side by side; plain: boxes of 8 and 16 too), every form of make_paged_case in
 * turn, and long chunked prefills on pages of 7, 16 and 64; the plain schedule refuses pages that
 * are not a multiple of 8 before any launch. */
static int run_paged_sm90(void)
{
    static const int SM90_PAGES[] = {1, 7, 8, 16, 64, 128, 192, 256}, SM90_CHUNK_PAGES[] = {7, 16, 64};
    int failures = 0;
    for (size_t i = 0; i < SM90_VARLEN_FORCED_COUNT; i++) {
        struct fc_context *sm90 = NULL;
        if (create(&sm90, SM90_VARLEN_FORCED[i].variant))
            fail_msg("fc_context_create for %s", SM90_VARLEN_FORCED[i].variant);
        print_message("--- %s, paged\n", SM90_VARLEN_FORCED[i].variant);
        int pushed;
        assert_int_equal(fc_context_enter(sm90, &pushed), FC_OK);
        const int dims = SM90_VARLEN_FORCED[i].max_head_dim / 64;
        int n = (int)i;
        for (size_t page = 0; page < sizeof SM90_PAGES / sizeof SM90_PAGES[0]; page++)
            for (int dtype = FC_F16; dtype <= FC_BF16; dtype++, n++) {
                const int d = 64 * (1 + n % dims), form = n % 4;
                if (d <= SM90_VARLEN_FORCED[i].plain && (SM90_PAGES[page] % 8 || (d > 64 && form == 1)))
                    continue;   /* refused (BHSD pages: heads not side by side): below */
                struct fc_check_case c = make_paged_case(SM90_PAGES[page], (enum fc_dtype)dtype, form, d, 0);
                print_message("page %d: ", SM90_PAGES[page]);
                failures += run_and_report(sm90, &c);
            }
        for (size_t page = 0; page < sizeof SM90_CHUNK_PAGES / sizeof SM90_CHUNK_PAGES[0]; page++) {
            const int d = SM90_VARLEN_FORCED[i].max_head_dim >= 128 ? 128 : 64;
            if (d <= SM90_VARLEN_FORCED[i].plain && SM90_CHUNK_PAGES[page] % 8)
                continue;
            struct fc_check_case c = make_chunk_case(d, FC_BF16, SM90_CHUNK_PAGES[page]);
            print_message("page %d: ", c.page_size);
            failures += run_and_report(sm90, &c);
        }
        /* plain: a page of 12 keys holds no box of a multiple of 8, and BHSD pages at head_dim 128 no
         * box of every column block: refused before any launch */
        const int refusals = SM90_VARLEN_FORCED[i].plain >= 128 ? 2 : SM90_VARLEN_FORCED[i].plain ? 1 : 0;
        for (int refused = 0; refused < refusals; refused++) {
            struct fc_check_case c = refused ? make_paged_case(16, FC_BF16, 1, 128, 0)
                                             : make_paged_case(12, FC_BF16, 0, 64, 0);
            struct fc_check_run run;
            char msg[FC_MESSAGE_MAX] = "";
            assert_int_equal(fc_check_prepare(sm90, &c, &run, msg, sizeof msg), FC_OK);
            assert_int_equal(fc_attention_forward(sm90, &run.params, NULL), FC_ERR_UNSUPPORTED);
            assert_non_null(strstr(fc_context_errmsg(sm90), refused ? "next head's" : "multiple of 8"));
            fc_check_release(&run);
        }
        fc_context_leave(sm90, pushed);
        fc_context_destroy(sm90);
    }
    return failures;
}

static void test_paged_matches_reference_in_every_family(void **state)
{
    (void)state;
    static const char *const FAMILIES[] = {NULL, "reference", "sm80", "decode"};
    int failures = 0;
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
        const char *family = FAMILIES[i];
        if (family && strcmp(family, "reference") && ctx->target.arch < 80)
            continue;
        int pushed;
        struct fc_context *forced = enter_family(family, "paged", &pushed);
        failures += run_paged_on(forced, family && !strcmp(family, "decode"));
        leave_family(forced, pushed);
    }
    if (ctx->target.arch == 90 && ctx->target.arch_specific)
        failures += run_paged_sm90();
    /* bit-identical repeats: split-KV decode through pages of 1, and sm80-sized prefill through 7 */
    struct fc_check_case c = make_case(11, 128, FC_BF16, 0);
    c.page_size = 1;
    assert_bit_identical(&c);
    c = make_paged_case(7, FC_F16, 1, 128, 0);
    assert_bit_identical(&c);
    c = make_paged_case(16, FC_BF16, 2, 128, 0);   /* sm90 on Hopper: K and V by 8 TMA boxes a tile */
    assert_bit_identical(&c);
    c = make_paged_case(8, FC_BF16, 2, 128, 0);   /* sm90 on Hopper: K by 16 boxes a tile, V gathered */
    assert_bit_identical(&c);
    c = make_paged_case(16, FC_BF16, 1, 128, 0);   /* heads not side by side (BHSD pages): both gathered */
    assert_bit_identical(&c);
    assert_int_equal(failures, 0);
}

/* An FP8 KV cache (issue 15): e4m3 K and V with their per-(sequence, K/V head) descales (every
 * fourth case without: NULL, 1), dense (packed, and BHSD rows padded by 16 e4m3 elements), varlen and
 * paged, GQA 1 to 8, causal, windows, sinks and softcaps, head_dim 48 to 256, f16 and bf16 q; on the
 * selector's choice (on sm_89 and later decode where its rows fit, else sm80 at head dims of multiples
 * of 32, else the reference kernel) and on each family that reads FP8 forced (decode on its shapes,
 * decode and sm80 at head dims of multiples of 32).
 * check.c judges against the fp64 reference on the dequantized values, by the error PyTorch's math
 * path makes on them in the dtype; the kernels that read 16-bit K/V only refuse it, launching nothing. */
static const int FP8_DECODE_SHAPES[] = {8, 9, 10, 11, 4};   /* (query heads per K/V head) x Sq <= 16 */
static const int FP8_PREFILL_SHAPES[] = {0, 1, 2, 7};
static const int FP8_HEAD_DIMS[] = {64, 128, 256, 96, 48};   /* 48: no 32-dim groups, decode declines */
#define FP8_HEAD_DIM_COUNT ((int)(sizeof FP8_HEAD_DIMS / sizeof FP8_HEAD_DIMS[0]))
#define FP8_DESCALE (1.f / 64)   /* codes of N(0, 1) / 64: up to ~300, e4m3's range without saturating */

static struct fc_check_case fp8_case(struct fc_check_case c, int n)
{
    c.shape.kv_dtype = FC_E4M3;
    c.kv_descale = n % 4 == 3 ? 0.f : FP8_DESCALE;
    return c;
}

static int run_fp8_on(struct fc_context *context, int decode_only, int dims_of_32)
{
    int failures = 0, cases = 0, n = 0;
    for (int dtype = FC_F16; dtype <= FC_BF16; dtype++)
        for (int d = 0; d < FP8_HEAD_DIM_COUNT; d++) {
            const int head_dim = FP8_HEAD_DIMS[d];
            if ((decode_only || dims_of_32) && head_dim % 32)
                continue;
            for (int causal = 0; causal <= 1; causal++) {
                for (size_t s = 0; s < sizeof FP8_DECODE_SHAPES / sizeof FP8_DECODE_SHAPES[0]; s++, cases++) {
                    struct fc_check_case c = make_case(FP8_DECODE_SHAPES[s], head_dim, (enum fc_dtype)dtype, causal);
                    c = fp8_case(c, n++);
                    failures += run_and_report(context, &c);
                }
                for (size_t s = 0; !decode_only && s < sizeof FP8_PREFILL_SHAPES / sizeof FP8_PREFILL_SHAPES[0];
                     s++, cases++) {
                    struct fc_check_case c = make_case(FP8_PREFILL_SHAPES[s], head_dim, (enum fc_dtype)dtype, causal);
                    c = fp8_case(c, n++);
                    failures += run_and_report(context, &c);
                }
            }
        }
    /* windows, sinks and softcaps: each at two head dims in turn, on the decode shapes (and Sq > Sk) */
    static const int FEATURE_DECODE_SHAPES[] = {9, 11};
    for (size_t f = 0; f < sizeof FEATURES / sizeof FEATURES[0]; f++)
        for (int dtype = FC_F16; dtype <= FC_BF16; dtype++) {
            const int head_dim = FP8_HEAD_DIMS[(f + (size_t)dtype) % 4];   /* multiples of 32 */
            for (size_t s = 0; s < 2 + !decode_only; s++, cases++) {
                const int shape = s < 2 ? FEATURE_DECODE_SHAPES[s] : 2;
                struct fc_check_case c = make_feature_case(shape, head_dim, (enum fc_dtype)dtype, (int)f);
                c = fp8_case(c, n++);
                failures += run_and_report(context, &c);
            }
        }
    /* varlen: ragged sequences (one query each for decode), seqused_k, a window */
    for (int dtype = FC_F16; dtype <= FC_BF16; dtype++)
        for (int d = 64; d <= 256; d *= 2)
            for (int form = 0; form < 3; form++, cases++) {
                struct fc_check_case c = make_case(0, d, (enum fc_dtype)dtype, form == 1);
                c.shape.batch = VARLEN_SEQUENCES;
                c.shape.heads_q = 8;
                c.shape.heads_kv = decode_only ? 1 : 2;
                c.shape.window_left = form == 2 ? 50 : -1;
                c.lens_q = decode_only ? DECODE_Q : VARLEN_Q;
                c.lens_k = VARLEN_K;
                c.used_k = form == 1 ? VARLEN_USED : NULL;
                c = fp8_case(c, n++);
                failures += run_and_report(context, &c);
            }
    /* paged: pages of 1, 16 and 64 keys, every form of make_paged_case (BHSD pages among them) */
    static const int FP8_PAGES[] = {1, 16, 64};
    for (size_t page = 0; page < sizeof FP8_PAGES / sizeof FP8_PAGES[0]; page++)
        for (int form = 0; form < 4; form++, cases++) {
            const enum fc_dtype dtype = (page + (size_t)form) % 2 ? FC_BF16 : FC_F16;
            const int head_dim = FP8_HEAD_DIMS[(page + (size_t)form) % 3];
            struct fc_check_case c = make_paged_case(FP8_PAGES[page], dtype, form, head_dim, decode_only);
            c = fp8_case(c, n++);
            print_message("page %d: ", FP8_PAGES[page]);
            failures += run_and_report(context, &c);
        }
    struct fc_check_case c = make_case(11, 128, FC_BF16, 0);   /* decode against a long paged cache */
    c.page_size = 16;
    c = fp8_case(c, 0);
    print_message("page 16: ");
    failures += run_and_report(context, &c);
    print_message("%d FP8 cases, %d failed\n", cases + 1, failures);
    return failures;
}

/* A family that reads 16-bit K/V only, forced: FP8 K/V refused before any launch, out untouched. */
static void assert_fp8_refused(struct fc_context *forced)
{
    struct fc_check_case c = fp8_case(make_case(1, 128, FC_BF16, 0), 0);
    struct fc_check_run run;
    char msg[FC_MESSAGE_MAX] = "";
    assert_int_equal(fc_check_prepare(forced, &c, &run, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_attention_forward(forced, &run.params, NULL), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(fc_context_errmsg(forced), "16-bit K/V"));
    assert_int_equal(fc_check_download(&run, msg, sizeof msg), FC_OK);
    for (size_t i = 0; i < run.o_elements; i++)
        assert_int_equal(run.host_out[i], 0x7fff);   /* still the poison: nothing ran */
    fc_check_release(&run);
}

/* One family forced (NULL: the selector's choice) on the FP8 cases it takes. */
static int run_fp8_family(const char *family)
{
    const int decode = family && !strcmp(family, "decode"), sm80 = family && !strcmp(family, "sm80");
    if ((decode || sm80) && ctx->target.arch < 89)   /* cvt.f16x2.e4m3x2: sm_89 and later */
        return 0;
    int pushed;
    struct fc_context *forced = enter_family(family, "FP8 K/V", &pushed);
    const int failures = run_fp8_on(forced, decode, sm80);   /* sm80: head dims of multiples of 32 */
    leave_family(forced, pushed);
    return failures;
}

/* NOTE: three tests, not one: the reference kernel's prefill cases and the CPU reference's take
 * minutes each, and tools/gpu-host.sh gpu-suite-split runs tests side by side. */
static void test_fp8_kv_matches_reference_in_the_decode_kernel(void **state)
{
    (void)state;
    const int failures = run_fp8_family("decode");
    if (sm90_ctx[0])
        assert_fp8_refused(sm90_ctx[0]);
    /* bit-identical repeats: split-KV decode with every feature, and the reference kernel's prefill */
    struct fc_check_case c = fp8_case(make_feature_case(11, 128, FC_BF16, 7), 0);
    assert_bit_identical(&c);
    c = fp8_case(make_case(1, 64, FC_F16, 1), 0);
    assert_bit_identical(&c);
    assert_int_equal(failures, 0);
}

static void test_fp8_kv_matches_reference_in_the_sm80_kernel(void **state)
{
    (void)state;
    assert_int_equal(run_fp8_family("sm80"), 0);
}

static void test_fp8_kv_matches_reference_in_the_reference_kernel(void **state)
{
    (void)state;
    assert_int_equal(run_fp8_family("reference"), 0);
}

static void test_fp8_kv_matches_reference_as_selected(void **state)
{
    (void)state;
    assert_int_equal(run_fp8_family(NULL), 0);
}

/* FP8 attention (dtype FC_E4M3: q, k and v e4m3, out f16 or bf16, each (sequence, K/V head) with its
 * own q, k and v descales, or none): every head_dim the sm90 kernel takes, causal or not, the prefill
 * shapes (GQA, Sq != Sk, BHSD rows), windows, sinks and softcaps; with per_sequence, varlen and
 * seqused_k too (the reference kernel's, as selected). Judged by the check's rule, which adds P's
 * rounding bound (src/reference_cpu_internal.h) to BENCH.md's. */
static struct fc_check_case fp8_attention_case(struct fc_check_case c, int n)
{
    c.shape.out_dtype = c.shape.dtype;   /* make_case's dtype: out's */
    c.shape.dtype = FC_E4M3;
    c.kv_descale = n % 4 == 3 ? 0.f : FP8_DESCALE;
    return c;
}

/* The two kinds of grid that take their row blocks from a counter (fwd_sm90.cuh's SCHEDULED: causal,
 * persistent, K/V rows of at most 128 bytes): FP8 attention at head_dim 128 on the default schedule
 * (two consumers), and 16-bit head_dim 64 on three consumers taking turns. */
enum { SCHEDULED_KINDS = 2, SCHEDULED_THREE_CONSUMERS = 6 };   /* the latter: SM90_FORCED's index */

static struct fc_context *scheduled_context(int kind)
{
    assert_string_equal(SM90_FORCED[SCHEDULED_THREE_CONSUMERS].variant, "sm90:m192n128w16p1");
    return sm90_ctx[kind ? SCHEDULED_THREE_CONSUMERS : 0];
}

static struct fc_check_case scheduled_case(int kind, int shape, int head_dim, int n)
{
    if (kind)
        return make_case(shape, 64, FC_BF16, 1);
    return fp8_attention_case(make_case(shape, head_dim, FC_BF16, 1), n);
}

/* Scheduled grids take their row blocks from a counter of the context's, one per stream, which each
 * launch's last take zeroes for the next (src/counters.c): launches of two problems on two streams,
 * back to back and never synchronized, each into its own output, planned for one SM (the CTA takes
 * every block from the counter), give every output the bits of the problem's launch alone. A counter
 * shared by the streams, or one left unzeroed, skips or repeats blocks: poison or other bits.
 * Returns the launches whose output differs. */
static int scheduled_grids_on_concurrent_streams(int kind)
{
    enum { PROBLEMS = 2, LAUNCHES = 12 };
    struct fc_context *forced = scheduled_context(kind);
    const int sm_count = forced->target.sm_count;
    forced->target.sm_count = 1;
    struct fc_check_run runs[PROBLEMS];
    uint16_t *alone[PROBLEMS];
    size_t bytes[PROBLEMS], packed[PROBLEMS];   /* out's device buffer (BHSD: padded rows), its packed download */
    char msg[FC_MESSAGE_MAX] = "";
    const int shapes[PROBLEMS] = {3, 7};   /* 1000 x 1000 keys; 129 rows against 1000, BHSD, GQA 4 */
    for (int p = 0; p < PROBLEMS; p++) {
        struct fc_check_case c = scheduled_case(kind, shapes[p], 128, p);
        assert_int_equal(fc_check_prepare(forced, &c, &runs[p], msg, sizeof msg), FC_OK);
        struct fc_plan_info info;
        assert_int_equal(fc_attention_plan(forced, &runs[p].params, &info), FC_OK);
        print_message("problem %d: %s\n", p, info.kernel);
        assert_int_equal(fc_attention_forward(forced, &runs[p].params, NULL), FC_OK);
        assert_int_equal(fc_check_download(&runs[p], msg, sizeof msg), FC_OK);
        struct fc_error_stats e;
        assert_true(fc_check_verify(&runs[p], &e));
        bytes[p] = runs[p].o_elements * 2;
        packed[p] = (size_t)c.shape.batch * c.shape.seqlen_q * c.shape.heads_q * c.shape.head_dim * 2;
        alone[p] = malloc(packed[p]);
        assert_non_null(alone[p]);
        memcpy(alone[p], runs[p].host_out, packed[p]);
    }
    const struct fc_cuda_api *cu = runs[0].cuda;
    CUstream streams[PROBLEMS];
    CUdeviceptr outs[LAUNCHES];
    for (int p = 0; p < PROBLEMS; p++)
        assert_int_equal(cu->cuStreamCreate(&streams[p], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    for (int i = 0; i < LAUNCHES; i++) {
        const int p = i % PROBLEMS;
        assert_int_equal(cu->cuMemAlloc(&outs[i], bytes[p]), CUDA_SUCCESS);
        assert_int_equal(cu->cuMemsetD16(outs[i], 0x7fff, bytes[p] / 2), CUDA_SUCCESS);   /* NaN */
    }
    assert_int_equal(cu->cuCtxSynchronize(), CUDA_SUCCESS);
    for (int i = 0; i < LAUNCHES; i++) {
        const int p = i % PROBLEMS;
        struct fc_attention_params params = runs[p].params;
        params.out = (void *)(uintptr_t)outs[i];
        assert_int_equal(fc_attention_forward(forced, &params, streams[p]), FC_OK);
    }
    assert_int_equal(cu->cuCtxSynchronize(), CUDA_SUCCESS);
    int differing = 0;
    for (int i = 0; i < LAUNCHES; i++) {
        const int p = i % PROBLEMS;
        const CUdeviceptr own = runs[p].out;
        runs[p].out = outs[i];
        assert_int_equal(fc_check_download(&runs[p], msg, sizeof msg), FC_OK);
        runs[p].out = own;
        differing += memcmp(alone[p], runs[p].host_out, packed[p]) != 0;
        cu->cuMemFree(outs[i]);
    }
    for (int p = 0; p < PROBLEMS; p++) {
        cu->cuStreamDestroy(streams[p]);
        free(alone[p]);
        fc_check_release(&runs[p]);
    }
    forced->target.sm_count = sm_count;
    return differing;
}

static void test_sm90_scheduled_grids_on_concurrent_streams(void **state)
{
    (void)state;
    if (!sm90_ctx[0])
        skip();
    int differing = 0;
    for (int kind = 0; kind < SCHEDULED_KINDS; kind++)
        differing += scheduled_grids_on_concurrent_streams(kind);
    assert_int_equal(differing, 0);
}

/* Without a counter to give (src/counters.c: none left, or a capture that would need a new chunk), a
 * scheduled grid takes its static units of two blocks through the same handshake: planned for one
 * SM, the counters made to look spent, every case still matches the reference. */
static void test_sm90_scheduled_grids_without_a_counter(void **state)
{
    (void)state;
    if (!sm90_ctx[0])
        skip();
    static const int SHAPES_USED[] = {0, 2, 3, 5, 7};
    int failures = 0;
    for (int kind = 0; kind < SCHEDULED_KINDS; kind++) {
        struct fc_context *forced = scheduled_context(kind);
        struct fc_counters *counters = &forced->counters;
        const int sm_count = forced->target.sm_count, chunk_count = counters->chunk_count, next = counters->next;
        struct fc_stream_counter streams[FC_COUNTER_STREAMS];
        memcpy(streams, counters->streams, sizeof streams);
        forced->target.sm_count = 1;
        counters->chunk_count = FC_COUNTER_CHUNKS;   /* spent: no chunk may be added, no stream has one */
        counters->next = FC_COUNTER_CHUNK;
        memset(counters->streams, 0, sizeof counters->streams);
        for (int d = 64; d <= (kind ? 64 : 128); d += 64)
            for (size_t s = 0; s < sizeof SHAPES_USED / sizeof SHAPES_USED[0]; s++) {
                struct fc_check_case c = scheduled_case(kind, SHAPES_USED[s], d, (int)s);
                failures += run_and_report(forced, &c);
            }
        counters->chunk_count = chunk_count;
        counters->next = next;
        memcpy(counters->streams, streams, sizeof streams);
        forced->target.sm_count = sm_count;
    }
    assert_int_equal(failures, 0);
}

static int run_fp8_attention_on(struct fc_context *context, int per_sequence)
{
    static const int DIMS[] = {64, 128, 192, 256};
    int failures = 0, cases = 0, n = 0;
    for (int out = FC_F16; out <= FC_BF16; out++)
        for (size_t d = 0; d < sizeof DIMS / sizeof DIMS[0]; d++)
            for (int causal = 0; causal <= 1; causal++)
                for (size_t s = 0; s < sizeof FP8_PREFILL_SHAPES / sizeof FP8_PREFILL_SHAPES[0]; s++, cases++) {
                    struct fc_check_case c = make_case(FP8_PREFILL_SHAPES[s], DIMS[d], (enum fc_dtype)out, causal);
                    c = fp8_attention_case(c, n++);
                    failures += run_and_report(context, &c);
                }
    for (size_t f = 0; f < sizeof FEATURES / sizeof FEATURES[0]; f++)
        for (int out = FC_F16; out <= FC_BF16; out++, cases++) {
            const int head_dim = DIMS[(f + (size_t)out) % 4];
            struct fc_check_case c = make_feature_case(f % 2 ? 2 : 7, head_dim, (enum fc_dtype)out, (int)f);
            c = fp8_attention_case(c, n++);
            failures += run_and_report(context, &c);
        }
    /* per-sequence lengths (varlen; with seqused_k, causal; with a window), every head_dim: the
     * sm90 kernel's last staged V tile of a sequence is cleared past its keys (some end mid-tile) */
    for (int form = 0; per_sequence && form < 3 * 4; form++, cases++) {
        struct fc_check_case c = make_case(0, DIMS[form / 3], form % 3 ? FC_BF16 : FC_F16, form % 3 == 1);
        c.shape.batch = VARLEN_SEQUENCES;
        c.shape.heads_q = 8;
        c.shape.heads_kv = 2;
        c.shape.window_left = form % 3 == 2 ? 50 : -1;
        c.lens_q = VARLEN_Q;
        c.lens_k = VARLEN_K;
        c.used_k = form % 3 == 1 ? VARLEN_USED : NULL;
        c = fp8_attention_case(c, n++);
        failures += run_and_report(context, &c);
    }
    print_message("%d FP8 attention cases, %d failed\n", cases, failures);
    return failures;
}

/* One family forced (NULL: the selector's choice) on the FP8 attention cases. */
static int run_fp8_attention_family(const char *family, int per_sequence)
{
    int pushed;
    struct fc_context *forced = enter_family(family, "FP8 attention", &pushed);
    const int failures = run_fp8_attention_on(forced, per_sequence);
    leave_family(forced, pushed);
    return failures;
}

static void test_fp8_attention_matches_reference_in_the_sm90_kernel(void **state)
{
    (void)state;
    if (ctx->target.arch != 90) {
        print_message("not a Hopper GPU: the sm90 kernel's FP8 attention does not apply\n");
        return;
    }
    int failures = run_fp8_attention_family("sm90", 1);
    /* bit-identical repeats: the persistent grid, causal, with every feature */
    struct fc_check_case c = fp8_attention_case(make_feature_case(7, 128, FC_BF16, 7), 0);
    assert_bit_identical(&c);
    c = fp8_attention_case(make_case(1, 256, FC_F16, 1), 1);
    assert_bit_identical(&c);
    /* V transposed ahead (a kernel of its own writes V^T; the selector's choice at head_dim 192 and 256
     * from 4k-8k keys), forced: every dense case, key counts of no multiple of 16 among them (V^T's
     * padded lines) */
    failures += run_fp8_attention_family("sm90:v1", 0);
    assert_int_equal(failures, 0);
}

static void test_fp8_attention_matches_reference_in_the_reference_kernel(void **state)
{
    (void)state;
    assert_int_equal(run_fp8_attention_family("reference", 1), 0);
}

static void test_fp8_attention_matches_reference_as_selected(void **state)
{
    (void)state;
    assert_int_equal(run_fp8_attention_family(NULL, 1), 0);
}

/* fc_quantize against the fp64 rotation, every element: e4m3 within half a step of the exact scaled
 * value (plus fp32's few ulps), the descales amax / 448 of the exact rows, pad tokens untouched.
 * Head dims with Hadamard orders 16 to 256 (96 and 192: blocks of 32 and 64), both scalings it
 * computes and a given one (saturating), GQA descales, varlen, rotation alone into 16 bits; N(0, 1)
 * inputs and inputs with outlier dimensions (x30), where the rotation must shrink the amax. */
static void test_quantize_matches_reference(void **state)
{
    (void)state;
    if (ctx->target.arch < 89) {
        printf("  quantize: sm_%d has no e4m3 conversion: fc_quantize must refuse it\n", ctx->target.arch);
        return;
    }
    static const int lens[] = {0, 1000, 33, 1};
    static const struct {
        enum fc_dtype dtype, out;
        int batch, seqlen, heads, descale_heads, head_dim;
        enum fc_quantize_scaling scaling;
        int rotate, varlen;
        double outliers;
    } CASES[] = {
        {FC_BF16, FC_E4M3, 2, 300, 8, 2, 128, FC_SCALE_PER_HEAD, 0, 0, 0.0},
        {FC_BF16, FC_E4M3, 2, 300, 8, 2, 128, FC_SCALE_PER_HEAD, 1, 0, 0.0},
        {FC_F16, FC_E4M3, 3, 77, 4, 4, 64, FC_SCALE_PER_TENSOR, 1, 0, 30.0},
        {FC_BF16, FC_E4M3, 1, 513, 6, 3, 96, FC_SCALE_PER_HEAD, 1, 0, 30.0},
        {FC_F16, FC_E4M3, 2, 129, 2, 1, 192, FC_SCALE_GIVEN, 1, 0, 0.0},
        {FC_BF16, FC_E4M3, 1, 200, 4, 2, 256, FC_SCALE_PER_HEAD, 1, 0, 30.0},
        {FC_BF16, FC_E4M3, 2, 50, 2, 2, 16, FC_SCALE_PER_HEAD, 1, 0, 0.0},
        {FC_BF16, FC_E4M3, 4, 0, 8, 8, 128, FC_SCALE_PER_HEAD, 1, 1, 30.0},
        {FC_F16, FC_E4M3, 4, 0, 4, 1, 64, FC_SCALE_GIVEN, 0, 1, 0.0},
        {FC_BF16, FC_BF16, 2, 100, 4, 4, 128, FC_SCALE_PER_HEAD, 1, 0, 30.0},
        {FC_F16, FC_F16, 4, 0, 2, 2, 192, FC_SCALE_PER_HEAD, 1, 1, 0.0},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        struct fc_quantize_case c;
        memset(&c, 0, sizeof c);
        fc_quantize_params_init(&c.shape);
        c.shape.dtype = CASES[i].dtype;
        c.shape.out_dtype = CASES[i].out;
        c.shape.batch = CASES[i].batch;
        c.shape.seqlen = CASES[i].seqlen;
        c.shape.heads = CASES[i].heads;
        c.shape.descale_heads = CASES[i].descale_heads;
        c.shape.head_dim = CASES[i].head_dim;
        c.shape.scaling = CASES[i].scaling;
        c.shape.rotate = CASES[i].rotate;
        c.shape.rotation_seed = seed + i;
        c.lens = CASES[i].varlen ? lens : NULL;
        c.seed = seed * 31 + i;
        c.outlier_scale = CASES[i].outliers;
        struct fc_quantize_result r;
        char msg[FC_MESSAGE_MAX];
        const enum fc_status status = fc_quantize_check(ctx, &c, &r, msg, sizeof msg);
        const int fp8 = CASES[i].out == FC_E4M3;
        /* with outliers, rotating must at least halve the amax (30 over n >= 16 dimensions) */
        const int amax_ok = !fp8 || !CASES[i].rotate || CASES[i].outliers == 0.0 || r.amax_ratio < 0.5;
        const int ok = status == FC_OK && r.bad == 0 && r.descale_error <= 1e-5 && amax_ok && r.elements > 0;
        printf("  quantize %s->%s d%d b%d h%d/%d %s%s%s: %zu elements, %zu bad, worst %.3f steps, descale error "
               "%.2e, rel RMSE %.4f, amax ratio %.3f%s%s\n",
               fc_dtype_name(CASES[i].dtype), fc_dtype_name(CASES[i].out), CASES[i].head_dim, CASES[i].batch,
               CASES[i].heads, CASES[i].descale_heads,
               CASES[i].scaling == FC_SCALE_GIVEN ? "given" : CASES[i].scaling == FC_SCALE_PER_TENSOR ? "tensor" : "head",
               CASES[i].rotate ? " rotated" : "", CASES[i].varlen ? " varlen" : "", r.elements, r.bad, r.worst_excess,
               r.descale_error, r.relative_rmse, r.amax_ratio, ok ? "" : "  FAILED ", status == FC_OK ? "" : msg);
        failed += !ok;
    }
    assert_int_equal(failed, 0);
}

static int setup(void **state)
{
    (void)state;
    if (create(&ctx, NULL) || create(&reference_ctx, "reference"))
        return -1;
    if (ctx->target.arch == 90) {
        for (size_t i = 0; i < SM90_FORCED_COUNT; i++)
            if (create(&sm90_ctx[i], SM90_FORCED[i].variant))
                return -1;
        if (create(&sm80_ctx, "sm80"))
            return -1;
    }
    int pushed;
    return fc_context_enter(ctx, &pushed) == FC_OK ? 0 : -1;   /* stays current for the suite */
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < SM90_FORCED_COUNT; i++)
        fc_context_destroy(sm90_ctx[i]);
    fc_context_destroy(sm80_ctx);
    fc_context_destroy(reference_ctx);
    fc_context_destroy(ctx);
    return 0;
}

int main(void)
{
    char why[1024];
    const struct fc_cuda_api *cuda = fc_cuda_load(why, sizeof why);
    int count = 0;
    if (cuda)
        cuda->cuDeviceGetCount(&count);
    if (!cuda || count == 0) {
        printf("SKIP: the gpu suite needs a GPU: %s\n", cuda ? "the driver reports no device" : why);
        return SKIP_EXIT;
    }
    /* every context of the suite runs the kernel it plans or is forced to (test_quick_first_call turns
     * the quick first call on for its own) */
    setenv("FC_QUICK_FIRST_CALL", "0", 1);
    const char *env = getenv("FC_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("seed %llu (set FC_TEST_SEED to repeat)\n", (unsigned long long)seed);
    /* FC_GPU_TESTS: a cmocka name pattern (e.g. "test_sm90*"): one process per test, side by side,
     * spreads the CPU reference's work over a GPU host's cores (tools/gpu-host.sh gpu-suite-split). */
    const char *filter = getenv("FC_GPU_TESTS");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selected_kernels_match_reference_over_awkward_shapes),
        cmocka_unit_test(test_reference_kernel_matches_reference_over_awkward_shapes),
        cmocka_unit_test(test_sm90_kernel_matches_reference_over_awkward_shapes),
        cmocka_unit_test(test_sm90_persistent_grid_loops_over_row_blocks),
        cmocka_unit_test(test_sm90_scheduled_grids_on_concurrent_streams),
        cmocka_unit_test(test_sm90_scheduled_grids_without_a_counter),
        cmocka_unit_test(test_sm80_kernel_matches_reference_over_awkward_shapes),
        cmocka_unit_test(test_decode_kernel_matches_reference_over_awkward_shapes),
        cmocka_unit_test(test_bit_identical_over_repeated_runs),
        cmocka_unit_test(test_quick_first_call),
        cmocka_unit_test(test_misuse_on_a_real_context_launches_nothing),
        cmocka_unit_test(test_forward_is_graph_capturable),
        cmocka_unit_test(test_varlen_matches_reference_in_every_family),
        cmocka_unit_test(test_paged_matches_reference_in_every_family),
        cmocka_unit_test(test_fp8_kv_matches_reference_in_the_decode_kernel),
        cmocka_unit_test(test_fp8_kv_matches_reference_in_the_sm80_kernel),
        cmocka_unit_test(test_fp8_kv_matches_reference_in_the_reference_kernel),
        cmocka_unit_test(test_fp8_kv_matches_reference_as_selected),
        cmocka_unit_test(test_fp8_attention_matches_reference_in_the_sm90_kernel),
        cmocka_unit_test(test_fp8_attention_matches_reference_in_the_reference_kernel),
        cmocka_unit_test(test_fp8_attention_matches_reference_as_selected),
        cmocka_unit_test(test_quantize_matches_reference),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
