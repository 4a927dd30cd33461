/* fcjit run / plan: one problem from flags. run checks it against an fp64 CPU reference and
 * times it; plan says which kernel would run it and why. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_internal.h"
#include "context_internal.h"
#include "fc_args.h"
#include "fcjit.h"
#include "launch_internal.h"

static const char HELP[] =
    "usage: fcjit %s [options]\n"
    "\n"
    "shape (tensors are [batch, seq, heads, head_dim], packed):\n"
    "  --batch N          (default 1)\n"
    "  --seqlen N         sets both seqlen_q and seqlen_k (default 1024)\n"
    "  --seqlen-q N, --seqlen-k N\n"
    "  --heads N          sets both heads_q and heads_kv (default 16)\n"
    "  --heads-q N, --heads-kv N   (heads_q a multiple of heads_kv: GQA)\n"
    "  --head-dim N       (default 128)\n"
    "  --dtype f16|bf16|e4m3  (default f16); e4m3 (also: fp8): FP8 attention, q, k and v e4m3, out\n"
    "                     --out-dtype; head_dim a multiple of 16 (run: per-(sequence, K/V head) descales)\n"
    "  --out-dtype bf16|f16   FP8 attention's output (default bf16)\n"
    "  --kv-dtype e4m3    an FP8 KV cache: K and V e4m3 (also: fp8), q and out --dtype; head_dim a multiple\n"
    "                     of 16 (default: --dtype's; run: per-(sequence, K/V head) descales, below)\n"
    "  --causal           bottom-right aligned causal mask\n"
    "  --window-left N    sliding window: a row sees N keys before its diagonal (default -1: all)\n"
    "  --window-right N   ... and N keys after it (default -1: all; 0 is causal)\n"
    "  --scale X          softmax scale (default 1/sqrt(head_dim))\n"
    "  --softcap X        logit soft-capping: scores s -> X tanh(s / X) (default 0: none)\n"
    "  --sinks M          attention sinks, one logit per query head: N(0, 1) x M (run: random; plan and\n"
    "                     explain: a run-time input of every kernel, no other kernel)\n"
    "  --varlen L,L,...   a ragged (varlen) batch: each sequence's query count, 0 allowed (sets --batch;\n"
    "                     tensors packed [tokens, heads, head_dim], plus 5 tokens of no sequence)\n"
    "  --varlen-k L,...   ... and each one's key count (default: the query counts)\n"
    "  --seqused-k U,...  keys used per sequence (a KV cache's filled length), varlen or dense\n"
    "  --page-size N      a paged K/V cache of N-token pages (--seqlen-k: each sequence's capacity; run:\n"
    "                     a random page table, pages shuffled, unused slots NaN; with --varlen, key\n"
    "                     counts come from --seqused-k, not --varlen-k)\n"
    "%s";

static const char PLAN_HELP[] =
    "plan:\n"
    "  --arch A           the target to plan for, e.g. sm_80, sm_86, sm_90a (default sm_90a); no GPU needed\n";

static const char RUN_HELP[] =
    "run:\n"
    "  --device N         CUDA device (default 0)\n"
    "  --iters N          timed launches, median reported (default 20)\n"
    "  --warmup N         untimed launches first (default 3)\n"
    "  --rep-ms MS        time at least this long: more launches where --iters take less (default 0;\n"
    "                     BENCH.md's do_bench: 100); launches run back to back, each timed alone\n"
    "  --warmup-ms MS     likewise for the untimed launches (default 0; do_bench: 25)\n"
    "  --check-rows N     query rows checked against the CPU reference (default 256; 0 = all)\n"
    "  --no-check         check only the first and last rows (every element is still scanned for NaN)\n"
    "  --no-lse           do not ask for the log-sum-exp\n"
    "  --seed N           random inputs seed (default: time)\n"
    "  --kv-descale X     FP8 K/V: codes of N(0, 1) / X, and k and v descales X x 2^U(-1, 1) per (sequence,\n"
    "                     K/V head) (default 1/64; 0: codes of N(0, 1), no descale arrays: NULL, 1); FP8\n"
    "                     attention: q's codes and descales too\n"
    "  --host-calls N     also measure the hot host overhead per call over N calls\n"
    "  --variant V        force a kernel (sets FC_FORCE_VARIANT), e.g. reference, sm80:m128n64w8\n"
    "  --no-quick-first-call  the first call compiles the planned kernel (sets FC_QUICK_FIRST_CALL=0);\n"
    "                     else, where it is in neither cache and a kernel that compiles in a fraction of\n"
    "                     the time takes the problem, that one runs the first call (checked too) while the\n"
    "                     planned kernel compiles on the context's worker; the check and timings that\n"
    "                     follow are the planned kernel's (also in plan and explain)\n"
    "exit 1 if the check fails; the rule is BENCH.md's: max|out-ref| <= 2*err_native + 1e-5,\n"
    "where err_native is what PyTorch's math path in the same dtype gets wrong; lse within 1e-3. FP8 K/V:\n"
    "ref takes descale x e4m3 exactly, the math path the dequantized K/V rounded to the dtype. FP8 attention\n"
    "(q too; the math path in --out-dtype): the kernel rounds P to e4m3, so each element may also be off by\n"
    "that rounding's bound, 2^-4 sum_j w_j |v_j| + 2^-18 sum_j |v_j| (docs/ARCHITECTURE.md).\n";


struct run_options {
    struct fc_attention_params params;
    int lens_q[FCJIT_MAX_SEQUENCES], lens_k[FCJIT_MAX_SEQUENCES], used_k[FCJIT_MAX_SEQUENCES];   /* --varlen, --varlen-k, --seqused-k */
    int count_q, count_k, count_used;
    int page_size;             /* --page-size: 0 = K/V not paged */
    float kv_descale;          /* --kv-descale: FP8 K/V's descale magnitude; < 0 until given */
    float sinks;               /* --sinks: their magnitude; 0 = none */
    int device, iters, warmup, check_rows, check, want_lse, host_calls;
    float warmup_ms, rep_ms;   /* --warmup-ms, --rep-ms: 0 = the counts alone */
    int arch, arch_specific;   /* plan --arch */
    unsigned long long seed;
};


enum { O_BATCH = 256, O_SEQLEN, O_SEQLEN_Q, O_SEQLEN_K, O_HEADS, O_HEADS_Q, O_HEADS_KV, O_HEAD_DIM, O_DTYPE,
       O_CAUSAL, O_SCALE, O_DEVICE, O_ITERS, O_WARMUP, O_CHECK_ROWS, O_NO_CHECK, O_NO_LSE, O_SEED, O_HOST_CALLS,
       O_VARIANT, O_ARCH, O_WINDOW_LEFT, O_WINDOW_RIGHT, O_SINKS, O_SOFTCAP, O_VARLEN, O_VARLEN_K, O_SEQUSED_K,
       O_PAGE_SIZE, O_KV_DTYPE, O_KV_DESCALE, O_OUT_DTYPE, O_NO_QUICK, O_WARMUP_MS, O_REP_MS };

