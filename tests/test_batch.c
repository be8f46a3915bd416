/* Batch judging's rules (store/batch.h): manifest lines, deterministic
 * shards from the option or the environment, the id set, the results file
 * (lock, resume, torn lines, schema) and the streaming merge. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/batch.h"

static void manifest_lines(void **state)
{
    (void)state;
    kg_batch_job j;
    kg_err e = {0, ""};
    assert_int_equal(kg_manifest_line("{\"candidate\":\"a.so\",\"kernel\":\"k\",\"op\":\"relu\",\"dtype\":\"fp16\","
                                      "\"shape\":\"large\",\"options\":[\"--hot\"]}",
                                      3, &j, &e),
                     0);
    assert_string_equal(j.id, "a.so:k|relu|fp16|large");
    assert_int_equal(j.n_opts, 1);
    assert_string_equal(j.opts[0], "--hot");
    assert_int_equal(j.line, 3);
    assert_int_equal(j.gpu, -1);
    assert_int_equal(kg_manifest_line("{\"id\":\"mine\",\"candidate\":\"b.py\"}", 1, &j, &e), 0);
    assert_string_equal(j.id, "mine");
    assert_int_equal(kg_manifest_line("{\"candidate\":\"b.py\",\"gpu\":1}", 2, &j, &e), 0);
    assert_int_equal(j.gpu, 1);
    assert_string_equal(j.id, "b.py|||@gpu1"); /* pinned twice: two jobs */
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"[1]", "line 9: not a JSON object"},
        {"{\"op\":\"relu\"}", "no 'candidate'"},
        {"{\"candidate\":\"\"}", "'candidate' must be"},
        {"{\"candidate\":7}", "'candidate' must be"},
        {"{\"candidate\":\"a\",\"x\":1}", "unknown field 'x'"},
        {"{\"candidate\":\"a\",\"options\":\"--hot\"}", "'options' must be an array"},
        {"{\"candidate\":\"a\",\"options\":[\"--device\",\"1\"]}", "is the batch's"},
        {"{\"candidate\":\"a\",\"options\":[\"--events=/tmp/e\"]}", "is the batch's"},
        {"{\"candidate\":\"a\",\"options\":[\"--server\",\"s.sock\"]}", "'--server' is not a job's"},
        {"{\"candidate\":\"a\",\"options\":[\"--server=auto\"]}", "'--server' is not a job's"},
        {"{\"candidate\":\"a\",\"options\":[3]}", "non-string"},
        {"{\"candidate\":\"a\\u0001b\"}", "control character"},
        {"{\"candidate\":\"a\\u009bb\"}", "control character"}, /* C1 */
        {"{\"candidate\":\"a\xff.so\"}", "not UTF-8"},
        {"{\"candidate\":\"a\",\"options\":[\"--x\\u001b\"]}", "control character"},
        {"{\"candidate\":\"a\",\"gpu\":-1}", "'gpu' must be a GPU index"},
        {"{\"candidate\":\"a\",\"gpu\":1.5}", "'gpu' must be a GPU index"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_err x = {0, ""};
        assert_int_equal(kg_manifest_line(bad[i].text, 9, &j, &x), KG_EXIT_USAGE);
        if (!strstr(x.msg, bad[i].want))
            fail_msg("%s: '%s' lacks '%s'", bad[i].text, x.msg, bad[i].want);
    }
}

static void bad(void *ud, const char *msg)
{
    char *seen = ud;
    snprintf(seen + strlen(seen), 512 - strlen(seen), "%s|", msg);
}

/* A manifest is read line by line: a NUL byte refuses its line (it would
 * cut it short silently), named; what is not a regular file (a FIFO, a
 * device) is refused at once, since its open or its reads need not end. */
