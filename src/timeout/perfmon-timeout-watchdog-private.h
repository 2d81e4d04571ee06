/* perfmon-timeout-watchdog-private.h: the watchdog thread of timers and thread watches
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* One watchdog thread per process serves the task timers and the thread
 * watches. It starts on first use and never stops. It sleeps until the
 * nearest deadline of either, with no deadline at all when there is
 * none, and runs what is due without holding the lock:
 * _perfmon_timer_run_due() and _perfmon_thread_watcher_run_due().
 *
 * The lock guards the timers, the registered threads and the watchdog's
 * own sleep; hold it only for bookkeeping, never across a stack capture,
 * a file write or a user callback. */
void     _perfmon_timeout_lock                     (void);
void     _perfmon_timeout_unlock                   (void);

/* With the lock held: something is due at @deadline_us (monotonic µs).
 * Starts the watchdog if needed, and wakes it only if it sleeps past
 * @deadline_us (one futex wake) or is awake (then it looks again before
 * it sleeps: no system call). */
void     _perfmon_timeout_schedule_locked          (gint64 deadline_us);

/* TRUE on the watchdog thread. */
gboolean _perfmon_timeout_is_watchdog_thread       (void);
/* For tests: the watchdog's rounds so far (wake-ups that ran the checks). */
guint64  _perfmon_timeout_count_rounds             (void);

/* Called by the watchdog, without the lock: run what is due at @now_us
 * and return the next deadline, G_MAXINT64 for none. */
gint64   _perfmon_timer_run_due                    (gint64 now_us);
gint64   _perfmon_thread_watcher_run_due           (gint64 now_us);

/* For tests: the threads registered with any thread watcher. */
guint    _perfmon_thread_watcher_count_registrations (void);

/* --- what timers and thread watches share ------------------------------ */

/* Log files: "TASK_TIMEOUT_<YYYYmmddHHMMSS>_<pid>_<n>.txt" for timers,
 * "THREAD_STUCK_..." for stuck threads, in the same directory as the
 * hang monitor's jank logs by default. */
#define PERFMON_TIMEOUT_LOG_PREFIX       "TASK_TIMEOUT_"
#define PERFMON_THREAD_STUCK_LOG_PREFIX  "THREAD_STUCK_"

/* The calling thread's kernel id; a system call the first time on each
 * thread only. */
gint64   _perfmon_timeout_current_tid              (void);

/* The current log directory (see perfmon_timeout_set_log_dir()). */
char    *_perfmon_timeout_dup_log_dir              (void);

/* "<name> (tid <tid>)" of another thread of this process, from /proc; the
 * bare id if it has exited. */
char    *_perfmon_timeout_describe_thread          (gint64 tid);

/* Not on thread @tid: captures its native stack and formats it as the
 * seed does ("1 #00 pc <offset> <path>(<symbol>+<offset>)(<build id>)",
 * outermost first). On failure returns NULL with the reason (whether the
 * thread exited, or what its kernel wait channel was). */
char    *_perfmon_timeout_capture_stack_text       (gint64      tid,
                                                    GError    **error);

/* Writes @contents as a new log "<prefix><time>_<pid>_<n>.txt" in @dir,
 * first ageing perfmon's logs there down to the default 10 MiB limit, and
 * returns its path, or NULL with a warning already logged. */
char    *_perfmon_timeout_write_log                (const char *dir,
                                                    const char *prefix,
                                                    const char *contents);

G_END_DECLS
