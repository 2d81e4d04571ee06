/* perfmon-jank-config-private.h: the MAIN_THREAD_JANK event configuration
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The only event set_event_config() knows. */
#define PERFMON_JANK_EVENT_NAME "MAIN_THREAD_JANK"

/* log_type values (see the jank seed). */
#define PERFMON_JANK_LOG_TYPE_DEFAULT 0  /* stack 150-450 ms, trace above */
#define PERFMON_JANK_LOG_TYPE_STACK   1  /* stack sampling, custom parameters */
#define PERFMON_JANK_LOG_TYPE_TRACE   2  /* trace above 450 ms only */

#define PERFMON_JANK_SAMPLE_INTERVAL_MIN      50
#define PERFMON_JANK_SAMPLE_INTERVAL_MAX      500
#define PERFMON_JANK_SAMPLE_INTERVAL_DEFAULT  150
#define PERFMON_JANK_IGNORE_STARTUP_MIN       3
/* The seed gives no upper bound; an hour is far beyond any real startup
 * and keeps the microsecond arithmetic of the policy far from overflow. */
#define PERFMON_JANK_IGNORE_STARTUP_MAX       3600
#define PERFMON_JANK_IGNORE_STARTUP_DEFAULT   10
#define PERFMON_JANK_SAMPLE_COUNT_MIN         1
#define PERFMON_JANK_SAMPLE_COUNT_DEFAULT     10
/* Milliseconds a detected jank may take until it is reported, and the
 * intervals of that budget not spent sampling (seed: sample_count ≤
 * 2500 / sample_interval - 4). */
#define PERFMON_JANK_REPORT_BUDGET_MS         2500
#define PERFMON_JANK_REPORT_BUDGET_INTERVALS  4
/* The largest sample_count any valid sample_interval allows. */
#define PERFMON_JANK_SAMPLE_COUNT_MAX \
  (PERFMON_JANK_REPORT_BUDGET_MS / PERFMON_JANK_SAMPLE_INTERVAL_MIN - \
   PERFMON_JANK_REPORT_BUDGET_INTERVALS)
#define PERFMON_JANK_REPORT_TIMES_MIN         1
#define PERFMON_JANK_REPORT_TIMES_MAX         3
#define PERFMON_JANK_REPORT_TIMES_DEFAULT     1

typedef struct
{
  guint    log_type;
  guint    sample_interval_ms;
  guint    ignore_startup_time_s;
  guint    sample_count;
  guint    report_times_per_app;
  /* TRUE once report_times_per_app was set: it can be set only once per
   * process, and the rate limits tell "never set" (once per process) from
   * "set to 1" (once per day). */
  gboolean report_times_set;
} PerfmonJankConfig;

void     _perfmon_jank_config_init  (PerfmonJankConfig *config);

/* setEventConfig (@event_name, @params) of the seed. @params maps char *
 * names to char * decimal values (NULL is an empty table). On error,
 * @config is left exactly as it was. */
gboolean _perfmon_jank_config_apply (PerfmonJankConfig *config,
                                     const char        *event_name,
                                     GHashTable        *params,
                                     GError           **error);

/* 2500 / @sample_interval_ms - 4 (integer division), or 0 when that is
 * not positive (intervals above 500 ms, or 0). */
guint    _perfmon_jank_config_max_sample_count (guint sample_interval_ms);

G_END_DECLS