static void manifest_files(void **state)
{
    (void)state;
    char path[] = "/tmp/kg-test-manifest-XXXXXX", seen[512] = "";
    int fd = mkstemp(path);
    const char text[] = "{\"candidate\":\"a.so\"}\n{\"candidate\":\"b.so\"}\0{\"x\":1}\n\n{\"candidate\":\"c.so\"}";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)sizeof text - 1);
    close(fd);
    kg_batch_jobs jobs = {0};
    kg_err e = {0, ""};
    assert_int_equal(kg_manifest_read(path, &jobs, bad, seen, &e), 0);
    assert_int_equal(jobs.n, 2);
    assert_string_equal(jobs.v[1].candidate, "c.so");
    assert_int_equal(jobs.v[1].line, 4);
    assert_int_equal(jobs.n_bad, 1);
    assert_non_null(strstr(seen, ":2: holds a NUL byte|"));
    kg_batch_jobs_free(&jobs);
    unlink(path);
    char fifo[] = "/tmp/kg-test-fifo-XXXXXX";
    close(mkstemp(fifo));
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *special[][2] = {{fifo, "not a regular file (a FIFO)"}, {"/dev/zero", "not a regular file (a device)"},
                                {"/tmp", "not a regular file (a directory)"}};
    for (int i = 0; i < 3; i++) {
        kg_err x = {0, ""}, y = {0, ""};
        assert_int_equal(kg_manifest_read(special[i][0], &jobs, NULL, NULL, &x), KG_EXIT_IO);
        assert_non_null(strstr(x.msg, special[i][1]));
        assert_int_equal(kg_open_regular(special[i][0], O_RDWR | O_CREAT | O_APPEND, &y), -1);
        assert_int_equal(y.code, KG_EXIT_IO);
        kg_batch_jobs_free(&jobs);
    }
    unlink(fifo);
}

static void shards(void **state)
{
    (void)state;
    int r, s;
    const char *src;
    kg_err e = {0, ""};
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_NTASKS");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    assert_int_equal(kg_shard_get(NULL, &r, &s, &src, &e), 0);
    assert_int_equal(r * 10 + s, 1);
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    assert_int_equal(kg_shard_get(NULL, &r, &s, &src, &e), 0);
    assert_int_equal(r, 2);
    assert_int_equal(s, 8);
    assert_string_equal(src, "Open MPI");
    setenv("SLURM_PROCID", "5", 1); /* Slurm first */
    setenv("SLURM_NTASKS", "64", 1);
    assert_int_equal(kg_shard_get(NULL, &r, &s, &src, &e), 0);
    assert_int_equal(r, 5);
    assert_string_equal(src, "Slurm");
    assert_int_equal(kg_shard_get("3/4", &r, &s, &src, &e), 0); /* the option over both */
    assert_int_equal(r * 10 + s, 34);
    setenv("SLURM_PROCID", "64", 1);
    assert_int_equal(kg_shard_get(NULL, &r, &s, &src, &e), KG_EXIT_USAGE);
    assert_int_equal(kg_shard_get("4/4", &r, &s, &src, &e), KG_EXIT_USAGE);
    assert_int_equal(kg_shard_get("x", &r, &s, &src, &e), KG_EXIT_USAGE);
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_NTASKS");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    /* every job in exactly one shard, the same one every time */
    for (int size = 1; size <= 7; size++)
        for (int i = 0; i < 100; i++) {
            int owners = 0;
            for (int rank = 0; rank < size; rank++)
                owners += kg_shard_mine(i, rank, size);
            assert_int_equal(owners, 1);
        }
}

