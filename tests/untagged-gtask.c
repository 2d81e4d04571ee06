/* untagged-gtask.c: a GLib program that knows nothing of perfmon and runs
 * a GTask in GLib's thread pool without a source tag, for
 * test_cli_names_after_exit.py
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The task's only name is its thread function, a static one here: the
 * pool's own function is a static function of libgio
 * ("libgio-2.0.so.0+0x…", which Debian's libgio without its debug symbols
 * cannot name). Exits 0.
 */
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

static gboolean
start (gpointer data)
{
  g_autoptr(GTask) task = g_task_new (NULL, NULL, completed, data);

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
