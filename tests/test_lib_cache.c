/* The remembered library times (core/lib_cache.h): what the key holds and
 * what it leaves out, an entry found again whole, the age limit, disturbed
 * measurements refused, every forged or broken line ignored, and the file
 * bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/lib_cache.h"
#include "core/problem.h"

#define UUID "GPU-0123abcd-0000-1111-2222-333344445555"
#define BUILD "0.1.0+abc1234"
#define NOW 1800000000.0

static void temp_path(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "%s/%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", what);
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

/* A library job of softmax fp16 at `shape`, its bundled candidate `plugin`. */
static kg_job softmax_job(const char *shape, const char *plugin)
{
    kg_job j;
    kg_err e = {0, ""};
    kg_job_defaults(&j);
    j.mode = KG_JOB_LIBRARY;
    j.op = kg_op_find("softmax");
    assert_non_null(j.op);
    j.types.data = KG_FP16;
    assert_int_equal(kg_shape_parse(j.op, shape, &j.shape, &e), 0);
    snprintf(j.plugin, sizeof j.plugin, "%s", plugin);
    return j;
}

static int same_key(const kg_job *a, const kg_job *b)
{
    char *x = kg_libcache_key(a, UUID, BUILD), *y = kg_libcache_key(b, UUID, BUILD);
    assert_non_null(x);
    assert_non_null(y);
    int same = strcmp(x, y) == 0;
    free(x);
    free(y);
    return same;
}

static void the_key_is_the_library_job(void **state)
{
    (void)state;
    char plugin[256];
    temp_path(plugin, sizeof plugin, "bundled");
    kg_job a = softmax_job("small", plugin), b = a;
    /* what only a kernel job reads, or what changes from one job to the next */
    b.mode = KG_JOB_KERNEL;
    snprintf(b.kernel, sizeof b.kernel, "softmax_v2_fp16");
    b.n_extra = 1;
    b.extra[0] = a.shape;
    b.diagnose = 2;
    b.patched_max_s = 0.5;
    snprintf(b.nonce, sizeof b.nonce, "0123456789abcdef");
    snprintf(b.scratch, sizeof b.scratch, "/tmp/kgate-scratch");
    b.budget_s = 99;
    b.device = 3;
    b.n_config = 2;
    assert_true(same_key(&a, &b));
    /* what the library's times depend on */
    b = a;
    b.flush = KG_FLUSH_MODE_MEMSET;
    assert_false(same_key(&a, &b));
    b = a;
    b.hot = 1;
    assert_false(same_key(&a, &b));
    b = a;
    b.stop.min_gpu_s = 1.0;
    assert_false(same_key(&a, &b));
    b = a;
    b.seed = 7;
    assert_false(same_key(&a, &b));
    b = a;
    b.torch = 1;
    assert_false(same_key(&a, &b));
    b = a;
    b.types.data = KG_BF16;
    assert_false(same_key(&a, &b));
    b = softmax_job("medium", plugin);
    assert_false(same_key(&a, &b));
    /* the GPU and kgate's build */
    char *x = kg_libcache_key(&a, UUID, BUILD), *y = kg_libcache_key(&a, "GPU-other", BUILD),
         *z = kg_libcache_key(&a, UUID, "0.1.0+def5678");
    assert_string_not_equal(x, y);
    assert_string_not_equal(x, z);
    free(y);
    free(z);
    /* the bundled candidate rebuilt: another size or modification time */
    FILE *f = fopen(plugin, "w");
    fputs("rebuilt", f);
    fclose(f);
    y = kg_libcache_key(&a, UUID, BUILD);
    assert_string_not_equal(x, y);
    free(x);
    free(y);
    /* a bundled candidate that is gone, and a problem (its library paths come
     * with the candidate): no key */
    unlink(plugin);
    assert_null(kg_libcache_key(&a, UUID, BUILD));
    kg_problem p;
    kg_err e = {0, ""};
    const kg_op *op = NULL;
    assert_int_equal(kg_problem_parse("{\"name\":\"kb.lc\",\"inputs\":[{\"shape\":[64],"
                                      "\"dtype\":\"fp32\"}],\"outputs\":[{\"shape\":[64],\"dtype\":\"fp32\"}],"
                                      "\"flops\":0,\"bytes_read\":256,\"bytes_written\":256,\"roof\":\"fp32\"}",
                                      &p, &e),
                     0);
    assert_int_equal(kg_problem_register(&p, &op, &e), 0);
    b = a;
    b.op = op;
    b.plugin[0] = '\0';
    assert_null(kg_libcache_key(&b, UUID, BUILD));
}

