/* fcjit: dispatch, shared helpers (options, exit codes, contexts), and `fcjit info`. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context_internal.h"
#include "cuda_api_internal.h"
#include "fcjit.h"
#include "nvrtc_internal.h"

static const char USAGE[] =
    "usage: fcjit [--db PATH] [--no-cache] [--json] COMMAND [options]\n"
    "\n"
    "FlashCore JIT: run-time specialized fused attention for NVIDIA GPUs.\n"
    "\n"
    "commands:\n"
    "  info                     GPU, driver, NVRTC, kernel cache: what is there and what is missing\n"
    "  precompile [--arch A]    fill the kernel cache (no GPU needed; --dry-run: list, compile nothing)\n"
    "  run SHAPE                run one problem: check it against an fp64 CPU reference, time it\n"
    "  plan SHAPE [--arch A]    which kernel would run a problem, and why (no GPU needed)\n"
    "  tune [--spec FILE]       time each candidate kernel per problem bucket on this GPU; the\n"
    "                           winners then run (also `fcjit --tune`; resumable)\n"
    "  explain SHAPE            what would run on this GPU and why: tuned winner, heuristic\n"
    "  quantize [options]       run fc_quantize (to FP8, optionally Hadamard-rotated) on random inputs\n"
    "                           and check every element against an fp64 reference\n"
    "  cache ls|verify|clear|repair   list, check (naming bad rows), empty, or recover (a damaged\n"
    "                           file is moved aside, never deleted) the kernel cache\n"
    "  cache export|import FILE       tuning results as TSV, to move them between machines\n"
    "\n"
    "global options (also after the command):\n"
    "  --db PATH     kernel cache file (default: $FC_TUNING_DB, $XDG_CACHE_HOME/flashcore/tuning.db,\n"
    "                or ~/.cache/flashcore/tuning.db)\n"
    "  --no-cache    keep compiled kernels in memory only\n"
    "  --json        print results as JSON\n"
    "  -h, --help    this text; 'fcjit COMMAND --help' for a command's options\n"
    "  --version     print the version\n"
    "\n"
    "exit codes: 0 ok, 1 a check failed (a wrong result, bad cache rows), 2 bad input (usage, a spec,\n"
    "            a shape or dtype no kernel supports), 3 no GPU/driver/NVRTC where one is needed,\n"
    "            4 other errors (CUDA, a cache that cannot be written where it must be)\n"
    "environment: FC_LOG=error|warn|info|debug, FC_DUMP_SOURCE=DIR, FC_DUMP_PTX=DIR,\n"
    "             FC_TEMPLATE_DIR=DIR,\n"
    "             FC_FORCE_VARIANT=sm90|sm90:m128n64s2w12p1|sm90:m64w8g1|sm90:v1|sm80:m128n64w4|\n"
    "                              decode:n64w4k8|reference,\n"
    "             FC_TUNED=0 (ignore tuned winners: the heuristic decides),\n"
    "             FC_QUICK_FIRST_CALL=0 (a new kernel compiles before its first launch; else a kernel\n"
    "                              that compiles in less time runs until it is ready),\n"
    "             FC_TUNING_DB=PATH, FC_NVRTC_LIBRARY=PATH, FC_CUDA_LIBRARY=PATH\n";

static void parse_failed(const char *command, const char *name, const char *expected, const char *text)
{
    fprintf(stderr, "fcjit %s: --%s takes %s, not '%s'\n", command, name, expected, text);
}

int fcjit_parse_int(const char *command, const char *name, const char *text, long low, long high, int *out)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (end == text || *end || errno || value < low || value > high) {
        char expected[96];
        snprintf(expected, sizeof expected, "an integer from %ld to %ld", low, high);
        parse_failed(command, name, expected, text);
        return -1;
    }
    *out = (int)value;
    return 0;
}

int fcjit_parse_float(const char *command, const char *name, const char *text, float *out)
{
    char *end;
    errno = 0;
    float value = strtof(text, &end);
    if (end == text || *end || errno || !isfinite(value)) {
        parse_failed(command, name, "a finite number", text);
        return -1;
    }
    *out = value;
    return 0;
}

int fcjit_parse_ms(const char *command, const char *name, const char *text, float *out)
{
    float value;
    if (fcjit_parse_float(command, name, text, &value))
        return -1;
    if (value < 0.f || value > FCJIT_MS_MAX) {
        char expected[64];
        snprintf(expected, sizeof expected, "milliseconds from 0 to %d", FCJIT_MS_MAX);
        parse_failed(command, name, expected, text);
        return -1;
    }
    *out = value;
    return 0;
}

int fcjit_parse_u64(const char *command, const char *name, const char *text, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (end == text || *end || errno || text[0] == '-') {   /* strtoull takes "-1" as a huge value */
        parse_failed(command, name, "a non-negative integer", text);
        return -1;
    }
    *out = value;
    return 0;
}

