/* The worker's sandbox: namespaces, rlimits, descriptors, no_new_privs,
 * Landlock and seccomp (the rules are in sandbox.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The ruleset attribute as the kernel knows it since Landlock ABI 4 (the
 * system header may predate the network field). */
struct kg_landlock_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
};
#define KG_LL_NET_BIND_TCP (1ULL << 0)
#define KG_LL_NET_CONNECT_TCP (1ULL << 1)
#define KG_LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define KG_LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */

/* Every right that changes the file system (reading stays unhandled). */
#define KG_LL_FS_WRITES                                                                     \
    (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                      \
     LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | \
     LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | \
     LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

/* KG_SANDBOX_SKIP (a comma list of rlimits, fds, nnp, seccomp, sockets,
 * landlock, devices, pidns, mountns) leaves parts out: a diagnostic for
 * finding the part a driver cannot live with, and the probe's way of seeing
 * what the driver does without a rule (scripts/gpu.sh sandbox-probe); the
 * worker (kgate, for pidns and mountns) says on stderr what it skipped. */
static int skipped(const char *part)
{
    const char *v = getenv("KG_SANDBOX_SKIP");
    if (!v || !strstr(v, part))
        return 0;
    fprintf(stderr, "kgate sandbox: %s skipped (KG_SANDBOX_SKIP)\n", part);
    return 1;
}

/* A rule: rights below path. A path that is not there is an error, unless
 * `optional` (a dangling /dev/nvidia* link grants nothing). */
static int add_path(int ruleset, const char *path, uint64_t rights, int optional, kg_err *err)
{
    struct landlock_path_beneath_attr pb;
    memset(&pb, 0, sizeof pb);
    pb.allowed_access = rights;
    pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
    if (pb.parent_fd < 0 && optional && errno == ENOENT)
        return 0;
    if (pb.parent_fd < 0)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: open %s: %s", path, strerror(errno));
    int rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(pb.parent_fd);
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: landlock_add_rule %s: %s", path, strerror(e));
    return 0;
}

/* Under /dev, what may be opened for writing: /dev/null, and the GPU's
 * device files, every /dev/nvidia* (nvidiactl, nvidia0 and up, nvidia-uvm,
 * nvidia-uvm-tools, nvidia-modeset, the nvidia-caps directory of MIG), which
 * the driver opens at its initialization and may open again later (another
 * device, UVM, CUPTI). Nothing else: not /dev/shm (other programs' shared
 * memory), /dev/mqueue, the terminals or the disks. With `all` (the devices
 * part skipped), all of /dev, as before this rule. */
static int dev_rules(int rs, uint64_t rights, int all, kg_err *err)
{
    if (all)
        return add_path(rs, "/dev", rights, 0, err);
    int rc = add_path(rs, "/dev/null", rights, 0, err);
    DIR *d = rc ? NULL : opendir("/dev");
    if (!rc && !d)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: opendir /dev: %s", strerror(errno));
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        char path[300];
        if (strncmp(e->d_name, "nvidia", 6) == 0 && strlen(e->d_name) < sizeof path - 5) {
            snprintf(path, sizeof path, "/dev/%s", e->d_name);
            rc = add_path(rs, path, rights, 1, err);
        }
    }
    if (d)
        closedir(d);
    return rc;
}

