/* cuobjdump on captured cubins, in the background (diagnose/sass_run.h). */
#include "sass_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/kg.h"
#include "sass.h"
#include "../base/text.h"

extern char **environ;

typedef struct job {
    pid_t pid;           /* its process group too */
    int out;             /* its listing: an unlinked file */
    char cubin[4096];    /* the cubin it reads */
} job;

struct kg_sass_run {
    int n;
    job j[KG_SASS_JOBS_MAX];
};

/* A name that can go into -fun as it is: no option, no comma. */
static int listable(const char *name)
{
    if (!*name || *name == '-')
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '$' || *c == '.'))
            return 0;
    return 1;
}

static int holds(const kg_sass_cubin *c, const char *name)
{
    return c->bytes && memmem(c->bytes, c->size, name, strlen(name) + 1) != NULL;
}

static int wanted(const char *name) { return name[0] && strcmp(name, "?") != 0; }

/* environ with TMPDIR=dir: cuobjdump's own temporary files (a copy of the
 * cubin for nvdisasm) go where kgate's go. The strings are environ's and
 * one static buffer; the array is the caller's to free. */
static char **env_with_tmpdir(const char *dir)
{
    static char tmpdir[4200];
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **e = malloc(sizeof *e * (n + 2));
    if (!e)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TMPDIR=", 7) != 0)
            e[k++] = environ[i];
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", dir);
    e[k++] = tmpdir;
    e[k] = NULL;
    return e;
}

/* Writes the cubin and starts cuobjdump on it; 0, or -1 with a note. */
static int spawn(job *j, const char *tool, const kg_sass_cubin *c, const char *funs, int whole, const char *dir,
                 char **env, kg_diagnosis *d)
{
    char out[4096];
    const char *why = "no SASS: cannot write a cubin under %s", *what = dir;
    snprintf(j->cubin, sizeof j->cubin, "%s/kg-cubin-XXXXXX", dir);
    snprintf(out, sizeof out, "%s/kg-sass-XXXXXX", dir);
    j->out = -1;
    int cfd = mkostemp(j->cubin, O_CLOEXEC);
    if (cfd < 0) {
        j->cubin[0] = '\0';
        goto fail;
    }
    size_t done = 0;
    while (done < c->size) {
        ssize_t w = write(cfd, c->bytes + done, c->size - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(cfd);
    if (done < c->size || (j->out = mkostemp(out, O_CLOEXEC)) < 0)
        goto fail;
    unlink(out); /* read back through j->out; nothing to remove later */
    char *argv[] = {(char *)tool, "-sass", whole ? j->cubin : "-fun", whole ? NULL : (char *)funs, j->cubin, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0 && (rc = posix_spawnattr_init(&at)) != 0)
        posix_spawn_file_actions_destroy(&fa);
    if (rc == 0) {
        /* the listing's descriptor first: stdin's /dev/null may not land on it */
        rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP) /* a group of its own (pgroup 0) */ ||
             posix_spawn_file_actions_adddup2(&fa, j->out, STDOUT_FILENO) ||
             posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0) ||
             posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0) ||
             posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        if (rc == 0)
            rc = posix_spawn(&j->pid, tool, &fa, &at, argv, env);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
    }
    if (rc == 0)
        return 0;
    why = "no SASS: cannot run %s", what = tool;
fail:
    kg_diag_note(d, why, what);
    if (j->out >= 0)
        close(j->out);
    if (j->cubin[0])
        unlink(j->cubin);
    j->cubin[0] = '\0';
    return -1;
}

kg_sass_run *kg_sass_run_start(const kg_sass_cubin *cubins, int n_cubins, const char (*names)[KG_KNAME_MAX],
                               int nn, const char *tmpdir, kg_diagnosis *d)
{
    char tool_buf[4096];
    const char *tool = kg_find_tool("cuobjdump", "KG_CUOBJDUMP", tool_buf, sizeof tool_buf);
    const char *dir = tmpdir && *tmpdir ? tmpdir : getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (!tool) {
        kg_diag_note(d, "%s", "no SASS: cuobjdump not found (PATH, CUDA_HOME, KG_CUOBJDUMP)");
        return NULL;
    }
    kg_sass_run *r = calloc(1, sizeof *r);
    const size_t cap = (size_t)(nn > 0 ? nn : 1) * KG_KNAME_MAX + 1; /* "," + a name < KG_KNAME_MAX each */
    char *funs = malloc(cap);
    char **env = env_with_tmpdir(dir);
    if (!r || !funs || !env) {
        kg_diag_note(d, "%s", "no SASS: out of memory");
        free(r);
        free(funs);
        free(env);
        return NULL;
    }
    /* every cubin that seems to hold a name is asked for it: the search
     * also finds a name at the end of a longer one, and cuobjdump answers
     * only for a function the cubin has */
    for (int c = 0; c < n_cubins; c++) {
        int any = 0, whole = 0;
        size_t fl = 0;
        funs[0] = '\0';
        for (int i = 0; i < nn; i++) {
            if (!wanted(names[i]) || !holds(&cubins[c], names[i]))
                continue;
            any = 1;
            if (!listable(names[i]))
                whole = 1;
            else if (kg_append(funs, cap, &fl, "%s%s", fl ? "," : "", names[i]))
                whole = 1; /* a list that does not fit (cap fits them all): the whole cubin */
        }
        if (!any)
            continue;
        if (r->n == KG_SASS_JOBS_MAX) {
            kg_diag_note(d, "%s", "more cubins to disassemble than kgate runs cuobjdump on: the rest have no SASS");
            break;
        }
        if (spawn(&r->j[r->n], tool, &cubins[c], funs, whole, dir, env, d) == 0)
            r->n++;
        else
            break;
    }
    free(env);
    free(funs);
    if (!r->n) {
        free(r);
        return NULL;
    }
    return r;
}

