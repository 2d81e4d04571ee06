/* perfmon-tool-tasks.c: perfmon tasks dump | ancestors ID | followers ID | blockers ID | export OUT.json  LOG… [--json]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

static const char *
source_event_nick (PerfmonSourceEventType type)
{
  g_autoptr(GEnumClass) types = g_type_class_ref (PERFMON_TYPE_SOURCE_EVENT_TYPE);
  GEnumValue *value = g_enum_get_value (types, type);

  return value != NULL ? value->value_nick : "unknown";
}

/* One line per task, like the seed's dumplog.py: ids in hex, as the tracer
 * and the Chrome trace write them. */
static void
print_task (PerfmonTaskLog *log,
            PerfmonTask    *task,
            gboolean        with_labels)
{
  const char * const *labels = perfmon_task_get_labels (task);
  guint n_runs = perfmon_task_get_n_runs (task);
  g_autofree char *name = perfmon_tool_readable_task_name (log, task);

  g_print ("0x%-14" G_GINT64_MODIFIER "x parent 0x%-14" G_GINT64_MODIFIER "x %-7s %7u/%-7u %-24s",
           perfmon_task_get_id (task), perfmon_task_get_parent_id (task),
           source_event_nick (perfmon_task_get_source_event_type (task)),
           perfmon_task_get_process (task), perfmon_task_get_thread (task), name);
  if (n_runs == 0)
    g_print (" never ran\n");
  else
    g_print (" queued %6.3f ms, ran %6.3f ms%s\n",
             (double) perfmon_task_get_queueing_time (task) / 1000.0,
             (double) (perfmon_task_get_end_time (task) - perfmon_task_get_begin_time (task)) / 1000.0,
             n_runs > 1 ? " (first of several runs)" : "");
  for (guint i = 0; with_labels && labels[i] != NULL; i++)
    g_print ("    label: %s\n", labels[i]);
}

static void
add_task_json (JsonBuilder *builder,
               PerfmonTask *task)
{
  const char * const *labels = perfmon_task_get_labels (task);

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "id");
  json_builder_add_int_value (builder, (gint64) perfmon_task_get_id (task));
  json_builder_set_member_name (builder, "parent_id");
  json_builder_add_int_value (builder, (gint64) perfmon_task_get_parent_id (task));
  json_builder_set_member_name (builder, "source_event_id");
  json_builder_add_int_value (builder, (gint64) perfmon_task_get_source_event_id (task));
  json_builder_set_member_name (builder, "source_event_type");
  json_builder_add_string_value (builder, source_event_nick (perfmon_task_get_source_event_type (task)));
  json_builder_set_member_name (builder, "process");
  json_builder_add_int_value (builder, perfmon_task_get_process (task));
  json_builder_set_member_name (builder, "process_name");
  json_builder_add_string_value (builder, perfmon_task_get_process_name (task));
  json_builder_set_member_name (builder, "thread");
  json_builder_add_int_value (builder, perfmon_task_get_thread (task));
  json_builder_set_member_name (builder, "thread_name");
  json_builder_add_string_value (builder, perfmon_task_get_thread_name (task));
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, perfmon_task_get_name (task));
  json_builder_set_member_name (builder, "dispatch_time");
  json_builder_add_int_value (builder, perfmon_task_get_dispatch_time (task));
  json_builder_set_member_name (builder, "n_runs");
  json_builder_add_int_value (builder, perfmon_task_get_n_runs (task));
  if (perfmon_task_get_n_runs (task) > 0)
    {
      json_builder_set_member_name (builder, "begin_time");
      json_builder_add_int_value (builder, perfmon_task_get_begin_time (task));
      json_builder_set_member_name (builder, "end_time");
      json_builder_add_int_value (builder, perfmon_task_get_end_time (task));
      json_builder_set_member_name (builder, "queueing_time");
      json_builder_add_int_value (builder, perfmon_task_get_queueing_time (task));
    }
  json_builder_set_member_name (builder, "labels");
  json_builder_begin_array (builder);
  for (guint i = 0; labels[i] != NULL; i++)
    json_builder_add_string_value (builder, labels[i]);
  json_builder_end_array (builder);
  json_builder_end_object (builder);
}

