/* out_precision.c - the precision a plan's cost model priced (the stage
 * graph's LOOM_ASSUMED_* precision bits), which megatron.args and
 * torchtitan.toml state as their runtimes' settings or refuse. */
#include "output.h"

int loom_out_precision(const loom_plan *plan, loom_out_prec *prec)
{
    const loom_stage_graph *g = plan->graph;
    uint32_t a = g && LOOM_STRUCT_HAS(g, loom_stage_graph, assumed) ? g->assumed : 0;
    prec->element_bytes = a & LOOM_ASSUMED_ELEMENTS_FP32 ? 4 : 2;
    prec->matmul = a & LOOM_ASSUMED_MATMUL_FP16   ? "fp16"
                   : a & LOOM_ASSUMED_MATMUL_TF32 ? "tf32"
                   : a & LOOM_ASSUMED_MATMUL_FP32 ? "fp32"
                   : a & LOOM_ASSUMED_MATMUL_FP8  ? "fp8"
                                                  : "bf16";
    return (a & LOOM_ASSUMED_PRECISION) != 0;
}
