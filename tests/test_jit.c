/* Tests of the JIT's cache keys and generated source (src/jit.c): keys are stable, change with
 * everything that changes the binary and with nothing else, and one compile through NVRTC.
 *
 * The template-folder cases copy $FC_SOURCE_ROOT/kernel_templates (meson sets it) into a
 * temporary folder and edit the copy. Cases that compile skip, with the reason, without NVRTC. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "context_internal.h"
#include "jit_internal.h"
#include "nvrtc_internal.h"

#define MSG_MAX 4096
#define KEY_DIGITS 32
#define INCLUDED_TEMPLATE "ptx/warp.cuh"   /* reference.cuh includes it */
#define UNRELATED_TEMPLATE "unrelated.cuh"
#define ELF_MAGIC "\x7f" "ELF"

/* ---- helpers ---- */

static struct fc_variant base_variant(void)
{
    struct fc_variant v;
    memset(&v, 0, sizeof v);
    v.family = FC_KERNEL_REFERENCE;
    v.dtype = FC_F16;
    v.head_dim = 64;
    v.arch = 80;
    fc_variant_defaults(&v);   /* block_m 16, block_n 32, stages 1, warps 4 */
    return v;
}

static struct fc_jit *make_jit(const char *template_dir)
{
    char msg[MSG_MAX] = "";
    struct fc_jit *jit = NULL;
    enum fc_status status = fc_jit_create(template_dir, NULL, &jit, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_jit_create(%s): %d: %s", template_dir ? template_dir : "embedded", (int)status, msg);
    return jit;
}

struct keys {
    char key[FC_KEY_HEX], source_key[FC_KEY_HEX];
};

/* The keys of a variant, failing the test if they cannot be made. */
static struct keys keys_with(struct fc_jit *jit, const struct fc_variant *v, const char *nvrtc_version)
{
    struct keys k;
    char msg[MSG_MAX] = "", why[256];
    if (fc_variant_check(v, why, sizeof why))
        fail_msg("test bug: variant is invalid: %s", why);
    enum fc_status status = fc_jit_keys(jit, v, nvrtc_version, k.key, k.source_key, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_jit_keys: %d: %s", (int)status, msg);
    return k;
}

static struct keys keys_of(struct fc_jit *jit, const struct fc_variant *v)
{
    return keys_with(jit, v, "13.0");
}

static void assert_hex_key(const char *key)
{
    assert_int_equal(strlen(key), KEY_DIGITS);
    assert_int_equal(strspn(key, "0123456789abcdef"), KEY_DIGITS);
}

static int remove_entry(const char *path, const struct stat *info, int type, struct FTW *ftw)
{
    (void)info, (void)type, (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    assert_non_null(file);
    assert_int_equal(fwrite(data, 1, size, file), size);
    assert_int_equal(fclose(file), 0);
}

static char *read_whole(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    assert_int_equal(fseek(file, 0, SEEK_END), 0);
    long n = ftell(file);
    assert_true(n > 0);
    rewind(file);
    char *data = malloc((size_t)n);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, file), (size_t)n);
    fclose(file);
    *size = (size_t)n;
    return data;
}

/* nftw has no user pointer: the copy's source and destination roots. */
static const char *copy_from, *copy_to;

static int copy_entry(const char *path, const struct stat *info, int type, struct FTW *ftw)
{
    (void)ftw;
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s%s", copy_to, path + strlen(copy_from));
    if (type == FTW_D)
        return mkdir(target, 0755) && strcmp(path, copy_from) != 0 ? -1 : 0;
    if (type != FTW_F)
        return 0;
    size_t size;
    char *data = read_whole(path, &size);
    write_file(target, data, size);
    free(data);
    (void)info;
    return 0;
}

/* A temporary folder holding a copy of kernel_templates/ (skips without FC_SOURCE_ROOT). */
#define TEMP_DIR_MAX 1024   /* leaves room in a PATH_MAX buffer for the names under it */

struct templates {
    char dir[TEMP_DIR_MAX];
};

static int copy_templates_setup(void **state)
{
    const char *root = getenv("FC_SOURCE_ROOT");
    if (!root || !*root) {
        print_message("FC_SOURCE_ROOT is not set: run through meson test\n");
        return -1;
    }
    struct templates *t = calloc(1, sizeof *t);
    char source[PATH_MAX];
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(source, sizeof source, "%s/kernel_templates", root);
    if (snprintf(t->dir, sizeof t->dir, "%s/fc_test_jit_XXXXXX", tmp) >= (int)sizeof t->dir ||
        !mkdtemp(t->dir)) {
        free(t);
        return -1;
    }
    copy_from = source;
    copy_to = t->dir;
    if (nftw(source, copy_entry, 16, FTW_PHYS)) {
        remove_tree(t->dir);
        free(t);
        return -1;
    }
    *state = t;
    return 0;
}

static int copy_templates_teardown(void **state)
{
    struct templates *t = *state;
    remove_tree(t->dir);
    free(t);
    return 0;
}

/* Changes one byte of a file of the copy. */
static void flip_one_byte(const struct templates *t, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    size_t size;
    char *data = read_whole(path, &size);
    data[size / 2] ^= 0x01;
    write_file(path, data, size);
    free(data);
}

static void add_file(const struct templates *t, const char *name, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    write_file(path, text, strlen(text));
}

static void require_nvrtc(void)
{
    char why[2048] = "";
    if (fc_nvrtc_load(why, sizeof why) != 0) {
        print_message("skipping: %s\n", why);
        skip();
    }
}

/* ---- key stability ---- */

static void test_keys_are_stable_hex(void **state)
{
    (void)state;
    struct fc_variant v = base_variant();
    struct fc_jit *a = make_jit(NULL), *b = make_jit(NULL);
    struct keys first = keys_of(a, &v), again = keys_of(a, &v), other = keys_of(b, &v);
    assert_hex_key(first.key);
    assert_hex_key(first.source_key);
    assert_string_not_equal(first.key, first.source_key);
    assert_string_equal(first.key, again.key);
    assert_string_equal(first.source_key, again.source_key);
    assert_string_equal(first.key, other.key);
    assert_string_equal(first.source_key, other.source_key);
    fc_jit_destroy(a);
    fc_jit_destroy(b);
}

/* The embedded templates and the folder they were embedded from give the same keys, so a
 * development build (FC_SOURCE_ROOT-style template folder) shares the cache with a release one. */
static void test_embedded_and_folder_keys_agree(void **state)
{
    const struct templates *t = *state;
    struct fc_variant v = base_variant();
    struct fc_jit *embedded = make_jit(NULL), *folder = make_jit(t->dir);
    assert_string_equal(keys_of(embedded, &v).key, keys_of(folder, &v).key);
    char set_embedded[FC_KEY_HEX], set_folder[FC_KEY_HEX];
    fc_jit_kernel_set_hash(embedded, set_embedded);
    fc_jit_kernel_set_hash(folder, set_folder);
    assert_string_equal(set_embedded, set_folder);
    fc_jit_destroy(embedded);
    fc_jit_destroy(folder);
}

/* ---- key sensitivity ---- */

static void assert_key_changes(struct fc_jit *jit, const struct fc_variant *a, const struct fc_variant *b)
{
    struct keys ka = keys_of(jit, a), kb = keys_of(jit, b);
    char name_a[FC_VARIANT_NAME_MAX], name_b[FC_VARIANT_NAME_MAX];
    fc_variant_name(a, name_a);
    fc_variant_name(b, name_b);
    if (strcmp(ka.key, kb.key) == 0 || strcmp(ka.source_key, kb.source_key) == 0)
        fail_msg("%s and %s share a key", name_a, name_b);
}

static void test_each_variant_field_changes_the_key(void **state)
{
    (void)state;
    struct fc_jit *jit = make_jit(NULL);
    const struct fc_variant base = base_variant();
    struct fc_variant v;
    v = base, v.dtype = FC_BF16;   assert_key_changes(jit, &base, &v);
    v = base, v.head_dim = 128;    assert_key_changes(jit, &base, &v);
    v = base, v.causal = 1;        assert_key_changes(jit, &base, &v);
    v = base, v.window = 1;        assert_key_changes(jit, &base, &v);
    v = base, v.softcap = 1;       assert_key_changes(jit, &base, &v);
    v = base, v.block_m = 8;       assert_key_changes(jit, &base, &v);
    v = base, v.block_m = 32;      assert_key_changes(jit, &base, &v);
    v = base, v.warps = 2;         assert_key_changes(jit, &base, &v);
    v = base, v.arch = 86;         assert_key_changes(jit, &base, &v);
    struct fc_variant sm90 = base, sm90a = base;
    sm90.arch = sm90a.arch = 90;
    sm90a.arch_specific = 1;
    assert_key_changes(jit, &base, &sm90);
    assert_key_changes(jit, &sm90, &sm90a);
    fc_jit_destroy(jit);
}

static void test_nvrtc_version_changes_key_not_source_key(void **state)
{
    (void)state;
    struct fc_jit *jit = make_jit(NULL);
    struct fc_variant v = base_variant();
    struct keys old = keys_with(jit, &v, "12.8"), new = keys_with(jit, &v, "13.0");
    assert_string_not_equal(old.key, new.key);
    assert_string_equal(old.source_key, new.source_key);
    fc_jit_destroy(jit);
}

static void test_included_template_changes_key(void **state)
{
    const struct templates *t = *state;
    struct fc_variant v = base_variant();
    struct fc_jit *before = make_jit(t->dir);
    flip_one_byte(t, INCLUDED_TEMPLATE);
    struct fc_jit *after = make_jit(t->dir);
    struct keys kb = keys_of(before, &v), ka = keys_of(after, &v);
    assert_string_not_equal(kb.key, ka.key);
    assert_string_not_equal(kb.source_key, ka.source_key);
    fc_jit_destroy(before);
    fc_jit_destroy(after);
}

static void test_unrelated_template_keeps_key(void **state)
{
    const struct templates *t = *state;
    struct fc_variant v = base_variant();
    struct fc_jit *before = make_jit(t->dir);
    add_file(t, UNRELATED_TEMPLATE, "// not included by any kernel\n#pragma once\n");
    struct fc_jit *after = make_jit(t->dir);
    struct keys kb = keys_of(before, &v), ka = keys_of(after, &v);
    assert_string_equal(kb.key, ka.key);
    assert_string_equal(kb.source_key, ka.source_key);
    fc_jit_destroy(before);
    fc_jit_destroy(after);
}

#define DISTINCT_MAX 128

static void test_many_variants_have_distinct_keys(void **state)
{
    (void)state;
    static const int HEAD_DIMS[] = {64, 128};
    static const int ARCHES[][2] = {{75, 0}, {80, 0}, {86, 0}, {90, 0}, {90, 1}};
    static const int TILES[][2] = {{16, 4}, {8, 4}, {32, 4}};   /* block_m, warps */
    static struct keys keys[DISTINCT_MAX];
    struct fc_jit *jit = make_jit(NULL);
    int n = 0;
    for (int dtype = FC_F16; dtype <= FC_BF16; dtype++)
        for (int causal = 0; causal <= 1; causal++)
            for (int d = 0; d < 2; d++)
                for (int a = 0; a < 5; a++)
                    for (int t = 0; t < 3; t++) {
                        struct fc_variant v = base_variant();
                        v.dtype = (enum fc_dtype)dtype, v.causal = causal, v.head_dim = HEAD_DIMS[d];
                        v.arch = ARCHES[a][0], v.arch_specific = ARCHES[a][1];
                        v.block_m = TILES[t][0], v.warps = TILES[t][1];
                        keys[n++] = keys_of(jit, &v);
                    }
    assert_int_equal(n, 120);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!strcmp(keys[i].key, keys[j].key) || !strcmp(keys[i].source_key, keys[j].source_key))
                fail_msg("variants %d and %d share a key", i, j);
        }
    fc_jit_destroy(jit);
}