static int landlock(const char *scratch, kg_err *err)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1)
        return kg_err_set(err, KG_EXIT_ENV,
                          "sandbox: Landlock is not available in this kernel (%s); --sandbox "
                          "needs Linux 5.13 or later with Landlock enabled",
                          strerror(errno));
    struct kg_landlock_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.handled_access_fs = KG_LL_FS_WRITES | (abi >= 2 ? KG_LL_FS_REFER : 0) |
                             (abi >= 3 ? KG_LL_FS_TRUNCATE : 0);
    size_t attr_size = sizeof(uint64_t);
    if (abi >= 4) {
        attr.handled_access_net = KG_LL_NET_BIND_TCP | KG_LL_NET_CONNECT_TCP;
        attr_size = sizeof attr;
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (rs < 0)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: landlock_create_ruleset: %s", strerror(errno));
    int rc = add_path(rs, scratch, attr.handled_access_fs, 0, err) ||
             dev_rules(rs, LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? KG_LL_FS_TRUNCATE : 0), skipped("devices"), err);
    if (!rc && syscall(SYS_landlock_restrict_self, rs, 0))
        rc = kg_err_set(err, KG_EXIT_ENV, "sandbox: landlock_restrict_self: %s", strerror(errno));
    close(rs);
    return rc ? err->code : 0;
}

#define MAX_ANCESTORS 16

/* kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo and pidfd_open aimed at
 * pid (the first argument's low 32 bits) fail with EPERM. */
static int deny_signals_to(scmp_filter_ctx ctx, pid_t pid)
{
    const int calls[] = {SCMP_SYS(kill), SCMP_SYS(tgkill), SCMP_SYS(rt_sigqueueinfo), SCMP_SYS(rt_tgsigqueueinfo),
                         SCMP_SYS(pidfd_open)};
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof calls / sizeof calls[0]; i++) {
        struct scmp_arg_cmp a0 = {0, SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t)(uint32_t)pid};
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), calls[i], 1, &a0);
    }
    return rc;
}

/* call(x, value, ...), the second argument's low 32 bits == value, fails
 * with EPERM (a descriptor's command, setpgid's group). */
static int deny_cmd(scmp_filter_ctx ctx, int call, unsigned long value)
{
    struct scmp_arg_cmp a1 = {1, SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t)(uint32_t)value};
    return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), call, 1, &a1);
}

/* No signal to kgate or any process above the worker (pid 1 included), nor
 * to their process groups, nor to every process (-1): a candidate cannot
 * stop or kill the supervisor (a SIGTERM would stop the whole command as if
 * the user had asked) or the batch above it. Closed with them: tkill, which
 * names a thread alone (any of kgate's; libc signals threads with tgkill);
 * pidfd_send_signal (a pidfd can come from opening /proc/PID; callers fall
 * back to kill on ENOSYS); a descriptor's owner (F_SETOWN, FIOSETOWN,
 * SIOCSPGRP, TIOCSPGRP: I/O signals sent to a chosen process); and joining
 * an ancestor's process group (setpgid), which kill(0) would then reach.
 * Signals to the worker's own children stay allowed (compiler pools of
 * Triton and torch use them). The walk up stops at an ancestor /proc does
 * not show (another user's, under hidepid: not one this process may signal).
 * In a PID namespace of its own (kg_sandbox_fork) the worker is pid 1 and
 * has no parent in reach: pid 1 is itself (its threads, which raise and
 * pthread_kill signal), and nothing above it can be named. */
static int deny_signals_up(scmp_filter_ctx ctx)
{
    long me_group = getpgrp(), p = getppid(), groups[MAX_ANCESTORS];
    int own_ns = getpid() == 1;
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tkill), 0), ng = 0;
    if (!rc)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(pidfd_send_signal), 0);
    const struct {
        int call;
        unsigned long cmd;
    } owner[] = {{SCMP_SYS(fcntl), F_SETOWN},   {SCMP_SYS(fcntl), F_SETOWN_EX}, {SCMP_SYS(ioctl), FIOSETOWN},
                 {SCMP_SYS(ioctl), SIOCSPGRP}, {SCMP_SYS(ioctl), TIOCSPGRP}};
    for (size_t i = 0; !rc && i < sizeof owner / sizeof owner[0]; i++)
        rc = deny_cmd(ctx, owner[i].call, owner[i].cmd);
    if (!rc)
        rc = deny_signals_to(ctx, -1);
    if (!rc && !own_ns)
        rc = deny_signals_to(ctx, 1);
    for (int depth = 0; !rc && p > 1 && depth < MAX_ANCESTORS; depth++) {
        long pp, pg;
        if (kg_proc_parent(p, &pp, &pg))
            break;
        rc = deny_signals_to(ctx, (pid_t)p);
        int seen = pg == me_group;
        for (int i = 0; i < ng && !seen; i++)
            seen = groups[i] == pg;
        if (!rc && !seen && pg > 1) {
            groups[ng++] = pg;
            rc = deny_signals_to(ctx, (pid_t)-pg);
            if (!rc) /* setpgid(pid, pgid): into that group */
                rc = deny_cmd(ctx, SCMP_SYS(setpgid), (unsigned long)pg);
        }
        p = pp;
    }
    return rc;
}

