/* `kgate serve`: requests judged one at a time by a long-lived service
 * (docs/serve.md). */
#ifndef KG_SERVE_CMD_H
#define KG_SERVE_CMD_H

/* argv[0] is "serve"; returns the exit code. */
int kg_cmd_serve(int argc, char **argv);

#endif
