/* The JIT: variant -> translation unit -> (SQLite cache | NVRTC) -> cubin.
 *
 * The cache key hashes everything that changes the binary: the generated source, the text of
 * every template file it includes (transitively), the NVRTC version, the target arch, every
 * compile option and the schema version. Never file times. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "embedded_internal.h"
#include "family_internal.h"
#include "jit_internal.h"
#include "log_internal.h"
#include "nvrtc_internal.h"

#define MAX_TEMPLATES 128
#define MAX_OPTIONS 8
#define INCLUDE_DIRECTIVE "#include \""

struct template_file {
    char *name;   /* relative to the template folder, '/'-separated */
    char *text;
    size_t length;
};

struct fc_jit {
    struct template_file templates[MAX_TEMPLATES];
    int template_count;
    int owns_text;                /* loaded from a folder rather than embedded */
    struct fc_cache *cache;
    const struct fc_logger *logger;
    pthread_mutex_t lock;         /* one compile at a time per process: NVRTC does not scale */
};

/* ---- templates ---- */

static char *read_file(const char *path, size_t *length)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    char *text = NULL;
    if (fseek(file, 0, SEEK_END) == 0) {
        long size = ftell(file);
        rewind(file);
        text = size >= 0 ? malloc((size_t)size + 1) : NULL;
        if (text && fread(text, 1, (size_t)size, file) == (size_t)size) {
            text[size] = 0;
            *length = (size_t)size;
        } else {
            free(text);
            text = NULL;
        }
    }
    fclose(file);
    return text;
}

static struct fc_jit *walking;          /* nftw has no user pointer; guarded by walk_lock */
static const char *walking_root;
static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;

static int add_template_file(const char *path, const struct stat *info, int type, struct FTW *ftw)
{
    (void)info;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    size_t n = strlen(path);
    if (!(n > 4 && strcmp(path + n - 4, ".cuh") == 0) && !(n > 2 && strcmp(path + n - 2, ".h") == 0))
        return 0;
    if (walking->template_count == MAX_TEMPLATES)
        return -1;
    struct template_file *t = &walking->templates[walking->template_count];
    t->text = read_file(path, &t->length);
    t->name = strdup(path + strlen(walking_root) + 1);
    if (!t->text || !t->name)
        return -1;
    walking->template_count++;
    return 0;
}

static enum fc_status load_template_dir(struct fc_jit *jit, const char *dir, char *msg, size_t size)
{
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s", dir);
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        root[--n] = 0;
    pthread_mutex_lock(&walk_lock);
    walking = jit;
    walking_root = root;
    int rc = nftw(root, add_template_file, 16, FTW_PHYS);
    pthread_mutex_unlock(&walk_lock);
    if (rc != 0 || jit->template_count == 0) {
        snprintf(msg, size, "cannot read kernel templates from %s: %s", root,
                 rc ? strerror(errno) : "no .cuh or .h files there");
        return FC_ERR_CONFIG;
    }
    return FC_OK;
}

static int compare_templates(const void *a, const void *b)
{
    return strcmp(((const struct template_file *)a)->name, ((const struct template_file *)b)->name);
}

enum fc_status fc_jit_create(const char *template_dir, struct fc_cache *cache, struct fc_jit **out,
                             char *msg, size_t size)
{
    *out = NULL;
    struct fc_jit *jit = calloc(1, sizeof *jit);
    if (!jit)
        return FC_ERR_NOMEM;
    pthread_mutex_init(&jit->lock, NULL);
    jit->cache = cache;
    if (template_dir && *template_dir) {
        jit->owns_text = 1;
        enum fc_status status = load_template_dir(jit, template_dir, msg, size);
        if (status != FC_OK) {
            fc_jit_destroy(jit);
            return status;
        }
    } else {
        for (const struct fc_embedded_file *f = fc_embedded_templates; f->name; f++) {
            struct template_file *t = &jit->templates[jit->template_count++];
            t->name = (char *)f->name;
            t->text = (char *)f->text;
            t->length = f->length;
        }
    }
    qsort(jit->templates, (size_t)jit->template_count, sizeof jit->templates[0], compare_templates);
    *out = jit;
    return FC_OK;
}