/* Loads ctx (rc: an earlier step's error) and releases it. */
static int seccomp_finish(scmp_filter_ctx ctx, int rc, kg_err *err)
{
    if (!rc)
        rc = seccomp_load(ctx);
    if (ctx)
        seccomp_release(ctx);
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: seccomp: %s", strerror(-rc));
    return 0;
}

/* The first filter, before anything: signals (deny_signals_up); IPv4, IPv6
 * and packet sockets (compared on the family's low 32 bits, the kernel's
 * int: a family with upper bits set is the same family to it); ptrace and
 * process_vm_*; io_uring, whose ring runs operations (sockets, opens,
 * sends) that this filter never sees, refused with ENOSYS, what a kernel
 * without io_uring answers, so that a library that probes for it falls
 * back to plain system calls; and pushing input into a terminal (TIOCSTI,
 * TIOCLINUX's paste: into the user's shell, had the worker a terminal). */
static int seccomp_process(kg_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = ctx ? 0 : -ENOMEM;
    if (!rc)
        rc = deny_signals_up(ctx);
    const int families[] = {AF_INET, AF_INET6, AF_PACKET};
    for (size_t i = 0; !rc && i < sizeof families / sizeof families[0]; i++) {
        struct scmp_arg_cmp domain = {0, SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t)families[i]};
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1, &domain);
    }
    const int calls[] = {SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev)};
    for (size_t i = 0; !rc && i < sizeof calls / sizeof calls[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), calls[i], 0);
    const int rings[] = {SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register)};
    for (size_t i = 0; !rc && i < sizeof rings / sizeof rings[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), rings[i], 0);
    if (!rc)
        rc = deny_cmd(ctx, SCMP_SYS(ioctl), TIOCSTI);
    if (!rc)
        rc = deny_cmd(ctx, SCMP_SYS(ioctl), TIOCLINUX);
    return seccomp_finish(ctx, rc, err);
}

/* The second filter, once CUDA is up (with Landlock): no socket of any
 * family (EACCES), Unix ones included (docker.sock, ssh-agent, D-Bus; and
 * vsock, the host of a virtual machine), no connect, and no socketpair but
 * a stream pair (connected to itself, it reaches nothing; asyncio and
 * multiprocessing's pipes use them; a datagram pair's sendto reaches any
 * named socket). The driver's initialization, which may use a Unix socket
 * (MPS, nvidia-persistenced), is done by then. */
static int seccomp_sockets(kg_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = ctx ? 0 : -ENOMEM;
    if (!rc)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 0);
    if (!rc)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(connect), 0);
    for (unsigned type = 0; !rc && type < 16; type++) /* the kernel's SOCK_TYPE_MASK */
        if (type != SOCK_STREAM) {
            struct scmp_arg_cmp a1 = {1, SCMP_CMP_MASKED_EQ, 0xfu, type};
            rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 1, &a1);
        }
    return seccomp_finish(ctx, rc, err);
}

/* ------------------------------------------------------------ namespaces */

