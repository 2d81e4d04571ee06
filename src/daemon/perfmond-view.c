/* perfmond-view.c: the about:performance page, served by perfmond on loopback
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every request needs the token of $XDG_RUNTIME_DIR/perfmon/http-token
 * (perfmond_http_load_token()), as a query parameter (the page and its
 * assets: the URL that `perfmon view` opens) or as "Authorization: Bearer"
 * (the page's fetches of /api/state). The page is static (a GResource:
 * nothing is read from disk, nothing is fetched from the network, the
 * Content-Security-Policy forbids it); /api/state is the newest snapshot of
 * each process with what it did over its last poll interval (the
 * difference of the two newest snapshots of the history) and the newest
 * hangs, as JSON, and changes nothing. The page draws sparklines from the
 * states it has seen.
 *
 * The URL without the token, and perfmond's pid, are written to
 * $XDG_RUNTIME_DIR/perfmon/view-url (0600, removed when perfmond stops),
 * for `perfmon view`.
 */
#include "perfmond-view.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfmon-frame-function.h"
#include "perfmon-names.h"
#include "perfmond-view-resources.h"

/* Groups of one process in /api/state: the top ones by CPU over the last
 * interval, the others summed; hangs listed, and hangs symbolized and
 * merged into each process's flame graph (the newest of those perfmond
 * keeps); sparkline points per process and top group; nodes of one
 * process's flame graph; frames of one hang. */
#define MAX_VIEW_GROUPS 5
#define MAX_VIEW_HANGS 20
#define MAX_FLAME_HANGS 200
#define SPARK_POINTS 60
#define GROUP_SPARK_POINTS 30
#define MAX_FLAME_NODES 400
#define MAX_HANG_FRAMES 128
/* Time the symbolizer may spend loading one module's tables; it runs in
 * perfmond's main thread, never in a monitored process. */
#define SYMBOLIZE_BUDGET_MS 500
/* Time one request may spend symbolizing in all; the hangs it could not
 * name are named again by the next requests. */
#define SYMBOLIZE_REQUEST_BUDGET_US (1 * G_USEC_PER_SEC)
/* A task log bigger than this is not converted (413): the conversion runs
 * in perfmond's main thread. */
#define MAX_TRACE_LOG_BYTES (16 * 1024 * 1024)

#define SECURITY_HEADERS \
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " \
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* What the page has seen of one process: its sparkline points (CPU share
 * over each poll interval, in 1/1000, oldest first), those of its top
 * groups, and the difference of its two newest snapshots, computed once
 * per poll (not per request). */
typedef struct
{
  gint64           timestamp;     /* of the newest snapshot seen */
  PerfmonSnapshot *recent;        /* nullable */
  guint16          spark[SPARK_POINTS];
  guint            n_spark;
  GHashTable      *group_sparks;  /* group id (guint64 *) -> GroupSpark *; the top groups only */
  char            *trace_path;    /* its task log (perfmon run --trace), NULL if none */
  gboolean         seen;          /* in the last request's list */
} ProcessView;

typedef struct
{
  guint16 points[GROUP_SPARK_POINTS];
  guint   n;
} GroupSpark;

/* A hang, symbolized once: its frames innermost first, as perfmon hangs
 * prints them, and the function of each (what the flame graph merges). */
typedef struct
{
  guint      pid;
  GPtrArray *frames;      /* of char * */
  GPtrArray *functions;   /* of char *, same length */
  char      *addon;       /* the add-on it was caught in (the report's "Addon" annotation), nullable */
  guint      n_symbolized;
  gboolean   complete;    /* FALSE: a frame was left unnamed for lack of time */
  gboolean   seen;
} HangView;

struct _PerfmondView
{
  PerfmondDaemon     *daemon;
  PerfmondHttpServer *server;
  char               *token;
  char               *url_path;   /* the view-url file */
  PerfmonSymbolizer  *symbolizer; /* created on the first hang or task log */
  GHashTable         *processes;  /* pid -> ProcessView * */
  GHashTable         *hangs;      /* hang id -> HangView * */
  gint64              symbolize_until;  /* of the request under way */
};

/* The symbolizer of hangs and task logs, created on first use. */
static PerfmonSymbolizer *
view_symbolizer (PerfmondView *self)
{
  if (self->symbolizer == NULL)
    {
      self->symbolizer = perfmon_symbolizer_new ();
      perfmon_symbolizer_set_time_budget (self->symbolizer, SYMBOLIZE_BUDGET_MS);
    }
  return self->symbolizer;
}

static void
process_view_free (gpointer data)
{
  ProcessView *view = data;

  g_clear_object (&view->recent);
  g_clear_pointer (&view->group_sparks, g_hash_table_unref);
  g_free (view->trace_path);
  g_free (view);
}

