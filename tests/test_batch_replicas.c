/*
 * test_batch_replicas.c - a plan of a global batch's heaviest replica
 * (--global-batch over dp > 1 replicas of a generated workload) stands for
 * the step: its time is the slowest replica's, its MFU and HFU count every
 * replica's model FLOPs (core/run/batch_replicas.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "engine_api.h"
#include "pipeline.h"
#include <loom/sys/session.h>
#include "run_priv.h"
#include "problem_inputs.h"
#include <loom/sys/problem.h>

/* Plans iteration 0 of tiny-vlm with the PipeWeaver pipeline (one flow per
 * module, sub-microbatches) at PP 2 and DP 2, 4 microbatches a replica,
 * the whole batch drawn when global_batch > 0. */
static void plan_tiny(int64_t global_batch, loom_session *s, loom_plan *plan)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/pipeweaver.json");
    a.model = loom_test_src("tests/fidelity/models/tiny-vlm.json");
    a.parallel = "tp=1,pp=2,dp=2,vpp=1,mb=4";
    a.generate = "interleaved";
    a.packing_window = 3;
    a.iterations = 1;
    a.global_batch = global_batch;
    a.params[a.n_params++] = "ranker.max_evaluations=20";
    a.params[a.n_params++] = "ranker.budget_ms=600000";
    loom_error err = {0};
    ck_assert_msg(loom_session_init(s, &a, &err) == LOOM_OK, "%s", err.message);
    ck_assert_msg(loom_session_plan(s, 0, plan, &err) == LOOM_OK, "%s", err.message);
}

/* The plan's MFU as its own graph gives it: its replica's model FLOPs over
 * its ranks' GPU time. */
static double graph_mfu(const loom_plan *plan)
{
    const loom_stage_graph *g = plan->graph;
    return g->total_flops / (plan->metrics.makespan_ms / 1e3 * g->n_ranks * g->peak_flops_per_rank);
}

/* Replica r of the batch's iteration 0: its samples, sequences numbered
 * from 0 (one sequence a microbatch here), in buf. */
static loom_iteration replica_of(const loom_batch_replicas *b, int32_t r, loom_sample *buf)
{
    int32_t n = 0;
    for (int64_t i = b->off[0]; i < b->off[1]; i++)
        if (b->samples[i].microbatch / b->per == r) {
            buf[n] = b->samples[i];
            buf[n++].microbatch -= r * b->per;
        }
    return (loom_iteration){0, n, buf};
}

/* The oracle: the total_flops of the stage graph the pipeline's cost model
 * builds for the samples of `it` under the layer split of `part` (a copy
 * holding them, one sub-microbatch a microbatch: a data split does not
 * change what the model computes). */
static int graph_flops(loom_pipeline *pl, const loom_problem *problem, const loom_iteration *it,
                       const loom_partition *part, double *flops, loom_error *err)
{
    *flops = 0;
    int32_t n = it->n_samples, M = part->n_microbatches, modules = part->n_modules;
    loom_partition *copy = loom_partition_clone(part);
    int32_t *map = malloc((size_t)(n > 0 ? n : 1) * (size_t)(modules > 0 ? modules : 1) *
                          sizeof *map);
    if (!copy || !map) {
        loom_partition_free(copy);
        free(map);
        return loom_set_error(err, LOOM_ENOMEM, "replica FLOPs: out of memory");
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb < 0) /* unpacked: spread in order, as the layout kit does */
            mb = (int32_t)((int64_t)i * M / n);
        for (int32_t m = 0; m < modules; m++)
            map[(size_t)m * (size_t)n + (size_t)i] = mb;
    }
    free(copy->sample_mb);
    copy->sample_mb = map;
    copy->n_samples = n;
    for (size_t k = 0; k < (size_t)copy->cap_flows * (size_t)copy->cap_microbatches; k++)
        if (copy->subs[k] > 1)
            copy->subs[k] = 1;
    loom_stage_graph *g = NULL;
    pl->problem = problem;
    int rc = loom_graph_build(&pl->steps[pl->cost_model].ctx, problem, it, copy, &g, err);
    if (rc == LOOM_OK)
        *flops = g->total_flops;
    loom_graph_free(g);
    loom_partition_free(copy);
    return rc;
}

