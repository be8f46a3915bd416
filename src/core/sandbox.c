/* The worker's sandbox: rlimits, descriptors, no_new_privs, Landlock and
 * seccomp (the rule is in sandbox.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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

static int add_path(int ruleset, const char *path, uint64_t rights, kg_err *err)
{
    struct landlock_path_beneath_attr pb;
    memset(&pb, 0, sizeof pb);
    pb.allowed_access = rights;
    pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
    if (pb.parent_fd < 0)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: open %s: %s", path, strerror(errno));
    int rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(pb.parent_fd);
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: landlock_add_rule %s: %s", path, strerror(e));
    return 0;
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
    int rc = add_path(rs, scratch, attr.handled_access_fs, err) ||
             add_path(rs, "/dev", LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? KG_LL_FS_TRUNCATE : 0), err);
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
 * not show (another user's, under hidepid: not one this process may signal). */
static int deny_signals_up(scmp_filter_ctx ctx)
{
    long me_group = getpgrp(), p = getppid(), groups[MAX_ANCESTORS];
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
    if (!rc)
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

static int seccomp_rules(kg_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = ctx ? 0 : -ENOMEM;
    if (!rc)
        rc = deny_signals_up(ctx);
    const int families[] = {AF_INET, AF_INET6, AF_PACKET};
    for (size_t i = 0; !rc && i < sizeof families / sizeof families[0]; i++) {
        struct scmp_arg_cmp domain = {0, SCMP_CMP_EQ, (scmp_datum_t)families[i], 0};
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1, &domain);
    }
    const int calls[] = {SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev)};
    for (size_t i = 0; !rc && i < sizeof calls / sizeof calls[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), calls[i], 0);
    if (!rc)
        rc = seccomp_load(ctx);
    if (ctx)
        seccomp_release(ctx);
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "sandbox: seccomp: %s", strerror(-rc));
    return 0;
}

int kg_sandbox_scratch(char *scratch, size_t size, kg_err *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, size, "%s/kgate-worker-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch))
        return kg_err_set(err, KG_EXIT_ENV, "the worker's scratch directory: mkdtemp %s: %s", scratch, strerror(errno));
    return 0;
}

/* KG_SANDBOX_SKIP (a comma list of rlimits, fds, nnp, landlock, seccomp)
 * leaves parts out: a diagnostic for finding the part a driver cannot live
 * with; the worker says on stderr which parts it skipped. */
static int skipped(const char *part)
{
    const char *v = getenv("KG_SANDBOX_SKIP");
    if (!v || !strstr(v, part))
        return 0;
    fprintf(stderr, "kgate sandbox: %s skipped (KG_SANDBOX_SKIP)\n", part);
    return 1;
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
        if (!skipped("seccomp") && seccomp_rules(err))
            return err->code;
    }
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
