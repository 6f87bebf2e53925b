/* test_oobleck_replan.c - Oobleck's reconfiguration (dissertation §2.5,
 * core/oobleck_replan.c): instantiation of the digest's 7-node example,
 * simple reinstantiation, borrowing, merging, the full re-plan fallback,
 * the (f+1)*n0 floor, lost replicas (Fig. 2.2) and the layer copies. */
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/oobleck.h>
#include "testutil.h"

/* Templates for n0..n_max nodes of 8 uniform layers (1 ms each), one GPU
 * per node: the n-node template has n stages. */
typedef struct fixture {
    loom_oobleck_template t[8];
    loom_oobleck_state st;
} fixture;

/* Plans the templates and sets f; pipelines are added by the test. */
static void setup(fixture *fx, int32_t n0, int32_t n_max, int32_t f,
                  int32_t microbatches)
{
    memset(fx, 0, sizeof *fx);
    double fw[8], bw[8];
    for (int i = 0; i < 8; i++) {
        fw[i] = 1.0 / 3;
        bw[i] = 2.0 / 3;
    }
    loom_oobleck_costs c = {8, 1, fw, bw};
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&c, 1, 1, &p, &err), LOOM_OK);
    for (int32_t n = n0; n <= n_max; n++)
        ck_assert_int_eq(loom_oobleck_plan_template(p, n, 0, &fx->t[n - n0], &err),
                         LOOM_OK);
    loom_oobleck_planner_free(p);
    fx->st.f = f;
    fx->st.n_layers = 8;
    fx->st.n_templates = n_max - n0 + 1;
    fx->st.templates = fx->t;
    fx->st.microbatches = microbatches;
}

/* Adds pipelines given as node lists terminated by -1, back to back. */
static void set_pipelines(fixture *fx, const int32_t *lists, int n)
{
    loom_oobleck_state_clear_pipelines(&fx->st);
    fx->st.pipelines = calloc((size_t)n, sizeof *fx->st.pipelines);
    fx->st.n_pipelines = n;
    for (int i = 0; i < n; i++) {
        loom_oobleck_pipeline *p = &fx->st.pipelines[i];
        int k = 0;
        while (lists[k] >= 0)
            k++;
        p->n_nodes = k;
        p->nodes = malloc((size_t)k * sizeof *p->nodes);
        memcpy(p->nodes, lists, (size_t)k * sizeof *lists);
        p->template_index = k - fx->t[0].nodes;
        lists += k + 1;
    }
}

/* Frees what setup and set_pipelines made. */
static void teardown(fixture *fx)
{
    loom_oobleck_state_clear_pipelines(&fx->st);
    for (int i = 0; i < 8; i++)
        loom_oobleck_template_clear(&fx->t[i]);
}

/* Asserts pipeline i of r is `nodes` (terminated by -1) with `action`. */
static void check_pipe(const loom_oobleck_replan *r, int i, const int32_t *nodes,
                       int action)
{
    ck_assert_int_lt(i, r->next.n_pipelines);
    const loom_oobleck_pipeline *p = &r->next.pipelines[i];
    int k = 0;
    while (nodes[k] >= 0) {
        ck_assert_int_lt(k, p->n_nodes);
        ck_assert_int_eq(p->nodes[k], nodes[k]);
        k++;
    }
    ck_assert_int_eq(p->n_nodes, k);
    ck_assert_int_eq(r->next.templates[p->template_index].nodes, k);
    ck_assert_int_eq(r->actions[i], action);
}

/* After the copies every node holds all layers its new stages need, and
 * every source held the layer and survived; the batch is redistributed. */
