/* The remembered library times (store/lib_cache.h): what the key holds and
 * what it leaves out, an entry used only once two measurements agree and
 * then found again whole, the age limit, unfit measurements refused, every
 * forged or broken line ignored (each for its own reason), the newest entry
 * winning, and the file bounded. */
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

#include "store/lib_cache.h"
#include "catalog/problem.h"

#define UUID "GPU-0123abcd-0000-1111-2222-333344445555"
#define BUILD "kgate 0.1.0+abc1234 driver 580.159.04 cublasLt 130000"
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
    b.types.index = KG_I32; /* softmax has no index tensor */
    assert_true(same_key(&a, &b));
    /* what the library's times depend on: each changed alone */
    kg_job v[8];
    for (int i = 0; i < 8; i++)
        v[i] = a;
    v[0].flush = KG_FLUSH_MEMSET;
    v[1].hot = 1;
    v[2].stop.min_gpu_s = 1.0;
    v[3].seed = 7;
    v[4].torch = 1;
    v[5].sandbox = 1;
    v[6].edge = 0;
    v[7].types.data = KG_BF16;
    for (int i = 0; i < 8; i++)
        if (same_key(&a, &v[i]))
            fail_msg("change %d left the key as it was", i);
    /* the environment that changes library paths */
    char *k0 = kg_libcache_key(&a, UUID, BUILD);
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    char *k1 = kg_libcache_key(&a, UUID, BUILD);
    unsetenv("NVIDIA_TF32_OVERRIDE");
    assert_string_not_equal(k0, k1);
    free(k0);
    free(k1);
    b = softmax_job("medium", plugin);
    assert_false(same_key(&a, &b));
    /* the GPU and the caller's context (kgate's build, driver, libraries) */
    char *x = kg_libcache_key(&a, UUID, BUILD), *y = kg_libcache_key(&a, "GPU-other", BUILD),
         *z = kg_libcache_key(&a, UUID, "kgate 0.1.0+abc1234 driver 580.159.05 cublasLt 130000");
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

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int c, lines = 0;
    while (f && (c = fgetc(f)) != EOF)
        lines += c == '\n';
    if (f)
        fclose(f);
    return lines;
}

/* Two agreeing measurements, at t1 then t2. */
static void put_twice(const char *path, const char *key, const kg_libref *l, double t1, double t2)
{
    kg_err e = {0, ""};
    int confirmed = -1;
    assert_int_equal(kg_libcache_put(path, key, l, t1, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 0);
    assert_int_equal(kg_libcache_put(path, key, l, t2, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 1);
}

/* The line of a confirmed entry of key "k" holding l, measured at t1 and t2
 * (without its newline when strip). */
static void entry_line(const kg_libref *l, double t1, double t2, char *line, size_t size, int strip)
{
    char one[256];
    temp_path(one, sizeof one, "one");
    unlink(one);
    put_twice(one, "k", l, t1, t2);
    FILE *g = fopen(one, "r");
    assert_non_null(fgets(line, (int)size, g));
    fclose(g);
    unlink(one);
    if (strip)
        line[strcspn(line, "\n")] = '\0';
}

static void an_entry_is_used_once_two_measurements_agree(void **state)
{
    (void)state;
    char path[256];
    kg_err e = {0, ""};
    kg_libref l = measured(), got;
    double age = -1;
    int confirmed = -1;
    temp_path(path, sizeof path, "libtimes");
    unlink(path);
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW, &got, &age), 1); /* no file: a miss */
    /* one measurement is not enough */
    assert_int_equal(kg_libcache_put(path, "k1", &l, NOW - 200, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 0);
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW, &got, &age), 1);
    /* a second within 3% confirms it; the newer is kept, with its age */
    kg_libref l2 = measured();
    l2.paths[0].t = 12.8e-6;
    l2.paths[0].lo = 12.7e-6;
    l2.paths[0].hi = 12.9e-6;
    l2.best_t = 11.1e-6;
    assert_int_equal(kg_libcache_put(path, "k1", &l2, NOW - 100, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 1);
    assert_int_equal(count_lines(path), 1); /* replaced, not added */
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW, &got, &age), 0);
    assert_true(age > 99.9 && age < 100.1);
    assert_int_equal(got.measured, 1);
    assert_int_equal(got.n, 2);
    assert_string_equal(got.paths[0].name, "cudnn-softmax");
    assert_string_equal(got.paths[0].note, l.paths[0].note);
    assert_int_equal(got.paths[0].status, KG_LIB_OK);
    assert_true(got.paths[0].t == 12.8e-6 && got.paths[0].lo == 12.7e-6 && got.paths[0].hi == 12.9e-6);
    assert_int_equal(got.paths[1].status, KG_LIB_UNSUPPORTED);
    assert_string_equal(got.paths[1].note, "rows longer than 8192");
    assert_int_equal(got.have_best, 1);
    assert_true(got.best_t == 11.1e-6 && got.best_lo == l.best_lo && got.best_hi == l.best_hi);
    assert_string_equal(got.best_name, "softmax_v2_fp16");
    assert_string_equal(got.best_note, l.best_note);
    /* no library job ran for the command that reuses it */
    assert_true(got.job_wall_s == 0 && got.job_startup_s == 0 && got.disturbed == 0);
    /* another key, a prefix of it, an age limit the entry is past, an entry
     * from the future (a clock set back, or a forged one) */
    assert_int_equal(kg_libcache_get(path, "k2", 3600, NOW, &got, &age), 1);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    assert_int_equal(kg_libcache_get(path, "k1", 99, NOW, &got, &age), 1);
    assert_int_equal(kg_libcache_get(path, "k1", 3600, NOW - 200, &got, &age), 1);
    /* no bundled time (an operator without one): its note comes back */
    l.have_best = 0;
    l.best_name[0] = '\0';
    snprintf(l.best_note, sizeof l.best_note, "no bundled fast variant for fp64");
    put_twice(path, "k2", &l, NOW - 2, NOW - 1);
    assert_int_equal(kg_libcache_get(path, "k2", 3600, NOW, &got, &age), 0);
    assert_int_equal(got.have_best, 0);
    assert_string_equal(got.best_note, l.best_note);
    assert_int_equal(count_lines(path), 2);
    unlink(path);
}

