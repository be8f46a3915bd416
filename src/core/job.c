/* Worker supervision (fork/exec, event pipe, watchdog) and judging. */
#include "job.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Feeds complete lines of buf to the callback; keeps the partial tail. */
static void drain_lines(char *buf, size_t *len, kg_event_fn fn, void *ud)
{
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', *len - (size_t)(start - buf)))) {
        *nl = '\0';
        cJSON *ev = cJSON_Parse(start);
        if (ev) {
            fn(ud, ev);
            cJSON_Delete(ev);
        }
        start = nl + 1;
    }
    size_t rest = *len - (size_t)(start - buf);
    memmove(buf, start, rest);
    *len = rest;
}

int kg_spawn(const char *exe, char *const argv[], int fd_index, double timeout_s,
             kg_event_fn on_event, void *ud, kg_child *st, kg_err *err)
{
    int evp[2] = {-1, -1}, errp[2] = {-1, -1};
    char fdbuf[16];
    char *args[64];
    int n = 0;
    static char evbuf[1 << 20];
    size_t evlen = 0;
    char errbuf[4096];
    size_t errlen = 0;
    memset(st, 0, sizeof *st);
    if (pipe2(evp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC))
        return kg_err_set(err, KG_EXIT_ENV, "pipe: %s", strerror(errno));
    for (; argv[n] && n < 62; n++)
        args[n] = argv[n];
    args[n] = NULL;
    double t0 = mono();
    pid_t pid = fork();
    if (pid < 0)
        return kg_err_set(err, KG_EXIT_ENV, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* child: its own process group (the watchdog kills the group), events
         * on a fresh fd number, stderr to the capture pipe */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphan keeps the GPU if kgate dies */
        int fd = dup(evp[1]);
        dup2(errp[1], 2);
        snprintf(fdbuf, sizeof fdbuf, "%d", fd);
        if (fd_index >= 0 && fd_index < n)
            args[fd_index] = fdbuf;
        execv(exe, args);
        fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: whichever runs first */
    close(evp[1]);
    close(errp[1]);
    int open_fds = 2;
    while (open_fds > 0) {
        double left = timeout_s - (mono() - t0);
        if (left <= 0) {
            st->timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p[2] = {{evp[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
        int rc = poll(p, 2, (int)fmin(left * 1000 + 1, 1000));
        if (rc < 0 && errno != EINTR)
            break;
        if (p[0].revents & (POLLIN | POLLHUP)) {
            ssize_t k = read(evp[0], evbuf + evlen, sizeof evbuf - 1 - evlen);
            if (k <= 0) {
                p[0].fd = -1;
                close(evp[0]);
                evp[0] = -1;
                open_fds--;
            } else {
                evlen += (size_t)k;
                drain_lines(evbuf, &evlen, on_event, ud);
            }
        }
        if (p[1].revents & (POLLIN | POLLHUP)) {
            char tmp[1024];
            ssize_t k = read(errp[0], tmp, sizeof tmp);
            if (k <= 0) {
                close(errp[0]);
                errp[0] = -1;
                open_fds--;
            } else {
                /* keep the tail */
                if (errlen + (size_t)k > sizeof errbuf) {
                    size_t drop = errlen + (size_t)k - sizeof errbuf;
                    memmove(errbuf, errbuf + drop, errlen - drop);
                    errlen -= drop;
                }
                memcpy(errbuf + errlen, tmp, (size_t)k);
                errlen += (size_t)k;
            }
        }
        if (evp[0] < 0 && errp[0] < 0)
            break;
    }
    if (evp[0] >= 0)
        close(evp[0]);
    if (errp[0] >= 0)
        close(errp[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    st->wall_s = mono() - t0;
    if (WIFEXITED(status)) {
        st->exited = 1;
        st->code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        st->signaled = 1;
        st->sig = WTERMSIG(status);
    }
    /* last line of stderr */
    while (errlen && (errbuf[errlen - 1] == '\n' || errbuf[errlen - 1] == ' '))
        errlen--;
    errbuf[errlen] = '\0';
    char *last = strrchr(errbuf, '\n');
    snprintf(st->stderr_tail, sizeof st->stderr_tail, "%s", last ? last + 1 : errbuf);
    return 0;
}

typedef struct job_state {
    kg_result *r;
    kg_libref *lib;
    cJSON *table;
    kg_err fatal;
    int incorrect, crashed, done;
    char crash[1024];
} job_state;

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static int jtrue(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void on_event(void *ud, const cJSON *e)
{
    job_state *js = ud;
    const char *kind = jstr(e, "ev");
    int is_lib = strcmp(jstr(e, "subject"), "lib") == 0;
    if (strcmp(kind, "table") == 0) {
        cJSON_Delete(js->table);
        js->table = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(e, "kernels"), 1);
    } else if (strcmp(kind, "baseline") == 0) {
        snprintf(js->lib->name, sizeof js->lib->name, "%s", jstr(e, "name"));
        snprintf(js->lib->note, sizeof js->lib->note, "%s", jstr(e, "note"));
        js->lib->fallback = jtrue(e, "fallback");
    } else if (strcmp(kind, "check") == 0) {
        if (is_lib && !jtrue(e, "pass"))
            js->lib->wrong = 1;
    } else if (strcmp(kind, "sum") == 0) {
        const char *name = jstr(e, "name");
        double v = jnum(e, "value");
        if (is_lib) {
            if (strcmp(name, "lib/time/median") == 0) {
                js->lib->t = v;
                js->lib->have = 1;
            } else if (strcmp(name, "lib/time/ci_lo") == 0) {
                js->lib->lo = v;
            } else if (strcmp(name, "lib/time/ci_hi") == 0) {
                js->lib->hi = v;
            }
        } else if (js->r) {
            kg_result_set(js->r, name, v);
        }
    } else if (strcmp(kind, "timing") == 0 && !is_lib && js->r) {
        snprintf(js->r->stop, sizeof js->r->stop, "%s", jstr(e, "stop"));
        if (jtrue(e, "escaped"))
            js->r->flags |= KG_FLAG(ESCAPED);
        if (jnum(e, "throttled") > 0)
            js->r->flags |= KG_FLAG(THROTTLED);
        if (strcmp(js->r->stop, "wall-cap") == 0 || strcmp(js->r->stop, "max-samples") == 0)
            js->r->flags |= KG_FLAG(NOISY);
        if (*jstr(e, "note") && !js->r->detail[0])
            snprintf(js->r->detail, sizeof js->r->detail, "%s", jstr(e, "note"));
    } else if (strcmp(kind, "fail") == 0) {
        if (is_lib) {
            /* the library baseline, not the candidate, failed: stop the command */
            kg_err_set(&js->fatal, KG_EXIT_ENV, "library baseline %s failed: %s", js->lib->name,
                       jstr(e, "msg"));
        } else if (strcmp(jstr(e, "kind"), "crash") == 0) {
            js->crashed = 1;
            snprintf(js->crash, sizeof js->crash, "%s", jstr(e, "msg"));
        } else if (!js->incorrect) {
            js->incorrect = 1;
            if (js->r)
                snprintf(js->r->detail, sizeof js->r->detail, "%s", jstr(e, "msg"));
        }
    } else if (strcmp(kind, "error") == 0) {
        kg_err_set(&js->fatal, (int)jnum(e, "code"), "%s", jstr(e, "msg"));
    } else if (strcmp(kind, "done") == 0) {
        js->done = 1;
    }
}

int kg_job_run(const kg_job_spec *sp, kg_result *r, kg_libref *lib, cJSON **table, kg_err *err)
{
    char *argv[48];
    char nbuf[8][32], shape[64];
    int n = 0, fd_index;
    job_state js;
    kg_child ch;
    kg_libref dummy_lib;
    memset(&js, 0, sizeof js);
    memset(&dummy_lib, 0, sizeof dummy_lib);
    js.r = r;
    js.lib = lib ? lib : &dummy_lib;
    argv[n++] = (char *)sp->exe;
    argv[n++] = "__worker";
    argv[n++] = "--fd";
    fd_index = n;
    argv[n++] = "-1";
    if (sp->plugin) {
        argv[n++] = "--plugin";
        argv[n++] = (char *)sp->plugin;
    }
    if (sp->list) {
        argv[n++] = "--list";
    } else {
        if (sp->kernel) {
            argv[n++] = "--kernel";
            argv[n++] = (char *)sp->kernel;
        }
        argv[n++] = "--op";
        argv[n++] = (char *)sp->op->name;
        argv[n++] = "--dtype";
        argv[n++] = (char *)kg_dtype_name(sp->dtype);
        argv[n++] = "--shape";
        argv[n++] = kg_shape_format(&sp->shape, shape, sizeof shape);
        if (sp->baseline)
            argv[n++] = "--baseline";
        if (sp->hot)
            argv[n++] = "--hot";
        if (sp->memset_flush)
            argv[n++] = "--memset-flush";
        if (!sp->edge)
            argv[n++] = "--no-edge";
        snprintf(nbuf[0], 32, "%d", sp->trials);
        snprintf(nbuf[1], 32, "%llu", sp->seed);
        snprintf(nbuf[2], 32, "%g", sp->stop.max_noise);
        snprintf(nbuf[3], 32, "%g", sp->stop.min_gpu_s);
        snprintf(nbuf[4], 32, "%g", sp->stop.max_wall_s);
        snprintf(nbuf[5], 32, "%d", sp->stop.min_samples);
        snprintf(nbuf[6], 32, "%d", sp->device);
        const char *flags[] = {"--trials", "--seed", "--max-noise", "--min-time", "--max-time",
                               "--min-samples", "--device"};
        for (int i = 0; i < 7; i++) {
            argv[n++] = (char *)flags[i];
            argv[n++] = nbuf[i];
        }
    }
    argv[n] = NULL;
    if (kg_spawn(sp->exe, argv, fd_index, sp->timeout_s, on_event, &js, &ch, err))
        return err->code;
    if (table)
        *table = js.table;
    else
        cJSON_Delete(js.table);
    if (js.fatal.code && !js.crashed && !js.incorrect) {
        /* the command cannot go on: bad candidate, no GPU, library failure;
         * what was measured is already in *r and *lib for the caller */
        *err = js.fatal;
        return err->code;
    }
    if (!r)
        return 0;
    if (ch.timed_out) {
        r->verdict = KG_V_TIMEOUT;
        snprintf(r->reason, sizeof r->reason, "no result within %.0f s: killed", sp->timeout_s);
    } else if (js.crashed) {
        r->verdict = KG_V_CRASH;
        snprintf(r->reason, sizeof r->reason, "%.500s", js.crash);
    } else if (ch.signaled) {
        r->verdict = KG_V_CRASH;
        snprintf(r->reason, sizeof r->reason, "worker killed by signal %d (%s)%s%.300s", ch.sig,
                 strsignal(ch.sig), ch.stderr_tail[0] ? ": " : "", ch.stderr_tail);
    } else if (js.incorrect) {
        r->verdict = KG_V_INCORRECT;
    } else if (!js.done) {
        r->verdict = KG_V_CRASH;
        snprintf(r->reason, sizeof r->reason, "worker exited with %d before finishing%s%.300s",
                 ch.code, ch.stderr_tail[0] ? ": " : "", ch.stderr_tail);
    } else {
        r->verdict = KG_V_SKIPPED; /* judged later */
    }
    return 0;
}

void kg_judge(kg_result *r, const kg_op *op, kg_dtype dt, const kg_shape *s,
              const kg_roofs *roofs, const kg_libref *lib, const kg_gate *g)
{
    kg_work w;
    double t, lo, hi;
    op->work(s, dt, &w);
    kg_result_set(r, "work/bytes", w.bytes);
    kg_result_set(r, "work/flops", w.flops);
    if (lib && lib->have) {
        kg_result_set(r, "lib/time/median", lib->t);
        snprintf(r->baseline, sizeof r->baseline, "%s", lib->name);
        snprintf(r->baseline_note, sizeof r->baseline_note, "%s", lib->note);
        if (lib->fallback)
            r->flags |= KG_FLAG(BASELINE_FALLBACK);
        if (lib->wrong)
            r->flags |= KG_FLAG(BASELINE_WRONG);
    }
    if (r->verdict != KG_V_SKIPPED)
        return; /* INCORRECT, CRASH, TIMEOUT stand */
    kg_evidence ev = {1, 0, 0, 0, 0, 0, 0, 0, 0};
    if (kg_result_get(r, "time/gpu/median", &t) && t > 0) {
        if (!kg_result_get(r, "time/gpu/ci_lo", &lo) || lo <= 0)
            lo = t;
        if (!kg_result_get(r, "time/gpu/ci_hi", &hi) || hi <= 0)
            hi = t;
        kg_result_set(r, "rate/bandwidth", w.bytes / t);
        kg_result_set(r, "rate/flops", w.flops / t);
        kg_roof_eval re;
        if (kg_roofline(&w, op->unit, dt, roofs, t, &re) == 0) {
            ev.have_rho = 1;
            ev.rho = re.rho;
            ev.rho_lo = re.rho * t / hi;
            ev.rho_hi = re.rho * t / lo;
            kg_result_set(r, "roof/fraction", re.rho);
            kg_result_set(r, "roof/peak", re.peak);
            kg_result_set(r, "roof/intensity", re.intensity);
            kg_result_set(r, "roof/ridge", re.ridge);
            kg_result_set(r, "roof/compute_bound", re.compute_bound);
        }
        if (lib && lib->have && lib->t > 0) {
            double llo = lib->lo > 0 ? lib->lo : lib->t, lhi = lib->hi > 0 ? lib->hi : lib->t;
            ev.have_e = 1;
            ev.e = lib->t / t;
            ev.e_lo = llo / hi;
            ev.e_hi = lhi / lo;
            kg_result_set(r, "lib/efficiency", ev.e);
        }
    }
    r->verdict = kg_decide(g, &ev, &r->flags, r->reason, sizeof r->reason);
    if (r->flags & KG_FLAG(ESCAPED)) {
        r->verdict = KG_V_IMPOSSIBLE;
        snprintf(r->reason, sizeof r->reason,
                 "work escaped the given stream: the device was still busy after the end event");
    }
}
