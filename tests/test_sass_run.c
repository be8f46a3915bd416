/* cuobjdump in the background (diagnose/sass_run.h), with tests/fake_cuobjdump.sh
 * standing in for it (KG_CUOBJDUMP): what it is asked, what it can see of
 * the worker, what comes back to which kernel, and that nothing is left
 * behind, running or on disk. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diagnose/sass_run.h"

static char dir[64], logf[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kgate-sassrun-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(logf, sizeof logf, "%s.log", dir);
    unlink(logf);
    setenv("KG_CUOBJDUMP", KG_TEST_SRC "/fake_cuobjdump.sh", 1);
    setenv("FAKE_LOG", logf, 1);
    unsetenv("FAKE_FAIL");
    unsetenv("FAKE_SLEEP");
    unsetenv("KG_SASS_DEADLINE");
    return 0;
}

static int files_in(const char *d)
{
    int n = 0;
    DIR *p = opendir(d);
    assert_non_null(p);
    for (struct dirent *e; (e = readdir(p));)
        n += e->d_name[0] != '.';
    closedir(p);
    return n;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(files_in(dir), 0); /* no cubin or listing left behind */
    rmdir(dir);
    unlink(logf);
    char child[160];
    snprintf(child, sizeof child, "%s.child", logf);
    unlink(child);
    return 0;
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

/* A test cubin: a tag, then its functions' names, NUL-separated. */
#define CUBIN(s) {s, sizeof s}

static void kernels(kg_kfacts *ks, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        kg_kfacts_init(&ks[i]);
        snprintf(ks[i].name, sizeof ks[i].name, "%s", names[i]);
    }
}

static void counts_go_to_their_kernels(void **state)
{
    (void)state;
    const kg_sass_cubin cs[] = {CUBIN("WIDE\0kern_a\0kern_b"), CUBIN("NARROW\0kern_c")};
    const char names[4][KG_KNAME_MAX] = {"kern_a", "kern_c", "?", ""};
    kg_diagnosis d;
    memset(&d, 0, sizeof d);
    kg_sass_run *r = kg_sass_run_start(cs, 2, names, 4, dir, &d);
    assert_non_null(r);
    kg_kfacts ks[3];
    kernels(ks, (const char *const[]){"kern_a", "kern_c", "kern_b"}, 3);
    kg_sass_run_finish(r, ks, 3, 0, &d);
    assert_true(ks[0].sass.found && ks[0].sass.ldg_128 == 1 && ks[0].sass.ldg_narrow == 1);
    assert_true(ks[1].sass.found && ks[1].sass.ldg_128 == 0 && ks[1].sass.ldg_narrow == 1);
    assert_false(ks[2].sass.found); /* not asked for */
    assert_string_equal(d.note, "");
    const char *log = slurp(logf);
    /* each cubin asked for its own wanted names only; "?" and "" for none */
    assert_non_null(strstr(log, "argv: fun=[kern_a] whole=0"));
    assert_non_null(strstr(log, "argv: fun=[kern_c] whole=0"));
    assert_null(strstr(log, "kern_b]"));
    /* it sees nothing of the worker's: fd 9 (open here) closed, stdin /dev/null */
    assert_null(strstr(log, "fd9: open"));
    assert_non_null(strstr(log, "fd9: closed"));
    assert_non_null(strstr(log, "stdin: /dev/null"));
    /* its own temporary files go where kgate's go */
    char want[128];
    snprintf(want, sizeof want, "tmpdir: %s\n", dir);
    assert_non_null(strstr(log, want));
}

static void odd_names_take_the_whole_cubin(void **state)
{
    (void)state;
    /* a name that could be an option, or split the list: never in -fun */
    const kg_sass_cubin cs[] = {CUBIN("WIDE\0-sass\0a,b\0plain")};
    const char names[3][KG_KNAME_MAX] = {"-sass", "a,b", "plain"};
    kg_diagnosis d;
    memset(&d, 0, sizeof d);
    kg_sass_run *r = kg_sass_run_start(cs, 1, names, 3, dir, &d);
    assert_non_null(r);
    kg_kfacts ks[3];
    kernels(ks, (const char *const[]){"-sass", "a,b", "plain"}, 3);
    kg_sass_run_finish(r, ks, 3, 0, &d);
    const char *log = slurp(logf);
    assert_non_null(strstr(log, "argv: fun=[] whole=1"));
    assert_null(strstr(log, "whole=0"));
    assert_true(ks[0].sass.found && ks[1].sass.found && ks[2].sass.found);
}

static void a_name_in_two_cubins_is_said(void **state)
{
    (void)state;
    /* an autotuner's configurations: the first loaded cubin's counts, said */
    const kg_sass_cubin cs[] = {CUBIN("NARROW\0matmul_kernel"), CUBIN("WIDE\0matmul_kernel")};
    const char names[1][KG_KNAME_MAX] = {"matmul_kernel"};
    kg_diagnosis d;
    memset(&d, 0, sizeof d);
    kg_sass_run *r = kg_sass_run_start(cs, 2, names, 1, dir, &d);
    kg_kfacts ks[1];
    kernels(ks, (const char *const[]){"matmul_kernel"}, 1);
    kg_sass_run_finish(r, ks, 1, 0, &d);
    assert_true(ks[0].sass.found && ks[0].sass.ldg_128 == 0);
    assert_non_null(strstr(d.note, "matmul_kernel is in 2 cubins"));
}