/* ---- source ---- */

static void test_source_names_entry_and_head_dim(void **state)
{
    (void)state;
    struct fc_variant v = base_variant(), other = base_variant();
    v.head_dim = 96;
    char source[FC_SOURCE_MAX], other_source[FC_SOURCE_MAX];
    int n = fc_jit_generate_source(&v, source, sizeof source);
    assert_int_equal(n, (int)strlen(source));
    assert_non_null(strstr(source, FC_KERNEL_ENTRY));
    assert_non_null(strstr(source, "96"));
    assert_true(fc_jit_generate_source(&other, other_source, sizeof other_source) > 0);
    assert_null(strstr(other_source, "96"));
    assert_string_not_equal(source, other_source);
}

static void test_source_too_small_buffer_fails(void **state)
{
    (void)state;
    struct fc_variant v = base_variant();
    char source[FC_SOURCE_MAX];
    int n = fc_jit_generate_source(&v, source, sizeof source);
    assert_true(n > 0);
    assert_int_equal(fc_jit_generate_source(&v, source, (size_t)n + 1), n);
    assert_int_equal(fc_jit_generate_source(&v, source, (size_t)n), -1);
    assert_int_equal(fc_jit_generate_source(&v, source, 16), -1);
}

/* ---- template folders ---- */