static kg_libref measured(void)
{
    kg_libref l;
    memset(&l, 0, sizeof l);
    l.measured = 1;
    l.n = 2;
    snprintf(l.paths[0].name, sizeof l.paths[0].name, "cudnn-softmax");
    snprintf(l.paths[0].note, sizeof l.paths[0].note, "cuDNN 91400 softmax, \"accurate\" mode");
    l.paths[0].status = KG_LIB_OK;
    l.paths[0].t = 12.5e-6;
    l.paths[0].lo = 12.4e-6;
    l.paths[0].hi = 12.7e-6;
    snprintf(l.paths[1].name, sizeof l.paths[1].name, "cub-softmax");
    snprintf(l.paths[1].note, sizeof l.paths[1].note, "rows longer than 8192");
    l.paths[1].status = KG_LIB_UNSUPPORTED;
    l.have_best = 1;
    l.best_t = 11.0e-6;
    l.best_lo = 10.9e-6;
    l.best_hi = 11.2e-6;
    snprintf(l.best_name, sizeof l.best_name, "softmax_v2_fp16");
    snprintf(l.best_note, sizeof l.best_note, "bundled softmax_v2_fp16: one warp a row");
    l.job_wall_s = 3.4;
    l.job_startup_s = 0.09;
    return l;
}

static void an_entry_comes_back_whole(void **state)
{
    (void)state;
    char path[256];
    kg_err e = {0, ""};
    kg_libref l = measured(), got;
    double age = -1;
    temp_path(path, sizeof path, "libtimes");
    unlink(path);
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW, &got, &age), 1); /* no file: a miss */
    assert_int_equal(kg_libcache_put(path, "k1", &l, NOW - 100, &e), 0);
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW, &got, &age), 0);
    assert_true(age > 99.9 && age < 100.1);
    assert_int_equal(got.measured, 1);
    assert_int_equal(got.n, 2);
    assert_string_equal(got.paths[0].name, "cudnn-softmax");
    assert_string_equal(got.paths[0].note, l.paths[0].note);
    assert_int_equal(got.paths[0].status, KG_LIB_OK);
    assert_true(got.paths[0].t == l.paths[0].t && got.paths[0].lo == l.paths[0].lo && got.paths[0].hi == l.paths[0].hi);
    assert_int_equal(got.paths[1].status, KG_LIB_UNSUPPORTED);
    assert_string_equal(got.paths[1].note, "rows longer than 8192");
    assert_int_equal(got.have_best, 1);
    assert_true(got.best_t == l.best_t && got.best_lo == l.best_lo && got.best_hi == l.best_hi);
    assert_string_equal(got.best_name, "softmax_v2_fp16");
    assert_string_equal(got.best_note, l.best_note);
    /* no library job ran for this command: no worker wall time to report */
    assert_true(got.job_wall_s == 0 && got.job_startup_s == 0);
    /* another key, a prefix of it, and an age limit the entry is past */
    assert_int_equal(kg_libcache_get(path, "k2", 3600, NOW, &got, &age), 1);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    assert_int_equal(kg_libcache_get(path, "k1", 99, NOW, &got, &age), 1);
    /* an entry from the future (a clock set back, or a forged one) */
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW - 200, &got, &age), 1);
    /* no bundled time: the note why comes back */
    l.have_best = 0;
    snprintf(l.best_note, sizeof l.best_note, "no bundled softmax_v2 kernel for fp64");
    assert_int_equal(kg_libcache_put(path, "k2", &l, NOW, &e), 0);
    assert_int_equal(kg_libcache_get(path, "k2", 3600, NOW, &got, &age), 0);
    assert_int_equal(got.have_best, 0);
    assert_string_equal(got.best_note, l.best_note);
    /* a newer measurement of k1 replaces the older: one line a key */
    l = measured();
    l.paths[0].t = 13.0e-6;
    l.paths[0].hi = 13.1e-6;
    assert_int_equal(kg_libcache_put(path, "k1", &l, NOW - 10, &e), 0);
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW, &got, &age), 0);
    assert_true(got.paths[0].t == 13.0e-6);
    FILE *f = fopen(path, "r");
    char line[KG_LIBCACHE_LINE_MAX];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    assert_int_equal(lines, 2);
    unlink(path);
}

static void a_disturbed_measurement_is_not_kept(void **state)
{
    (void)state;
    char path[256];
    kg_err e = {0, ""};
    kg_libref l = measured(), got;
    double age;
    temp_path(path, sizeof path, "libtimes");
    unlink(path);
    assert_null(kg_libcache_unfit(&l));
    l.disturbed = 3; /* throttled samples, or another process's kernels */
    assert_non_null(kg_libcache_unfit(&l));
    assert_int_not_equal(kg_libcache_put(path, "k", &l, NOW, &e), 0);
    assert_non_null(strstr(e.msg, "other work on the GPU"));
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    l = measured();
    l.measured = 0;
    assert_non_null(kg_libcache_unfit(&l));
}

/* The line of a valid entry of key "k" with `from` replaced by `to`. */
static void forged(FILE *f, const char *from, const char *to)
{
    char path[256], line[KG_LIBCACHE_LINE_MAX];
    kg_err e = {0, ""};
    kg_libref l = measured();
    temp_path(path, sizeof path, "one");
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW, &e), 0);
    FILE *g = fopen(path, "r");
    assert_non_null(fgets(line, sizeof line, g));
    fclose(g);
    unlink(path);
    char *at = strstr(line, from);
    assert_non_null(at); /* the test's own mistake otherwise */
    fprintf(f, "%.*s%s%s", (int)(at - line), line, to, at + strlen(from));
}

