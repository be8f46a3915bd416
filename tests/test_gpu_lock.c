/* One GPU's work, one kgate process at a time (supervise/gpu_lock.h): the lock
 * file's place and the checks on its directory, a second process waiting
 * and then told the GPU is busy, the lock free again once its holder lets
 * it go or dies, the files' times set at every take, a stop asked during a
 * wait, a stopped turn holder that keeps nobody from a free GPU, the
 * failing call named, and KGATE_GPU_LOCK=0. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "supervise/gpu_lock.h"

#define UUID "GPU-0123abcd-0000-1111-2222-333344445555"

static char run_dir[256], lock_dir[300];

static int setup(void **state)
{
    (void)state;
    snprintf(run_dir, sizeof run_dir, "%s/gpulock-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(run_dir))
        return -1;
    snprintf(lock_dir, sizeof lock_dir, "%s/kgate", run_dir);
    setenv("KGATE_LOCK_DIR", lock_dir, 1);
    unsetenv("KGATE_GPU_LOCK");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", run_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void the_lock_file_is_in_a_directory_of_the_users_own(void **state)
{
    (void)state;
    char path[1200], want[600], dir[600];
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_path(UUID, path, sizeof path, &e), 0);
    snprintf(want, sizeof want, "%s/kgate/gpu-%s.lock", run_dir, UUID);
    assert_string_equal(path, want);
    struct stat st;
    snprintf(dir, sizeof dir, "%s/kgate", run_dir);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* not a UUID */
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_gpu_lock_path("../x", path, sizeof path, &e), KG_EXIT_IO);
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_gpu_lock_path("", path, sizeof path, &e), KG_EXIT_IO);
    /* a directory open to others, and a link, are refused */
    assert_int_equal(chmod(dir, 0755), 0);
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_gpu_lock_path(UUID, path, sizeof path, &e), KG_EXIT_IO);
    assert_non_null(strstr(e.msg, "0700"));
    assert_int_equal(chmod(dir, 0700), 0);
    char other[600], link_run[600], link[700];
    snprintf(other, sizeof other, "%s/elsewhere", run_dir);
    snprintf(link_run, sizeof link_run, "%s/linked", run_dir);
    assert_int_equal(mkdir(other, 0700), 0);
    assert_int_equal(mkdir(link_run, 0700), 0);
    snprintf(link, sizeof link, "%s/kgate", link_run);
    assert_int_equal(symlink(other, link), 0);
    setenv("KGATE_LOCK_DIR", link, 1);
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_gpu_lock_path(UUID, path, sizeof path, &e), KG_EXIT_IO);
    setenv("KGATE_LOCK_DIR", lock_dir, 1);
}

/* The children a test started and has not reaped: killed and reaped after
 * it (after_each, which also puts the environment back), so that one
 * failing leaves no holder nor setting to the next. */
static pid_t kids[8];

static pid_t kid(pid_t c)
{
    for (int i = 0; i < 8; i++)
        if (!kids[i]) {
            kids[i] = c;
            break;
        }
    return c;
}

static int after_each(void **state)
{
    (void)state;
    setenv("KGATE_LOCK_DIR", lock_dir, 1);
    unsetenv("KGATE_GPU_LOCK");
    for (int i = 0; i < 8; i++)
        if (kids[i]) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
            kids[i] = 0;
        }
    return 0;
}

/* a child that tries to take the lock for wait_s; its exit status says how
 * it went: 0 taken, 1 busy (and waited about wait_s), 2 other */
static pid_t try_in_child(double wait_s)
{
    pid_t c = fork();
    if (c == 0) {
        kg_gpu_lock l;
        kg_err e = {0, ""};
        double t0 = kg_mono();
        int rc = kg_gpu_lock_take(UUID, wait_s, &l, &e);
        if (rc == 0 && l.fd >= 0)
            _exit(0);
        if (rc == KG_EXIT_ENV && strstr(e.msg, "busy") && kg_mono() - t0 >= wait_s * 0.9)
            _exit(1);
        _exit(2);
    }
    return kid(c);
}