int fcjit_parse_lengths(const char *command, const char *name, const char *text, int *out)
{
    int count = 0;
    for (const char *p = text; *p; count++) {
        char *end;
        long value = strtol(p, &end, 10);
        if (end == p || value < 0 || value > INT_MAX / 2 || (*end && *end != ',') || count == FCJIT_MAX_SEQUENCES) {
            fprintf(stderr, "fcjit %s: --%s takes up to %d comma-separated lengths >= 0, not '%s'\n", command, name,
                    FCJIT_MAX_SEQUENCES, text);
            return -1;
        }
        out[count] = (int)value;
        p = *end ? end + 1 : end;
    }
    if (!count)
        fprintf(stderr, "fcjit %s: --%s needs at least one length\n", command, name);
    return count ? count : -1;
}

int fcjit_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

double fcjit_seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fcjit_median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

int fcjit_exit_for(enum fc_status status)
{
    switch (status) {
    case FC_OK: return FCJIT_EXIT_OK;
    case FC_ERR_INVALID_ARG:
    case FC_ERR_UNSUPPORTED:   /* a shape, dtype or variant no kernel takes: the input's fault */
    case FC_ERR_CONFIG: return FCJIT_EXIT_USAGE;
    case FC_ERR_NO_DEVICE:
    case FC_ERR_NO_COMPILER: return FCJIT_EXIT_NO_ENVIRONMENT;
    default: return FCJIT_EXIT_ERROR;
    }
}

/* A context with the globals' cache settings; warn: print the cache's warning, if any. */
static struct fc_context *open_context(const struct fcjit_globals *g, int device, int warn, enum fc_status *status)
{
    struct fc_options options;
    fc_options_init(&options);
    options.cache_path = g->db_path;
    options.no_disk_cache = g->no_disk_cache;
    struct fc_context *ctx = NULL;
    *status = fc_context_create(device, &options, &ctx);
    if (*status != FC_OK) {
        fprintf(stderr, "fcjit: %s: %s\n", fc_status_name(*status), fc_context_errmsg(ctx));
        fc_context_destroy(ctx);
        return NULL;
    }
    if (warn && ctx->cache_warning[0])
        fprintf(stderr, "fcjit: warning: %s\n", ctx->cache_warning);
    return ctx;
}

struct fc_context *fcjit_open_context(const struct fcjit_globals *g, int device, enum fc_status *status)
{
    return open_context(g, device, 1, status);
}

int fcjit_require_writable_cache(const struct fcjit_globals *g, const char *command)
{
    if (g->no_disk_cache)
        return FCJIT_EXIT_OK;
    enum fc_status status;
    struct fc_context *ctx = open_context(g, FC_DEVICE_NONE, 0, &status);
    if (!ctx)
        return fcjit_exit_for(status);
    int code = FCJIT_EXIT_OK;
    if (!fc_cache_writable(ctx->cache)) {
        fprintf(stderr, "fcjit %s: nothing could be stored: %s\n", command,
                ctx->cache_warning[0] ? ctx->cache_warning : "the kernel cache is a read-only system layer");
        code = FCJIT_EXIT_ERROR;
    }
    fc_context_destroy(ctx);
    return code;
}

