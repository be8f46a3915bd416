/* A candidate whose constructor tries to reach out of the worker: it opens
 * an IPv4 socket, creates a file outside the worker's scratch directory and
 * probes kgate with a signal (0: nothing is delivered), by the pid the test
 * gives in KG_ESCAPE_KGATE (in its own PID namespace the worker's parent is
 * pid 0 to it), else by its parent's. Under --sandbox all are refused and it
 * loads normally; without the sandbox any succeeds and it aborts (so the two
 * runs can be told apart). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kgate/plugin.h>

__attribute__((constructor)) static void reach_out(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/kgate-escape-%d", (int)getpid());
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int f = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    const char *given = getenv("KG_ESCAPE_KGATE");
    pid_t kgate = given ? (pid_t)atol(given) : getppid();
    int k = kgate > 0 ? kill(kgate, 0) : -1;
    fprintf(stderr, "escape: socket %s, file outside %s, signal to kgate %s\n", s >= 0 ? "OPENED" : "refused",
            f >= 0 ? "CREATED" : "refused", k == 0 ? "SENT" : "refused");
    if (f >= 0) {
        close(f);
        unlink(path);
    }
    if (s >= 0 || f >= 0 || k == 0)
        abort();
}

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}

static const kgate_kernel kernels[] = {{"noop", "softmax", "fp16", NULL, 1, 1, noop, NULL, NULL, NULL}};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