static void idset(void **state)
{
    (void)state;
    kg_idset s = {0};
    char id[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(id, sizeof id, "job%d", i);
        assert_int_equal(kg_idset_add(&s, id), 1);
    }
    assert_int_equal(kg_idset_add(&s, "job42"), 0);
    assert_true(kg_idset_has(&s, "job4999"));
    assert_false(kg_idset_has(&s, "job5000"));
    assert_int_equal((int)s.n, 5000);
    kg_idset_free(&s);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void results_file(void **state)
{
    (void)state;
    char path[] = "/tmp/kg-test-results-XXXXXX";
    int t = mkstemp(path);
    assert_true(t >= 0);
    close(t);
    /* two finished jobs and a torn last line from a killed run */
    write_file(path, "{\"schema\":\"kgate.batch/1\",\"id\":\"a\",\"exit\":0}\n"
                     "{\"schema\":\"kgate.batch/1\",\"id\":\"b\",\"exit\":1}\n"
                     "{\"schema\":\"kgate.batch/1\",\"id\":\"c\",\"ex");
    int fd, torn;
    long cut;
    kg_idset done = {0};
    kg_err e = {0, ""};
    assert_int_equal(kg_results_open(path, &fd, &done, &torn, &cut, &e), 0);
    assert_true(kg_idset_has(&done, "a") && kg_idset_has(&done, "b"));
    assert_false(kg_idset_has(&done, "c"));
    assert_int_equal(torn, 1);
    assert_int_equal(cut, (long)strlen("{\"schema\":\"kgate.batch/1\",\"id\":\"c\",\"ex"));
    /* a second writer is refused while the first holds the file */
    int fd2, torn2;
    long cut2;
    kg_idset d2 = {0};
    kg_err e2 = {0, ""};
    assert_int_equal(kg_results_open(path, &fd2, &d2, &torn2, &cut2, &e2), KG_EXIT_IO);
    assert_non_null(strstr(e2.msg, "another batch is writing it"));
    assert_int_equal(kg_results_append(fd, "{\"schema\":\"kgate.batch/1\",\"id\":\"c\",\"exit\":0}", &e), 0);
    close(fd);
    kg_idset_free(&done);
    kg_idset_free(&d2);
    /* reopened: the torn line was cut off, the new line starts on its own */
    done = (kg_idset){0};
    assert_int_equal(kg_results_open(path, &fd, &done, &torn, &cut, &e), 0);
    assert_true(kg_idset_has(&done, "c"));
    assert_int_equal(torn, 0);
    assert_int_equal(cut, 0);
    /* a line that cannot be written whole (a file size limit) leaves none of
     * itself behind, and says why */
    struct rlimit old_lim, lim;
    struct stat before, after;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_lim), 0);
    assert_int_equal(fstat(fd, &before), 0);
    lim = old_lim;
    lim.rlim_cur = (rlim_t)before.st_size + 10;
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    kg_err e4 = {0, ""};
    assert_int_equal(kg_results_append(fd, "{\"schema\":\"kgate.batch/1\",\"id\":\"d\",\"exit\":0}", &e4), KG_EXIT_IO);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old_lim), 0);
    signal(SIGXFSZ, old_xfsz);
    assert_non_null(strstr(e4.msg, "write: File too large after 10 of"));
    assert_int_equal(fstat(fd, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    close(fd);
    kg_idset_free(&done);
    /* a whole last line that lacks only its newline is finished: its job is
     * done, and the line gets its newline */
    write_file(path, "{\"schema\":\"kgate.batch/1\",\"id\":\"a\",\"exit\":0}\n"
                     "{\"schema\":\"kgate.batch/1\",\"id\":\"b\",\"exit\":1}");
    done = (kg_idset){0};
    assert_int_equal(kg_results_open(path, &fd, &done, &torn, &cut, &e), 0);
    assert_true(kg_idset_has(&done, "a") && kg_idset_has(&done, "b"));
    assert_int_equal(torn, 0);
    assert_int_equal(cut, 0);
    assert_int_equal(kg_results_append(fd, "{\"schema\":\"kgate.batch/1\",\"id\":\"c\",\"exit\":0}", &e), 0);
    close(fd);
    kg_idset_free(&done);
    done = (kg_idset){0};
    assert_int_equal(kg_results_open(path, &fd, &done, &torn, &cut, &e), 0);
    assert_int_equal(done.n, 3);
    assert_int_equal(torn, 0);
    /* a writer killed in the middle of its line while this one holds the
     * file (another supervisor): its fragment is cut off before the next
     * line, which is not glued to it */
    const char *frag = "{\"schema\":\"kgate.batch/1\",\"id\":\"x\",\"check\":{\"res";
    assert_int_equal(write(fd, frag, strlen(frag)), (ssize_t)strlen(frag));
    assert_int_equal(kg_results_append(fd, "{\"schema\":\"kgate.batch/1\",\"id\":\"d\",\"exit\":0}", &e), 0);
    close(fd);
    kg_idset_free(&done);
    done = (kg_idset){0};
    assert_int_equal(kg_results_open(path, &fd, &done, &torn, &cut, &e), 0);
    assert_int_equal(done.n, 4);
    assert_true(kg_idset_has(&done, "d"));
    assert_false(kg_idset_has(&done, "x"));
    assert_int_equal(torn, 0);
    close(fd);
    kg_idset_free(&done);
    /* another schema is an error naming the file */
    write_file(path, "{\"schema\":\"kgate.batch/2\",\"id\":\"a\"}\n");
    done = (kg_idset){0};
    kg_err e3 = {0, ""};
    assert_int_equal(kg_results_open(path, &fd, &done, &torn, &cut, &e3), KG_EXIT_IO);
    assert_non_null(strstr(e3.msg, "schema kgate.batch/2"));
    kg_idset_free(&done);
    /* merging keeps the first line of each id */
    char p2[] = "/tmp/kg-test-results2-XXXXXX", out[64];
    close(mkstemp(p2));
    write_file(path, "{\"schema\":\"kgate.batch/1\",\"id\":\"a\",\"n\":1}\n{\"schema\":\"kgate.batch/1\",\"id\":\"b\"}\n");
    /* a service's progress line (docs/serve.md) is left out: its answer is the line of its id */
    write_file(p2, "{\"schema\":\"kgate.batch/1\",\"id\":\"a\",\"n\":2}\n"
                   "{\"schema\":\"kgate.batch/1\",\"id\":\"d\",\"event\":\"kernel\",\"result\":{}}\n"
                   "{\"schema\":\"kgate.batch/1\",\"id\":\"d\"}\ntorn");
    snprintf(out, sizeof out, "%s.merged", path);
    const char *in[] = {path, p2};
    long kept, dups;
    assert_int_equal(kg_results_merge(out, in, 2, &kept, &dups, &e), 0);
    assert_int_equal(kept, 3);
    assert_int_equal(dups, 1);
    FILE *f = fopen(out, "r");
    char line[256];
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "\"n\":1"));
    while (fgets(line, sizeof line, f))
        assert_null(strstr(line, "event"));
    fclose(f);
    unlink(out);
    unlink(path);
    unlink(p2);
}