/* Option --name (its value in optarg) of `command`: an integer >= min. */
static int at_least(const char *command, const char *name, int min, int *out)
{
    return fcjit_parse_int(command, name, optarg, min, INT_MAX, out);
}

static int parse_one(int c, const char *command, struct run_options *o)
{
    struct fc_attention_params *p = &o->params;
    switch (c) {
    case O_BATCH: return at_least(command, "batch", 1, &p->batch);
    case O_SEQLEN: return at_least(command, "seqlen", 1, &p->seqlen_q) || at_least(command, "seqlen", 1, &p->seqlen_k);
    case O_SEQLEN_Q: return at_least(command, "seqlen-q", 1, &p->seqlen_q);
    case O_SEQLEN_K: return at_least(command, "seqlen-k", 1, &p->seqlen_k);
    case O_HEADS: return at_least(command, "heads", 1, &p->heads_q) || at_least(command, "heads", 1, &p->heads_kv);
    case O_HEADS_Q: return at_least(command, "heads-q", 1, &p->heads_q);
    case O_HEADS_KV: return at_least(command, "heads-kv", 1, &p->heads_kv);
    case O_HEAD_DIM: return at_least(command, "head-dim", 1, &p->head_dim);
    case O_CAUSAL: p->causal = 1; return 0;
    case O_WINDOW_LEFT: return fcjit_parse_int(command, "window-left", optarg, -1, INT_MAX, &p->window_left);
    case O_WINDOW_RIGHT: return fcjit_parse_int(command, "window-right", optarg, -1, INT_MAX, &p->window_right);
    case O_SCALE: return fcjit_parse_float(command, "scale", optarg, &p->softmax_scale);
    case O_SINKS: return fcjit_parse_float(command, "sinks", optarg, &o->sinks);
    case O_SOFTCAP: return fcjit_parse_float(command, "softcap", optarg, &p->softcap);
    case O_VARLEN: return (o->count_q = fcjit_parse_lengths(command, "varlen", optarg, o->lens_q)) < 0;
    case O_VARLEN_K: return (o->count_k = fcjit_parse_lengths(command, "varlen-k", optarg, o->lens_k)) < 0;
    case O_SEQUSED_K: return (o->count_used = fcjit_parse_lengths(command, "seqused-k", optarg, o->used_k)) < 0;
    case O_PAGE_SIZE: return at_least(command, "page-size", 1, &o->page_size);
    case O_DEVICE: return at_least(command, "device", 0, &o->device);
    case O_ITERS: return fcjit_parse_int(command, "iters", optarg, 1, FCJIT_ITERS_MAX, &o->iters);
    case O_WARMUP: return at_least(command, "warmup", 0, &o->warmup);
    case O_WARMUP_MS: return fcjit_parse_ms(command, "warmup-ms", optarg, &o->warmup_ms);
    case O_REP_MS: return fcjit_parse_ms(command, "rep-ms", optarg, &o->rep_ms);
    case O_CHECK_ROWS: return at_least(command, "check-rows", 0, &o->check_rows);
    case O_NO_CHECK: o->check = 0; return 0;
    case O_NO_LSE: o->want_lse = 0; return 0;
    case O_SEED: return fcjit_parse_u64(command, "seed", optarg, &o->seed);
    case O_HOST_CALLS: return at_least(command, "host-calls", 1, &o->host_calls);
    case O_VARIANT: return setenv("FC_FORCE_VARIANT", optarg, 1);   /* read by fc_context_create */
    case O_NO_QUICK: return setenv("FC_QUICK_FIRST_CALL", "0", 1);  /* likewise */
    case O_DTYPE:
        if (fc_dtype_parse(optarg, &p->dtype) == 0)
            return 0;
        fprintf(stderr, "fcjit %s: --dtype takes f16, bf16 or e4m3, not '%s'\n", command, optarg);
        return -1;
    case O_OUT_DTYPE:
        if (fc_dtype_parse(optarg, &p->out_dtype) == 0)
            return 0;
        fprintf(stderr, "fcjit %s: --out-dtype takes bf16 or f16, not '%s'\n", command, optarg);
        return -1;
    case O_KV_DTYPE:   /* f16 or bf16 too: --dtype's, else the library's rule says why not */
        if (fc_dtype_parse(optarg, &p->kv_dtype) == 0)
            return 0;
        fprintf(stderr, "fcjit %s: --kv-dtype takes e4m3 (or fp8) for an FP8 KV cache, or --dtype's type, not "
                "'%s'\n", command, optarg);
        return -1;
    case O_KV_DESCALE:
        if (fcjit_parse_float(command, "kv-descale", optarg, &o->kv_descale))
            return -1;
        if (o->kv_descale >= 0.f)
            return 0;
        fprintf(stderr, "fcjit %s: --kv-descale takes 0 (no descales) or a positive scale, not '%s'\n", command,
                optarg);
        return -1;
    case O_ARCH:
        if (strcmp(command, "plan")) {
            fprintf(stderr, "fcjit %s: --arch is plan's; %s uses the GPU's own\n", command, command);
            return -1;
        }
        if (fc_arch_parse(optarg, &o->arch, &o->arch_specific) == 0)
            return 0;
        fprintf(stderr, "fcjit plan: bad --arch '%s' (e.g. sm_80, sm_86, sm_90a)\n", optarg);
        return -1;
    default: return -1;
    }
}

/* The sizes --varlen, --varlen-k and --seqused-k give, as check.c lays the tensors out: the
 * totals plus FC_CHECK_PAD_TOKENS tokens of no sequence, the longest sequence's lengths. */