static void
hang_view_free (gpointer data)
{
  HangView *view = data;

  g_ptr_array_unref (view->frames);
  g_ptr_array_unref (view->functions);
  g_free (view->addon);
  g_free (view);
}

static void
add_security_headers (PerfmondHttpRequest *request)
{
  perfmond_http_request_add_header (request, "Content-Security-Policy", SECURITY_HEADERS);
  perfmond_http_request_add_header (request, "Referrer-Policy", "no-referrer");
  perfmond_http_request_add_header (request, "X-Frame-Options", "DENY");
  perfmond_http_request_add_header (request, "Cross-Origin-Resource-Policy", "same-origin");
}

static GBytes *
lookup_asset (const char *name)
{
  g_autofree char *path = g_strconcat ("/org/perfmon/view/", name, NULL);

  return g_resource_lookup_data (perfmond_view_get_resource (), path, G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
}

static void
serve_page (PerfmondHttpRequest *request,
            gpointer             user_data)
{
  PerfmondView *self = user_data;
  g_autoptr(GBytes) page = lookup_asset ("index.html");
  g_autoptr(GString) text = g_string_new_len (g_bytes_get_data (page, NULL), (gssize) g_bytes_get_size (page));

  /* The assets need the token too; it is base64url, nothing to escape. */
  g_string_replace (text, "@TOKEN@", self->token, 0);
  add_security_headers (request);
  perfmond_http_request_respond (request, SOUP_STATUS_OK, "text/html; charset=utf-8",
                                 g_string_free_to_bytes (g_steal_pointer (&text)));
}

static void
serve_asset (PerfmondHttpRequest *request,
             gpointer             user_data)
{
  const char *path = perfmond_http_request_get_path (request);
  GBytes *data = lookup_asset (path + 1);

  add_security_headers (request);
  if (data == NULL)
    {
      perfmond_http_request_respond (request, SOUP_STATUS_NOT_FOUND, NULL, NULL);
      return;
    }
  perfmond_http_request_respond (request, SOUP_STATUS_OK,
                                 g_str_has_suffix (path, ".js") ? "text/javascript; charset=utf-8"
                                                                : "text/css; charset=utf-8",
                                 data);
}

typedef struct
{
  PerfmonGroupStats *group;
  PerfmonGroupStats *recent;   /* nullable */
} ViewGroup;

/* A group's CPU time, exact and sampled (an add-on's code outside its
 * compartments: see perfmon-js-sampler.c), for the ranking: an add-on
 * whose CPU runs in promise jobs is in the top by what it costs, as in
 * perfmon top. */
static guint64
ranked_cpu (PerfmonGroupStats *group)
{
  return perfmon_group_stats_get_cpu_time (group) + perfmon_group_stats_get_sampled_cpu_time (group);
}

/* By CPU over the last interval, then in all. */
static int
compare_cpu (gconstpointer a,
             gconstpointer b)
{
  const ViewGroup *x = a, *y = b;
  guint64 xr = x->recent ? ranked_cpu (x->recent) : 0;
  guint64 yr = y->recent ? ranked_cpu (y->recent) : 0;
  guint64 xc = ranked_cpu (x->group);
  guint64 yc = ranked_cpu (y->group);

  if (xr != yr)
    return xr > yr ? -1 : 1;
  return xc > yc ? -1 : xc < yc;
}

static guint16
permille (guint64 part,
          gint64  whole)
{
  return whole > 0 ? (guint16) MIN (G_MAXUINT16, part * 1000 / (guint64) whole) : 0;
}

static void
spark_push (guint16 *points,
            guint   *n,
            guint    size,
            guint16  value)
{
  if (*n == size)
    memmove (points, points + 1, (size - 1) * sizeof *points);
  else
    (*n)++;
  points[*n - 1] = value;
}

static void
add_spark (JsonBuilder   *builder,
           const guint16 *points,
           guint          n)
{
  json_builder_set_member_name (builder, "spark");
  json_builder_begin_array (builder);
  for (guint i = 0; i < n; i++)
    json_builder_add_int_value (builder, points[i]);
  json_builder_end_array (builder);
}

/* The task log a process of `perfmon run --trace FILE` writes (FILE, or
 * FILE.PID for the processes it starts, perfmon-preload-trace.c): found in
 * its environment, once. Only an absolute path. */
static char *
find_trace_path (guint pid)
{
  g_autofree char *environ_path = g_strdup_printf ("/proc/%u/environ", pid);
  g_autofree char *contents = NULL;
  gsize length;

  if (!g_file_get_contents (environ_path, &contents, &length, NULL))
    return NULL;
  for (gsize i = 0; i < length; i += strlen (contents + i) + 1)
    {
      const char *entry = contents + i;

      if (g_str_has_prefix (entry, "PERFMON_RUN_TRACE=") && g_path_is_absolute (entry + 18))
        {
          g_autofree char *with_pid = g_strdup_printf ("%s.%u", entry + 18, pid);

          /* The command writes FILE, the others FILE.PID. */
          if (g_file_test (with_pid, G_FILE_TEST_IS_REGULAR))
            return g_steal_pointer (&with_pid);
          return g_strdup (entry + 18);
        }
    }
  return NULL;
}

static ProcessView *
lookup_process_view (PerfmondView *self,
                     guint         pid)
{
  ProcessView *view = g_hash_table_lookup (self->processes, GUINT_TO_POINTER (pid));

  if (view == NULL)
    {
      view = g_new0 (ProcessView, 1);
      view->timestamp = G_MININT64;
      view->group_sparks = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
      view->trace_path = find_trace_path (pid);
      g_hash_table_insert (self->processes, GUINT_TO_POINTER (pid), view);
    }
  return view;
}

/* A process: its totals; over its last poll interval (recent_*, with the
 * interval) when the history has two snapshots; its top groups, the
 * others summed; its sparklines. */
static void
add_process (PerfmondView                 *self,
             JsonBuilder                  *builder,
             const PerfmondMetricsProcess *process,
             GHashTable                   *flames)
{
  PerfmonSnapshot *snapshot = process->snapshot;
  ProcessView *view = lookup_process_view (self, process->pid);
  GPtrArray *all = perfmon_snapshot_get_groups (snapshot);
  g_autoptr(GArray) groups = g_array_sized_new (FALSE, TRUE, sizeof (ViewGroup), all->len);
  gboolean new_interval = FALSE;
  guint64 other_cpu = 0, other_blocked = 0, other_recent_cpu = 0, other_recent_blocked = 0;
  gint64 interval = 0;
  GHashTable *kept_sparks;
  JsonNode *flame;

  view->seen = TRUE;
  if (perfmon_snapshot_get_timestamp (snapshot) != view->timestamp)
    {
      g_clear_object (&view->recent);
      view->recent = perfmond_daemon_get_recent (self->daemon, process->pid);
      view->timestamp = perfmon_snapshot_get_timestamp (snapshot);
      new_interval = view->recent != NULL;
    }
  if (view->recent != NULL)
    interval = perfmon_snapshot_get_interval (view->recent);
  if (new_interval)
    spark_push (view->spark, &view->n_spark, SPARK_POINTS,
                permille (perfmon_snapshot_get_user_time (view->recent) +
                          perfmon_snapshot_get_system_time (view->recent), interval));

  for (guint i = 0; i < all->len; i++)
    {
      ViewGroup group = { g_ptr_array_index (all, i), NULL };

      if (view->recent != NULL)
        group.recent = perfmon_snapshot_lookup (view->recent, perfmon_group_stats_get_id (group.group));
      g_array_append_val (groups, group);
    }
  g_array_sort (groups, compare_cpu);

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "pid");
  json_builder_add_int_value (builder, process->pid);
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, process->process_name);
  json_builder_set_member_name (builder, "timestamp");
  json_builder_add_int_value (builder, perfmon_snapshot_get_timestamp (snapshot));
  json_builder_set_member_name (builder, "cpu");
  json_builder_add_int_value (builder, (gint64) (perfmon_snapshot_get_user_time (snapshot) +
                                                 perfmon_snapshot_get_system_time (snapshot)));
  if (view->recent != NULL)
    {
      json_builder_set_member_name (builder, "interval");
      json_builder_add_int_value (builder, interval);
      json_builder_set_member_name (builder, "recent_cpu");
      json_builder_add_int_value (builder, (gint64) (perfmon_snapshot_get_user_time (view->recent) +
                                                     perfmon_snapshot_get_system_time (view->recent)));
    }
  add_spark (builder, view->spark, view->n_spark);
  json_builder_set_member_name (builder, "n_groups");
  json_builder_add_int_value (builder, groups->len);
  json_builder_set_member_name (builder, "trace");
  json_builder_add_boolean_value (builder, view->trace_path != NULL);

  /* The sparklines of the groups in the top now; those of groups that left
   * it are dropped. */
  kept_sparks = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  json_builder_set_member_name (builder, "groups");
  json_builder_begin_array (builder);
  for (guint i = 0; i < groups->len; i++)
    {
      ViewGroup *view_group = &g_array_index (groups, ViewGroup, i);
      PerfmonGroupStats *group = view_group->group;
      guint64 id = perfmon_group_stats_get_id (group);
      const guint64 *durations;
      gsize n_durations;
      GroupSpark *spark;
      gpointer key;

      if (i >= MAX_VIEW_GROUPS)
        {
          other_cpu += perfmon_group_stats_get_cpu_time (group);
          other_blocked += perfmon_group_stats_get_blocked_time (group);
          if (view_group->recent != NULL)
            {
              other_recent_cpu += perfmon_group_stats_get_cpu_time (view_group->recent);
              other_recent_blocked += perfmon_group_stats_get_blocked_time (view_group->recent);
            }
          continue;
        }

      if (!g_hash_table_steal_extended (view->group_sparks, &id, &key, (gpointer *) &spark))
        {
          key = g_memdup2 (&id, sizeof id);
          spark = g_new0 (GroupSpark, 1);
        }
      if (new_interval)
        spark_push (spark->points, &spark->n, GROUP_SPARK_POINTS,
                    permille (view_group->recent != NULL ? perfmon_group_stats_get_cpu_time (view_group->recent) : 0,
                              interval));
      g_hash_table_insert (kept_sparks, key, spark);

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "id");
      json_builder_add_int_value (builder, (gint64) id);
      json_builder_set_member_name (builder, "kind");
      json_builder_add_string_value (builder, perfmon_group_kind_to_string (perfmon_group_stats_get_kind (group)));
      json_builder_set_member_name (builder, "name");
      json_builder_add_string_value (builder, perfmon_group_stats_get_name (group));
      json_builder_set_member_name (builder, "cpu");
      json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_cpu_time (group));
      json_builder_set_member_name (builder, "blocked");
      json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_blocked_time (group));
      /* An add-on's CPU time estimated by sampling: apart from "cpu",
       * which is exact. */
      if (perfmon_group_stats_get_sampled_cpu_time (group) != 0)
        {
          json_builder_set_member_name (builder, "sampled_cpu");
          json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_sampled_cpu_time (group));
        }
      if (view_group->recent != NULL)
        {
          json_builder_set_member_name (builder, "recent_cpu");
          json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_cpu_time (view_group->recent));
          json_builder_set_member_name (builder, "recent_blocked");
          json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_blocked_time (view_group->recent));
          if (perfmon_group_stats_get_sampled_cpu_time (view_group->recent) != 0)
            {
              json_builder_set_member_name (builder, "recent_sampled_cpu");
              json_builder_add_int_value (builder,
                                          (gint64) perfmon_group_stats_get_sampled_cpu_time (view_group->recent));
            }
        }
      /* The exceedance histogram since the group began: iterations over
       * 1, 2, 4 … 512 ms. */
      durations = perfmon_group_stats_get_durations (group, &n_durations);
      json_builder_set_member_name (builder, "durations");
      json_builder_begin_array (builder);
      for (gsize d = 0; d < n_durations; d++)
        json_builder_add_int_value (builder, (gint64) durations[d]);
      json_builder_end_array (builder);
      add_spark (builder, spark->points, spark->n);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
  g_hash_table_unref (view->group_sparks);
  view->group_sparks = kept_sparks;

  if (groups->len > MAX_VIEW_GROUPS)
    {
      json_builder_set_member_name (builder, "others");
      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "n");
      json_builder_add_int_value (builder, groups->len - MAX_VIEW_GROUPS);
      json_builder_set_member_name (builder, "cpu");
      json_builder_add_int_value (builder, (gint64) other_cpu);
      json_builder_set_member_name (builder, "blocked");
      json_builder_add_int_value (builder, (gint64) other_blocked);
      if (view->recent != NULL)
        {
          json_builder_set_member_name (builder, "recent_cpu");
          json_builder_add_int_value (builder, (gint64) other_recent_cpu);
          json_builder_set_member_name (builder, "recent_blocked");
          json_builder_add_int_value (builder, (gint64) other_recent_blocked);
        }
      json_builder_end_object (builder);
    }
  flame = g_hash_table_lookup (flames, GUINT_TO_POINTER (process->pid));
  if (flame != NULL)
    {
      json_builder_set_member_name (builder, "flame");
      json_builder_add_value (builder, json_node_ref (flame));
    }
  json_builder_end_object (builder);
}

