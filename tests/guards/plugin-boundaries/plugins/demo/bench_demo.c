/* A benchmark in a plugin's folder that reaches into the core:
 * plugin_boundaries.sh compile must name it (guard_plugin_compile_self). */
#include "engine_api.h"
