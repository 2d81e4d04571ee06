/* perfmond-log.h: perfmond's events in the journal, with fixed MESSAGE_IDs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The MESSAGE_IDs and fields are the library's
 * (src/support/perfmon-log-event.h); doc/perfmond.md lists them.
 */
#pragma once

#include <glib.h>

#include "perfmon-log-event.h"

G_BEGIN_DECLS

/* The ids, shared with the library's hang monitor (one room:
 * src/support/perfmon-log-event.h). */
#define PERFMOND_MESSAGE_ID_HANG        PERFMON_MESSAGE_ID_HANG
#define PERFMOND_MESSAGE_ID_REJECTED    PERFMON_MESSAGE_ID_REJECTED
#define PERFMOND_MESSAGE_ID_THROTTLED   PERFMON_MESSAGE_ID_THROTTLED
#define PERFMOND_MESSAGE_ID_REFUSED     PERFMON_MESSAGE_ID_REFUSED

/* Logs @format in perfmond's domain at @level with @message_id and
 * PERFMON_PID=@pid; PERFMON_RUNNABLE if @runnable is not NULL and
 * PERFMON_DURATION_MS if @duration_ms >= 0. */
void     perfmond_log_event          (GLogLevelFlags  level,
                                      const char     *message_id,
                                      guint           pid,
                                      const char     *runnable,
                                      double          duration_ms,
                                      const char     *format,
                                      ...) G_GNUC_PRINTF (6, 7);

/* perfmond's writer: as GLib's default, except that events with a
 * MESSAGE_ID go to the journal (when standard error is the journal)
 * whatever their level, so that every hang is found there. */
GLogWriterOutput perfmond_log_writer (GLogLevelFlags   level,
                                      const GLogField *fields,
                                      gsize            n_fields,
                                      gpointer         data);

G_END_DECLS