/* --done: another run's results file adds its finished ids, read-only (no
 * lock: it may be a file still held by nothing, or a merged one); a torn
 * line is counted, another schema or a missing file is an error naming it. */
static void results_done(void **state)
{
    (void)state;
    char path[] = "/tmp/kg-test-done-XXXXXX";
    close(mkstemp(path));
    write_file(path, "{\"schema\":\"kgate.batch/1\",\"id\":\"a\"}\n{\"schema\":\"kgate.batch/1\",\"id\":\"b\"}\ntorn");
    kg_idset done = {0};
    int torn = 0;
    kg_err e = {0, ""};
    assert_int_equal(kg_idset_add(&done, "z"), 1);
    assert_int_equal(kg_results_done(path, &done, &torn, &e), 0);
    assert_true(kg_idset_has(&done, "a") && kg_idset_has(&done, "b") && kg_idset_has(&done, "z"));
    assert_int_equal(done.n, 3);
    assert_int_equal(torn, 1);
    /* a file of kgate serve's answers: a progress line finishes nothing and is not torn */
    write_file(path, "{\"schema\":\"kgate.batch/1\",\"id\":\"c\",\"event\":\"kernel\",\"result\":{}}\n"
                     "{\"schema\":\"kgate.batch/1\",\"id\":\"c\",\"exit\":0}\n"
                     "{\"schema\":\"kgate.batch/1\",\"id\":\"e\",\"event\":\"kernel\",\"result\":{}}\n");
    torn = 0;
    assert_int_equal(kg_results_done(path, &done, &torn, &e), 0);
    assert_true(kg_idset_has(&done, "c"));
    assert_false(kg_idset_has(&done, "e"));
    assert_int_equal(torn, 0);
    /* a file a batch holds can still be read as done */
    int fd, t2;
    long cut;
    kg_idset held = {0};
    assert_int_equal(kg_results_open(path, &fd, &held, &t2, &cut, &e), 0);
    assert_int_equal(kg_results_done(path, &done, &torn, &e), 0);
    close(fd);
    kg_idset_free(&held);
    write_file(path, "{\"schema\":\"kgate.batch/2\",\"id\":\"a\"}\n");
    kg_err e2 = {0, ""};
    assert_int_equal(kg_results_done(path, &done, &torn, &e2), KG_EXIT_IO);
    assert_non_null(strstr(e2.msg, path));
    assert_non_null(strstr(e2.msg, "schema kgate.batch/2"));
    unlink(path);
    kg_err e3 = {0, ""};
    assert_int_equal(kg_results_done(path, &done, &torn, &e3), KG_EXIT_IO);
    assert_non_null(strstr(e3.msg, path));
    kg_idset_free(&done);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(manifest_lines),
        cmocka_unit_test(manifest_files),
        cmocka_unit_test(shards),
        cmocka_unit_test(idset),
        cmocka_unit_test(results_file),
        cmocka_unit_test(results_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