static void check_copies(const fixture *fx, const loom_oobleck_replan *r,
                         const int32_t *failed, int n_failed)
{
    int32_t total = 0;
    for (int i = 0; i < r->next.n_pipelines; i++) {
        const loom_oobleck_pipeline *p = &r->next.pipelines[i];
        const loom_oobleck_template *t = &fx->t[p->template_index];
        ck_assert_int_ge(p->microbatches, 1);
        total += p->microbatches;
        for (int k = 0; k < p->n_nodes; k++) {
            for (int f = 0; f < n_failed; f++)
                ck_assert_int_ne(p->nodes[k], failed[f]);
            for (int s = 0; s < t->n_stages; s++) {
                if (t->stages[s].node != k)
                    continue;
                for (int l = t->stages[s].first_layer;
                     l < t->stages[s].first_layer + t->stages[s].n_layers; l++) {
                    /* held before in the old pipeline, or copied */
                    int ok = 0;
                    for (int c = 0; c < r->n_copies; c++)
                        if (r->copies[c].layer == l && r->copies[c].to_node == p->nodes[k])
                            ok = 1;
                    for (int q = 0; q < fx->st.n_pipelines && !ok; q++) {
                        const loom_oobleck_pipeline *o = &fx->st.pipelines[q];
                        const loom_oobleck_template *ot = &fx->t[o->template_index];
                        for (int m = 0; m < o->n_nodes; m++) {
                            if (o->nodes[m] != p->nodes[k])
                                continue;
                            for (int z = 0; z < ot->n_stages; z++)
                                if (ot->stages[z].node == m &&
                                    l >= ot->stages[z].first_layer &&
                                    l < ot->stages[z].first_layer + ot->stages[z].n_layers)
                                    ok = 1;
                        }
                    }
                    ck_assert_msg(ok, "node %d lacks layer %d", p->nodes[k], l);
                }
            }
        }
    }
    ck_assert_int_eq(total > 0, 1);
    for (int c = 0; c < r->n_copies; c++) {
        ck_assert_int_ge(r->copies[c].from_node, 0);
        for (int f = 0; f < n_failed; f++)
            ck_assert_int_ne(r->copies[c].from_node, failed[f]);
    }
}

START_TEST(instantiate_seven_nodes)
{
    /* templates {2,3,4}, N = 7, f = 1: plans (2,1,0) and (0,1,1). Their
     * times are 4N+4, 3N+4 and 2N+6 ms for N microbatches: both plans
     * reach 82 ms on 64 microbatches ((19,26,-) and (-,26,38)); the tie
     * goes to the earlier plan (2,1,0) */
    fixture fx;
    setup(&fx, 2, 4, 1, 64);
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_instantiate(&fx.st, 7, &err), LOOM_OK);
    int32_t nodes = 0, mbs = 0;
    for (int i = 0; i < fx.st.n_pipelines; i++) {
        nodes += fx.st.pipelines[i].n_nodes;
        mbs += fx.st.pipelines[i].microbatches;
    }
    ck_assert_int_eq(nodes, 7);
    ck_assert_int_eq(fx.st.n_pipelines, 3);
    ck_assert_int_eq(fx.st.pipelines[0].microbatches, 19);
    ck_assert_int_eq(fx.st.pipelines[2].microbatches, 26);
    ck_assert_int_eq(mbs, 64);
    /* f = 2 leaves only (2,1,0) */
    fx.st.f = 2;
    ck_assert_int_eq(loom_oobleck_instantiate(&fx.st, 7, &err), LOOM_OK);
    ck_assert_int_eq(fx.st.n_pipelines, 3);
    ck_assert_int_eq(fx.st.pipelines[0].n_nodes, 2);
    ck_assert_int_eq(fx.st.pipelines[1].n_nodes, 2);
    ck_assert_int_eq(fx.st.pipelines[2].n_nodes, 3);
    ck_assert_int_eq(fx.st.pipelines[2].nodes[0], 4);
    teardown(&fx);
}
END_TEST

