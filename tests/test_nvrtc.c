/* NVRTC compiles every shipped variant for its arch, with no spills; the ptxas report parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config_internal.h"
#include "embedded_internal.h"
#include "jit_internal.h"
#include "nvrtc_internal.h"
#include "probe_compile.h"

#define SKIP_EXIT 77

/* The warp-specialized sm90 schedule: a producer warpgroup beside the consumers (src/family_sm90.c). */
static int is_specialized(const struct fc_variant *v)
{
    return v->family == FC_KERNEL_SM90 && v->warps == v->block_m / 16 + 4;
}

static void test_ptxas_report_parser(void **state)
{
    (void)state;
    const char *log =
        "ptxas info    : 32 bytes gmem\n"
        "ptxas info    : Compiling entry function 'fc_attention_kernel' for 'sm_90a'\n"
        "ptxas info    : Function properties for fc_attention_kernel\n"
        "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 168 registers, used 1 barriers, 4096 bytes smem, 896 bytes cmem[0]\n";
    struct fc_compile_report report;
    fc_parse_ptxas_report(log, &report);
    assert_int_equal(report.registers, 168);
    assert_int_equal(report.stack_bytes, 24);
    assert_int_equal(report.spill_stores, 8);
    assert_int_equal(report.spill_loads, 12);
    assert_int_equal(report.smem_static, 4096);
    assert_int_equal(report.wgmma_serialized, 0);
    const char *serialized =
        "ptxas info    : Compiling entry function 'fc_attention_kernel' for 'sm_90a'\n"
        "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
        "insufficient register resources for the function 'fc_attention_kernel'\n"
        "ptxas info    : Used 168 registers, used 16 barriers, 112 bytes smem\n";
    fc_parse_ptxas_report(serialized, &report);
    assert_int_equal(report.wgmma_serialized, 1);
    assert_int_equal(report.registers, 168);
}

/* Every variant `fcjit precompile` ships compiles for its own arch without spilling. */
static void test_every_shipped_variant_compiles_without_spills(void **state)
{
    (void)state;
    const struct fc_embedded_file *spec = fc_embedded_find(fc_embedded_data, "precompile.yaml");
    assert_non_null(spec);
    struct fc_variant_list list;
    char msg[8192] = "";
    assert_int_equal(fc_config_parse_variants(spec->text, spec->length, "precompile.yaml", &list, msg, sizeof msg),
                     FC_OK);
    assert_true(list.count > 0);
    struct fc_jit *jit;
    assert_int_equal(fc_jit_create(NULL, NULL, &jit, msg, sizeof msg), FC_OK);
    int failures = 0;
    for (size_t i = 0; i < list.count; i++) {
        char name[FC_VARIANT_NAME_MAX];
        fc_variant_name(&list.items[i], name);
        struct fc_cubin cubin;
        enum fc_status status = fc_jit_get_cubin(jit, &list.items[i], 1, &cubin, msg, sizeof msg);
        if (status != FC_OK) {
            print_error("%s: %s: %s\n", name, fc_status_name(status), msg);
            failures++;
            continue;
        }
        const struct fc_cubin_record *r = &cubin.record;
        print_message("%-52s %3d regs %3d B spill stores %3d B spill loads %3d B stack %4.0f ms\n", name,
                      r->registers, r->spill_stores, r->spill_loads, r->stack_bytes, r->compile_ms);
        if (r->registers <= 0 || r->spill_stores != 0 || r->spill_loads != 0 || r->cubin_size == 0) {
            print_error("%s spills or has no registers/cubin\n", name);
            failures++;
        }
        fc_cubin_free(&cubin);
    }
    fc_jit_destroy(jit);
    fc_variant_list_free(&list);
    assert_int_equal(failures, 0);
}

/* Every shipped sm90 variant's PTX uses WGMMA and the TMA bulk tensor copy (FC_DUMP_PTX makes the
 * JIT write it while compiling). */
