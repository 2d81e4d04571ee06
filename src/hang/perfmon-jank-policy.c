/* perfmon-jank-policy.c: when a main-thread jank is sampled
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-jank-policy-private.h"

/* Pure logic, no clock and no thread: the hang monitor's watchdog asks it
 * what to do and passes the time in, so that tests can drive every limit
 * without waiting for a day.
 *
 * Classification (the seed, "Default Main Thread Jank Event Time
 * Specifications" and "Setting Parameters"):
 *
 * - log_type 0: stack sampling when 150 ms < busy < 450 ms, a trace when
 *   busy "exceeds 450 ms", as the seed says, in microseconds: a task of
 *   exactly 450 ms is in neither range and gets neither. The sampler starts
 *   a stack session at 150 ms, before the task's length is known, and
 *   reports it only if the task ended under 450 ms.
 * - log_type 1: stack sampling only, and the seed makes sample_interval the
 *   interval of the periodic check: a task is a jank once it has run for
 *   more than one check interval, so the threshold is busy >
 *   sample_interval (150 ms by default, the same as log_type 0). There is
 *   no trace in this mode.
 * - log_type 2: a trace when busy > 450 ms, nothing below.
 *
 * Rate limits. Stack sampling "can be triggered only once" per process, or
 * "once an hour" with Developer Options; report_times_per_app N turns that
 * into "N times per day" (developer mode off) or "N times per hour" (on).
 * So, developer mode off: never-set report_times_per_app means once in the
 * process's life, a set one means N in any 24 hours; developer mode on: N
 * (1 by default) in any hour. Windows slide: a report is allowed when
 * fewer than N reports were granted less than a window away. Traces: once
 * a day. The seed's note that traces need Developer Options off is about
 * its platform's log builds, not a limit of the policy, so it is not
 * reproduced.
 *
 * The times are wall-clock, which can step backwards: a grant recorded
 * "in the future" counts as recent while it is less than a window away,
 * so stepping the clock back never buys extra reports, and a big step
 * does not lock reports out for ever either. */

#define HOUR_US (G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC)
#define DAY_US  (24 * HOUR_US)

guint64
_perfmon_jank_threshold_us (const PerfmonJankConfig *config,
                            PerfmonJankAction        action)
{
  g_return_val_if_fail (config != NULL, G_MAXUINT64);

  switch (action)
    {
    case PERFMON_JANK_ACTION_STACK_SAMPLING:
      if (config->log_type == PERFMON_JANK_LOG_TYPE_TRACE)
        return G_MAXUINT64;
      return (guint64) (config->log_type == PERFMON_JANK_LOG_TYPE_STACK ? config->sample_interval_ms
                                                                        : PERFMON_JANK_STACK_THRESHOLD_MS) * 1000;
    case PERFMON_JANK_ACTION_TRACE:
      if (config->log_type == PERFMON_JANK_LOG_TYPE_STACK)
        return G_MAXUINT64;
      return (guint64) PERFMON_JANK_TRACE_THRESHOLD_MS * 1000;
    case PERFMON_JANK_ACTION_NONE:
    default:
      g_return_val_if_reached (G_MAXUINT64);
    }
}

PerfmonJankAction
_perfmon_jank_classify (guint64                  busy_us,
                        const PerfmonJankConfig *config)
{
  guint64 stack_us;
  guint64 trace_us;

  g_return_val_if_fail (config != NULL, PERFMON_JANK_ACTION_NONE);

  stack_us = _perfmon_jank_threshold_us (config, PERFMON_JANK_ACTION_STACK_SAMPLING);
  trace_us = _perfmon_jank_threshold_us (config, PERFMON_JANK_ACTION_TRACE);
  if (busy_us > trace_us)
    return PERFMON_JANK_ACTION_TRACE;
  /* Below the trace range when there is one: a task of exactly 450 ms
   * gets neither. */
  if (busy_us > stack_us && (busy_us < trace_us || trace_us == G_MAXUINT64))
    return PERFMON_JANK_ACTION_STACK_SAMPLING;
  return PERFMON_JANK_ACTION_NONE;
}

void
_perfmon_jank_limiter_init (PerfmonJankLimiter *limiter,
                            gint64              start_time_us)
{
  g_return_if_fail (limiter != NULL);

  memset (limiter, 0, sizeof *limiter);
  limiter->start_time_us = start_time_us;
}

gboolean
_perfmon_jank_limiter_in_startup (const PerfmonJankLimiter *limiter,
                                  const PerfmonJankConfig  *config,
                                  gint64                    now_us)
{
  g_return_val_if_fail (limiter != NULL, FALSE);
  g_return_val_if_fail (config != NULL, FALSE);

  /* ignore_startup_time is at most an hour: no overflow. */
  return now_us - limiter->start_time_us <
         (gint64) config->ignore_startup_time_s * G_USEC_PER_SEC;
}

/* Whether @then is less than @window_us away from @now, either way. */
static gboolean
within (gint64 then,
        gint64 now,
        gint64 window_us)
{
  gint64 distance = now >= then ? now - then : then - now;

  return distance < window_us;
}