static void a_measurement_that_disagrees_starts_again(void **state)
{
    (void)state;
    char path[256];
    kg_err e = {0, ""};
    kg_libref l = measured(), slow = measured(), got;
    double age;
    int confirmed = -1;
    temp_path(path, sizeof path, "libtimes");
    unlink(path);
    slow.paths[0].t = 13.0e-6; /* 4% slower: a disturbed measurement, or the first was */
    slow.paths[0].lo = 12.9e-6;
    slow.paths[0].hi = 13.1e-6;
    assert_false(kg_libcache_agree(&l, &slow));
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW - 30, 3600, &confirmed, &e), 0);
    assert_int_equal(kg_libcache_put(path, "k", &slow, NOW - 20, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 0);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    /* a third that agrees with the second confirms the second's pair */
    assert_int_equal(kg_libcache_put(path, "k", &slow, NOW - 10, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 1);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 0);
    assert_true(got.paths[0].t == 13.0e-6);
    /* a path that changed status, or a bundled time 4% off, disagrees too */
    kg_libref other = measured();
    other.paths[1].status = KG_LIB_OK;
    other.paths[1].t = other.paths[1].lo = other.paths[1].hi = 1e-5;
    assert_false(kg_libcache_agree(&l, &other));
    other = measured();
    other.best_t = 11.45e-6;
    assert_false(kg_libcache_agree(&l, &other));
    other.best_t = 11.3e-6;
    assert_true(kg_libcache_agree(&l, &other));
    /* another reason for a path that cannot run, another path, another
     * bundled variant, one path fewer: not the same facts */
    other = measured();
    snprintf(other.paths[1].note, sizeof other.paths[1].note, "CUDNN_STATUS_ALLOC_FAILED");
    assert_false(kg_libcache_agree(&l, &other));
    other = measured();
    snprintf(other.paths[0].name, sizeof other.paths[0].name, "cudnn-softmax-log");
    assert_false(kg_libcache_agree(&l, &other));
    other = measured();
    snprintf(other.best_name, sizeof other.best_name, "softmax_v3_fp16");
    assert_false(kg_libcache_agree(&l, &other));
    other = measured();
    other.n = 1;
    assert_false(kg_libcache_agree(&l, &other));
    /* a short --lib-cache-age still lets two checks ten seconds apart agree
     * (KG_LIBCACHE_AGREE_WINDOW) */
    unlink(path);
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW - 10, 5, &confirmed, &e), 0);
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW, 5, &confirmed, &e), 0);
    assert_int_equal(confirmed, 1);
    assert_int_equal(kg_libcache_get(path, "k", 5, NOW + 1, &got, &age), 0);
    /* a first measurement from the future does not confirm one made now */
    unlink(path);
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW + 120, 3600, &confirmed, &e), 0);
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 0);
    /* a first measurement older than the age limit does not count */
    unlink(path);
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW - 7200, 3600, &confirmed, &e), 0);
    assert_int_equal(kg_libcache_put(path, "k", &l, NOW, 3600, &confirmed, &e), 0);
    assert_int_equal(confirmed, 0);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    unlink(path);
}

