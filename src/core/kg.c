/* Error recording, dtype tables and shape formatting. */
#include "kg.h"

#include "text.h"


#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int kg_err_set(kg_err *err, int code, const char *fmt, ...)
{
    if (err && err->code == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        kg_text_clean(err->msg, sizeof err->msg, err->msg); /* printed: one line of UTF-8 (core/text.h) */
        err->code = code;
    }
    return code;
}

static const struct {
    const char *name;
    size_t size;
    uint8_t code, bits;
} dtypes[] = {
#define X(e, s, b, c, bits) {s, b, c, bits},
    KG_DTYPES(X)
#undef X
};

const char *kg_dtype_name(kg_dtype t)
{
    return (unsigned)t < KG_DTYPE_COUNT ? dtypes[t].name : "?";
}

size_t kg_dtype_size(kg_dtype t)
{
    return (unsigned)t < KG_DTYPE_COUNT ? dtypes[t].size : 0;
}

int kg_dtype_parse(const char *s, kg_dtype *out)
{
    for (int i = 0; i < KG_DTYPE_COUNT; i++)
        if (s && strcmp(s, dtypes[i].name) == 0) {
            *out = (kg_dtype)i;
            return 0;
        }
    return -1;
}

void kg_dtype_dlpack(kg_dtype t, uint8_t *code, uint8_t *bits)
{
    *code = dtypes[t].code;
    *bits = dtypes[t].bits;
}

int kg_dtype_is_int(kg_dtype t) { return t == KG_I32 || t == KG_I64; }

char *kg_shape_format(const kg_shape *s, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->n; i++)
        kg_append(buf, size, &used, "%s%lld", i ? "x" : "", (long long)s->d[i]);
    return buf;
}

/* Where a file named "-" goes: standard output as it was when
 * kg_json_to_stdout moved the rest of it to standard error (-1: stdout). */
static int stdout_fd = -1;