static void test_sm90_variants_use_wgmma_and_tma(void **state)
{
    (void)state;
    char dir[] = "/tmp/fc-ptx-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("FC_DUMP_PTX", dir, 1);
    const struct fc_embedded_file *spec = fc_embedded_find(fc_embedded_data, "precompile.yaml");
    struct fc_variant_list list;
    char msg[8192] = "";
    assert_int_equal(fc_config_parse_variants(spec->text, spec->length, "precompile.yaml", &list, msg, sizeof msg), FC_OK);
    struct fc_jit *jit;
    assert_int_equal(fc_jit_create(NULL, NULL, &jit, msg, sizeof msg), FC_OK);
    int checked = 0, specialized = 0;
    for (size_t i = 0; i < list.count; i++) {
        if (list.items[i].family != FC_KERNEL_SM90)
            continue;
        struct fc_cubin cubin;
        assert_int_equal(fc_jit_get_cubin(jit, &list.items[i], 1, &cubin, msg, sizeof msg), FC_OK);
        fc_cubin_free(&cubin);
        char name[FC_VARIANT_NAME_MAX], path[4200];
        fc_variant_name(&list.items[i], name);
        snprintf(path, sizeof path, "%s/%s.ptx", dir, name);
        FILE *file = fopen(path, "r");
        assert_non_null(file);
        static char ptx[1 << 22];
        size_t n = fread(ptx, 1, sizeof ptx - 1, file);
        ptx[n] = 0;
        fclose(file);
        remove(path);
        if (!strstr(ptx, "wgmma.mma_async") || !strstr(ptx, "cp.async.bulk.tensor"))
            fail_msg("%s: no wgmma.mma_async or cp.async.bulk.tensor in its PTX", name);
        if (is_specialized(&list.items[i]) &&
            (!strstr(ptx, "setmaxnreg.dec.sync.aligned") || !strstr(ptx, "setmaxnreg.inc.sync.aligned")))
            fail_msg("%s: warp-specialized, but its PTX moves no registers (setmaxnreg)", name);
        specialized += is_specialized(&list.items[i]);
        checked++;
    }
    unsetenv("FC_DUMP_PTX");
    rmdir(dir);
    fc_jit_destroy(jit);
    fc_variant_list_free(&list);
    assert_true(checked >= 8);
    assert_true(specialized >= 6);
}

/* The Hopper building blocks compile for sm_90a into the instructions they are meant to be. */
static void test_hopper_probes_use_wgmma_and_tma(void **state)
{
    (void)state;
    struct fc_nvrtc_output out;
    char msg[16384] = "";
    enum fc_status status = fc_test_compile_probe(&out, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("%s: %s", fc_status_name(status), msg);
    assert_non_null(strstr(out.ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"));
    assert_non_null(strstr(out.ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"));
    assert_non_null(strstr(out.ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));
    assert_non_null(strstr(out.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global"));
    assert_non_null(strstr(out.ptx, "mbarrier.try_wait.parity"));
    int spilling = 0;   /* one ptxas report per kernel: each must say 0 bytes */
    for (const char *p = strstr(out.log, "bytes spill stores"); p; p = strstr(p + 1, "bytes spill stores"))
        spilling += !(p >= out.log + 2 && p[-1] == ' ' && p[-2] == '0' && (p == out.log + 2 || p[-3] == ' '));
    assert_int_equal(spilling, 0);
    fc_nvrtc_output_free(&out);
}

int main(void)
{
    char why[2048];
    if (fc_nvrtc_load(why, sizeof why)) {
        printf("SKIP: NVRTC is not available here: %s\n", why);
        return SKIP_EXIT;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptxas_report_parser),
        cmocka_unit_test(test_every_shipped_variant_compiles_without_spills),
        cmocka_unit_test(test_hopper_probes_use_wgmma_and_tma),
        cmocka_unit_test(test_sm90_variants_use_wgmma_and_tma),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