static void an_unfit_measurement_is_not_kept(void **state)
{
    (void)state;
    char path[256];
    kg_err e = {0, ""};
    kg_libref l = measured(), got;
    double age;
    int confirmed;
    temp_path(path, sizeof path, "libtimes");
    unlink(path);
    assert_null(kg_libcache_unfit(&l));
    l.disturbed = 3; /* throttled samples, or kgate's own work on other streams */
    assert_non_null(kg_libcache_unfit(&l));
    assert_int_not_equal(kg_libcache_put(path, "k", &l, NOW, 3600, &confirmed, &e), 0);
    assert_non_null(strstr(e.msg, "throttled"));
    assert_int_equal(count_lines(path), 0);
    l = measured();
    l.others = 1; /* another process held a context on the GPU around the job */
    assert_non_null(kg_libcache_unfit(&l));
    memset(&e, 0, sizeof e);
    assert_int_not_equal(kg_libcache_put(path, "k", &l, NOW, 3600, &confirmed, &e), 0);
    assert_non_null(strstr(e.msg, "another process"));
    assert_int_equal(count_lines(path), 0);
    l = measured();
    l.others = -1; /* not watched: no NVML, or a listing failed */
    memset(&e, 0, sizeof e);
    assert_int_not_equal(kg_libcache_put(path, "k", &l, NOW, 3600, &confirmed, &e), 0);
    assert_non_null(strstr(e.msg, "not listed"));
    assert_int_equal(count_lines(path), 0);
    l = measured();
    l.paths[1].status = KG_LIB_WRONG; /* maybe transient: measured again next time */
    assert_non_null(kg_libcache_unfit(&l));
    l = measured();
    l.have_best = 0; /* the bundled variant failed */
    assert_non_null(kg_libcache_unfit(&l));
    l = measured();
    l.paths[0].hi = 13.2e-6; /* an interval 6.4% wide */
    assert_non_null(kg_libcache_unfit(&l));
    l = measured();
    l.paths[0].lo = 0; /* no interval */
    assert_non_null(kg_libcache_unfit(&l));
    l = measured();
    l.best_hi = 0;
    assert_non_null(kg_libcache_unfit(&l));
    l = measured(); /* the bundled candidate did not open this time (src/gpu/worker.c's words) */
    l.have_best = 0;
    l.best_name[0] = '\0';
    snprintf(l.best_note, sizeof l.best_note, "the bundled candidate did not load: out of memory");
    assert_non_null(kg_libcache_unfit(&l));
    /* what would not read back is not written: a control character in a
     * note, a key too long for a line */
    l = measured();
    snprintf(l.paths[1].note, sizeof l.paths[1].note, "rows\tlonger");
    memset(&e, 0, sizeof e);
    assert_int_not_equal(kg_libcache_put(path, "k", &l, NOW, 3600, &confirmed, &e), 0);
    assert_non_null(strstr(e.msg, "valid entry"));
    static char longkey[KG_LIBCACHE_LINE_MAX];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    l = measured();
    memset(&e, 0, sizeof e);
    assert_int_not_equal(kg_libcache_put(path, longkey, &l, NOW, 3600, &confirmed, &e), 0);
    assert_non_null(strstr(e.msg, "longer than"));
    assert_int_equal(count_lines(path), 0);
    l = measured();
    l.measured = 0;
    assert_non_null(kg_libcache_unfit(&l));
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
}

/* A file holding `prefix`, then a confirmed valid entry of key "k" with
 * `from` replaced by `to`, then `suffix`. */
static void forged_file(const char *path, const char *prefix, const char *from, const char *to, const char *suffix)
{
    static char line[KG_LIBCACHE_LINE_MAX];
    kg_libref l = measured();
    entry_line(&l, NOW - 2, NOW - 1, line, sizeof line, 1);
    char *at = strstr(line, from);
    assert_non_null(at); /* the test's own mistake otherwise */
    FILE *f = fopen(path, "w");
    fputs(prefix, f);
    fprintf(f, "%.*s%s%s%s\n", (int)(at - line), line, to, at + strlen(from), suffix);
    fclose(f);
}

static int forged_hits(const char *prefix, const char *from, const char *to, const char *suffix)
{
    char path[256];
    kg_libref got;
    double age;
    temp_path(path, sizeof path, "forged");
    forged_file(path, prefix, from, to, suffix);
    int rc = kg_libcache_get(path, "k", 3600, NOW, &got, &age);
    unlink(path);
    return rc == 0;
}

