/* fcjit precompile: fill the kernel cache for a set of variants, in parallel processes.
 *
 * NOTE: NVRTC does not scale across threads of one process, so the work is spread over forked
 * workers, each with its own context and SQLite connection; results come back as one line per
 * kernel over a pipe (each line shorter than PIPE_BUF, so lines never interleave). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config_internal.h"
#include "context_internal.h"
#include "embedded_internal.h"
#include "fcjit.h"
#include "tuning_internal.h"

#define MAX_ARCHES 8
#define RESULT_LINE_MAX 1024

static const char HELP[] =
    "usage: fcjit precompile [--arch ARCH]... [--spec FILE] [--jobs N] [--force] [--dry-run]\n"
    "\n"
    "Compiles every kernel variant of a spec into the kernel cache. Needs NVRTC, not a GPU.\n"
    "Without --spec: the shipped set, tuning_db/precompile.yaml and every variant that\n"
    "tuning_db/winners.tsv (the shipped tuned winners) names.\n"
    "Kernels already cached are not compiled again.\n"
    "\n"
    "  --arch ARCH   target(s), e.g. sm_90a, sm_80 (repeat or comma-separate); default: the spec's\n"
    "  --spec FILE   YAML variant spec (default: the shipped tuning_db/precompile.yaml)\n"
    "  --jobs N      worker processes (default: the number of CPUs)\n"
    "  --force       compile even what is cached, replacing it\n"
    "  --dry-run     list the variants the spec and --arch give, compile nothing, open no cache\n";

struct options {
    const char *spec;
    int arches[MAX_ARCHES], arch_specific[MAX_ARCHES], arch_count;
    int jobs, force, dry_run;
};

static int parse_arches(const char *text, struct options *o)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", text);
    for (char *save = NULL, *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        if (o->arch_count == MAX_ARCHES || fc_arch_parse(part, &o->arches[o->arch_count],
                                                         &o->arch_specific[o->arch_count])) {
            fprintf(stderr, "fcjit precompile: bad --arch '%s' (e.g. sm_90a, sm_80, at most %d)\n", part, MAX_ARCHES);
            return -1;
        }
        o->arch_count++;
    }
    return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option OPTIONS[] = {
        {"arch", required_argument, 0, 'a'}, {"spec", required_argument, 0, 's'},
        {"jobs", required_argument, 0, 'j'}, {"force", no_argument, 0, 'f'},
        {"dry-run", no_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cpus > 0 ? (int)cpus : 1;
    if (fcjit_wants_help(argc, argv)) {
        fputs(HELP, stdout);
        return 1;
    }
    int c;
    while ((c = getopt_long(argc, argv, "h", OPTIONS, NULL)) != -1) {
        switch (c) {
        case 'a': if (parse_arches(optarg, o)) return -1; break;
        case 's': o->spec = optarg; break;
        case 'f': o->force = 1; break;
        case 'n': o->dry_run = 1; break;
        case 'j': if (fcjit_parse_int("precompile", "jobs", optarg, 1, 256, &o->jobs)) return -1; break;
        case 'h': fputs(HELP, stdout); return 1;
        default: fputs(HELP, stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fcjit precompile: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* Whether a variant's tiles are its family's defaults for its arch (the spec left them out). */
static int uses_default_tiles(const struct fc_variant *v)
{
    struct fc_variant d = *v;
    fc_variant_defaults(&d);
    return d.block_m == v->block_m && d.block_n == v->block_n && d.stages == v->stages && d.warps == v->warps;
}

/* Whether v is for one of the --arch targets (every target without --arch). */
static int wanted_arch(const struct options *o, const struct fc_variant *v)
{
    for (int a = 0; a < o->arch_count; a++)
        if (v->arch == o->arches[a] && v->arch_specific == o->arch_specific[a])
            return 1;
    return o->arch_count == 0;
}

