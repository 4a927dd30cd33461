/* Tests of the autotuning code that needs no GPU: the tuning-spec reader (src/config.c), bucket
 * and variant names and the TSV row format (src/tuning.c, src/variant.c), the store of
 * measurements that lets a sweep resume (src/cache.c), and the table of winners the forward call
 * looks up: nearest bucket, the database over the shipped layer, rows for another GPU, kernel set
 * or arch left out.
 *
 * Every database lives in a fresh mkdtemp() folder, removed after each case. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache_internal.h"
#include "jit_internal.h"
#include "config_internal.h"
#include "embedded_internal.h"
#include "problem_internal.h"
#include "tuning_internal.h"
#include "variant_internal.h"

#define ERR_MAX 512
#define MSG_MAX 1024
#define LINE_MAX_BYTES 512
#define TEMP_DIR_MAX 1024   /* leaves room in the path buffer for "/t.db" */
#define SPEC_NAME "spec.yaml"
#define ROW_FIELDS 11

/* tuning_db/tune.yaml: dtype x head_dim x causal x seqlen, then dtype x head_dim x causal x gqa x
 * seqlen for GQA 4, then FP8 attention's head_dim x causal x seqlen */
#define SHIPPED_GQA_PROBLEMS (2 * 1 * 2 * 1 * 3)
#define SHIPPED_FP8_PROBLEMS (1 * 3 * 2 * 6)
#define SHIPPED_TUNE_PROBLEMS (2 * 4 * 2 * 6 + SHIPPED_GQA_PROBLEMS + SHIPPED_FP8_PROBLEMS)
#define TOKENS_DEFAULT 16384

/* Real sm_90a candidates of the head_dim 128, causal buckets, and one for another arch. */
#define VARIANT_PINGPONG "sm90_f16_d128_causal_m128n128s2w12p_sm_90a"
#define VARIANT_ONE_CONSUMER "sm90_f16_d128_causal_m64n64s2w8_sm_90a"
#define VARIANT_PLAIN "sm90_f16_d128_causal_m128n128s2w8_sm_90a"
#define VARIANT_NONCAUSAL "sm90_f16_d128_m128n128s2w12p_sm_90a"
#define VARIANT_SM80 "sm80_f16_d128_causal_m128n64s2w8_sm_80"

#define GPU_A "GPU A"
#define GPU_B "GPU B"
#define SM_COUNT 132
#define DRIVER "13.0"

/* ---- helpers ---- */

static void assert_lists_empty(const struct fc_variant_list *variants, const struct fc_tune_problem_list *problems)
{
    assert_null(variants->items);
    assert_int_equal(variants->count, 0);
    assert_int_equal(variants->pruned, 0);
    assert_null(problems->items);
    assert_int_equal(problems->count, 0);
    assert_int_equal(problems->capacity, 0);
}

static enum fc_status parse_tune(const char *spec, struct fc_variant_list *variants,
                                 struct fc_tune_problem_list *problems, char *err)
{
    return fc_config_parse_tune(spec, strlen(spec), SPEC_NAME, variants, problems, err, ERR_MAX);
}

/* Parses a tuning spec that must be good, failing with the reader's message if it is not. */
static void parse_tune_good(const char *spec, struct fc_variant_list *variants, struct fc_tune_problem_list *problems)
{
    char err[ERR_MAX] = "";
    enum fc_status status = parse_tune(spec, variants, problems, err);
    if (status != FC_OK)
        fail_msg("expected FC_OK, got %d: %s", (int)status, err);
}

static void assert_problem(const struct fc_tune_problem *p, enum fc_dtype dtype, int head_dim, int causal,
                           int seqlen, int gqa, int tokens)
{
    char name[FC_BUCKET_NAME_MAX];
    fc_bucket_name(p, name);
    if (p->dtype != dtype || p->head_dim != head_dim || p->causal != causal || p->seqlen != seqlen ||
        p->gqa != gqa || p->tokens != tokens)
        fail_msg("got %s tokens %d; expected %s d%d causal %d gqa%d s%d tokens %d", name, p->tokens,
                 fc_dtype_name(dtype), head_dim, causal, gqa, seqlen, tokens);
}

static struct fc_variant default_variant(enum fc_kernel_family family, enum fc_dtype dtype, int head_dim, int causal,
                                         int arch, int arch_specific)
{
    struct fc_variant v;
    memset(&v, 0, sizeof v);
    v.family = family;
    v.dtype = dtype;
    v.head_dim = head_dim;
    v.causal = causal;
    v.arch = arch;
    v.arch_specific = arch_specific;
    fc_variant_defaults(&v);
    return v;
}

/* The kernel-set hash of the embedded templates: what a context without FC_TEMPLATE_DIR keys by. */
static void embedded_kernel_set(char out[FC_KEY_HEX])
{
    struct fc_jit *jit;
    char msg[256];
    assert_int_equal(fc_jit_create(NULL, NULL, &jit, msg, sizeof msg), FC_OK);
    fc_jit_kernel_set_hash(jit, out);
    fc_jit_destroy(jit);
}

static struct fc_tuning_identity identity(const char *gpu_name, const char *kernel_set)
{
    struct fc_tuning_identity id;
    memset(&id, 0, sizeof id);
    snprintf(id.gpu_name, sizeof id.gpu_name, "%s", gpu_name);
    id.sm_count = SM_COUNT;
    snprintf(id.driver, sizeof id.driver, DRIVER);
    snprintf(id.kernel_set, sizeof id.kernel_set, "%s", kernel_set);
    return id;
}

static struct fc_tuning_row tuning_row(const struct fc_tuning_identity *id, const char *bucket, const char *variant,
                                       double median_ms, int passed_check)
{
    struct fc_tuning_row row;
    memset(&row, 0, sizeof row);
    row.id = *id;
    snprintf(row.bucket, sizeof row.bucket, "%s", bucket);
    snprintf(row.variant, sizeof row.variant, "%s", variant);
    row.median_ms = median_ms;
    row.tflops = 100. / median_ms;
    row.passed_check = passed_check;
    snprintf(row.measured_at, sizeof row.measured_at, "2025-01-02T03:04:05Z");
    return row;
}

/* An f16 problem with only what the lookup reads filled. */
static struct fc_problem problem_of(int head_dim, int causal, int seqlen_q, int seqlen_k, int heads_q, int heads_kv)
{
    struct fc_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = FC_F16;
    p.batch = 1;
    p.head_dim = head_dim;
    p.mask.causal = causal;
    p.seqlen_q = seqlen_q;
    p.seqlen_k = seqlen_k;
    p.heads_q = heads_q;
    p.heads_kv = heads_kv;
    return p;
}

struct temp {
    char dir[TEMP_DIR_MAX];
    char db[TEMP_DIR_MAX + 8];   /* <dir>/t.db */
    struct fc_cache *cache;
};

static int temp_setup(void **state)
{
    struct temp *t = calloc(1, sizeof *t);
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (!t || snprintf(t->dir, sizeof t->dir, "%s/fc_test_tuning_XXXXXX", tmp) >= (int)sizeof t->dir ||
        !mkdtemp(t->dir)) {
        free(t);
        return -1;
    }
    snprintf(t->db, sizeof t->db, "%s/t.db", t->dir);
    char msg[MSG_MAX] = "";
    if (fc_cache_open(t->db, &t->cache, msg, sizeof msg) != FC_OK) {
        fprintf(stderr, "fc_cache_open(%s): %s\n", t->db, msg);
        rmdir(t->dir);
        free(t);
        return -1;
    }
    *state = t;
    return 0;
}

static int remove_entry(const char *path, const struct stat *info, int type, struct FTW *ftw)
{
    (void)info, (void)type, (void)ftw;
    return remove(path);
}

