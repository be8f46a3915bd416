/* Processes: this executable and the files shipped with it, tools, Python,
 * the /proc view of parents and children, reaping and waiting (base/kg.h). */
#include "kg.h"

#include "text.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void kg_self_exe(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
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
#if !defined(KG_INSTALL_LIB) || !defined(KG_INSTALL_CANDIDATES) || !defined(KG_INSTALL_PYTHON) ||                   \
    !defined(KG_INSTALL_DATA)
#error "KG_INSTALL_LIB, KG_INSTALL_CANDIDATES, KG_INSTALL_PYTHON and KG_INSTALL_DATA come from CMakeLists.txt"
#endif
static const struct {
    const char *build, *installed;
} ship_dirs[] = {
    [KG_SHIP_LIB] = {"", KG_INSTALL_LIB},
    [KG_SHIP_CANDIDATE] = {"", KG_INSTALL_CANDIDATES},
    [KG_SHIP_PYTHON] = {"../python", KG_INSTALL_PYTHON},
    [KG_SHIP_DATA] = {"", KG_INSTALL_DATA},
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