/* --- hangs: symbolized off every watched thread, merged by function ---- */

/* Reads a report (already checked by the daemon's reader, so only the
 * shape matters here) and names its native frames: with the report's
 * "symbols" where the monitored process found them, else with perfmond's
 * symbolizer (Breakpad offsets, module name and id from "modules"). */
static HangView *
hang_view_new (PerfmondView           *self,
               const PerfmondHangInfo *hang)
{
  HangView *view = g_new0 (HangView, 1);
  g_autoptr(JsonNode) root = json_from_string (hang->json, NULL);
  JsonObject *report = root != NULL && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  JsonArray *stack = NULL, *symbols = NULL, *modules = NULL;
  guint n = 0;
  int innermost_native = -1;

  view->pid = hang->pid;
  view->complete = TRUE;
  view->frames = g_ptr_array_new_with_free_func (g_free);
  view->functions = g_ptr_array_new_with_free_func (g_free);
  if (report == NULL)
    return view;
  /* A hang caught in an add-on's code names it in its annotations,
   * [["Addon", ID], …] (the hang monitor, from the label "[add-on ID]
   * SITE"). */
  if (json_object_has_member (report, "annotations") &&
      JSON_NODE_HOLDS_ARRAY (json_object_get_member (report, "annotations")))
    {
      JsonArray *annotations = json_object_get_array_member (report, "annotations");

      for (guint i = 0; i < json_array_get_length (annotations) && view->addon == NULL; i++)
        {
          JsonNode *pair = json_array_get_element (annotations, i);
          JsonArray *kv = JSON_NODE_HOLDS_ARRAY (pair) ? json_node_get_array (pair) : NULL;

          if (kv != NULL && json_array_get_length (kv) == 2 &&
              g_strcmp0 (json_array_get_string_element (kv, 0), "Addon") == 0 &&
              json_array_get_string_element (kv, 1) != NULL)
            view->addon = g_strdup (json_array_get_string_element (kv, 1));
        }
    }
  if (json_object_has_member (report, "stack") && JSON_NODE_HOLDS_ARRAY (json_object_get_member (report, "stack")))
    stack = json_object_get_array_member (report, "stack");
  if (json_object_has_member (report, "symbols") && JSON_NODE_HOLDS_ARRAY (json_object_get_member (report, "symbols")))
    symbols = json_object_get_array_member (report, "symbols");
  if (json_object_has_member (report, "modules") && JSON_NODE_HOLDS_ARRAY (json_object_get_member (report, "modules")))
    modules = json_object_get_array_member (report, "modules");
  if (stack == NULL)
    return view;
  n = json_array_get_length (stack);
  for (guint i = 0; i < n; i++)
    if (JSON_NODE_HOLDS_ARRAY (json_array_get_element (stack, i)))
      innermost_native = (int) i;

  /* Innermost first; the outermost frames go if the stack is too deep. */
  for (int i = (int) n - 1; i >= 0 && view->frames->len < MAX_HANG_FRAMES; i--)
    {
      JsonNode *frame = json_array_get_element (stack, (guint) i);
      JsonNode *symbol_node = symbols != NULL && (guint) i < json_array_get_length (symbols)
                              ? json_array_get_element (symbols, (guint) i) : NULL;
      const char *symbol = symbol_node != NULL && JSON_NODE_HOLDS_VALUE (symbol_node) &&
                           json_node_get_value_type (symbol_node) == G_TYPE_STRING
                           ? json_node_get_string (symbol_node) : NULL;
      JsonArray *native;
      gint64 module_index;
      const char *hex, *module_name = NULL, *module_id = NULL;
      guint64 offset, function_offset = 0;
      g_autofree char *function = NULL;

      if (JSON_NODE_HOLDS_VALUE (frame) && json_node_get_value_type (frame) == G_TYPE_STRING)
        {
          /* A script frame or a label: its text. */
          g_ptr_array_add (view->frames, g_strdup (json_node_get_string (frame)));
          g_ptr_array_add (view->functions, perfmon_frame_function (json_node_get_string (frame)));
          view->n_symbolized++;
          continue;
        }
      if (!JSON_NODE_HOLDS_ARRAY (frame) || json_array_get_length (native = json_node_get_array (frame)) != 2)
        continue;
      module_index = json_array_get_int_element (native, 0);
      hex = json_array_get_string_element (native, 1);
      offset = hex != NULL ? g_ascii_strtoull (hex, NULL, 16) : 0;
      if (module_index >= 0 && modules != NULL && module_index < json_array_get_length (modules) &&
          JSON_NODE_HOLDS_ARRAY (json_array_get_element (modules, (guint) module_index)))
        {
          JsonArray *module = json_array_get_array_element (modules, (guint) module_index);

          if (json_array_get_length (module) >= 2)
            {
              module_name = json_array_get_string_element (module, 0);
              module_id = json_array_get_string_element (module, 1);
            }
        }

      if (symbol != NULL)
        {
          const char *plus = strrchr (symbol, '+');

          function = plus != NULL && plus != symbol && g_str_has_prefix (plus, "+0x")
                     ? g_strndup (symbol, (gsize) (plus - symbol)) : g_strdup (symbol);
          function_offset = plus != NULL ? g_ascii_strtoull (plus + 1, NULL, 16) : 0;
        }
      else if (module_name != NULL && g_get_monotonic_time () > self->symbolize_until)
        view->complete = FALSE;
      else if (module_name != NULL)
        {
          function = perfmon_symbolizer_lookup (view_symbolizer (self), module_name, module_id, offset,
                                                i != innermost_native, &function_offset);
        }
      if (function != NULL)
        view->n_symbolized++;
      g_ptr_array_add (view->frames, perfmon_format_native_frame (module_name, offset, function, function_offset));
      /* By function, as `perfmon hangs show` merges them: "lib.so (func)";
       * unnamed, by module; outside every module, by address. */
      g_ptr_array_add (view->functions,
                       perfmon_frame_function (g_ptr_array_index (view->frames, view->frames->len - 1)));
    }
  return view;
}

