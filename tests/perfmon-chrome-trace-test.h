/* perfmon-chrome-trace-test.h: checks a Chrome trace the way its readers
 * read it
 *
 * Chrome DevTools (Performance panel, "Load trace") binds a flow event
 * ("s", "t", "f") only to a slice ("X") with the same pid, tid, ts and
 * category, and shows no arrow otherwise. Perfetto's JSON importer drops a
 * flow whose "s" no slice of its thread encloses
 * (flow_no_enclosing_slice), binds an "f" with "bp": "e" to the slice
 * enclosing it, and drops slices that do not nest on their thread. This
 * checks every flow and slice of @json against those rules, every flow id
 * having one start and one finish, and no negative time; and that the
 * arrows are right: each flow starts on a slice of the task that is the
 * parent of the task its finish binds to (perfmon's flows join a parent
 * and its child), and each task whose parent has a slice has a flow.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

typedef struct
{
  gint64  pid;
  gint64  tid;
  double  ts;
  double  dur;
  const char *cat;
  const char *name;
  const char *task_id;
  const char *parent_id;
  gboolean    first_run;
} TestTraceSlice;

/* The slice of @slices that a flow event at @ts on @pid/@tid binds to:
 * DevTools' rule (same pid, tid, ts, category), which also makes it
 * enclose the event, as Perfetto needs. The innermost if several. */
static inline const TestTraceSlice *
test_trace_bound_slice (GArray     *slices,
                        gint64      pid,
                        gint64      tid,
                        double      ts,
                        const char *cat)
{
  const TestTraceSlice *bound = NULL;

  for (guint i = 0; i < slices->len; i++)
    {
      const TestTraceSlice *slice = &g_array_index (slices, TestTraceSlice, i);

      if (slice->pid == pid && slice->tid == tid && slice->ts == ts && g_strcmp0 (slice->cat, cat) == 0 &&
          (bound == NULL || slice->dur < bound->dur))
        bound = slice;
    }
  return bound;
}

/* Checks @json; returns the number of flows named @flow_name (NULL: all),
 * and in @finish_tasks (if not NULL) the task_id of the slice each such
 * flow's finish binds to. */