static int temp_teardown(void **state)
{
    struct temp *t = *state;
    fc_cache_close(t->cache);
    nftw(t->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(t);
    return 0;
}

static void put(struct fc_cache *cache, const struct fc_tuning_row *row)
{
    char msg[MSG_MAX] = "";
    enum fc_status status = fc_tuning_put(cache, row, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_tuning_put: %d: %s", (int)status, msg);
}

static int has(struct fc_cache *cache, const struct fc_tuning_identity *id, const char *bucket, const char *variant)
{
    char msg[MSG_MAX] = "";
    int found = -1;
    enum fc_status status = fc_tuning_has(cache, id, bucket, variant, &found, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_tuning_has: %d: %s", (int)status, msg);
    return found;
}

static void mark_winner_over(struct fc_cache *cache, const struct fc_tuning_identity *id, const char *bucket,
                             const char *incumbent, double margin)
{
    char msg[MSG_MAX] = "";
    enum fc_status status = fc_tuning_mark_winner(cache, id, bucket, incumbent, margin, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_tuning_mark_winner: %d: %s", (int)status, msg);
}

static void mark_winner(struct fc_cache *cache, const struct fc_tuning_identity *id, const char *bucket)
{
    mark_winner_over(cache, id, bucket, NULL, 0.);
}

#define ROWS_MAX 16

struct collected {
    struct fc_tuning_row rows[ROWS_MAX];
    size_t count;
};

static int collect(void *user, const struct fc_tuning_row *row)
{
    struct collected *c = user;
    if (c->count < ROWS_MAX)
        c->rows[c->count] = *row;
    c->count++;
    return 0;
}

static struct collected rows_of(struct fc_cache *cache, int winners_only)
{
    struct collected c;
    memset(&c, 0, sizeof c);
    char msg[MSG_MAX] = "";
    enum fc_status status = fc_tuning_foreach(cache, winners_only, collect, &c, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_tuning_foreach: %d: %s", (int)status, msg);
    return c;
}

static void load(struct fc_tuned_table *table, struct fc_cache *cache, const struct fc_tuning_identity *id, int arch,
                 int arch_specific, const char *shipped)
{
    char msg[MSG_MAX] = "";
    enum fc_status status = fc_tuned_load(table, cache, id, arch, arch_specific, shipped, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_tuned_load: %d: %s", (int)status, msg);
}

/* The table's entry for a bucket name, or NULL. */
static const struct fc_tuned *tuned_entry(const struct fc_tuned_table *table, const char *bucket)
{
    for (size_t i = 0; i < table->count; i++) {
        char name[FC_BUCKET_NAME_MAX];
        fc_bucket_name(&table->items[i].bucket, name);
        if (strcmp(name, bucket) == 0)
            return &table->items[i];
    }
    return NULL;
}

static void assert_tuned(const struct fc_tuned *tuned, const char *bucket, const char *variant, int shipped)
{
    if (!tuned)
        fail_msg("no winner found; expected %s for %s", variant, bucket);
    char bucket_name[FC_BUCKET_NAME_MAX], variant_name[FC_VARIANT_NAME_MAX];
    fc_bucket_name(&tuned->bucket, bucket_name);
    fc_variant_name(&tuned->variant, variant_name);
    assert_string_equal(bucket_name, bucket);
    assert_string_equal(variant_name, variant);
    assert_int_equal(tuned->shipped, shipped);
}

/* ---- the tuning spec ---- */

static void test_shipped_tune_spec(void **state)
{
    (void)state;
    const struct fc_embedded_file *spec = fc_embedded_find(fc_embedded_data, "tune.yaml");
    assert_non_null(spec);
    struct fc_variant_list variants;
    struct fc_tune_problem_list problems;
    char err[ERR_MAX] = "";
    enum fc_status status = fc_config_parse_tune(spec->text, spec->length, "tune.yaml", &variants, &problems, err,
                                                 sizeof err);
    if (status != FC_OK)
        fail_msg("%s", err);
    assert_true(variants.count > 0);
    assert_int_equal(problems.count, SHIPPED_TUNE_PROBLEMS);
    for (size_t i = 0; i < variants.count; i++) {
        char why[256], name[FC_VARIANT_NAME_MAX];
        fc_variant_name(&variants.items[i], name);
        if (fc_variant_check(&variants.items[i], why, sizeof why) != 0)
            fail_msg("variant %s fails fc_variant_check: %s", name, why);
        if (!fc_bucket_measures(&variants.items[i]))   /* the tuner would leave it out */
            fail_msg("no bucket measures candidate %s as named", name);
    }
    /* Every bucket has an sm_90a candidate it measures of its dtype (e4m3: FP8 attention's), head_dim and
     * causality. */
    for (size_t i = 0; i < problems.count; i++) {
        const struct fc_tune_problem *p = &problems.items[i];
        char name[FC_BUCKET_NAME_MAX];
        fc_bucket_name(p, name);
        assert_int_equal(p->tokens, TOKENS_DEFAULT);
        size_t candidates = 0;
        for (size_t j = 0; j < variants.count; j++) {
            const struct fc_variant *v = &variants.items[j];
            candidates += v->arch == 90 && v->arch_specific && fc_bucket_measures(v) &&
                          fc_bucket_dtype(v) == p->dtype && v->head_dim == p->head_dim && v->causal == p->causal;
        }
        if (candidates == 0)
            fail_msg("bucket %s has no sm_90a candidate", name);
    }
    /* The product nests in key order (dtype, head_dim, causal, seqlen, gqa, tokens), the last
     * fastest; the GQA entry comes second, FP8 attention's third. */
    assert_problem(&problems.items[0], FC_F16, 64, 0, 512, 1, TOKENS_DEFAULT);
    assert_problem(&problems.items[1], FC_F16, 64, 0, 1024, 1, TOKENS_DEFAULT);
    assert_problem(&problems.items[2 * 6], FC_F16, 96, 0, 512, 1, TOKENS_DEFAULT);
    assert_problem(&problems.items[2 * 4 * 2 * 6 - 1], FC_BF16, 256, 1, 16384, 1, TOKENS_DEFAULT);
    assert_problem(&problems.items[2 * 4 * 2 * 6], FC_F16, 128, 0, 1024, 4, TOKENS_DEFAULT);
    assert_problem(&problems.items[2 * 4 * 2 * 6 + SHIPPED_GQA_PROBLEMS - 1], FC_BF16, 128, 1, 16384, 4,
                   TOKENS_DEFAULT);
    assert_problem(&problems.items[2 * 4 * 2 * 6 + SHIPPED_GQA_PROBLEMS], FC_E4M3, 64, 0, 512, 1, TOKENS_DEFAULT);
    assert_problem(&problems.items[problems.count - 1], FC_E4M3, 256, 1, 16384, 1, TOKENS_DEFAULT);
    fc_variant_list_free(&variants);
    fc_tune_problem_list_free(&problems);
    assert_lists_empty(&variants, &problems);
}

/* A valid tuning spec, one key per line, so that a case can replace or add a line and know its
 * position: 1 version, 2 variants, 3-7 the variants entry, 8 problems, 9 dtype (the problems
 * entry's mapping starts at 9:5), 10 head_dim, 11 causal, 12 seqlen. */
#define TUNE_HEAD "version: 1\nvariants:\n"
#define VARIANT "  - kernel: sm90\n    arch: sm_90a\n    dtype: f16\n    head_dim: 128\n    causal: true\n"
#define PROBLEMS "problems:\n"
#define P_DTYPE "  - dtype: f16\n"
#define P_HEAD_DIM "    head_dim: 128\n"
#define P_CAUSAL "    causal: true\n"
#define P_SEQLEN "    seqlen: 2048\n"
#define PROBLEM P_DTYPE P_HEAD_DIM P_CAUSAL P_SEQLEN
#define SPEC_HEAD TUNE_HEAD VARIANT PROBLEMS

static void test_scalar_problem_takes_defaults(void **state)
{
    (void)state;
    struct fc_variant_list variants;
    struct fc_tune_problem_list problems;
    parse_tune_good(SPEC_HEAD PROBLEM, &variants, &problems);
    assert_int_equal(problems.count, 1);
    assert_problem(&problems.items[0], FC_F16, 128, 1, 2048, 1, TOKENS_DEFAULT);
    assert_true(variants.count > 0);
    fc_variant_list_free(&variants);
    fc_tune_problem_list_free(&problems);
}

static void test_problem_lists_expand(void **state)
{
    (void)state;
    struct fc_variant_list variants;
    struct fc_tune_problem_list problems;
    /* `problems` before `variants`, flow and block lists, explicit gqa and tokens. */
    parse_tune_good("version: 1\nproblems:\n  - dtype: [f16, bf16]\n    head_dim: 64\n    causal: [true, false]\n"
                    "    seqlen:\n      - 512\n      - 4096\n    gqa: [1, 8]\n    tokens: 8192\n"
                    "variants:\n" VARIANT, &variants, &problems);
    assert_int_equal(problems.count, 2 * 2 * 2 * 2);
    assert_problem(&problems.items[0], FC_F16, 64, 1, 512, 1, 8192);
    assert_problem(&problems.items[1], FC_F16, 64, 1, 512, 8, 8192);
    assert_problem(&problems.items[2], FC_F16, 64, 1, 4096, 1, 8192);
    assert_problem(&problems.items[4], FC_F16, 64, 0, 512, 1, 8192);
    assert_problem(&problems.items[15], FC_BF16, 64, 0, 4096, 8, 8192);
    fc_variant_list_free(&variants);
    fc_tune_problem_list_free(&problems);
}

static void test_duplicate_buckets_collapse(void **state)
{
    (void)state;
    struct fc_variant_list variants;
    struct fc_tune_problem_list problems;
    /* Repeats within a list, between spellings (fp16 and f16, 1 and true) and between entries,
     * and explicit values equal to the defaults, all name the same buckets. */
    parse_tune_good(SPEC_HEAD PROBLEM
                    "  - dtype: [fp16, f16]\n    head_dim: 128\n    causal: [1, true]\n"
                    "    seqlen: [2048, 1024, 2048]\n    gqa: 1\n    tokens: 16384\n"
                    "  - dtype: f16\n    head_dim: 128\n    causal: true\n    seqlen: 1024\n    tokens: 4096\n",
                    &variants, &problems);
    assert_int_equal(problems.count, 3);
    assert_problem(&problems.items[0], FC_F16, 128, 1, 2048, 1, TOKENS_DEFAULT);   /* first appearance order */
    assert_problem(&problems.items[1], FC_F16, 128, 1, 1024, 1, TOKENS_DEFAULT);
    assert_problem(&problems.items[2], FC_F16, 128, 1, 1024, 1, 4096);   /* another timed size: kept */
    fc_variant_list_free(&variants);
    fc_tune_problem_list_free(&problems);
}

/* A tuning spec that must be refused: where ("line:column") and a phrase of the message. */
struct bad_spec {
    const char *name;
    const char *spec;
    const char *where;
    const char *phrase;
};

static const struct bad_spec BAD_SPECS[] = {
    {"no_problems", TUNE_HEAD VARIANT, "1:1", "a tuning spec needs `problems`"},
    {"problems_is_empty", TUNE_HEAD VARIANT "problems: []\n", "8:11", "`problems` is an empty list"},
    {"problems_is_a_scalar", TUNE_HEAD VARIANT "problems: all\n", "8:11",
     "`problems` must be a list of entries (- dtype: ...), not \"all\""},
    {"problems_is_a_mapping", SPEC_HEAD "  dtype: f16\n", "9:3", "`problems` must be a list of entries"},
    {"problem_is_a_scalar", SPEC_HEAD "  - f16\n", "9:5", "each entry of `problems` must be a mapping"},
    {"missing_seqlen", SPEC_HEAD P_DTYPE P_HEAD_DIM P_CAUSAL, "9:5",
     "missing required key `seqlen` in this problems entry"},
    {"missing_dtype", SPEC_HEAD "  - head_dim: 128\n" P_CAUSAL P_SEQLEN, "9:5", "missing required key `dtype`"},
    {"missing_in_second_problem", SPEC_HEAD PROBLEM "  - dtype: bf16\n" P_HEAD_DIM P_SEQLEN, "13:5",
     "missing required key `causal` in this problems entry"},
    {"unknown_problem_key", SPEC_HEAD PROBLEM "    heads: 16\n", "13:5",
     "unknown key \"heads\" in this problems entry; allowed: dtype, head_dim, causal, seqlen, gqa, tokens"},
    {"duplicate_problem_key", SPEC_HEAD PROBLEM "    seqlen: 4096\n", "13:5",
     "duplicate key `seqlen` in this problems entry (first given at 12:5)"},
    {"unknown_top_key", SPEC_HEAD PROBLEM "name: x\n", "13:1",
     "unknown key \"name\" at the top of the spec; allowed: version, variants, problems"},
    {"missing_variants", "version: 1\n" PROBLEMS PROBLEM, "1:1", "missing required key `variants`"},
    {"gqa_zero", SPEC_HEAD PROBLEM "    gqa: 0\n", "13:10",
     "`gqa` must be a positive integer (1 to 65535), not \"0\""},
    {"gqa_too_large", SPEC_HEAD PROBLEM "    gqa: [4, 128]\n", "13:5",
     "`gqa` 128 is out of range (query heads per K/V head, 1 to 64)"},
    {"seqlen_word", SPEC_HEAD P_DTYPE P_HEAD_DIM P_CAUSAL "    seqlen: 2k\n", "12:13",
     "`seqlen` must be a positive integer (1 to 65535), not \"2k\""},
    {"seqlen_fraction", SPEC_HEAD P_DTYPE P_HEAD_DIM P_CAUSAL "    seqlen: [1024, 2048.5]\n", "12:20",
     "`seqlen` must be a positive integer (1 to 65535), not \"2048.5\""},
    {"seqlen_quoted", SPEC_HEAD P_DTYPE P_HEAD_DIM P_CAUSAL "    seqlen: \"2048\"\n", "12:13",
     "but \"2048\" is quoted"},
    {"tokens_zero", SPEC_HEAD PROBLEM "    tokens: 0\n", "13:13", "`tokens` must be a positive integer"},
    {"head_dim_300", SPEC_HEAD P_DTYPE "    head_dim: 300\n" P_CAUSAL P_SEQLEN, "10:5",
     "`head_dim` 300 is out of range (a multiple of 8 up to 256)"},
    {"head_dim_not_multiple_of_8", SPEC_HEAD P_DTYPE "    head_dim: [64, 100]\n" P_CAUSAL P_SEQLEN, "10:5",
     "`head_dim` 100 is out of range"},
    {"unknown_problem_dtype", SPEC_HEAD "  - dtype: f32\n" P_HEAD_DIM P_CAUSAL P_SEQLEN, "9:12",
     "unknown dtype \"f32\"; accepted: f16, bf16, e4m3"},
    {"causal_yes", SPEC_HEAD P_DTYPE P_HEAD_DIM "    causal: yes\n" P_SEQLEN, "11:13",
     "`causal` must be true or false (or 1 or 0), not \"yes\""},
};

#define BAD_SPEC_COUNT (sizeof BAD_SPECS / sizeof BAD_SPECS[0])

static void test_bad_spec(void **state)
{
    const struct bad_spec *bad = *state;
    /* must be overwritten */
    struct fc_variant_list variants = {(struct fc_variant *)&variants, 7, 3};
    struct fc_tune_problem_list problems = {(struct fc_tune_problem *)&problems, 5, 9};
    char err[ERR_MAX] = "", prefix[64];
    enum fc_status status = parse_tune(bad->spec, &variants, &problems, err);
    snprintf(prefix, sizeof prefix, SPEC_NAME ":%s: ", bad->where);
    if (status != FC_ERR_CONFIG || strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, bad->phrase))
        fail_msg("got status %d and\n  \"%s\"\nexpected FC_ERR_CONFIG and\n  \"%s...%s...\"", (int)status, err,
                 prefix, bad->phrase);
    assert_lists_empty(&variants, &problems);
}

/* ---- names and rows ---- */

static void test_variant_name_round_trip(void **state)
{
    (void)state;
    struct fc_variant variants[] = {
        default_variant(FC_KERNEL_REFERENCE, FC_F16, 64, 0, 80, 0),
        default_variant(FC_KERNEL_REFERENCE, FC_BF16, 128, 1, 90, 1),
        default_variant(FC_KERNEL_SM80, FC_F16, 64, 0, 80, 0),
        default_variant(FC_KERNEL_SM80, FC_BF16, 128, 1, 86, 0),
        default_variant(FC_KERNEL_SM90, FC_F16, 128, 1, 90, 1),   /* ping-pong */
        default_variant(FC_KERNEL_SM90, FC_F16, 128, 0, 90, 1),
        default_variant(FC_KERNEL_SM90, FC_BF16, 64, 1, 90, 1),   /* plain schedule */
        default_variant(FC_KERNEL_SM90, FC_BF16, 256, 0, 90, 1),
        default_variant(FC_KERNEL_DECODE, FC_F16, 128, 0, 90, 0),
        default_variant(FC_KERNEL_DECODE, FC_BF16, 64, 1, 89, 0),
        default_variant(FC_KERNEL_SM90, FC_BF16, 128, 1, 90, 1),   /* a sliding window */
        default_variant(FC_KERNEL_SM80, FC_F16, 96, 0, 80, 0),
        default_variant(FC_KERNEL_DECODE, FC_F16, 64, 1, 80, 0),   /* a softcap */
        default_variant(FC_KERNEL_REFERENCE, FC_BF16, 40, 0, 90, 1),
    };
    variants[7].pingpong = 0;   /* the warp-specialized schedule without ping-pong */
    variants[10].window = variants[11].window = 1;
    variants[12].softcap = variants[13].softcap = variants[13].window = 1;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char name[FC_VARIANT_NAME_MAX], again[FC_VARIANT_NAME_MAX], why[256];
        fc_variant_name(&variants[i], name);
        if (fc_variant_check(&variants[i], why, sizeof why) != 0)
            fail_msg("%s fails fc_variant_check: %s", name, why);
        struct fc_variant parsed;
        if (fc_variant_parse_name(name, &parsed) != 0)
            fail_msg("fc_variant_parse_name refuses %s", name);
        fc_variant_name(&parsed, again);
        assert_string_equal(again, name);
        if (fc_variant_compare(&parsed, &variants[i]) != 0)
            fail_msg("%s parses to another variant", name);
    }
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&variants[4], name);
    assert_string_equal(name, VARIANT_PINGPONG);
    fc_variant_name(&variants[7], name);
    assert_string_equal(name, "sm90_bf16_d256_m128n80s2w12_sm_90a");   /* head_dim 256's 80-key default */
    fc_variant_name(&variants[8], name);
    assert_string_equal(name, "decode_f16_d128_m16n128s2w8_sm_90");
    fc_variant_name(&variants[10], name);   /* a token only where the switch is on */
    assert_string_equal(name, "sm90_bf16_d128_causal_win_m128n128s2w12p_sm_90a");
    fc_variant_name(&variants[11], name);
    assert_string_equal(name, "sm80_f16_d96_win_m128n64s2w8_sm_80");
    fc_variant_name(&variants[12], name);
    assert_string_equal(name, "decode_f16_d64_causal_cap_m16n64s3w4_sm_80");
    fc_variant_name(&variants[13], name);
    assert_string_equal(name, "reference_bf16_d40_win_cap_m16n32s1w4_sm_90a");
    struct fc_variant parsed;
    assert_int_equal(fc_variant_parse_name(VARIANT_PINGPONG, &parsed), 0);
    assert_int_equal(parsed.family, FC_KERNEL_SM90);
    assert_int_equal(parsed.head_dim, 128);
    assert_int_equal(parsed.causal, 1);
    assert_int_equal(parsed.block_m, 128);
    assert_int_equal(parsed.block_n, 128);
    assert_int_equal(parsed.stages, 2);
    assert_int_equal(parsed.warps, 12);
    assert_int_equal(parsed.pingpong, 1);
    assert_int_equal(parsed.arch, 90);
    assert_int_equal(parsed.arch_specific, 1);
}

static void test_variant_name_rejects_malformed(void **state)
{
    (void)state;
    static const char *const BAD[] = {
        "",
        "sm90",
        "sm90_f16_d128",
        "sm90_f16_d128_causal",
        "flash_f16_d128_causal_m128n128s2w12p_sm_90a",      /* unknown family */
        "SM90_f16_d128_causal_m128n128s2w12p_sm_90a",       /* not as written */
        "sm90_fp16_d128_causal_m128n128s2w12p_sm_90a",      /* an alias fc_variant_name never writes */
        "sm90_f32_d128_causal_m128n128s2w12p_sm_90a",
        "sm90_f16_d0128_causal_m128n128s2w12p_sm_90a",
        "sm90_f16_d128_Causal_m128n128s2w12p_sm_90a",
        "sm90_f16_d128_causal_m128n128w12p_sm_90a",         /* no stages */
        "sm90_f16_d128_causal_m128n128s2w12q_sm_90a",
        "sm90_f16_d128_causal_m128n128s2w12pp_sm_90a",
        "sm90_f16_d128_causal_m128n128s2w12p_90a",          /* arch as fc_arch_parse takes, not as written */
        "sm90_f16_d128_causal_m128n128s2w12p_sm_90b",
        "sm90_f16_d128_causal_m128n128s2w12p",
        "sm90_f16_d128_causal_m128n128s2w12p_sm_90a_x",
        "sm90_f16_d128_causal_m128n128s2w12p_sm_90a ",
        " sm90_f16_d128_causal_m128n128s2w12p_sm_90a",
        "sm90_f16_d128_win_causal_m128n128s2w12p_sm_90a",   /* tokens out of order */
        "sm90_f16_d128_causal_win_win_m128n128s2w12p_sm_90a",
        "sm90_f16_d128_causal_window_m128n128s2w12p_sm_90a",
        "sm90_f16_d128_causal_cap_win_m128n128s2w12p_sm_90a",
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        struct fc_variant v;
        if (fc_variant_parse_name(BAD[i], &v) != -1)
            fail_msg("fc_variant_parse_name accepts \"%s\"", BAD[i]);
    }
}

static void test_bucket_name_round_trip(void **state)
{
    (void)state;
    const struct fc_tune_problem buckets[] = {
        {FC_F16, 128, 1, 2048, 1, TOKENS_DEFAULT},
        {FC_BF16, 64, 0, 512, 4, TOKENS_DEFAULT},
        {FC_F16, 256, 1, 16384, 8, TOKENS_DEFAULT},
        {FC_BF16, 8, 0, 1, 64, TOKENS_DEFAULT},
        {FC_E4M3, 128, 1, 4096, 1, TOKENS_DEFAULT},   /* FP8 attention's */
        {FC_E4M3, 64, 0, 512, 4, TOKENS_DEFAULT},
    };
    const char *const names[] = {
        "f16_d128_causal_gqa1_s2048", "bf16_d64_gqa4_s512", "f16_d256_causal_gqa8_s16384", "bf16_d8_gqa64_s1",
        "e4m3_d128_causal_gqa1_s4096", "e4m3_d64_gqa4_s512",
    };
    for (size_t i = 0; i < sizeof buckets / sizeof buckets[0]; i++) {
        char name[FC_BUCKET_NAME_MAX];
        fc_bucket_name(&buckets[i], name);
        assert_string_equal(name, names[i]);
        struct fc_tune_problem parsed;
        if (fc_bucket_parse(name, &parsed) != 0)
            fail_msg("fc_bucket_parse refuses %s", name);
        assert_problem(&parsed, buckets[i].dtype, buckets[i].head_dim, buckets[i].causal, buckets[i].seqlen,
                       buckets[i].gqa, 0);   /* the name does not carry tokens */
    }
    static const char *const BAD[] = {
        "",
        "f16",
        "f16_d128",
        "f16_d128_causal",
        "f16_d128_causal_gqa1",
        "f16_d128_causal_gqa0_s2048",
        "f16_d128_gqa1_s0",
        "f16_d128_gqa-1_s2048",
        "fp16_d128_gqa1_s2048",
        "F16_d128_gqa1_s2048",
        "f32_d128_gqa1_s2048",
        "f16_d128_noncausal_gqa1_s2048",
        "f16_d128_gqa1_causal_s2048",
        "f16_d128_causal_gqa1_s02048",
        "f16_d128_causal_gqa1_s2048x",
        "f16_d128_causal_gqa1_s2048_",
        "f16_d128_causal_gqa1_s2048 ",
        "fp8_d128_causal_gqa1_s4096",   /* an alias fc_dtype_parse takes, not the name */
        "E4M3_d128_causal_gqa1_s4096",
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        struct fc_tune_problem parsed;
        if (fc_bucket_parse(BAD[i], &parsed) != -1)
            fail_msg("fc_bucket_parse accepts \"%s\"", BAD[i]);
    }
    /* A problem's own bucket: the longer sequence, query heads per K/V head. */
    const struct fc_problem decode = problem_of(128, 0, 1, 4096, 32, 8);
    const struct fc_tune_problem bucket = fc_bucket_of(&decode);
    assert_problem(&bucket, FC_F16, 128, 0, 4096, 4, 0);
    /* varlen: the longest sequence's, not the token totals */
    struct fc_problem ragged = problem_of(128, 1, 16384, 16384, 16, 16);
    ragged.varlen = 1;
    ragged.max_seqlen_q = ragged.max_seqlen_k = 1000;
    const struct fc_tune_problem ragged_bucket = fc_bucket_of(&ragged);
    assert_problem(&ragged_bucket, FC_F16, 128, 1, 1000, 1, 0);
    /* FP8 attention: q's dtype, e4m3, whatever the output's (the problem's dtype) */
    struct fc_problem fp8 = problem_of(128, 1, 4096, 4096, 16, 16);
    fp8.dtype = FC_F16;
    fp8.q_fp8 = fp8.kv_fp8 = 1;
    const struct fc_tune_problem fp8_bucket = fc_bucket_of(&fp8);
    assert_problem(&fp8_bucket, FC_E4M3, 128, 1, 4096, 1, 0);
    fp8.dtype = FC_BF16;
    const struct fc_tune_problem fp8_bf16_bucket = fc_bucket_of(&fp8);
    assert_true(memcmp(&fp8_bf16_bucket, &fp8_bucket, sizeof fp8_bucket) == 0);
    /* an FP8 cache beside a 16-bit q: the 16-bit bucket */
    struct fc_problem fp8_cache = problem_of(128, 1, 4096, 4096, 16, 16);
    fp8_cache.kv_fp8 = 1;
    const struct fc_tune_problem cache_bucket = fc_bucket_of(&fp8_cache);
    assert_problem(&cache_bucket, FC_F16, 128, 1, 4096, 1, 0);
}

/* What a bucket measures as named: FP8 attention candidates (bf16 out) under e4m3, the rest under their
 * dtype, and none with a switch buckets do not have. */
static void test_bucket_measures(void **state)
{
    (void)state;
    static const struct {
        const char *variant;
        int measures;
        enum fc_dtype dtype;
    } CASES[] = {
        {VARIANT_PINGPONG, 1, FC_F16},
        {"sm90_bf16_d128_causal_kv8_q8_m128n128s2w12p_sm_90a", 1, FC_E4M3},
        {"sm90_f16_d128_causal_kv8_q8_m128n128s2w12p_sm_90a", 0, FC_E4M3},   /* buckets' FP8 out is bf16 */
        {"sm80_f16_d128_causal_kv8_m128n64s2w8_sm_89", 0, FC_F16},         /* an FP8 cache beside a 16-bit q */
        {"sm90_f16_d128_causal_win_m128n128s2w12p_sm_90a", 0, FC_F16},
        {"sm90_f16_d128_causal_cap_m128n128s2w12p_sm_90a", 0, FC_F16},
        {"sm90_f16_d128_causal_var_m128n128s2w12p_sm_90a", 0, FC_F16},
        {"sm90_f16_d128_causal_var_pg_m128n128s2w12p_sm_90a", 0, FC_F16},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        struct fc_variant v;
        if (fc_variant_parse_name(CASES[i].variant, &v))
            fail_msg("not a variant name: %s", CASES[i].variant);
        if (fc_bucket_measures(&v) != CASES[i].measures || fc_bucket_dtype(&v) != CASES[i].dtype)
            fail_msg("%s: measures %d under %s; expected %d under %s", CASES[i].variant, fc_bucket_measures(&v),
                     fc_dtype_name(fc_bucket_dtype(&v)), CASES[i].measures, fc_dtype_name(CASES[i].dtype));
    }
}

/* The fields of a good row, to replace one at a time. */
static const char *const GOOD_FIELDS[ROW_FIELDS] = {
    GPU_A, "132", DRIVER, "0123456789abcdef", "f16_d128_causal_gqa1_s2048", VARIANT_PINGPONG, "1.250000", "612.500",
    "1", "0", "2025-01-02T03:04:05Z",
};

/* Joins count fields with tabs, newline ended; field `replace` (if in range) is `with`. */
static void row_line(char *out, size_t size, size_t count, size_t replace, const char *with)
{
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < count && used < size; i++) {
        const char *value = i == replace ? with : GOOD_FIELDS[i % ROW_FIELDS];
        used += (size_t)snprintf(out + used, size - used, "%s%s", i ? "\t" : "", value);
    }
    if (used < size)
        snprintf(out + used, size - used, "\n");
}

static void test_tuning_row_round_trip(void **state)
{
    (void)state;
    struct fc_tuning_identity id = identity(GPU_A, "0123456789abcdef");
    struct fc_tuning_row row = tuning_row(&id, "f16_d128_causal_gqa1_s2048", VARIANT_PINGPONG, 1.25, 1);
    row.tflops = 612.5;
    row.winner = 1;
    char line[LINE_MAX_BYTES], again[LINE_MAX_BYTES];
    fc_tuning_row_format(&row, line, sizeof line);
    assert_string_equal(line, GPU_A "\t132\t" DRIVER "\t0123456789abcdef\tf16_d128_causal_gqa1_s2048\t"
                        VARIANT_PINGPONG "\t1.250000\t612.500\t1\t1\t2025-01-02T03:04:05Z\n");
    struct fc_tuning_row parsed;
    assert_int_equal(fc_tuning_row_parse(line, &parsed), 0);
    assert_string_equal(parsed.id.gpu_name, GPU_A);
    assert_int_equal(parsed.id.sm_count, SM_COUNT);
    assert_string_equal(parsed.id.driver, DRIVER);
    assert_string_equal(parsed.id.kernel_set, "0123456789abcdef");
    assert_string_equal(parsed.bucket, "f16_d128_causal_gqa1_s2048");
    assert_string_equal(parsed.variant, VARIANT_PINGPONG);
    assert_true(parsed.median_ms == 1.25);
    assert_true(parsed.tflops == 612.5);
    assert_int_equal(parsed.passed_check, 1);
    assert_int_equal(parsed.winner, 1);
    assert_string_equal(parsed.measured_at, "2025-01-02T03:04:05Z");
    fc_tuning_row_format(&parsed, again, sizeof again);
    assert_string_equal(again, line);
    /* Without the newline, and with a Windows line end, the row reads the same. */
    line[strlen(line) - 1] = 0;
    assert_int_equal(fc_tuning_row_parse(line, &parsed), 0);
    assert_string_equal(parsed.measured_at, "2025-01-02T03:04:05Z");
    row_line(line, sizeof line, ROW_FIELDS, ROW_FIELDS, NULL);
    snprintf(line + strlen(line) - 1, 3, "\r\n");
    assert_int_equal(fc_tuning_row_parse(line, &parsed), 0);
    assert_string_equal(parsed.measured_at, "2025-01-02T03:04:05Z");
}

static void test_tuning_row_rejects_bad_rows(void **state)
{
    (void)state;
    static const struct {
        size_t field;
        const char *value;
    } BAD[] = {
        {1, "abc"}, {1, "0"}, {1, "-132"}, {1, "132x"}, {1, ""},
        {4, "f16_d128"}, {4, "f16_d128_causal_gqa0_s2048"}, {4, ""},
        {5, "flash_f16_d128_causal_m128n128s2w12p_sm_90a"}, {5, "sm90_f16_d128_causal"}, {5, ""},
        {6, "abc"}, {6, "0"}, {6, "-1.0"}, {6, "1.25ms"}, {6, ""},
        {7, "fast"}, {7, ""},
        {8, "2"}, {8, "yes"}, {8, "-1"}, {8, ""},
        {9, "2"}, {9, "true"}, {9, ""},
        {1, " 132"}, {6, "inf"}, {6, "nan"},
        {2, "a driver name far longer than the thirty-two bytes it has"},
    };
    char line[LINE_MAX_BYTES];
    struct fc_tuning_row row;
    row_line(line, sizeof line, ROW_FIELDS, ROW_FIELDS, NULL);
    assert_int_equal(fc_tuning_row_parse(line, &row), 0);   /* the good row the cases change */
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        row_line(line, sizeof line, ROW_FIELDS, BAD[i].field, BAD[i].value);
        if (fc_tuning_row_parse(line, &row) != -1)
            fail_msg("fc_tuning_row_parse accepts field %zu = \"%s\":\n%s", BAD[i].field, BAD[i].value, line);
    }
    /* A candidate that failed its check is stored without a time, and exports and imports as such;
     * it can never be a winner. */
    char failed[LINE_MAX_BYTES];
    snprintf(failed, sizeof failed, "%s\t132\t%s\t0123456789abcdef\tf16_d128_causal_gqa1_s2048\t%s\t0.000000\t0.000\t0\t0\t"
             "2025-01-02T03:04:05Z\n", GPU_A, DRIVER, VARIANT_PINGPONG);
    assert_int_equal(fc_tuning_row_parse(failed, &row), 0);
    assert_int_equal(row.passed_check, 0);
    char failed_winner[LINE_MAX_BYTES];
    snprintf(failed_winner, sizeof failed_winner, "%s", failed);
    *strstr(failed_winner, "\t0\t0\t2025") = 0;
    strcat(failed_winner, "\t0\t1\t2025-01-02T03:04:05Z\n");
    assert_int_equal(fc_tuning_row_parse(failed_winner, &row), -1);
    /* Too few fields, and too many. */
    for (size_t count = 0; count < ROW_FIELDS + 3; count++) {
        if (count == ROW_FIELDS)
            continue;
        row_line(line, sizeof line, count, ROW_FIELDS + 3, NULL);
        if (fc_tuning_row_parse(line, &row) != -1)
            fail_msg("fc_tuning_row_parse accepts %zu fields:\n%s", count, line);
    }
}

/* ---- storage and resume ---- */

#define BUCKET "f16_d128_causal_gqa1_s2048"

static void test_store_resume_and_winner(void **state)
{
    struct temp *t = *state;
    char kernel_set[FC_KEY_HEX];
    embedded_kernel_set(kernel_set);
    const struct fc_tuning_identity id = identity(GPU_A, kernel_set);
    /* The fastest failed its check: it must not win. */
    const struct fc_tuning_row rows[] = {
        tuning_row(&id, BUCKET, VARIANT_PINGPONG, 0.5, 0),
        tuning_row(&id, BUCKET, VARIANT_ONE_CONSUMER, 1.5, 1),
        tuning_row(&id, BUCKET, VARIANT_PLAIN, 1.0, 1),
    };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(has(t->cache, &id, BUCKET, rows[i].variant), 0);
        put(t->cache, &rows[i]);
        assert_int_equal(has(t->cache, &id, BUCKET, rows[i].variant), 1);
    }
    /* Another variant, bucket, driver or GPU has not been measured. */
    struct fc_tuning_identity other_driver = id, other_gpu = id;
    snprintf(other_driver.driver, sizeof other_driver.driver, "12.8");
    snprintf(other_gpu.gpu_name, sizeof other_gpu.gpu_name, GPU_B);
    assert_int_equal(has(t->cache, &id, BUCKET, VARIANT_NONCAUSAL), 0);
    assert_int_equal(has(t->cache, &id, "f16_d128_causal_gqa1_s4096", VARIANT_PLAIN), 0);
    assert_int_equal(has(t->cache, &other_driver, BUCKET, VARIANT_PLAIN), 0);
    assert_int_equal(has(t->cache, &other_gpu, BUCKET, VARIANT_PLAIN), 0);

    assert_int_equal(rows_of(t->cache, 1).count, 0);
    mark_winner(t->cache, &id, BUCKET);
    struct collected winners = rows_of(t->cache, 1);
    assert_int_equal(winners.count, 1);
    assert_string_equal(winners.rows[0].variant, VARIANT_PLAIN);
    assert_string_equal(winners.rows[0].bucket, BUCKET);
    assert_int_equal(winners.rows[0].winner, 1);
    assert_int_equal(winners.rows[0].id.sm_count, SM_COUNT);
    assert_string_equal(winners.rows[0].id.kernel_set, kernel_set);
    assert_string_equal(winners.rows[0].measured_at, "2025-01-02T03:04:05Z");

    /* Measuring a variant again replaces its row; the next marking moves the win. */
    struct fc_tuning_row again = tuning_row(&id, BUCKET, VARIANT_ONE_CONSUMER, 0.75, 1);
    put(t->cache, &again);
    struct collected all = rows_of(t->cache, 0);
    assert_int_equal(all.count, 3);
    size_t one_consumer = 0;
    for (size_t i = 0; i < all.count; i++) {
        if (strcmp(all.rows[i].variant, VARIANT_ONE_CONSUMER) == 0) {
            one_consumer++;
            assert_true(all.rows[i].median_ms == 0.75);
        }
    }
    assert_int_equal(one_consumer, 1);
    mark_winner(t->cache, &id, BUCKET);
    winners = rows_of(t->cache, 1);
    assert_int_equal(winners.count, 1);
    assert_string_equal(winners.rows[0].variant, VARIANT_ONE_CONSUMER);
}