static int apply_sequences(const char *command, struct run_options *o)
{
    struct fc_attention_params *p = &o->params;
    static const int32_t PLANNED = 0;   /* planning reads no pointer: seqused_k's non-NULL-ness is what counts */
    const int capacity = p->seqlen_k;   /* --seqlen-k: a paged cache's keys per sequence */
    if (o->count_k && !o->count_q) {
        fprintf(stderr, "fcjit %s: --varlen-k needs --varlen (the query lengths)\n", command);
        return -1;
    }
    if (o->count_k && o->page_size) {
        fprintf(stderr, "fcjit %s: --varlen-k and --page-size: a paged cache's keys come from its page table; give "
                "--seqlen-k (the capacity) and --seqused-k (each sequence's keys)\n", command);
        return -1;
    }
    if (o->count_q) {
        if (o->count_k && o->count_k != o->count_q) {
            fprintf(stderr, "fcjit %s: --varlen has %d lengths but --varlen-k %d\n", command, o->count_q, o->count_k);
            return -1;
        }
        if (!o->count_k && !o->page_size) {
            memcpy(o->lens_k, o->lens_q, sizeof o->lens_k);
            o->count_k = o->count_q;
        }
        long long total_q = 0, total_k = 0;
        p->batch = o->count_q;
        p->max_seqlen_q = p->max_seqlen_k = 1;
        for (int b = 0; b < o->count_q; b++) {
            total_q += o->lens_q[b];
            total_k += o->lens_k[b];
            p->max_seqlen_q = o->lens_q[b] > p->max_seqlen_q ? o->lens_q[b] : p->max_seqlen_q;
            p->max_seqlen_k = o->lens_k[b] > p->max_seqlen_k ? o->lens_k[b] : p->max_seqlen_k;
        }
        if (total_q + FC_CHECK_PAD_TOKENS > INT_MAX || total_k + FC_CHECK_PAD_TOKENS > INT_MAX) {
            fprintf(stderr, "fcjit %s: the sequences' total length passes %d tokens\n", command, INT_MAX);
            return -1;
        }
        p->seqlen_q = (int)total_q + FC_CHECK_PAD_TOKENS;
        p->seqlen_k = (int)total_k + FC_CHECK_PAD_TOKENS;
        if (o->page_size)   /* paged: every sequence's capacity, --seqlen-k */
            p->seqlen_k = p->max_seqlen_k = capacity;
    }
    if (o->count_used) {
        if (o->count_used != p->batch) {
            fprintf(stderr, "fcjit %s: --seqused-k has %d lengths for %d sequences (--batch or --varlen)\n", command,
                    o->count_used, p->batch);
            return -1;
        }
        for (int b = 0; b < o->count_used; b++)
            if (o->used_k[b] > (o->count_k ? o->lens_k[b] : p->seqlen_k)) {
                fprintf(stderr, "fcjit %s: --seqused-k: sequence %d uses %d keys of its %d\n", command, b,
                        o->used_k[b], o->count_k ? o->lens_k[b] : p->seqlen_k);
                return -1;
            }
        p->seqused_k = &PLANNED;
    }
    if (o->page_size) {   /* as check.c lays the cache out: a table row per sequence, one spare entry */
        p->page_size = o->page_size;
        p->page_table_stride = (int)(((long long)p->seqlen_k + o->page_size - 1) / o->page_size) + 1;
        long long pages = (long long)p->batch * (p->page_table_stride - 1) + FC_CHECK_SPARE_PAGES;
        if (pages > INT_MAX) {
            fprintf(stderr, "fcjit %s: --page-size %d: %lld pages, more than an int counts\n", command, o->page_size,
                    pages);
            return -1;
        }
        p->num_pages = (int)pages;
        p->page_table = &PLANNED;
    }
    return 0;
}

