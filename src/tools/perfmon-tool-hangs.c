/* perfmon-tool-hangs.c: perfmon hangs [list | show ID]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"
#include "perfmon-frame-function.h"
#include "perfmon-tool-hang-groups.h"

/* The most reports merged into one stack tree: enough to see the pattern,
 * few enough calls that a busy daemon answers in a moment. */
#define MAX_MERGED_REPORTS 100

/* --- reading a report --------------------------------------------------- */

/* GSources without a name have an empty runnable name. */
static const char *
runnable_or_unknown (const char *runnable)
{
  return runnable != NULL && *runnable != '\0' ? runnable : "(unnamed source)";
}

JsonArray *
perfmon_tool_json_get_array (JsonObject *object,
                             const char *member)
{
  JsonNode *node = json_object_get_member (object, member);

  return node != NULL && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
}

const char *
perfmon_tool_runnable_name (const char *runnable)
{
  return runnable_or_unknown (runnable);
}

/* The symbolizer of this command: names what the monitored process could
 * not (static functions, with the debug files of this machine). */
static PerfmonSymbolizer *
get_symbolizer (void)
{
  static PerfmonSymbolizer *symbolizer;

  if (symbolizer == NULL)
    symbolizer = perfmon_symbolizer_new ();
  return symbolizer;
}

/* The report @text of hang @id, read as every reader reads it, then with
 * the names this machine can give its frames. */
static PerfmonHangReport *
parse_report (const char *text,
              const char *id,
              GError    **error)
{
  g_autoptr(PerfmonHangReport) report = perfmon_hang_report_new_from_json (text, -1, error);

  if (report == NULL)
    return NULL;
  return perfmon_hang_report_symbolize (report, get_symbolizer ());
}

static PerfmonHangReport *
get_report (GDBusConnection *bus,
            const char      *id,
            GError         **error)
{
  g_autofree char *text = perfmon_tool_get_hang (bus, id, error);

  if (text == NULL)
    return NULL;
  return parse_report (text, id, error);
}

/* PerfmonToolModuleLookup of a hang report (@data): the modules its
 * native frames are in, by breakpad id (a report records no paths). */
static gboolean
report_module (gpointer     data,
               const char  *module,
               const char **path,
               const char **build_id)
{
  *path = NULL;
  return perfmon_hang_report_lookup_module (data, module, build_id);
}

/* @name (a runnable or dispatch name of @report, a hang of @pid),
 * readable: its `module+0x…` callbacks named as stacks are, from the
 * modules the report recorded, so after the process has exited too. */
static char *
readable_report_name (PerfmonHangReport *report,
                      const char        *name,
                      guint              pid)
{
  return perfmon_tool_readable_name_with (name, pid, report != NULL ? report_module : NULL, report);
}

/* The readable runnable name of hang @id of @pid, as ListHangs gave it:
 * the report (GetHang) is fetched only for a name with a callback to
 * name. */
static char *
readable_listed_runnable (GDBusConnection *bus,
                          const char      *id,
                          const char      *runnable,
                          guint            pid)
{
  g_autoptr(PerfmonHangReport) report = NULL;

  runnable = runnable_or_unknown (runnable);
  if (strstr (runnable, "+0x") != NULL)
    {
      g_autofree char *text = perfmon_tool_get_hang (bus, id, NULL);

      /* A hang can age out of the daemon between the two calls. */
      if (text != NULL)
        report = perfmon_hang_report_new_from_json (text, -1, NULL);
    }
  return readable_report_name (report, runnable, pid);
}

/* --- the aggregated stack tree ------------------------------------------ */

typedef struct _Node Node;
struct _Node
{
  char      *frame;
  guint      count;
  GPtrArray *children;
};

static void
node_free (Node *node)
{
  g_free (node->frame);
  g_clear_pointer (&node->children, g_ptr_array_unref);
  g_free (node);
}