static int status_of(pid_t c)
{
    int st;
    waitpid(c, &st, 0);
    for (int i = 0; i < 8; i++)
        if (kids[i] == c)
            kids[i] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void a_second_process_waits_then_hears_the_gpu_is_busy(void **state)
{
    (void)state;
    kg_gpu_lock l;
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_take(UUID, 1, &l, &e), 0);
    assert_true(l.fd >= 0);
    assert_true(l.waited_s < 0.5);
    assert_int_equal(status_of(try_in_child(0.2)), 1);
    kg_gpu_lock_drop(&l);
    assert_int_equal(l.fd, -1);
    kg_gpu_lock_drop(&l); /* twice: nothing */
    assert_int_equal(status_of(try_in_child(0.2)), 0);
    /* another GPU's lock is another lock */
    assert_int_equal(kg_gpu_lock_take(UUID, 1, &l, &e), 0);
    kg_gpu_lock l2;
    assert_int_equal(kg_gpu_lock_take("GPU-ffff", 0.1, &l2, &e), 0);
    kg_gpu_lock_drop(&l2);
    kg_gpu_lock_drop(&l);
}

/* A child that holds the lock: takes it, holds it hold_ms, lets it go and
 * takes it straight back until again_s have passed, then dies holding it.
 * Returns its pid once it holds the lock the first time. */
static pid_t start_holder(int hold_ms, double again_s)
{
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t c = fork();
    if (c == 0) {
        kg_gpu_lock l;
        kg_err e = {0, ""};
        double t0 = kg_mono();
        for (int i = 0;; i++) {
            if (kg_gpu_lock_take(UUID, 5, &l, &e))
                _exit(3);
            if (i == 0 && write(go[1], "y", 1) != 1)
                _exit(3);
            usleep((useconds_t)hold_ms * 1000);
            if (kg_mono() - t0 >= again_s)
                _exit(0);
            kg_gpu_lock_drop(&l);
        }
    }
    kid(c);
    char x = 'n';
    close(go[1]);
    assert_int_equal(read(go[0], &x, 1), 1);
    assert_int_equal(x, 'y');
    close(go[0]);
    return c;
}

static void a_waiter_gets_it_once_the_holder_lets_go_or_dies(void **state)
{
    (void)state;
    pid_t holder = start_holder(300, 0); /* holds it 0.3 s and dies holding it */
    kg_gpu_lock l;
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_take(UUID, 5, &l, &e), 0);
    assert_true(l.waited_s > 0.1 && l.waited_s < 4); /* it waited for the holder's end */
    kg_gpu_lock_drop(&l);
    assert_int_equal(status_of(holder), 0);
}

/* a holder that lets go and takes the lock straight back, over and over,
 * does not keep a waiter out: the waiter gets its turn */
static void a_holder_taking_it_again_lets_a_waiter_have_its_turn(void **state)
{
    (void)state;
    pid_t hog = start_holder(20, 1.5);
    kg_gpu_lock l;
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_take(UUID, 0.5, &l, &e), 0); /* within about one hold */
    assert_true(l.waited_s < 0.3);
    kg_gpu_lock_drop(&l);
    assert_int_equal(status_of(hog), 0);
}

/* every take sets the lock file's and the turn file's times to now: an
 * age-based cleaner of /tmp then never removes the files of a lock in use */
