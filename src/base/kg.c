/* Errors, the monotonic clock and stops asked by a signal (base/kg.h). */
#include "kg.h"

#include "text.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int kg_err_set(kg_err *err, int code, const char *fmt, ...)
{
    if (err && err->code == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        kg_text_clean(err->msg, sizeof err->msg, err->msg); /* printed: one line of UTF-8 (base/text.h) */
        err->code = code;
    }
    return code;
}

double kg_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