static void forged_and_broken_lines_are_ignored(void **state)
{
    (void)state;
    char path[256];
    kg_libref got;
    double age;
    static const struct {
        const char *from, *to;
    } cases[] = {
        {"kgate.libcache/1", "kgate.libcache/2"}, /* another schema */
        {"\"t\":1.25e-05", "\"t\":-1.25e-05"},    /* a negative time */
        {"\"t\":1.25e-05", "\"t\":0"},            /* no time for a path that is ok */
        {"\"t\":1.25e-05", "\"t\":1e999"},        /* infinite */
        {"\"t\":1.25e-05", "\"t\":7200"},         /* longer than any library call */
        {"\"t\":1.25e-05", "\"t\":\"fast\""},     /* not a number */
        {"\"lo\":1.24e-05", "\"lo\":1.3e-05"},    /* a CI above its median */
        {"\"status\":\"ok\"", "\"status\":\"fast\""},
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"cudnn-softmax-with-a-name-longer-than-forty-bytes\""},
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"cub-softmax\""}, /* one path twice */
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"\""},
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"cudnn\\nsoftmax\""}, /* a control character */
        {"\"best_name\":\"softmax_v2_fp16\"", "\"best_name\":\"softmax_v1_fp16\""}, /* best's name disagrees */
        {"\"t\":1.1e-05", "\"t\":0"},             /* a best time that is none */
        {"\"at\":1800000000", "\"at\":\"now\""},
        {"\"paths\":[", "\"paths\":{\"a\":["},    /* not JSON any more */
        {"\"key\":\"k\"", "\"key\":7"},
    };
    temp_path(path, sizeof path, "libtimes");
    FILE *f = fopen(path, "w");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        forged(f, cases[i].from, cases[i].to);
        fflush(f);
    }
    fclose(f);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    /* seven paths, a torn line, a line too long to be an entry */
    f = fopen(path, "a");
    forged(f, "\"paths\":[", "\"paths\":[{\"name\":\"a\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"b\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"c\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"d\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"e\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},");
    fputs("{\"schema\":\"kgate.libcache/1\",\"key\":\"k\",\"at\":1800000000,\"paths\":[{\"name\":\"cud\n", f);
    fputs("{\"schema\":\"kgate.libcache/1\",\"key\":\"k\",\"pad\":\"", f);
    for (int i = 0; i < KG_LIBCACHE_LINE_MAX; i++)
        fputc('x', f);
    fputs("\"}\n", f);
    fclose(f);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    /* a good line after all of them is found, and a rewrite drops the bad ones */
    f = fopen(path, "a");
    forged(f, "\"t\":1.25e-05", "\"t\":1.25e-05");
    fclose(f);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 0);
    assert_true(got.paths[0].t == 12.5e-6);
    kg_err e = {0, ""};
    kg_libref l = measured();
    assert_int_equal(kg_libcache_put(path, "other", &l, NOW, &e), 0);
    f = fopen(path, "r");
    static char line[2 * KG_LIBCACHE_LINE_MAX];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    assert_int_equal(lines, 2);
    unlink(path);
}

static void the_file_stays_bounded(void **state)
{
    (void)state;
    char path[256], key[32];
    kg_err e = {0, ""};
    kg_libref l = measured(), got;
    double age;
    temp_path(path, sizeof path, "libtimes");
    unlink(path);
    for (int i = 0; i < KG_LIBCACHE_MAX + 8; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        assert_int_equal(kg_libcache_put(path, key, &l, NOW, &e), 0);
    }
    FILE *f = fopen(path, "r");
    char line[KG_LIBCACHE_LINE_MAX];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    assert_int_equal(lines, KG_LIBCACHE_MAX);
    assert_int_equal(kg_libcache_get(path, "key-0", 3600, NOW, &got, &age), 1); /* the oldest went */
    assert_int_equal(kg_libcache_get(path, "key-8", 3600, NOW, &got, &age), 0);
    snprintf(key, sizeof key, "key-%d", KG_LIBCACHE_MAX + 7);
    assert_int_equal(kg_libcache_get(path, key, 3600, NOW, &got, &age), 0);
    unlink(path);
}

static void the_path_names_the_gpu(void **state)
{
    (void)state;
    char path[512], dir[256];
    kg_err e = {0, ""};
    snprintf(dir, sizeof dir, "%s/lc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    setenv("XDG_CACHE_HOME", dir, 1);
    assert_int_equal(kg_libcache_path(UUID, path, sizeof path, &e), 0);
    assert_non_null(strstr(path, "/kgate/libtimes-" UUID ".jsonl"));
    assert_int_not_equal(kg_libcache_path("../../etc/x", path, sizeof path, &e), 0);
    assert_int_not_equal(kg_libcache_path("", path, sizeof path, &e), 0);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/kgate", dir);
    rmdir(sub);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_key_is_the_library_job),
        cmocka_unit_test(an_entry_comes_back_whole),
        cmocka_unit_test(a_disturbed_measurement_is_not_kept),
        cmocka_unit_test(forged_and_broken_lines_are_ignored),
        cmocka_unit_test(the_file_stays_bounded),
        cmocka_unit_test(the_path_names_the_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