START_TEST(simple_reinstantiation)
{
    /* N = 8, f = 2, n0 = 2: a failure in the 4-node pipeline -> 3 nodes */
    fixture fx;
    setup(&fx, 2, 4, 2, 32);
    const int32_t pipes[] = {0, 1, 2, 3, -1, 4, 5, -1, 6, 7, -1};
    set_pipelines(&fx, pipes, 3);
    const int32_t failed[] = {3};
    loom_oobleck_replan r;
    loom_error err = {0, ""};
    ck_assert_msg(loom_oobleck_replan_run(&fx.st, failed, 1, 0, &r, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_int_eq(r.full_replan, 0);
    ck_assert_int_eq(r.next.n_pipelines, 3);
    const int32_t p0[] = {0, 1, 2, -1}, p1[] = {4, 5, -1}, p2[] = {6, 7, -1};
    check_pipe(&r, 0, p0, LOOM_OOBLECK_REINSTANTIATE);
    check_pipe(&r, 1, p1, LOOM_OOBLECK_KEEP);
    check_pipe(&r, 2, p2, LOOM_OOBLECK_KEEP);
    check_copies(&fx, &r, failed, 1);
    /* the untouched pipelines copy nothing */
    for (int c = 0; c < r.n_copies; c++)
        ck_assert_int_le(r.copies[c].to_node, 2);
    ck_assert_int_gt(r.iteration_ms, 0);
    loom_oobleck_replan_clear(&r);
    teardown(&fx);
}
END_TEST

START_TEST(borrow_a_node)
{
    /* a failure in a 2-node pipeline: no 1-node template, so it borrows
     * the last node of the 4-node pipeline, which drops to 3 nodes */
    fixture fx;
    setup(&fx, 2, 4, 2, 32);
    const int32_t pipes[] = {0, 1, 2, 3, -1, 4, 5, -1, 6, 7, -1};
    set_pipelines(&fx, pipes, 3);
    const int32_t failed[] = {4};
    loom_oobleck_replan r;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, failed, 1, 0, &r, &err), LOOM_OK);
    const int32_t p0[] = {0, 1, 2, -1}, p1[] = {5, 3, -1}, p2[] = {6, 7, -1};
    check_pipe(&r, 0, p0, LOOM_OOBLECK_LEND);
    check_pipe(&r, 1, p1, LOOM_OOBLECK_BORROW);
    check_pipe(&r, 2, p2, LOOM_OOBLECK_KEEP);
    check_copies(&fx, &r, failed, 1);
    /* node 5 was the second node of a 2-node pipeline (layers 4..7) and is
     * now its first (layers 0..3): it copies 0..3 from node 0 / node 1;
     * node 3 held layers 6..7 and now holds 4..7: it copies 4, 5 */
    int got5 = 0, got3 = 0;
    for (int c = 0; c < r.n_copies; c++) {
        if (r.copies[c].to_node == 5) {
            ck_assert_int_lt(r.copies[c].layer, 4);
            ck_assert_int_eq(r.copies[c].from_node, r.copies[c].layer < 2 ? 0 : 1);
            got5++;
        }
        if (r.copies[c].to_node == 3) {
            ck_assert_int_ge(r.copies[c].layer, 4);
            ck_assert_int_le(r.copies[c].layer, 5);
            ck_assert_int_eq(r.copies[c].from_node, 2);
            got3++;
        }
    }
    ck_assert_int_eq(got5, 4);
    ck_assert_int_eq(got3, 2);
    loom_oobleck_replan_clear(&r);
    teardown(&fx);
}
END_TEST

START_TEST(merge_pipelines)
{
    /* every pipeline at n0 = 2: nobody can lend, so the short one merges
     * with the smallest other pipeline into 3 nodes (< 2 n0, Theorem 2) */
    fixture fx;
    setup(&fx, 2, 4, 2, 32);
    const int32_t pipes[] = {0, 1, -1, 2, 3, -1, 4, 5, -1, 6, 7, -1};
    set_pipelines(&fx, pipes, 4);
    const int32_t failed[] = {0};
    loom_oobleck_replan r;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, failed, 1, 0, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.full_replan, 0);
    ck_assert_int_eq(r.next.n_pipelines, 3);
    const int32_t p0[] = {1, 2, 3, -1}, p1[] = {4, 5, -1}, p2[] = {6, 7, -1};
    check_pipe(&r, 0, p0, LOOM_OOBLECK_MERGE);
    check_pipe(&r, 1, p1, LOOM_OOBLECK_KEEP);
    check_pipe(&r, 2, p2, LOOM_OOBLECK_KEEP);
    check_copies(&fx, &r, failed, 1);
    loom_oobleck_replan_clear(&r);

    /* two short pipelines merge with each other first */
    fx.st.f = 1;
    const int32_t two[] = {0, 2};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, two, 2, 0, &r, &err), LOOM_OK);
    const int32_t m0[] = {1, 3, -1};
    check_pipe(&r, 0, m0, LOOM_OOBLECK_MERGE);
    ck_assert_int_eq(r.next.n_pipelines, 3);
    check_copies(&fx, &r, two, 2);
    loom_oobleck_replan_clear(&r);
    teardown(&fx);
}
END_TEST

