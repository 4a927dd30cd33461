/* `fcjit quantize`: fc_quantize on fresh random inputs, every element judged against the fp64
 * reference; with --rotate into e4m3, the same inputs unrotated too, to show what the rotation buys. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "context_internal.h"
#include "fcjit.h"
#include "quantize_internal.h"
#include "reference_cpu_internal.h"

static const char HELP[] =
    "usage: fcjit quantize [options]\n"
    "\n"
    "Runs fc_quantize (16-bit to FP8 e4m3, optionally Hadamard-rotated first) on random N(0, 1) inputs\n"
    "and checks every element against an fp64 reference: the e4m3 code within half a step of the exact\n"
    "scaled value, each descale the exact amax / 448. With --rotate into e4m3, runs the same inputs\n"
    "unrotated as well and prints both errors.\n"
    "\n"
    "  --batch N --seqlen N --heads N --head-dim N   the tensor, [batch, seqlen, heads, head_dim]\n"
    "                           (defaults 2, 1024, 8, 128; head_dim a multiple of 16 up to 256)\n"
    "  --descale-heads N        descales per sequence, dividing heads (default: heads; for q with GQA,\n"
    "                           heads_kv)\n"
    "  --dtype f16|bf16         the input (default bf16)\n"
    "  --out-dtype e4m3|f16|bf16   e4m3 (default), or the input's dtype: rotation only\n"
    "  --scaling head|tensor|given  descales per (sequence, descale head) (default), one for the\n"
    "                           tensor, or given (3/4 of the amax / 448: the largest values saturate)\n"
    "  --rotate                 rotate each row by the seeded random Hadamard first\n"
    "  --rotation-seed N        the rotation's seed (default 0)\n"
    "  --outliers X             every 16th dimension (from 3) is N(0, 1) times X (> 1; default none)\n"
    "  --varlen L1,L2,...       a ragged batch of these sequence lengths (replaces batch and seqlen)\n"
    "  --seed N                 the inputs' seed (default: the time)\n"
    "  --device N               CUDA device (default 0)\n"
    "\n"
    "exit: 0 every element within its rounding, 1 a check failed, 2 bad input, 3 no GPU or NVRTC\n";

static void print_result(const struct fcjit_globals *g, const char *label, const struct fc_quantize_result *r,
                         int fp8)
{
    if (g->json) {
        printf("{\"case\": \"%s\", \"elements\": %zu, \"bad\": %zu, \"worst_excess_steps\": %.4f, "
               "\"descale_error\": %.3e, \"relative_rmse\": %.6f, \"amax_ratio\": %.4f}\n",
               label, r->elements, r->bad, r->worst_excess, r->descale_error, r->relative_rmse, r->amax_ratio);
        return;
    }
    printf("%-10s %zu elements, %zu outside their rounding (worst %+.3f steps past half a step)", label, r->elements,
           r->bad, r->worst_excess);
    if (fp8)
        printf(", descale error %.2e, relative RMSE %.4f, descales %.3fx the unrotated amax's", r->descale_error,
               r->relative_rmse, r->amax_ratio);
    printf("\n");
}

int fcjit_quantize(int argc, char **argv, const struct fcjit_globals *g)
{
    static const struct option OPTIONS[] = {
        {"batch", required_argument, NULL, 'b'}, {"seqlen", required_argument, NULL, 's'},
        {"heads", required_argument, NULL, 'H'}, {"head-dim", required_argument, NULL, 'd'},
        {"descale-heads", required_argument, NULL, 'g'}, {"dtype", required_argument, NULL, 't'},
        {"out-dtype", required_argument, NULL, 'o'}, {"scaling", required_argument, NULL, 'c'},
        {"rotate", no_argument, NULL, 'r'}, {"rotation-seed", required_argument, NULL, 'R'},
        {"outliers", required_argument, NULL, 'x'}, {"varlen", required_argument, NULL, 'v'},
        {"seed", required_argument, NULL, 'S'}, {"device", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    if (fcjit_wants_help(argc, argv)) {
        fputs(HELP, stdout);
        return FCJIT_EXIT_OK;
    }
    struct fc_quantize_case c;
    memset(&c, 0, sizeof c);
    fc_quantize_params_init(&c.shape);
    c.shape.dtype = FC_BF16;
    c.shape.batch = 2;
    c.shape.seqlen = 1024;
    c.shape.heads = 8;
    c.shape.head_dim = 128;
    c.seed = (uint64_t)fcjit_seconds_now();
    int device = 0, seed_given = 0;
    static int lens[FCJIT_MAX_SEQUENCES];
    int sequences = 0;
    float outliers = 0.f;
    unsigned long long u64;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", OPTIONS, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'b': bad = fcjit_parse_int("quantize", "batch", optarg, 1, 1 << 20, &c.shape.batch); break;
        case 's': bad = fcjit_parse_int("quantize", "seqlen", optarg, 1, 1 << 24, &c.shape.seqlen); break;
        case 'H': bad = fcjit_parse_int("quantize", "heads", optarg, 1, 4096, &c.shape.heads); break;
        case 'd': bad = fcjit_parse_int("quantize", "head-dim", optarg, 1, 4096, &c.shape.head_dim); break;
        case 'g': bad = fcjit_parse_int("quantize", "descale-heads", optarg, 1, 4096, &c.shape.descale_heads); break;
        case 't':   /* the input: 16 bits */
            if ((bad = fc_dtype_parse(optarg, &c.shape.dtype) != 0 || c.shape.dtype == FC_E4M3))
                fprintf(stderr, "fcjit quantize: --dtype takes f16 or bf16, not '%s'\n", optarg);
            break;
        case 'o':
            if ((bad = fc_dtype_parse(optarg, &c.shape.out_dtype) != 0))
                fprintf(stderr, "fcjit quantize: --out-dtype takes e4m3, f16 or bf16, not '%s'\n", optarg);
            break;
        case 'c':
            if (!strcmp(optarg, "head"))
                c.shape.scaling = FC_SCALE_PER_HEAD;
            else if (!strcmp(optarg, "tensor"))
                c.shape.scaling = FC_SCALE_PER_TENSOR;
            else if (!strcmp(optarg, "given"))
                c.shape.scaling = FC_SCALE_GIVEN;
            else {
                fprintf(stderr, "fcjit quantize: --scaling takes head, tensor or given, not '%s'\n", optarg);
                bad = 1;
            }
            break;
        case 'r': c.shape.rotate = 1; break;
        case 'R':
            bad = fcjit_parse_u64("quantize", "rotation-seed", optarg, &u64);
            c.shape.rotation_seed = u64;
            break;
        case 'x':
            if (!(bad = fcjit_parse_float("quantize", "outliers", optarg, &outliers)) && outliers <= 1.f) {
                fprintf(stderr, "fcjit quantize: --outliers takes a factor above 1, not '%s'\n", optarg);
                bad = 1;
            }
            break;
        case 'v': bad = (sequences = fcjit_parse_lengths("quantize", "varlen", optarg, lens)) < 0; break;
        case 'S':
            bad = fcjit_parse_u64("quantize", "seed", optarg, &u64);
            c.seed = u64;
            seed_given = 1;
            break;
        case 'D': bad = fcjit_parse_int("quantize", "device", optarg, 0, 1023, &device); break;
        default: bad = 1;
        }
        if (bad) {
            fprintf(stderr, "fcjit quantize: see 'fcjit quantize --help'\n");
            return FCJIT_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fcjit quantize: unexpected argument '%s'\n", argv[optind]);
        return FCJIT_EXIT_USAGE;
    }
    c.outlier_scale = outliers;
    if (sequences) {
        c.lens = lens;
        c.shape.batch = sequences;
        long long tokens = 0;
        int longest = 0;
        for (int i = 0; i < sequences; i++) {
            tokens += lens[i];
            longest = lens[i] > longest ? lens[i] : longest;
        }
        if (longest == 0 || tokens + FC_CHECK_PAD_TOKENS > (1 << 30)) {
            fprintf(stderr, "fcjit quantize: --varlen needs a sequence with a token, and at most 2^30 in all\n");
            return FCJIT_EXIT_USAGE;
        }
        c.shape.seqlen = (int)tokens + FC_CHECK_PAD_TOKENS;
        c.shape.max_seqlen = longest;
        c.shape.cu_seqlens = (const int32_t *)(uintptr_t)16;   /* stand-ins: only the rules see them */
    }
    /* The rules first, on stand-in pointers: bad input says 2 on any machine. */
    struct fc_quantize_params rules = c.shape;
    rules.in = (const void *)(uintptr_t)16;
    rules.out = (void *)(uintptr_t)32;
    rules.descale = rules.out_dtype == FC_E4M3 ? (float *)(uintptr_t)64 : NULL;
    char msg[FC_MESSAGE_MAX];
    enum fc_status status = fc_quantize_validate(&rules, msg);
    if (status == FC_OK) {
        const double tokens = sequences ? (double)c.shape.seqlen : (double)c.shape.batch * c.shape.seqlen;
        const double elements = tokens * c.shape.heads * c.shape.head_dim;
        if (elements > 1.5e9) {   /* the check holds fp64 copies on the host */
            snprintf(msg, sizeof msg, "%.3g elements: more than the check holds on the host (1.5e9)", elements);
            status = FC_ERR_INVALID_ARG;
        }
    }
    if (status != FC_OK) {
        fprintf(stderr, "fcjit quantize: %s\n", msg);
        return fcjit_exit_for(status);
    }
    struct fc_context *ctx = fcjit_open_context(g, device, &status);
    if (!ctx)
        return fcjit_exit_for(status);
    if (!g->json)
        printf("seed %llu%s\n", (unsigned long long)c.seed, seed_given ? "" : " (--seed repeats it)");
    struct fc_quantize_result result, plain;
    int code = FCJIT_EXIT_OK;
    status = fc_quantize_check(ctx, &c, &result, msg, sizeof msg);
    const int fp8 = c.shape.out_dtype == FC_E4M3;
    if (status == FC_OK) {
        print_result(g, c.shape.rotate ? "rotated" : "plain", &result, fp8);
        if (result.bad || (fp8 && c.shape.scaling != FC_SCALE_GIVEN && result.descale_error > 1e-5))
            code = FCJIT_EXIT_FAILED_CHECK;
    }
    if (status == FC_OK && c.shape.rotate && fp8) {   /* the same inputs, unrotated */
        c.shape.rotate = 0;
        status = fc_quantize_check(ctx, &c, &plain, msg, sizeof msg);
        if (status == FC_OK) {
            print_result(g, "plain", &plain, fp8);
            if (plain.bad || (c.shape.scaling != FC_SCALE_GIVEN && plain.descale_error > 1e-5))
                code = FCJIT_EXIT_FAILED_CHECK;
            if (!g->json)
                printf("rotation: relative RMSE %.4f against %.4f unrotated (%.2fx)\n", result.relative_rmse,
                       plain.relative_rmse, plain.relative_rmse > 0 ? result.relative_rmse / plain.relative_rmse : 1.0);
        }
    }
    if (status != FC_OK) {
        fprintf(stderr, "fcjit quantize: %s\n", msg);
        code = fcjit_exit_for(status);
    }
    fc_context_destroy(ctx);
    return code;
}