void fc_jit_set_logger(struct fc_jit *jit, const struct fc_logger *logger)
{
    jit->logger = logger;
}

void fc_jit_destroy(struct fc_jit *jit)
{
    if (!jit)
        return;
    if (jit->owns_text)
        for (int i = 0; i < jit->template_count; i++) {
            free(jit->templates[i].name);
            free(jit->templates[i].text);
        }
    pthread_mutex_destroy(&jit->lock);
    free(jit);
}

static const struct template_file *find_template(const struct fc_jit *jit, const char *name, size_t n)
{
    for (int i = 0; i < jit->template_count; i++)
        if (strlen(jit->templates[i].name) == n && strncmp(jit->templates[i].name, name, n) == 0)
            return &jit->templates[i];
    return NULL;
}

/* Marks in used[] every template text includes, transitively. Include paths are relative to
 * the template folder. Returns -1 and names the missing file if one is not there. */
static int mark_includes(const struct fc_jit *jit, const char *text, int used[], char *msg, size_t size)
{
    for (const char *p = strstr(text, INCLUDE_DIRECTIVE); p; p = strstr(p + 1, INCLUDE_DIRECTIVE)) {
        const char *name = p + strlen(INCLUDE_DIRECTIVE);
        const char *end = strchr(name, '"');
        if (!end)
            continue;
        const struct template_file *t = find_template(jit, name, (size_t)(end - name));
        if (!t) {
            snprintf(msg, size, "kernel template \"%.*s\" is included but not there", (int)(end - name), name);
            return -1;
        }
        int index = (int)(t - jit->templates);
        if (!used[index]) {
            used[index] = 1;
            if (mark_includes(jit, t->text, used, msg, size))
                return -1;
        }
    }
    return 0;
}

/* ---- source and keys ---- */

/* The unit: the family's template, its kernel type checked against what the host launches it with
 * (threads, and at most the shared memory the host gives it), one extern "C" entry, and the
 * family's second entry if it has one. The launch bounds are the template's own. */
int fc_jit_generate_source(const struct fc_variant *v, char *out, size_t size)
{
    const struct fc_family *family = fc_family_of(v->family);
    char name[FC_VARIANT_NAME_MAX], type[256];
    if (!family || family->kernel_type(v, type, sizeof type) >= (int)sizeof type)
        return -1;
    fc_variant_name(v, name);
    const int threads = v->warps * 32, smem = fc_variant_smem_bytes(v);
    int n = snprintf(out, size,
        "// FlashCore generated translation unit: %s\n"
        "#include \"%s\"\n"
        "using FcKernel = %s;\n"
        "static_assert(FcKernel::THREADS == %d, \"the host launches %d threads\");\n"
        "static_assert(FcKernel::SMEM_BYTES <= %d, \"the host gives %d bytes of shared memory\");\n"
        "extern \"C\" __global__ void __launch_bounds__(FcKernel::THREADS, FcKernel::MIN_BLOCKS)\n"
        "%s(const __grid_constant__ %s args)\n"
        "{\n"
        "    extern __shared__ __align__(16) char fc_shared[];\n"
        "    FcKernel(args, fc_shared).run();\n"
        "}\n",
        name, family->template_file, type, threads, threads, smem, smem, FC_KERNEL_ENTRY,
        v->paged && family->paged_args_type ? family->paged_args_type
        : v->varlen && family->varlen_args_type ? family->varlen_args_type : family->args_type);
    if (n < 0 || (size_t)n >= size)
        return -1;
    if (family->second_source) {
        int more = family->second_source(v, out + n, size - (size_t)n);
        if (more < 0 || (size_t)more >= size - (size_t)n)
            return -1;
        n += more;
    }
    return n;
}

