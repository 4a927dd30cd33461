/* fcjit: dispatch, shared helpers, and the small commands (info, cache). */
#include <errno.h>
#include <getopt.h>
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
    "  precompile [--arch A]    fill the kernel cache (no GPU needed)\n"
    "  run SHAPE                run one problem: check it against an fp64 CPU reference, time it\n"
    "  plan SHAPE               which kernel would run a problem, and why (no GPU needed)\n"
    "  tune [--spec FILE]       time each candidate kernel per problem bucket on this GPU; the\n"
    "                           winners then run (also `fcjit --tune`; resumable)\n"
    "  explain SHAPE            what would run on this GPU and why: tuned winner, heuristic\n"
    "  cache ls|verify|clear    list, check the checksums of, or empty the kernel cache\n"
    "\n"
    "global options:\n"
    "  --db PATH     kernel cache file (default: $FC_TUNING_DB, $XDG_CACHE_HOME/flashcore/tuning.db,\n"
    "                or ~/.cache/flashcore/tuning.db)\n"
    "  --no-cache    keep compiled kernels in memory only\n"
    "  --json        print results as JSON\n"
    "  -h, --help    this text; 'fcjit COMMAND --help' for a command's options\n"
    "  --version     print the version\n"
    "\n"
    "exit codes: 0 ok, 1 a check failed, 2 usage error, 3 no GPU/driver/NVRTC where needed,\n"
    "            4 other error\n"
    "environment: FC_LOG=error|warn|info|debug, FC_DUMP_SOURCE=DIR, FC_DUMP_PTX=DIR,\n"
    "             FC_TEMPLATE_DIR=DIR,\n"
    "             FC_FORCE_VARIANT=sm90|sm90:m128n64s2w12p1|sm80:m128n64w4|decode:n64w4k8|reference,\n"
    "             FC_TUNING_DB=PATH, FC_NVRTC_LIBRARY=PATH, FC_CUDA_LIBRARY=PATH\n";

int fcjit_parse_int(const char *command, const char *name, const char *text, long low, long high, int *out)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (end == text || *end || errno || value < low || value > high) {
        fprintf(stderr, "fcjit %s: --%s takes an integer from %ld to %ld, not '%s'\n", command, name, low, high,
                text);
        return -1;
    }
    *out = (int)value;
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
    case FC_ERR_CONFIG: return FCJIT_EXIT_USAGE;
    case FC_ERR_NO_DEVICE:
    case FC_ERR_NO_COMPILER: return FCJIT_EXIT_NO_ENVIRONMENT;
    default: return FCJIT_EXIT_ERROR;
    }
}

struct fc_context *fcjit_open_context(const struct fcjit_globals *g, int device, enum fc_status *status)
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
    return ctx;
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

struct cache_counts { int rows, bad; long long bytes; };

static int count_row(void *user, const struct fc_cubin_record *record, int checksum_ok)
{
    struct cache_counts *c = user;
    c->rows++;
    c->bad += !checksum_ok;
    c->bytes += (long long)record->cubin_size;
    return 0;
}

