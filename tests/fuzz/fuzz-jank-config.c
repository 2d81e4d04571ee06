/* fuzz-jank-config.c: the MAIN_THREAD_JANK parameters of setEventConfig
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is text: the first line is the event name, each further line
 * "name=value" (what a caller of perfmon_hang_monitor_set_event_config()
 * or the D-Bus method passes). _perfmon_jank_config_apply() must either
 * refuse it with a PERFMON_ERROR, leaving the configuration exactly as it
 * was, or accept it with every field within the seed's ranges. A crash, a
 * sanitizer report, a g_critical() or a g_warning() is a finding.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmon-jank-config-private.h"
#include "fuzz-common.h"

static void
check_ranges (const PerfmonJankConfig *config)
{
  if (config->log_type > PERFMON_JANK_LOG_TYPE_TRACE ||
      config->sample_interval_ms < PERFMON_JANK_SAMPLE_INTERVAL_MIN ||
      config->sample_interval_ms > PERFMON_JANK_SAMPLE_INTERVAL_MAX ||
      config->ignore_startup_time_s < PERFMON_JANK_IGNORE_STARTUP_MIN ||
      config->ignore_startup_time_s > PERFMON_JANK_IGNORE_STARTUP_MAX ||
      config->sample_count < PERFMON_JANK_SAMPLE_COUNT_MIN ||
      config->sample_count > _perfmon_jank_config_max_sample_count (config->sample_interval_ms) ||
      config->report_times_per_app < PERFMON_JANK_REPORT_TIMES_MIN ||
      config->report_times_per_app > PERFMON_JANK_REPORT_TIMES_MAX)
    abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  g_autofree char *text = g_strndup ((const char *) data, size);
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_auto(GStrv) lines = NULL;
  g_autoptr(GError) error = NULL;
  PerfmonJankConfig config, before;

  init_once ();

  lines = g_strsplit (text, "\n", -1);
  for (guint i = 1; lines[0] != NULL && lines[i] != NULL; i++)
    {
      char *equals = strchr (lines[i], '=');

      if (equals == NULL)
        continue;
      *equals = '\0';
      g_hash_table_insert (params, lines[i], equals + 1);
    }

  _perfmon_jank_config_init (&config);
  check_ranges (&config);

  /* Twice: report_times_per_app may be set only once per process. */
  for (guint round = 0; round < 2; round++)
    {
      before = config;
      if (_perfmon_jank_config_apply (&config, lines[0] != NULL ? lines[0] : "", params, &error))
        {
          if (error != NULL)
            abort ();
          check_ranges (&config);
        }
      else
        {
          if (error == NULL || error->domain != PERFMON_ERROR ||
              memcmp (&config, &before, sizeof config) != 0)
            abort ();
          g_clear_error (&error);
        }
    }

  return 0;
}
