/* hang-in-static.c: a program whose main loop hangs in a static function.
 *
 * test_symbolizer.py builds it with -g, strips it, moves its debug
 * information into a private .build-id tree and checks that the hang
 * report names hang_in_static_function, which no dynamic symbol table has.
 * Prints the report's stack, one frame a line, outermost first; with
 * --json FILE also writes the report's JSON there, and with --pings-dir
 * DIR leaves its ping in DIR.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <perfmon.h>

static GMainLoop *loop;
static const char *json_path;

G_GNUC_NO_INLINE static void
hang_in_static_function (void)
{
  gint64 end = g_get_monotonic_time () + 600 * 1000;
  static volatile guint64 spins;

  /* Busy, so that the innermost frames are this function's. */
  while (g_get_monotonic_time () < end)
    spins++;
}

static gboolean
on_idle (gpointer data)
{
  hang_in_static_function ();
  return G_SOURCE_REMOVE;
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         gpointer            data)
{
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);

  for (guint i = 0; stack[i] != NULL; i++)
    g_print ("%s\n", stack[i]);
  if (json_path != NULL)
    {
      g_autofree char *json = perfmon_hang_report_to_json (report);

      g_file_set_contents (json_path, json, -1, NULL);
    }
  g_main_loop_quit (loop);
}

int
main (int    argc,
      char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  g_autofree char *pings = NULL;
  const char *pings_dir = NULL;

  for (int i = 1; i + 1 < argc; i += 2)
    if (g_str_equal (argv[i], "--json"))
      json_path = argv[i + 1];
    else if (g_str_equal (argv[i], "--pings-dir"))
      pings_dir = argv[i + 1];
  pings = pings_dir != NULL ? g_strdup (pings_dir) : g_dir_make_tmp ("hang-in-static-XXXXXX", NULL);

  loop = g_main_loop_new (NULL, FALSE);
  hang_monitor = perfmon_hang_monitor_new (perfmon_monitor_get_default ());
  g_object_set (hang_monitor, "threshold", 128, "pings-dir", pings, NULL);
  g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang), NULL);
  if (!perfmon_hang_monitor_start (hang_monitor, &error))
    {
      g_printerr ("hang-in-static: %s\n", error->message);
      return 1;
    }
  g_timeout_add (50, on_idle, NULL);
  g_main_loop_run (loop);
  perfmon_hang_monitor_stop (hang_monitor);
  g_main_loop_unref (loop);
  return 0;
}
