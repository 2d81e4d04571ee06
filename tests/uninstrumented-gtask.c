/* uninstrumented-gtask.c: a GLib program that knows nothing of perfmon,
 * for the causality tests of "perfmon run"
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * After the jank detector's start-up time (11 s: it ignores the first 10),
 * a timeout blocks the loop 1200 ms, a jank over 450 ms: perfmon starts a
 * trace's capture when it detects it (at 450 ms) and keeps it 3 s. In
 * those 3 s, the timeout adds an idle (gtask_starter), which runs a GTask
 * in GLib's thread pool (gtask_worker), whose completion callback
 * (gtask_completed) runs on the main thread. LINGER_S seconds later the
 * program exits 0. The three functions are exported (-rdynamic) so that
 * the trace names them.
 */
#include <gio/gio.h>

#define START_S  11
#define STALL_MS 1200   /* the trace capture confirms a jank at checks 150 ms apart from 450 ms on */
#define LINGER_S 5   /* the jank trace is written at the end of its 3 s capture */

gboolean gtask_starter   (gpointer data);
void     gtask_worker    (GTask        *task,
                          gpointer      source_object,
                          gpointer      task_data,
                          GCancellable *cancellable);
void     gtask_completed (GObject      *source,
                          GAsyncResult *result,
                          gpointer      data);

static gboolean
quit (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

void
gtask_completed (GObject      *source,
                 GAsyncResult *result,
                 gpointer      data)
{
  g_assert_true (g_task_propagate_boolean (G_TASK (result), NULL));
  g_timeout_add_seconds (LINGER_S, quit, data);
}

void
gtask_worker (GTask        *task,
              gpointer      source_object,
              gpointer      task_data,
              GCancellable *cancellable)
{
  g_task_return_boolean (task, TRUE);
}

gboolean
gtask_starter (gpointer data)
{
  g_autoptr(GTask) task = g_task_new (NULL, NULL, gtask_completed, data);

  g_task_set_source_tag (task, gtask_worker);
  g_task_run_in_thread (task, gtask_worker);
  return G_SOURCE_REMOVE;
}

static gboolean
after_start_up (gpointer data)
{
  g_usleep (STALL_MS * 1000);
  g_idle_add (gtask_starter, data);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  g_timeout_add_seconds (START_S, after_start_up, loop);
  g_main_loop_run (loop);
  g_print ("uninstrumented-gtask: done\n");
  return 0;
}
