/* A shared library that is not a kgate candidate: no kgate_plugin_v1. */
int not_a_candidate(void) { return 1; }