/* The shipped set also takes the variant of every winner row of the embedded tuning_db/winners.tsv
 * (for the --arch targets), so that a GPU model's tuned winners are cached beside the heuristic's
 * choices: a first call then finds its tuned kernel built. Rows are read by src/tuning.c's own
 * parser; a line it refuses, or a variant that cannot be built, is skipped, as fc_tuned_load skips it. */
static enum fc_status add_shipped_winners(const struct options *o, struct fc_variant_list *list)
{
    const struct fc_embedded_file *f = fc_embedded_find(fc_embedded_data, "winners.tsv");
    if (!f)
        return FC_OK;
    size_t rows = 0;
    for (size_t i = 0; i < f->length; i++)
        rows += f->text[i] == '\n';
    if (rows > (SIZE_MAX / sizeof *list->items) - list->count - 1)
        return FC_ERR_NOMEM;
    struct fc_variant *items = realloc(list->items, (list->count + rows + 1) * sizeof *items);
    if (!items)
        return FC_ERR_NOMEM;
    list->items = items;
    for (const char *line = f->text, *end = f->text + f->length; line < end;) {
        const char *next = memchr(line, '\n', (size_t)(end - line));
        struct fc_tuning_row row;
        struct fc_variant v;
        if (fc_tuning_row_parse(line, &row) == 0 && row.winner && fc_variant_parse_name(row.variant, &v) == 0 &&
            wanted_arch(o, &v) && fc_variant_check(&v, NULL, 0) == 0)
            list->items[list->count++] = v;
        line = next ? next + 1 : end;
    }
    return fc_variants_unique(list->items, &list->count) ? FC_ERR_NOMEM : FC_OK;
}

/* The spec's variants, or with --arch: each distinct variant of the spec for each given arch;
 * without --spec, the shipped winners' too (add_shipped_winners). */
static enum fc_status load_variants(const struct options *o, struct fc_variant_list *list)
{
    char err[1024] = "";
    enum fc_status status;
    if (o->spec) {
        status = fc_config_load_variants(o->spec, list, err, sizeof err);
    } else {
        const struct fc_embedded_file *f = fc_embedded_find(fc_embedded_data, "precompile.yaml");
        status = fc_config_parse_variants(f->text, f->length, "tuning_db/precompile.yaml", list, err, sizeof err);
    }
    if (status != FC_OK) {
        fprintf(stderr, "fcjit precompile: %s\n", err);
        return status;
    }
    if (!o->arch_count)
        return o->spec ? FC_OK : add_shipped_winners(o, list);
    struct fc_variant *items = calloc(list->count * (size_t)o->arch_count, sizeof *items);
    if (!items)
        return FC_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < list->count; i++)
        for (int a = 0; a < o->arch_count; a++) {
            struct fc_variant v = list->items[i];
            const int defaulted = uses_default_tiles(&v);
            v.arch = o->arches[a];
            v.arch_specific = o->arch_specific[a];
            if (defaulted)   /* the selector on that arch asks for its own defaults */
                fc_variant_defaults(&v);
            if (fc_variant_check(&v, NULL, 0) == 0)
                items[n++] = v;
        }
    if (fc_variants_unique(items, &n)) {
        free(items);
        return FC_ERR_NOMEM;
    }
    free(list->items);
    list->items = items;
    list->count = n;
    return o->spec ? FC_OK : add_shipped_winners(o, list);
}

