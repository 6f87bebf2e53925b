/* loom/loom.h - everything a plugin author includes. */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H
#include <loom/common.h>
#include <loom/problem.h>
#include <loom/tokens.h>
#include <loom/model_flops.h>
#include <loom/graph.h>
#include <loom/host.h>
#include <loom/params.h>
#include <loom/plugin.h>
#include <loom/cost_model.h>
#include <loom/partitioner.h>
#include <loom/ranker.h>
#include <loom/interleaver.h>
#include <loom/memory_tuner.h>
#endif