int fc_jit_compile_options(const struct fc_variant *v, const char *options[], int max)
{
    /* The real targets NVRTC 13 compiles for (nvrtcGetSupportedArchs), and Hopper's "a" target. */
    static const struct { int arch, specific; const char *option; } TARGETS[] = {
        {75, 0, "--gpu-architecture=sm_75"},   {80, 0, "--gpu-architecture=sm_80"},
        {86, 0, "--gpu-architecture=sm_86"},   {87, 0, "--gpu-architecture=sm_87"},
        {88, 0, "--gpu-architecture=sm_88"},   {89, 0, "--gpu-architecture=sm_89"},
        {90, 0, "--gpu-architecture=sm_90"},   {90, 1, "--gpu-architecture=sm_90a"},
        {100, 0, "--gpu-architecture=sm_100"}, {103, 0, "--gpu-architecture=sm_103"},
        {110, 0, "--gpu-architecture=sm_110"}, {120, 0, "--gpu-architecture=sm_120"},
        {121, 0, "--gpu-architecture=sm_121"},
    };
    const char *arch = NULL;
    for (size_t i = 0; i < sizeof TARGETS / sizeof TARGETS[0]; i++)
        if (TARGETS[i].arch == v->arch && TARGETS[i].specific == (v->arch_specific != 0))
            arch = TARGETS[i].option;
    if (!arch || max < 5)
        return -1;
    int n = 0;
    options[n++] = arch;
    options[n++] = "-std=c++17";
    options[n++] = "--ptxas-options=-v";   /* registers and spills go to the log, then the DB */
    options[n++] = "-DFC_JIT=1";
    options[n] = NULL;
    return n;
}

static void hash_field(XXH3_state_t *state, const char *label, const void *data, size_t length)
{
    unsigned long long n = length;
    XXH3_128bits_update(state, label, strlen(label) + 1);
    XXH3_128bits_update(state, &n, sizeof n);
    XXH3_128bits_update(state, data, length);
}