/* The flame graph: [name, hangs, [children…]], children by first
 * appearance (the page sorts them). */
typedef struct _FlameNode FlameNode;
struct _FlameNode
{
  const char *name;       /* a HangView's */
  guint       count;
  GPtrArray  *children;   /* of FlameNode, nullable */
};

static void
flame_node_free (gpointer data)
{
  FlameNode *node = data;

  g_clear_pointer (&node->children, g_ptr_array_unref);
  g_free (node);
}

static void
flame_add (FlameNode *root,
           HangView  *hang,
           guint     *n_nodes)
{
  FlameNode *node = root;

  root->count++;
  /* Outermost first: the functions are innermost first. */
  for (guint i = hang->functions->len; i-- > 0;)
    {
      const char *name = g_ptr_array_index (hang->functions, i);
      FlameNode *child = NULL;

      for (guint c = 0; node->children != NULL && c < node->children->len && child == NULL; c++)
        if (g_str_equal (((FlameNode *) g_ptr_array_index (node->children, c))->name, name))
          child = g_ptr_array_index (node->children, c);
      if (child == NULL)
        {
          if (*n_nodes >= MAX_FLAME_NODES)
            return;
          (*n_nodes)++;
          child = g_new0 (FlameNode, 1);
          child->name = name;
          if (node->children == NULL)
            node->children = g_ptr_array_new_with_free_func (flame_node_free);
          g_ptr_array_add (node->children, child);
        }
      child->count++;
      node = child;
    }
}