/* Returns 0 to go on, 1 after --help, -1 on a usage error. */
static int parse_options(int argc, char **argv, const char *command, struct run_options *o)
{
    static const struct option OPTIONS[] = {
        {"batch", 1, 0, O_BATCH}, {"seqlen", 1, 0, O_SEQLEN}, {"seqlen-q", 1, 0, O_SEQLEN_Q},
        {"seqlen-k", 1, 0, O_SEQLEN_K}, {"heads", 1, 0, O_HEADS}, {"heads-q", 1, 0, O_HEADS_Q},
        {"heads-kv", 1, 0, O_HEADS_KV}, {"head-dim", 1, 0, O_HEAD_DIM}, {"dtype", 1, 0, O_DTYPE},
        {"causal", 0, 0, O_CAUSAL}, {"scale", 1, 0, O_SCALE}, {"device", 1, 0, O_DEVICE},
        {"iters", 1, 0, O_ITERS}, {"warmup", 1, 0, O_WARMUP}, {"check-rows", 1, 0, O_CHECK_ROWS},
        {"no-check", 0, 0, O_NO_CHECK}, {"no-lse", 0, 0, O_NO_LSE}, {"seed", 1, 0, O_SEED},
        {"host-calls", 1, 0, O_HOST_CALLS}, {"variant", 1, 0, O_VARIANT}, {"arch", 1, 0, O_ARCH},
        {"window-left", 1, 0, O_WINDOW_LEFT}, {"window-right", 1, 0, O_WINDOW_RIGHT}, {"sinks", 1, 0, O_SINKS},
        {"softcap", 1, 0, O_SOFTCAP}, {"varlen", 1, 0, O_VARLEN}, {"varlen-k", 1, 0, O_VARLEN_K},
        {"seqused-k", 1, 0, O_SEQUSED_K}, {"page-size", 1, 0, O_PAGE_SIZE}, {"kv-dtype", 1, 0, O_KV_DTYPE},
        {"kv-descale", 1, 0, O_KV_DESCALE}, {"out-dtype", 1, 0, O_OUT_DTYPE},
        {"no-quick-first-call", 0, 0, O_NO_QUICK}, {"warmup-ms", 1, 0, O_WARMUP_MS}, {"rep-ms", 1, 0, O_REP_MS},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    fc_attention_params_init(&o->params);
    o->params.batch = 1;
    o->params.seqlen_q = o->params.seqlen_k = 1024;
    o->params.heads_q = o->params.heads_kv = 16;
    o->params.head_dim = 128;
    o->iters = 20;
    o->warmup = 3;
    o->check_rows = 256;
    o->check = o->want_lse = 1;
    o->seed = (unsigned long long)time(NULL);
    o->kv_descale = -1.f;   /* not given */
    o->arch = 90;   /* what a device-less context plans for */
    o->arch_specific = 1;
    if (fcjit_wants_help(argc, argv)) {
        printf(HELP, command, !strcmp(command, "run") ? RUN_HELP : !strcmp(command, "plan") ? PLAN_HELP : "");
        return 1;
    }
    int c;
    while ((c = getopt_long(argc, argv, "h", OPTIONS, NULL)) != -1)
        if (c == '?' || parse_one(c, command, o))
            return -1;
    if (optind < argc) {
        fprintf(stderr, "fcjit %s: unexpected argument '%s'\n", command, argv[optind]);
        return -1;
    }
    const int fp8 = o->params.kv_dtype == FC_E4M3 || o->params.dtype == FC_E4M3;
    if (o->kv_descale >= 0.f && !fp8) {
        fprintf(stderr, "fcjit %s: --kv-descale is FP8's: give --kv-dtype e4m3 or --dtype e4m3\n", command);
        return -1;
    }
    if (o->kv_descale < 0.f)
        o->kv_descale = fp8 ? FCJIT_DEFAULT_KV_DESCALE : 0.f;
    return apply_sequences(command, o);
}

/* The output's type: out_dtype, or FP8 attention's default (bf16), or dtype. */
static enum fc_dtype out_dtype(const struct fc_attention_params *p)
{
    return p->out_dtype != FC_DTYPE_SAME ? p->out_dtype : p->dtype == FC_E4M3 ? FC_BF16 : p->dtype;
}

static void print_shape(const struct run_options *o)
{
    const struct fc_attention_params *p = &o->params;
    printf("B=%d Sq=%d Sk=%d Hq=%d Hkv=%d D=%d %s%s", p->batch, p->seqlen_q, p->seqlen_k, p->heads_q,
           p->heads_kv, p->head_dim, fc_dtype_name(p->dtype), p->causal ? " causal" : "");
    if (p->dtype == FC_E4M3)
        printf(" out %s", fc_dtype_name(out_dtype(p)));
    else if (p->kv_dtype == FC_E4M3)
        printf(" kv e4m3");
    if (p->window_left >= 0 || p->window_right >= 0)
        printf(" window (%d, %d)", p->window_left, p->window_right);
    if (o->sinks != 0.f)
        printf(" sinks %g", o->sinks);
    if (p->softcap != 0.f)
        printf(" softcap %g", p->softcap);
    if (o->count_q && o->page_size)
        printf(" varlen (%d sequences, %d tokens, longest %d)", p->batch, p->seqlen_q - FC_CHECK_PAD_TOKENS,
               p->max_seqlen_q);
    else if (o->count_q)
        printf(" varlen (%d sequences, %d/%d tokens, longest %d/%d)", p->batch, p->seqlen_q - FC_CHECK_PAD_TOKENS,
               p->seqlen_k - FC_CHECK_PAD_TOKENS, p->max_seqlen_q, p->max_seqlen_k);
    if (o->count_used)
        printf(" seqused_k");
    if (o->page_size)
        printf(" paged (page %d, %d pages)", o->page_size, p->num_pages);
}

/* What of the mask and the scores a plan's kernel takes at compile time and what at run time. */
static void features(const struct fc_plan *plan, const struct run_options *o, char *out, size_t size)
{
    const struct fc_variant *v = &plan->variant;
    snprintf(out, size, "%s%s%s%s%s%s%s", v->causal ? "causal" : "no causal mask",
             v->window ? ", sliding window (bounds at run time)" : ", no window",
             v->softcap ? ", softcap (tanh compiled in, the cap at run time)" : ", no softcap",
             o->sinks != 0.f ? ", sinks (run time)" : ", no sinks",
             v->varlen ? ", per-sequence lengths (varlen / seqused_k, read on the device)" : "",
             !v->paged ? ""
             : v->family == FC_KERNEL_SM90 ? ", paged K/V: TMA boxes inside pages, or rows gathered by cp.async where "
                                             "pages are smaller than a key tile (the reason says which)"
                                           : ", paged K/V: the gather path (each key row's page read from the table "
                                             "once, rows copied with cp.async)",
             v->kv_fp8 ? ", FP8 K/V (e4m3, dequantized as they are read; descales at run time)" : "");
}

/* The shape rules, checked before any GPU is looked for, so that bad input says 2 everywhere. */
static int check_shape(const char *command, const struct run_options *o)
{
    struct fc_problem problem;
    char msg[FC_MESSAGE_MAX];
    enum fc_status status = fc_problem_shape(&o->params, &problem, msg, sizeof msg);
    if (status != FC_OK)
        fprintf(stderr, "fcjit %s: %s: %s\n", command, fc_status_name(status), msg);
    return fcjit_exit_for(status);
}

int fcjit_plan(int argc, char **argv, const struct fcjit_globals *g)
{
    struct run_options o;
    int parsed = parse_options(argc, argv, "plan", &o);
    if (parsed)
        return parsed > 0 ? FCJIT_EXIT_OK : FCJIT_EXIT_USAGE;
    int code = check_shape("plan", &o);
    if (code != FCJIT_EXIT_OK)
        return code;
    enum fc_status status;
    struct fc_context *ctx = fcjit_open_context(g, FC_DEVICE_NONE, &status);
    if (!ctx)
        return fcjit_exit_for(status);
    ctx->target.arch = o.arch;   /* NOTE: fcjit links the internal library; the public API has no such knob */
    ctx->target.arch_specific = o.arch_specific;
    struct fc_plan_info info;
    status = fc_attention_plan(ctx, &o.params, &info);
    if (status != FC_OK)
        fprintf(stderr, "fcjit plan: %s: %s\n", fc_status_name(status), fc_context_errmsg(ctx));
    else if (g->json)
        printf("{\"kernel\": \"%s\", \"reason\": \"%s\", \"splits\": %d}\n", info.kernel, info.reason,
               info.splits);
    else {
        char arch[FC_ARCH_NAME_MAX];
        fc_arch_name(o.arch, o.arch_specific, arch);
        print_shape(&o);
        printf(" on %s\n  kernel: %s\n", arch, info.kernel);
        if (info.splits > 1)   /* no GPU: planned for an H100's 132 SMs (src/plan_internal.h) */
            printf("  splits: %d CTAs along the keys per row block, then a combine kernel (for 132 SMs)\n",
                   info.splits);
        printf("  why:    %s\n", info.reason);
    }
    fc_context_destroy(ctx);
    return fcjit_exit_for(status);
}

/* The device explain asks about: `wanted` if there is one, else FC_DEVICE_NONE and why not. */
static int explain_device(int wanted, char *why_no_gpu, size_t size)
{
    const struct fc_cuda_api *cuda = fc_cuda_load(why_no_gpu, size);
    int count = 0;
    if (cuda)
        cuda->cuDeviceGetCount(&count);
    const int device = count > wanted ? wanted : FC_DEVICE_NONE;
    if (device == FC_DEVICE_NONE && !*why_no_gpu)
        snprintf(why_no_gpu, size, "no device %d", wanted);
    return device;
}

/* fcjit explain: what would run on GPU `--device` (default 0; none: sm_90a, untuned) and why:
 * the tuned winner of the problem's nearest bucket if there is one, and the heuristic's choice. */
int fcjit_explain(int argc, char **argv, const struct fcjit_globals *g)
{
    struct run_options o;
    int parsed = parse_options(argc, argv, "explain", &o);
    if (parsed)
        return parsed > 0 ? FCJIT_EXIT_OK : FCJIT_EXIT_USAGE;
    int code = check_shape("explain", &o);
    if (code != FCJIT_EXIT_OK)
        return code;
    enum fc_status status;
    char why_no_gpu[512] = "";
    const int device = explain_device(o.device, why_no_gpu, sizeof why_no_gpu);
    struct fc_context *ctx = fcjit_open_context(g, device, &status);
    if (!ctx)
        return fcjit_exit_for(status);
    struct fc_problem problem;
    struct fc_plan plan;
    char reason[sizeof ((struct fc_plan_info *)0)->reason], kernel[FC_VARIANT_NAME_MAX] = "";
    char heuristic_name[FC_VARIANT_NAME_MAX] = "", bucket[FC_BUCKET_NAME_MAX] = "", mask[512] = "";
    char quick_name[FC_VARIANT_NAME_MAX] = "";
    struct fc_plan quick;
    status = fc_context_plan(ctx, &o.params, &problem, &plan, fc_context_message(ctx));
    if (status == FC_OK) {   /* the plan the forward call makes, with the heuristic's choice beside it */
        if (ctx->quick_first_call && fc_plan_quick(&problem, &ctx->target, &plan, &quick))
            fc_variant_name(&quick.variant, quick_name);
        fc_variant_name(&plan.variant, kernel);
        fc_plan_explain(&plan, reason, sizeof reason);
        fc_variant_name(&plan.heuristic, heuristic_name);
        features(&plan, &o, mask, sizeof mask);
        if (plan.tuned)
            fc_bucket_name(&plan.tuned->bucket, bucket);
    }
    char arch[FC_ARCH_NAME_MAX];
    fc_arch_name(ctx->target.arch, ctx->target.arch_specific, arch);
    const char *gpu = device == FC_DEVICE_NONE ? "no GPU" : ctx->gpu_name;
    if (status != FC_OK) {
        fprintf(stderr, "fcjit explain: %s: %s\n", fc_status_name(status), fc_context_errmsg(ctx));
    } else if (g->json) {
        printf("{\"gpu\": \"%s\", \"arch\": \"%s\", \"kernel\": \"%s\", \"splits\": %d, \"grid\": %u, "
               "\"threads\": %u, \"units\": %u, \"scheduled\": %s, \"tail_heads\": %d, \"reason\": \"%s\", "
               "\"tuned_bucket\": \"%s\", \"tuned_buckets\": %zu, \"heuristic\": \"%s\", \"features\": \"%s\", "
               "\"quick_first_call\": \"%s\"}\n",
               gpu, arch, kernel, plan.splits, plan.grid, plan.threads, plan.units, plan.scheduled ? "true" : "false",
               plan.tail_heads, reason, bucket, ctx->tuned.count, heuristic_name, mask, quick_name);
    } else {
        print_shape(&o);
        printf(" on %s (%s)\n  kernel:    %s\n", gpu, arch, kernel);
        if (plan.splits > 1)
            printf("  splits:    %d CTAs along the keys per row block, then a combine kernel\n", plan.splits);
        printf("  why:       %s\n", reason);
        printf("  grid:      %u CTAs of %u threads, %u bytes of dynamic shared memory", plan.grid, plan.threads,
               plan.smem_bytes);
        if (plan.units && plan.scheduled)   /* a scheduled persistent grid (fwd_sm90.cuh's run_scheduled) */
            printf(" (persistent: %u row blocks in one list, each head's in pairs of equal work, the last %d "
                   "(batch, head)s' heaviest first; each CTA takes the next block when it is free)",
                   plan.units, plan.tail_heads);
        else if (plan.units && plan.tail_heads)   /* a static causal grid with a tail (attention_common.cuh) */
            printf(" (persistent: %u units, CTA i taking units i, i + %u, ...: two row blocks of equal work, blocks "
                   "p and last - p of a head, then the last %d (batch, head)s' blocks one a unit, heaviest first, "
                   "dealt so that the CTAs' sums even out)", plan.units, plan.grid, plan.tail_heads);
        else if (plan.units)   /* a persistent grid (fwd_sm90.cuh) */
            printf(" (persistent: %u units of %s, CTA i taking units i, i + %u, ...)", plan.units,
                   plan.variant.causal ? "two row blocks of equal work, blocks p and last - p of a head"
                                       : "one row block", plan.grid);
        printf("\n");
        printf("  features:  %s\n", mask);
        if (bucket[0])
            printf("  bucket:    %s (nearest of %zu tuned on this GPU)\n", bucket, ctx->tuned.count);
        else if (device == FC_DEVICE_NONE)
            printf("  tuning:    none: %s; winners are per GPU (`fcjit tune` on it)\n", why_no_gpu);
        else
            printf("  tuning:    no tuned bucket for this dtype, head_dim, causality and GQA ratio on this GPU "
                   "(%zu buckets; `fcjit tune`)\n", ctx->tuned.count);
        printf("  heuristic: %s\n", heuristic_name);
        if (quick_name[0])
            printf("  first call: while the kernel is in neither cache, %s serves (%s; FC_QUICK_FIRST_CALL=0 "
                   "turns it off)\n", quick_name, quick.reason);
        else
            printf("  first call: the kernel itself (%s)\n",
                   ctx->quick_first_call ? "no quicker kernel to compile for it" : "the quick first call is off");
    }
    fc_context_destroy(ctx);
    return fcjit_exit_for(status);
}

/* ---- fcjit run ---- */

static double now_us(void)
{
    return fcjit_seconds_now() * 1e6;
}


#define CU_TRY(call)                                                                               \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            char m_[512];                                                                          \
            fc_cuda_fail(cu, r_, #call, m_, sizeof m_);                                            \
            fprintf(stderr, "fcjit run: %s\n", m_);                                                \
            return FCJIT_EXIT_ERROR;                                                               \
        }                                                                                          \
    } while (0)

