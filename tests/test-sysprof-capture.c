/* test-sysprof-capture.c: `perfmon run --sysprof` read back with libsysprof-capture's reader
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Runs tests/uninstrumented-loop (quick timeouts, then an idle that blocks
 * the loop for 300 ms) under `perfmon run --sysprof FILE --summary JSON`,
 * reads FILE with sysprof_capture_reader_*, and checks it against the
 * summary: one "Hang" mark whose duration is the summary's hang's and
 * whose message names its runnable and stack; one "Dispatch" mark for the
 * 300 ms idle and none for the quick timeouts (under the 16 ms default);
 * for every group of the summary, a counter whose values add up to the
 * group's CPU time.
 */
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <sysprof-capture.h>

#include "perfmon-test-dirs.h"

#define BLOCK_MS 300

typedef struct
{
  guint64 id;
  double  total_ms;
} CounterSum;

static JsonObject *
only_process (JsonParser *parser)
{
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  JsonArray *processes = json_object_get_array_member (root, "processes");

  g_assert_cmpuint (json_array_get_length (processes), ==, 1);
  return json_array_get_object_element (processes, 0);
}

static void
test_run_sysprof (void)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-test-sysprof-XXXXXX");
  g_autofree char *capture = g_build_filename (dir, "run.syscap", NULL);
  g_autofree char *summary = g_build_filename (dir, "summary.json", NULL);
  g_autofree char *sysprof_option = g_strdup_printf ("--sysprof=%s", capture);
  g_autofree char *summary_option = g_strdup_printf ("--summary=%s", summary);
  g_autofree char *state = g_build_filename (dir, "state", NULL);
  /* The program's own output is not TAP, which this test's stdout is. */
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
  g_autoptr(GSubprocess) run = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GHashTable) counter_groups = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  SysprofCaptureReader *reader;
  SysprofCaptureFrameType type;
  JsonObject *process, *hang;
  JsonArray *groups;
  const char *runnable;
  double hang_ms;
  guint n_hang_marks = 0, n_dispatch_marks = 0;

  g_subprocess_launcher_setenv (launcher, "XDG_STATE_HOME", state, TRUE);
  g_subprocess_launcher_unsetenv (launcher, "SYSPROF_TRACE_FD");
  g_subprocess_launcher_unsetenv (launcher, "PERFMON_SYSPROF_DISPATCH_MS");
  run = g_subprocess_launcher_spawn (launcher, &error, g_getenv ("PERFMON_TOOL"), "run", "--no-export",
                                     "--no-state", "--threshold=100", sysprof_option, summary_option, "--",
                                     g_getenv ("PERFMON_UNINSTRUMENTED"), NULL);
  g_assert_no_error (error);
  g_subprocess_wait (run, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_subprocess_get_exit_status (run), ==, 3);   /* the command's */

  json_parser_load_from_file (parser, summary, &error);
  g_assert_no_error (error);
  process = only_process (parser);
  g_assert_cmpint (json_object_get_int_member (process, "hang_count"), ==, 1);
  hang = json_array_get_object_element (json_object_get_array_member (process, "hangs"), 0);
  hang_ms = json_object_get_double_member (hang, "duration");
  runnable = json_object_get_string_member (hang, "runnableName");
  groups = json_object_get_array_member (json_object_get_object_member (process, "snapshot"), "groups");

  reader = sysprof_capture_reader_new (capture);
  g_assert_nonnull (reader);
  while (sysprof_capture_reader_peek_type (reader, &type))
    {
      if (type == SYSPROF_CAPTURE_FRAME_MARK)
        {
          const SysprofCaptureMark *mark = sysprof_capture_reader_read_mark (reader);

          g_assert_nonnull (mark);
          g_assert_cmpstr (mark->group, ==, "perfmon");
          if (g_str_equal (mark->name, "Hang"))
            {
              n_hang_marks++;
              /* The summary's hang, to the nanosecond its report keeps. */
              g_assert_cmpfloat_with_epsilon ((double) mark->duration / 1e6, hang_ms, 0.001);
              g_assert_nonnull (strstr (mark->message, runnable));
              g_assert_nonnull (strstr (mark->message, "block_then_quit"));
            }
          else
            {
              g_assert_cmpstr (mark->name, ==, "Dispatch");
              n_dispatch_marks++;
              /* The idle that blocks, inside the hang's stretch. */
              g_assert_cmpstr (mark->message, ==, runnable);
              /* By the cycle counter, whose 2 ms calibration against the
               * monotonic clock is good to 0.1 % (a 300 ms block once came
               * out as 299.935 ms). */
              g_assert_cmpuint (mark->duration, >=, (guint64) BLOCK_MS * 1000000 / 1000 * 998);
              g_assert_cmpfloat ((double) mark->duration / 1e6, <=, hang_ms + 0.001);
            }
        }
      else if (type == SYSPROF_CAPTURE_FRAME_CTRDEF)
        {
          const SysprofCaptureCounterDefine *define = sysprof_capture_reader_read_counter_define (reader);

          g_assert_nonnull (define);
          for (guint i = 0; i < define->n_counters; i++)
            {
              CounterSum *sum = g_new0 (CounterSum, 1);

              g_assert_cmpstr (define->counters[i].category, ==, "perfmon");
              g_assert_true (g_str_has_prefix (define->counters[i].description, "CPU ms of group "));
              sum->id = g_ascii_strtoull (define->counters[i].description + strlen ("CPU ms of group "), NULL, 10);
              g_hash_table_insert (counter_groups, GUINT_TO_POINTER (define->counters[i].id), sum);
            }
        }
      else if (type == SYSPROF_CAPTURE_FRAME_CTRSET)
        {
          const SysprofCaptureCounterSet *set = sysprof_capture_reader_read_counter_set (reader);

          g_assert_nonnull (set);
          for (guint g = 0; g < set->n_values; g++)
            for (guint j = 0; j < G_N_ELEMENTS (set->values[g].ids); j++)
              if (set->values[g].ids[j] != 0)
                {
                  CounterSum *sum = g_hash_table_lookup (counter_groups, GUINT_TO_POINTER (set->values[g].ids[j]));

                  g_assert_nonnull (sum);
                  sum->total_ms += set->values[g].values[j].vdbl;
                }
        }
      else
        g_assert_true (sysprof_capture_reader_skip (reader));
    }
  sysprof_capture_reader_unref (reader);

  g_assert_cmpuint (n_hang_marks, ==, 1);
  g_assert_cmpuint (n_dispatch_marks, ==, 1);

  /* Every group of the summary has its counter, and the counter's values
   * add up to the group's CPU time. */
  g_assert_cmpuint (g_hash_table_size (counter_groups), ==, json_array_get_length (groups));
  for (guint i = 0; i < json_array_get_length (groups); i++)
    {
      JsonObject *group = json_array_get_object_element (groups, i);
      guint64 id = (guint64) json_object_get_int_member (group, "id");
      double cpu_ms = (double) json_object_get_int_member (group, "cpu_time") / 1000.0;
      GHashTableIter iter;
      CounterSum *sum = NULL, *candidate;

      g_hash_table_iter_init (&iter, counter_groups);
      while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &candidate))
        if (candidate->id == id)
          sum = candidate;
      g_assert_nonnull (sum);
      g_test_message ("group %" G_GUINT64_FORMAT " (%s): counters %.3f ms, summary %.3f ms", id,
                      json_object_get_string_member (group, "name"), sum->total_ms, cpu_ms);
      g_assert_cmpfloat_with_epsilon (sum->total_ms, cpu_ms, 0.0005);
    }

  test_remove_tree (dir);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (g_getenv ("PERFMON_TOOL") == NULL || g_getenv ("PERFMON_UNINSTRUMENTED") == NULL)
    {
      g_test_skip ("PERFMON_TOOL and PERFMON_UNINSTRUMENTED must name the programs (meson sets them)");
      return g_test_run ();
    }
  g_test_add_func ("/sysprof/run-capture", test_run_sysprof);
  return g_test_run ();
}
