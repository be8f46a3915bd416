/* Other processes on the GPU (supervise/others.h): kgate's own processes are
 * this one and its ancestors, read from /proc; a listing's processes that
 * are not its own are others, each counted once (the largest memory kept),
 * NVML's "not known" memory read as 0, and the count goes on past the kept
 * ones; every listing is counted, an empty one too (something is known);
 * merging adds one's listings to another's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "supervise/others.h"

static void own_processes_are_this_one_and_its_ancestors(void **state)
{
    (void)state;
    long p[KG_ANCESTORS_MAX];
    int n = kg_self_and_ancestors(p, KG_ANCESTORS_MAX);
    assert_true(n >= 2);
    assert_int_equal(p[0], (long)getpid());
    assert_int_equal(p[1], (long)getppid());
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            assert_true(p[i] != p[k]);
    /* bounded by max */
    assert_int_equal(kg_self_and_ancestors(p, 1), 1);
    assert_int_equal(p[0], (long)getpid());
    /* a child's chain starts with the child, then this process */
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t c = fork();
    if (c == 0) {
        long q[KG_ANCESTORS_MAX];
        int m = kg_self_and_ancestors(q, KG_ANCESTORS_MAX);
        long two[2] = {m >= 2 ? q[0] : -1, m >= 2 ? q[1] : -1};
        _exit(write(fd[1], two, sizeof two) == sizeof two ? 0 : 1);
    }
    long two[2];
    assert_int_equal(read(fd[0], two, sizeof two), (ssize_t)sizeof two);
    waitpid(c, NULL, 0);
    assert_int_equal(two[0], (long)c);
    assert_int_equal(two[1], (long)getpid());
    close(fd[0]);
    close(fd[1]);
}

static void a_listing_counts_the_processes_not_kgates(void **state)
{
    (void)state;
    kg_others o;
    memset(&o, 0, sizeof o);
    const long own[] = {100, 50, 1};
    const long pid[] = {100, 200, 50, 300};
    const double mem[] = {1e9, 5e8, 2e9, -1};
    assert_int_equal(o.listed, 0);
    kg_others_note(&o, pid, mem, 4, own, 3);
    assert_int_equal(o.listed, 1);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.kept, 2);
    assert_int_equal(o.pid[0], 200);
    assert_int_equal(o.pid[1], 300);
    assert_true(o.mem[1] == 0); /* NVML did not say */
    assert_true(kg_others_mem(&o) == 5e8);
    /* the same processes in the next listing: counted once, the larger memory kept */
    const double more[] = {1e9, 6e8, 2e9, 1e8};
    kg_others_note(&o, pid, more, 4, own, 3);
    assert_int_equal(o.n, 2);
    assert_true(kg_others_mem(&o) == 7e8);
    /* an empty listing, and one of kgate's own only, change nothing */
    kg_others_note(&o, pid, mem, 0, own, 3);
    kg_others_note(&o, own, mem, 3, own, 3);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.listed, 4);
    /* no own processes known: every listed one is another */
    kg_others none;
    memset(&none, 0, sizeof none);
    kg_others_note(&none, pid, NULL, 4, NULL, 0);
    assert_int_equal(none.n, 4);
    assert_true(kg_others_mem(&none) == 0);
}

static void past_the_kept_ones_the_count_goes_on(void **state)
{
    (void)state;
    kg_others o;
    memset(&o, 0, sizeof o);
    long pid[KG_OTHERS_MAX + 5];
    for (int i = 0; i < KG_OTHERS_MAX + 5; i++)
        pid[i] = 1000 + i;
    kg_others_note(&o, pid, NULL, KG_OTHERS_MAX + 5, NULL, 0);
    assert_int_equal(o.kept, KG_OTHERS_MAX);
    assert_int_equal(o.n, KG_OTHERS_MAX + 5);
}

static void merging_adds_a_listing(void **state)
{
    (void)state;
    kg_others a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    const long pa[] = {1, 2}, pb[] = {2, 3};
    const double ma[] = {10, 20}, mb[] = {30, 40};
    kg_others_note(&a, pa, ma, 2, NULL, 0);
    kg_others_note(&b, pb, mb, 2, NULL, 0);
    kg_others_merge(&a, &b);
    assert_int_equal(a.n, 3);
    assert_int_equal(a.listed, 2);
    assert_true(kg_others_mem(&a) == 10 + 30 + 40);
    /* merging nothing, or into nothing */
    kg_others z;
    memset(&z, 0, sizeof z);
    kg_others_merge(&a, &z);
    assert_int_equal(a.n, 3);
    kg_others_merge(&z, &b);
    assert_int_equal(z.n, 2);
    assert_int_equal(z.listed, 1);
    /* a failed listing in either makes the merge not known to be complete */
    assert_int_equal(z.failed, 0);
    b.failed = 1;
    kg_others_merge(&z, &b);
    assert_int_equal(z.failed, 1);
    kg_others_merge(&z, &a);
    assert_int_equal(z.failed, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_processes_are_this_one_and_its_ancestors),
        cmocka_unit_test(a_listing_counts_the_processes_not_kgates),
        cmocka_unit_test(past_the_kept_ones_the_count_goes_on),
        cmocka_unit_test(merging_adds_a_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
