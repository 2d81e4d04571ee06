/* perfmon-jank-policy-private.h: when a main-thread jank is sampled
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-jank-config-private.h"

G_BEGIN_DECLS

/* Default-mode thresholds of the seed, in ms. */
#define PERFMON_JANK_STACK_THRESHOLD_MS 150
#define PERFMON_JANK_TRACE_THRESHOLD_MS 450

/* Stack sampling: checks after a detection before giving up. */
#define PERFMON_JANK_STACK_CHECKS       2
/* Trace capture: 20 checks every 150 ms, the trace is stored after 3 s. */
#define PERFMON_JANK_TRACE_CHECKS       20
#define PERFMON_JANK_TRACE_INTERVAL_MS  150
#define PERFMON_JANK_TRACE_DURATION_MS  3000

typedef enum
{
  PERFMON_JANK_ACTION_NONE,
  PERFMON_JANK_ACTION_STACK_SAMPLING,
  PERFMON_JANK_ACTION_TRACE,
} PerfmonJankAction;

/* What the main thread's @busy_ms (how long the current task has run)
 * calls for under @config. */
PerfmonJankAction _perfmon_jank_classify (guint64                  busy_us,
                                          const PerfmonJankConfig *config);
/* The busy time past which a task calls for @action under @config (the
 * sampler starts a session there), G_MAXUINT64 if it never does. */
guint64           _perfmon_jank_threshold_us (const PerfmonJankConfig *config,
                                              PerfmonJankAction        action);

/* The report rate limits of one process. Times are wall-clock µs
 * (g_get_real_time()), passed in so that tests drive the clock. */
typedef struct
{
  gint64 start_time_us;
  /* Stack reports granted in the process's life, and the times of the
   * latest ones (the most report_times_per_app can ask for). */
  guint  n_stack;
  gint64 stack_times_us[PERFMON_JANK_REPORT_TIMES_MAX];
  gint64 last_trace_us;
  gboolean traced;
} PerfmonJankLimiter;

void     _perfmon_jank_limiter_init        (PerfmonJankLimiter      *limiter,
                                            gint64                   start_time_us);
/* TRUE within ignore_startup_time of the start: no check at all. */
gboolean _perfmon_jank_limiter_in_startup  (const PerfmonJankLimiter *limiter,
                                            const PerfmonJankConfig  *config,
                                            gint64                    now_us);
/* TRUE if a stack sampling report may be made at @now_us, and then counts
 * it. */
gboolean _perfmon_jank_limiter_allow_stack (PerfmonJankLimiter      *limiter,
                                            const PerfmonJankConfig *config,
                                            gboolean                 developer_mode,
                                            gint64                   now_us);
/* TRUE if a trace may be captured at @now_us, and then counts it. */
gboolean _perfmon_jank_limiter_allow_trace (PerfmonJankLimiter      *limiter,
                                            gint64                   now_us);

/* The schedule the watchdog follows after it detected a jank, in ms after
 * the detection. */
typedef struct
{
  PerfmonJankAction action;
  /* Times of the checks that run. */
  guint    n_checks;
  guint    check_ms[PERFMON_JANK_TRACE_CHECKS];
  /* Times of the stack samples (none for a trace). */
  guint    n_samples;
  guint    sample_ms[PERFMON_JANK_SAMPLE_COUNT_MAX];
  /* Whether (and when) the event is reported, the stack samples collected
   * or the trace stored; otherwise the check ends at end_ms with nothing. */
  gboolean report;
  guint    end_ms;
} PerfmonJankPlan;

/* The plan for @action under @config when the jank is seen again at check
 * @jank_at_check (1-based; 0: at none of them). For a stack sampling, only
 * checks 1 and 2 exist; for a trace, any of the 20. */
void _perfmon_jank_sampling_plan (const PerfmonJankConfig *config,
                                  PerfmonJankAction        action,
                                  guint                    jank_at_check,
                                  PerfmonJankPlan         *plan);

G_END_DECLS
