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
  va_list args;

  va_start (args, format);
  _perfmon_log_event_valist (G_LOG_DOMAIN, level, message_id, pid, runnable, duration_ms, format, args);
  va_end (args);
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