static void a_name_ending_another_finds_its_own(void **state)
{
    (void)state;
    /* softmax_kernel's bytes end online_softmax_kernel too: the first cubin
     * is asked and has no such function; the second answers, and nothing
     * is said of two cubins */
    const kg_sass_cubin cs[] = {CUBIN("NARROW\0online_softmax_kernel"), CUBIN("WIDE\0softmax_kernel")};
    const char names[1][KG_KNAME_MAX] = {"softmax_kernel"};
    kg_diagnosis d;
    memset(&d, 0, sizeof d);
    kg_sass_run *r = kg_sass_run_start(cs, 2, names, 1, dir, &d);
    kg_kfacts ks[1];
    kernels(ks, (const char *const[]){"softmax_kernel"}, 1);
    kg_sass_run_finish(r, ks, 1, 0, &d);
    assert_true(ks[0].sass.found && ks[0].sass.ldg_128 == 1);
    assert_null(strstr(d.note, "cubins"));
}

static void a_failure_gives_no_counts(void **state)
{
    (void)state;
    setenv("FAKE_FAIL", "1", 1);
    const kg_sass_cubin cs[] = {CUBIN("WIDE\0k")};
    const char names[1][KG_KNAME_MAX] = {"k"};
    kg_diagnosis d;
    memset(&d, 0, sizeof d);
    kg_kfacts ks[1];
    kernels(ks, (const char *const[]){"k"}, 1);
    kg_sass_run_finish(kg_sass_run_start(cs, 1, names, 1, dir, &d), ks, 1, 0, &d);
    assert_false(ks[0].sass.found); /* its listing was printed, but the exit says it is not whole */
    assert_non_null(strstr(d.note, "cuobjdump failed on a cubin"));
}

/* Running (a zombie, waiting for whoever reaps orphans here, is not). */
static int alive(pid_t p)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close = strrchr(buf, ')');
    return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

static pid_t child_of_fake(void)
{
    char path[160];
    snprintf(path, sizeof path, "%s.child", logf);
    for (int i = 0; i < 500; i++) { /* the fake writes it at once */
        long p = atol(slurp(path));
        if (p > 0)
            return (pid_t)p;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* A cuobjdump that sleeps 30 s, having started a child: the run, and the
 * child's pid. */
static kg_sass_run *sleeper(kg_diagnosis *d, pid_t *child)
{
    static const kg_sass_cubin cs[] = {CUBIN("WIDE\0k")};
    static const char names[1][KG_KNAME_MAX] = {"k"};
    setenv("FAKE_SLEEP", "30", 1);
    memset(d, 0, sizeof *d);
    kg_sass_run *r = kg_sass_run_start(cs, 1, names, 1, dir, d);
    assert_non_null(r);
    *child = child_of_fake();
    assert_true(*child > 0 && alive(*child));
    return r;
}

static void late_ones_are_killed_with_their_group(void **state)
{
    (void)state;
    setenv("KG_SASS_DEADLINE", "1", 1);
    kg_diagnosis d;
    kg_kfacts ks[1];
    kernels(ks, (const char *const[]){"k"}, 1);
    pid_t c;
    kg_sass_run *r = sleeper(&d, &c);
    time_t t0 = time(NULL);
    kg_sass_run_finish(r, ks, 1, 0, &d);
    assert_true(time(NULL) - t0 <= 5);
    assert_false(ks[0].sass.found);
    assert_non_null(strstr(d.note, "cuobjdump ran past its 1 s"));
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    assert_false(alive(c)); /* what it started went with it */
}

static void abandoned_ones_are_killed_at_once(void **state)
{
    (void)state;
    kg_diagnosis d;
    pid_t c;
    kg_sass_run *r = sleeper(&d, &c);
    time_t t0 = time(NULL);
    kg_sass_run_finish(r, NULL, 0, 1, &d);
    assert_true(time(NULL) - t0 <= 2);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    assert_false(alive(c));
    assert_string_equal(d.note, "");
}

static void nothing_to_do_is_no_run(void **state)
{
    (void)state;
    const kg_sass_cubin cs[] = {CUBIN("WIDE\0k")};
    const char names[2][KG_KNAME_MAX] = {"absent", "?"};
    kg_diagnosis d;
    memset(&d, 0, sizeof d);
    assert_null(kg_sass_run_start(cs, 1, names, 2, dir, &d));
    kg_sass_run_finish(NULL, NULL, 0, 0, &d); /* a no-op */
    if (access("/usr/local/cuda/bin/cuobjdump", X_OK) == 0)
        return; /* kgate's last resort finds a real one here: no "not found" to see */
    setenv("KG_CUOBJDUMP", "/nonexistent/cuobjdump", 1);
    unsetenv("CUDA_HOME");
    const char want[1][KG_KNAME_MAX] = {"k"};
    setenv("PATH", "/nonexistent", 1);
    kg_sass_run *r = kg_sass_run_start(cs, 1, want, 1, dir, &d);
    kg_sass_run_finish(r, NULL, 0, 1, &d); /* should one have started after all */
    assert_null(r);
    assert_non_null(strstr(d.note, "cuobjdump not found"));
}

int main(void)
{
    /* a descriptor the worker has open without close-on-exec, as its event pipe */
    int p[2];
    if (pipe(p) != 0 || dup2(p[1], 9) != 9)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(counts_go_to_their_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(odd_names_take_the_whole_cubin, setup, teardown),
        cmocka_unit_test_setup_teardown(a_name_in_two_cubins_is_said, setup, teardown),
        cmocka_unit_test_setup_teardown(a_name_ending_another_finds_its_own, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failure_gives_no_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(late_ones_are_killed_with_their_group, setup, teardown),
        cmocka_unit_test_setup_teardown(abandoned_ones_are_killed_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(nothing_to_do_is_no_run, setup, teardown), /* last: it changes PATH */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
