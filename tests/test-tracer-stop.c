/* test-tracer-stop.c: perfmon_tracer_stop() on a watched thread names no
 * callback there
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A watched thread does only what cannot be done elsewhere: no
 * symbolization. perfmon_tracer_stop() is called where the application
 * likes, often on its main thread, which a hang monitor watches. The task
 * log it writes names a static callback (which dladdr() cannot name) by
 * its module and offset, with the module's MODULE record (path, build id),
 * and the reader names it with the same symbolizer as stacks, as `perfmon
 * tasks` and `perfmon symbolize` do (issue 23, point 10: "never in the
 * program"). The proof that nothing is symbolized on the calling thread is
 * the symbolizer's count of the thread's lookups, not a timing.
 *
 * Built without -rdynamic: the callback has no dynamic symbol.
 */
#include "config.h"

#include <string.h>

#include "perfmon.h"
#include "perfmon-symbolizer-private.h"
#include "perfmon-test-dirs.h"

static gboolean
stop_test_static_callback (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static void
test_stop_symbolizes_nothing (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(PerfmonHangMonitor) hang_monitor = perfmon_hang_monitor_new (perfmon_monitor_get_default ());
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(PerfmonSymbolizer) symbolizer = NULL;
  g_autofree char *dir = test_make_tmp_dir ("perfmon-tracer-stop-XXXXXX");
  g_autofree char *path = g_build_filename (dir, "tasks.log", NULL);
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);
  g_autofree char *function = NULL;
  PerfmonTask *task = NULL;
  GPtrArray *tasks;
  const char *module_path = NULL;
  const char *build_id = NULL;
  const char *name;
  guint64 function_offset = 1;
  guint64 offset;
  guint lookups;

  /* The main thread is watched: a hang monitor on the default context. */
  g_object_set (hang_monitor, "pings-dir", pings, "log-dir", dir, NULL);
  g_assert_true (perfmon_hang_monitor_start (hang_monitor, &error));
  g_assert_no_error (error);

  g_assert_true (perfmon_tracer_start (path, &error));
  g_assert_no_error (error);
  perfmon_idle_add (stop_test_static_callback, loop);
  g_main_loop_run (loop);

  lookups = _perfmon_symbolizer_get_thread_lookups ();
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);
  g_assert_cmpuint (_perfmon_symbolizer_get_thread_lookups (), ==, lookups);
  perfmon_hang_monitor_stop (hang_monitor);

  /* The log names the task "test-tracer-stop+0x…"... */
  log = perfmon_task_log_new_from_file (path, &error);
  g_assert_no_error (error);
  tasks = perfmon_task_log_get_tasks (log);
  for (guint i = 0; i < tasks->len && task == NULL; i++)
    if (g_str_has_prefix (perfmon_task_get_name (g_ptr_array_index (tasks, i)), "test-tracer-stop+0x"))
      task = g_ptr_array_index (tasks, i);
  g_assert_nonnull (task);
  name = perfmon_task_get_name (task);
  offset = g_ascii_strtoull (name + strlen ("test-tracer-stop+0x"), NULL, 16);
  g_assert_cmpuint (offset, >, 0);

  /* ... and says which file that is, so that the reader names it. */
  g_assert_true (perfmon_task_log_lookup_module (log, perfmon_task_get_process (task), "test-tracer-stop",
                                                 &module_path, NULL, &build_id));
  g_assert_nonnull (module_path);
  g_assert_true (g_str_has_suffix (module_path, "/test-tracer-stop"));
  g_assert_nonnull (build_id);
  g_assert_cmpstr (build_id, !=, "");
  symbolizer = perfmon_symbolizer_new ();
  function = perfmon_symbolizer_lookup (symbolizer, module_path, build_id, offset, FALSE, &function_offset);
  g_assert_cmpstr (function, ==, "stop_test_static_callback");
  g_assert_cmpuint (function_offset, ==, 0);

  test_remove_tree (dir);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/tracer/stop/symbolizes-nothing", test_stop_symbolizes_nothing);
  return g_test_run ();
}
