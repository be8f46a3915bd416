/* A shared library that is not a kgate candidate: no kgate_plugin_v2. */
int not_a_candidate(void) { return 1; }
