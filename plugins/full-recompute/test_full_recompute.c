/* test_full_recompute.c - the "full-recompute" memory tuner: every layer
 * entry gets LOOM_POLICY_FULL; a cap that even the most frugal policies
 * cannot meet is LOOM_EINFEASIBLE naming the rank and the bytes short. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <cjson/cJSON.h>
#include "testutil.h"

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_full_recompute(void);

#define POLICY LOOM_POLICY_FULL
#define STATIC_INFO loom_static_full_recompute
#define NAME "full-recompute"

#include <loom/mock_fixedpolicy.h>
