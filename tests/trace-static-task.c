/* trace-static-task.c: a task log whose task runs a static function
 *
 * test_symbolizer.py checks that the log names it (the tracer asks the
 * symbolizer, which reads this program's .symtab: dladdr() cannot).
 * Writes the log to argv[1].
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <perfmon.h>

static gboolean
static_traced_callback (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

int
main (int    argc,
      char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  if (argc != 2 || !perfmon_tracer_start (argv[1], &error))
    {
      g_printerr ("usage: trace-static-task LOG (%s)\n", error != NULL ? error->message : "");
      return 2;
    }
  perfmon_idle_add (static_traced_callback, loop);
  g_main_loop_run (loop);
  if (!perfmon_tracer_stop (&error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  return 0;
}
