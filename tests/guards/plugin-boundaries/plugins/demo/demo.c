/* A plugin source on the SDK only: plugin_boundaries.sh compile passes it. */
#include <loom/loom.h>

int demo_value(void);
int demo_value(void) { return 1; }
