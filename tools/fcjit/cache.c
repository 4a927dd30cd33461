/* fcjit cache ls|verify|clear|repair|export|import: the kernel cache's file, opened directly (a
 * context would quietly fall back to memory where the file cannot be used; here that is the news). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"
#include "fcjit.h"
#include "tuning_internal.h"

static const char HELP[] =
    "usage: fcjit cache VERB [options]\n"
    "\n"
    "  ls                          one line per cached kernel: arch, NVRTC, registers, shared memory,\n"
    "                              spills, compile time, size, checksum state (--json: one object a line)\n"
    "  verify                      check the file (PRAGMA quick_check) and every cubin's checksum,\n"
    "                              naming each bad row; exit 1 if the file is damaged or a row is bad\n"
    "  clear [--dry-run]           delete every cached kernel (tuning results stay), saying how many\n"
    "                              from which file; --dry-run: only say it\n"
    "  repair                      recover a damaged file: it is moved aside to FILE.damaged-TIME\n"
    "                              (never deleted) and a fresh one is started, with the tuning results\n"
    "                              still readable; a healthy file is left alone\n"
    "  export [--winners] FILE|-   the tuning results (or only the winners) as TSV, to move them to\n"
    "                              another machine or to tuning_db/winners.tsv (the shipped layer)\n"
    "  import FILE|-               tuning results another machine exported\n"
    "\n"
    "The file: --db, else $FC_TUNING_DB, $XDG_CACHE_HOME/flashcore/tuning.db or ~/.cache/flashcore/tuning.db.\n";

enum verb_option { OPT_WINNERS = 1, OPT_DRY_RUN = 2 };

struct verb {
    const char *name;
    unsigned options;   /* the enum verb_option flags it takes */
    int files;          /* how many FILE arguments it takes */
    int writes;         /* needs the file read-write */
    int (*run)(struct fc_cache *cache, const char *file, unsigned options, const struct fcjit_globals *g);
};

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

static int cache_ls(struct fc_cache *cache, const char *file, unsigned options, const struct fcjit_globals *g)
{
    (void)file, (void)options;
    char msg[1024];
    enum fc_status status = fc_cache_foreach(cache, list_row, (void *)g, msg, sizeof msg);
    if (status != FC_OK)
        fprintf(stderr, "fcjit cache ls: %s (`fcjit cache verify` names the bad rows)\n", msg);
    return fcjit_exit_for(status);
}

/* Prints each bad row as it is found; with --json they go to a "bad" list, printed in one object
 * with the counts once these are known. */
struct bad_rows {
    const struct fcjit_globals *g;
    FILE *json;   /* a memory stream */
    int count;
};

