/* fcjit: the FlashCore command line. Each command is one file. */
#ifndef FCJIT_H
#define FCJIT_H

#include "flashcore.h"

/* Exit codes scripts can trust: one rule for every command. Input is checked before a GPU is
 * looked for, so bad input says 2 on any machine. */
enum fcjit_exit {
    FCJIT_EXIT_OK = 0,
    FCJIT_EXIT_FAILED_CHECK = 1,   /* a result was wrong, or the cache holds bad rows */
    FCJIT_EXIT_USAGE = 2,          /* bad input: command line, spec, or a shape/dtype no kernel takes */
    FCJIT_EXIT_NO_ENVIRONMENT = 3, /* no GPU, driver or NVRTC where one is needed */
    FCJIT_EXIT_ERROR = 4,          /* anything else (CUDA error, cache unwritable where it must be, ...) */
};

struct fcjit_globals {
    const char *db_path;           /* --db, else the library's default */
    int no_disk_cache;             /* --no-cache */
    int json;                      /* --json */
};

/* The exit code of a library status: FC_ERR_INVALID_ARG, FC_ERR_UNSUPPORTED and FC_ERR_CONFIG are
 * the input's (2), FC_ERR_NO_DEVICE and FC_ERR_NO_COMPILER the machine's (3), the rest 4. */
int fcjit_exit_for(enum fc_status status);
/* Creates a context with the globals' cache settings; prints the reason and returns NULL on
 * failure, and prints the cache's warning (read only, memory only) if it has one. */
struct fc_context *fcjit_open_context(const struct fcjit_globals *g, int device, enum fc_status *status);
/* For commands whose point is to store (precompile, tune): 0 if the cache can be written (or
 * --no-cache asked for none), else prints why nothing could be stored and returns 4. */
int fcjit_require_writable_cache(const struct fcjit_globals *g, const char *command);
/* Whether -h or --help comes before any "--": then a command prints its help and does nothing
 * else, whatever the other arguments are. */
int fcjit_wants_help(int argc, char **argv);

int fcjit_info(int argc, char **argv, const struct fcjit_globals *g);
int fcjit_cache(int argc, char **argv, const struct fcjit_globals *g);
int fcjit_precompile(int argc, char **argv, const struct fcjit_globals *g);
int fcjit_tune(int argc, char **argv, const struct fcjit_globals *g);
int fcjit_explain(int argc, char **argv, const struct fcjit_globals *g);

/* Parses option --name of `command` as an integer in [low, high] into *out; prints why not and
 * returns -1 otherwise. */
int fcjit_parse_int(const char *command, const char *name, const char *text, long low, long high, int *out);
/* The same for a finite float, and for an unsigned 64-bit integer: the whole text must be the number. */
int fcjit_parse_float(const char *command, const char *name, const char *text, float *out);
int fcjit_parse_u64(const char *command, const char *name, const char *text, unsigned long long *out);
/* A time budget in milliseconds, 0 to FCJIT_MS_MAX (--rep-ms, --warmup-ms). */
#define FCJIT_MS_MAX 60000
int fcjit_parse_ms(const char *command, const char *name, const char *text, float *out);

/* FP8 inputs' descale magnitude where none is given (`run --kv-descale`, tune's FP8 buckets): codes up
 * to ~300 for N(0, 1) values, e4m3's range without saturating. */
#define FCJIT_DEFAULT_KV_DESCALE (1.f / 64)

/* Sequences a --varlen-style list may give. */
#define FCJIT_MAX_SEQUENCES 4096
/* A comma-separated list of lengths >= 0 (option --name of `command`) into out (at most
 * FCJIT_MAX_SEQUENCES); its count, or -1 after saying why. */
int fcjit_parse_lengths(const char *command, const char *name, const char *text, int *out);

/* Monotonic wall time in seconds. */
double fcjit_seconds_now(void);
/* The median of n values (n >= 1), which are sorted in place. */
double fcjit_median(double *values, int n);

/* How fcjit_time_forward times a forward call, as BENCH.md's do_bench does: at least `warmup`
 * untimed and `iters` timed launches, and where warmup_ms or rep_ms is above 0, as many more as take
 * about that many milliseconds (from a first estimate over a few launches; at most FCJIT_TIMED_MAX
 * each). */
struct fcjit_timing {
    int warmup, iters;
    float warmup_ms, rep_ms;
};
#define FCJIT_TIMED_MAX 1000
#define FCJIT_ITERS_MAX 100000   /* run --iters: each timed launch holds two events until the end */

/* The median of the timed launches of the forward call, in ms, and how many were timed (timed may be
 * NULL). Every launch is queued back to back, each timed by its own pair of events, with one
 * synchronization at the end: the GPU never idles between them, as under a benchmark's do_bench (3 + 10
 * launches, each synchronized, read our kernels 10-20% faster than do_bench did on an H200, and
 * ranked some otherwise: PERF_NOTES v41.1). With a scrub buffer
 * (a device pointer, 0: none) of scrub_words 32-bit words rewritten before each launch, no launch
 * finds its inputs in L2. */
enum fc_status fcjit_time_forward(struct fc_context *ctx, const struct fc_attention_params *params,
                                  const struct fcjit_timing *timing, unsigned long long scrub, size_t scrub_words,
                                  double *median_ms, int *timed);

struct fc_variant_list;
/* Compiles (or finds cached) every variant in worker processes; quiet: one summary line on stderr. */
int fcjit_compile_list(const struct fcjit_globals *g, const struct fc_variant_list *list, int jobs, int force,
                       int quiet);
int fcjit_run(int argc, char **argv, const struct fcjit_globals *g);
int fcjit_plan(int argc, char **argv, const struct fcjit_globals *g);
int fcjit_quantize(int argc, char **argv, const struct fcjit_globals *g);

#endif