static Node *
node_new (const char *frame)
{
  Node *node = g_new0 (Node, 1);

  node->frame = g_strdup (frame);
  node->children = g_ptr_array_new_with_free_func ((GDestroyNotify) node_free);
  return node;
}

static void
tree_add (Node              *root,
          PerfmonHangReport *report)
{
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);
  Node *node = root;

  root->count++;
  for (guint i = 0; stack[i] != NULL; i++)
    {
      /* By function, not by address: hangs in the same loop stop at
       * another instruction of each function every time. */
      g_autofree char *text = perfmon_frame_function (stack[i]);
      Node *child = NULL;

      for (guint c = 0; c < node->children->len && child == NULL; c++)
        if (g_str_equal (((Node *) g_ptr_array_index (node->children, c))->frame, text))
          child = g_ptr_array_index (node->children, c);
      if (child == NULL)
        {
          child = node_new (text);
          g_ptr_array_add (node->children, child);
        }
      child->count++;
      node = child;
    }
}

static int
compare_nodes (gconstpointer a,
               gconstpointer b)
{
  const Node *na = *(Node * const *) a;
  const Node *nb = *(Node * const *) b;

  return na->count < nb->count ? 1 : na->count > nb->count ? -1 : 0;
}

/* A chain without branches stays at one indentation, so that deep stacks
 * stay narrow; where stacks part ways, each branch starts with "- " one
 * level in, and what follows it is one level further. */
static void
tree_print (Node *node,
            guint depth)
{
  gboolean branches = node->children->len > 1;

  g_ptr_array_sort (node->children, compare_nodes);
  for (guint c = 0; c < node->children->len; c++)
    {
      Node *child = g_ptr_array_index (node->children, c);

      g_print ("  %*s%s%u  %s\n", (int) (depth + branches) * 2, "", branches ? "- " : "",
               child->count, child->frame);
      tree_print (child, branches ? depth + 2 : depth);
    }
}

/* --- list and show ------------------------------------------------------ */

static int
list_hangs (GDBusConnection *bus,
            gboolean         json)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariantIter) iter = NULL;
  const char *id, *name, *runnable;
  guint pid;
  double duration;
  guint n = 0;

  reply = perfmon_tool_list_hangs (bus, &error);
  if (reply == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  if (json)
    {
      g_autoptr(JsonBuilder) builder = json_builder_new ();
      g_autoptr(JsonNode) root = NULL;
      g_autofree char *text = NULL;

      json_builder_begin_array (builder);
      g_variant_get (reply, "a(susds)", &iter);
      while (g_variant_iter_next (iter, "(&su&sd&s)", &id, &pid, &name, &duration, &runnable))
        {
          json_builder_begin_object (builder);
          json_builder_set_member_name (builder, "id");
          json_builder_add_string_value (builder, id);
          json_builder_set_member_name (builder, "pid");
          json_builder_add_int_value (builder, pid);
          json_builder_set_member_name (builder, "process_name");
          json_builder_add_string_value (builder, name);
          json_builder_set_member_name (builder, "duration");
          json_builder_add_double_value (builder, duration);
          json_builder_set_member_name (builder, "runnable_name");
          json_builder_add_string_value (builder, runnable);
          json_builder_end_object (builder);
        }
      json_builder_end_array (builder);
      root = json_builder_get_root (builder);
      text = json_to_string (root, TRUE);
      g_print ("%s\n", text);
      return PERFMON_TOOL_EXIT_OK;
    }

  g_variant_get (reply, "a(susds)", &iter);
  while (g_variant_iter_next (iter, "(&su&sd&s)", &id, &pid, &name, &duration, &runnable))
    {
      if (n++ == 0)
        g_print ("%-20s %7s %-16s %9s  %s\n", "ID", "PID", "PROCESS", "DURATION", "RUNNABLE");
      g_autofree char *readable = readable_listed_runnable (bus, id, runnable, pid);

      g_print ("%-20s %7u %-16.16s %7.0fms  %s\n", id, pid, name, duration, readable);
    }
  if (n == 0)
    g_print ("No hangs collected.\n");
  return PERFMON_TOOL_EXIT_OK;
}

