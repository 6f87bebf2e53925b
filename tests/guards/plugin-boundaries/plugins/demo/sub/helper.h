/* A header in a plugin's subfolder that reaches into the core:
 * plugin_boundaries.sh compile must name it (guard_plugin_compile_self). */
#include <loom/sys/session.h>