/* How workers are forked under --sandbox, decided once per process
 * (ns_decide): the clone flags (0: a plain fork), whether the child maps
 * its ids (in a user namespace) and mounts its own /proc, and what the
 * kernel refused. */
static struct {
    int decided;
    unsigned long flags;
    int userns, proc;
    char uid_map[32], gid_map[32];
    char note[400];
} ns;

/* fork() into new namespaces: clone with no stack of its own returns in
 * the child as fork does (the arguments after the flags are all 0, so
 * their order, which differs between x86-64 and aarch64, does not
 * matter). glibc's fork handlers do not run: until it execs, the child
 * calls only async-signal-safe functions. */
static pid_t clone_ns(unsigned long flags) { return (pid_t)syscall(SYS_clone, flags | SIGCHLD, 0L, 0L, 0L, 0L); }

static int put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n, e = errno;
    close(fd);
    errno = e;
    return ok ? 0 : -1;
}

/* In the new child: its user and group ids mapped to themselves, and its
 * own /proc (in which it is pid 1, as getpid() says). The step that failed
 * (errno set), or NULL. Async-signal-safe. */
static const char *ns_enter(void)
{
    if (ns.userns && (put("/proc/self/setgroups", "deny") || put("/proc/self/uid_map", ns.uid_map) ||
                      put("/proc/self/gid_map", ns.gid_map)))
        return "mapping its user ids";
    if (ns.proc && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
        return "making its mounts private";
    if (ns.proc && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
        return "mounting its own /proc";
    return NULL;
}

/* Forks a child into ns.flags that sets itself up and exits: 0, or -1
 * with the reason in why. */
static int ns_try(char *why, size_t size)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        return snprintf(why, size, "pipe: %s", strerror(errno)), -1;
    pid_t pid = clone_ns(ns.flags);
    if (pid == 0) {
        const char *step = ns_enter();
        if (step) {
            int e = errno;
            if (write(p[1], &e, sizeof e) == (ssize_t)sizeof e && write(p[1], step, strlen(step)) < 0)
                _exit(2);
        }
        _exit(step ? 1 : 0);
    }
    int e = errno, status = 0;
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return snprintf(why, size, "clone: %s", strerror(e)), -1;
    }
    char step[64] = "";
    ssize_t k = read(p[0], &e, sizeof e), m = k == (ssize_t)sizeof e ? read(p[0], step, sizeof step - 1) : 0;
    close(p[0]);
    step[m > 0 ? m : 0] = '\0';
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (k == (ssize_t)sizeof e)
        return snprintf(why, size, "%s: %s", step, strerror(e)), -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        return snprintf(why, size, "the trial child ended with status %d", status), -1;
    return 0;
}

/* Decides ns once: a PID, mount and IPC namespace with its own /proc; else
 * a PID and IPC namespace alone (on the machine's /proc, where getpid() is
 * not the pid /proc knows it by); else none, said once on stderr. Each with
 * a user namespace when not root; as root, without one first (the worker
 * stays root: the driver's files are opened as before), then with one (a
 * root without CAP_SYS_ADMIN, as in a container). */
