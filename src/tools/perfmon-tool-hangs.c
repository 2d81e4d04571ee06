/* perfmon-tool-hangs.c: perfmon hangs [list | show ID]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

/* The most reports merged into one stack tree: enough to see the pattern,
 * few enough calls that a busy daemon answers in a moment. */
#define MAX_MERGED_REPORTS 100

/* --- reading a report --------------------------------------------------- */

static const char *
json_string_or (JsonObject *object,
                const char *member,
                const char *fallback)
{
  JsonNode *node = json_object_get_member (object, member);

  if (node == NULL || JSON_NODE_TYPE (node) != JSON_NODE_VALUE ||
      json_node_get_value_type (node) != G_TYPE_STRING)
    return fallback;
  return json_node_get_string (node);
}

/* The report's array @member, or NULL: reports come from other processes
 * and may lack any field. */
static JsonArray *
get_array (JsonObject *object,
           const char *member)
{
  JsonNode *node = json_object_get_member (object, member);

  return node != NULL && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
}

static guint
array_length (JsonArray *array)
{
  return array != NULL ? json_array_get_length (array) : 0;
}

/* Element @index of @array as a string, or NULL if it is none. */
static const char *
element_string (JsonArray *array,
                guint      index)
{
  JsonNode *node = index < array_length (array) ? json_array_get_element (array, index) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (node);
}

/* Element @index of @array as a pair (a 2-element array), or NULL. */
static JsonArray *
element_pair (JsonArray *array,
              guint      index)
{
  JsonNode *node = index < array_length (array) ? json_array_get_element (array, index) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node) || json_array_get_length (json_node_get_array (node)) != 2)
    return NULL;
  return json_node_get_array (node);
}

/* A frame of the report's "stack" as a person reads it, in the one frame
 * format (see perfmon_format_native_frame()): a label as its text, a
 * native frame as its module and offset, with the function if known. */
static char *
frame_text (JsonObject *report,
            guint       index)
{
  JsonArray *stack = get_array (report, "stack");
  JsonArray *symbols = get_array (report, "symbols");
  JsonArray *modules = get_array (report, "modules");
  const char *symbol = element_string (symbols, index);
  const char *module = NULL;
  guint64 offset = 0;
  g_autofree char *function = NULL;
  guint64 function_offset = 0;

  if (element_string (stack, index) != NULL)
    return g_strdup (element_string (stack, index));

  if (element_pair (stack, index) != NULL)
    {
      JsonArray *pair = element_pair (stack, index);
      JsonNode *index_node = json_array_get_element (pair, 0);

      if (JSON_NODE_HOLDS_VALUE (index_node) && json_node_get_value_type (index_node) == G_TYPE_INT64)
        {
          gint64 module_index = json_node_get_int (index_node);
          JsonArray *entry = module_index >= 0 && module_index < array_length (modules)
            ? element_pair (modules, (guint) module_index) : NULL;

          module = entry != NULL && element_string (entry, 0) != NULL ? element_string (entry, 0) : "?";
        }
      if (element_string (pair, 1) != NULL)
        offset = g_ascii_strtoull (element_string (pair, 1), NULL, 16);
    }

  /* "function+0xN" */
  if (symbol != NULL)
    {
      const char *plus = strrchr (symbol, '+');

      function = plus != NULL ? g_strndup (symbol, plus - symbol) : g_strdup (symbol);
      function_offset = plus != NULL ? g_ascii_strtoull (plus + 1, NULL, 0) : 0;
    }
  return perfmon_format_native_frame (module, offset, function, function_offset);
}

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
  return get_array (object, member);
}

char *
perfmon_tool_hang_frame_text (JsonObject *report,
                              guint       index)
{
  return frame_text (report, index);
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

static JsonObject *
parse_report (const char *text,
              const char *id,
              GError    **error)
{
  g_autofree char *named = perfmon_symbolizer_symbolize (get_symbolizer (), text, -1, TRUE, NULL);
  g_autoptr(JsonNode) root = json_from_string (named != NULL ? named : text, error);

  if (root == NULL)
    return NULL;
  if (!JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                   "the daemon's report of hang %s is not a JSON object", id);
      return NULL;
    }
  return json_object_ref (json_node_get_object (root));
}

static JsonObject *
get_report (GDBusConnection *bus,
            const char      *id,
            GError         **error)
{
  g_autofree char *text = perfmon_tool_get_hang (bus, id, error);

  if (text == NULL)
    return NULL;
  return parse_report (text, id, error);
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
tree_add (Node       *root,
          JsonObject *report)
{
  guint n = array_length (get_array (report, "stack"));
  Node *node = root;

  root->count++;
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *text = frame_text (report, i);
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
      g_print ("%-20s %7u %-16.16s %7.0fms  %s\n", id, pid, name, duration, runnable_or_unknown (runnable));
    }
  if (n == 0)
    g_print ("No hangs collected.\n");
  return PERFMON_TOOL_EXIT_OK;
}

