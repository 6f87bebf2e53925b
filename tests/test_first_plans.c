/* test_first_plans.c - a new user's first `loom plan` on a Hugging Face
 * config: the default workload follows the model's modalities (text for
 * an LLM, interleaved image-text for an image VLM) and the summary names
 * it; the microbatch count defaults to 4 x pp as docs/formats.md says;
 * a tensor-parallel degree above a node's GPUs is warned about with the
 * reason. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define has loom_test_has

/* The first table row of `loom plan` (iteration 0), without the plan
 * time column, which varies; the caller frees it. */
static char *first_row(const char *out)
{
    const char *row = strstr(out, "\n0 ");
    ck_assert_msg(row != NULL, "no iteration row in:\n%s", out);
    row++;
    /* "0  makespan  bubble  mfu  plan_ms  candidate": keep three numbers */
    char it[16], ms[32], bubble[32], mfu[32];
    ck_assert_int_eq(sscanf(row, "%15s %31s %31s %31s", it, ms, bubble, mfu), 4);
    char *keep = malloc(128);
    snprintf(keep, 128, "%s %s %s", ms, bubble, mfu);
    return keep;
}

/* A text-only model plans a text workload by default: the same iteration
 * as --generate text, and the summary says which and why. */
START_TEST(llm_defaults_to_text)
{
    const char *model = loom_test_src("examples/models/hf/llama-3-8b.json");
    char *dflt = loom_test_cli_expect(0, "plan --model %s --parallel tp=2,pp=4,dp=1,mb=16 "
                                         "--iterations 1", model);
    char *text = loom_test_cli_expect(0, "plan --model %s --parallel tp=2,pp=4,dp=1,mb=16 "
                                         "--iterations 1 --generate text", model);
    char *a = first_row(dflt), *b = first_row(text);
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(a, "1908.685 27.69% 0.334");
    has(dflt, "  workload      generated text (default for a text-only model)\n");
    has(text, "  workload      generated text (--generate)\n");
    free(a);
    free(b);
    free(dflt);
    free(text);
}
END_TEST

/* An image VLM plans interleaved image-text documents by default. */
START_TEST(vlm_defaults_to_its_modalities)
{
    char *out = loom_test_cli_expect(0, "plan --model %s --parallel tp=2,pp=4 --iterations 1",
                                     loom_test_src("examples/models/hf/llava-1.5-7b.json"));
    has(out, "  workload      generated interleaved (default for an image-text model)\n");
    free(out);
    out = loom_test_cli_expect(0, "plan --model t2v-s --iterations 1");
    has(out, "  workload      generated video (default for a video model)\n");
    free(out);
}
END_TEST

/* Without a parallel object in the model (a Hugging Face config) the
 * microbatch count is 4 x pp; mb= on the command line and --global-batch
 * still decide when given; a preset keeps its own. */
START_TEST(hf_microbatches_default_to_four_per_stage)
{
    const char *model = loom_test_src("examples/models/hf/llama-3-8b.json");
    char *out = loom_test_cli_expect(0, "plan --model %s --parallel tp=2,pp=4 --iterations 1",
                                     model);
    has(out, "  layout        tp 2 x pp 4 x dp 1 = 8 GPUs (vpp 1, 16 microbatches)\n");
    free(out);
    out = loom_test_cli_expect(0, "plan --model %s --parallel tp=4,pp=2 --iterations 1", model);
    has(out, "  layout        tp 4 x pp 2 x dp 1 = 8 GPUs (vpp 1, 8 microbatches)\n");
    free(out);
    out = loom_test_cli_expect(0, "plan --model %s --parallel tp=2,pp=4,mb=6 --iterations 1",
                               model);
    has(out, "(vpp 1, 6 microbatches)\n");
    free(out);
    out = loom_test_cli_expect(0, "plan --model %s --parallel tp=2,pp=4,dp=2 --global-batch 40 "
                                  "--iterations 1", model);
    has(out, "(vpp 1, 20 microbatches)\n");
    free(out);
    out = loom_test_cli_expect(0, "plan --model vlm-s --iterations 1");
    has(out, "  layout        tp 4 x pp 4 x dp 1 = 16 GPUs (vpp 1, 16 microbatches)\n");
    free(out);
}
END_TEST

/* tp above a node's GPUs is planned, with a warning that gives the
 * reason; tp within a node is not warned about. */
START_TEST(tp_beyond_a_node_is_warned)
{
    const char *model = loom_test_src("examples/models/hf/llama-3-8b.json");
    char *out = loom_test_cli_expect(0, "plan --model %s --parallel tp=16,pp=4 --iterations 1 "
                                        "--quiet", model);
    has(out, "loom plan: warning: tp 16 spans 2 nodes of 8 GPUs (h800): every layer's "
             "tensor-parallel all-reduce then crosses the inter-node network (25 GB/s per GPU "
             "instead of NVLink's 200 GB/s), so the plan is slow; keep tp <= 8 and use pp or dp "
             "across nodes\n");
    free(out);
    out = loom_test_cli_expect(0, "plan --model %s --parallel tp=8,pp=4 --iterations 1 --quiet",
                               model);
    ck_assert_ptr_null(strstr(out, "warning"));
    free(out);
}
END_TEST

static Suite *first_plans_suite(void)
{
    Suite *s = suite_create("first_plans");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, llm_defaults_to_text);
    tcase_add_test(tc, vlm_defaults_to_its_modalities);
    tcase_add_test(tc, hf_microbatches_default_to_four_per_stage);
    tcase_add_test(tc, tp_beyond_a_node_is_warned);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(first_plans_suite());
}
