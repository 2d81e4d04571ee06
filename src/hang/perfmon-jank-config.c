/* perfmon-jank-config.c: the MAIN_THREAD_JANK event configuration
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "perfmon-error.h"
#include "perfmon-jank-config-private.h"
#include "perfmon-utf8.h"

/* An error quotes at most this much of a bad value. */
#define QUOTED_PREFIX_BYTES 32

/* What setEventConfig ("MAIN_THREAD_JANK", params) means here (the jank
 * seed, "Customizing Stack Sampling Parameters"):
 *
 * - log_type selects the mode and must always be given: a configuration
 *   without it would leave the mode to whatever was set before, which is
 *   never what a caller that sets parameters means.
 * - log_type 1 ("you must set the following parameters") requires all four
 *   custom parameters: sample_interval, ignore_startup_time, sample_count
 *   and report_times_per_app. A call that lacks any of them fails and names
 *   every missing one.
 * - log_type 0 and 2 take no other parameter. The seed says of log_type 0
 *   "if log_type has been set to 1 for capturing stack sampling data, the
 *   custom parameter is invalid": we read it as "switching away from 1
 *   drops the custom parameters", so sample_interval, ignore_startup_time
 *   and sample_count go back to their defaults, and as "the custom
 *   parameters mean nothing with 0 or 2", so giving one is an error rather
 *   than silently ignored. report_times_per_app is the exception to the
 *   reset: the seed allows setting it only once per process, so what was
 *   set stays in force whatever the log_type.
 * - report_times_per_app "can be set only once": setting it again to the
 *   value in force is accepted (a caller repeating its whole configuration,
 *   which log_type 1 requires, must not fail), any other value is an error.
 * - Values are strings of decimal digits only, as the seed's examples
 *   ("100", not 100): no sign, no spaces, no other base. Leading zeros are
 *   harmless and accepted.
 * - Everything is validated into a copy, which replaces @config only when
 *   the whole call is valid: a bad call changes nothing. */

static const char * const known_params[] = {
  "log_type",
  "sample_interval",
  "ignore_startup_time",
  "sample_count",
  "report_times_per_app",
};

/* The custom parameters of log_type 1, in the order they are reported. */
static const char * const custom_params[] = {
  "sample_interval",
  "ignore_startup_time",
  "sample_count",
  "report_times_per_app",
};

void
_perfmon_jank_config_init (PerfmonJankConfig *config)
{
  g_return_if_fail (config != NULL);

  config->log_type = PERFMON_JANK_LOG_TYPE_DEFAULT;
  config->sample_interval_ms = PERFMON_JANK_SAMPLE_INTERVAL_DEFAULT;
  config->ignore_startup_time_s = PERFMON_JANK_IGNORE_STARTUP_DEFAULT;
  config->sample_count = PERFMON_JANK_SAMPLE_COUNT_DEFAULT;
  config->report_times_per_app = PERFMON_JANK_REPORT_TIMES_DEFAULT;
  config->report_times_set = FALSE;
}

guint
_perfmon_jank_config_max_sample_count (guint sample_interval_ms)
{
  guint intervals;

  if (sample_interval_ms == 0)
    return 0;

  intervals = PERFMON_JANK_REPORT_BUDGET_MS / sample_interval_ms;
  if (intervals <= PERFMON_JANK_REPORT_BUDGET_INTERVALS)
    return 0;
  return intervals - PERFMON_JANK_REPORT_BUDGET_INTERVALS;
}

/* Parses @text, decimal digits and nothing else, into @value. FALSE if it
 * is empty, holds anything else, or exceeds G_MAXUINT. */
static gboolean
parse_decimal (const char *text,
               guint      *value)
{
  guint64 result = 0;
  const char *p;

  if (text == NULL || *text == '\0')
    return FALSE;

  for (p = text; *p != '\0'; p++)
    {
      if (!g_ascii_isdigit (*p))
        return FALSE;
      result = result * 10 + (guint64) (*p - '0');
      /* Stop before guint64 could wrap on a long string of digits. */
      if (result > G_MAXUINT)
        return FALSE;
    }

  *value = (guint) result;
  return TRUE;
}

/* Reads the parameter @name of @params into @value, which must lie in
 * [@min, @max]. @range_suffix follows the range in messages (a unit, or
 * what the range depends on). The caller has checked that it is present. */