static void taking_it_sets_its_files_times_to_now(void **state)
{
    (void)state;
    char path[1200], turn[1300];
    kg_gpu_lock l;
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_path(UUID, path, sizeof path, &e), 0);
    snprintf(turn, sizeof turn, "%s.turn", path);
    assert_int_equal(kg_gpu_lock_take(UUID, 1, &l, &e), 0); /* both files made */
    kg_gpu_lock_drop(&l);
    const struct timespec long_ago[2] = {{1000000000, 0}, {1000000000, 0}}; /* 2001 */
    assert_int_equal(utimensat(AT_FDCWD, path, long_ago, 0), 0);
    assert_int_equal(utimensat(AT_FDCWD, turn, long_ago, 0), 0);
    time_t before = time(NULL);
    assert_int_equal(kg_gpu_lock_take(UUID, 1, &l, &e), 0);
    struct stat st, tst;
    int s1 = stat(path, &st), s2 = stat(turn, &tst);
    kg_gpu_lock_drop(&l);
    assert_int_equal(s1, 0);
    assert_int_equal(s2, 0);
    assert_true(st.st_mtime >= before - 1 && st.st_atime >= before - 1);
    assert_true(tst.st_mtime >= before - 1 && tst.st_atime >= before - 1);
}

/* whether some process holds the turn file, asked for up to 2 s (a
 * waiter takes it as it starts waiting) */
static int turn_held(void)
{
    char path[1200], turn[1300];
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_path(UUID, path, sizeof path, &e), 0);
    snprintf(turn, sizeof turn, "%s.turn", path);
    for (int i = 0; i < 400; i++) {
        int fd = open(turn, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            int held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
            close(fd);
            if (held)
                return 1;
        }
        usleep(5000);
    }
    return 0;
}

static void on_stop(int sig) { kg_stop_request(sig); }

/* a child that waits for the lock, with a handler that asks a stop on
 * SIGTERM (as kgate's CLI does); its exit status: 0 when the wait ended
 * with KG_EXIT_STOPPED, its message naming the GPU, well before its
 * deadline; 1 otherwise. Returns once the handler is in place. */
static pid_t wait_until_stopped_in_child(void)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t c = fork();
    if (c == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGTERM, &sa, NULL) != 0 || write(ready[1], "y", 1) != 1)
            _exit(1);
        kg_gpu_lock l;
        kg_err e = {0, ""};
        double t0 = kg_mono();
        int rc = kg_gpu_lock_take(UUID, 8, &l, &e);
        int as_asked = rc == KG_EXIT_STOPPED && l.fd == -1 && strstr(e.msg, "stopped by") && strstr(e.msg, UUID);
        _exit(as_asked && kg_mono() - t0 < 4 ? 0 : 1);
    }
    kid(c);
    char x = 'n';
    close(ready[1]);
    assert_int_equal(read(ready[0], &x, 1), 1);
    close(ready[0]);
    return c;
}

/* a stop asked while waiting ends the wait, as a stop, not as "busy":
 * one waiter holding the turn (polling the lock), one waiting for the turn */
static void a_stop_asked_during_a_wait_ends_it_as_stopped(void **state)
{
    (void)state;
    start_holder(60000, 0);
    pid_t first = wait_until_stopped_in_child();
    assert_true(turn_held());
    pid_t second = wait_until_stopped_in_child();
    usleep(200000);
    kill(first, SIGTERM);
    kill(second, SIGTERM);
    assert_int_equal(status_of(first), 0);
    assert_int_equal(status_of(second), 0);
}

/* a waiter stopped while it holds the turn (Ctrl-Z, a debugger) keeps
 * nobody from the GPU once it is free; and it waits, once continued,
 * while the one that went past it holds the lock */
static void a_stopped_turn_holder_keeps_nobody_from_a_free_gpu(void **state)
{
    (void)state;
    int st;
    pid_t holder = start_holder(60000, 0);
    pid_t stopped = try_in_child(30);
    assert_true(turn_held());
    assert_int_equal(kill(stopped, SIGSTOP), 0);
    assert_int_equal(waitpid(stopped, &st, WUNTRACED), stopped);
    assert_true(WIFSTOPPED(st));
    kill(holder, SIGKILL); /* the GPU free */
    status_of(holder);
    kg_gpu_lock l;
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_take(UUID, 6, &l, &e), 0);
    double waited = l.waited_s;
    assert_int_equal(kill(stopped, SIGCONT), 0);
    usleep(300000);
    pid_t ended = waitpid(stopped, &st, WNOHANG);
    kg_gpu_lock_drop(&l);
    assert_true(waited < 3);                 /* not its whole deadline */
    assert_int_equal(ended, 0);              /* still waiting once continued: one holder at a time */
    assert_int_equal(status_of(stopped), 0); /* then it has its turn */
}

