/* `kgate batch` (many candidates on every local GPU, sharded across nodes)
 * and the GPU health check its supervisors run (docs/scale.md). */
#ifndef KG_BATCH_CMD_H
#define KG_BATCH_CMD_H

/* argv[0] is "batch"; returns the exit code. */
int kg_cmd_batch(int argc, char **argv);
/* `kgate __health N`: 0 when GPU N allocates, writes and synchronizes, else 5. */
int kg_cmd_health(int argc, char **argv);

#endif
