/* `kgate kernelbench ...`: commands whose work is Python's (the KernelBench
 * adapter imports problem files), handed to `python3 -m kgate` of this
 * build's package with this executable as its kgate. Its exit codes are
 * kgate's (docs/cli.md). */
#include "pyforward.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/kg.h"

int kg_cmd_python(int argc, char **argv)
{
    char exe[PATH_MAX], dir[PATH_MAX], pkg[PATH_MAX + 16], path[3 * PATH_MAX], pybuf[PATH_MAX];
    kg_self_exe(exe, sizeof exe);
    kg_self_dir(dir, sizeof dir);
    const char *py = kg_find_tool("python3", "KGATE_PYTHON", pybuf, sizeof pybuf);
    if (!py) {
        fprintf(stderr, "kgate: %s needs python3 (on PATH, or KGATE_PYTHON) with torch\n", argv[0]);
        return KG_EXIT_ENV;
    }
    snprintf(pkg, sizeof pkg, "%s/../python", dir);
    const char *old = getenv("PYTHONPATH");
    snprintf(path, sizeof path, "%s%s%s", pkg, old && *old ? ":" : "", old ? old : "");
    setenv("PYTHONPATH", path, 1);
    if (!getenv("KGATE_BIN"))
        setenv("KGATE_BIN", exe, 1);
    if (!getenv("KGATE_PYTHON"))
        setenv("KGATE_PYTHON", py, 1);
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args) {
        fprintf(stderr, "kgate: out of memory\n");
        return KG_EXIT_ENV;
    }
    args[0] = (char *)py;
    args[1] = "-m";
    args[2] = "kgate";
    for (int i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    execv(py, args);
    fprintf(stderr, "kgate: cannot run %s: %s\n", py, strerror(errno));
    free(args);
    return KG_EXIT_ENV;
}