START_TEST(full_replan_fallback)
{
    /* N = 7, f = 1, templates {2..5}: losing both nodes of the 2-node
     * pipeline leaves one pipeline (< f+1): a full re-instantiation of the
     * 5 surviving nodes follows */
    fixture fx;
    setup(&fx, 2, 5, 1, 20);
    const int32_t pipes[] = {0, 1, -1, 2, 3, 4, 5, 6, -1};
    set_pipelines(&fx, pipes, 2);
    const int32_t failed[] = {0, 1};
    loom_oobleck_replan r;
    loom_error err = {0, ""};
    ck_assert_msg(loom_oobleck_replan_run(&fx.st, failed, 2, 0, &r, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_int_eq(r.full_replan, 1);
    ck_assert_int_ge(r.next.n_pipelines, 2);
    int32_t nodes = 0;
    for (int i = 0; i < r.next.n_pipelines; i++) {
        nodes += r.next.pipelines[i].n_nodes;
        ck_assert_int_eq(r.actions[i], LOOM_OOBLECK_REPLAN);
    }
    ck_assert_int_eq(nodes, 5);
    check_copies(&fx, &r, failed, 2);
    loom_oobleck_replan_clear(&r);
    /* `full` forces a re-plan even when a local repair exists */
    const int32_t one[] = {6};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, one, 1, 1, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.full_replan, 1);
    loom_oobleck_replan_clear(&r);
    teardown(&fx);
}
END_TEST

START_TEST(too_few_nodes_left)
{
    fixture fx;
    setup(&fx, 2, 4, 2, 32);
    const int32_t pipes[] = {0, 1, 2, 3, -1, 4, 5, -1, 6, 7, -1};
    set_pipelines(&fx, pipes, 3);
    const int32_t failed[] = {1, 4, 6};
    loom_oobleck_replan r;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, failed, 3, 0, &r, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "5 nodes remain"));
    ck_assert_ptr_nonnull(strstr(err.message, "(f+1)*n0 = 3*2 = 6"));
    ck_assert_ptr_nonnull(strstr(err.message, "save progress"));
    ck_assert_int_eq(r.next.n_pipelines, 0);
    /* bad input: an unknown node and a duplicate */
    const int32_t unknown[] = {42};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, unknown, 1, 0, &r, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "node 42"));
    const int32_t dup[] = {2, 2};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, dup, 2, 0, &r, &err),
                     LOOM_EINVAL);
    teardown(&fx);
}
END_TEST

START_TEST(lost_replicas)
{
    /* Fig. 2.2: four 2-node pipelines (f = 1). Losing the first node of
     * every pipeline loses layers 0..3 everywhere: unrecoverable. Losing
     * alternate halves keeps one copy of every layer: recoverable. */
    fixture fx;
    setup(&fx, 2, 6, 1, 32);
    const int32_t pipes[] = {0, 1, -1, 2, 3, -1, 4, 5, -1, 6, 7, -1};
    set_pipelines(&fx, pipes, 4);
    const int32_t firsts[] = {0, 2, 4, 6};
    loom_oobleck_replan r;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_replan_run(&fx.st, firsts, 4, 0, &r, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "layer 0 lost every replica"));
    const int32_t mixed[] = {0, 3, 4, 7};
    ck_assert_msg(loom_oobleck_replan_run(&fx.st, mixed, 4, 0, &r, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_int_eq(r.next.n_pipelines, 2);
    check_copies(&fx, &r, mixed, 4);
    loom_oobleck_replan_clear(&r);
    teardown(&fx);
}
END_TEST

/* The suite of this file. */
static Suite *replan_suite(void)
{
    Suite *s = suite_create("oobleck_replan");
    TCase *tc = tcase_create("replan");
    tcase_add_test(tc, instantiate_seven_nodes);
    tcase_add_test(tc, simple_reinstantiation);
    tcase_add_test(tc, borrow_a_node);
    tcase_add_test(tc, merge_pipelines);
    tcase_add_test(tc, full_replan_fallback);
    tcase_add_test(tc, too_few_nodes_left);
    tcase_add_test(tc, lost_replicas);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(replan_suite());
}
