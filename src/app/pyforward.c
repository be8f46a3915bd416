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

#include "../base/kg.h"

int kg_cmd_python(int argc, char **argv)
{
    char exe[PATH_MAX], py[PATH_MAX], why[64];
    kg_err err = {0, ""};
    kg_self_exe(exe, sizeof exe);
    snprintf(why, sizeof why, "kgate %.40s", argv[0]);
    if (kg_python_env(exe, why, py, sizeof py, &err)) {
        fprintf(stderr, "kgate: %s, with torch\n", err.msg);
        return err.code;
    }
    if (!getenv("KGATE_BIN"))
        setenv("KGATE_BIN", exe, 1);
    if (!getenv("KGATE_PYTHON"))
        setenv("KGATE_PYTHON", py, 1);
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args) {
        fprintf(stderr, "kgate: out of memory\n");
        return KG_EXIT_ENV;
    }
    args[0] = py;
    args[1] = "-m";
    args[2] = "kgate";
    for (int i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    execv(py, args);
    fprintf(stderr, "kgate: cannot run %s: %s\n", py, strerror(errno));
    free(args);
    return KG_EXIT_ENV;
}
