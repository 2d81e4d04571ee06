/* perfmon-tool-symbolize.c: perfmon symbolize FILE…
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

/* "module+0xoffset": how the tracer names a callback that is a static
 * function (see perfmon-tracer.c). */
static gboolean
parse_module_offset (const char *name,
                     char      **module_out,
                     guint64    *offset_out)
{
  const char *plus = strrchr (name, '+');
  char *end = NULL;

  if (plus == NULL || plus == name || !g_str_has_prefix (plus, "+0x") || plus[3] == '\0' ||
      strchr (name, ' ') != NULL)
    return FALSE;
  *offset_out = g_ascii_strtoull (plus + 3, &end, 16);
  if (*end != '\0')
    return FALSE;
  *module_out = g_strndup (name, plus - name);
  return TRUE;
}

/* The functions of a task log's tasks that the tracer could only name by
 * module and offset. */
static char *
symbolize_task_log (PerfmonSymbolizer *symbolizer,
                    PerfmonTaskLog    *log,
                    gboolean           json)
{
  GPtrArray *tasks = perfmon_task_log_get_tasks (log);
  g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) names = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  GString *out = g_string_new (NULL);

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "functions");
  json_builder_begin_object (builder);
  for (guint i = 0; i < tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (tasks, i);
      const char *name = perfmon_task_get_name (task);
      g_autofree char *module = NULL;
      g_autofree char *function = NULL;
      g_autofree char *frame = NULL;
      const char *path = NULL;
      const char *build_id = NULL;
      guint64 offset = 0, function_offset = 0;

      if (name == NULL || g_hash_table_contains (seen, name))
        continue;
      g_hash_table_add (seen, (gpointer) name);
      if (!parse_module_offset (name, &module, &offset))
        {
          /* A name with a module and offset in it ("GTimeoutSource
           * (prog+0x13c0)"): the same lookups, the name kept around. */
          g_autofree char *readable = perfmon_tool_readable_task_name (log, task);

          if (g_strcmp0 (readable, name) != 0)
            {
              g_hash_table_insert (names, (gpointer) name, g_steal_pointer (&readable));
              g_string_append_printf (out, "%s\n", (const char *) g_hash_table_lookup (names, name));
            }
          continue;
        }
      /* The module as the file recorded it (path and build id: named
       * after the process has exited), else by its file name. A
       * callback's own address, not a return address. */
      if (!perfmon_task_log_lookup_module (log, perfmon_task_get_process (task), module, &path, NULL, &build_id))
        path = build_id = NULL;
      function = perfmon_symbolizer_lookup (symbolizer, path != NULL ? path : module,
                                            build_id != NULL && build_id[0] != '\0' ? build_id : NULL, offset,
                                            FALSE, &function_offset);
      json_builder_set_member_name (builder, name);
      if (function != NULL)
        json_builder_add_string_value (builder, function);
      else
        json_builder_add_null_value (builder);
      frame = perfmon_format_native_frame (module, offset, function, function_offset);
      g_string_append_printf (out, "%s\n", frame);
    }
  json_builder_end_object (builder);
  /* Names with a module and offset in them, as the tool shows them. */
  json_builder_set_member_name (builder, "names");
  json_builder_begin_object (builder);
  {
    GHashTableIter iter;
    gpointer key, value;

    g_hash_table_iter_init (&iter, names);
    while (g_hash_table_iter_next (&iter, &key, &value))
      {
        json_builder_set_member_name (builder, key);
        json_builder_add_string_value (builder, value);
      }
  }
  json_builder_end_object (builder);
  json_builder_end_object (builder);

  if (json)
    {
      g_autoptr(JsonNode) root = json_builder_get_root (builder);

      g_string_free (out, TRUE);
      return json_to_string (root, TRUE);
    }
  return g_string_free (out, FALSE);
}

/* The group names of @snapshot that name a module and an offset, as the
 * tool shows them (with the modules the snapshot recorded): one a line,
 * or {"names": {name: readable}} */
static void
add_snapshot_names (PerfmonSnapshot *snapshot,
                    GString         *out,
                    JsonBuilder     *names)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

  for (guint i = 0; i < groups->len; i++)
    {
      const char *name = perfmon_group_stats_get_name (g_ptr_array_index (groups, i));
      g_autofree char *readable = perfmon_tool_readable_group_name (snapshot, name);

      if (g_strcmp0 (readable, name) == 0)
        continue;
      g_string_append_printf (out, "%s\n", readable);
      json_builder_set_member_name (names, name);
      json_builder_add_string_value (names, readable);
    }
}

static gboolean
add_snapshot_node (JsonNode    *node,
                   GString     *out,
                   JsonBuilder *names,
                   GError     **error)
{
  g_autofree char *text = json_to_string (node, FALSE);
  g_autoptr(PerfmonSnapshot) snapshot = perfmon_snapshot_new_from_json (text, error);

  if (snapshot == NULL)
    return FALSE;
  add_snapshot_names (snapshot, out, names);
  return TRUE;
}

/* A snapshot (perfmon snapshot --json, perfmon_snapshot_to_json()) or
 * perfmon run's summary, which holds one per process: the names of their
 * groups. NULL, without an error, if @contents is neither. */
