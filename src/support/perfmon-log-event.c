/* perfmon-log-event.c: perfmon's events in the journal, with fixed
 * MESSAGE_IDs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "perfmon-log-event.h"

void
_perfmon_log_event_valist (const char     *domain,
                           GLogLevelFlags  level,
                           const char     *message_id,
                           guint           pid,
                           const char     *runnable,
                           double          duration_ms,
                           const char     *format,
                           va_list         args)
{
  g_autofree char *message = g_strdup_vprintf (format, args);
  char pid_text[16];
  char duration_text[32];
  GLogField fields[7];
  gsize n = 0;

  g_snprintf (pid_text, sizeof pid_text, "%u", pid);
  g_snprintf (duration_text, sizeof duration_text, "%.0f", duration_ms);

  fields[n++] = (GLogField) { "GLIB_DOMAIN", domain, -1 };
  fields[n++] = (GLogField) { "MESSAGE_ID", message_id, -1 };
  fields[n++] = (GLogField) { "PERFMON_PID", pid_text, -1 };
  if (runnable != NULL)
    fields[n++] = (GLogField) { "PERFMON_RUNNABLE", runnable, -1 };
  if (duration_ms >= 0)
    fields[n++] = (GLogField) { "PERFMON_DURATION_MS", duration_text, -1 };
  fields[n++] = (GLogField) { "MESSAGE", message, -1 };
  g_log_structured_array (level, fields, n);
}

void
_perfmon_log_event (const char     *domain,
                    GLogLevelFlags  level,
                    const char     *message_id,
                    guint           pid,
                    const char     *runnable,
                    double          duration_ms,
                    const char     *format,
                    ...)
{
  va_list args;

  va_start (args, format);
  _perfmon_log_event_valist (domain, level, message_id, pid, runnable, duration_ms, format, args);
  va_end (args);
}