static void json_escaped(FILE *out, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if ((unsigned char)*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
}

static void note_bad_row(void *user, const char *key, const char *name, const char *problem)
{
    struct bad_rows *bad = user;
    if (!bad->g->json) {
        printf("bad row: %s (key %s): %s\n", name[0] ? name : "(name unreadable)", key, problem);
        return;
    }
    if (!bad->json)
        return;
    fprintf(bad->json, "%s{\"key\": \"%s\", \"name\": \"", bad->count++ ? ", " : "", key);
    json_escaped(bad->json, name);
    fputs("\", \"problem\": \"", bad->json);
    json_escaped(bad->json, problem);
    fputs("\"}", bad->json);
}

static int cache_verify(struct fc_cache *cache, const char *file, unsigned options, const struct fcjit_globals *g)
{
    (void)file, (void)options;
    struct fc_cache_health h;
    char msg[1024], *list = NULL;
    size_t list_length = 0;
    struct bad_rows bad = {g, g->json ? open_memstream(&list, &list_length) : NULL, 0};
    enum fc_status status = fc_cache_check(cache, note_bad_row, &bad, &h, msg, sizeof msg);
    if (bad.json)
        fclose(bad.json);
    const int damaged = h.damage[0] || h.unreadable;
    if (status != FC_OK)
        fprintf(stderr, "fcjit cache verify: %s\n", msg);
    else if (g->json)
        printf("{\"rows\": %d, \"bad_rows\": %d, \"bad_checksums\": %d, \"unreadable\": %d, \"damaged\": %s, "
               "\"bad\": [%s]}\n", h.kernels, h.bad_checksums + h.unreadable, h.bad_checksums, h.unreadable,
               damaged ? "true" : "false", list ? list : "");
    else
        printf("%s: %d kernels, %d with a bad checksum%s, %d unreadable\n", fc_cache_path(cache), h.kernels,
               h.bad_checksums, h.bad_checksums ? " (recompiled at next use; `fcjit precompile` now)" : "",
               h.unreadable);
    if (status == FC_OK && damaged && !g->json)
        printf("the file is damaged (%s); fix: `fcjit cache repair` moves it aside and starts a fresh one\n",
               h.damage[0] ? h.damage : "rows cannot be read");
    free(list);
    if (status != FC_OK)
        return fcjit_exit_for(status);
    return damaged || h.bad_checksums ? FCJIT_EXIT_FAILED_CHECK : FCJIT_EXIT_OK;
}

static int cache_clear(struct fc_cache *cache, const char *file, unsigned options, const struct fcjit_globals *g)
{
    (void)file;
    const int dry_run = (options & OPT_DRY_RUN) != 0;
    long long kernels = 0, bytes = 0, tuning = 0;
    char msg[1024];
    enum fc_status status = fc_cache_count(cache, &kernels, &bytes, &tuning, msg, sizeof msg);
    int deleted = 0;
    if (status == FC_OK && !dry_run)
        status = fc_cache_clear(cache, &deleted, msg, sizeof msg);
    if (status != FC_OK) {
        fprintf(stderr, "fcjit cache clear: %s (a damaged file: `fcjit cache repair`)\n", msg);
        return fcjit_exit_for(status);
    }
    if (g->json)
        printf("{\"path\": \"%s\", \"%s\": %lld, \"bytes\": %lld, \"tuning_results_kept\": %lld}\n",
               fc_cache_path(cache), dry_run ? "would_delete" : "deleted", dry_run ? kernels : deleted, bytes, tuning);
    else
        printf("%s %lld cached kernels (%.1f MiB) from %s; its %lld tuning results stay\n",
               dry_run ? "would delete" : "deleted", dry_run ? kernels : deleted, bytes / 1048576.0,
               fc_cache_path(cache), tuning);
    return FCJIT_EXIT_OK;
}

struct export_state {
    FILE *out;
    int rows;
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
static int cache_export(struct fc_cache *cache, const char *path, unsigned options, const struct fcjit_globals *g)
{
    const int winners_only = (options & OPT_WINNERS) != 0;
    struct export_state e = {strcmp(path, "-") ? fopen(path, "w") : stdout, 0};
    if (!e.out) {
        fprintf(stderr, "fcjit cache export: %s: %s\n", path, strerror(errno));
        return FCJIT_EXIT_ERROR;
    }
    fprintf(e.out, "# FlashCore tuning results (fcjit cache export%s); columns: gpu_name, sm_count, driver, "
            "kernel_set, bucket, variant, median_ms, tflops, passed_check, winner, measured_at\n",
            winners_only ? " --winners" : "");
    char msg[1024] = "";
    enum fc_status status = fc_tuning_foreach(cache, winners_only, export_row, &e, msg, sizeof msg);
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

/* Reads every row of an export; 0, or an exit code after saying what is wrong. */
static int read_rows(FILE *in, const char *path, struct fc_tuning_row **rows, size_t *count)
{
    size_t capacity = 0;
    char line[2048];
    for (int number = 1; fgets(line, sizeof line, in); number++) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            struct fc_tuning_row *grown = realloc(*rows, capacity * sizeof *grown);
            if (!grown)
                return FCJIT_EXIT_ERROR;
            *rows = grown;
        }
        if (fc_tuning_row_parse(line, &(*rows)[*count])) {
            fprintf(stderr, "fcjit cache import: %s:%d: not a tuning row (11 tab-separated fields: gpu_name, "
                    "sm_count, driver, kernel_set, bucket, variant, median_ms, tflops, passed_check, winner, "
                    "measured_at); nothing imported\n", path, number);
            return FCJIT_EXIT_USAGE;
        }
        (*count)++;
    }
    return FCJIT_EXIT_OK;
}

/* `cache import FILE|-`: rows another machine exported; every line is checked before any is
 * stored, so a damaged file changes nothing. */
static int cache_import(struct fc_cache *cache, const char *path, unsigned options, const struct fcjit_globals *g)
{
    (void)options;
    FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!in) {
        fprintf(stderr, "fcjit cache import: %s: %s\n", path, strerror(errno));
        return FCJIT_EXIT_USAGE;
    }
    struct fc_tuning_row *rows = NULL;
    size_t count = 0;
    int code = read_rows(in, path, &rows, &count);
    if (in != stdin)
        fclose(in);
    char msg[1024] = "";
    for (size_t i = 0; code == FCJIT_EXIT_OK && i < count; i++) {
        enum fc_status status = fc_tuning_put(cache, &rows[i], msg, sizeof msg);
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

static const struct verb VERBS[] = {
    {"ls", 0, 0, 0, cache_ls},
    {"verify", 0, 0, 0, cache_verify},
    {"clear", OPT_DRY_RUN, 0, 1, cache_clear},
    {"repair", 0, 0, 1, NULL},   /* works on the file, not on an open cache */
    {"export", OPT_WINNERS, 1, 0, cache_export},
    {"import", 0, 1, 1, cache_import},
};

/* The verb's options and FILE; 0, or FCJIT_EXIT_USAGE after saying what is wrong. */
static int parse_verb(int argc, char **argv, const struct verb *v, unsigned *options, const char **file)
{
    static const struct option OPTIONS[] = {
        {"winners", no_argument, 0, OPT_WINNERS}, {"dry-run", no_argument, 0, OPT_DRY_RUN}, {0, 0, 0, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTIONS, NULL)) != -1) {
        if (c == '?' || !(v->options & (unsigned)c)) {
            fprintf(stderr, "fcjit cache %s: unknown option '%s' (`fcjit cache --help` lists each verb's)\n",
                    v->name, argv[optind - 1]);
            return FCJIT_EXIT_USAGE;
        }
        *options |= (unsigned)c;
    }
    if (argc - optind != v->files) {
        if (argc - optind > v->files)
            fprintf(stderr, "fcjit cache %s: unexpected argument '%s'\n", v->name, argv[optind + v->files]);
        else
            fprintf(stderr, "fcjit cache %s: give a file (or - for standard %s)\n", v->name,
                    strcmp(v->name, "export") ? "input" : "output");
        return FCJIT_EXIT_USAGE;
    }
    *file = v->files ? argv[optind] : NULL;
    return FCJIT_EXIT_OK;
}

static int cache_repair(const struct fcjit_globals *g)
{
    char moved_to[4096], msg[8192];
    long long recovered = 0;
    enum fc_status status = fc_cache_repair(g->db_path, moved_to, sizeof moved_to, &recovered, msg, sizeof msg);
    if (status != FC_OK) {
        fprintf(stderr, "fcjit cache repair: %s\n", msg);
        return fcjit_exit_for(status);
    }
    if (g->json)
        printf("{\"repaired\": %s, \"moved_to\": \"%s\", \"tuning_results_recovered\": %lld}\n",
               moved_to[0] ? "true" : "false", moved_to, recovered);
    else if (moved_to[0])
        printf("the damaged cache was moved aside to %s (delete it when you no longer need it); a fresh one "
               "was started with the %lld tuning results that could be read\n", moved_to, recovered);
    else
        printf("the kernel cache is healthy: nothing to repair\n");
    return FCJIT_EXIT_OK;
}

int fcjit_cache(int argc, char **argv, const struct fcjit_globals *g)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (fcjit_wants_help(argc, argv)) {   /* before anything is opened, let alone deleted */
        fputs(HELP, stdout);
        return FCJIT_EXIT_OK;
    }
    if (!*name) {
        fputs(HELP, stderr);
        return FCJIT_EXIT_USAGE;
    }
    const struct verb *v = NULL;
    for (size_t i = 0; i < sizeof VERBS / sizeof VERBS[0]; i++)
        if (!strcmp(name, VERBS[i].name))
            v = &VERBS[i];
    if (!v) {
        fprintf(stderr, "fcjit cache: unknown verb '%s' (ls, verify, clear, repair, export, import)\n", name);
        return FCJIT_EXIT_USAGE;
    }
    unsigned options = 0;
    const char *file = NULL;
    int code = parse_verb(argc - 1, argv + 1, v, &options, &file);
    if (code != FCJIT_EXIT_OK)
        return code;
    if (g->no_disk_cache) {
        fprintf(stderr, "fcjit cache: --no-cache leaves no cache to look at\n");
        return FCJIT_EXIT_USAGE;
    }
    if (!v->run)
        return cache_repair(g);
    struct fc_cache *cache = NULL;
    enum fc_cache_state state;
    char warning[8192];
    enum fc_status status = fc_cache_open_usable(g->db_path, &cache, &state, warning, sizeof warning);
    if (status == FC_OK && (!cache || (v->writes && state != FC_CACHE_READ_WRITE))) {
        fprintf(stderr, "fcjit cache %s: %s\n", v->name,
                warning[0] ? warning : "the kernel cache is a read-only system layer (root's)");
        code = state == FC_CACHE_DAMAGED && !strcmp(v->name, "verify") ? FCJIT_EXIT_FAILED_CHECK : FCJIT_EXIT_ERROR;
    } else if (status != FC_OK) {
        fprintf(stderr, "fcjit cache %s: %s\n", v->name, warning);
        code = fcjit_exit_for(status);
    } else {
        if (warning[0])
            fprintf(stderr, "fcjit: warning: %s\n", warning);
        code = v->run(cache, file, options, g);
    }
    fc_cache_close(cache);
    return code;
}