static void
print_report (const char        *id,
              guint              pid,
              PerfmonHangReport *report)
{
  g_auto(GStrv) keys = perfmon_hang_report_dup_annotation_keys (report);
  const char * const *labels = perfmon_hang_report_get_pseudo_stack (report);
  const char * const *dispatches = perfmon_hang_report_get_dispatch_names (report);
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);
  guint n_frames = g_strv_length (stack);
  const char *reason;
  g_autofree char *runnable = readable_report_name (
    report, runnable_or_unknown (perfmon_hang_report_get_runnable_name (report)), pid);

  g_print ("Hang %s: %.0f ms on thread \"%s\", running %s\n", id, perfmon_hang_report_get_duration (report),
           perfmon_hang_report_get_thread (report), runnable);
  g_print ("Process type: %s", perfmon_hang_report_get_process_type (report));
  if (perfmon_hang_report_get_remote_type (report) != NULL)
    g_print (" (%s)", perfmon_hang_report_get_remote_type (report));
  g_print ("\n");
  /* The add-on, and how it is known (doc/addons.md): the annotations
   * "Addon" (its handler's label: exact) and "AddonSampled" (its
   * JavaScript frame on the hung stack: sampled). */
  if (perfmon_hang_report_get_annotation (report, "Addon") != NULL)
    g_print ("Add-on: %s (exact: the hang is in its handler)\n",
             perfmon_hang_report_get_annotation (report, "Addon"));
  else if (perfmon_hang_report_get_annotation (report, "AddonSampled") != NULL)
    g_print ("Add-on: %s (sampled: its JavaScript code was on the hung stack)\n",
             perfmon_hang_report_get_annotation (report, "AddonSampled"));

  if (keys[0] != NULL)
    g_print ("\nAnnotations:\n");
  for (guint i = 0; keys[i] != NULL; i++)
    g_print ("  %s = %s\n", keys[i], perfmon_hang_report_get_annotation (report, keys[i]));

  if (labels[0] != NULL)
    g_print ("\nLabels (outermost first):\n");
  for (guint i = 0; labels[i] != NULL; i++)
    g_print ("  %s\n", labels[i]);

  /* Automatic groups: the busy stretch's longest dispatches. */
  if (dispatches[0] != NULL)
    g_print ("\nDispatches (longest first):\n");
  for (guint i = 0; dispatches[i] != NULL; i++)
    {
      g_autofree char *dispatch = readable_report_name (report, dispatches[i], pid);

      g_print ("  %7.0f ms  %s\n", perfmon_hang_report_get_dispatch_duration (report, i), dispatch);
    }

  g_print ("\nStack (innermost first):\n");
  reason = perfmon_hang_report_get_stack_unavailable_reason (report);
  if (n_frames == 0)
    g_print ("  unavailable: %s\n", reason != NULL ? reason : "no frames");
  if ((reason = perfmon_hang_report_get_script_stack_unavailable_reason (report)) != NULL)
    g_print ("  (no Python or JavaScript frames: %s)\n", reason);
  for (guint i = n_frames; i > 0; i--)
    g_print ("  #%-3u %s\n", n_frames - i, stack[i - 1]);
}