static void
flame_build (JsonBuilder *builder,
             FlameNode   *node)
{
  json_builder_begin_array (builder);
  json_builder_add_string_value (builder, node->name);
  json_builder_add_int_value (builder, node->count);
  json_builder_begin_array (builder);
  for (guint i = 0; node->children != NULL && i < node->children->len; i++)
    flame_build (builder, g_ptr_array_index (node->children, i));
  json_builder_end_array (builder);
  json_builder_end_array (builder);
}

/* Symbolizes the hangs not seen yet (each once), forgets those perfmond
 * no longer keeps, and merges each process's hangs into its flame graph:
 * pid -> JsonNode. */
static GHashTable *
update_hangs (PerfmondView *self,
              GArray       *hangs)
{
  g_autoptr(GHashTable) roots = g_hash_table_new_full (NULL, NULL, NULL, flame_node_free);
  g_autoptr(GHashTable) n_nodes = g_hash_table_new (NULL, NULL);
  GHashTable *flames = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) json_node_unref);
  GHashTableIter iter;
  gpointer key, value;

  self->symbolize_until = g_get_monotonic_time () + SYMBOLIZE_REQUEST_BUDGET_US;
  g_hash_table_iter_init (&iter, self->hangs);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    ((HangView *) value)->seen = FALSE;
  for (guint i = 0; i < hangs->len; i++)
    {
      PerfmondHangInfo *hang = &g_array_index (hangs, PerfmondHangInfo, i);
      HangView *view = g_hash_table_lookup (self->hangs, hang->id);
      FlameNode *root;
      guint nodes;

      if (view == NULL || (!view->complete && g_get_monotonic_time () < self->symbolize_until))
        {
          view = hang_view_new (self, hang);
          g_hash_table_insert (self->hangs, g_strdup (hang->id), view);
        }
      view->seen = TRUE;
      if (view->functions->len == 0)
        continue;
      root = g_hash_table_lookup (roots, GUINT_TO_POINTER (hang->pid));
      if (root == NULL)
        {
          root = g_new0 (FlameNode, 1);
          root->name = "all";
          g_hash_table_insert (roots, GUINT_TO_POINTER (hang->pid), root);
        }
      nodes = GPOINTER_TO_UINT (g_hash_table_lookup (n_nodes, GUINT_TO_POINTER (hang->pid)));
      flame_add (root, view, &nodes);
      g_hash_table_insert (n_nodes, GUINT_TO_POINTER (hang->pid), GUINT_TO_POINTER (nodes));
    }
  g_hash_table_iter_init (&iter, self->hangs);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    if (!((HangView *) value)->seen)
      g_hash_table_iter_remove (&iter);

  g_hash_table_iter_init (&iter, roots);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      g_autoptr(JsonBuilder) builder = json_builder_new ();

      flame_build (builder, value);
      g_hash_table_insert (flames, key, json_builder_get_root (builder));
    }
  return flames;
}