static void
print_report (const char *id,
              JsonObject *report)
{
  JsonArray *annotations = get_array (report, "annotations");
  JsonArray *pseudo_stack = get_array (report, "pseudoStack");
  guint n_frames = array_length (get_array (report, "stack"));
  JsonNode *duration = json_object_get_member (report, "duration");

  g_print ("Hang %s: %.0f ms on thread \"%s\", running %s\n", id,
           duration != NULL && JSON_NODE_HOLDS_VALUE (duration) ? json_node_get_double (duration) : 0.0,
           json_string_or (report, "thread", "?"), runnable_or_unknown (json_string_or (report, "runnableName", NULL)));
  g_print ("Process type: %s", json_string_or (report, "process", "?"));
  if (json_string_or (report, "remoteType", NULL) != NULL)
    g_print (" (%s)", json_string_or (report, "remoteType", NULL));
  g_print ("\n");

  if (array_length (annotations) > 0)
    {
      g_print ("\nAnnotations:\n");
      for (guint i = 0; i < array_length (annotations); i++)
        {
          JsonArray *pair = element_pair (annotations, i);

          if (pair != NULL && element_string (pair, 0) != NULL && element_string (pair, 1) != NULL)
            g_print ("  %s = %s\n", element_string (pair, 0), element_string (pair, 1));
        }
    }

  if (array_length (pseudo_stack) > 0)
    {
      g_print ("\nLabels (outermost first):\n");
      for (guint i = 0; i < array_length (pseudo_stack); i++)
        {
          if (element_string (pseudo_stack, i) != NULL)
            g_print ("  %s\n", element_string (pseudo_stack, i));
        }
    }

  /* Automatic groups: the busy stretch's longest dispatches. */
  {
    JsonArray *dispatches = get_array (report, "dispatches");

    if (array_length (dispatches) > 0)
      g_print ("\nDispatches (longest first):\n");
    for (guint i = 0; i < array_length (dispatches); i++)
      {
        JsonNode *node = json_array_get_element (dispatches, i);
        JsonObject *dispatch = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
        JsonNode *ms = dispatch != NULL ? json_object_get_member (dispatch, "duration") : NULL;

        if (dispatch != NULL && json_string_or (dispatch, "name", NULL) != NULL)
          g_print ("  %7.0f ms  %s\n", ms != NULL && JSON_NODE_HOLDS_VALUE (ms) ? json_node_get_double (ms) : 0.0,
                   json_string_or (dispatch, "name", NULL));
      }
  }

  g_print ("\nStack (innermost first):\n");
  if (n_frames == 0)
    g_print ("  unavailable: %s\n", json_string_or (report, "stackUnavailable", "no frames"));
  if (json_string_or (report, "scriptStackUnavailable", NULL) != NULL)
    g_print ("  (no Python or JavaScript frames: %s)\n", json_string_or (report, "scriptStackUnavailable", NULL));
  for (guint i = n_frames; i > 0; i--)
    {
      g_autofree char *text = frame_text (report, i - 1);

      g_print ("  #%-3u %s\n", n_frames - i, text);
    }
}

static int
show_hang (GDBusConnection *bus,
           const char      *id,
           gboolean         json)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonObject) report = NULL;
  g_autoptr(GVariant) list = NULL;
  g_autoptr(GVariantIter) iter = NULL;
  const char *other_id, *name, *runnable;
  const char *my_runnable = NULL;
  guint pid, my_pid = 0;
  double duration;
  gboolean found = FALSE;
  guint merged = 0;
  Node *root;

  report = get_report (bus, id, &error);
  if (report == NULL)
    {
      perfmon_tool_error ("hang %s: %s", id, error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }
  if (json)
    {
      g_autoptr(JsonNode) node = json_node_init_object (json_node_alloc (), report);
      g_autofree char *text = json_to_string (node, TRUE);

      g_print ("%s\n", text);
      return PERFMON_TOOL_EXIT_OK;
    }

  print_report (id, report);

  /* The tree merges every hang of the same process in the same runnable:
   * ListHangs tells which those are. */
  list = perfmon_tool_list_hangs (bus, &error);
  if (list == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }
  g_variant_get (list, "a(susds)", &iter);
  while (g_variant_iter_next (iter, "(&su&sd&s)", &other_id, &pid, &name, &duration, &runnable))
    if (g_str_equal (other_id, id))
      {
        found = TRUE;
        my_pid = pid;
        my_runnable = runnable;
        break;
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
      g_autoptr(JsonObject) other = NULL;
      g_autoptr(GError) other_error = NULL;

      if (pid != my_pid || !g_str_equal (runnable, my_runnable))
        continue;
      other = g_str_equal (other_id, id) ? json_object_ref (report) : get_report (bus, other_id, &other_error);
      /* A hang can age out of the daemon between the two calls. */
      if (other == NULL)
        continue;
      tree_add (root, other);
      merged++;
    }

  g_print ("\nStack tree of %u hang%s of pid %u in %s (count, frame, outermost first):\n",
           root->count, root->count == 1 ? "" : "s", my_pid, runnable_or_unknown (my_runnable));
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