int kg_json_to_stdout(kg_err *err)
{
    fflush(stdout);
    if ((stdout_fd = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 || dup2(2, 1) < 0)
        return kg_err_set(err, KG_EXIT_IO, "--json -: cannot keep standard output: %s", strerror(errno));
    return 0;
}

/* text and a newline to standard output (or where kg_json_to_stdout kept it). */
static int write_stdout(const char *text, kg_err *err)
{
    if (stdout_fd < 0)
        return fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0
                   ? kg_err_set(err, KG_EXIT_IO, "cannot write to standard output: %s", strerror(errno))
                   : 0;
    size_t len = strlen(text), off = 0;
    while (off <= len) {
        const char *p = off < len ? text + off : "\n";
        size_t k = off < len ? len - off : 1;
        ssize_t w = write(stdout_fd, p, k);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return kg_err_set(err, KG_EXIT_IO, "cannot write to standard output: %s", strerror(errno));
        off += (size_t)w;
    }
    return 0;
}

int kg_write_file_atomic(const char *path, const char *text, kg_err *err)
{
    if (strcmp(path, "-") == 0)
        return write_stdout(text, err);
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return kg_err_set(err, KG_EXIT_IO, "cannot write %s: %s", tmp, strerror(errno));
    int bad = fputs(text, f) < 0 || fputc('\n', f) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return kg_err_set(err, KG_EXIT_IO, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

/* path made absolute through its directory's real path (the file itself
 * need not exist); 0, or -1 when the directory cannot be resolved. */
static int resolved_path(const char *path, char *out, size_t size)
{
    char dir[PATH_MAX], base[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(base, sizeof base, "%s", path);
    if (!realpath(dirname(dir), real))
        return -1;
    return snprintf(out, size, "%s/%s", real, basename(base)) < (int)size ? 0 : -1;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    char ra[PATH_MAX], rb[PATH_MAX];
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return resolved_path(a, ra, sizeof ra) == 0 && resolved_path(b, rb, sizeof rb) == 0 && strcmp(ra, rb) == 0;
}

int kg_output_path_check(const char *what, const char *path, const char *const *inputs, int n, kg_err *err)
{
    struct stat st;
    size_t len = path ? strlen(path) : 0;
    if (!len)
        return kg_err_set(err, KG_EXIT_IO, "%s: an empty path", what);
    if (strcmp(path, "-") == 0)
        return 0; /* standard output */
    if (path[len - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return kg_err_set(err, KG_EXIT_IO, "%s %s: a directory, not a file", what, path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return kg_err_set(err, KG_EXIT_IO, "%s %s: not a regular file (%s)", what, path,
                          S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                                                       : "a special file");
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i][0] && same_file(path, inputs[i]))
            return kg_err_set(err, KG_EXIT_IO, "%s %s: the same file as the input %s, which it would overwrite",
                              what, path, inputs[i]);
    return 0;
}

void kg_self_exe(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
}

unsigned long long kg_splitmix64(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double kg_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

unsigned long long kg_random64(void)
{
    unsigned long long v = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&v, sizeof v, 1, f) != 1) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (unsigned long long)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (unsigned long long)getpid() << 32;
    }
    if (f)
        fclose(f);
    return v;
}

void kg_random_hex(char *buf, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    unsigned long long v = 0;
    for (size_t i = 0; i + 1 < size; i++) {
        if (i % 16 == 0)
            v = kg_random64();
        buf[i] = hex[v & 15];
        v >>= 4;
    }
    if (size)
        buf[size - 1] = '\0';
}

const char *kg_find_tool(const char *name, const char *env, char *buf, size_t size)
{
    const char *e = env ? getenv(env) : NULL;
    if (e && *e && access(e, X_OK) == 0)
        return e;
    const char *home = getenv("CUDA_HOME"), *path = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s:%s%s/usr/local/cuda/bin", path ? path : "", home && *home ? home : "",
             home && *home ? "/bin:" : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(buf, size, "%s/%s", d, name);
        if (access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

void kg_beside(const char *exe, const char *name, char *buf, size_t size)
{
    const char *slash = strrchr(exe, '/');
    if (slash)
        snprintf(buf, size, "%.*s/%s", (int)(slash - exe), exe, name);
    else
        snprintf(buf, size, "./%s", name);
}

/* The installed tree's directories, relative to its bin directory, come
 * from CMake's install directories (CMakeLists.txt). */
#if !defined(KG_INSTALL_LIB) || !defined(KG_INSTALL_CANDIDATES) || !defined(KG_INSTALL_PYTHON)
#error "KG_INSTALL_LIB, KG_INSTALL_CANDIDATES and KG_INSTALL_PYTHON come from CMakeLists.txt"
#endif
static const struct {
    const char *build, *installed;
} ship_dirs[] = {
    [KG_SHIP_LIB] = {"", KG_INSTALL_LIB},
    [KG_SHIP_CANDIDATE] = {"", KG_INSTALL_CANDIDATES},
    [KG_SHIP_PYTHON] = {"../python", KG_INSTALL_PYTHON},
};

/* buf = EXE_DIR/dir/name, either part possibly empty. */
static void ship_path(const char *exe, const char *dir, const char *name, char *buf, size_t size)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s%s%s", dir, dir[0] && name[0] ? "/" : "", name);
    kg_beside(exe, rel, buf, size);
}

int kg_shipped(const char *exe, kg_ship kind, const char *name, char *buf, size_t size)
{
    char inst[PATH_MAX], real[PATH_MAX];
    ship_path(exe, ship_dirs[kind].build, name, buf, size);
    if (access(buf, R_OK) == 0)
        return 0;
    ship_path(exe, ship_dirs[kind].installed, name, inst, sizeof inst);
    if (access(inst, R_OK) != 0 || !realpath(inst, real))
        return -1;
    snprintf(buf, size, "%s", real); /* PREFIX/lib/..., not PREFIX/bin/../lib/... */
    return 0;
}

int kg_python_env(const char *exe, const char *why, char *python, size_t size, kg_err *err)
{
    char pkg[PATH_MAX + 16], path[3 * PATH_MAX];
    const char *py = kg_find_tool("python3", "KGATE_PYTHON", python, size);
    if (!py)
        return kg_err_set(err, KG_EXIT_ENV, "%s needs python3 (on PATH, or KGATE_PYTHON)", why);
    if (py != python)
        snprintf(python, size, "%s", py);
    int have_pkg = kg_shipped(exe, KG_SHIP_PYTHON, "", pkg, sizeof pkg) == 0;
    const char *old = getenv("PYTHONPATH");
    if (have_pkg && !(old && strncmp(old, pkg, strlen(pkg)) == 0)) {
        snprintf(path, sizeof path, "%s%s%s", pkg, old && *old ? ":" : "", old ? old : "");
        setenv("PYTHONPATH", path, 1);
    }
    return 0;
}

static volatile sig_atomic_t stop_sig;

void kg_stop_request(int sig)
{
    stop_sig = sig ? sig : 1;
}

int kg_stop_requested(void)
{
    return stop_sig;
}

static volatile sig_atomic_t second_stop_ends;

static void on_stop(int sig)
{
    if (second_stop_ends && stop_sig) { /* asked twice: stop at once, the default way */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    kg_stop_request(sig);
}

void kg_catch_stop_signals(int second_ends)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    second_stop_ends = second_ends;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int kg_put_field(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s) + 1;
    if (*len + n > cap)
        return -1;
    memcpy(buf + *len, s, n);
    *len += n;
    return 0;
}

int kg_proc_parent(long pid, long *ppid, long *pgrp)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *r = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return r && sscanf(r + 1, " %*c %ld %ld", ppid, pgrp) == 2 ? 0 : -1;
}

/* This process's direct children (every thread's), from
 * /proc/self/task/TID/children, into v (up to cap); their count, or -1
 * where the kernel does not list children there. */
static int list_children(pid_t *v, int cap)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0, any = 0;
    while (d && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        any = 1;
        long pid;
        while (fscanf(f, "%ld", &pid) == 1)
            if (n < cap)
                v[n++] = (pid_t)pid;
        fclose(f);
    }
    if (d)
        closedir(d);
    return any ? n : -1;
}

/* The same from a scan of /proc (slower: a fast-forking child can slip
 * between two scans; the deadline's passes catch it). */
static int scan_children(pid_t *v, int cap)
{
    pid_t self = getpid();
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        long ppid, pgrp;
        pid_t pid = isdigit((unsigned char)e->d_name[0]) ? (pid_t)atoi(e->d_name) : 0;
        if (pid > 0 && kg_proc_parent(pid, &ppid, &pgrp) == 0 && ppid == self && n < cap)
            v[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

#define KG_REAP_MAX 4096 /* children handled a pass */

int kg_reap_children(long spare)
{
    pid_t v[KG_REAP_MAX];
    double end = kg_mono() + KG_REAP_WAIT_S;
    int n;
    for (;;) {
        n = list_children(v, KG_REAP_MAX);
        if (n < 0)
            n = scan_children(v, KG_REAP_MAX);
        int left = 0;
        for (int i = 0; i < n; i++)
            if (v[i] != spare)
                v[left++] = v[i];
        n = left;
        if (n == 0)
            return 0;
        if (kg_mono() > end)
            break;
        for (int i = 0; i < n; i++) {
            /* its process group first: what it forks there dies with it,
             * however fast it forks (a group's kill reaches a fork under
             * way); a group of that id is the child's own making */
            kill(-v[i], SIGKILL);
            kill(v[i], SIGKILL);
        }
        int alive = 0;
        for (int i = 0; i < n; i++)
            alive += waitpid(v[i], NULL, WNOHANG) != v[i];
        if (alive) { /* else the next pass at once: what they left, reparented here */
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    char pids[600];
    size_t u = 0;
    pids[0] = '\0';
    for (int i = 0; i < n; i++)
        kg_append(pids, sizeof pids, &u, "%s%d", i ? " " : "", (int)v[i]); /* "..." when cut */
    fprintf(stderr, "kgate: %d process(es) left behind did not end within %g s of SIGKILL: pid %s\n", n,
            KG_REAP_WAIT_S, pids);
    return -1;
}

int kg_wait_child(long pid, int *status, double seconds)
{
    double end = kg_mono() + seconds;
    for (;;) {
        pid_t w = waitpid((pid_t)pid, status, WNOHANG);
        if (w == (pid_t)pid)
            return 1;
        if (w < 0)
            return -1;
        if (kg_mono() > end)
            return 0;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void kg_close_from(int lo)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lo, ~0U, 0) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = lo; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
        close((int)fd);
}