/* The heuristic's choice (the incumbent) keeps the win unless a candidate beats it by more than
 * the margin; one that failed its check or was never measured gives way to the fastest. */
static void test_incumbent_keeps_a_win_within_the_margin(void **state)
{
    struct temp *t = *state;
    char kernel_set[FC_KEY_HEX];
    embedded_kernel_set(kernel_set);
    const struct fc_tuning_identity id = identity(GPU_A, kernel_set);
    const struct fc_tuning_row rows[] = {
        tuning_row(&id, BUCKET, VARIANT_PINGPONG, 1.00, 1),
        tuning_row(&id, BUCKET, VARIANT_PLAIN, 1.015, 1),       /* 1.5% slower */
        tuning_row(&id, BUCKET, VARIANT_ONE_CONSUMER, 1.10, 1), /* 10% slower */
        tuning_row(&id, BUCKET, VARIANT_NONCAUSAL, 0.90, 0),    /* fastest, but failed its check */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        put(t->cache, &rows[i]);
    const struct { const char *incumbent; double margin; const char *winner; } CASES[] = {
        {VARIANT_PLAIN, 0.02, VARIANT_PLAIN},               /* within 2%: stays */
        {VARIANT_PLAIN, 0.01, VARIANT_PINGPONG},            /* not within 1% */
        {VARIANT_ONE_CONSUMER, 0.02, VARIANT_PINGPONG},     /* 10% slower: replaced */
        {VARIANT_NONCAUSAL, 0.50, VARIANT_PINGPONG},        /* failed: never wins */
        {"sm90_not_measured", 0.02, VARIANT_PINGPONG},
        {NULL, 0.02, VARIANT_PINGPONG},
        {"", 0.02, VARIANT_PINGPONG},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        mark_winner_over(t->cache, &id, BUCKET, CASES[i].incumbent, CASES[i].margin);
        struct collected winners = rows_of(t->cache, 1);
        size_t found = 0;
        for (size_t w = 0; w < winners.count; w++)
            if (strcmp(winners.rows[w].bucket, BUCKET) == 0) {
                found++;
                assert_string_equal(winners.rows[w].variant, CASES[i].winner);
            }
        assert_int_equal(found, 1);
    }
}

/* ---- the table of winners ---- */

#define BUCKET_1K "f16_d128_causal_gqa1_s1024"
#define BUCKET_16K "f16_d128_causal_gqa1_s16384"

/* Stores one measurement and makes it its bucket's winner. */
static void put_winner(struct fc_cache *cache, const struct fc_tuning_identity *id, const char *bucket,
                       const char *variant, double median_ms)
{
    const struct fc_tuning_row row = tuning_row(id, bucket, variant, median_ms, 1);
    put(cache, &row);
    mark_winner(cache, id, bucket);
}

static void test_lookup_takes_the_nearest_bucket(void **state)
{
    struct temp *t = *state;
    char kernel_set[FC_KEY_HEX];
    embedded_kernel_set(kernel_set);
    const struct fc_tuning_identity id = identity(GPU_A, kernel_set);
    put_winner(t->cache, &id, BUCKET_1K, VARIANT_PINGPONG, 0.25);
    put_winner(t->cache, &id, BUCKET_16K, VARIANT_ONE_CONSUMER, 20.);
    struct fc_tuned_table table;
    load(&table, t->cache, &id, 90, 1, NULL);
    assert_int_equal(table.count, 2);
    struct fc_problem p = problem_of(128, 1, 2048, 2048, 16, 16);
    assert_tuned(fc_tuned_find(&table, &p), BUCKET_1K, VARIANT_PINGPONG, 0);
    p = problem_of(128, 1, 9000, 9000, 16, 16);
    assert_tuned(fc_tuned_find(&table, &p), BUCKET_16K, VARIANT_ONE_CONSUMER, 0);
    p = problem_of(128, 1, 1, 9000, 16, 16);   /* decode: the longer sequence decides */
    assert_tuned(fc_tuned_find(&table, &p), BUCKET_16K, VARIANT_ONE_CONSUMER, 0);
    p = problem_of(128, 1, 100, 100, 16, 16);   /* shorter than any bucket */
    assert_tuned(fc_tuned_find(&table, &p), BUCKET_1K, VARIANT_PINGPONG, 0);
    p = problem_of(64, 1, 2048, 2048, 16, 16);
    assert_null(fc_tuned_find(&table, &p));
    p = problem_of(128, 1, 2048, 2048, 16, 4);   /* GQA 4 */
    assert_null(fc_tuned_find(&table, &p));
    p = problem_of(128, 0, 2048, 2048, 16, 16);
    assert_null(fc_tuned_find(&table, &p));
    p = problem_of(128, 1, 2048, 2048, 16, 16);
    p.dtype = FC_BF16;
    assert_null(fc_tuned_find(&table, &p));
    fc_tuned_free(&table);
    assert_null(table.items);
    assert_int_equal(table.count, 0);
}

#define VARIANT_FP8 "sm90_bf16_d128_causal_kv8_q8_m128n64s2w12_sm_90a"
#define VARIANT_FP8_KV "sm90_bf16_d128_causal_kv8_m128n128s2w12p_sm_90a"
#define VARIANT_BF16 "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a"

/* FP8 attention's buckets: an FP8 problem, of either out type, finds the e4m3 bucket's winner; a 16-bit
 * problem does not. A winner its bucket did not measure as named is not loaded: an FP8-attention or
 * FP8-cache candidate in a 16-bit bucket (what the tuner filed before FP8 buckets, timing the 16-bit
 * kernel), a 16-bit one in an e4m3 bucket. */
static void test_lookup_fp8_attention(void **state)
{
    struct temp *t = *state;
    char kernel_set[FC_KEY_HEX];
    embedded_kernel_set(kernel_set);
    const struct fc_tuning_identity id = identity(GPU_A, kernel_set);
    put_winner(t->cache, &id, "e4m3_d128_causal_gqa1_s4096", VARIANT_FP8, 0.5);
    put_winner(t->cache, &id, "bf16_d128_causal_gqa1_s4096", VARIANT_FP8, 0.5);
    put_winner(t->cache, &id, "bf16_d128_causal_gqa1_s1024", VARIANT_FP8_KV, 0.1);
    put_winner(t->cache, &id, "e4m3_d128_causal_gqa1_s16384", VARIANT_BF16, 9.);
    put_winner(t->cache, &id, "bf16_d128_causal_gqa1_s16384", VARIANT_BF16, 9.);
    struct fc_tuned_table table;
    load(&table, t->cache, &id, 90, 1, NULL);
    assert_int_equal(table.count, 2);
    assert_tuned(tuned_entry(&table, "e4m3_d128_causal_gqa1_s4096"), "e4m3_d128_causal_gqa1_s4096", VARIANT_FP8, 0);
    assert_tuned(tuned_entry(&table, "bf16_d128_causal_gqa1_s16384"), "bf16_d128_causal_gqa1_s16384", VARIANT_BF16,
                 0);
    struct fc_problem p = problem_of(128, 1, 16384, 16384, 16, 16);
    p.q_fp8 = p.kv_fp8 = 1;
    p.dtype = FC_BF16;   /* the out type: not in the key */
    assert_tuned(fc_tuned_find(&table, &p), "e4m3_d128_causal_gqa1_s4096", VARIANT_FP8, 0);
    p.dtype = FC_F16;
    assert_tuned(fc_tuned_find(&table, &p), "e4m3_d128_causal_gqa1_s4096", VARIANT_FP8, 0);
    p.q_fp8 = p.kv_fp8 = 0;   /* f16: no bucket */
    assert_null(fc_tuned_find(&table, &p));
    p.dtype = FC_BF16;   /* bf16: its own bucket, never the e4m3 one */
    p.seqlen_q = p.seqlen_k = 4096;
    assert_tuned(fc_tuned_find(&table, &p), "bf16_d128_causal_gqa1_s16384", VARIANT_BF16, 0);
    fc_tuned_free(&table);
}

/* A shipped layer measured on GPU A with other templates (the kernel set does not matter there):
 * a winner for BUCKET_1K, one for a non-causal bucket, and rows that do not apply. */
static void shipped_layer(char *out, size_t size)
{
    const struct fc_tuning_identity shipped_id = identity(GPU_A, "fedcba9876543210");
    const struct fc_tuning_identity shipped_gpu_b = identity(GPU_B, "fedcba9876543210");
    struct fc_tuning_identity fewer_sms = shipped_id;
    fewer_sms.sm_count = 114;
    struct fc_tuning_row rows[] = {
        tuning_row(&shipped_id, BUCKET_1K, VARIANT_PLAIN, 0.2, 1),
        tuning_row(&shipped_id, "f16_d128_gqa1_s4096", VARIANT_NONCAUSAL, 2., 1),
        tuning_row(&shipped_gpu_b, "f16_d128_causal_gqa4_s1024", VARIANT_PLAIN, 2., 1),
        tuning_row(&fewer_sms, "f16_d128_causal_gqa8_s1024", VARIANT_PLAIN, 2., 1),
        tuning_row(&shipped_id, "f16_d128_causal_gqa2_s1024", VARIANT_PLAIN, 2., 1),   /* not a winner */
    };
    size_t used = (size_t)snprintf(out, size, "# gpu_name\tsm_count\t...\n\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0] && used < size; i++) {
        rows[i].winner = i < 4;
        fc_tuning_row_format(&rows[i], out + used, size - used);
        used += strlen(out + used);
    }
    if (used < size)
        snprintf(out + used, size - used, "not a row\n");
}

static void test_database_over_shipped_layer(void **state)
{
    struct temp *t = *state;
    char kernel_set[FC_KEY_HEX], shipped[8 * LINE_MAX_BYTES];
    embedded_kernel_set(kernel_set);
    const struct fc_tuning_identity id = identity(GPU_A, kernel_set);
    put_winner(t->cache, &id, BUCKET_1K, VARIANT_PINGPONG, 0.25);
    put_winner(t->cache, &id, BUCKET_16K, VARIANT_ONE_CONSUMER, 20.);
    shipped_layer(shipped, sizeof shipped);
    struct fc_tuned_table table;
    load(&table, t->cache, &id, 90, 1, shipped);
    assert_int_equal(table.count, 3);
    assert_tuned(tuned_entry(&table, BUCKET_1K), BUCKET_1K, VARIANT_PINGPONG, 0);   /* the database's */
    assert_true(tuned_entry(&table, BUCKET_1K)->median_ms == 0.25);
    assert_tuned(tuned_entry(&table, BUCKET_16K), BUCKET_16K, VARIANT_ONE_CONSUMER, 0);
    assert_tuned(tuned_entry(&table, "f16_d128_gqa1_s4096"), "f16_d128_gqa1_s4096", VARIANT_NONCAUSAL, 1);
    /* the reason dates the measurement, so `fcjit explain` shows how old a winner is */
    assert_non_null(strstr(tuned_entry(&table, "f16_d128_gqa1_s4096")->reason, "shipped winners measured 2025-01-02)"));
    assert_non_null(strstr(tuned_entry(&table, BUCKET_1K)->reason, "0.250 ms, measured "));
    struct fc_problem p = problem_of(128, 0, 3000, 3000, 16, 16);
    assert_tuned(fc_tuned_find(&table, &p), "f16_d128_gqa1_s4096", VARIANT_NONCAUSAL, 1);
    p = problem_of(128, 1, 1024, 1024, 16, 4);   /* GPU B's shipped GQA 4 winner */
    assert_null(fc_tuned_find(&table, &p));
    p = problem_of(128, 1, 1024, 1024, 16, 8);   /* the 114-SM part's GQA 8 winner */
    assert_null(fc_tuned_find(&table, &p));
    fc_tuned_free(&table);

    /* The shipped layer alone, without a database. */
    load(&table, NULL, &id, 90, 1, shipped);
    assert_int_equal(table.count, 2);
    assert_tuned(tuned_entry(&table, BUCKET_1K), BUCKET_1K, VARIANT_PLAIN, 1);
    fc_tuned_free(&table);
}

/* Of winners measured under other drivers only, the newest applies; one under this process's
 * driver beats both. */
static void test_newest_other_driver_then_own_driver(void **state)
{
    struct temp *t = *state;
    char kernel_set[FC_KEY_HEX];
    embedded_kernel_set(kernel_set);
    const struct fc_tuning_identity id = identity(GPU_A, kernel_set);
    struct fc_tuning_identity old_driver = id, newer_driver = id;
    snprintf(old_driver.driver, sizeof old_driver.driver, "12.8");
    snprintf(newer_driver.driver, sizeof newer_driver.driver, "12.4");
    struct fc_tuning_row fast_old = tuning_row(&old_driver, BUCKET_1K, VARIANT_ONE_CONSUMER, 1., 1);
    snprintf(fast_old.measured_at, sizeof fast_old.measured_at, "2024-01-01T00:00:00Z");
    struct fc_tuning_row slow_new = tuning_row(&newer_driver, BUCKET_1K, VARIANT_PINGPONG, 5., 1);
    snprintf(slow_new.measured_at, sizeof slow_new.measured_at, "2025-06-01T00:00:00Z");
    put(t->cache, &fast_old);
    mark_winner(t->cache, &old_driver, BUCKET_1K);
    put(t->cache, &slow_new);
    mark_winner(t->cache, &newer_driver, BUCKET_1K);
    struct fc_tuned_table table;
    load(&table, t->cache, &id, 90, 1, NULL);
    assert_tuned(tuned_entry(&table, BUCKET_1K), BUCKET_1K, VARIANT_PINGPONG, 0);
    fc_tuned_free(&table);
    put_winner(t->cache, &id, BUCKET_1K, VARIANT_ONE_CONSUMER, 9.);   /* this driver's own, oldest or not */
    load(&table, t->cache, &id, 90, 1, NULL);
    assert_tuned(tuned_entry(&table, BUCKET_1K), BUCKET_1K, VARIANT_ONE_CONSUMER, 0);
    fc_tuned_free(&table);
}

/* Every row of the shipped layer parses and is a winner that passed its check; for each GPU model
 * in it, the layer loads exactly that model's rows: one winner per bucket. */
static void test_shipped_winners_parse_and_load(void **state)
{
    (void)state;
    const struct fc_embedded_file *f = fc_embedded_find(fc_embedded_data, "winners.tsv");
    assert_non_null(f);
    struct model {
        struct fc_tuning_identity id;
        size_t rows;
    } models[8];
    size_t model_count = 0, rows = 0;
    for (const char *line = f->text; line && *line;) {
        struct fc_tuning_row row;
        if (*line != '#') {
            if (fc_tuning_row_parse(line, &row))
                fail_msg("winners.tsv: not a row: %.200s", line);
            assert_true(row.winner && row.passed_check);
            size_t m = 0;
            while (m < model_count && (strcmp(models[m].id.gpu_name, row.id.gpu_name) != 0 ||
                                       models[m].id.sm_count != row.id.sm_count))
                m++;
            if (m == model_count) {
                assert_true(model_count < sizeof models / sizeof models[0]);
                models[model_count++] = (struct model){row.id, 0};
            }
            models[m].rows++;
            rows++;
        }
        const char *next = strchr(line, '\n');
        line = next ? next + 1 : NULL;
    }
    if (rows == 0)
        skip();   /* nothing shipped yet */
    for (size_t m = 0; m < model_count; m++) {
        struct fc_tuning_identity id = models[m].id;
        snprintf(id.kernel_set, sizeof id.kernel_set, "not-this-set");   /* the shipped layer ignores it */
        struct fc_tuned_table table;
        char msg[MSG_MAX] = "";
        assert_int_equal(fc_tuned_load(&table, NULL, &id, 90, 1, f->text, msg, sizeof msg), FC_OK);
        assert_int_equal(table.count, models[m].rows);
        for (size_t i = 0; i < table.count; i++)
            assert_true(table.items[i].shipped);
        fc_tuned_free(&table);
    }
}

static void test_rows_for_another_setup_are_left_out(void **state)
{
    struct temp *t = *state;
    char kernel_set[FC_KEY_HEX];
    embedded_kernel_set(kernel_set);
    const struct fc_tuning_identity id = identity(GPU_A, kernel_set);
    const struct fc_tuning_identity stale = identity(GPU_A, "0123456789abcdef");
    const struct fc_tuning_identity gpu_b = identity(GPU_B, kernel_set);
    struct fc_tuning_identity fewer_sms = id;
    fewer_sms.sm_count = 114;
    put_winner(t->cache, &id, BUCKET_1K, VARIANT_PINGPONG, 0.25);
    put_winner(t->cache, &stale, "f16_d128_causal_gqa1_s4096", VARIANT_PLAIN, 2.);
    put_winner(t->cache, &gpu_b, "f16_d128_causal_gqa4_s4096", VARIANT_PLAIN, 2.);
    put_winner(t->cache, &fewer_sms, "f16_d128_causal_gqa8_s4096", VARIANT_PLAIN, 2.);
    put_winner(t->cache, &id, "f16_d128_causal_gqa1_s8192", VARIANT_SM80, 9.);
    assert_int_equal(rows_of(t->cache, 1).count, 5);
    struct fc_tuned_table table;
    load(&table, t->cache, &id, 90, 1, NULL);
    assert_int_equal(table.count, 1);
    assert_tuned(tuned_entry(&table, BUCKET_1K), BUCKET_1K, VARIANT_PINGPONG, 0);
    assert_null(tuned_entry(&table, "f16_d128_causal_gqa1_s4096"));   /* another kernel set */
    assert_null(tuned_entry(&table, "f16_d128_causal_gqa4_s4096"));   /* another GPU */
    assert_null(tuned_entry(&table, "f16_d128_causal_gqa8_s4096"));   /* another SM count */
    assert_null(tuned_entry(&table, "f16_d128_causal_gqa1_s8192"));   /* an sm_80 kernel */
    fc_tuned_free(&table);
    /* The sm_80 winner is a good row: loading for sm_80 takes it, and only it. */
    load(&table, t->cache, &id, 80, 0, NULL);
    assert_int_equal(table.count, 1);
    assert_tuned(tuned_entry(&table, "f16_d128_causal_gqa1_s8192"), "f16_d128_causal_gqa1_s8192", VARIANT_SM80, 0);
    fc_tuned_free(&table);
    /* Nor are sm_90a kernels sm_90's (no "a"). */
    load(&table, t->cache, &id, 90, 0, NULL);
    assert_int_equal(table.count, 0);
    fc_tuned_free(&table);
}

int main(void)
{
    static const struct CMUnitTest GOOD_TESTS[] = {
        cmocka_unit_test(test_shipped_tune_spec),
        cmocka_unit_test(test_scalar_problem_takes_defaults),
        cmocka_unit_test(test_problem_lists_expand),
        cmocka_unit_test(test_duplicate_buckets_collapse),
        cmocka_unit_test(test_variant_name_round_trip),
        cmocka_unit_test(test_variant_name_rejects_malformed),
        cmocka_unit_test(test_bucket_name_round_trip),
        cmocka_unit_test(test_bucket_measures),
        cmocka_unit_test(test_tuning_row_round_trip),
        cmocka_unit_test(test_tuning_row_rejects_bad_rows),
        cmocka_unit_test_setup_teardown(test_incumbent_keeps_a_win_within_the_margin, temp_setup, temp_teardown),
        cmocka_unit_test_setup_teardown(test_store_resume_and_winner, temp_setup, temp_teardown),
        cmocka_unit_test_setup_teardown(test_lookup_takes_the_nearest_bucket, temp_setup, temp_teardown),
        cmocka_unit_test_setup_teardown(test_lookup_fp8_attention, temp_setup, temp_teardown),
        cmocka_unit_test_setup_teardown(test_database_over_shipped_layer, temp_setup, temp_teardown),
        cmocka_unit_test_setup_teardown(test_newest_other_driver_then_own_driver, temp_setup, temp_teardown),
        cmocka_unit_test(test_shipped_winners_parse_and_load),
        cmocka_unit_test_setup_teardown(test_rows_for_another_setup_are_left_out, temp_setup, temp_teardown),
    };
    enum { GOOD_TEST_COUNT = sizeof GOOD_TESTS / sizeof GOOD_TESTS[0] };
    static struct CMUnitTest tests[GOOD_TEST_COUNT + BAD_SPEC_COUNT];
    memcpy(tests, GOOD_TESTS, sizeof GOOD_TESTS);
    /* One named test per bad spec, so that a failure says which. */
    for (size_t i = 0; i < BAD_SPEC_COUNT; i++)
        tests[GOOD_TEST_COUNT + i] = (struct CMUnitTest){BAD_SPECS[i].name, test_bad_spec, NULL, NULL,
                                                         (void *)&BAD_SPECS[i]};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