START_TEST(job_mfu_counts_every_replica)
{
    loom_session s;
    loom_plan plan;
    plan_tiny(8, &s, &plan);
    const loom_batch_replicas *b = s.batch;
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->dp, 2);
    ck_assert_int_eq(b->per, 4);
    loom_sample *buf = malloc((size_t)(b->off[1] - b->off[0]) * sizeof *buf);
    double flops[2];
    loom_error err = {0};
    for (int32_t r = 0; r < 2; r++) {
        loom_iteration it = replica_of(b, r, buf);
        ck_assert_int_gt(it.n_samples, 0);
        ck_assert_msg(graph_flops(s.pl, &s.problem, &it, plan.partition, &flops[r], &err) == LOOM_OK, "%s", err.message);
    }
    free(buf);
    /* the replicas differ (else the test could not fail), and the planned
     * one's FLOPs on the copy with one sub-microbatch a microbatch are its
     * graph's under the plan's own data split */
    ck_assert_double_ne(flops[0], flops[1]);
    double planned = flops[b->planned[0]];
    ck_assert_double_eq_tol(planned, plan.graph->total_flops, 1e-9 * planned);
    double want = graph_mfu(&plan) * (flops[0] + flops[1]) / 2 / planned;
    ck_assert_double_eq_tol(plan.metrics.mfu, want, 1e-9 * want);
    ck_assert_double_eq_tol(plan.metrics.hfu,
                            (plan.graph->total_flops + plan.graph->recompute_flops) /
                                (plan.metrics.makespan_ms / 1e3 * plan.graph->n_ranks *
                                 plan.graph->peak_flops_per_rank) *
                                (flops[0] + flops[1]) / 2 / planned,
                            1e-9);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(one_replica_planned_alone_keeps_its_mfu)
{
    loom_session s;
    loom_plan plan;
    plan_tiny(0, &s, &plan);
    ck_assert_ptr_null(s.batch);
    ck_assert_double_eq_tol(plan.metrics.mfu, graph_mfu(&plan), 1e-12);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

/* Keeps the heaviest of 2 replicas of 2 sequences (one a microbatch) of
 * every iteration of `jsonl` on Llama 3.1 8B; *md and *w are the caller's
 * to free with the returned batch. */
static loom_batch_replicas *keep_heaviest_llama(const char *jsonl, loom_model_data **md,
                                                loom_workload **w)
{
    loom_error err = {0};
    ck_assert_msg(loom_model_load(loom_test_src("tests/fidelity/models/llama-3.1-8b.json"), md,
                                  &err) == LOOM_OK, "%s", err.message);
    const char *path = loom_test_tmpfile(".jsonl", jsonl);
    ck_assert_msg(loom_workload_load(path, w, &err) == LOOM_OK, "%s", err.message);
    loom_batch_replicas *b = NULL;
    ck_assert_msg(loom_batch_keep_heaviest(*w, loom_model_data_model(*md), 2, 2, 1, &b, &err) ==
                  LOOM_OK, "%s", err.message);
    return b;
}

/* Replicas of one sequence pair each on Llama 3.1 8B (h 4096, f 14336
 * gated, 8 of 32 heads for K and V, causal): per trained layer a token
 * costs 3 x 436.2 MFLOP of GEMMs and a squared length 3 x 8192 FLOP of
 * attention core. Replica 0 holds 4200 + 4200 tokens (3.953e12 FLOPs a
 * layer over 3), replica 1 8000 + 200 (4.101e12): fewer tokens, more
 * attention (layer 0 and the LM head aside, which count tokens alone).
 * The heaviest is replica 1, which linear work alone (tokens times
 * weights) would rank below replica 0. */
START_TEST(heaviest_replica_counts_attention)
{
    loom_model_data *md = NULL;
    loom_workload *w = NULL;
    loom_batch_replicas *b = keep_heaviest_llama(
        "{\"iteration\": 0, \"samples\": [{\"text_tokens\": 4200, \"microbatch\": 0}, "
        "{\"text_tokens\": 4200, \"microbatch\": 1}, {\"text_tokens\": 8000, "
        "\"microbatch\": 2}, {\"text_tokens\": 200, \"microbatch\": 3}]}\n"
        "{\"iteration\": 1, \"samples\": [{\"text_tokens\": 8000, \"microbatch\": 0}, "
        "{\"text_tokens\": 300, \"microbatch\": 1}, {\"text_tokens\": 4200, "
        "\"microbatch\": 2}, {\"text_tokens\": 4200, \"microbatch\": 3}]}\n", &md, &w);
    ck_assert_int_eq(b->planned[0], 1);
    ck_assert_int_eq(b->planned[1], 0);
    /* the planned replica's samples, renumbered from sequence 0 */
    int64_t want_tokens[2][2] = {{8000, 200}, {8000, 300}};
    for (int32_t k = 0; k < 2; k++) {
        ck_assert_int_eq(w->iterations[k].n_samples, 2);
        for (int32_t i = 0; i < 2; i++) {
            ck_assert_int_eq(w->iterations[k].samples[i].text_tokens, want_tokens[k][i]);
            ck_assert_int_eq(w->iterations[k].samples[i].microbatch, i);
        }
    }
    ck_assert_int_eq(w->n_samples, 4);
    loom_batch_replicas_free(b);
    loom_workload_free(w);
    loom_model_data_free(md);
}
END_TEST

START_TEST(heaviest_replica_counts_the_lm_head)
{
    /* Llama 3.1 8B (vocabulary 128256): replica 0 holds 4200 + 4200
     * tokens, replica 1 5930 + 2370. Its layers alone make replica 1
     * heavier (its extra attention, 5.50e6 more squared tokens, outweighs
     * 100 fewer tokens: 55,018 against the layers' 53,814 FLOPs a token
     * per FLOP a squared token); the LM head's 3 x 2 h V a token (57,908
     * with it) tips it back to replica 0. */
    loom_model_data *md = NULL;
    loom_workload *w = NULL;
    loom_batch_replicas *b = keep_heaviest_llama(
        "{\"iteration\": 0, \"samples\": [{\"text_tokens\": 4200, \"microbatch\": 0}, "
        "{\"text_tokens\": 4200, \"microbatch\": 1}, {\"text_tokens\": 5930, "
        "\"microbatch\": 2}, {\"text_tokens\": 2370, \"microbatch\": 3}]}\n", &md, &w);
    ck_assert_int_eq(b->planned[0], 0);
    ck_assert_int_eq(w->iterations[0].n_samples, 2);
    ck_assert_int_eq(w->iterations[0].samples[0].text_tokens, 4200);
    ck_assert_int_eq(w->iterations[0].samples[1].text_tokens, 4200);
    loom_batch_replicas_free(b);
    loom_workload_free(w);
    loom_model_data_free(md);
}
END_TEST

static Suite *batch_replicas_suite(void)
{
    Suite *s = suite_create("batch_replicas");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, job_mfu_counts_every_replica);
    tcase_add_test(tc, one_replica_planned_alone_keeps_its_mfu);
    tcase_add_test(tc, heaviest_replica_counts_attention);
    tcase_add_test(tc, heaviest_replica_counts_the_lm_head);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(batch_replicas_suite());
}