int fcjit_info(int argc, char **argv, const struct fcjit_globals *g)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: fcjit info\n\nPrints the GPUs, driver, NVRTC and kernel cache this machine has, and\n"
               "says plainly what is missing. Exit 0 even when something is missing.\n");
        return FCJIT_EXIT_OK;
    }
    char driver_why[512] = "", nvrtc_why[1024] = "", gpu[256] = "none";
    const struct fc_cuda_api *cuda = fc_cuda_load(driver_why, sizeof driver_why);
    int count = 0;
    if (cuda) {
        cuda->cuDeviceGetCount(&count);
        CUdevice device;
        int major = 0, minor = 0, sms = 0;
        char name[128] = "?";
        if (count > 0 && cuda->cuDeviceGet(&device, 0) == CUDA_SUCCESS) {
            cuda->cuDeviceGetName(name, sizeof name, device);
            cuda->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
            cuda->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
            cuda->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
            snprintf(gpu, sizeof gpu, "%s (sm_%d%d, %d SMs)%s", name, major, minor, sms, count > 1 ? ", ..." : "");
        }
    }
    int have_nvrtc = fc_nvrtc_load(nvrtc_why, sizeof nvrtc_why) == 0;
    enum fc_status status;
    struct fc_context *ctx = fcjit_open_context(g, FC_DEVICE_NONE, &status);
    struct cache_counts counts = {0, 0, 0};
    char msg[1024] = "";
    const char *cache_path = ctx && ctx->cache ? fc_cache_path(ctx->cache) : "(memory only)";
    if (ctx && ctx->cache)
        fc_cache_foreach(ctx->cache, count_row, &counts, msg, sizeof msg);
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
        json_string("cache", cache_path, 0);
        printf("  \"cache_kernels\": %d,\n  \"cache_bad_rows\": %d,\n  \"cache_bytes\": %lld\n}\n",
               counts.rows, counts.bad, counts.bytes);
    } else {
        printf("flashcore  %s\n", fc_version());
        printf("driver     %s\n", cuda ? driver : driver_why);
        printf("gpus       %d: %s\n", count, gpu);
        printf("nvrtc      %s%s%s\n", have_nvrtc ? fc_nvrtc_version() : nvrtc_why,
               have_nvrtc ? " from " : "", have_nvrtc ? fc_nvrtc_path() : "");
        printf("cache      %s: %d kernels, %.1f MiB%s%s\n", cache_path, counts.rows,
               counts.bytes / 1048576.0, counts.bad ? ", BAD ROWS: run 'fcjit cache verify'" : "", msg);
    }
    fc_context_destroy(ctx);
    return ctx ? FCJIT_EXIT_OK : fcjit_exit_for(status);
}

static int list_row(void *user, const struct fc_cubin_record *r, int checksum_ok)
{
    const struct fcjit_globals *g = user;
    if (g->json)
        printf("{\"name\": \"%s\", \"arch\": \"%s\", \"nvrtc\": \"%s\", \"registers\": %d, \"smem_static\": %d, "
               "\"smem_dynamic\": %d, \"spill_stores\": %d, \"spill_loads\": %d, \"compile_ms\": %.1f, "
               "\"bytes\": %zu, \"checksum_ok\": %s, \"created_at\": \"%s\", \"key\": \"%s\"}\n",
               r->name, r->arch, r->nvrtc_version, r->registers, r->smem_static, r->smem_dynamic,
               r->spill_stores, r->spill_loads, r->compile_ms, r->cubin_size, checksum_ok ? "true" : "false",
               r->created_at, r->key);
    else
        printf("%-52s %-7s nvrtc %-5s %3d regs %6d B smem %4d B spill %7.0f ms %7zu B %s\n", r->name, r->arch,
               r->nvrtc_version, r->registers, r->smem_static + r->smem_dynamic, r->spill_stores, r->compile_ms,
               r->cubin_size, checksum_ok ? "ok" : "BAD CHECKSUM");
    return 0;
}

static int cache_verify(struct fc_context *ctx, const struct fcjit_globals *g)
{
    struct cache_counts counts = {0, 0, 0};
    char msg[1024];
    enum fc_status status = fc_cache_foreach(ctx->cache, count_row, &counts, msg, sizeof msg);
    if (status != FC_OK) {
        fprintf(stderr, "fcjit: %s\n", msg);
        return fcjit_exit_for(status);
    }
    if (g->json)
        printf("{\"rows\": %d, \"bad_rows\": %d}\n", counts.rows, counts.bad);
    else
        printf("%d kernels, %d with a bad checksum%s\n", counts.rows, counts.bad,
               counts.bad ? " (they are recompiled on next use; 'fcjit precompile' replaces them now)" : "");
    return counts.bad ? FCJIT_EXIT_FAILED_CHECK : FCJIT_EXIT_OK;
}