/* GET /api/state: what the page draws. */
static void
serve_state (PerfmondHttpRequest *request,
             gpointer             user_data)
{
  PerfmondView *self = user_data;
  g_autoptr(GArray) processes = perfmond_daemon_get_processes (self->daemon);
  g_autoptr(GArray) hangs = perfmond_daemon_get_hangs (self->daemon, MAX_FLAME_HANGS);
  g_autoptr(GHashTable) flames = update_hangs (self, hangs);
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;
  GHashTableIter iter;
  gpointer value;
  char *text;
  gsize length;

  g_hash_table_iter_init (&iter, self->processes);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    ((ProcessView *) value)->seen = FALSE;
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "processes");
  json_builder_begin_array (builder);
  for (guint i = 0; i < processes->len; i++)
    {
      PerfmondMetricsProcess *process = &g_array_index (processes, PerfmondMetricsProcess, i);

      if (process->snapshot != NULL)
        add_process (self, builder, process, flames);
    }
  json_builder_end_array (builder);
  /* Processes gone: their views go. */
  g_hash_table_iter_init (&iter, self->processes);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    if (!((ProcessView *) value)->seen)
      g_hash_table_iter_remove (&iter);

  json_builder_set_member_name (builder, "hangs");
  json_builder_begin_array (builder);
  for (guint i = 0; i < MIN (hangs->len, MAX_VIEW_HANGS); i++)
    {
      PerfmondHangInfo *hang = &g_array_index (hangs, PerfmondHangInfo, i);
      HangView *view = g_hash_table_lookup (self->hangs, hang->id);

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "id");
      json_builder_add_string_value (builder, hang->id);
      json_builder_set_member_name (builder, "pid");
      json_builder_add_int_value (builder, hang->pid);
      json_builder_set_member_name (builder, "process");
      json_builder_add_string_value (builder, hang->process_name);
      json_builder_set_member_name (builder, "duration_ms");
      json_builder_add_double_value (builder, hang->duration_ms);
      json_builder_set_member_name (builder, "runnable");
      json_builder_add_string_value (builder, hang->runnable_name);
      if (view->addon != NULL)
        {
          json_builder_set_member_name (builder, "addon");
          json_builder_add_string_value (builder, view->addon);
        }
      /* Innermost first, named. */
      json_builder_set_member_name (builder, "frames");
      json_builder_begin_array (builder);
      for (guint f = 0; f < view->frames->len; f++)
        json_builder_add_string_value (builder, g_ptr_array_index (view->frames, f));
      json_builder_end_array (builder);
      json_builder_set_member_name (builder, "symbolized");
      json_builder_add_int_value (builder, view->n_symbolized);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);

  root = json_builder_get_root (builder);
  json_generator_set_root (generator, root);
  text = json_generator_to_data (generator, &length);
  add_security_headers (request);
  perfmond_http_request_respond (request, SOUP_STATUS_OK, "application/json",
                                 g_bytes_new_take (text, length));
}

