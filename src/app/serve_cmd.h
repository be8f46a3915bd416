/* `kgate serve`: requests judged one at a time by a long-lived service
 * (docs/serve.md). */
#ifndef KG_SERVE_CMD_H
#define KG_SERVE_CMD_H

#include <stddef.h>

#include "../base/kg.h"

/* argv[0] is "serve"; returns the exit code. */
int kg_cmd_serve(int argc, char **argv);

/* A service's socket: arg as given, or for `auto`
 * RUNTIME/kgate/serve-gpuN.sock (RUNTIME: $XDG_RUNTIME_DIR, else
 * /tmp/kgate-UID), its folder made 0700 when make_dir. A path too long for
 * a Unix socket is KG_EXIT_USAGE. */
int kg_serve_socket_path(const char *arg, int gpu, int make_dir, char *path, size_t size, kg_err *err);

#endif
