/* kgate: the command-line front end. It uses only the public API
 * (include/kgate/kgate.h); the commands and their options live in libkgate. */
#include <string.h>

#include "kgate/kgate.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "__worker") == 0)
        kgate_worker(argc - 2, argv + 2);
    kgate_init();
    return kgate_main(argc, argv);
}