static void
print_json (JsonBuilder *builder)
{
  g_autoptr(JsonNode) root = json_builder_get_root (builder);
  g_autofree char *text = json_to_string (root, TRUE);

  g_print ("%s\n", text);
}

static gboolean
parse_task_id (const char *text,
               guint64    *id)
{
  char *end = NULL;

  errno = 0;
  *id = g_ascii_strtoull (text, &end, 0);
  return errno == 0 && end != text && *end == '\0';
}

typedef guint64 *(*FindFunc) (PerfmonTaskLog *log, guint64 id, gsize *n_ids);

static int
print_found (PerfmonTaskLog *log,
             const char     *what,
             const char     *json_name,
             const char     *id_text,
             FindFunc        find,
             gboolean        json)
{
  g_autofree guint64 *ids = NULL;
  PerfmonTask *task;
  guint64 id;
  gsize n_ids;

  if (!parse_task_id (id_text, &id))
    return perfmon_tool_usage_error ("“%s” is not a task id (decimal, or hexadecimal with 0x)", id_text);
  task = perfmon_task_log_find_task (log, id);
  if (task == NULL)
    {
      perfmon_tool_error ("no task 0x%" G_GINT64_MODIFIER "x in the log", id);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  ids = find (log, id, &n_ids);
  if (json)
    {
      g_autoptr(JsonBuilder) builder = json_builder_new ();

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "task");
      add_task_json (builder, task);
      json_builder_set_member_name (builder, json_name);
      json_builder_begin_array (builder);
      for (gsize i = 0; i < n_ids; i++)
        {
          PerfmonTask *found = perfmon_task_log_find_task (log, ids[i]);

          if (found != NULL)
            add_task_json (builder, found);
          else
            {
              json_builder_begin_object (builder);
              json_builder_set_member_name (builder, "id");
              json_builder_add_int_value (builder, (gint64) ids[i]);
              json_builder_end_object (builder);
            }
        }
      json_builder_end_array (builder);
      json_builder_end_object (builder);
      print_json (builder);
      return PERFMON_TOOL_EXIT_OK;
    }

  g_print ("task:\n");
  print_task (log, task, TRUE);
  g_print ("%s (%" G_GSIZE_FORMAT "):\n", what, n_ids);
  for (gsize i = 0; i < n_ids; i++)
    {
      PerfmonTask *found = perfmon_task_log_find_task (log, ids[i]);

      if (found != NULL)
        print_task (log, found, FALSE);
      else
        g_print ("0x%" G_GINT64_MODIFIER "x (not in the log)\n", ids[i]);
    }
  return PERFMON_TOOL_EXIT_OK;
}

static gboolean
is_verb (const char *word)
{
  return g_str_equal (word, "dump") || g_str_equal (word, "ancestors") ||
         g_str_equal (word, "followers") || g_str_equal (word, "blockers") ||
         g_str_equal (word, "export");
}

