/* kgate check, run and tune --events PATH: one JSON line appended to PATH
 * as each kernel is judged, {"event": "kernel", "result": ITS ENTRY OF THE RESULTS}, for a
 * reader that follows a check while it runs (kgate serve forwards them to
 * its client, docs/serve.md). The results document (--json) stays the
 * record: a line that cannot be written (a reader gone, or one that does
 * not read for EVENTS_WAIT_S) is said once, and no further line is tried. */
#include "check_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../catalog/plugin_check.h"

#define EVENTS_WAIT_S 10.0 /* a FIFO's reader that reads nothing this long is not following */

static int events_fd = -1;

int kg_check_events_open(const kg_options *o, kg_err *err)
{
    if (!o->events)
        return 0;
    if (!o->events[0])
        return kg_err_set(err, KG_EXIT_IO, "--events: an empty path");
    if (strcmp(o->events, "-") == 0) { /* standard output, as --json - (blocking: it is the caller's) */
        events_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (events_fd < 0)
            return kg_err_set(err, KG_EXIT_IO, "--events -: standard output: %s", strerror(errno));
        signal(SIGPIPE, SIG_IGN);
        return 0;
    }
    /* O_NONBLOCK: a FIFO no one reads is refused (ENXIO), not waited on;
     * writes wait under a deadline (kg_check_event) */
    int fd = open(o->events, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
    if (fd < 0)
        return kg_err_set(err, KG_EXIT_IO, "--events %s: %s", o->events,
                          errno == ENXIO ? "a FIFO that no one reads" : strerror(errno));
    struct stat st, cs;
    char cand[PATH_MAX] = "", kernel[96];
    if (o->candidate && kg_candidate_split(o->candidate, cand, sizeof cand, kernel, sizeof kernel))
        cand[0] = '\0';
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && cand[0] && stat(cand, &cs) == 0 && cs.st_dev == st.st_dev &&
        cs.st_ino == st.st_ino) {
        close(fd);
        return kg_err_set(err, KG_EXIT_IO, "--events %s: the candidate itself, which it would write to", o->events);
    }
    signal(SIGPIPE, SIG_IGN); /* a reader that leaves is a write error, as for a worker's pipe */
    events_fd = fd;
    return 0;
}

void kg_check_events_close(void)
{
    if (events_fd >= 0)
        close(events_fd);
    events_fd = -1;
}

/* Writes all of buf, waiting at most EVENTS_WAIT_S for room: 0, or errno. */
static int write_all(const char *buf, size_t n)
{
    double end = kg_mono() + EVENTS_WAIT_S;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(events_fd, buf + off, n - off);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return errno;
        double left = end - kg_mono();
        if (left <= 0)
            return ETIMEDOUT;
        struct pollfd p = {events_fd, POLLOUT, 0};
        poll(&p, 1, (int)(left * 1000) + 1);
    }
    return 0;
}

void kg_check_event(const char *result_json)
{
    if (events_fd < 0 || !result_json)
        return;
    static const char head[] = "{\"event\":\"kernel\",\"result\":";
    size_t n = strlen(result_json), len = sizeof head - 1 + n + 2;
    char *line = malloc(len + 1);
    int e = line ? 0 : ENOMEM;
    if (line) {
        memcpy(line, head, sizeof head - 1);
        memcpy(line + sizeof head - 1, result_json, n);
        memcpy(line + len - 2, "}\n", 3);
        e = write_all(line, len);
        free(line);
    }
    if (e) {
        fprintf(stderr, "kgate: --events: %s: no further events (the results are kept as ever)\n",
                e == ETIMEDOUT ? "its reader read nothing for 10 s" : strerror(e));
        kg_check_events_close();
    }
}

void kg_check_event_result(const kg_result *r)
{
    if (events_fd < 0 || !r)
        return;
    char *text = kg_result_to_json(r);
    kg_check_event(text);
    free(text);
}