static void forged_and_broken_lines_are_ignored(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to;
    } cases[] = {
        {"kgate.libcache/1", "kgate.libcache/2"}, /* another schema */
        {"\"n\":2", "\"n\":0"},                   /* no measurement */
        {"\"n\":2", "\"n\":2.5"},
        {"\"at\":1799999999", "\"at\":0"},
        {"\"at\":1799999999", "\"at\":\"now\""},
        /* each time rule alone: the interval moved with the median */
        {"\"t\":1.25e-05,\"lo\":1.24e-05,\"hi\":1.27e-05", "\"t\":-1.25e-05,\"lo\":-1.26e-05,\"hi\":-1.24e-05"},
        {"\"t\":1.25e-05,\"lo\":1.24e-05,\"hi\":1.27e-05", "\"t\":0,\"lo\":0,\"hi\":0"},
        {"\"t\":1.25e-05,\"lo\":1.24e-05,\"hi\":1.27e-05", "\"t\":1e999,\"lo\":1e999,\"hi\":1e999"},
        {"\"t\":1.25e-05,\"lo\":1.24e-05,\"hi\":1.27e-05", "\"t\":7200,\"lo\":7199,\"hi\":7201"},
        {"\"t\":1.25e-05,\"lo\":1.24e-05,\"hi\":1.27e-05", "\"t\":3599,\"lo\":0,\"hi\":0"}, /* no interval */
        {"\"t\":1.25e-05,\"lo\":1.24e-05,\"hi\":1.27e-05", "\"t\":\"fast\",\"lo\":1.24e-05,\"hi\":1.27e-05"},
        {"\"lo\":1.24e-05", "\"lo\":1.26e-05"},   /* an interval above its median */
        {"\"hi\":1.27e-05", "\"hi\":1.24e-05"},   /* below it */
        {"\"hi\":1.27e-05", "\"hi\":1.4e-05"},    /* 13% wide */
        {"\"status\":\"ok\"", "\"status\":\"fast\""},
        {"\"status\":\"ok\"", "\"status\":\"incorrect\""}, /* a failed check is never stored */
        {"\"status\":\"unsupported\",\"t\":0", "\"status\":\"unsupported\",\"t\":1e-05"},
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"cudnn-softmax-with-a-name-longer-than-forty-bytes\""},
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"cub-softmax\""}, /* one path twice */
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"\""},
        {"\"name\":\"cudnn-softmax\"", "\"name\":\"cudnn\\nsoftmax\""}, /* a control character */
        {"\"best_name\":\"softmax_v2_fp16\"", "\"best_name\":\"softmax_v1_fp16\""}, /* best's name disagrees */
        {"\"name\":\"softmax_v2_fp16\"", "\"name\":\"\""},
        {"\"t\":1.1e-05,\"lo\":1.09e-05,\"hi\":1.12e-05", "\"t\":0,\"lo\":0,\"hi\":0"}, /* a best time that is none */
        {"\"paths\":[", "\"paths\":{\"a\":["},    /* not JSON any more */
        {"\"key\":\"k\"", "\"key\":7"},
        /* a bundled variant's name without its time */
        {"\"best\":{\"name\":\"softmax_v2_fp16\",\"note\":\"bundled softmax_v2_fp16: one warp a row\",\"t\":1.1e-05,"
         "\"lo\":1.09e-05,\"hi\":1.12e-05}",
         "\"no_best\":\"\""},
    };
    assert_true(forged_hits("", "\"key\":\"k\"", "\"key\":\"k\"", "")); /* the line as written */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (forged_hits("", cases[i].from, cases[i].to, ""))
            fail_msg("case %zu (%s -> %s) was used", i, cases[i].from, cases[i].to);
    /* seven paths */
    assert_false(forged_hits("", "\"paths\":[",
                             "\"paths\":[{\"name\":\"a\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"b\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"c\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"d\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},"
                             "{\"name\":\"e\",\"note\":\"\",\"status\":\"unsupported\",\"t\":0,\"lo\":0,\"hi\":0},",
                             ""));
    /* bytes after the object */
    assert_false(forged_hits("", "\"key\":\"k\"", "\"key\":\"k\"", "GARBAGE"));
    assert_true(forged_hits("", "\"key\":\"k\"", "\"key\":\"k\"", "  ")); /* whitespace is not */
    /* a line too long to be an entry, though it is one behind its padding;
     * the line after it is read whole */
    static char pad[KG_LIBCACHE_LINE_MAX + 2];
    memset(pad, ' ', KG_LIBCACHE_LINE_MAX);
    pad[KG_LIBCACHE_LINE_MAX] = '\0';
    static char padded[KG_LIBCACHE_LINE_MAX + 16];
    snprintf(padded, sizeof padded, "%s{\"schema\"", pad);
    assert_false(forged_hits("", "{\"schema\"", padded, ""));
    pad[KG_LIBCACHE_LINE_MAX] = '\n';
    pad[KG_LIBCACHE_LINE_MAX + 1] = '\0';
    assert_true(forged_hits(pad, "\"key\":\"k\"", "\"key\":\"k\"", ""));
    /* a torn line before a good one */
    assert_true(forged_hits("{\"schema\":\"kgate.libcache/1\",\"key\":\"k\",\"at\":1800000000,\"paths\":[{\"name\":\"cud\n",
                            "\"key\":\"k\"", "\"key\":\"k\"", ""));
}

