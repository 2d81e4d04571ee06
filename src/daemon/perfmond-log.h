/* perfmond-log.h: perfmond's events in the journal, with fixed MESSAGE_IDs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each kind of event has a fixed 128-bit MESSAGE_ID (never change one:
 * people search the journal with it, e.g.
 * `journalctl --user MESSAGE_ID=7d63bc06d0624852854174148686ce46` for
 * every hang), and the fields PERFMON_PID, and for hangs PERFMON_RUNNABLE
 * and PERFMON_DURATION_MS. doc/perfmond.md lists them.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A monitored process hung (debug level on standard error; always in the
 * journal). */
#define PERFMOND_MESSAGE_ID_HANG        "7d63bc06d0624852854174148686ce46"
/* A process sent something perfmond refused (a malformed snapshot or
 * report). */
#define PERFMOND_MESSAGE_ID_REJECTED    "a11ab5c32d844a3bbac553750433add5"
/* A process sent signals faster than --max-signals: dropped. */
#define PERFMOND_MESSAGE_ID_THROTTLED   "2863498529a747e290931552a5062f58"
/* A process could not register: --max-processes reached. */
#define PERFMOND_MESSAGE_ID_REFUSED     "48be9f4d28a94b7ab1cb69148ca545b9"

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