static void hash_hex(XXH3_state_t *state, char out[FC_KEY_HEX])
{
    XXH128_hash_t h = XXH3_128bits_digest(state);
    snprintf(out, FC_KEY_HEX, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

/* The hash of one key: everything but (optionally) the NVRTC version. */
static void hash_key(const char *source, const char *const *options, int option_count,
                     const struct fc_jit *jit, const int used[], const char *nvrtc_version,
                     char out[FC_KEY_HEX])
{
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    int schema = FC_CACHE_SCHEMA_VERSION;
    hash_field(&state, "schema", &schema, sizeof schema);
    hash_field(&state, "nvrtc", nvrtc_version, strlen(nvrtc_version));
    for (int i = 0; i < option_count; i++)   /* includes the target arch */
        hash_field(&state, "option", options[i], strlen(options[i]));
    hash_field(&state, "source", source, strlen(source));
    for (int i = 0; i < jit->template_count; i++)
        if (used[i]) {
            hash_field(&state, "template", jit->templates[i].name, strlen(jit->templates[i].name));
            hash_field(&state, "text", jit->templates[i].text, jit->templates[i].length);
        }
    hash_hex(&state, out);
}

/* Everything a compile needs, derived from a variant. */
struct unit {
    char name[FC_VARIANT_NAME_MAX];
    char source[FC_SOURCE_MAX];
    const char *options[MAX_OPTIONS];
    int option_count;
    int used[MAX_TEMPLATES];
};

static enum fc_status prepare_unit(const struct fc_jit *jit, const struct fc_variant *v,
                                   struct unit *u, char *msg, size_t size)
{
    memset(u, 0, sizeof *u);
    char why[256];
    if (fc_variant_check(v, why, sizeof why)) {
        fc_variant_name(v, u->name);
        snprintf(msg, size, "variant %s cannot be compiled: %s", u->name, why);
        return FC_ERR_UNSUPPORTED;
    }
    fc_variant_name(v, u->name);
    if (fc_jit_generate_source(v, u->source, sizeof u->source) < 0) {
        snprintf(msg, size, "internal: the source of %s does not fit", u->name);
        return FC_ERR_INTERNAL;
    }
    u->option_count = fc_jit_compile_options(v, u->options, MAX_OPTIONS);
    if (u->option_count < 0) {
        snprintf(msg, size, "variant %s: no NVRTC target for sm_%d", u->name, v->arch);
        return FC_ERR_UNSUPPORTED;
    }
    return mark_includes(jit, u->source, u->used, msg, size) ? FC_ERR_CONFIG : FC_OK;
}

enum fc_status fc_jit_keys(struct fc_jit *jit, const struct fc_variant *v, const char *nvrtc_version,
                           char key[FC_KEY_HEX], char source_key[FC_KEY_HEX], char *msg, size_t size)
{
    struct unit u;
    enum fc_status status = prepare_unit(jit, v, &u, msg, size);
    if (status != FC_OK)
        return status;
    if (!nvrtc_version)
        nvrtc_version = fc_nvrtc_version();
    key[0] = 0;
    if (nvrtc_version)
        hash_key(u.source, u.options, u.option_count, jit, u.used, nvrtc_version, key);
    hash_key(u.source, u.options, u.option_count, jit, u.used, "", source_key);
    return FC_OK;
}

void fc_jit_kernel_set_hash(const struct fc_jit *jit, char out[FC_KEY_HEX])
{
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    for (int i = 0; i < jit->template_count; i++) {
        hash_field(&state, "template", jit->templates[i].name, strlen(jit->templates[i].name));
        hash_field(&state, "text", jit->templates[i].text, jit->templates[i].length);
    }
    hash_hex(&state, out);
}

/* ---- compile, or fetch from the cache ---- */

/* FC_DUMP_SOURCE / FC_DUMP_PTX: a folder to write <variant>.cu / <variant>.ptx into. */
static void dump_text(const struct fc_logger *logger, const char *env, const char *name, const char *ext,
                      const char *text)
{
    const char *dir = getenv(env);
    if (!dir || !*dir || !text)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    mkdir(dir, 0755);
    FILE *file = fopen(path, "w");
    if (!file) {
        fc_log(logger, FC_LOG_WARN, "%s: cannot write %s: %s", env, path, strerror(errno));
        return;
    }
    fputs(text, file);
    fclose(file);
    fc_log(logger, FC_LOG_INFO, "wrote %s", path);
}

static void log_compiled(const struct fc_logger *logger, const struct fc_cubin_record *record)
{
    fc_log(logger, FC_LOG_INFO, "compiled %s in %.0f ms: %d registers, %d bytes spilled", record->name,
           record->compile_ms, record->registers, record->spill_stores);
    if (record->wgmma_serialized)
        fc_log(logger, FC_LOG_WARN, "%s: ptxas serialized its WGMMAs for want of registers (C7512): correct, "
               "but without the overlap the kernel is built for", record->name);
}

/* logger NULL: nothing logged (a compile on the quick first call's worker thread, whose record is logged
 * by fc_jit_store on the caller's) */
static enum fc_status compile_unit(struct fc_jit *jit, const struct unit *u, const struct fc_variant *v,
                                   const struct fc_logger *logger, struct fc_cubin_record *record, char *msg,
                                   size_t size)
{
    const char *names[MAX_TEMPLATES], *texts[MAX_TEMPLATES];
    int count = 0;
    for (int i = 0; i < jit->template_count; i++)
        if (u->used[i]) {
            names[count] = jit->templates[i].name;
            texts[count++] = jit->templates[i].text;
        }
    char file_name[FC_VARIANT_NAME_MAX + 4];
    snprintf(file_name, sizeof file_name, "%s.cu", u->name);
    dump_text(logger, "FC_DUMP_SOURCE", u->name, ".cu", u->source);
    int want_ptx = getenv("FC_DUMP_PTX") && *getenv("FC_DUMP_PTX");
    struct fc_nvrtc_output output;
    enum fc_status status = fc_nvrtc_compile(u->source, file_name, count, texts, names, u->option_count,
                                             u->options, want_ptx, &output, msg, size);
    if (status != FC_OK)
        return status;
    dump_text(logger, "FC_DUMP_PTX", u->name, ".ptx", output.ptx);
    snprintf(record->name, sizeof record->name, "%s", u->name);
    fc_arch_name(v->arch, v->arch_specific, record->arch);
    snprintf(record->nvrtc_version, sizeof record->nvrtc_version, "%s", fc_nvrtc_version());
    record->registers = output.report.registers;
    record->smem_static = output.report.smem_static;
    record->smem_dynamic = fc_variant_smem_bytes(v);
    record->spill_stores = output.report.spill_stores;
    record->spill_loads = output.report.spill_loads;
    record->stack_bytes = output.report.stack_bytes;
    record->compile_ms = output.report.compile_ms;
    record->cubin = output.cubin;        /* ownership moves to the record */
    record->cubin_size = output.cubin_size;
    output.cubin = NULL;
    record->wgmma_serialized = output.report.wgmma_serialized;
    log_compiled(logger, record);
    fc_nvrtc_output_free(&output);
    return FC_OK;
}

/* A lookup that logs, and reports a corrupt row as replaced-to-be. A cache that cannot be read is
 * a miss: the kernel is compiled instead. */
static enum fc_status lookup(struct fc_jit *jit, const char *key, const char *source_key,
                             struct fc_cubin *out, int *found, char *msg, size_t size)
{
    int corrupt = 0;
    enum fc_status status = fc_cache_get(jit->cache, key, source_key, &out->record, found, &corrupt, msg, size);
    if (corrupt) {
        out->replaced_corrupt = 1;
        fc_log(jit->logger, FC_LOG_WARN, "cache row %s failed its checksum: dropped, recompiling",
               key ? key : source_key);
    }
    if (status == FC_ERR_CACHE) {
        fc_log(jit->logger, FC_LOG_WARN, "%s; compiling instead", msg);
        *found = 0;
        status = FC_OK;
    }
    return status;
}

static enum fc_status compile_and_store(struct fc_jit *jit, const struct unit *u, const struct fc_variant *v,
                                        const char *key, const char *source_key, int force,
                                        struct fc_cubin *out, char *msg, size_t size)
{
    int lock = jit->cache ? fc_cache_lock(jit->cache, key) : -1;
    enum fc_status status = FC_OK;
    int found = 0;
    if (jit->cache && !force)   /* another process may have compiled it while we waited */
        status = lookup(jit, key, NULL, out, &found, msg, size);
    if (status == FC_OK && !found) {
        status = compile_unit(jit, u, v, jit->logger, &out->record, msg, size);
        if (status == FC_OK) {
            snprintf(out->record.key, sizeof out->record.key, "%s", key);
            snprintf(out->record.source_key, sizeof out->record.source_key, "%s", source_key);
            out->origin = FC_CUBIN_COMPILED;
            char why[1024];   /* a kernel that compiled is used, stored or not */
            if (fc_cache_writable(jit->cache) && fc_cache_put(jit->cache, &out->record, why, sizeof why) != FC_OK)
                fc_log(jit->logger, FC_LOG_WARN, "kernel %s compiled but not stored: %s", u->name, why);
        }
    }
    fc_cache_unlock(lock);
    return status;
}

/* The unit and its keys (key "" without NVRTC in this process). */
static enum fc_status unit_and_keys(const struct fc_jit *jit, const struct fc_variant *v, struct unit *u,
                                    char key[FC_KEY_HEX], char source_key[FC_KEY_HEX], char *msg, size_t size)
{
    enum fc_status status = prepare_unit(jit, v, u, msg, size);
    if (status != FC_OK)
        return status;
    const char *nvrtc_version = fc_nvrtc_version();
    key[0] = 0;
    if (nvrtc_version)
        hash_key(u->source, u->options, u->option_count, jit, u->used, nvrtc_version, key);
    hash_key(u->source, u->options, u->option_count, jit, u->used, "", source_key);
    return FC_OK;
}

enum fc_status fc_jit_get_cubin(struct fc_jit *jit, const struct fc_variant *v, int force_compile,
                                struct fc_cubin *out, char *msg, size_t size)
{
    memset(out, 0, sizeof *out);
    struct unit u;
    char key[FC_KEY_HEX], source_key[FC_KEY_HEX];
    enum fc_status status = unit_and_keys(jit, v, &u, key, source_key, msg, size);
    if (status != FC_OK)
        return status;
    const char *nvrtc_version = key[0] ? fc_nvrtc_version() : NULL;   /* NULL: no NVRTC in this process */
    if (getenv("FC_DUMP_PTX") && *getenv("FC_DUMP_PTX"))
        force_compile = 1;   /* the PTX exists only while compiling */

    pthread_mutex_lock(&jit->lock);
    int found = 0;
    if (jit->cache && !force_compile)
        status = lookup(jit, nvrtc_version ? key : NULL, source_key, out, &found, msg, size);
    if (status == FC_OK && !found) {
        if (!nvrtc_version) {
            char why[1024];
            fc_nvrtc_load(why, sizeof why);
            snprintf(msg, size, "kernel %s is not in the cache and cannot be compiled: %s", u.name, why);
            status = FC_ERR_NO_COMPILER;
        } else {
            status = compile_and_store(jit, &u, v, key, source_key, force_compile, out, msg, size);
        }
    }
    pthread_mutex_unlock(&jit->lock);
    if (status != FC_OK)
        fc_cubin_free(out);
    else if (out->origin == FC_CUBIN_CACHED)
        fc_log(jit->logger, FC_LOG_DEBUG, "cache hit for %s", u.name);
    return status;
}

enum fc_status fc_jit_find_cubin(struct fc_jit *jit, const struct fc_variant *v, struct fc_cubin *out, int *found,
                                 char *msg, size_t size)
{
    memset(out, 0, sizeof *out);
    *found = 0;
    struct unit u;
    char key[FC_KEY_HEX], source_key[FC_KEY_HEX];
    enum fc_status status = unit_and_keys(jit, v, &u, key, source_key, msg, size);
    if (status != FC_OK || !jit->cache)
        return status;
    pthread_mutex_lock(&jit->lock);
    status = lookup(jit, key[0] ? key : NULL, source_key, out, found, msg, size);
    pthread_mutex_unlock(&jit->lock);
    if (status != FC_OK || !*found)
        fc_cubin_free(out);
    else
        fc_log(jit->logger, FC_LOG_DEBUG, "cache hit for %s", u.name);
    return status;
}

enum fc_status fc_jit_compile_detached(struct fc_jit *jit, const struct fc_variant *v, struct fc_cubin *out,
                                       char *msg, size_t size)
{
    memset(out, 0, sizeof *out);
    struct unit u;
    char key[FC_KEY_HEX], source_key[FC_KEY_HEX];
    enum fc_status status = unit_and_keys(jit, v, &u, key, source_key, msg, size);
    if (status == FC_OK && !key[0]) {
        char why[1024];
        fc_nvrtc_load(why, sizeof why);
        snprintf(msg, size, "kernel %s cannot be compiled: %s", u.name, why);
        status = FC_ERR_NO_COMPILER;
    }
    if (status == FC_OK)
        status = compile_unit(jit, &u, v, NULL, &out->record, msg, size);
    if (status != FC_OK) {
        fc_cubin_free(out);
        return status;
    }
    snprintf(out->record.key, sizeof out->record.key, "%s", key);
    snprintf(out->record.source_key, sizeof out->record.source_key, "%s", source_key);
    out->origin = FC_CUBIN_COMPILED;
    return FC_OK;
}

void fc_jit_store(struct fc_jit *jit, const struct fc_cubin *cubin)
{
    log_compiled(jit->logger, &cubin->record);
    if (!fc_cache_writable(jit->cache))
        return;
    char why[1024];   /* a kernel that compiled is used, stored or not */
    pthread_mutex_lock(&jit->lock);   /* the connection's; not the compile-once file lock (nothing is compiled) */
    enum fc_status status = fc_cache_put(jit->cache, &cubin->record, why, sizeof why);
    pthread_mutex_unlock(&jit->lock);
    if (status != FC_OK)
        fc_log(jit->logger, FC_LOG_WARN, "kernel %s compiled but not stored: %s", cubin->record.name, why);
}

void fc_cubin_free(struct fc_cubin *cubin)
{
    fc_cubin_record_free(&cubin->record);
}
