/* Commands the Python package implements (python/kgate/__main__.py). */
#ifndef KG_PYFORWARD_H
#define KG_PYFORWARD_H

/* Replaces this process with `python3 -m kgate ARGV...` (argv[0] is the
 * command, e.g. "kernelbench"); returns only on failure, with an exit code. */
int kg_cmd_python(int argc, char **argv);

#endif