gboolean
_perfmon_jank_limiter_allow_stack (PerfmonJankLimiter      *limiter,
                                   const PerfmonJankConfig *config,
                                   gboolean                 developer_mode,
                                   gint64                   now_us)
{
  guint limit;

  g_return_val_if_fail (limiter != NULL, FALSE);
  g_return_val_if_fail (config != NULL, FALSE);

  limit = CLAMP (config->report_times_per_app, PERFMON_JANK_REPORT_TIMES_MIN,
                 PERFMON_JANK_REPORT_TIMES_MAX);

  if (!developer_mode && !config->report_times_set)
    {
      /* Once in the process's life. */
      if (limiter->n_stack >= limit)
        return FALSE;
    }
  else
    {
      gint64 window_us = developer_mode ? HOUR_US : DAY_US;
      guint stored = MIN (limiter->n_stack, PERFMON_JANK_REPORT_TIMES_MAX);
      guint recent = 0;

      for (guint i = 0; i < stored; i++)
        if (within (limiter->stack_times_us[i], now_us, window_us))
          recent++;
      if (recent >= limit)
        return FALSE;
    }

  /* A ring of the latest grants: N ≤ 3, so the three latest decide. */
  limiter->stack_times_us[limiter->n_stack % PERFMON_JANK_REPORT_TIMES_MAX] = now_us;
  limiter->n_stack++;
  return TRUE;
}

gboolean
_perfmon_jank_limiter_allow_trace (PerfmonJankLimiter *limiter,
                                   gint64              now_us)
{
  g_return_val_if_fail (limiter != NULL, FALSE);

  if (limiter->traced && within (limiter->last_trace_us, now_us, DAY_US))
    return FALSE;

  limiter->traced = TRUE;
  limiter->last_trace_us = now_us;
  return TRUE;
}

/* Stack sampling schedule, in sample_interval units I after the detection
 * (the seed, "Stack capture time"): check k runs at k·I, k = 1, 2; if the
 * jank is still there at check k, sample j (1-based) is taken at (k + j)·I,
 * j = 1…sample_count, and the report goes out one interval after the last
 * sample, at (k + sample_count + 1)·I; if neither check sees it, the check
 * ends at 2·I. The latest report, k = 2, is at (sample_count + 3)·I after
 * the detection; the detection itself comes up to one interval after the
 * task began, which is the fourth interval of the seed's budget: with
 * sample_count ≤ 2500 / I - 4 the report is out within 2500 ms of the
 * task's start.
 *
 * Trace schedule ("Trace capture time"): 20 checks every 150 ms after the
 * capture started; the capture ends 3 s after its start either way, and
 * the trace is stored if any check saw the jank. */
void
_perfmon_jank_sampling_plan (const PerfmonJankConfig *config,
                             PerfmonJankAction        action,
                             guint                    jank_at_check,
                             PerfmonJankPlan         *plan)
{
  g_return_if_fail (config != NULL);
  g_return_if_fail (plan != NULL);

  memset (plan, 0, sizeof *plan);
  plan->action = action;

  if (action == PERFMON_JANK_ACTION_STACK_SAMPLING)
    {
      guint interval = CLAMP (config->sample_interval_ms,
                              PERFMON_JANK_SAMPLE_INTERVAL_MIN,
                              PERFMON_JANK_SAMPLE_INTERVAL_MAX);
      /* The config module enforces the bound; clamp anyway so that a bad
       * config can never overflow sample_ms. */
      guint count = MIN (config->sample_count,
                         _perfmon_jank_config_max_sample_count (interval));

      if (jank_at_check < 1 || jank_at_check > PERFMON_JANK_STACK_CHECKS)
        {
          plan->n_checks = PERFMON_JANK_STACK_CHECKS;
          for (guint k = 1; k <= PERFMON_JANK_STACK_CHECKS; k++)
            plan->check_ms[k - 1] = k * interval;
          plan->end_ms = PERFMON_JANK_STACK_CHECKS * interval;
          return;
        }

      plan->n_checks = jank_at_check;
      for (guint k = 1; k <= jank_at_check; k++)
        plan->check_ms[k - 1] = k * interval;
      plan->n_samples = count;
      for (guint j = 1; j <= count; j++)
        plan->sample_ms[j - 1] = (jank_at_check + j) * interval;
      plan->report = TRUE;
      plan->end_ms = (jank_at_check + count + 1) * interval;
    }
  else if (action == PERFMON_JANK_ACTION_TRACE)
    {
      plan->n_checks = PERFMON_JANK_TRACE_CHECKS;
      for (guint k = 1; k <= PERFMON_JANK_TRACE_CHECKS; k++)
        plan->check_ms[k - 1] = k * PERFMON_JANK_TRACE_INTERVAL_MS;
      plan->report = jank_at_check >= 1 && jank_at_check <= PERFMON_JANK_TRACE_CHECKS;
      plan->end_ms = PERFMON_JANK_TRACE_DURATION_MS;
    }
}