static int
show_hang (GDBusConnection *bus,
           const char      *id,
           gboolean         json)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonHangReport) report = NULL;
  g_autoptr(GVariant) list = NULL;
  g_autoptr(GVariantIter) iter = NULL;
  const char *other_id, *name, *runnable;
  const char *my_runnable = NULL;
  guint pid, my_pid = 0;
  double duration;
  gboolean found = FALSE;
  guint merged = 0;
  g_autofree char *readable = NULL;
  Node *root;

  report = get_report (bus, id, &error);
  if (report == NULL)
    {
      perfmon_tool_error ("hang %s: %s", id, error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }
  if (json)
    {
      g_autofree char *compact = perfmon_hang_report_to_json (report);
      g_autoptr(JsonNode) node = json_from_string (compact, NULL);
      g_autofree char *text = json_to_string (node, TRUE);

      g_print ("%s\n", text);
      return PERFMON_TOOL_EXIT_OK;
    }

  /* The tree merges every hang of the same process in the same runnable:
   * ListHangs tells which those are, and the process of this one. */
  list = perfmon_tool_list_hangs (bus, &error);
  if (list != NULL)
    {
      g_variant_get (list, "a(susds)", &iter);
      while (g_variant_iter_next (iter, "(&su&sd&s)", &other_id, &pid, &name, &duration, &runnable))
        if (g_str_equal (other_id, id))
          {
            found = TRUE;
            my_pid = pid;
            my_runnable = runnable;
            break;
          }
    }

  print_report (id, my_pid, report);
  if (list == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }
  if (!found)
    {
      g_print ("\n(Hang %s is no longer listed: no stack tree.)\n", id);
      return PERFMON_TOOL_EXIT_OK;
    }

  root = node_new ("");
  g_clear_pointer (&iter, g_variant_iter_free);
  g_variant_get (list, "a(susds)", &iter);
  while (merged < MAX_MERGED_REPORTS &&
         g_variant_iter_next (iter, "(&su&sd&s)", &other_id, &pid, &name, &duration, &runnable))
    {
      g_autoptr(PerfmonHangReport) other = NULL;
      g_autoptr(GError) other_error = NULL;

      if (pid != my_pid || !g_str_equal (runnable, my_runnable))
        continue;
      other = g_str_equal (other_id, id) ? perfmon_hang_report_ref (report) : get_report (bus, other_id, &other_error);
      /* A hang can age out of the daemon between the two calls. */
      if (other == NULL)
        continue;
      tree_add (root, other);
      merged++;
    }

  readable = readable_report_name (report, runnable_or_unknown (my_runnable), my_pid);
  g_print ("\nStack tree of %u hang%s of pid %u in %s (count, frame, outermost first):\n",
           root->count, root->count == 1 ? "" : "s", my_pid, readable);
  tree_print (root, 0);
  node_free (root);
  return PERFMON_TOOL_EXIT_OK;
}

int
perfmon_tool_hangs (int    argc,
                    char **argv)
{
  gboolean json = FALSE;
  const GOptionEntry entries[] = {
    { "json", 'j', 0, G_OPTION_ARG_NONE, &json, "Print JSON: the list, or the report as the process sent it", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("[list | show ID]");
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(GError) error = NULL;
  const char *action;

  g_option_context_set_summary (context,
                                "The hangs perfmond collected from the monitored processes of the\n"
                                "session: main-loop iterations that ran past the hang threshold.\n"
                                "'list' (the default) shows them, newest first; 'show ID' prints one\n"
                                "report with its labels, annotations and stack, and the stack tree of\n"
                                "every hang of that process in the same runnable, merged.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;

  action = argc > 1 ? argv[1] : "list";
  if (g_str_equal (action, "list"))
    {
      if (argc > 2)
        return perfmon_tool_usage_error ("'list' takes no argument, got '%s'", argv[2]);
    }
  else if (g_str_equal (action, "show"))
    {
      if (argc != 3)
        return perfmon_tool_usage_error ("'show' takes one hang id (see 'perfmon hangs list')");
    }
  else
    return perfmon_tool_usage_error ("unknown action '%s': expected 'list' or 'show ID'", action);

  bus = perfmon_tool_session_bus (&error);
  if (bus == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  if (g_str_equal (action, "list"))
    return list_hangs (bus, json);
  return show_hang (bus, argv[2], json);
}