/* a system call that fails is named, with the file and line it failed at */
static void a_failing_call_is_named_with_its_place(void **state)
{
    (void)state;
    char dir[600], path[1200], elsewhere[600];
    kg_gpu_lock l;
    kg_err e = {0, ""};
    /* mkdir: the lock directory's parent is missing */
    snprintf(dir, sizeof dir, "%s/missing/kgate", run_dir);
    setenv("KGATE_LOCK_DIR", dir, 1);
    assert_int_equal(kg_gpu_lock_take(UUID, 0.1, &l, &e), KG_EXIT_IO);
    assert_int_equal(l.fd, -1);
    assert_non_null(strstr(e.msg, "mkdir("));
    assert_non_null(strstr(e.msg, dir));
    assert_non_null(strstr(e.msg, "failed at "));
    assert_non_null(strstr(e.msg, "gpu_lock.c:"));
    /* open: the lock file is a link (opened without following links) */
    snprintf(dir, sizeof dir, "%s/linked-lock", run_dir);
    setenv("KGATE_LOCK_DIR", dir, 1);
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_gpu_lock_path(UUID, path, sizeof path, &e), 0);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere.lock", run_dir);
    assert_int_equal(symlink(elsewhere, path), 0);
    assert_int_equal(kg_gpu_lock_take(UUID, 0.1, &l, &e), KG_EXIT_IO);
    assert_int_equal(l.fd, -1);
    assert_non_null(strstr(e.msg, "open("));
    assert_non_null(strstr(e.msg, path));
    assert_non_null(strstr(e.msg, "gpu_lock.c:"));
    assert_int_equal(access(elsewhere, F_OK), -1); /* nothing made through the link */
}

static void kgate_gpu_lock_0_turns_it_off(void **state)
{
    (void)state;
    kg_gpu_lock l, l2;
    kg_err e = {0, ""};
    assert_int_equal(kg_gpu_lock_take(UUID, 1, &l, &e), 0);
    setenv("KGATE_GPU_LOCK", "0", 1);
    assert_int_equal(kg_gpu_lock_take(UUID, 0.1, &l2, &e), 0);
    assert_int_equal(l2.fd, -1);
    assert_false(kg_gpu_lock_required());
    /* require: still on, and a lock that cannot be used is the caller's error */
    setenv("KGATE_GPU_LOCK", "require", 1);
    assert_false(kg_gpu_lock_off());
    assert_true(kg_gpu_lock_required());
    assert_int_equal(kg_gpu_lock_take(UUID, 0.1, &l2, &e), KG_EXIT_ENV); /* held by l: busy */
    unsetenv("KGATE_GPU_LOCK");
    assert_false(kg_gpu_lock_required());
    kg_gpu_lock_drop(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(the_lock_file_is_in_a_directory_of_the_users_own, after_each),
        cmocka_unit_test_teardown(a_second_process_waits_then_hears_the_gpu_is_busy, after_each),
        cmocka_unit_test_teardown(a_waiter_gets_it_once_the_holder_lets_go_or_dies, after_each),
        cmocka_unit_test_teardown(a_holder_taking_it_again_lets_a_waiter_have_its_turn, after_each),
        cmocka_unit_test_teardown(taking_it_sets_its_files_times_to_now, after_each),
        cmocka_unit_test_teardown(a_stop_asked_during_a_wait_ends_it_as_stopped, after_each),
        cmocka_unit_test_teardown(a_stopped_turn_holder_keeps_nobody_from_a_free_gpu, after_each),
        cmocka_unit_test_teardown(a_failing_call_is_named_with_its_place, after_each),
        cmocka_unit_test_teardown(kgate_gpu_lock_0_turns_it_off, after_each),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
