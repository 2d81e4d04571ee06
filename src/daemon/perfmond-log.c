/* perfmond-log.c: perfmond's events in the journal, with fixed MESSAGE_IDs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdio.h>
#include <unistd.h>

#include "perfmond-log.h"

void
perfmond_log_event (GLogLevelFlags  level,
                    const char     *message_id,
                    guint           pid,
                    const char     *runnable,
                    double          duration_ms,
                    const char     *format,
                    ...)
{
  g_autofree char *message = NULL;
  char pid_text[16];
  char duration_text[32];
  GLogField fields[7];
  gsize n = 0;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_snprintf (pid_text, sizeof pid_text, "%u", pid);
  g_snprintf (duration_text, sizeof duration_text, "%.0f", duration_ms);

  fields[n++] = (GLogField) { "GLIB_DOMAIN", G_LOG_DOMAIN, -1 };
  fields[n++] = (GLogField) { "MESSAGE_ID", message_id, -1 };
  fields[n++] = (GLogField) { "PERFMON_PID", pid_text, -1 };
  if (runnable != NULL)
    fields[n++] = (GLogField) { "PERFMON_RUNNABLE", runnable, -1 };
  if (duration_ms >= 0)
    fields[n++] = (GLogField) { "PERFMON_DURATION_MS", duration_text, -1 };
  fields[n++] = (GLogField) { "MESSAGE", message, -1 };
  g_log_structured_array (level, fields, n);
}

static gboolean
has_message_id (const GLogField *fields,
                gsize            n_fields)
{
  for (gsize i = 0; i < n_fields; i++)
    if (g_strcmp0 (fields[i].key, "MESSAGE_ID") == 0)
      return TRUE;
  return FALSE;
}

GLogWriterOutput
perfmond_log_writer (GLogLevelFlags   level,
                     const GLogField *fields,
                     gsize            n_fields,
                     gpointer         data)
{
  if (has_message_id (fields, n_fields) && g_log_writer_is_journald (fileno (stderr)) &&
      g_log_writer_journald (level, fields, n_fields, data) == G_LOG_WRITER_HANDLED)
    return G_LOG_WRITER_HANDLED;
  return g_log_writer_default (level, fields, n_fields, data);
}