struct timings {
    double first_call_ms, median_ms, host_us, raw_launch_us;
    int timed;   /* launches the median is of */
};

/* The quick first call, where it served run's first call: its kernel, its check, and when the
 * planned kernel (compiled on the context's worker meanwhile) was ready, from the call's start. */
struct quick_call {
    char kernel[FC_VARIANT_NAME_MAX];   /* "": the planned kernel ran the first call */
    int passed;
    struct fc_error_stats stats;
    double planned_ready_ms;
};

/* One launch of the forward call: the scrub rewritten first (value `i`), then the call between the
 * two events (either may be NULL: untimed). */
static enum fc_status launch_timed(struct fc_context *ctx, const struct fc_attention_params *params,
                                   unsigned long long scrub, size_t scrub_words, unsigned i, CUevent start, CUevent stop)
{
    const struct fc_cuda_api *cu = ctx->cuda;
    if (scrub && cu->cuMemsetD32((CUdeviceptr)scrub, i, scrub_words) != CUDA_SUCCESS)
        return FC_ERR_CUDA;
    if (start && cu->cuEventRecord(start, NULL) != CUDA_SUCCESS)
        return FC_ERR_CUDA;
    enum fc_status status = fc_attention_forward(ctx, params, NULL);
    if (status == FC_OK && stop && cu->cuEventRecord(stop, NULL) != CUDA_SUCCESS)
        status = FC_ERR_CUDA;
    return status;
}

/* The launches a budget of `ms` milliseconds takes at `each_ms` a launch: at most FCJIT_TIMED_MAX,
 * and never fewer than `least`. */
