/* test_none.c - the "none" memory tuner: every layer entry gets
 * LOOM_POLICY_NONE; a cap that even the most frugal policies cannot meet
 * is LOOM_EINFEASIBLE naming the rank and the bytes short. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <cjson/cJSON.h>
#include "testutil.h"

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_none(void);

#define POLICY LOOM_POLICY_NONE
#define STATIC_INFO loom_static_none
#define NAME "none"

#include <loom/mock_fixedpolicy.h>