static void ns_decide(void)
{
    static const struct {
        unsigned long flags;
        int proc;
    } tries[] = {{CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC, 1}, {CLONE_NEWPID | CLONE_NEWIPC, 0}};
    char why[160] = "KG_SANDBOX_SKIP", w[160];
    int root = geteuid() == 0, refused = 0;
    if (ns.decided)
        return;
    ns.decided = 1;
    snprintf(ns.uid_map, sizeof ns.uid_map, "%u %u 1", (unsigned)geteuid(), (unsigned)geteuid());
    snprintf(ns.gid_map, sizeof ns.gid_map, "%u %u 1", (unsigned)getegid(), (unsigned)getegid());
    int any = !skipped("pidns"), own_proc = any && !skipped("mountns");
    for (int i = 0; any && i < 4; i++) {
        ns.proc = tries[i / 2].proc;
        ns.userns = i % 2 || !root;
        ns.flags = tries[i / 2].flags | (ns.userns ? CLONE_NEWUSER : 0);
        if ((ns.proc && !own_proc) || (i % 2 && !root)) /* skipped, or tried already */
            continue;
        if (ns_try(w, sizeof w) == 0) {
            if (ns.proc)
                return;
            snprintf(ns.note, sizeof ns.note, "a PID namespace without a /proc of its own (%s)", why);
            fprintf(stderr, "kgate: --sandbox: the workers get %s\n", ns.note);
            return;
        }
        if (!refused++)
            snprintf(why, sizeof why, "%s", w);
    }
    ns.flags = 0;
    snprintf(ns.note, sizeof ns.note, "no PID namespace (%s%s): a candidate can signal the other processes of user %u",
             why,
             any ? "; are user namespaces off? sysctls kernel.unprivileged_userns_clone, user.max_user_namespaces, "
                   "kernel.apparmor_restrict_unprivileged_userns"
                 : "",
             (unsigned)geteuid());
    fprintf(stderr, "kgate: --sandbox: the workers get %s\n", ns.note);
}

pid_t kg_sandbox_fork(void)
{
    ns_decide();
    if (!ns.flags)
        return fork();
    pid_t pid = clone_ns(ns.flags);
    if (pid == 0) {
        const char *step = ns_enter();
        if (step) { /* the trial passed: unexpected, said on kgate's stderr (not yet redirected) */
            static const char msg[] = "kgate: --sandbox: a worker's namespaces failed at ";
            if (write(2, msg, sizeof msg - 1) > 0 && write(2, step, strlen(step)) > 0)
                (void)!write(2, "\n", 1);
            _exit(KG_EXIT_ENV);
        }
    }
    return pid;
}

int kg_sandbox_scratch(char *scratch, size_t size, kg_err *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, size, "%s/kgate-worker-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch))
        return kg_err_set(err, KG_EXIT_ENV, "the worker's scratch directory: mkdtemp %s: %s", scratch, strerror(errno));
    return 0;
}

int kg_sandbox_apply(double cpu_s, const char *scratch, int parts, kg_err *err)
{
    if (!scratch || !scratch[0])
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: no scratch directory");
    if (parts & KG_SANDBOX_PROCESS) {
        if (setenv("TMPDIR", scratch, 1) || chdir(scratch))
            return kg_err_set(err, KG_EXIT_ENV, "sandbox: cannot enter %s: %s", scratch, strerror(errno));
        struct rlimit core = {0, 0}, fsize = {256u << 20, 256u << 20};
        rlim_t cpu = (rlim_t)(cpu_s > 1 ? cpu_s : 1);
        struct rlimit cpul = {cpu, cpu + 5};
        if (!skipped("rlimits") &&
            (setrlimit(RLIMIT_CORE, &core) || setrlimit(RLIMIT_FSIZE, &fsize) || setrlimit(RLIMIT_CPU, &cpul)))
            return kg_err_set(err, KG_EXIT_ENV, "sandbox: setrlimit: %s", strerror(errno));
        if (!skipped("fds") && syscall(SYS_close_range, 4u, ~0u, 0u))
            return kg_err_set(err, KG_EXIT_ENV, "sandbox: close_range: %s", strerror(errno));
        if (!skipped("nnp") && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
            return kg_err_set(err, KG_EXIT_ENV, "sandbox: no_new_privs: %s", strerror(errno));
        if (!skipped("seccomp") && seccomp_process(err))
            return err->code;
    }
    if ((parts & KG_SANDBOX_FILES) && !skipped("sockets") && seccomp_sockets(err))
        return err->code;
    if ((parts & KG_SANDBOX_FILES) && !skipped("landlock") && landlock(scratch, err))
        return err->code;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void kg_sandbox_cleanup(const char *scratch)
{
    if (scratch && scratch[0])
        nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