int
perfmon_tool_tasks (int    argc,
                    char **argv)
{
  gboolean json = FALSE;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON (dump, ancestors, followers, blockers)", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context =
    g_option_context_new ("dump | ancestors ID | followers ID | blockers ID | export OUT.json  LOG…");
  g_autoptr(GPtrArray) paths = g_ptr_array_new ();
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(GError) error = NULL;
  const char *command = NULL;
  const char *argument = NULL;
  guint n_arguments;

  g_option_context_set_summary (context,
                                "Reads task logs written by the task tracer (several processes' logs\n"
                                "merge into one graph, linked by their D-Bus messages) and answers:\n"
                                "  dump           every task: ids, source event, process/thread, name,\n"
                                "                 queueing and run time\n"
                                "  ancestors ID   who dispatched the task, and who dispatched that, …\n"
                                "  followers ID   what the task caused, transitively\n"
                                "  blockers ID    the tasks that ran on its thread while it was queued\n"
                                "  export OUT     the Chrome Trace Event JSON, for Perfetto UI or\n"
                                "                 chrome://tracing ('-' for standard output)\n"
                                "IDs are decimal, or hexadecimal with 0x as dump prints them. Times in\n"
                                "the JSON are monotonic µs; ids are numbers.\n"
                                "(The older order, LOG… then the command, is still understood.)");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;

  if (argc > 1 && is_verb (argv[1]))
    {
      /* perfmon tasks VERB [ARG] LOG… */
      command = argv[1];
      n_arguments = g_str_equal (command, "dump") ? 0 : 1;
      if (n_arguments == 1 && argc > 2)
        argument = argv[2];
      for (int i = 2 + (int) n_arguments; i < argc; i++)
        g_ptr_array_add (paths, argv[i]);
      if (n_arguments == 1 && argument == NULL)
        return perfmon_tool_usage_error ("%s takes %s", command,
                                         g_str_equal (command, "export") ? "one output file" : "one task id");
    }
  else
    {
      /* The older order: LOG… VERB [ARG]. */
      int first_argument = 0;

      for (int i = 1; i < argc; i++)
        {
          if (is_verb (argv[i]))
            {
              command = argv[i];
              first_argument = i + 1;
              break;
            }
          g_ptr_array_add (paths, argv[i]);
        }
      if (command == NULL)
        return perfmon_tool_usage_error ("expected a command: dump, ancestors, followers, blockers or export");
      if (argc - first_argument != (g_str_equal (command, "dump") ? 0 : 1))
        return perfmon_tool_usage_error ("%s takes %s", command,
                                         g_str_equal (command, "dump") ? "no argument" :
                                         g_str_equal (command, "export") ? "one output file" : "one task id");
      if (first_argument < argc)
        argument = argv[first_argument];
    }
  if (paths->len == 0)
    return perfmon_tool_usage_error ("expected at least one task log file");
  if (json && g_str_equal (command, "export"))
    return perfmon_tool_usage_error ("export always writes JSON: --json goes with the other commands");
  g_ptr_array_add (paths, NULL);

  log = perfmon_task_log_new_from_files ((const char * const *) paths->pdata, &error);
  if (log == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  if (g_str_equal (command, "dump"))
    {
      GPtrArray *tasks = perfmon_task_log_get_tasks (log);

      if (json)
        {
          g_autoptr(JsonBuilder) builder = json_builder_new ();

          json_builder_begin_object (builder);
          json_builder_set_member_name (builder, "dropped_records");
          json_builder_add_int_value (builder, (gint64) perfmon_task_log_get_dropped_records (log));
          json_builder_set_member_name (builder, "unmatched_records");
          json_builder_add_int_value (builder, (gint64) perfmon_task_log_get_unmatched_records (log));
          json_builder_set_member_name (builder, "tasks");
          json_builder_begin_array (builder);
          for (guint i = 0; i < tasks->len; i++)
            add_task_json (builder, g_ptr_array_index (tasks, i));
          json_builder_end_array (builder);
          json_builder_end_object (builder);
          print_json (builder);
          return PERFMON_TOOL_EXIT_OK;
        }
      g_print ("%u tasks; %" G_GUINT64_FORMAT " records dropped by the tracer, %" G_GUINT64_FORMAT
               " unmatched\n", tasks->len, perfmon_task_log_get_dropped_records (log),
               perfmon_task_log_get_unmatched_records (log));
      for (guint i = 0; i < tasks->len; i++)
        print_task (log, g_ptr_array_index (tasks, i), TRUE);
      return PERFMON_TOOL_EXIT_OK;
    }
  if (g_str_equal (command, "ancestors"))
    return print_found (log, "ancestors, the parent first", "ancestors", argument,
                        perfmon_task_log_find_ancestors, json);
  if (g_str_equal (command, "followers"))
    return print_found (log, "followers", "followers", argument, perfmon_task_log_find_followers, json);
  if (g_str_equal (command, "blockers"))
    return print_found (log, "blockers, in the order they ran", "blockers", argument,
                        perfmon_task_log_find_blockers, json);

  {
    g_autofree char *trace = perfmon_tool_readable_chrome_trace (log);

    if (!perfmon_tool_write_output (g_str_equal (argument, "-") ? NULL : argument, trace, &error))
      {
        perfmon_tool_error ("%s", error->message);
        return PERFMON_TOOL_EXIT_FAILED;
      }
    if (!g_str_equal (argument, "-"))
      g_printerr ("perfmon: wrote the Chrome trace of %u tasks to %s\n",
                  perfmon_task_log_get_tasks (log)->len, argument);
    return PERFMON_TOOL_EXIT_OK;
  }
}