static gboolean
get_param (GHashTable  *params,
           const char  *name,
           guint        min,
           guint        max,
           const char  *range_suffix,
           guint       *value,
           GError     **error)
{
  const char *text = g_hash_table_lookup (params, name);
  guint parsed;

  if (!parse_decimal (text, &parsed))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "%s: must be a decimal integer in [%u, %u]%s, got “%.*s”",
                   name, min, max, range_suffix,
                   text != NULL ? (int) _perfmon_utf8_cut (text, strlen (text), QUOTED_PREFIX_BYTES) : 0,
                   text != NULL ? text : "");
      return FALSE;
    }

  if (parsed < min || parsed > max)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "%s: must be in [%u, %u]%s, got %u",
                   name, min, max, range_suffix, parsed);
      return FALSE;
    }

  *value = parsed;
  return TRUE;
}

/* The allowed values of the custom parameter @name, for messages. */
static char *
describe_custom_range (const char *name,
                       GHashTable *params)
{
  if (g_str_equal (name, "sample_interval"))
    return g_strdup_printf ("[%u, %u] ms", PERFMON_JANK_SAMPLE_INTERVAL_MIN,
                            PERFMON_JANK_SAMPLE_INTERVAL_MAX);
  if (g_str_equal (name, "ignore_startup_time"))
    return g_strdup_printf ("[%u, %u] s", PERFMON_JANK_IGNORE_STARTUP_MIN,
                            PERFMON_JANK_IGNORE_STARTUP_MAX);
  if (g_str_equal (name, "sample_count"))
    {
      guint interval;

      /* The range depends on sample_interval: give it computed when that
       * is valid, as the formula otherwise. */
      if (parse_decimal (g_hash_table_lookup (params, "sample_interval"), &interval) &&
          interval >= PERFMON_JANK_SAMPLE_INTERVAL_MIN &&
          interval <= PERFMON_JANK_SAMPLE_INTERVAL_MAX)
        return g_strdup_printf ("[%u, %u] for sample_interval %u",
                                PERFMON_JANK_SAMPLE_COUNT_MIN,
                                _perfmon_jank_config_max_sample_count (interval),
                                interval);
      return g_strdup_printf ("[%u, %u / sample_interval - %u]",
                              PERFMON_JANK_SAMPLE_COUNT_MIN,
                              PERFMON_JANK_REPORT_BUDGET_MS,
                              PERFMON_JANK_REPORT_BUDGET_INTERVALS);
    }
  g_assert (g_str_equal (name, "report_times_per_app"));
  return g_strdup_printf ("[%u, %u]", PERFMON_JANK_REPORT_TIMES_MIN,
                          PERFMON_JANK_REPORT_TIMES_MAX);
}

static int
compare_strings (const void *a,
                 const void *b)
{
  return strcmp (*(const char * const *) a, *(const char * const *) b);
}

static gboolean
is_known_param (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (known_params); i++)
    if (g_str_equal (name, known_params[i]))
      return TRUE;
  return FALSE;
}

/* Fails naming the first (in byte order, so the message does not depend
 * on the hash table's order) parameter of @params that MAIN_THREAD_JANK
 * does not have. */
static gboolean
check_known_params (GHashTable  *params,
                    GError     **error)
{
  g_autofree const char **names = NULL;
  guint n_names = 0;

  names = (const char **) g_hash_table_get_keys_as_array (params, &n_names);
  qsort (names, n_names, sizeof (char *), compare_strings);

  for (guint i = 0; i < n_names; i++)
    {
      if (!is_known_param (names[i]))
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                       "unknown parameter “%s” of %s: the parameters are "
                       "log_type, sample_interval, ignore_startup_time, "
                       "sample_count and report_times_per_app",
                       names[i], PERFMON_JANK_EVENT_NAME);
          return FALSE;
        }
    }

  return TRUE;
}

/* log_type 1: every custom parameter is required. Names each missing one
 * with its range. */
static gboolean
check_required_params (GHashTable  *params,
                       GError     **error)
{
  g_autoptr(GString) missing = NULL;

  for (gsize i = 0; i < G_N_ELEMENTS (custom_params); i++)
    {
      g_autofree char *range = NULL;

      if (g_hash_table_contains (params, custom_params[i]))
        continue;

      range = describe_custom_range (custom_params[i], params);
      if (missing == NULL)
        missing = g_string_new (NULL);
      else
        g_string_append (missing, ", ");
      g_string_append_printf (missing, "%s (in %s)", custom_params[i], range);
    }

  if (missing == NULL)
    return TRUE;

  g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
               "log_type 1 requires every custom parameter, missing: %s",
               missing->str);
  return FALSE;
}

