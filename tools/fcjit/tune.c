/* fcjit tune (also `fcjit --tune`): time every candidate of a tuning spec on each of its problem
 * buckets on this GPU, check each candidate's output before it may win, and store every
 * measurement, winners marked, in the kernel cache's database.
 *
 * Candidates are compiled first, in worker processes (fcjit_compile_list). Each measurement is
 * committed on its own, so an interrupted sweep (Ctrl-C, a lost machine) resumes where it
 * stopped: a bucket/candidate pair already measured for this GPU, driver and kernel set is not
 * measured again unless --restart. Timing follows BENCH.md's do_bench: fresh random inputs per
 * bucket, about 25 ms of warm-up launches, then the median of about 100 ms of timed launches, queued
 * back to back (fcjit_time_forward), with the L2 cache flushed before each by writing a buffer twice
 * its size; then the bucket's finals (tune_finals) time its closest candidates again in turn. */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_internal.h"
#include "config_internal.h"
#include "context_internal.h"
#include "embedded_internal.h"
#include "fcjit.h"
#include "tuning_internal.h"

#define CHECK_ROWS 32
#define HEADS_TIMES_DIM 2048   /* BENCH.md: heads_q = 2048 / head_dim */
#define TUNE_MEASUREMENTS_MAX 100000   /* the shipped sweep takes about 2,500 */

static const char HELP[] =
    "usage: fcjit tune [--spec FILE] [--dtype LIST] [--iters N] [--warmup N] [--rep-ms MS] [--warmup-ms MS]\n"
    "                  [--rounds N] [--margin PCT] [--jobs N] [--restart] [--dry-run [--arch A]]\n"
    "\n"
    "Times every candidate kernel of a tuning spec on each of its problem buckets on GPU 0, checks\n"
    "each candidate's output against an fp64 CPU reference before it may win, and stores every\n"
    "measurement, winners marked, in the kernel cache's database (--db). Afterwards every forward\n"
    "call whose problem is near a bucket runs that bucket's winner on this GPU (FC_TUNED=0: not).\n"
    "Interrupt at any time: finished measurements are kept and the next run resumes.\n"
    "\n"
    "  --spec FILE   YAML tuning spec (default: the shipped tuning_db/tune.yaml)\n"
    "  --dtype LIST  only the spec's buckets of these dtypes, a comma list of f16, bf16 and e4m3 (FP8\n"
    "                attention: q, k and v e4m3, timed with a bf16 out; its winners serve an f16 out too)\n"
    "  --iters N     timed launches per candidate, at least; median taken (default 10)\n"
    "  --warmup N    untimed launches first, at least (default 3)\n"
    "  --rep-ms MS   time each candidate for about this long, back to back with L2 flushed before each\n"
    "                launch, as BENCH.md's do_bench (default 100; 0: --iters alone)\n"
    "  --warmup-ms MS  likewise for the untimed launches (default 25), so the GPU times the candidate\n"
    "                at the clock and power a benchmark sees\n"
    "  --rounds N    the finals: the candidates within 5% of a bucket's fastest (up to 4) are timed N\n"
    "                more times, in turn, and each one's time is the median of its timings (default 2;\n"
    "                0: none)\n"
    "  --margin PCT  the heuristic's own choice stays the winner unless another candidate is more\n"
    "                than PCT percent faster: smaller wins are timing noise (default 2)\n"
    "  --jobs N      compile worker processes (default: the number of CPUs)\n"
    "  --restart     measure again what this GPU, driver and kernel set already measured\n"
    "  --dry-run     print the buckets and candidates, measure nothing (no GPU needed)\n"
    "  --arch A      with --dry-run: the target to plan for (default sm_90a)\n";

struct options {
    const char *spec;
    int iters, warmup, jobs, restart, dry_run, margin_percent;
    float warmup_ms, rep_ms;
    int rounds;   /* --rounds: the finals' timings of each finalist */
    int arch, arch_specific;
    unsigned dtypes;   /* --dtype: bit 1 << dtype of each bucket dtype to tune; 0: every one */
};

static volatile sig_atomic_t interrupted;

static void on_interrupt(int signal)
{
    (void)signal;
    interrupted = 1;
}