static inline guint
test_check_chrome_trace (const char *json,
                         const char *flow_name,
                         GPtrArray  *finish_tasks)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) slices = g_array_new (FALSE, FALSE, sizeof (TestTraceSlice));
  g_autoptr(GHashTable) starts = g_hash_table_new (g_int64_hash, g_int64_equal);
  g_autoptr(GHashTable) finishes = g_hash_table_new (g_int64_hash, g_int64_equal);
  g_autoptr(GArray) ids = g_array_sized_new (FALSE, FALSE, sizeof (gint64), 1024);
  /* flow id → the task_id of its start's slice; task_id → TRUE once a
   * flow finishes on its slice. */
  g_autoptr(GHashTable) start_tasks = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  g_autoptr(GHashTable) finish_slices = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  g_autoptr(GHashTable) with_flow = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) with_slice = g_hash_table_new (g_str_hash, g_str_equal);
  JsonArray *events;
  guint n_flows = 0;

  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  g_assert_no_error (error);
  events = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "traceEvents");
  g_assert_nonnull (events);

  for (guint i = 0; i < json_array_get_length (events); i++)
    {
      JsonObject *event = json_array_get_object_element (events, i);

      g_assert_true (json_object_has_member (event, "pid"));
      g_assert_true (json_object_has_member (event, "tid"));
      if (g_str_equal (json_object_get_string_member (event, "ph"), "M"))
        continue;
      g_assert_cmpfloat (json_object_get_double_member (event, "ts"), >=, 0.0);
      if (g_str_equal (json_object_get_string_member (event, "ph"), "X"))
        {
          TestTraceSlice slice = {
            json_object_get_int_member (event, "pid"),
            json_object_get_int_member (event, "tid"),
            json_object_get_double_member (event, "ts"),
            json_object_get_double_member (event, "dur"),
            json_object_get_string_member (event, "cat"),
            json_object_get_string_member (event, "name"),
            json_object_get_string_member (json_object_get_object_member (event, "args"), "task_id"),
            json_object_get_string_member (json_object_get_object_member (event, "args"), "parent_id"),
            json_object_get_int_member_with_default (json_object_get_object_member (event, "args"), "run", 0) == 0,
          };

          g_assert_cmpfloat (slice.dur, >=, 0.0);
          g_array_append_val (slices, slice);
        }
    }

  /* Slices nest on each thread (Perfetto drops those that do not). */
  for (guint i = 0; i < slices->len; i++)
    for (guint j = 0; j < slices->len; j++)
      {
        const TestTraceSlice *a = &g_array_index (slices, TestTraceSlice, i);
        const TestTraceSlice *b = &g_array_index (slices, TestTraceSlice, j);

        if (i != j && a->pid == b->pid && a->tid == b->tid && a->ts < b->ts && b->ts < a->ts + a->dur)
          g_assert_cmpfloat (b->ts + b->dur, <=, a->ts + a->dur);
      }

  for (guint i = 0; i < json_array_get_length (events); i++)
    {
      JsonObject *event = json_array_get_object_element (events, i);
      const char *phase = json_object_get_string_member (event, "ph");
      const TestTraceSlice *bound;
      gint64 id;

      if (!g_str_equal (phase, "s") && !g_str_equal (phase, "f"))
        continue;
      bound = test_trace_bound_slice (slices, json_object_get_int_member (event, "pid"),
                                      json_object_get_int_member (event, "tid"),
                                      json_object_get_double_member (event, "ts"),
                                      json_object_get_string_member (event, "cat"));
      if (bound == NULL)
        g_error ("flow event %s “%s” at ts %.3f binds to no slice: DevTools shows no arrow, "
                 "Perfetto drops it", phase, json_object_get_string_member (event, "name"),
                 json_object_get_double_member (event, "ts"));
      id = json_object_get_int_member (event, "id");
      g_array_append_val (ids, id);
      if (g_str_equal (phase, "s"))
        {
          g_assert_true (g_hash_table_add (starts, &g_array_index (ids, gint64, ids->len - 1)));
          g_hash_table_insert (start_tasks, g_memdup2 (&id, sizeof id), (gpointer) bound->task_id);
        }
      else
        {
          g_hash_table_insert (finish_slices, g_memdup2 (&id, sizeof id), (gpointer) bound);
          if (bound->task_id != NULL)
            g_hash_table_add (with_flow, (gpointer) bound->task_id);
          g_assert_cmpstr (json_object_get_string_member (event, "bp"), ==, "e");
          g_assert_true (g_hash_table_add (finishes, &g_array_index (ids, gint64, ids->len - 1)));
          if (flow_name == NULL || g_str_equal (json_object_get_string_member (event, "name"), flow_name))
            {
              n_flows++;
              if (finish_tasks != NULL)
                g_ptr_array_add (finish_tasks, g_strdup (bound->task_id));
            }
        }
    }
  g_assert_cmpuint (ids->len, <=, 1024);   /* the hash tables point into ids */

  /* One start and one finish per flow. */
  g_assert_cmpuint (g_hash_table_size (starts), ==, g_hash_table_size (finishes));
  {
    GHashTableIter iter;
    gpointer key;

    g_hash_table_iter_init (&iter, starts);
    while (g_hash_table_iter_next (&iter, &key, NULL))
      g_assert_true (g_hash_table_contains (finishes, key));
  }

  /* Each flow goes from a run of the parent to the child's. */
  {
    GHashTableIter iter;
    gpointer key, value;

    g_hash_table_iter_init (&iter, finish_slices);
    while (g_hash_table_iter_next (&iter, &key, &value))
      {
        const TestTraceSlice *finish = value;
        const char *start_task = g_hash_table_lookup (start_tasks, key);

        if (finish->parent_id == NULL && start_task == NULL)
          continue;   /* a trace of no perfmon task */
        if (g_strcmp0 (start_task, finish->parent_id) != 0)
          g_error ("flow %" G_GINT64_FORMAT " starts on task %s, but it ends on task %s (“%s”), "
                   "whose parent is %s", *(gint64 *) key, start_task, finish->task_id, finish->name,
                   finish->parent_id);
      }
  }
  /* Each task whose parent has a slice has its flow, none other. */
  for (guint i = 0; i < slices->len; i++)
    if (g_array_index (slices, TestTraceSlice, i).task_id != NULL)
      g_hash_table_add (with_slice, (gpointer) g_array_index (slices, TestTraceSlice, i).task_id);
  for (guint i = 0; i < slices->len; i++)
    {
      const TestTraceSlice *slice = &g_array_index (slices, TestTraceSlice, i);

      if (!slice->first_run || slice->task_id == NULL || slice->parent_id == NULL)
        continue;
      if (!g_str_equal (slice->task_id, slice->parent_id) && g_hash_table_contains (with_slice, slice->parent_id))
        {
          if (!g_hash_table_contains (with_flow, slice->task_id))
            g_error ("task %s (“%s”) has no flow from its parent %s", slice->task_id, slice->name,
                     slice->parent_id);
        }
      else
        g_assert_false (g_hash_table_contains (with_flow, slice->task_id));
    }
  return n_flows;
}