static void test_missing_template_dir_is_config_error(void **state)
{
    (void)state;
    const char *dir = "/nonexistent/fc_test_jit/kernel_templates";
    char msg[MSG_MAX] = "";
    struct fc_jit *jit = (struct fc_jit *)&msg;   /* must be reset to NULL */
    assert_int_equal(fc_jit_create(dir, NULL, &jit, msg, sizeof msg), FC_ERR_CONFIG);
    assert_null(jit);
    assert_non_null(strstr(msg, dir));
}

static void test_empty_template_dir_is_config_error(void **state)
{
    const struct templates *t = *state;
    char dir[PATH_MAX], msg[MSG_MAX] = "";
    snprintf(dir, sizeof dir, "%s/empty", t->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    struct fc_jit *jit = NULL;
    assert_int_equal(fc_jit_create(dir, NULL, &jit, msg, sizeof msg), FC_ERR_CONFIG);
    assert_null(jit);
    assert_non_null(strstr(msg, dir));
}

static void test_kernel_set_hash_follows_templates(void **state)
{
    const struct templates *t = *state;
    char first[FC_KEY_HEX], same[FC_KEY_HEX], added[FC_KEY_HEX], changed[FC_KEY_HEX];
    struct fc_jit *jit = make_jit(t->dir);
    fc_jit_kernel_set_hash(jit, first);
    fc_jit_destroy(jit);
    jit = make_jit(t->dir);
    fc_jit_kernel_set_hash(jit, same);
    fc_jit_destroy(jit);
    add_file(t, UNRELATED_TEMPLATE, "#pragma once\n");   /* every file counts, included or not */
    jit = make_jit(t->dir);
    fc_jit_kernel_set_hash(jit, added);
    fc_jit_destroy(jit);
    flip_one_byte(t, INCLUDED_TEMPLATE);
    jit = make_jit(t->dir);
    fc_jit_kernel_set_hash(jit, changed);
    fc_jit_destroy(jit);
    assert_hex_key(first);
    assert_string_equal(first, same);
    assert_string_not_equal(first, added);
    assert_string_not_equal(added, changed);
}

/* Tuning results are keyed by the kernel set a context compiles: with FC_TEMPLATE_DIR, the
 * folder's templates, not the embedded ones (they once were keyed by the embedded set). */
static void test_tuning_identity_follows_the_template_dir(void **state)
{
    const struct templates *t = *state;
    flip_one_byte(t, INCLUDED_TEMPLATE);
    char embedded[FC_KEY_HEX], folder[FC_KEY_HEX];
    struct fc_jit *jit = make_jit(NULL);
    fc_jit_kernel_set_hash(jit, embedded);
    fc_jit_destroy(jit);
    jit = make_jit(t->dir);
    fc_jit_kernel_set_hash(jit, folder);
    fc_jit_destroy(jit);
    struct fc_options options;
    fc_options_init(&options);
    options.no_disk_cache = 1;
    options.template_dir = t->dir;
    struct fc_context *ctx;
    assert_int_equal(fc_context_create(FC_DEVICE_NONE, &options, &ctx), FC_OK);
    struct fc_tuning_identity id;
    fc_context_tuning_identity(ctx, &id);
    fc_context_destroy(ctx);
    assert_string_equal(id.kernel_set, folder);
    assert_string_not_equal(id.kernel_set, embedded);
}

/* ---- compiling ---- */

static void test_invalid_variant_is_unsupported(void **state)
{
    (void)state;
    struct fc_jit *jit = make_jit(NULL);
    struct fc_variant v = base_variant();
    v.head_dim = 12;
    struct fc_cubin cubin;
    char msg[MSG_MAX] = "", key[FC_KEY_HEX], source_key[FC_KEY_HEX];
    assert_int_equal(fc_jit_get_cubin(jit, &v, 0, &cubin, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "head_dim 12"));
    assert_null(cubin.record.cubin);
    msg[0] = 0;
    assert_int_equal(fc_jit_keys(jit, &v, "13.0", key, source_key, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "head_dim 12"));
    fc_jit_destroy(jit);
}

static void test_compile_without_cache(void **state)
{
    (void)state;
    require_nvrtc();
    struct fc_jit *jit = make_jit(NULL);
    struct fc_variant v = base_variant();
    struct fc_cubin cubin;
    char msg[MSG_MAX] = "", name[FC_VARIANT_NAME_MAX];
    enum fc_status status = fc_jit_get_cubin(jit, &v, 0, &cubin, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_jit_get_cubin: %d: %s", (int)status, msg);
    struct keys k = keys_with(jit, &v, NULL);
    fc_variant_name(&v, name);
    assert_int_equal(cubin.origin, FC_CUBIN_COMPILED);
    assert_int_equal(cubin.replaced_corrupt, 0);
    assert_true(cubin.record.cubin_size > 4);
    assert_memory_equal(cubin.record.cubin, ELF_MAGIC, 4);
    assert_true(cubin.record.registers > 0);
    assert_int_equal(cubin.record.spill_stores, 0);
    assert_int_equal(cubin.record.smem_dynamic, fc_variant_smem_bytes(&v));
    assert_string_equal(cubin.record.key, k.key);
    assert_string_equal(cubin.record.source_key, k.source_key);
    assert_string_equal(cubin.record.name, name);
    assert_string_equal(cubin.record.arch, "sm_80");
    assert_string_equal(cubin.record.nvrtc_version, fc_nvrtc_version());
    fc_cubin_free(&cubin);
    assert_null(cubin.record.cubin);
    fc_jit_destroy(jit);
}

#define WITH_TEMPLATES(test) \
    cmocka_unit_test_setup_teardown(test, copy_templates_setup, copy_templates_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_are_stable_hex),
        WITH_TEMPLATES(test_embedded_and_folder_keys_agree),
        cmocka_unit_test(test_each_variant_field_changes_the_key),
        cmocka_unit_test(test_nvrtc_version_changes_key_not_source_key),
        WITH_TEMPLATES(test_included_template_changes_key),
        WITH_TEMPLATES(test_unrelated_template_keeps_key),
        cmocka_unit_test(test_many_variants_have_distinct_keys),
        cmocka_unit_test(test_source_names_entry_and_head_dim),
        cmocka_unit_test(test_source_too_small_buffer_fails),
        cmocka_unit_test(test_missing_template_dir_is_config_error),
        WITH_TEMPLATES(test_empty_template_dir_is_config_error),
        WITH_TEMPLATES(test_kernel_set_hash_follows_templates),
        WITH_TEMPLATES(test_tuning_identity_follows_the_template_dir),
        cmocka_unit_test(test_invalid_variant_is_unsupported),
        cmocka_unit_test(test_compile_without_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
