/* perfmon-preload-trace.c: "perfmon run --trace FILE": the task log of a
 * whole run
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * With PERFMON_RUN_TRACE set to an absolute FILE, each process of the run
 * (children inherit the preload module) records its tasks from its
 * constructor on, with perfmon_tracer_start(), and writes them to FILE
 * (the command, the direct child of perfmon run) or FILE.PID (any other
 * process of the run): one task log per process, which `perfmon tasks`
 * joins (D-Bus messages between them link their tasks).
 *
 * Writing is never done by the program's threads: a perfmon thread,
 * "perfmon-trace", writes the file again, atomically, every
 * TRACE_INTERVAL_US while the process records, so that a process killed by
 * a signal leaves a log at most that old; at exit the main thread asks it
 * for the last write (perfmon_tracer_stop()) and waits for it, as the
 * process ends. The command's log is written once at its start too, so
 * that it exists whatever happens (dash ends with _exit(), which runs no
 * exit handler). A process that leaves no summary either (a command of a
 * shell script that ran no main loop) leaves no task log at exit.
 *
 * Each thread records into a buffer of TRACE_BUFFER_SIZE (memory touched
 * as records arrive): a thread that runs more tasks than fit (about
 * 300,000 tasks, or 400,000 automatic ones) drops the later records, and
 * the file's header counts them.
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon.h"
#include "perfmon-preload-private.h"

#define TRACE_INTERVAL_US G_USEC_PER_SEC
#define TRACE_BUFFER_SIZE (32 * 1024 * 1024)

static struct
{
  char    *path;
  GThread *thread;
  GMutex   lock;
  GCond    cond;
  gboolean stopping;
} trace;

static void
trace_message (const char *path,
               GError     *error)
{
  g_printerr ("perfmon: no task log %s: %s\n", path, error->message);
}

static gpointer
trace_thread (gpointer data)
{
  gboolean is_command = GPOINTER_TO_INT (data);
  /* The command's log exists from its start, even if it ends by _exit()
   * (as dash does) before the first interval. */
  gint64 next_us = is_command ? 0 : g_get_monotonic_time () + TRACE_INTERVAL_US;
  gboolean warned = FALSE;

  g_mutex_lock (&trace.lock);
  while (!trace.stopping)
    {
      g_autoptr(GError) error = NULL;

      if (g_cond_wait_until (&trace.cond, &trace.lock, next_us) || trace.stopping)
        continue;
      next_us = g_get_monotonic_time () + TRACE_INTERVAL_US;
      g_mutex_unlock (&trace.lock);
      if (!perfmon_tracer_dump (trace.path, &error) && !warned)
        {
          trace_message (trace.path, error);
          warned = TRUE;
        }
      g_mutex_lock (&trace.lock);
    }
  g_mutex_unlock (&trace.lock);

  /* The last write: at exit, which waits for it. */
  {
    g_autoptr(GError) error = NULL;

    if (!perfmon_tracer_stop (&error))
      trace_message (trace.path, error);
  }
  return NULL;
}

void
_perfmon_preload_trace_start (gboolean is_command)
{
  const char *file = g_getenv ("PERFMON_RUN_TRACE");
  g_autoptr(GError) error = NULL;

  if (file == NULL || !g_path_is_absolute (file))
    return;
  trace.path = is_command ? g_strdup (file) : g_strdup_printf ("%s.%d", file, (int) getpid ());
  if (!perfmon_tracer_set_buffer_size (TRACE_BUFFER_SIZE, &error) ||
      !perfmon_tracer_start (trace.path, &error))
    {
      trace_message (trace.path, error);
      g_clear_pointer (&trace.path, g_free);
      return;
    }
  g_mutex_init (&trace.lock);
  g_cond_init (&trace.cond);
  trace.thread = g_thread_new ("perfmon-trace", trace_thread, GINT_TO_POINTER (is_command));
}

void
_perfmon_preload_trace_stop (gboolean keep)
{
  if (trace.path == NULL)
    return;
  g_mutex_lock (&trace.lock);
  trace.stopping = TRUE;
  g_cond_signal (&trace.cond);
  g_mutex_unlock (&trace.lock);
  g_thread_join (g_steal_pointer (&trace.thread));
  if (!keep)
    (void) g_unlink (trace.path);
  g_clear_pointer (&trace.path, g_free);
}