struct export_state {
    FILE *out;
    int winners_only, rows;
};

static int export_row(void *user, const struct fc_tuning_row *row)
{
    struct export_state *e = user;
    char line[1024];
    fc_tuning_row_format(row, line, sizeof line);
    fputs(line, e->out);
    e->rows++;
    return 0;
}

/* `cache export [--winners] FILE|-`: the tuning results as TSV (the shipped-layer format). */
static int cache_export(struct fc_context *ctx, int argc, char **argv, const struct fcjit_globals *g)
{
    struct export_state e = {NULL, 0, 0};
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--winners"))
            e.winners_only = 1;
        else if (!path)
            path = argv[i];
        else {
            fprintf(stderr, "fcjit cache export: unexpected argument '%s'\n", argv[i]);
            return FCJIT_EXIT_USAGE;
        }
    }
    if (!path) {
        fprintf(stderr, "fcjit cache export: give a file to write (or - for standard output)\n");
        return FCJIT_EXIT_USAGE;
    }
    e.out = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!e.out) {
        fprintf(stderr, "fcjit cache export: %s: %s\n", path, strerror(errno));
        return FCJIT_EXIT_ERROR;
    }
    fprintf(e.out, "# FlashCore tuning results (fcjit cache export%s); columns: gpu_name, sm_count, driver, "
            "kernel_set, bucket, variant, median_ms, tflops, passed_check, winner, measured_at\n",
            e.winners_only ? " --winners" : "");
    char msg[1024] = "";
    enum fc_status status = fc_tuning_foreach(ctx->cache, e.winners_only, export_row, &e, msg, sizeof msg);
    if (e.out != stdout && fclose(e.out) != 0 && status == FC_OK) {
        snprintf(msg, sizeof msg, "%s: %s", path, strerror(errno));
        status = FC_ERR_CACHE;
    }
    if (status != FC_OK)
        fprintf(stderr, "fcjit cache export: %s\n", msg);
    else if (strcmp(path, "-"))
        printf(g->json ? "{\"exported\": %d}\n" : "exported %d tuning results\n", e.rows);
    return fcjit_exit_for(status);
}

/* `cache import FILE|-`: rows another machine exported; every line is checked before any is
 * stored, so a damaged file changes nothing. */
static int cache_import(struct fc_context *ctx, int argc, char **argv, const struct fcjit_globals *g)
{
    if (argc != 3) {
        fprintf(stderr, "fcjit cache import: give one file to read (or - for standard input)\n");
        return FCJIT_EXIT_USAGE;
    }
    const char *path = argv[2];
    FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!in) {
        fprintf(stderr, "fcjit cache import: %s: %s\n", path, strerror(errno));
        return FCJIT_EXIT_ERROR;
    }
    struct fc_tuning_row *rows = NULL;
    size_t count = 0, capacity = 0;
    char line[2048];
    int number = 0, code = FCJIT_EXIT_OK;
    while (fgets(line, sizeof line, in)) {
        number++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            struct fc_tuning_row *grown = realloc(rows, capacity * sizeof *grown);
            if (!grown) {
                code = FCJIT_EXIT_ERROR;
                break;
            }
            rows = grown;
        }
        if (fc_tuning_row_parse(line, &rows[count])) {
            fprintf(stderr, "fcjit cache import: %s:%d: not a tuning row (11 tab-separated fields: gpu_name, "
                    "sm_count, driver, kernel_set, bucket, variant, median_ms, tflops, passed_check, winner, "
                    "measured_at); nothing imported\n", path, number);
            code = FCJIT_EXIT_USAGE;
            break;
        }
        count++;
    }
    if (in != stdin)
        fclose(in);
    char msg[1024] = "";
    for (size_t i = 0; code == FCJIT_EXIT_OK && i < count; i++) {
        enum fc_status status = fc_tuning_put(ctx->cache, &rows[i], msg, sizeof msg);
        if (status != FC_OK) {
            fprintf(stderr, "fcjit cache import: %s\n", msg);
            code = fcjit_exit_for(status);
        }
    }
    if (code == FCJIT_EXIT_OK)
        printf(g->json ? "{\"imported\": %zu}\n" : "imported %zu tuning results\n", count);
    free(rows);
    return code;
}

