/* The worker's sandbox (kgate check --sandbox; docs/security.md).
 *
 * The supervisor forks the worker into namespaces of its own
 * (kg_sandbox_fork): a PID namespace, in which the worker is pid 1 and can
 * signal only what it forks (and what it forks dies with it), a mount
 * namespace with its own /proc (only its own processes; getpid() is the pid
 * /proc knows) and an IPC namespace (no other program's System V or POSIX
 * shared memory, semaphores or message queues); a user namespace too when
 * kgate is not root. Where the kernel refuses, a PID and IPC namespace on
 * the machine's /proc, else none: said once on kgate's stderr. Every
 * worker, sandboxed or not, leads a session of its own (no controlling
 * terminal) and its process group.
 *
 * The worker then applies the rest to itself before it loads a candidate,
 * so that the candidate's constructors already run inside it:
 *   - resource limits: no core files, files of at most 256 MiB, CPU time
 *     bounded by the job's budget (no address-space limit: the CUDA driver
 *     reserves the GPU's whole virtual address range at initialization);
 *   - every descriptor but 0-3 closed, and no new privileges;
 *   - seccomp (libseccomp), at once: creating IPv4, IPv6 or packet sockets,
 *     ptrace and reading or writing another process's memory fail with
 *     EACCES; io_uring with ENOSYS; TIOCSTI and TIOCLINUX with EPERM;
 *     signals to kgate, to every process above the worker, to pid 1 (but
 *     the worker itself, in its own PID namespace) and to their process
 *     groups (kill, tgkill, sigqueue, pidfd_open), to every process (-1),
 *     tkill and pidfd_send_signal at all, making a process a descriptor's
 *     signal owner, and joining an ancestor's process group fail (EPERM;
 *     ENOSYS for pidfd_send_signal);
 *   - once CUDA is up, a second seccomp filter: no socket of any family, no
 *     connect, no socketpair but a stream pair (EACCES);
 *   - and Landlock: files may be written, created or removed only below a
 *     scratch directory made for this worker (its TMPDIR and working
 *     directory), and opened for writing under /dev only if they are
 *     /dev/null or the GPU's (/dev/nvidia*); with Landlock ABI 4 or later,
 *     TCP bind and connect are refused.
 * Reading files stays allowed: a candidate must load its own libraries.
 * Any part that cannot be applied is an error (but the namespaces, above):
 * a sandbox that was asked for is never silently weaker. Plain C; Linux
 * only. */
#ifndef KG_SANDBOX_H
#define KG_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes a scratch directory for one worker (the supervisor does, and removes
 * it with kg_sandbox_cleanup after the worker is gone: the sandboxed worker
 * may not remove the directory it is confined to). */
int kg_sandbox_scratch(char *scratch, size_t size, kg_err *err);

/* The two parts of the sandbox. The CUDA driver cannot initialize under the
 * Landlock rules (seen on the H200: cudaGetDeviceCount failed with "OS call
 * failed"), and may need a Unix socket to do so, so a worker applies
 * KG_SANDBOX_PROCESS first, initializes CUDA and CUPTI, then applies
 * KG_SANDBOX_FILES before it loads the candidate. */
enum {
    KG_SANDBOX_PROCESS = 1, /* rlimits, descriptors, no_new_privs, the first seccomp filter */
    KG_SANDBOX_FILES = 2,   /* the second seccomp filter (sockets), Landlock */
};

/* Applies the given parts of the sandbox to the calling process, confined to
 * `scratch`. cpu_s bounds CPU time. Errors are KG_EXIT_ENV and name the
 * failed step. */
int kg_sandbox_apply(double cpu_s, const char *scratch, int parts, kg_err *err);

/* fork() for a sandboxed worker: the child in the namespaces above, with
 * its ids mapped and its own /proc mounted, returns 0 as fork's does; -1
 * with errno when the clone fails. The first call decides, by forking a
 * trial child, what this kernel allows. */
pid_t kg_sandbox_fork(void);

/* Removes the scratch directory and what is in it (best effort). */
void kg_sandbox_cleanup(const char *scratch);

#ifdef __cplusplus
}
#endif
#endif
