/* Tests of a context's compile worker (src/compile_worker.c), the quick first call's background
 * compiles: a job compiles once and is handed out once, a failure is kept and reported, waiting
 * returns when the queue is empty, and destroying the worker stores what it compiled and drops
 * what it had not started. Cases that compile skip, with the reason, without NVRTC. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "compile_worker_internal.h"
#include "nvrtc_internal.h"

#define MSG_MAX 8192
#define ELF_MAGIC "\x7f" "ELF"

/* A small reference variant (fast to compile); head_dim picks one of several distinct ones. */
static struct fc_variant reference_variant(int head_dim)
{
    struct fc_variant v;
    memset(&v, 0, sizeof v);
    v.family = FC_KERNEL_REFERENCE;
    v.dtype = FC_F16;
    v.head_dim = head_dim;
    v.arch = 80;
    fc_variant_defaults(&v);
    return v;
}

struct fixture {
    char dir[64], db[96];
    struct fc_cache *cache;
    struct fc_jit *jit;
};

static int setup(void **state)
{
    char why[512];
    if (fc_nvrtc_load(why, sizeof why) != 0) {
        print_message("skipping: %s\n", why);
        *state = NULL;
        return 0;
    }
    struct fixture *f = calloc(1, sizeof *f);
    char msg[MSG_MAX] = "";
    snprintf(f->dir, sizeof f->dir, "/tmp/fc-test-worker-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->db, sizeof f->db, "%s/kernels.db", f->dir);
    if (fc_cache_open(f->db, &f->cache, msg, sizeof msg) != FC_OK ||
        fc_jit_create(NULL, f->cache, &f->jit, msg, sizeof msg) != FC_OK) {
        print_error("%s\n", msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (!f)
        return 0;
    fc_jit_destroy(f->jit);
    fc_cache_close(f->cache);
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", f->dir);
    if (system(command) != 0)
        print_error("could not remove %s\n", f->dir);
    free(f);
    return 0;
}

#define REQUIRE_NVRTC(f)   \
    do {                   \
        if (!(f))          \
            skip();        \
    } while (0)

static enum fc_compile_state request(struct fc_compile_worker *w, const struct fc_variant *v, struct fc_cubin *out,
                                     enum fc_status *status, char *msg)
{
    return fc_compile_worker_request(w, v, 1, out, status, msg, MSG_MAX);
}

static void test_job_compiles_once_and_is_handed_out_once(void **state)
{
    struct fixture *f = *state;
    REQUIRE_NVRTC(f);
    struct fc_compile_worker w;
    fc_compile_worker_init(&w, f->jit);
    const struct fc_variant v = reference_variant(64);
    struct fc_cubin cubin;
    enum fc_status status = FC_OK;
    char msg[MSG_MAX] = "";
    assert_int_equal(fc_compile_worker_request(&w, &v, 0, &cubin, &status, msg, MSG_MAX), FC_COMPILE_UNKNOWN);
    assert_int_equal(w.started, 0);   /* a question queues nothing */
    assert_int_equal(request(&w, &v, &cubin, &status, msg), FC_COMPILE_PENDING);
    assert_int_equal(fc_compile_worker_wait(&w), 0);
    memset(&cubin, 0, sizeof cubin);
    assert_int_equal(request(&w, &v, &cubin, &status, msg), FC_COMPILE_READY);
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&v, name);
    assert_string_equal(cubin.record.name, name);
    assert_int_equal(cubin.origin, FC_CUBIN_COMPILED);
    assert_true(cubin.record.cubin_size > 4);
    assert_memory_equal(cubin.record.cubin, ELF_MAGIC, 4);
    char key[FC_KEY_HEX], source_key[FC_KEY_HEX];
    assert_int_equal(fc_jit_keys(f->jit, &v, NULL, key, source_key, msg, sizeof msg), FC_OK);
    assert_string_equal(cubin.record.key, key);   /* what fc_jit_store files it under */
    assert_string_equal(cubin.record.source_key, source_key);
    assert_int_equal(request(&w, &v, &cubin, &status, msg), FC_COMPILE_TAKEN);   /* once */

    int found = 1;   /* handed out, not stored: fc_jit_store is the caller's */
    struct fc_cubin stored;
    assert_int_equal(fc_jit_find_cubin(f->jit, &v, &stored, &found, msg, sizeof msg), FC_OK);
    assert_int_equal(found, 0);
    fc_jit_store(f->jit, &cubin);
    assert_int_equal(fc_jit_find_cubin(f->jit, &v, &stored, &found, msg, sizeof msg), FC_OK);
    assert_int_equal(found, 1);
    assert_int_equal(stored.record.cubin_size, cubin.record.cubin_size);
    assert_memory_equal(stored.record.cubin, cubin.record.cubin, cubin.record.cubin_size);
    fc_cubin_free(&stored);
    fc_cubin_free(&cubin);
    fc_compile_worker_destroy(&w);
}

static void test_failure_is_kept_and_reported(void **state)
{
    struct fixture *f = *state;
    REQUIRE_NVRTC(f);
    struct fc_compile_worker w;
    fc_compile_worker_init(&w, f->jit);
    struct fc_variant v = reference_variant(64);
    v.head_dim = 12;   /* no kernel compiles for it */
    struct fc_cubin cubin;
    enum fc_status status = FC_OK;
    char msg[MSG_MAX] = "";
    assert_int_equal(request(&w, &v, &cubin, &status, msg), FC_COMPILE_PENDING);
    assert_int_equal(fc_compile_worker_wait(&w), 1);
    for (int again = 0; again < 2; again++) {   /* every later request too */
        msg[0] = 0;
        status = FC_OK;
        assert_int_equal(request(&w, &v, &cubin, &status, msg), FC_COMPILE_FAILED);
        assert_int_equal(status, FC_ERR_UNSUPPORTED);
        assert_non_null(strstr(msg, "head_dim 12"));
    }
    fc_compile_worker_destroy(&w);
}

/* Destroying the worker: a compiled kernel nobody took is stored (nothing compiled is lost), and
 * queued ones are dropped without waiting for their compiles. */
static void test_destroy_stores_untaken_kernels(void **state)
{
    struct fixture *f = *state;
    REQUIRE_NVRTC(f);
    struct fc_compile_worker w;
    fc_compile_worker_init(&w, f->jit);
    const struct fc_variant first = reference_variant(64), second = reference_variant(128);
    struct fc_cubin cubin;
    enum fc_status status = FC_OK;
    char msg[MSG_MAX] = "";
    assert_int_equal(request(&w, &first, &cubin, &status, msg), FC_COMPILE_PENDING);
    assert_int_equal(fc_compile_worker_wait(&w), 0);
    fc_compile_worker_destroy(&w);
    int found = 0;
    struct fc_cubin stored;
    assert_int_equal(fc_jit_find_cubin(f->jit, &first, &stored, &found, msg, sizeof msg), FC_OK);
    assert_int_equal(found, 1);
    fc_cubin_free(&stored);

    fc_compile_worker_init(&w, f->jit);   /* a queue destroyed at once: no hang, nothing half-stored */
    const struct fc_variant more[] = {second, reference_variant(256), reference_variant(96)};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        assert_int_equal(request(&w, &more[i], &cubin, &status, msg), FC_COMPILE_PENDING);
    fc_compile_worker_destroy(&w);
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {   /* each compiled in full, or not at all */
        assert_int_equal(fc_jit_find_cubin(f->jit, &more[i], &stored, &found, msg, sizeof msg), FC_OK);
        if (found) {
            assert_memory_equal(stored.record.cubin, ELF_MAGIC, 4);
            fc_cubin_free(&stored);
        }
    }
}

/* A child forked while the worker compiles has no worker thread: its requests are answered
 * UNAVAILABLE (compile in place), waiting returns at once, and destroying the context in the child
 * (Python's finalizers at a forked child's exit) neither hangs nor stores the parent's compiles. */
static void test_forked_child_never_waits_for_the_parent_thread(void **state)
{
    struct fixture *f = *state;
    REQUIRE_NVRTC(f);
    struct fc_compile_worker w;
    fc_compile_worker_init(&w, f->jit);
    const struct fc_variant v = reference_variant(128), other = reference_variant(64);
    struct fc_cubin cubin;
    enum fc_status status = FC_OK;
    char msg[MSG_MAX] = "";
    assert_int_equal(request(&w, &v, &cubin, &status, msg), FC_COMPILE_PENDING);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        alarm(10);   /* a hang ends the child by SIGALRM: the parent sees it */
        int ok = request(&w, &other, &cubin, &status, msg) == FC_COMPILE_UNAVAILABLE &&
                 fc_compile_worker_wait(&w) == 0;
        fc_compile_worker_destroy(&w);
        _exit(ok ? 0 : 1);
    }
    int child_status = 0;
    assert_int_equal(waitpid(child, &child_status, 0), child);
    assert_true(WIFEXITED(child_status));
    assert_int_equal(WEXITSTATUS(child_status), 0);
    assert_int_equal(fc_compile_worker_wait(&w), 0);   /* the parent's worker goes on */
    assert_int_equal(request(&w, &v, &cubin, &status, msg), FC_COMPILE_READY);
    fc_cubin_free(&cubin);
    fc_compile_worker_destroy(&w);
}

/* A worker destroyed without a job never started a thread; waiting on it returns at once. */
static void test_idle_worker(void **state)
{
    (void)state;
    struct fc_compile_worker w;
    fc_compile_worker_init(&w, (struct fc_jit *)&w);   /* never compiles: any non-NULL JIT */
    assert_int_equal(fc_compile_worker_wait(&w), 0);
    assert_int_equal(w.started, 0);
    fc_compile_worker_destroy(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_job_compiles_once_and_is_handed_out_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_is_kept_and_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_stores_untaken_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forked_child_never_waits_for_the_parent_thread, setup, teardown),
        cmocka_unit_test(test_idle_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