gboolean
_perfmon_jank_config_apply (PerfmonJankConfig  *config,
                            const char         *event_name,
                            GHashTable         *params,
                            GError            **error)
{
  g_autoptr(GHashTable) empty = NULL;
  PerfmonJankConfig next;
  const char *log_type_text;
  guint log_type;

  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (g_strcmp0 (event_name, PERFMON_JANK_EVENT_NAME) != 0)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_UNKNOWN_EVENT,
                   "unknown event “%s”: the only configurable event is %s",
                   event_name != NULL ? event_name : "(null)",
                   PERFMON_JANK_EVENT_NAME);
      return FALSE;
    }

  if (params == NULL)
    params = empty = g_hash_table_new (g_str_hash, g_str_equal);

  if (!check_known_params (params, error))
    return FALSE;

  log_type_text = g_hash_table_lookup (params, "log_type");
  if (!parse_decimal (log_type_text, &log_type) ||
      log_type > PERFMON_JANK_LOG_TYPE_TRACE)
    {
      if (log_type_text == NULL)
        g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                     "log_type: required, must be 0, 1 or 2");
      else
        g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                     "log_type: must be 0, 1 or 2, got “%.*s”",
                     (int) _perfmon_utf8_cut (log_type_text, strlen (log_type_text), QUOTED_PREFIX_BYTES),
                     log_type_text);
      return FALSE;
    }

  next = *config;
  next.log_type = log_type;

  if (log_type != PERFMON_JANK_LOG_TYPE_STACK)
    {
      for (gsize i = 0; i < G_N_ELEMENTS (custom_params); i++)
        {
          if (g_hash_table_contains (params, custom_params[i]))
            {
              g_autofree char *range = describe_custom_range (custom_params[i], params);

              g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "%s: only valid with log_type 1 (in %s), "
                           "log_type is %u",
                           custom_params[i], range, log_type);
              return FALSE;
            }
        }

      next.sample_interval_ms = PERFMON_JANK_SAMPLE_INTERVAL_DEFAULT;
      next.ignore_startup_time_s = PERFMON_JANK_IGNORE_STARTUP_DEFAULT;
      next.sample_count = PERFMON_JANK_SAMPLE_COUNT_DEFAULT;
    }
  else
    {
      g_autofree char *for_interval = NULL;
      guint report_times;

      if (!check_required_params (params, error))
        return FALSE;

      if (!get_param (params, "sample_interval",
                      PERFMON_JANK_SAMPLE_INTERVAL_MIN,
                      PERFMON_JANK_SAMPLE_INTERVAL_MAX, " ms",
                      &next.sample_interval_ms, error) ||
          !get_param (params, "ignore_startup_time",
                      PERFMON_JANK_IGNORE_STARTUP_MIN,
                      PERFMON_JANK_IGNORE_STARTUP_MAX, " s",
                      &next.ignore_startup_time_s, error))
        return FALSE;

      for_interval = g_strdup_printf (" for sample_interval %u",
                                      next.sample_interval_ms);
      if (!get_param (params, "sample_count", PERFMON_JANK_SAMPLE_COUNT_MIN,
                      _perfmon_jank_config_max_sample_count (next.sample_interval_ms),
                      for_interval, &next.sample_count, error) ||
          !get_param (params, "report_times_per_app",
                      PERFMON_JANK_REPORT_TIMES_MIN,
                      PERFMON_JANK_REPORT_TIMES_MAX, "",
                      &report_times, error))
        return FALSE;

      if (config->report_times_set && report_times != config->report_times_per_app)
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                       "report_times_per_app: can be set only once per process, "
                       "it is %u (in [%u, %u]), got %u",
                       config->report_times_per_app,
                       PERFMON_JANK_REPORT_TIMES_MIN,
                       PERFMON_JANK_REPORT_TIMES_MAX, report_times);
          return FALSE;
        }

      next.report_times_per_app = report_times;
      next.report_times_set = TRUE;
    }

  *config = next;
  return TRUE;
}