static char *
symbolize_snapshots (const char  *contents,
                     gsize        length,
                     gboolean     json,
                     GError     **error)
{
  g_autoptr(JsonParser) parser = json_parser_new_immutable ();
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(GString) out = g_string_new (NULL);
  JsonObject *object;
  JsonArray *processes;
  JsonNode *root;

  if (!json_parser_load_from_data (parser, contents, (gssize) length, NULL) ||
      (root = json_parser_get_root (parser)) == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return NULL;
  object = json_node_get_object (root);
  processes = perfmon_tool_json_get_array (object, "processes");
  if (!json_object_has_member (object, "groups") && processes == NULL)
    return NULL;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "names");
  json_builder_begin_object (builder);
  if (json_object_has_member (object, "groups"))
    {
      if (!add_snapshot_node (root, out, builder, error))
        return NULL;
    }
  else
    for (guint i = 0; i < json_array_get_length (processes); i++)
      {
        JsonNode *process = json_array_get_element (processes, i);
        JsonNode *snapshot = JSON_NODE_HOLDS_OBJECT (process)
                               ? json_object_get_member (json_node_get_object (process), "snapshot") : NULL;

        if (snapshot != NULL && !add_snapshot_node (snapshot, out, builder, error))
          {
            g_prefix_error (error, "processes[%u].snapshot: ", i);
            return NULL;
          }
      }
  json_builder_end_object (builder);
  json_builder_end_object (builder);
  if (json)
    {
      g_autoptr(JsonNode) names = json_builder_get_root (builder);

      return json_to_string (names, TRUE);
    }
  return g_string_free (g_steal_pointer (&out), FALSE);
}

static char *
symbolize_file (PerfmonSymbolizer *symbolizer,
                const char        *path,
                gboolean           json,
                GError           **error)
{
  g_autofree char *contents = NULL;
  gsize length = 0;

  if (!g_file_get_contents (path, &contents, &length, error))
    return NULL;
  /* Task logs are binary; everything else perfmon writes is text. */
  if (memchr (contents, '\0', length) != NULL)
    {
      g_autoptr(PerfmonTaskLog) log = perfmon_task_log_new_from_file (path, error);

      return log != NULL ? symbolize_task_log (symbolizer, log, json) : NULL;
    }
  {
    g_autoptr(GError) local_error = NULL;
    char *names = symbolize_snapshots (contents, length, json, &local_error);

    if (local_error != NULL)
      {
        g_propagate_prefixed_error (error, g_steal_pointer (&local_error), "not a valid snapshot: ");
        return NULL;
      }
    if (names != NULL)
      return names;
  }
  return perfmon_symbolizer_symbolize (symbolizer, contents, length, json, error);
}

int
perfmon_tool_symbolize (int    argc,
                        char **argv)
{
  gboolean json = FALSE;
  g_auto(GStrv) debug_dirs = NULL;
  int budget_ms = 0;
  const GOptionEntry entries[] = {
    { "json", 'j', 0, G_OPTION_ARG_NONE, &json,
      "Print JSON that keeps the input's structure (with \"symbols\" filled in)", NULL },
    { "debug-dir", 'd', 0, G_OPTION_ARG_FILENAME_ARRAY, &debug_dirs,
      "Look for debug files under DIR (repeatable; default $PERFMON_DEBUG_DIRS or /usr/lib/debug)", "DIR" },
    { "time-budget", 't', 0, G_OPTION_ARG_INT, &budget_ms,
      "Spend at most MS loading modules per file (1-600000, default 10000)", "MS" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("FILE…");
  g_autoptr(PerfmonSymbolizer) symbolizer = NULL;
  g_autoptr(JsonBuilder) all = NULL;
  int status = PERFMON_TOOL_EXIT_OK;

  g_option_context_set_summary (context,
                                "Names the native frames of files perfmon wrote — a hang report (JSON),\n"
                                "a \"bhr\" ping, a jank stack tree, a task log, a snapshot or perfmon\n"
                                "run's summary (their \"module+0x…\" group and task names) — on this machine, from\n"
                                "the objects and their debug files (by build id, by .gnu_debuglink, or\n"
                                "from debuginfod when DEBUGINFOD_URLS is set). Stacks are printed\n"
                                "innermost first; --json keeps each file's structure.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;
  if (argc < 2)
    return perfmon_tool_usage_error ("symbolize takes at least one FILE");
  if (budget_ms != 0 && (budget_ms < 1 || budget_ms > 600000))
    return perfmon_tool_usage_error ("--time-budget must be 1 to 600000 ms, got %d", budget_ms);

  symbolizer = perfmon_symbolizer_new ();
  if (debug_dirs != NULL)
    perfmon_symbolizer_set_debug_dirs (symbolizer, (const char * const *) debug_dirs);
  if (budget_ms != 0)
    perfmon_symbolizer_set_time_budget (symbolizer, (guint) budget_ms);
  perfmon_tool_use_symbolizer (symbolizer);

  if (json && argc > 2)
    {
      all = json_builder_new ();
      json_builder_begin_object (all);
    }
  for (int i = 1; i < argc; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *out = symbolize_file (symbolizer, argv[i], json, &error);

      if (out == NULL)
        {
          perfmon_tool_error ("%s: %s", argv[i], error->message);
          status = PERFMON_TOOL_EXIT_FAILED;
          continue;
        }
      if (all != NULL)
        {
          g_autoptr(JsonNode) node = json_from_string (out, NULL);

          json_builder_set_member_name (all, argv[i]);
          json_builder_add_value (all, g_steal_pointer (&node));
        }
      else
        {
          if (!json && argc > 2)
            g_print ("%s==> %s <==\n", i > 1 ? "\n" : "", argv[i]);
          g_print ("%s%s", out, g_str_has_suffix (out, "\n") ? "" : "\n");
        }
    }
  if (all != NULL)
    {
      g_autoptr(JsonNode) root = NULL;
      g_autofree char *text = NULL;

      json_builder_end_object (all);
      root = json_builder_get_root (all);
      text = json_to_string (root, TRUE);
      g_print ("%s\n", text);
    }
  return status;
}