static int launches_for(double ms, double each_ms, int least)
{
    double n = ms > 0 && each_ms > 0 ? ceil(ms / each_ms) : 0;
    if (n > FCJIT_TIMED_MAX)
        n = FCJIT_TIMED_MAX;
    return n > least ? (int)n : least;
}

enum fc_status fcjit_time_forward(struct fc_context *ctx, const struct fc_attention_params *params,
                                  const struct fcjit_timing *timing, unsigned long long scrub, size_t scrub_words,
                                  double *median_ms, int *timed)
{
    enum { ESTIMATE_LAUNCHES = 5 };
    const struct fc_cuda_api *cu = ctx->cuda;
    int warmup = timing->warmup, iters = timing->iters;
    unsigned seq = 0;
    CUevent *events = NULL;
    double *ms = NULL;
    enum fc_status status = FC_OK;
    if (timing->warmup_ms > 0 || timing->rep_ms > 0) {
        /* do_bench's estimate: a few launches back to back (scrubs included), one interval */
        CUevent first = NULL, last = NULL;
        float elapsed = 0.f;
        if (cu->cuEventCreate(&first, CU_EVENT_DEFAULT) || cu->cuEventCreate(&last, CU_EVENT_DEFAULT) ||
            cu->cuEventRecord(first, NULL))
            status = FC_ERR_CUDA;
        for (int i = 0; status == FC_OK && i < ESTIMATE_LAUNCHES; i++)
            status = launch_timed(ctx, params, scrub, scrub_words, seq++, NULL, NULL);
        if (status == FC_OK && (cu->cuEventRecord(last, NULL) || cu->cuEventSynchronize(last) ||
                                cu->cuEventElapsedTime(&elapsed, first, last)))
            status = FC_ERR_CUDA;
        if (first)
            cu->cuEventDestroy(first);
        if (last)
            cu->cuEventDestroy(last);
        const double each_ms = elapsed / ESTIMATE_LAUNCHES;
        warmup = launches_for(timing->warmup_ms, each_ms, warmup);
        iters = launches_for(timing->rep_ms, each_ms, iters);
    }
    if (status == FC_OK) {
        events = calloc(2 * (size_t)iters, sizeof *events);
        ms = calloc((size_t)iters, sizeof *ms);
        status = events && ms ? FC_OK : FC_ERR_NOMEM;
    }
    for (int i = 0; status == FC_OK && i < 2 * iters; i++)
        if (cu->cuEventCreate(&events[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            status = FC_ERR_CUDA;
    /* queued back to back and synchronized once, as do_bench's: the GPU never idles between them */
    for (int i = 0; status == FC_OK && i < warmup; i++)
        status = launch_timed(ctx, params, scrub, scrub_words, seq++, NULL, NULL);
    for (int i = 0; status == FC_OK && i < iters; i++)
        status = launch_timed(ctx, params, scrub, scrub_words, seq++, events[2 * i], events[2 * i + 1]);
    if (status == FC_OK && cu->cuEventSynchronize(events[2 * iters - 1]) != CUDA_SUCCESS)
        status = FC_ERR_CUDA;
    for (int i = 0; status == FC_OK && i < iters; i++) {
        float elapsed = 0.f;
        if (cu->cuEventElapsedTime(&elapsed, events[2 * i], events[2 * i + 1]) != CUDA_SUCCESS)
            status = FC_ERR_CUDA;
        ms[i] = elapsed;
    }
    if (status == FC_OK) {
        *median_ms = fcjit_median(ms, iters);
        if (timed)
            *timed = iters;
    }
    for (int i = 0; events && i < 2 * iters; i++)
        if (events[i])
            cu->cuEventDestroy(events[i]);
    free(events);
    free(ms);
    return status;
}

static int time_kernel(struct fc_context *ctx, const struct run_options *o, struct timings *t)
{
    const struct fcjit_timing timing = {.warmup = o->warmup, .iters = o->iters, .warmup_ms = o->warmup_ms,
                                        .rep_ms = o->rep_ms};
    enum fc_status status = fcjit_time_forward(ctx, &o->params, &timing, 0, 0, &t->median_ms, &t->timed);
    if (status != FC_OK)
        fprintf(stderr, "fcjit run: timing: %s: %s\n", fc_status_name(status),
                status == FC_ERR_CUDA ? "a CUDA call failed" : fc_context_errmsg(ctx));
    return fcjit_exit_for(status);
}

/* Host time per call on an in-memory hit: fc_attention_forward against a bare cuLaunchKernel of
 * the same kernel. The queue is drained every few calls, untimed, so back-pressure stays out. A
 * split-KV plan has no bare launch to compare with (its kernel writes partials to the scratch the
 * family's launch allocates; the argument alone has none), nor has FP8 with V transposed ahead (its
 * V^T is the launch's scratch too): raw_launch_us is then NaN. */
static int time_host(const struct fc_cuda_api *cu, struct fc_context *ctx, const struct run_options *o,
                     struct timings *t)
{
    enum { DRAIN_EVERY = 16 };
    struct fc_problem problem;
    struct fc_plan plan;
    struct fc_kernel kernel;
    char msg[FC_MESSAGE_MAX];
    if (fc_context_plan(ctx, &o->params, &problem, &plan, msg) ||   /* the kernel the forward call runs */
        fc_context_kernel(ctx, &plan, &problem, &kernel))
        return FCJIT_EXIT_ERROR;
    struct fc_launch_args launch;
    const struct fc_launch call = {cu, &plan, &problem, &kernel, NULL, msg, sizeof msg, NULL, NULL};
    if (fc_problem_tensors(&o->params, &problem, msg, sizeof msg) || fc_launch_args_build(&call, &launch))
        return FCJIT_EXIT_ERROR;
    double *api = calloc((size_t)o->host_calls, sizeof *api), *raw = calloc((size_t)o->host_calls, sizeof *raw);
    if (!api || !raw)
        return FCJIT_EXIT_ERROR;
    for (int i = 0; i < o->host_calls; i++) {
        if (i % DRAIN_EVERY == 0)
            CU_TRY(cu->cuCtxSynchronize());
        double start = now_us();
        enum fc_status status = fc_attention_forward(ctx, &o->params, NULL);
        api[i] = now_us() - start;
        if (status != FC_OK)
            return fcjit_exit_for(status);
    }
    for (int i = 0; i < o->host_calls && plan.splits <= 1 && !plan.variant.v_transposed; i++) {
        if (i % DRAIN_EVERY == 0)
            CU_TRY(cu->cuCtxSynchronize());
        double start = now_us();
        CU_TRY(cu->cuLaunchKernel(kernel.function, plan.grid, 1, 1, plan.threads, 1, 1, plan.smem_bytes, NULL,
                                  launch.params, NULL));
        raw[i] = now_us() - start;
    }
    CU_TRY(cu->cuCtxSynchronize());
    t->host_us = fcjit_median(api, o->host_calls);
    t->raw_launch_us = plan.splits <= 1 ? fcjit_median(raw, o->host_calls) : NAN;
    free(api);
    free(raw);
    return FCJIT_EXIT_OK;
}

/* FLOPs of one sequence's attention: 4 Hq Sq Sk D, halved for causal with Sq == Sk (FlashAttention's
 * convention); with a window, 4 Hq D per (query, key) pair a row sees (src/mask.c). */
static double sequence_flops(const struct fc_attention_params *p, const struct fc_mask *mask, int seqlen_q,
                             int seqlen_k)
{
    const double flops = 4.0 * p->heads_q * (double)seqlen_q * seqlen_k * p->head_dim;
    if (mask->window) {
        double pairs = 0;
        for (int i = 0; i < seqlen_q; i++) {
            const struct fc_key_range keys = fc_mask_keys(mask, seqlen_q, seqlen_k, i, i + 1);
            pairs += keys.end > keys.begin ? keys.end - keys.begin : 0;
        }
        return 4.0 * p->heads_q * p->head_dim * pairs;
    }
    return mask->causal && seqlen_q == seqlen_k ? flops / 2 : flops;
}

/* FLOPs of a forward call: each sequence's (a dense batch: batch of the same; varlen: each one's
 * query and key counts; seqused_k: its keys). */
static double forward_flops(const struct run_options *o)
{
    const struct fc_attention_params *p = &o->params;
    struct fc_problem problem;
    char msg[FC_MESSAGE_MAX];
    if (fc_problem_shape(p, &problem, msg, sizeof msg) != FC_OK)   /* checked before the run: not here */
        return 4.0 * p->batch * p->heads_q * (double)p->seqlen_q * p->seqlen_k * p->head_dim;
    if (!o->count_q && !o->count_used)
        return p->batch * sequence_flops(p, &problem.mask, p->seqlen_q, p->seqlen_k);
    double flops = 0;
    for (int b = 0; b < p->batch; b++) {
        const int len_q = o->count_q ? o->lens_q[b] : p->seqlen_q;
        int len_k = o->count_k ? o->lens_k[b] : o->count_q && !p->page_size ? o->lens_q[b] : p->seqlen_k;
        if (o->count_used)
            len_k = o->used_k[b];
        flops += sequence_flops(p, &problem.mask, len_q, len_k);
    }
    return flops;
}

static void report(const struct fcjit_globals *g, const struct run_options *o, const struct fc_plan_info *info,
                   const struct timings *t, const struct quick_call *quick, const struct fc_error_stats *e,
                   int checked, int passed)
{
    const struct fc_attention_params *p = &o->params;
    const double flops = forward_flops(o);
    double tflops = flops / (t->median_ms * 1e-3) / 1e12;
    /* K and V read once: what bounds decode-shaped problems */
    const int kv_fp8 = p->kv_dtype == FC_E4M3 || p->dtype == FC_E4M3, kv_bytes = kv_fp8 ? 1 : fc_dtype_bytes(p->dtype);
    double kv_gbps =
        2.0 * p->batch * p->heads_kv * (double)p->seqlen_k * p->head_dim * kv_bytes / (t->median_ms * 1e-3) / 1e9;
    if (g->json) {
        printf("{\"batch\": %d, \"seqlen_q\": %d, \"seqlen_k\": %d, \"heads_q\": %d, \"heads_kv\": %d, "
               "\"head_dim\": %d, \"dtype\": \"%s\", \"causal\": %s, \"window_left\": %d, \"window_right\": %d, "
               "\"kernel\": \"%s\", \"splits\": %d, \"first_call_ms\": %.3f, \"median_ms\": %.4f, \"tflops\": %.2f, "
               "\"kv_gbps\": %.1f, \"timed_launches\": %d, ",
               p->batch, p->seqlen_q, p->seqlen_k, p->heads_q, p->heads_kv, p->head_dim, fc_dtype_name(p->dtype),
               p->causal ? "true" : "false", p->window_left, p->window_right, info->kernel, info->splits,
               t->first_call_ms, t->median_ms, tflops, kv_gbps, t->timed);
        printf("\"sinks\": %g, \"softcap\": %g, \"kv_dtype\": \"%s\", \"kv_descale\": %g, ", o->sinks, p->softcap,
               kv_fp8 ? "e4m3" : fc_dtype_name(p->dtype), o->kv_descale);
        if (o->host_calls)
            printf(isnan(t->raw_launch_us) ? "\"host_us\": %.3f, \"raw_launch_us\": null, "
                                           : "\"host_us\": %.3f, \"raw_launch_us\": %.3f, ",
                   t->host_us, t->raw_launch_us);
        if (quick->kernel[0])
            printf("\"quick_kernel\": \"%s\", \"quick_passed\": %s, \"quick_max_error\": %.3g, "
                   "\"planned_ready_ms\": %.3f, ", quick->kernel, quick->passed ? "true" : "false",
                   quick->stats.max_error, quick->planned_ready_ms);
        else
            printf("\"quick_kernel\": null, ");
        printf("\"out_dtype\": \"%s\", ", fc_dtype_name(out_dtype(p)));
        if (e->p_bounded)   /* FP8 attention: the error past P's rounding bound is what the rule judges */
            printf("\"max_excess\": %.3g, ", e->max_excess);
        printf("\"checked\": %s, \"rows_checked\": %lld, \"max_error\": %.3g, \"native_error\": %.3g, "
               "\"max_lse_error\": %.3g, \"bad_rows\": %lld, \"passed\": %s, \"seed\": %llu}\n",
               checked ? "true" : "false", e->rows, e->max_error, e->native_error, e->max_lse_error, e->bad_rows,
               passed ? "true" : "false", o->seed);
        return;
    }
    print_shape(o);
    printf("\n  kernel        %s", info->kernel);
    if (info->splits > 1)
        printf(", %d splits of the keys", info->splits);
    printf("\n  first call    %.1f ms (compile or cache load, module load, launch)\n", t->first_call_ms);
    if (quick->kernel[0])
        printf("  quick         the first call ran %s (%s: max error %.3g) while the kernel compiled on the "
               "context's worker, ready %.1f ms after the call began\n", quick->kernel,
               quick->passed ? "PASS" : "FAIL", quick->stats.max_error, quick->planned_ready_ms);
    printf("  median        %.4f ms over %d launches, %.2f TFLOP/s, K+V read at %.0f GB/s\n", t->median_ms,
           t->timed, tflops, kv_gbps);
    if (o->host_calls)
        printf(isnan(t->raw_launch_us) ? "  host per call %.2f us (split-KV: no bare launch to compare)\n"
                                       : "  host per call %.2f us (bare cuLaunchKernel %.2f us)\n",
               t->host_us, t->raw_launch_us);
    if (checked && e->p_bounded)
        printf("  check         %s: max error %.3g, past P's e4m3 rounding bound %.3g vs native %s %.3g (limit "
               "%.3g), lse error %.2g, %lld rows, %lld bad\n", passed ? "PASS" : "FAIL", e->max_error, e->max_excess,
               fc_dtype_name(out_dtype(p)), e->native_error, 2 * e->native_error + 1e-5, e->max_lse_error, e->rows,
               e->bad_rows);
    else if (checked)
        printf("  check         %s: max error %.3g vs native %s %.3g (limit %.3g), lse error %.2g, %lld rows, "
               "%lld bad\n", passed ? "PASS" : "FAIL", e->max_error, fc_dtype_name(p->dtype), e->native_error,
               2 * e->native_error + 1e-5, e->max_lse_error, e->rows, e->bad_rows);
    else
        printf("  check         %s (output scanned for NaN/Inf only)\n", passed ? "PASS" : "FAIL");
}

/* After a first call the quick first call served: checks its output, waits for the planned kernel
 * (its time from the first call's start), and runs the planned kernel on a poisoned output again, for
 * the check and the timings that follow. */
static enum fc_status run_planned_after_quick(struct fc_context *ctx, struct fc_check_run *run, double start,
                                              struct quick_call *quick, char *msg, size_t size)
{
    struct fc_problem problem;
    struct fc_plan plan, quick_plan;
    enum fc_status status = fc_context_plan(ctx, &run->params, &problem, &plan, msg);
    if (status == FC_OK && fc_plan_quick(&problem, &ctx->target, &plan, &quick_plan))
        fc_variant_name(&quick_plan.variant, quick->kernel);
    else if (status == FC_OK)
        snprintf(quick->kernel, sizeof quick->kernel, "(the quick kernel)");
    if (status == FC_OK && (status = fc_check_download(run, msg, size)) == FC_OK) {
        if ((status = fc_context_wait_compiles(ctx)) != FC_OK)
            snprintf(msg, size, "%s", fc_context_errmsg(ctx));
        quick->planned_ready_ms = (now_us() - start) * 1e-3;   /* before the check's CPU reference */
        quick->passed = fc_check_verify(run, &quick->stats);
    }
    if (status == FC_OK)
        status = fc_check_poison(run, msg, size);
    if (status == FC_OK && (status = fc_attention_forward(ctx, &run->params, NULL)) != FC_OK)
        snprintf(msg, size, "%s", fc_context_errmsg(ctx));
    CUresult r = ctx->cuda->cuCtxSynchronize();
    if (status == FC_OK && r != CUDA_SUCCESS)
        status = fc_cuda_fail(ctx->cuda, r, "the kernel", msg, size);
    return status;
}

/* First call (timed: compile or cache load, module load, launch; where the quick first call served it,
 * its check, then the planned kernel's first run), check, then timings. */
static int run_on_device(struct fc_context *ctx, const struct fcjit_globals *g, struct run_options *o)
{
    const struct fc_cuda_api *cu = ctx->cuda;
    struct fc_check_case c = {.shape = o->params, .layout = FC_LAYOUT_PACKED, .want_lse = o->want_lse,
                              .check_rows = o->check ? o->check_rows : 2, .seed = o->seed,
                              .sinks_magnitude = o->sinks, .lens_q = o->count_q ? o->lens_q : NULL,
                              .lens_k = o->count_q && !o->page_size ? o->lens_k : NULL,
                              .used_k = o->count_used ? o->used_k : NULL, .page_size = o->page_size,
                              .kv_descale = o->kv_descale};   /* 0 unless FP8 (parse_options) */
    struct fc_check_run run;
    struct timings t = {0};
    struct fc_error_stats stats = {0};
    struct quick_call quick = {0};
    struct fc_plan_info info;
    char msg[FC_MESSAGE_MAX] = "";
    int code = FCJIT_EXIT_OK, passed = 0;
    enum fc_status status = fc_check_prepare(ctx, &c, &run, msg, sizeof msg);
    if (status == FC_OK && (status = fc_attention_plan(ctx, &run.params, &info)) == FC_OK) {
        const unsigned long quick_before = __atomic_load_n(&ctx->quick_calls, __ATOMIC_RELAXED);
        double start = now_us();
        status = fc_attention_forward(ctx, &run.params, NULL);
        CUresult r = cu->cuCtxSynchronize();
        t.first_call_ms = (now_us() - start) * 1e-3;
        if (status == FC_OK && r != CUDA_SUCCESS)
            status = fc_cuda_fail(cu, r, "the kernel", msg, sizeof msg);
        else if (status != FC_OK)
            snprintf(msg, sizeof msg, "%s", fc_context_errmsg(ctx));
        if (status == FC_OK && __atomic_load_n(&ctx->quick_calls, __ATOMIC_RELAXED) != quick_before)
            status = run_planned_after_quick(ctx, &run, start, &quick, msg, sizeof msg);
    } else if (status != FC_OK && !*msg) {
        snprintf(msg, sizeof msg, "%s", fc_context_errmsg(ctx));
    }
    if (status == FC_OK)
        status = fc_check_download(&run, msg, sizeof msg);
    if (status != FC_OK) {
        fprintf(stderr, "fcjit run: %s: %s\n", fc_status_name(status), msg);
        code = fcjit_exit_for(status);
    }
    if (!code) {
        passed = fc_check_verify(&run, &stats);
        o->params = run.params;   /* the timed launches reuse the device buffers */
        code = time_kernel(ctx, o, &t);
    }
    if (!code && o->host_calls)
        code = time_host(cu, ctx, o, &t);
    if (!code) {
        report(g, o, &info, &t, &quick, &stats, o->check, passed);
        code = passed && (!quick.kernel[0] || quick.passed) ? FCJIT_EXIT_OK : FCJIT_EXIT_FAILED_CHECK;
    }
    fc_check_release(&run);
    return code;
}

int fcjit_run(int argc, char **argv, const struct fcjit_globals *g)
{
    struct run_options o;
    int parsed = parse_options(argc, argv, "run", &o);
    if (parsed)
        return parsed > 0 ? FCJIT_EXIT_OK : FCJIT_EXIT_USAGE;
    int code = check_shape("run", &o);
    if (code != FCJIT_EXIT_OK)
        return code;
    enum fc_status status;
    struct fc_context *ctx = fcjit_open_context(g, o.device, &status);
    if (!ctx)
        return fcjit_exit_for(status);
    int pushed;
    code = fc_context_enter(ctx, &pushed) == FC_OK ? run_on_device(ctx, g, &o) : FCJIT_EXIT_ERROR;
    fc_context_leave(ctx, pushed);
    fc_context_destroy(ctx);
    return code;
}