/* --dtype: a comma list of bucket dtypes (names or fc_dtype_parse's aliases) into a mask. */
static int parse_dtypes(const char *text, unsigned *dtypes)
{
    char name[16];
    *dtypes = 0;
    for (const char *p = text;; p++) {
        const size_t n = strcspn(p, ",");
        enum fc_dtype dtype;
        if (n == 0 || n >= sizeof name) {
            fprintf(stderr, "fcjit tune: --dtype takes a comma list of f16, bf16 and e4m3, not '%s'\n", text);
            return -1;
        }
        memcpy(name, p, n);
        name[n] = 0;
        if (fc_dtype_parse(name, &dtype)) {
            fprintf(stderr, "fcjit tune: --dtype: unknown dtype '%s' (f16, bf16 or e4m3)\n", name);
            return -1;
        }
        *dtypes |= 1u << dtype;
        p += n;
        if (!*p)
            return 0;
    }
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option OPTIONS[] = {
        {"spec", required_argument, 0, 's'}, {"iters", required_argument, 0, 'i'},
        {"warmup", required_argument, 0, 'w'}, {"jobs", required_argument, 0, 'j'},
        {"restart", no_argument, 0, 'r'}, {"dry-run", no_argument, 0, 'n'}, {"arch", required_argument, 0, 'a'},
        {"margin", required_argument, 0, 'm'}, {"dtype", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'},
        {"rep-ms", required_argument, 0, 'R'}, {"warmup-ms", required_argument, 0, 'W'},
        {"rounds", required_argument, 0, 'o'},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->iters = 10;
    o->warmup = 3;
    o->rep_ms = 100.f;   /* do_bench's (tools/bench.py's REP_MS, WARMUP_MS) */
    o->warmup_ms = 25.f;
    o->rounds = 2;
    o->margin_percent = 2;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cpus > 0 ? (int)cpus : 1;
    o->arch = 90;
    o->arch_specific = 1;
    if (fcjit_wants_help(argc, argv)) {
        fputs(HELP, stdout);
        return 1;
    }
    int c;
    while ((c = getopt_long(argc, argv, "h", OPTIONS, NULL)) != -1) {
        switch (c) {
        case 's': o->spec = optarg; break;
        case 'd': if (parse_dtypes(optarg, &o->dtypes)) return -1; break;
        case 'i': if (fcjit_parse_int("tune", "iters", optarg, 1, 1000, &o->iters)) return -1; break;
        case 'w': if (fcjit_parse_int("tune", "warmup", optarg, 0, 1000, &o->warmup)) return -1; break;
        case 'R': if (fcjit_parse_ms("tune", "rep-ms", optarg, &o->rep_ms)) return -1; break;
        case 'W': if (fcjit_parse_ms("tune", "warmup-ms", optarg, &o->warmup_ms)) return -1; break;
        case 'o': if (fcjit_parse_int("tune", "rounds", optarg, 0, 20, &o->rounds)) return -1; break;
        case 'j': if (fcjit_parse_int("tune", "jobs", optarg, 1, 256, &o->jobs)) return -1; break;
        case 'm': if (fcjit_parse_int("tune", "margin", optarg, 0, 50, &o->margin_percent)) return -1; break;
        case 'r': o->restart = 1; break;
        case 'n': o->dry_run = 1; break;
        case 'a':
            if (fc_arch_parse(optarg, &o->arch, &o->arch_specific)) {
                fprintf(stderr, "fcjit tune: bad --arch '%s' (e.g. sm_90a, sm_80)\n", optarg);
                return -1;
            }
            break;
        case 'h': fputs(HELP, stdout); return 1;
        default: fputs(HELP, stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fcjit tune: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* A candidate on the arch, sorted by what a bucket must match, then by its place in the spec. */
struct candidate {
    int dtype, head_dim, causal;
    size_t index;   /* into the spec's variants */
};

/* One bucket and its candidates: a run of the sorted candidates. */
struct bucket_work {
    struct fc_tune_problem problem;
    char name[FC_BUCKET_NAME_MAX];
    const struct candidate *candidates;
    size_t count;
};

struct work {
    struct fc_variant_list variants;        /* every candidate of the spec */
    struct fc_tune_problem_list problems;
    struct candidate *on_arch;              /* the spec's candidates for this arch, sorted */
    struct bucket_work *buckets;
    size_t bucket_count, measurements;
    struct fc_variant_list to_compile;      /* the candidates some bucket on this arch takes */
};

static void work_free(struct work *w)
{
    free(w->on_arch);
    free(w->buckets);
    fc_variant_list_free(&w->variants);
    fc_tune_problem_list_free(&w->problems);
    free(w->to_compile.items);
    memset(w, 0, sizeof *w);
}

/* Reads the spec (the shipped one without --spec): before any GPU is looked for. */
static enum fc_status load_spec(const struct options *o, struct work *w)
{
    char err[1024] = "";
    enum fc_status status;
    memset(w, 0, sizeof *w);
    if (o->spec) {
        status = fc_config_load_tune(o->spec, &w->variants, &w->problems, err, sizeof err);
    } else {
        const struct fc_embedded_file *f = fc_embedded_find(fc_embedded_data, "tune.yaml");
        status = fc_config_parse_tune(f->text, f->length, "tuning_db/tune.yaml", &w->variants, &w->problems, err,
                                      sizeof err);
    }
    if (status != FC_OK)
        fprintf(stderr, "fcjit tune: %s\n", err);
    return status;
}

static int compare_candidates(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->dtype != y->dtype)
        return x->dtype - y->dtype;
    if (x->head_dim != y->head_dim)
        return x->head_dim - y->head_dim;
    if (x->causal != y->causal)
        return x->causal - y->causal;
    return (x->index > y->index) - (x->index < y->index);
}

/* The first of the sorted candidates a bucket takes (or where it would be). */
static size_t first_candidate(const struct candidate *sorted, size_t count, const struct fc_tune_problem *p)
{
    const struct candidate key = {(int)p->dtype, p->head_dim, p->causal, 0};
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (compare_candidates(&sorted[middle], &key) < 0)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* Pairs each bucket of the spec (of the dtypes in the mask `dtypes`; 0: all) with the candidates of its
 * dtype, head_dim and causality on the arch: sorted once, then a binary search per bucket, so that a
 * spec at its caps plans in well under a second. */
static enum fc_status plan_work(int arch, int arch_specific, unsigned dtypes, struct work *w)
{
    size_t on_arch = 0;
    w->on_arch = calloc(w->variants.count + 1, sizeof *w->on_arch);
    w->buckets = calloc(w->problems.count + 1, sizeof *w->buckets);
    w->to_compile.items = calloc(w->variants.count + 1, sizeof *w->to_compile.items);
    char *used = calloc(w->variants.count + 1, 1);
    if (!w->on_arch || !w->buckets || !w->to_compile.items || !used) {
        free(used);
        return FC_ERR_NOMEM;
    }
    for (size_t v = 0; v < w->variants.count; v++) {
        const struct fc_variant *c = &w->variants.items[v];
        /* NOTE: a candidate a bucket would run as another kernel is left out (a window, an FP8 cache
         * beside a 16-bit q); FP8 attention's (q_fp8) pair with e4m3 buckets */
        if (c->arch == arch && c->arch_specific == arch_specific && fc_bucket_measures(c))
            w->on_arch[on_arch++] = (struct candidate){(int)fc_bucket_dtype(c), c->head_dim, c->causal, v};
    }
    qsort(w->on_arch, on_arch, sizeof *w->on_arch, compare_candidates);
    for (size_t p = 0; p < w->problems.count; p++) {
        if (dtypes && !(dtypes & 1u << w->problems.items[p].dtype))
            continue;
        struct bucket_work *b = &w->buckets[w->bucket_count];
        b->problem = w->problems.items[p];
        const size_t first = first_candidate(w->on_arch, on_arch, &b->problem);
        const struct candidate key = {(int)b->problem.dtype, b->problem.head_dim, b->problem.causal, 0};
        b->candidates = &w->on_arch[first];
        while (first + b->count < on_arch && b->candidates[b->count].dtype == key.dtype &&
               b->candidates[b->count].head_dim == key.head_dim && b->candidates[b->count].causal == key.causal)
            b->count++;
        if (!b->count)
            continue;
        fc_bucket_name(&b->problem, b->name);
        w->bucket_count++;
        w->measurements += b->count;
        for (size_t i = 0; i < b->count && !used[first + i]; i++) {   /* a run is all used or none */
            used[first + i] = 1;
            w->to_compile.items[w->to_compile.count++] = w->variants.items[b->candidates[i].index];
        }
    }
    free(used);
    if (w->measurements > TUNE_MEASUREMENTS_MAX) {
        fprintf(stderr, "fcjit tune: the spec pairs its buckets and candidates into %zu measurements, more than %d "
                "(a day of GPU time at a second each); split the sweep\n", w->measurements, TUNE_MEASUREMENTS_MAX);
        return FC_ERR_CONFIG;
    }
    return FC_OK;
}

/* Progress: a bar with the ETA on a terminal, one line per measurement otherwise. */
struct progress {
    size_t done, total, skipped;
    double start;
    int tty;
};

static void progress_show(struct progress *p, const char *bucket, const char *variant, double ms, int passed)
{
    p->done++;
    if (!p->tty) {
        if (ms > 0.)
            fprintf(stderr, "[%zu/%zu] %s %s %.4f ms\n", p->done, p->total, bucket, variant, ms);
        else
            fprintf(stderr, "[%zu/%zu] %s %s %s\n", p->done, p->total, bucket, variant,
                    passed ? "measured before (resumed)" : "FAILED its check or launch: cannot win");
        return;
    }
    enum { WIDTH = 30 };
    const size_t measured = p->done - p->skipped;
    const double elapsed = fcjit_seconds_now() - p->start;
    const double eta = measured ? elapsed / (double)measured * (double)(p->total - p->done) : 0.;
    const int filled = (int)(WIDTH * p->done / (p->total ? p->total : 1));
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu ETA %2dm%02ds  %-26s %-40.40s", filled, "==============================",
            WIDTH - filled, "", p->done, p->total, (int)eta / 60, (int)eta % 60, bucket, variant);
    if (p->done == p->total)
        fputc('\n', stderr);
}

static struct fc_check_case bucket_case(const struct fc_tune_problem *b, uint64_t seed)
{
    struct fc_check_case c;
    memset(&c, 0, sizeof c);
    fc_attention_params_init(&c.shape);
    c.shape.dtype = b->dtype;
    if (b->dtype == FC_E4M3) {   /* FP8 attention: q, k and v e4m3, with real descales */
        c.shape.out_dtype = FC_BUCKET_FP8_OUT;
        c.kv_descale = FCJIT_DEFAULT_KV_DESCALE;
    }
    c.shape.head_dim = b->head_dim;
    c.shape.causal = b->causal;
    c.shape.seqlen_q = c.shape.seqlen_k = b->seqlen;
    c.shape.batch = b->tokens / b->seqlen > 0 ? b->tokens / b->seqlen : 1;
    int heads = HEADS_TIMES_DIM / b->head_dim > 0 ? HEADS_TIMES_DIM / b->head_dim : 1;
    heads = (heads + b->gqa - 1) / b->gqa * b->gqa;   /* a multiple of the GQA ratio */
    c.shape.heads_q = heads;
    c.shape.heads_kv = heads / b->gqa;
    c.layout = FC_LAYOUT_PACKED;
    c.want_lse = 1;
    c.check_rows = CHECK_ROWS;
    c.seed = seed;
    return c;
}

static double flops_of(const struct fc_attention_params *p)
{
    double f = 4.0 * p->batch * p->heads_q * (double)p->seqlen_q * p->seqlen_k * p->head_dim;
    return p->causal ? f / 2 : f;
}

struct bucket_summary {
    char winner[FC_VARIANT_NAME_MAX], heuristic[FC_VARIANT_NAME_MAX];
    double winner_ms, heuristic_ms;
};

/* The variant the selector's heuristic picks for the bucket's problem on the target ("" if none): the
 * incumbent the --margin rule keeps unless another candidate is faster by more than the margin.
 * NOTE: without V transposed ahead: candidates are timed without it, and a winner takes the heuristic's
 * own rule for it (plan.c's apply_tuned); named with it, FP8 head_dim 256's incumbent from 4k keys was
 * no candidate, so the fastest candidate won there without the margin (H200, PERF_NOTES v40.2). */
static void heuristic_name(const struct fc_target *target, const struct bucket_work *b,
                           char name[FC_VARIANT_NAME_MAX])
{
    struct fc_attention_params params = bucket_case(&b->problem, 0).shape;
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[FC_MESSAGE_MAX];
    name[0] = 0;
    if (fc_problem_shape(&params, &problem, msg, sizeof msg) == FC_OK &&
        fc_plan_make(&problem, target, NULL, NULL, &plan, msg, sizeof msg) == FC_OK) {
        plan.variant.v_transposed = 0;
        fc_variant_name(&plan.variant, name);
    }
}

/* Whether the bucket's candidates include the variant named. */
static int is_candidate(const struct work *w, const struct bucket_work *b, const char *name)
{
    for (size_t c = 0; c < b->count; c++) {
        char candidate[FC_VARIANT_NAME_MAX];
        fc_variant_name(&w->variants.items[b->candidates[c].index], candidate);
        if (!strcmp(candidate, name))
            return 1;
    }
    return 0;
}

/* How each candidate is timed: the options' budgets over their least counts. */
static struct fcjit_timing timing_of(const struct options *o)
{
    return (struct fcjit_timing){.warmup = o->warmup, .iters = o->iters, .warmup_ms = o->warmup_ms,
                                 .rep_ms = o->rep_ms};
}

/* Runs candidate v's kernel for every forward call of ctx until the override is cleared. */
static void use_candidate(struct fc_context *ctx, const struct fc_variant *v)
{
    struct fc_plan_override use = {.active = 1, .family = v->family, .block_m = v->block_m,
                                   .block_n = v->block_n, .warps = v->warps, .stages = v->stages,
                                   .pingpong = v->pingpong + 1, .pack_gqa = v->pack_gqa + 1,
                                   .v_transposed = v->v_transposed + 1, .quick = v->quick + 1};
    ctx->override = use;
}

struct timed_row {
    struct fc_tuning_row row;
    size_t candidate;   /* into the bucket's candidates */
    double *ms;         /* its timings, the first pass's first */
};

static int by_first_time(const void *a, const void *b)
{
    const struct timed_row *x = a, *y = b;
    return (x->ms[0] > y->ms[0]) - (x->ms[0] < y->ms[0]);
}

/* The finals: the candidates (rows, this run's that passed) within FINAL_WINDOW of the fastest,
 * at most FINALISTS_MAX, timed o->rounds more times, in turn, so that a drift of the clock reaches
 * each alike; each one's time becomes the median of its timings (one timing alone was 3-5% off
 * under do_bench's, enough to pass the margin, PERF_NOTES v41.1). Stores the new times. A bucket
 * interrupted before its finals ended keeps its first pass's times, and a resumed run, which measures
 * nothing of it again, marks its winner from those. */
static enum fc_status tune_finals(struct fc_context *ctx, const struct options *o, const struct work *w,
                                  const struct bucket_work *b, struct fc_check_run *run, struct timed_row *rows,
                                  size_t count, CUdeviceptr scrub, size_t scrub_words, char *msg, size_t size)
{
    enum { FINALISTS_MAX = 4 };
    const double FINAL_WINDOW = 0.05;
    if (count < 2 || o->rounds == 0)
        return FC_OK;
    qsort(rows, count, sizeof *rows, by_first_time);
    size_t finalists = 1;
    while (finalists < count && finalists < FINALISTS_MAX && rows[finalists].ms[0] <= rows[0].ms[0] * (1 + FINAL_WINDOW))
        finalists++;
    if (finalists < 2)
        return FC_OK;
    const struct fcjit_timing timing = timing_of(o);
    enum fc_status status = FC_OK;
    for (int r = 1; r <= o->rounds && status == FC_OK && !interrupted; r++)
        for (size_t f = 0; f < finalists && status == FC_OK; f++) {
            use_candidate(ctx, &w->variants.items[b->candidates[rows[f].candidate].index]);
            status = fcjit_time_forward(ctx, &run->params, &timing, scrub, scrub_words, &rows[f].ms[r], NULL);
        }
    memset(&ctx->override, 0, sizeof ctx->override);
    if (status != FC_OK) {
        snprintf(msg, size, "the finals' timing: %s", fc_status_name(status));
        return status;
    }
    if (interrupted)   /* the first pass's times stand */
        return FC_OK;
    for (size_t f = 0; f < finalists && status == FC_OK; f++) {
        rows[f].row.median_ms = fcjit_median(rows[f].ms, o->rounds + 1);
        rows[f].row.tflops = flops_of(&run->params) / (rows[f].row.median_ms * 1e-3) * 1e-12;
        status = fc_tuning_put(ctx->cache, &rows[f].row, msg, size);
    }
    return status;
}

/* Measures the bucket's pending candidates, then its finals; returns FC_OK, or the first storage
 * error. */
static enum fc_status tune_bucket(struct fc_context *ctx, const struct options *o, const struct work *w,
                                  const struct bucket_work *b, const struct fc_tuning_identity *id,
                                  CUdeviceptr scrub, size_t scrub_words, struct progress *progress)
{
    char msg[FC_MESSAGE_MAX];
    size_t pending = 0, timed = 0;
    int *measured = calloc(b->count, sizeof *measured);
    struct timed_row *rows = calloc(b->count, sizeof *rows);
    double *times = calloc(b->count * (size_t)(o->rounds + 1), sizeof *times);
    if (!measured || !rows || !times) {
        free(measured);
        free(rows);
        free(times);
        return FC_ERR_NOMEM;
    }
    for (size_t i = 0; i < b->count; i++) {
        char name[FC_VARIANT_NAME_MAX];
        fc_variant_name(&w->variants.items[b->candidates[i].index], name);
        int found = 0;
        if (!o->restart && fc_tuning_has(ctx->cache, id, b->name, name, &found, msg, sizeof msg) == FC_OK && found)
            measured[i] = 1;
        pending += !measured[i];
    }
    enum fc_status status = FC_OK;
    struct fc_check_run run;
    int prepared = 0;
    if (pending) {
        struct fc_check_case c = bucket_case(&b->problem, (uint64_t)time(NULL) ^ (uint64_t)progress->done);
        status = fc_check_prepare(ctx, &c, &run, msg, sizeof msg);   /* fresh random inputs */
        if (status != FC_OK) {
            fprintf(stderr, "\nfcjit tune: %s: inputs: %s\n", b->name, msg);
            free(measured);
            free(rows);
            free(times);
            return status;
        }
        prepared = 1;
    }
    const struct fcjit_timing timing = timing_of(o);
    for (size_t i = 0; i < b->count && status == FC_OK && !interrupted; i++) {
        const struct fc_variant *v = &w->variants.items[b->candidates[i].index];
        struct fc_tuning_row row;
        memset(&row, 0, sizeof row);
        row.id = *id;
        snprintf(row.bucket, sizeof row.bucket, "%s", b->name);
        fc_variant_name(v, row.variant);
        if (measured[i]) {
            progress->skipped++;
            progress_show(progress, b->name, row.variant, 0., 1);
            continue;
        }
        use_candidate(ctx, v);
        struct fc_error_stats stats;
        enum fc_status run_status = fc_check_poison(&run, msg, sizeof msg);
        if (run_status == FC_OK)
            run_status = fc_attention_forward(ctx, &run.params, NULL);
        if (run_status == FC_OK && ctx->cuda->cuCtxSynchronize() != CUDA_SUCCESS)
            run_status = FC_ERR_CUDA;
        if (run_status == FC_OK)
            run_status = fc_check_download(&run, msg, sizeof msg);
        row.passed_check = run_status == FC_OK && fc_check_verify(&run, &stats);
        if (row.passed_check &&
            fcjit_time_forward(ctx, &run.params, &timing, scrub, scrub_words, &row.median_ms, NULL) != FC_OK)
            row.passed_check = 0;
        if (row.passed_check) {
            row.tflops = flops_of(&run.params) / (row.median_ms * 1e-3) * 1e-12;
            rows[timed] = (struct timed_row){.row = row, .candidate = i, .ms = times + timed * (size_t)(o->rounds + 1)};
            rows[timed++].ms[0] = row.median_ms;
        } else if (run_status == FC_ERR_CUDA) {   /* a fault leaves the context unusable: stop here */
            status = FC_ERR_CUDA;
        }
        status = status == FC_OK ? fc_tuning_put(ctx->cache, &row, msg, sizeof msg) : status;
        progress_show(progress, b->name, row.variant, row.median_ms, row.passed_check);
    }
    memset(&ctx->override, 0, sizeof ctx->override);
    if (status == FC_OK && !interrupted)
        status = tune_finals(ctx, o, w, b, &run, rows, timed, scrub, scrub_words, msg, sizeof msg);
    if (prepared)
        fc_check_release(&run);
    free(measured);
    free(rows);
    free(times);
    if (status == FC_OK && !interrupted) {
        char incumbent[FC_VARIANT_NAME_MAX];
        heuristic_name(&ctx->target, b, incumbent);
        status = fc_tuning_mark_winner(ctx->cache, id, b->name, incumbent, o->margin_percent / 100., msg, sizeof msg);
    }
    if (status != FC_OK)
        fprintf(stderr, "\nfcjit tune: %s: %s\n", b->name, msg);
    return status;
}

/* The winner and the heuristic's own choice of each bucket, from the database. */
struct summary_walk {
    const struct fc_tuning_identity *id;
    const char *bucket, *heuristic;
    struct bucket_summary *out;
};

static int summary_row(void *user, const struct fc_tuning_row *row)
{
    struct summary_walk *s = user;
    if (strcmp(row->bucket, s->bucket) || strcmp(row->id.gpu_name, s->id->gpu_name) ||
        strcmp(row->id.kernel_set, s->id->kernel_set) || strcmp(row->id.driver, s->id->driver) ||
        row->id.sm_count != s->id->sm_count)
        return 0;
    if (row->winner) {
        snprintf(s->out->winner, sizeof s->out->winner, "%s", row->variant);
        s->out->winner_ms = row->median_ms;
    }
    if (!strcmp(row->variant, s->heuristic) && row->passed_check)
        s->out->heuristic_ms = row->median_ms;
    return 0;
}

static void print_summary(struct fc_context *ctx, const struct work *w, const struct fc_tuning_identity *id,
                          double wall, size_t measured_now, int json)
{
    char msg[512];
    if (json)
        printf("{\"gpu\": \"%s\", \"sm_count\": %d, \"driver\": \"%s\", \"kernel_set\": \"%s\", \"buckets\": %zu, "
               "\"measurements\": %zu, \"measured_now\": %zu, \"wall_s\": %.1f, \"results\": [\n",
               id->gpu_name, id->sm_count, id->driver, id->kernel_set, w->bucket_count, w->measurements, measured_now,
               wall);
    else
        printf("%-28s %-44s %10s %-44s %10s %7s\n", "bucket", "winner", "ms", "heuristic", "ms", "gain");
    for (size_t i = 0; i < w->bucket_count; i++) {
        const struct bucket_work *b = &w->buckets[i];
        struct bucket_summary s;
        memset(&s, 0, sizeof s);
        heuristic_name(&ctx->target, b, s.heuristic);
        struct summary_walk walk = {id, b->name, s.heuristic, &s};
        fc_tuning_foreach(ctx->cache, 0, summary_row, &walk, msg, sizeof msg);
        const double gain = s.winner_ms > 0 && s.heuristic_ms > 0 ? s.heuristic_ms / s.winner_ms : 0.;
        if (json)
            printf("  {\"bucket\": \"%s\", \"winner\": \"%s\", \"winner_ms\": %.5f, \"heuristic\": \"%s\", "
                   "\"heuristic_ms\": %.5f, \"gain\": %.4f}%s\n", b->name, s.winner, s.winner_ms, s.heuristic,
                   s.heuristic_ms, gain, i + 1 < w->bucket_count ? "," : "");
        else if (s.heuristic_ms > 0)
            printf("%-28s %-44s %10.4f %-44s %10.4f %6.3fx\n", b->name, s.winner[0] ? s.winner : "(none)",
                   s.winner_ms, s.heuristic, s.heuristic_ms, gain);
        else   /* the heuristic's choice was no candidate, or failed its check */
            printf("%-28s %-44s %10.4f %-44s %10s %7s\n", b->name, s.winner[0] ? s.winner : "(none)", s.winner_ms,
                   s.heuristic, "-", "-");
    }
    if (json)
        printf("]}\n");
    else
        printf("%zu buckets, %zu measurements (%zu now) on %s, %.1f s\n", w->bucket_count, w->measurements,
               measured_now, id->gpu_name, wall);
}

static void print_dry_run(const struct work *w, const struct fc_target *target, int json)
{
    if (json)
        printf("{\"buckets\": %zu, \"measurements\": %zu, \"variants\": %zu, \"plan\": [\n", w->bucket_count,
               w->measurements, w->to_compile.count);
    size_t uncovered = 0;
    for (size_t i = 0; i < w->bucket_count; i++) {
        const struct bucket_work *b = &w->buckets[i];
        char heuristic[FC_VARIANT_NAME_MAX];
        heuristic_name(target, b, heuristic);
        const int covered = is_candidate(w, b, heuristic);
        uncovered += !covered;
        if (json)
            printf("  {\"bucket\": \"%s\", \"heuristic\": \"%s\", \"heuristic_is_candidate\": %s, \"candidates\": [",
                   b->name, heuristic, covered ? "true" : "false");
        else
            printf("%s: %zu candidates; the heuristic's %s%s\n", b->name, b->count, heuristic[0] ? heuristic : "(none)",
                   covered ? "" : ", not among them: the fastest candidate wins without the margin");
        for (size_t c = 0; c < b->count; c++) {
            char name[FC_VARIANT_NAME_MAX];
            fc_variant_name(&w->variants.items[b->candidates[c].index], name);
            if (json)
                printf("%s\"%s\"", c ? ", " : "", name);
            else
                printf("  %s\n", name);
        }
        if (json)
            printf("]}%s\n", i + 1 < w->bucket_count ? "," : "");
    }
    if (json)
        printf("]}\n");
    else
        printf("%zu buckets, %zu measurements, %zu distinct kernels (%zu candidates in the spec were pruned)%s\n",
               w->bucket_count, w->measurements, w->to_compile.count, w->variants.pruned,
               uncovered ? "; some buckets' heuristic choice is no candidate" : "");
}

/* After the spec was read (status): the buckets and candidates on --arch, measured nothing. */
static int dry_run(const struct options *o, struct work *w, enum fc_status status, int json)
{
    if (status == FC_OK)
        status = plan_work(o->arch, o->arch_specific, o->dtypes, w);
    const struct fc_target target = {o->arch, o->arch_specific, 0};   /* sm_count 0: planned as an H100's */
    if (status == FC_OK)
        print_dry_run(w, &target, json);
    work_free(w);
    return fcjit_exit_for(status);
}

int fcjit_tune(int argc, char **argv, const struct fcjit_globals *g)
{
    struct options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed)
        return parsed > 0 ? FCJIT_EXIT_OK : FCJIT_EXIT_USAGE;
    struct work w;
    enum fc_status status = load_spec(&o, &w);
    if (status != FC_OK || o.dry_run)
        return dry_run(&o, &w, status, g->json);
    if (g->no_disk_cache) {
        fprintf(stderr, "fcjit tune: the measurements go to the kernel cache's database; drop --no-cache\n");
        work_free(&w);
        return FCJIT_EXIT_USAGE;
    }
    int code = fcjit_require_writable_cache(g, "tune");
    struct fc_context *ctx = code == FCJIT_EXIT_OK ? fcjit_open_context(g, 0, &status) : NULL;
    if (!ctx) {
        work_free(&w);
        return code == FCJIT_EXIT_OK ? fcjit_exit_for(status) : code;
    }
    fc_context_set_quick_first_call(ctx, 0);   /* every timing is of the candidate itself */
    status = plan_work(ctx->target.arch, ctx->target.arch_specific, o.dtypes, &w);
    if (status == FC_OK && w.bucket_count == 0) {
        fprintf(stderr, "fcjit tune: no candidate of the spec runs on this GPU (sm_%d%s)%s\n", ctx->target.arch,
                ctx->target.arch_specific ? "a" : "", o.dtypes ? " for a bucket of --dtype's" : "");
        status = FC_ERR_CONFIG;
    }
    const double start = fcjit_seconds_now();
    if (status == FC_OK) {
        fprintf(stderr, "fcjit tune: %s, %zu buckets, %zu measurements, %zu kernels to compile or find cached\n",
                ctx->gpu_name, w.bucket_count, w.measurements, w.to_compile.count);
        if (fcjit_compile_list(g, &w.to_compile, o.jobs, 0, 1) != FCJIT_EXIT_OK)
            fprintf(stderr, "fcjit tune: some candidates did not compile; they will fail their check\n");
    }
    struct fc_tuning_identity id;
    fc_context_tuning_identity(ctx, &id);
    int pushed = 0;
    if (status == FC_OK)
        status = fc_context_enter(ctx, &pushed);
    /* NOTE: twice the L2, rewritten before every timed launch, so no launch finds its inputs
     * cached by the one before (BENCH.md). */
    int l2_bytes = 0;
    CUdeviceptr scrub = 0;
    if (status == FC_OK) {
        ctx->cuda->cuDeviceGetAttribute(&l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, ctx->cu_device);
        if (l2_bytes > 0 && ctx->cuda->cuMemAlloc(&scrub, 2 * (size_t)l2_bytes) != CUDA_SUCCESS)
            scrub = 0;
    }
    struct sigaction action, previous;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_interrupt;
    sigaction(SIGINT, &action, &previous);
    struct progress progress = {0, w.measurements, 0, fcjit_seconds_now(), isatty(STDERR_FILENO)};
    for (size_t i = 0; status == FC_OK && i < w.bucket_count && !interrupted; i++)
        status = tune_bucket(ctx, &o, &w, &w.buckets[i], &id, scrub, 2 * (size_t)l2_bytes / 4, &progress);
    sigaction(SIGINT, &previous, NULL);
    const size_t measured_now = progress.done - progress.skipped;
    code = fcjit_exit_for(status);
    if (interrupted) {
        fprintf(stderr, "\nfcjit tune: interrupted after %zu of %zu measurements; every finished one is stored "
                "in %s: run `fcjit tune` again to resume\n", progress.done, progress.total, fc_cache_path(ctx->cache));
        code = 130;
    } else if (status == FC_OK) {
        print_summary(ctx, &w, &id, fcjit_seconds_now() - start, measured_now, g->json);
    }
    if (scrub)
        ctx->cuda->cuMemFree(scrub);
    if (pushed)
        fc_context_leave(ctx, pushed);
    work_free(&w);
    fc_context_destroy(ctx);
    return code;
}