int fcjit_cache(int argc, char **argv, const struct fcjit_globals *g)
{
    const char *verb = argc > 1 ? argv[1] : "";
    if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !*verb) {
        printf("usage: fcjit cache ls|verify|clear|export|import\n\n"
               "  ls       one line per cached kernel: arch, NVRTC, registers, shared memory, spills,\n"
               "           compile time, size, checksum state (--json: one object per line)\n"
               "  verify   check every cubin's checksum; exit 1 if any is bad\n"
               "  clear    delete every cached kernel (tuning results stay)\n"
               "  export [--winners] FILE|-   the tuning results (or only the winners) as TSV, to move\n"
               "           them to another machine or to tuning_db/winners.tsv (the shipped layer)\n"
               "  import FILE|-               tuning results another machine exported\n");
        return *verb ? FCJIT_EXIT_OK : FCJIT_EXIT_USAGE;
    }
    if (strcmp(verb, "ls") && strcmp(verb, "verify") && strcmp(verb, "clear") && strcmp(verb, "export") &&
        strcmp(verb, "import")) {
        fprintf(stderr, "fcjit cache: unknown verb '%s' (ls, verify, clear, export, import)\n", verb);
        return FCJIT_EXIT_USAGE;
    }
    if (g->no_disk_cache) {
        fprintf(stderr, "fcjit cache: --no-cache leaves no cache to look at\n");
        return FCJIT_EXIT_USAGE;
    }
    enum fc_status status;
    struct fc_context *ctx = fcjit_open_context(g, FC_DEVICE_NONE, &status);
    if (!ctx)
        return fcjit_exit_for(status);
    char msg[1024] = "";
    int code = FCJIT_EXIT_OK;
    if (!strcmp(verb, "ls")) {
        status = fc_cache_foreach(ctx->cache, list_row, (void *)g, msg, sizeof msg);
        code = fcjit_exit_for(status);
    } else if (!strcmp(verb, "verify")) {
        code = cache_verify(ctx, g);
    } else if (!strcmp(verb, "export")) {
        code = cache_export(ctx, argc, argv, g);
    } else if (!strcmp(verb, "import")) {
        code = cache_import(ctx, argc, argv, g);
    } else {
        int deleted = 0;
        status = fc_cache_clear(ctx->cache, &deleted, msg, sizeof msg);
        if (status == FC_OK)
            printf(g->json ? "{\"deleted\": %d}\n" : "deleted %d kernels\n", deleted);
        code = fcjit_exit_for(status);
    }
    if (*msg && code != FCJIT_EXIT_OK)
        fprintf(stderr, "fcjit: %s\n", msg);
    fc_context_destroy(ctx);
    return code;
}

static const struct {
    const char *name;
    int (*run)(int, char **, const struct fcjit_globals *);
} COMMANDS[] = {
    {"info", fcjit_info}, {"precompile", fcjit_precompile}, {"run", fcjit_run},
    {"plan", fcjit_plan}, {"cache", fcjit_cache}, {"tune", fcjit_tune},
    {"explain", fcjit_explain},
};

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
            int first = optind;
            optind = 0;   /* the command parses its own argv (glibc: 0 resets getopt) */
            return COMMANDS[i].run(argc - first, argv + first, &g);
        }
    fprintf(stderr, "fcjit: unknown command '%s'\n\n%s", argv[optind], USAGE);
    return FCJIT_EXIT_USAGE;
}
