/*
 * output.h - helpers the writers in core/outputs share (not installed);
 * the writers themselves are declared in <loom/sys/output.h>.
 */
#ifndef LOOM_OUTPUT_H
#define LOOM_OUTPUT_H

#include <locale.h>
#include <stdio.h>
#include "engine_api.h"
#include <loom/sys/output.h>

/* State of one writer call: the "C" numeric locale it switched to and the
 * locale to restore. */
typedef struct loom_out_frame {
    locale_t c_locale;
    locale_t saved;
} loom_out_frame;

/* Checks the plan has what every writer needs (LOOM_EINVAL naming the
 * missing part, `what` naming the output) and switches the calling thread
 * to the "C" locale until loom_out_end. */
int loom_out_begin(const loom_plan *plan, const char *what,
                   loom_out_frame *frame, loom_error *err);

/* Restores the locale; turns a stream error on `out` into LOOM_EIO when
 * `rc` is LOOM_OK. Returns the final status. */
int loom_out_end(loom_out_frame *frame, FILE *out, const char *what, int rc,
                 loom_error *err);

/* Writes `s` as a JSON string literal (quotes and escapes included). */
void loom_out_json_string(FILE *out, const char *s);

/* Writes a JSON number: the shortest of %.15g / %.17g that reads back
 * exactly; null when not finite. */
void loom_out_json_number(FILE *out, double v);

/* Name of model module `module`, or NULL (stage-times problems, -1). */
const char *loom_out_module_name(const loom_plan *plan, int32_t module);

/* Policy value of a stage whose layer entries use different policies. */
#define LOOM_OUT_POLICY_MIXED (-1)

/* "none", "selective", "full" for enum loom_mem_policy, "mixed" for
 * LOOM_OUT_POLICY_MIXED. */
const char *loom_out_policy_name(int policy);

/* 'F', 'B', 'I', 'W' for enum loom_stage_kind ('?' otherwise). */
char loom_out_kind_char(int kind);

/* Memory policy of a stage: the policy every layer entry of its pair
 * uses (enum loom_mem_policy), or LOOM_OUT_POLICY_MIXED. */
int loom_out_stage_policy(const loom_stage_graph *g, int32_t stage);

#endif