/* GET /api/trace?pid=N: the task log of a process run with `perfmon run
 * --trace`, as a Chrome trace (a download). Reads the log, changes
 * nothing; a log over MAX_TRACE_LOG_BYTES is refused. */
static void
serve_trace (PerfmondHttpRequest *request,
             gpointer             user_data)
{
  PerfmondView *self = user_data;
  const char *pid_text = perfmond_http_request_get_query (request, "pid");
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *disposition = NULL;
  ProcessView *view;
  guint64 pid = 0;
  GStatBuf st;
  char *trace;

  add_security_headers (request);
  if (pid_text == NULL || !g_ascii_string_to_unsigned (pid_text, 10, 1, G_MAXINT, &pid, NULL))
    {
      perfmond_http_request_respond (request, SOUP_STATUS_BAD_REQUEST, "text/plain; charset=utf-8",
                                     g_bytes_new_static ("pid: a monitored process's pid, 1 to 2147483647\n", 49));
      return;
    }
  view = g_hash_table_lookup (self->processes, GUINT_TO_POINTER ((guint) pid));
  if (view == NULL)
    {
      /* Not drawn yet (no /api/state since it came): a process perfmond
       * monitors only. */
      g_autoptr(GArray) processes = perfmond_daemon_get_processes (self->daemon);

      for (guint i = 0; i < processes->len && view == NULL; i++)
        if (g_array_index (processes, PerfmondMetricsProcess, i).pid == pid)
          view = lookup_process_view (self, (guint) pid);
    }
  if (view == NULL || view->trace_path == NULL)
    {
      static const char text[] = "no task log for this pid (processes of perfmon run --trace have one)\n";

      perfmond_http_request_respond (request, SOUP_STATUS_NOT_FOUND, "text/plain; charset=utf-8",
                                     g_bytes_new_static (text, sizeof text - 1));
      return;
    }
  /* Only a regular file of ours, not too big to convert here. */
  if (g_stat (view->trace_path, &st) != 0 || !S_ISREG (st.st_mode) || st.st_uid != getuid ())
    {
      static const char text[] = "the task log is not there yet\n";

      perfmond_http_request_respond (request, SOUP_STATUS_NOT_FOUND, "text/plain; charset=utf-8",
                                     g_bytes_new_static (text, sizeof text - 1));
      return;
    }
  if (st.st_size > MAX_TRACE_LOG_BYTES)
    {
      g_autofree char *text = g_strdup_printf ("the task log has %" G_GINT64_FORMAT " bytes, more than the %d served\n",
                                               (gint64) st.st_size, MAX_TRACE_LOG_BYTES);
      gsize size = strlen (text);

      perfmond_http_request_respond (request, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "text/plain; charset=utf-8",
                                     g_bytes_new_take (g_steal_pointer (&text), size));
      return;
    }
  log = perfmon_task_log_new_from_file (view->trace_path, &error);
  if (log == NULL)
    {
      g_autofree char *text = g_strdup_printf ("the task log cannot be read: %s\n", error->message);
      gsize size = strlen (text);

      perfmond_http_request_respond (request, SOUP_STATUS_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8",
                                     g_bytes_new_take (g_steal_pointer (&text), size));
      return;
    }
  /* Its static callbacks' "module+0xOFF" named as perfmon tasks export
   * names them, with the hangs' symbolizer (per-module cache and time
   * budget), within one request's budget: past it, names stay as the
   * program wrote them. */
  trace = perfmon_names_readable_chrome_trace (view_symbolizer (self), log, NULL,
                                               g_get_monotonic_time () + SYMBOLIZE_REQUEST_BUDGET_US);
  disposition = g_strdup_printf ("attachment; filename=\"perfmon-tasks-%u.json\"", (guint) pid);
  perfmond_http_request_add_header (request, "Content-Disposition", disposition);
  perfmond_http_request_respond (request, SOUP_STATUS_OK, "application/json",
                                 g_bytes_new_take (trace, strlen (trace)));
}

