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
#include <unistd.h>

#include "perfmond-view-resources.h"

/* Groups of one process in /api/state, those with the most CPU (the page
 * shows five); hangs. */
#define MAX_VIEW_GROUPS 10
#define MAX_VIEW_HANGS 20

#define SECURITY_HEADERS \
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " \
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

struct _PerfmondView
{
  PerfmondDaemon     *daemon;
  PerfmondHttpServer *server;
  char               *token;
  char               *url_path;   /* the view-url file */
};

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

/* By CPU over the last interval, then in all. */
static int
compare_cpu (gconstpointer a,
             gconstpointer b)
{
  const ViewGroup *x = a, *y = b;
  guint64 xr = x->recent ? perfmon_group_stats_get_cpu_time (x->recent) : 0;
  guint64 yr = y->recent ? perfmon_group_stats_get_cpu_time (y->recent) : 0;
  guint64 xc = perfmon_group_stats_get_cpu_time (x->group);
  guint64 yc = perfmon_group_stats_get_cpu_time (y->group);

  if (xr != yr)
    return xr > yr ? -1 : 1;
  return xc > yc ? -1 : xc < yc;
}

/* A process: its totals, and over its last poll interval (recent_*, with
 * the interval) when the history has two snapshots. */
static void
add_process (JsonBuilder                  *builder,
             PerfmondDaemon               *daemon,
             const PerfmondMetricsProcess *process)
{
  PerfmonSnapshot *snapshot = process->snapshot;
  g_autoptr(PerfmonSnapshot) recent = perfmond_daemon_get_recent (daemon, process->pid);
  GPtrArray *all = perfmon_snapshot_get_groups (snapshot);
  g_autoptr(GArray) groups = g_array_sized_new (FALSE, TRUE, sizeof (ViewGroup), all->len);

  for (guint i = 0; i < all->len; i++)
    {
      ViewGroup group = { g_ptr_array_index (all, i), NULL };

      if (recent != NULL)
        group.recent = perfmon_snapshot_lookup (recent, perfmon_group_stats_get_id (group.group));
      g_array_append_val (groups, group);
    }
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
  if (recent != NULL)
    {
      json_builder_set_member_name (builder, "interval");
      json_builder_add_int_value (builder, perfmon_snapshot_get_interval (recent));
      json_builder_set_member_name (builder, "recent_cpu");
      json_builder_add_int_value (builder, (gint64) (perfmon_snapshot_get_user_time (recent) +
                                                     perfmon_snapshot_get_system_time (recent)));
    }
  json_builder_set_member_name (builder, "groups");
  json_builder_begin_array (builder);
  g_array_sort (groups, compare_cpu);
  for (guint i = 0; i < MIN (groups->len, MAX_VIEW_GROUPS); i++)
    {
      ViewGroup *view_group = &g_array_index (groups, ViewGroup, i);
      PerfmonGroupStats *group = view_group->group;

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "id");
      json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_id (group));
      json_builder_set_member_name (builder, "kind");
      json_builder_add_string_value (builder, perfmon_group_kind_to_string (perfmon_group_stats_get_kind (group)));
      json_builder_set_member_name (builder, "name");
      json_builder_add_string_value (builder, perfmon_group_stats_get_name (group));
      json_builder_set_member_name (builder, "cpu");
      json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_cpu_time (group));
      json_builder_set_member_name (builder, "blocked");
      json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_blocked_time (group));
      if (view_group->recent != NULL)
        {
          json_builder_set_member_name (builder, "recent_cpu");
          json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_cpu_time (view_group->recent));
          json_builder_set_member_name (builder, "recent_blocked");
          json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_blocked_time (view_group->recent));
        }
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);
}

/* GET /api/state: what the page draws. */
static void
serve_state (PerfmondHttpRequest *request,
             gpointer             user_data)
{
  PerfmondView *self = user_data;
  g_autoptr(GArray) processes = perfmond_daemon_get_processes (self->daemon);
  g_autoptr(GArray) hangs = perfmond_daemon_get_hangs (self->daemon, MAX_VIEW_HANGS);
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;
  char *text;
  gsize length;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "processes");
  json_builder_begin_array (builder);
  for (guint i = 0; i < processes->len; i++)
    {
      PerfmondMetricsProcess *process = &g_array_index (processes, PerfmondMetricsProcess, i);

      if (process->snapshot != NULL)
        add_process (builder, self->daemon, process);
    }
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "hangs");
  json_builder_begin_array (builder);
  for (guint i = 0; i < hangs->len; i++)
    {
      PerfmondHangInfo *hang = &g_array_index (hangs, PerfmondHangInfo, i);
      JsonNode *report = json_from_string (hang->json, NULL);

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
      json_builder_set_member_name (builder, "report");
      if (report != NULL)
        json_builder_add_value (builder, report);
      else
        json_builder_add_null_value (builder);
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
  self->server = perfmond_http_server_new (limits);
  perfmond_http_server_set_token (self->server, self->token);
  perfmond_http_server_add_handler (self->server, "/", PERFMOND_HTTP_NEEDS_TOKEN, serve_page, self);
  perfmond_http_server_add_handler (self->server, "/view.js", PERFMOND_HTTP_NEEDS_TOKEN, serve_asset, self);
  perfmond_http_server_add_handler (self->server, "/view.css", PERFMOND_HTTP_NEEDS_TOKEN, serve_asset, self);
  perfmond_http_server_add_handler (self->server, "/api/state", PERFMOND_HTTP_NEEDS_TOKEN, serve_state, self);
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
  if (self->token != NULL)
    memset (self->token, 0, strlen (self->token));
  g_free (self->token);
  g_free (self);
}
