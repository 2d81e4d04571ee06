/* untagged-gtask.c: a GLib program that knows nothing of perfmon and runs
 * a GTask in GLib's thread pool without a source tag, for
 * test_cli_names_after_exit.py
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The task's only name is its thread function, a static one here: the
 * pool's own function is a static function of libgio
 * ("libgio-2.0.so.0+0x…", which Debian's libgio without its debug symbols
 * cannot name). Exits 0. Built without -rdynamic: its static functions are
 * "untagged-gtask+0x…" to the program.
 */
#include <time.h>

#include <gio/gio.h>

static void
untagged_worker (GTask        *task,
                 gpointer      source_object,
                 gpointer      task_data,
                 GCancellable *cancellable)
{
  g_usleep (20 * 1000);
  g_task_return_boolean (task, TRUE);
}

static void
completed (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  g_assert_true (g_task_propagate_boolean (G_TASK (result), NULL));
  g_main_loop_quit (data);
}

/* Uses 5 ms of CPU first: perfmon run's summary lists it among the
 * busiest groups, by its module and offset, after the program has ended. */
static gboolean
start (gpointer data)
{
  g_autoptr(GTask) task = g_task_new (NULL, NULL, completed, data);
  struct timespec start, now;

  /* CPU time, not wall time: a busy machine cannot make it shorter. */
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &start);
  do
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
  while ((now.tv_sec - start.tv_sec) * G_GINT64_CONSTANT (1000000000) + (now.tv_nsec - start.tv_nsec) <
         5 * 1000 * 1000);

  g_task_run_in_thread (task, untagged_worker);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  g_timeout_add (50, start, loop);
  g_main_loop_run (loop);
  return 0;
}