/* One worker: compiles items i = worker, worker + jobs, ... and reports each on fd. */
static int worker(const struct fcjit_globals *g, const struct options *o, const struct fc_variant_list *list,
                  int index, int fd)
{
    enum fc_status status;
    struct fc_context *ctx = fcjit_open_context(g, FC_DEVICE_NONE, &status);
    char line[RESULT_LINE_MAX], msg[FC_MESSAGE_MAX];
    for (size_t i = (size_t)index; i < list->count; i += (size_t)o->jobs) {
        struct fc_cubin cubin;
        if (ctx)
            status = fc_jit_get_cubin(ctx->jit, &list->items[i], o->force, &cubin, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "no context");
        int n;
        if (status == FC_OK) {
            const struct fc_cubin_record *r = &cubin.record;
            n = snprintf(line, sizeof line, "%zu %d %d %.3f %d %d %d\n", i, (int)status, (int)cubin.origin,
                         r->compile_ms, r->registers, r->spill_stores, r->spill_loads);
            fc_cubin_free(&cubin);
        } else {
            for (char *p = msg; *p; p++)
                *p = *p == '\n' ? ' ' : *p;
            n = snprintf(line, sizeof line, "%zu %d E %.800s\n", i, (int)status, msg);
        }
        if (write(fd, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0)
            break;
    }
    fc_context_destroy(ctx);
    return 0;
}

struct tally {
    int compiled, cached, failed, spilled, done;
    double *compile_ms;
    enum fc_status first_failure;
};

static void report_line(const char *line, const struct fc_variant_list *list, struct tally *t, int json)
{
    size_t index;
    int status, origin, registers, spill_stores, spill_loads, used = 0;
    double ms;
    char name[FC_VARIANT_NAME_MAX];
    if (sscanf(line, "%zu %d %n", &index, &status, &used) < 2 || index >= list->count)
        return;
    fc_variant_name(&list->items[index], name);
    t->done++;
    if (status != FC_OK) {
        t->failed++;
        if (t->first_failure == FC_OK)
            t->first_failure = (enum fc_status)status;
        fprintf(stderr, "[%3d/%zu] %s FAILED: %s\n", t->done, list->count, name, line + used + 2);
        return;
    }
    sscanf(line + used, "%d %lf %d %d %d", &origin, &ms, &registers, &spill_stores, &spill_loads);
    t->spilled += spill_stores > 0 || spill_loads > 0;
    if (origin == FC_CUBIN_COMPILED)
        t->compile_ms[t->compiled++] = ms;
    else
        t->cached++;
    if (!json)
        printf("[%3d/%zu] %-52s %s %6.0f ms  %3d regs  %d B spilled\n", t->done, list->count, name,
               origin == FC_CUBIN_COMPILED ? "compiled" : "cached  ", ms, registers, spill_stores);
    fflush(stdout);
}

static void read_results(int fd, const struct fc_variant_list *list, struct tally *t, int json)
{
    char buffer[RESULT_LINE_MAX * 4];
    size_t filled = 0;
    for (;;) {
        ssize_t n = read(fd, buffer + filled, sizeof buffer - filled - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        filled += (size_t)n;
        buffer[filled] = 0;
        char *start = buffer, *newline;
        while ((newline = strchr(start, '\n'))) {
            *newline = 0;
            report_line(start, list, t, json);
            start = newline + 1;
        }
        filled = (size_t)(buffer + filled - start);
        memmove(buffer, start, filled);
    }
}

static void summarize(const struct tally *t, size_t total, double wall, int json)
{
    const double median = t->compiled ? fcjit_median(t->compile_ms, t->compiled) : 0;   /* sorts them */
    const double max = t->compiled ? t->compile_ms[t->compiled - 1] : 0;
    char times[96] = "none compiled";   /* a warm cache: no compile time to speak of */
    if (json && t->compiled)
        snprintf(times, sizeof times, "\"median_compile_ms\": %.1f, \"max_compile_ms\": %.1f", median, max);
    else if (json)
        snprintf(times, sizeof times, "\"median_compile_ms\": null, \"max_compile_ms\": null");
    else if (t->compiled)
        snprintf(times, sizeof times, "%d compiled (median %.0f ms, max %.0f ms each)", t->compiled, median, max);
    if (json)
        printf("{\"kernels\": %zu, \"compiled\": %d, \"cached\": %d, \"failed\": %d, \"spilling\": %d, %s, "
               "\"wall_s\": %.2f}\n", total, t->compiled, t->cached, t->failed, t->spilled, times, wall);
    else
        printf("%zu kernels: %s, %d already cached, %d failed, %d spilling; %.1f s wall\n", total, times, t->cached,
               t->failed, t->spilled, wall);
}

int fcjit_compile_list(const struct fcjit_globals *g, const struct fc_variant_list *variants, int jobs, int force,
                       int quiet)
{
    struct options o;
    memset(&o, 0, sizeof o);
    o.jobs = jobs;
    o.force = force;
    const struct fc_variant_list list = *variants;
    struct fcjit_globals quiet_globals = *g;
    if (quiet)
        quiet_globals.json = 1;   /* no per-kernel lines; the summary goes to stderr below */
    g = &quiet_globals;
    if ((size_t)o.jobs > list.count)
        o.jobs = list.count ? (int)list.count : 1;
    struct tally t = {0};
    t.compile_ms = calloc(list.count + 1, sizeof(double));
    int fds[2];
    if (!t.compile_ms || pipe(fds)) {
        fprintf(stderr, "fcjit precompile: %s\n", strerror(errno));
        free(t.compile_ms);
        return FCJIT_EXIT_ERROR;
    }
    double start = fcjit_seconds_now();
    fflush(stdout);
    for (int w = 0; w < o.jobs; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            _exit(worker(g, &o, &list, w, fds[1]));
        }
        if (pid < 0)
            fprintf(stderr, "fcjit precompile: fork: %s\n", strerror(errno));
    }
    close(fds[1]);
    read_results(fds[0], &list, &t, g->json);
    close(fds[0]);
    while (wait(NULL) > 0)
        ;
    if (t.done < (int)list.count) {   /* a worker died without reporting */
        t.failed += (int)list.count - t.done;
        if (t.first_failure == FC_OK)
            t.first_failure = FC_ERR_INTERNAL;
    }
    if (quiet)
        fprintf(stderr, "compiled %d, %d already cached, %d failed, in %.1f s\n", t.compiled, t.cached, t.failed,
                fcjit_seconds_now() - start);
    else
        summarize(&t, list.count, fcjit_seconds_now() - start, g->json);
    free(t.compile_ms);
    return t.failed ? fcjit_exit_for(t.first_failure) : FCJIT_EXIT_OK;
}

static int print_dry_run(const struct fc_variant_list *list, int json)
{
    if (json)
        printf("{\"kernels\": %zu, \"pruned\": %zu, \"variants\": [", list->count, list->pruned);
    for (size_t i = 0; i < list->count; i++) {
        char name[FC_VARIANT_NAME_MAX];
        fc_variant_name(&list->items[i], name);
        printf(json ? "%s\"%s\"" : "%s%s\n", json && i ? ", " : "", name);
    }
    if (json)
        printf("]}\n");
    else
        printf("%zu kernels would be compiled or found cached (%zu candidates of the spec pruned)\n", list->count,
               list->pruned);
    return FCJIT_EXIT_OK;
}

int fcjit_precompile(int argc, char **argv, const struct fcjit_globals *g)
{
    struct options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed)
        return parsed > 0 ? FCJIT_EXIT_OK : FCJIT_EXIT_USAGE;
    struct fc_variant_list list = {0};
    enum fc_status status = load_variants(&o, &list);
    if (status != FC_OK)
        return fcjit_exit_for(status);
    if (list.count == 0) {
        fprintf(stderr, "fcjit precompile: no variant of the spec can be built for the arch given "
                "(each needs what fc_variant_check allows; e.g. sm90 kernels need sm_90a)\n");
        fc_variant_list_free(&list);
        return FCJIT_EXIT_USAGE;
    }
    int code = o.dry_run ? print_dry_run(&list, g->json) : fcjit_require_writable_cache(g, "precompile");
    if (!o.dry_run && code == FCJIT_EXIT_OK)
        code = fcjit_compile_list(g, &list, o.jobs, o.force, 0);
    fc_variant_list_free(&list);
    return code;
}
