/* A plugin test that reaches into the core: plugin_test_includes.sh must
 * name both core includes and count this file (guard_plugin_test_includes_self). */
#include <stdlib.h>
#include <loom/loom.h>
#include <loom/sys/json.h>
#include "stage_graph.h"
#include "testutil.h"