/* The wait's deadline: KG_SASS_DEADLINE may shorten it (a test hook). */
static double deadline_s(void)
{
    const char *e = getenv("KG_SASS_DEADLINE");
    double v = e ? strtod(e, NULL) : 0;
    return v > 0 && v < KG_SASS_DEADLINE_S ? v : KG_SASS_DEADLINE_S;
}

/* Reads a job's listing, at most KG_SASS_TEXT_MAX bytes; its length. */
static size_t listing(int fd, char *text)
{
    size_t len = 0;
    if (lseek(fd, 0, SEEK_SET) != 0)
        return 0;
    while (len < KG_SASS_TEXT_MAX) {
        ssize_t k = read(fd, text + len, KG_SASS_TEXT_MAX - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    return len;
}

/* Whether the job has ended, without reaping it (its pid, and so its
 * process group, stay ours until waitpid): 1 ended, 0 running, -1 not ours
 * to wait for. */
static int ended(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return -1;
    return si.si_pid == pid;
}

void kg_sass_run_finish(kg_sass_run *r, kg_kfacts *ks, int nk, int abandon, kg_diagnosis *d)
{
    if (!r)
        return;
    kg_sass_fn *fns = abandon ? NULL : malloc(sizeof *fns * 4096);
    char *text = abandon ? NULL : malloc(KG_SASS_TEXT_MAX + 1);
    int *seen = abandon ? NULL : calloc((size_t)(nk > 0 ? nk : 1), sizeof *seen); /* listings holding each kernel */
    if (!abandon && (!fns || !text || !seen))
        kg_diag_note(d, "%s", "no SASS: out of memory");
    const double wait_s = deadline_s(), end = kg_mono() + wait_s;
    int late = 0, failed = 0;
    for (int i = 0; i < r->n; i++) {
        job *j = &r->j[i];
        int e = 0;
        while (!abandon && (e = ended(j->pid)) == 0 && kg_mono() < end) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        late |= !abandon && e == 0;
        /* the group goes while its leader is unreaped (its id cannot be
         * reused yet): what cuobjdump started (nvdisasm) with it */
        kill(-j->pid, SIGKILL);
        int st = 0;
        pid_t w;
        while ((w = waitpid(j->pid, &st, 0)) < 0 && errno == EINTR)
            ;
        if (abandon || e == 0) {
            /* killed: no listing */
        } else if (e < 0 || w != j->pid || !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            failed = 1; /* e < 0: not ours to wait for (SIGCHLD ignored?): its listing is not known whole */
        } else if (fns && text && seen) {
            size_t len = listing(j->out, text);
            text[len] = '\0';
            int n = 0, trunc = 0;
            kg_err err = {0, ""};
            if (len == 0 || kg_sass_scan(text, len, fns, 4096, &n, &trunc, &err)) {
                kg_diag_note(d, "cuobjdump read no SASS from a cubin: %s", err.msg[0] ? err.msg : "empty output");
            } else {
                for (int k = 0; k < nk; k++) {
                    const kg_sass_fn *f = kg_sass_find(fns, n, ks[k].name);
                    if (!f)
                        continue;
                    if (seen[k]++ == 0 && !ks[k].sass.found)
                        ks[k].sass = f->s; /* the first loaded cubin's */
                }
            }
        }
        close(j->out);
        unlink(j->cubin);
    }
    for (int k = 0; seen && k < nk; k++)
        if (seen[k] > 1) {
            char m[KG_KNAME_MAX + 96];
            snprintf(m, sizeof m, "%.100s is in %d cubins (autotuned configurations?): its SASS counts are the "
                     "first loaded one's", ks[k].name, seen[k]);
            kg_diag_note(d, "%s", m);
        }
    if (late) {
        char m[96];
        snprintf(m, sizeof m, "cuobjdump ran past its %.0f s: stopped, some kernels have no SASS counts", wait_s);
        kg_diag_note(d, "%s", m);
    }
    if (failed)
        kg_diag_note(d, "%s", "cuobjdump failed on a cubin (an exit status or a signal): its kernels have no SASS "
                     "counts");
    free(fns);
    free(text);
    free(seen);
    free(r);
}
