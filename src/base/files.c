/* Files kgate writes: atomic writes, "-" as standard output, output paths
 * checked before a command runs, NUL-separated fields (base/kg.h). */
#include "kg.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int kg_write_line(int fd, const char *text)
{
    size_t len = strlen(text), off = 0;
    while (off <= len) {
        const char *p = off < len ? text + off : "\n";
        size_t k = off < len ? len - off : 1;
        ssize_t w = write(fd, p, k);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

/* text and a newline to standard output (or where kg_json_to_stdout kept it). */
static int write_stdout(const char *text, kg_err *err)
{
    if (stdout_fd < 0)
        return fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0
                   ? kg_err_set(err, KG_EXIT_IO, "cannot write to standard output: %s", strerror(errno))
                   : 0;
    if (kg_write_line(stdout_fd, text))
        return kg_err_set(err, KG_EXIT_IO, "cannot write to standard output: %s", strerror(errno));
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

int kg_same_file(const char *a, const char *b)
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
        if (inputs[i] && inputs[i][0] && kg_same_file(path, inputs[i]))
            return kg_err_set(err, KG_EXIT_IO, "%s %s: the same file as the input %s, which it would overwrite",
                              what, path, inputs[i]);
    return 0;
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
