/* test_reverse.c - unit test of the reverse ranker through the SDK's mock
 * host: priorities, the evaluator call and the "evaluate" param. */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/mock_host.h>
#include <loom/kits/search.h>

const loom_plugin_info *loom_static_reverse(void);

static int failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* A fake evaluator (makespan = 10 * priority of group 0): create. */
static int fake_create(loom_ctx *ctx, const loom_stage_graph *g, loom_evaluator **out,
                       loom_error *err)
{
    (void)ctx, (void)err;
    *out = (loom_evaluator *)(void *)g;
    return LOOM_OK;
}

/* Reports a makespan derived from the priorities. */
static int fake_run(loom_evaluator *ev, const float *prio, loom_metrics *out,
                    loom_error *err)
{
    (void)ev, (void)err;
    out->makespan_ms = 10.0 * prio[0];
    return LOOM_OK;
}

/* Nothing to free. */
static void fake_destroy(loom_evaluator *ev)
{
    (void)ev;
}

static const loom_evaluator_service fake_evaluator = {
    sizeof(loom_evaluator_service), 1, fake_create, fake_run, fake_destroy,
    NULL, NULL};

/* Creates an instance on host h, ranks a 3-group graph into prio, frees it. */
static int run_rank(loom_mock_host *h, float prio[3], loom_ranking *out)
{
    const loom_plugin_info *info = loom_static_reverse();
    const loom_ranker_vtable *vt = (const loom_ranker_vtable *)info->role(LOOM_ROLE_RANKER);
    loom_error err;
    memset(&err, 0, sizeof err);
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err);
    if (rc != LOOM_OK)
        return rc;
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    g.n_groups = 3;
    const loom_stage_graph *graphs[1] = {&g};
    *out = (loom_ranking)LOOM_RANKING_INIT;
    out->cap_priorities = 3;
    out->priorities = prio;
    rc = vt->rank(self, graphs, 1, out, &err);
    vt->destroy(self);
    return rc;
}

/* Runs the checks; exit status 0 when all pass. */
int main(void)
{
    const loom_plugin_info *info = loom_static_reverse();
    CHECK(info->abi_version == LOOM_ABI_VERSION);
    CHECK(strcmp(info->id, "org.example.reverse") == 0);
    CHECK(info->role(LOOM_ROLE_INTERLEAVER) == NULL);

    /* params the test does not set come from the manifest's defaults */
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    if (!h)
        return 1;
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1, &fake_evaluator);
    float prio[3];
    loom_ranking out = LOOM_RANKING_INIT;
    CHECK(run_rank(h, prio, &out) == LOOM_OK);
    CHECK(prio[0] == 1.0f && prio[1] == 2.0f && prio[2] == 3.0f);
    int32_t order[3]; /* the search kit reads the order back: 2, 1, 0 */
    loom_sk_prio_to_order(prio, 3, order);
    CHECK(order[0] == 2 && order[1] == 1 && order[2] == 0);
    CHECK(out.candidate == 0);
    CHECK(out.evaluations == 1);
    CHECK(out.best_makespan_ms == 10.0);
    CHECK(loom_mock_host_progress_calls(h) == 1);

    loom_mock_host_set_param(h, "evaluate", "false");
    CHECK(run_rank(h, prio, &out) == LOOM_OK);
    CHECK(out.evaluations == 0);
    CHECK(out.best_makespan_ms == -1);

    loom_mock_host_set_param(h, "evaluate", "perhaps");
    CHECK(run_rank(h, prio, &out) == LOOM_EINVAL);
    loom_mock_host_free(h);

    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("reverse: all checks passed\n");
    return failures ? 1 : 0;
}
