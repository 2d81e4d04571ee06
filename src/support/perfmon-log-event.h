/* perfmon-log-event.h: perfmon's events in the journal, with fixed
 * MESSAGE_IDs, for the library (hang monitor) and perfmond alike
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each kind of event has a fixed 128-bit MESSAGE_ID (never change one:
 * people search the journal with it, e.g.
 * `journalctl --user MESSAGE_ID=7d63bc06d0624852854174148686ce46` for
 * every hang), and the fields PERFMON_PID (the process the event is
 * about), and for hangs PERFMON_RUNNABLE and PERFMON_DURATION_MS.
 * doc/perfmond.md lists them.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A process hung: logged by its own hang monitor (from the watchdog
 * thread, when the hang ended) and, for a process registered with it, by
 * perfmond when the report arrives. */
#define PERFMON_MESSAGE_ID_HANG        "7d63bc06d0624852854174148686ce46"
/* A process has hung for its permahang threshold and still does: logged
 * by its own hang monitor while the hang goes on (its end, if it ends, is
 * a HANG). */
#define PERFMON_MESSAGE_ID_PERMAHANG   "03693b67961e4c46942ec9022f7bfe1f"
/* perfmond: a process sent something perfmond refused (a malformed
 * snapshot or report). */
#define PERFMON_MESSAGE_ID_REJECTED    "a11ab5c32d844a3bbac553750433add5"
/* perfmond: a process sent signals faster than --max-signals: dropped. */
#define PERFMON_MESSAGE_ID_THROTTLED   "2863498529a747e290931552a5062f58"
/* perfmond: a process could not register: --max-processes reached. */
#define PERFMON_MESSAGE_ID_REFUSED     "48be9f4d28a94b7ab1cb69148ca545b9"

/* Logs @format in @domain at @level, through g_log_structured_array()
 * (so through the process's writer function), with @message_id and
 * PERFMON_PID=@pid; PERFMON_RUNNABLE if @runnable is not NULL and
 * PERFMON_DURATION_MS if @duration_ms >= 0. The writer may block (a
 * journald socket, a full pipe): never call this on a watched thread. */
void _perfmon_log_event        (const char     *domain,
                                GLogLevelFlags  level,
                                const char     *message_id,
                                guint           pid,
                                const char     *runnable,
                                double          duration_ms,
                                const char     *format,
                                ...) G_GNUC_PRINTF (7, 8);
void _perfmon_log_event_valist (const char     *domain,
                                GLogLevelFlags  level,
                                const char     *message_id,
                                guint           pid,
                                const char     *runnable,
                                double          duration_ms,
                                const char     *format,
                                va_list         args) G_GNUC_PRINTF (7, 0);

G_END_DECLS