static void json_string(const char *key, const char *value, int last)
{
    printf("  \"%s\": \"", key);
    for (const char *p = value ? value : ""; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if ((unsigned char)*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    printf("\"%s\n", last ? "" : ",");
}

/* What `fcjit info` says of the cache: its state in one word, and a line for people. */
struct cache_report {
    const char *path, *state;
    struct fc_cache_health health;
    char line[FC_MESSAGE_MAX + 512];
};

static void report_cache(const struct fc_context *ctx, const struct fcjit_globals *g, struct cache_report *r)
{
    memset(&r->health, 0, sizeof r->health);
    r->path = ctx->cache ? fc_cache_path(ctx->cache) : g->db_path ? g->db_path : "";
    char msg[1024];
    if (g->no_disk_cache) {
        r->state = "memory-only";
        snprintf(r->line, sizeof r->line, "(memory only: --no-cache)");
    } else if (!ctx->cache) {
        r->state = ctx->cache_state == FC_CACHE_DAMAGED ? "damaged" : "not-used";
        snprintf(r->line, sizeof r->line, "not used: %s", ctx->cache_warning);
    } else if (fc_cache_check(ctx->cache, NULL, NULL, &r->health, msg, sizeof msg) != FC_OK) {
        r->state = "damaged";
        snprintf(r->line, sizeof r->line, "%s: cannot be checked: %s", r->path, msg);
    } else if (r->health.damage[0] || r->health.unreadable) {
        r->state = "damaged";
        snprintf(r->line, sizeof r->line, "%s: DAMAGED (%s; %d of %d kernel rows cannot be read); fix: `fcjit cache "
                 "repair` moves it aside and starts a fresh one", r->path,
                 r->health.damage[0] ? r->health.damage : "rows cannot be read", r->health.unreadable,
                 r->health.kernels);
    } else {
        r->state = ctx->cache_state == FC_CACHE_READ_ONLY ? "read-only" : "ok";
        int n = snprintf(r->line, sizeof r->line, "%s: %d kernels, %.1f MiB, %lld tuning results", r->path,
                         r->health.kernels, r->health.bytes / 1048576.0, r->health.tuning_results);
        if (r->health.bad_checksums)
            n += snprintf(r->line + n, sizeof r->line - (size_t)n, "; %d with a bad checksum: `fcjit cache verify`",
                          r->health.bad_checksums);
        if (ctx->cache_state == FC_CACHE_READ_ONLY)
            snprintf(r->line + n, sizeof r->line - (size_t)n, "; read only: %s",
                     ctx->cache_warning[0] ? ctx->cache_warning : "a system layer (root's)");
    }
}

/* How many GPUs there are, and the first described in gpu ("none" stays without one). */
static int describe_gpus(const struct fc_cuda_api *cuda, char *gpu, size_t size)
{
    int count = 0, major = 0, minor = 0, sms = 0;
    CUdevice device;
    char name[128] = "?";
    if (!cuda || cuda->cuDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0 ||
        cuda->cuDeviceGet(&device, 0) != CUDA_SUCCESS)
        return count;
    cuda->cuDeviceGetName(name, sizeof name, device);
    cuda->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    cuda->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    cuda->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    snprintf(gpu, size, "%s (sm_%d%d, %d SMs)%s", name, major, minor, sms, count > 1 ? ", ..." : "");
    return count;
}

int fcjit_info(int argc, char **argv, const struct fcjit_globals *g)
{
    static const char HELP[] =
        "usage: fcjit info\n\nPrints the GPUs, driver, NVRTC and kernel cache this machine has, and\n"
        "says plainly what is missing or damaged. Exit 0 even when something is.\n";
    if (fcjit_wants_help(argc, argv)) {
        fputs(HELP, stdout);
        return FCJIT_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "fcjit info: unexpected argument '%s'\n%s", argv[1], HELP);
        return FCJIT_EXIT_USAGE;
    }
    char driver_why[512] = "", nvrtc_why[1024] = "", gpu[256] = "none";
    const struct fc_cuda_api *cuda = fc_cuda_load(driver_why, sizeof driver_why);
    const int count = describe_gpus(cuda, gpu, sizeof gpu);
    int have_nvrtc = fc_nvrtc_load(nvrtc_why, sizeof nvrtc_why) == 0;
    enum fc_status status;
    struct fc_context *ctx = open_context(g, FC_DEVICE_NONE, 0, &status);   /* the report says it */
    if (!ctx)
        return fcjit_exit_for(status);
    static struct cache_report cache;
    report_cache(ctx, g, &cache);
    char driver[64];
    snprintf(driver, sizeof driver, "%d.%d", cuda ? cuda->driver_version / 1000 : 0,
             cuda ? cuda->driver_version % 1000 / 10 : 0);
    if (g->json) {
        printf("{\n");
        json_string("version", fc_version(), 0);
        json_string("driver", cuda ? driver : "", 0);
        json_string("driver_missing", cuda ? "" : driver_why, 0);
        printf("  \"gpu_count\": %d,\n", count);
        json_string("gpu", gpu, 0);
        json_string("nvrtc", have_nvrtc ? fc_nvrtc_version() : "", 0);
        json_string("nvrtc_path", have_nvrtc ? fc_nvrtc_path() : "", 0);
        json_string("nvrtc_missing", have_nvrtc ? "" : nvrtc_why, 0);
        json_string("cache", cache.path, 0);
        json_string("cache_state", cache.state, 0);
        json_string("cache_message", cache.line, 0);
        printf("  \"cache_kernels\": %d,\n  \"cache_bad_rows\": %d,\n  \"cache_bytes\": %lld\n}\n",
               cache.health.kernels, cache.health.bad_checksums + cache.health.unreadable, cache.health.bytes);
    } else {
        printf("flashcore  %s\n", fc_version());
        printf("driver     %s\n", cuda ? driver : driver_why);
        printf("gpus       %d: %s\n", count, gpu);
        printf("nvrtc      %s%s%s\n", have_nvrtc ? fc_nvrtc_version() : nvrtc_why,
               have_nvrtc ? " from " : "", have_nvrtc ? fc_nvrtc_path() : "");
        printf("cache      %s\n", cache.line);
    }
    fc_context_destroy(ctx);
    return FCJIT_EXIT_OK;
}

static const struct {
    const char *name;
    int (*run)(int, char **, const struct fcjit_globals *);
} COMMANDS[] = {
    {"info", fcjit_info}, {"precompile", fcjit_precompile}, {"run", fcjit_run},
    {"plan", fcjit_plan}, {"cache", fcjit_cache}, {"tune", fcjit_tune},
    {"explain", fcjit_explain}, {"quantize", fcjit_quantize},
};

/* Takes the global options out of a command's arguments (up to "--"), so that `fcjit info --json`
 * means `fcjit --json info`; returns -1 (after saying why) when --db has no value. */
static int take_global_options(int *argc, char **argv, struct fcjit_globals *g)
{
    int kept = 1;
    for (int i = 1; i < *argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            while (i < *argc)
                argv[kept++] = argv[i++];
            break;
        }
        if (!strcmp(arg, "--json"))
            g->json = 1;
        else if (!strcmp(arg, "--no-cache"))
            g->no_disk_cache = 1;
        else if (!strncmp(arg, "--db=", 5))
            g->db_path = arg + 5;
        else if (!strcmp(arg, "--db") && i + 1 < *argc)
            g->db_path = argv[++i];
        else if (!strcmp(arg, "--db")) {
            fprintf(stderr, "fcjit %s: --db takes a file\n", argv[0]);
            return -1;
        } else
            argv[kept++] = argv[i];
    }
    *argc = kept;
    argv[kept] = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option OPTIONS[] = {
        {"db", required_argument, 0, 'd'}, {"no-cache", no_argument, 0, 'n'}, {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    struct fcjit_globals g = {NULL, 0, 0};
    int c;
    for (int i = 1; i < argc; i++)   /* `fcjit --tune ...` is `fcjit tune ...` */
        if (!strcmp(argv[i], "--tune")) {
            argv[i] = "tune";
            break;
        }
    while ((c = getopt_long(argc, argv, "+h", OPTIONS, NULL)) != -1) {
        switch (c) {
        case 'd': g.db_path = optarg; break;
        case 'n': g.no_disk_cache = 1; break;
        case 'j': g.json = 1; break;
        case 'h': fputs(USAGE, stdout); return FCJIT_EXIT_OK;
        case 'V': printf("fcjit %s\n", fc_version()); return FCJIT_EXIT_OK;
        default: fputs(USAGE, stderr); return FCJIT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fputs(USAGE, stderr);
        return FCJIT_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (!strcmp(argv[optind], COMMANDS[i].name)) {
            int first = optind, count = argc - first;
            if (take_global_options(&count, argv + first, &g))
                return FCJIT_EXIT_USAGE;
            optind = 0;   /* the command parses its own argv (glibc: 0 resets getopt) */
            return COMMANDS[i].run(count, argv + first, &g);
        }
    fprintf(stderr, "fcjit: unknown command '%s'\n\n%s", argv[optind], USAGE);
    return FCJIT_EXIT_USAGE;
}