PerfmondView *
perfmond_view_new (PerfmondDaemon           *daemon,
                   const PerfmondHttpLimits *limits,
                   GSocketAddress           *address,
                   GError                  **error)
{
  g_autofree char *token = perfmond_http_load_token (error);
  g_autofree char *url = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *dir = NULL;
  PerfmondView *self;

  if (token == NULL)
    return NULL;

  self = g_new0 (PerfmondView, 1);
  self->daemon = g_object_ref (daemon);
  self->token = g_steal_pointer (&token);
  self->processes = g_hash_table_new_full (NULL, NULL, NULL, process_view_free);
  self->hangs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, hang_view_free);
  self->server = perfmond_http_server_new (limits);
  perfmond_http_server_set_token (self->server, self->token);
  perfmond_http_server_add_handler (self->server, "/", PERFMOND_HTTP_NEEDS_TOKEN, serve_page, self);
  perfmond_http_server_add_handler (self->server, "/view.js", PERFMOND_HTTP_NEEDS_TOKEN, serve_asset, self);
  perfmond_http_server_add_handler (self->server, "/view.css", PERFMOND_HTTP_NEEDS_TOKEN, serve_asset, self);
  perfmond_http_server_add_handler (self->server, "/api/state", PERFMOND_HTTP_NEEDS_TOKEN, serve_state, self);
  perfmond_http_server_add_handler (self->server, "/api/trace", PERFMOND_HTTP_NEEDS_TOKEN, serve_trace, self);
  if (!perfmond_http_server_listen (self->server, address, error))
    {
      perfmond_view_free (self);
      return NULL;
    }

  dir = g_build_filename (g_get_user_runtime_dir (), "perfmon", NULL);
  self->url_path = g_build_filename (dir, "view-url", NULL);
  url = perfmond_http_server_get_url (self->server, "/");
  /* The URL, and our pid: `perfmon view` takes the URL only from the
   * perfmond that owns the bus name (not from a file a killed one left). */
  contents = g_strdup_printf ("%s\n%ld\n", url, (long) getpid ());
  if (!g_file_set_contents_full (self->url_path, contents, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600, error))
    {
      g_clear_pointer (&self->url_path, g_free);
      perfmond_view_free (self);
      return NULL;
    }
  /* The URL without its token: the token is never logged. */
  g_info ("serves about:performance at %s (perfmon view opens it)", url);
  return self;
}

void
perfmond_view_free (PerfmondView *self)
{
  if (self == NULL)
    return;
  if (self->url_path != NULL)
    g_unlink (self->url_path);
  g_free (self->url_path);
  if (self->server != NULL)
    g_object_run_dispose (G_OBJECT (self->server));
  g_clear_object (&self->server);
  g_clear_object (&self->daemon);
  g_clear_object (&self->symbolizer);
  g_clear_pointer (&self->processes, g_hash_table_unref);
  g_clear_pointer (&self->hangs, g_hash_table_unref);
  if (self->token != NULL)
    memset (self->token, 0, strlen (self->token));
  g_free (self->token);
  g_free (self);
}