/* A NUL byte makes its line unusable, not the next one. */
static void a_nul_byte_spoils_only_its_line(void **state)
{
    (void)state;
    char path[256];
    static char line[KG_LIBCACHE_LINE_MAX];
    kg_libref l = measured(), got;
    double age;
    entry_line(&l, NOW - 2, NOW - 1, line, sizeof line, 0);
    size_t len = strlen(line);
    temp_path(path, sizeof path, "nul");
    FILE *f = fopen(path, "w");
    fwrite(line, 1, len - 1, f); /* the entry, a NUL, then its newline */
    fputc('\0', f);
    fputc('\n', f);
    fclose(f);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 1);
    f = fopen(path, "a");
    fwrite(line, 1, len, f);
    fclose(f);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 0);
    unlink(path);
}

static void the_newest_entry_of_a_key_wins(void **state)
{
    (void)state;
    char path[256];
    static char older[KG_LIBCACHE_LINE_MAX], newer[KG_LIBCACHE_LINE_MAX];
    kg_libref l = measured(), got;
    double age;
    entry_line(&l, NOW - 60, NOW - 50, older, sizeof older, 0);
    l.paths[0].t = 12.6e-6;
    entry_line(&l, NOW - 20, NOW - 10, newer, sizeof newer, 0);
    /* two writers' files joined: the newer in either order */
    temp_path(path, sizeof path, "two");
    FILE *f = fopen(path, "w");
    fputs(newer, f);
    fputs(older, f);
    fclose(f);
    assert_int_equal(kg_libcache_get(path, "k", 3600, NOW, &got, &age), 0);
    assert_true(got.paths[0].t == 12.6e-6 && age > 9.9 && age < 10.1);
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
        assert_int_equal(kg_libcache_put(path, key, &l, NOW - 1, 3600, NULL, &e), 0);
        assert_int_equal(kg_libcache_put(path, key, &l, NOW, 3600, NULL, &e), 0);
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
    /* under /dev a sandboxed candidate could write it */
    if (access("/dev/shm", W_OK) == 0) {
        setenv("XDG_CACHE_HOME", "/dev/shm", 1);
        memset(&e, 0, sizeof e); /* kg_err keeps its first error */
        assert_int_not_equal(kg_libcache_path(UUID, path, sizeof path, &e), 0);
        if (!strstr(e.msg, "under /dev"))
            fail_msg("%s", e.msg);
        rmdir("/dev/shm/kgate");
        /* and through a link, which the directory's real path shows */
        char link[300];
        snprintf(link, sizeof link, "%s/to-shm", dir);
        assert_int_equal(symlink("/dev/shm", link), 0);
        setenv("XDG_CACHE_HOME", link, 1);
        memset(&e, 0, sizeof e);
        assert_int_not_equal(kg_libcache_path(UUID, path, sizeof path, &e), 0);
        if (!strstr(e.msg, "/dev/shm/kgate is under /dev"))
            fail_msg("%s", e.msg);
        rmdir("/dev/shm/kgate");
        unlink(link);
        setenv("XDG_CACHE_HOME", dir, 1);
    }
    char sub[300];
    snprintf(sub, sizeof sub, "%s/kgate", dir);
    rmdir(sub);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_key_is_the_library_job),
        cmocka_unit_test(an_entry_is_used_once_two_measurements_agree),
        cmocka_unit_test(a_measurement_that_disagrees_starts_again),
        cmocka_unit_test(an_unfit_measurement_is_not_kept),
        cmocka_unit_test(forged_and_broken_lines_are_ignored),
        cmocka_unit_test(a_nul_byte_spoils_only_its_line),
        cmocka_unit_test(the_newest_entry_of_a_key_wins),
        cmocka_unit_test(the_file_stays_bounded),
        cmocka_unit_test(the_path_names_the_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
