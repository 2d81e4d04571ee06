/* perfmond.c: the session daemon's command line, single instance and bus name
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Exit status:
 *   0  stopped on request (SIGTERM/SIGINT)
 *   1  could not start (no session bus, cannot export its object), or lost
 *      its bus or its bus name: a failure, so that a supervisor
 *      (Restart=on-failure) starts it again; a bus that closes after it
 *      served it (every logout) is said at debug level only
 *   2  the command line was wrong
 *   3  another perfmond owns org.perfmon.Daemon1 on this bus
 *
 * One perfmond per bus, and only the bus name says so: a perfmond on a
 * private bus (dbus-run-session, GTestDBus) runs beside the one of the
 * desktop session. The optional pid file is a record, not a lock.
 */
#include <errno.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <stdio.h>
#include <unistd.h>

#include <libsoup/soup.h>
#include <perfmon.h>

#include "perfmond-daemon.h"
#include "perfmond-log.h"
#include "perfmond-http.h"
#include "perfmond-view.h"
#include "perfmon-heap-trim.h"

enum
{
  EXIT_OK = 0,
  EXIT_FAILED = 1,
  EXIT_USAGE = 2,
  EXIT_ALREADY_RUNNING = 3,
};

typedef struct
{
  const char *long_name;
  guint      *value;
  guint       min;
  guint       max;
  const char *unit;
} RangeOption;

static PerfmondConfig config = {
  .poll_interval_ms = 1000,
  .call_timeout_ms = 5000,
  .history_s = 600,
  .max_history_mib = 256,
  .max_aggregate_mib = 16,
  .max_processes = 256,
  .max_groups = 10000,
  .max_hangs = 1000,
  .max_signals = 20,
  .pings_rescan_s = 60,
};

static PerfmondHttpLimits http_limits = PERFMOND_HTTP_DEFAULT_LIMITS;

static const RangeOption range_options[] = {
  { "poll-interval", &config.poll_interval_ms, 100, 3600000, " ms" },
  { "call-timeout", &config.call_timeout_ms, 10, 600000, " ms" },
  { "history", &config.history_s, 0, 86400, " s" },
  { "max-history-mib", &config.max_history_mib, 1, 65536, " MiB" },
  /* Under D-Bus's 64 MiB array limit, with room for the message. */
  { "max-aggregate-mib", &config.max_aggregate_mib, 1, 48, " MiB" },
  { "max-processes", &config.max_processes, 1, 4096, "" },
  { "max-groups", &config.max_groups, 1, 1000000, "" },
  { "max-hangs", &config.max_hangs, 0, 100000, "" },
  { "max-signals", &config.max_signals, 1, 100000, "" },
  { "pings-rescan", &config.pings_rescan_s, 1, 86400, " s" },
  { "http-max-connections", &http_limits.max_connections, 1, 4096, "" },
  { "http-header-timeout", &http_limits.header_timeout_s, 1, 3600, " s" },
  { "http-idle-timeout", &http_limits.idle_timeout_s, 1, 86400, " s" },
};

static gboolean
parse_range_option (const char  *option_name,
                    const char  *value,
                    gpointer     data,
                    GError     **error)
{
  const char *name = option_name + 2;  /* after "--" */

  for (guint i = 0; i < G_N_ELEMENTS (range_options); i++)
    {
      const RangeOption *option = &range_options[i];
      guint64 parsed;

      if (strcmp (name, option->long_name) != 0)
        continue;

      if (!g_ascii_string_to_unsigned (value, 10, option->min, option->max, &parsed, NULL))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "--%s: expected an integer in [%u, %u]%s, got “%s”",
                       option->long_name, option->min, option->max, option->unit, value);
          return FALSE;
        }
      *option->value = (guint) parsed;
      return TRUE;
    }

  g_assert_not_reached ();
}

typedef struct
{
  GMainLoop  *loop;
  int         status;
  gboolean    acquired;
  const char *pidfile;        /* nullable */
  gboolean    pidfile_written;
  PerfmondDaemon *daemon;
  GSocketAddress *view_address;  /* nullable: --no-view */
  PerfmondView   *view;
} State;

static void
stop (State *state,
      int    status)
{
  state->status = status;
  g_main_loop_quit (state->loop);
}

/* Writes our pid to @path (atomically), for whoever wants to find us;
 * FALSE with a message when it cannot. */
static gboolean
write_pidfile (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *text = g_strdup_printf ("%ld\n", (long) getpid ());

  if (!g_file_set_contents_full (path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &error))
    {
      g_printerr ("perfmond: cannot write the pid file: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

static void
on_name_acquired (GDBusConnection *connection,
                  const char      *name,
                  gpointer         user_data)
{
  State *state = user_data;

  state->acquired = TRUE;
  /* Written once the name is ours: a perfmond that finds it taken must
   * not overwrite the record of the one that has it. */
  if (state->pidfile != NULL)
    {
      if (!write_pidfile (state->pidfile))
        {
          stop (state, EXIT_FAILED);
          return;
        }
      state->pidfile_written = TRUE;
    }
  /* Once the name is ours too: a perfmond that finds it taken must not
   * replace the view-url file of the one that has it. */
  if (state->view_address != NULL)
    {
      g_autoptr(GError) error = NULL;

      state->view = perfmond_view_new (state->daemon, &http_limits, state->view_address, &error);
      if (state->view == NULL)
        {
          g_printerr ("perfmond: cannot serve the about:performance page: %s\n", error->message);
          stop (state, EXIT_FAILED);
          return;
        }
    }
  g_debug ("owns %s (poll every %u ms, %u s of history, at most %u processes)",
             name, config.poll_interval_ms, config.history_s, config.max_processes);
}

static void
on_name_lost (GDBusConnection *connection,
              const char      *name,
              gpointer         user_data)
{
  State *state = user_data;

  if ((connection == NULL || g_dbus_connection_is_closed (connection)) && state->acquired)
    {
      /* The bus of the session it served went away: at every logout,
       * which deserves no warning in the journal. Still exit status 1, so
       * that Restart=on-failure brings perfmond back if the bus does. */
      g_debug ("the session bus closed (the session ended?), exiting with a failure status");
      stop (state, EXIT_FAILED);
    }
  else if (connection == NULL || g_dbus_connection_is_closed (connection))
    {
      g_warning ("lost the session bus, exiting with a failure status");
      stop (state, EXIT_FAILED);
    }
  else if (!state->acquired)
    {
      g_printerr ("perfmond: another perfmond already owns %s on this bus\n", name);
      stop (state, EXIT_ALREADY_RUNNING);
    }
  else
    {
      g_warning ("lost the name %s, exiting with a failure status", name);
      stop (state, EXIT_FAILED);
    }
}

/* GET /metrics: perfmond_daemon_write_metrics(), in OpenMetrics when the
 * scraper asks for it. */
static void
serve_metrics (PerfmondHttpRequest *request,
               gpointer             user_data)
{
  PerfmondDaemon *daemon = user_data;
  GString *text = g_string_new (NULL);
  SoupMessageHeaders *headers = perfmond_http_request_get_headers (request);
  PerfmondMetricsFormat format = perfmond_metrics_negotiate (soup_message_headers_get_list (headers, "Accept"));

  perfmond_daemon_write_metrics (daemon, format, text);
  perfmond_http_request_respond (request, SOUP_STATUS_OK, perfmond_metrics_content_type (format),
                                 g_string_free_to_bytes (text));
  perfmond_http_request_add_header (request, "Vary", "Accept");
}

static gboolean
on_unix_signal (gpointer user_data)
{
  State *state = user_data;

  g_debug ("asked to stop, exiting");
  stop (state, EXIT_OK);
  return G_SOURCE_REMOVE;
}

int
main (int    argc,
      char **argv)
{
  g_autofree char *pidfile_path = NULL;
  g_autofree char *metrics_address = NULL;
  g_autofree char *upload_url = NULL;
  g_auto(GStrv) pings_dirs = NULL;
  g_autoptr(GSocketAddress) metrics_socket_address = NULL;
  g_autoptr(PerfmondHttpServer) metrics_server = NULL;
  gboolean allow_remote = FALSE;
  gboolean no_view = FALSE;
  g_autofree char *view_address = NULL;
  g_autoptr(GSocketAddress) view_socket_address = NULL;
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(PerfmondDaemon) daemon = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  gboolean version = FALSE;
  State state = { 0, };
  guint owner_id;
  const GOptionEntry entries[] = {
    { "poll-interval", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Poll each process every MS milliseconds (100…3600000, default 1000)", "MS" },
    { "call-timeout", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Give up on a call to a process after MS milliseconds (10…600000, default 5000)", "MS" },
    { "history", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Keep SECONDS of snapshots per process (0…86400, default 600)", "SECONDS" },
    { "max-history-mib", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Keep at most MIB MiB of snapshots in all (1…65536, default 256)", "MIB" },
    { "max-aggregate-mib", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Answer GetAggregate in at most MIB MiB, leaving out the groups with the least CPU (1…48, default 16)", "MIB" },
    { "max-processes", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Monitor at most N processes (1…4096, default 256)", "N" },
    { "max-groups", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Reject snapshots of more than N groups (1…1000000, default 10000)", "N" },
    { "max-hangs", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Keep the newest N hang reports (0…100000, default 1000)", "N" },
    { "max-signals", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Take at most N Hang and Alert signals a second from one process (1…100000, default 20; Ping signals have a budget of their own)", "N" },
    { "pidfile", 0, 0, G_OPTION_ARG_FILENAME, &pidfile_path,
      "Write the daemon's pid to PATH (a record, not a lock: the bus name keeps one perfmond per bus)", "PATH" },
    { "metrics-address", 0, 0, G_OPTION_ARG_STRING, &metrics_address,
      "Serve Prometheus metrics at http://ADDRESS/metrics: PORT (on 127.0.0.1) or IP:PORT (off by default)",
      "ADDRESS" },
    { "allow-remote", 0, 0, G_OPTION_ARG_NONE, &allow_remote,
      "Allow --metrics-address or --view-address on an address other than loopback (then /metrics needs the token too)",
      NULL },
    { "view-address", 0, 0, G_OPTION_ARG_STRING, &view_address,
      "Serve the about:performance page at http://ADDRESS/: PORT (on 127.0.0.1) or IP:PORT (default: a free port on 127.0.0.1)",
      "ADDRESS" },
    { "no-view", 0, 0, G_OPTION_ARG_NONE, &no_view, "Do not serve the about:performance page", NULL },
    { "http-max-connections", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Keep at most N HTTP connections open (1…4096, default 64)", "N" },
    { "http-header-timeout", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Close an HTTP connection whose request header takes more than SECONDS (1…3600, default 10)", "SECONDS" },
    { "http-idle-timeout", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Close an idle HTTP connection after SECONDS (1…86400, default 60)", "SECONDS" },
    { "upload-url", 0, 0, G_OPTION_ARG_STRING, &upload_url,
      "Send the processes' pings to the telemetry server at URL (http or https; off by default)", "URL" },
    { "pings-dir", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &pings_dirs,
      "Also take pings from DIR (repeatable; $XDG_STATE_HOME/perfmon/pings always)", "DIR" },
    { "pings-rescan", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Look for pings not yet sent every SECONDS (1…86400, default 60)", "SECONDS" },
    { "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL },
    { NULL }
  };

  /* Before any thread: what a peer's big message or a big snapshot took
   * goes back once freed (doc/perfmond.md, "Memory"). */
  _perfmon_heap_map_big_blocks ();
  setlocale (LC_ALL, "");
  g_set_prgname ("perfmond");

  /* Hangs and warnings with their MESSAGE_ID, in the journal. */
  g_log_set_writer_func (perfmond_log_writer, NULL, NULL);
  context = g_option_context_new (NULL);
  g_option_context_set_summary (context,
                                "The perfmon session daemon: polls the processes that export "
                                "org.perfmon.Monitor1,\nkeeps their history, merges them and "
                                "collects their hangs, as org.perfmon.Daemon1.\n"
                                "Usually started by D-Bus activation or systemd --user.");
  g_option_context_set_description (context,
                                    "Exit status: 0 stopped on request, 1 could not start or lost "
                                    "its bus, 2 bad command line,\n3 another perfmond owns the name "
                                    "on this bus.\n");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      g_printerr ("perfmond: %s\nTry “perfmond --help”.\n", error->message);
      return EXIT_USAGE;
    }
  if (argc > 1)
    {
      g_printerr ("perfmond: unexpected argument “%s”\nTry “perfmond --help”.\n", argv[1]);
      return EXIT_USAGE;
    }
  if (version)
    {
      g_print ("perfmond %s\n", PERFMOND_VERSION);
      return EXIT_OK;
    }


  if (metrics_address != NULL)
    {
      metrics_socket_address = perfmond_http_parse_address ("metrics-address", metrics_address, &error);
      if (metrics_socket_address == NULL)
        {
          g_printerr ("perfmond: %s\nTry “perfmond --help”.\n", error->message);
          return EXIT_USAGE;
        }
      if (!g_inet_address_get_is_loopback (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (metrics_socket_address))) &&
          !allow_remote)
        {
          g_printerr ("perfmond: --metrics-address: %s is not a loopback address: anyone who can reach it "
                      "would read the metrics; add --allow-remote if that is what you want\n"
                      "Try “perfmond --help”.\n", metrics_address);
          return EXIT_USAGE;
        }
    }

  if (!no_view)
    {
      if (view_address != NULL)
        view_socket_address = perfmond_http_parse_address ("view-address", view_address, &error);
      else
        {
          g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);

          view_socket_address = g_inet_socket_address_new (loopback, 0);
        }
      if (view_socket_address == NULL)
        {
          g_printerr ("perfmond: %s\nTry “perfmond --help”.\n", error->message);
          return EXIT_USAGE;
        }
      if (!g_inet_address_get_is_loopback (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (view_socket_address))) &&
          !allow_remote)
        {
          g_printerr ("perfmond: --view-address: %s is not a loopback address; add --allow-remote if "
                      "that is what you want\nTry “perfmond --help”.\n", view_address);
          return EXIT_USAGE;
        }
    }

  if (upload_url != NULL)
    {
      g_autoptr(GUri) uri = g_uri_parse (upload_url, G_URI_FLAGS_NONE, NULL);

      if (uri == NULL || (g_strcmp0 (g_uri_get_scheme (uri), "http") != 0 &&
                          g_strcmp0 (g_uri_get_scheme (uri), "https") != 0) ||
          g_uri_get_host (uri) == NULL || g_uri_get_query (uri) != NULL)
        {
          g_printerr ("perfmond: --upload-url: expected an http or https URL without a query, got “%.*s”\n"
                      "Try “perfmond --help”.\n", (int) MIN (strlen (upload_url), 64), upload_url);
          return EXIT_USAGE;
        }
      config.upload_url = upload_url;
    }
  config.pings_dirs = (const char * const *) pings_dirs;

  connection = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  if (connection == NULL)
    {
      g_printerr ("perfmond: cannot connect to the session bus: %s\n", error->message);
      return EXIT_FAILED;
    }
  /* Leave through the main loop (and remove the pid file) instead of
   * GDBus's exit(1) when the bus goes away; the status is a failure then
   * too. */
  g_dbus_connection_set_exit_on_close (connection, FALSE);

  daemon = perfmond_daemon_new (&config);
  if (!perfmond_daemon_export (daemon, connection, &error))
    {
      g_printerr ("perfmond: cannot export " PERFMON_DAEMON_OBJECT_PATH ": %s\n", error->message);
      return EXIT_FAILED;
    }

  if (metrics_socket_address != NULL)
    {
      g_autofree char *url = NULL;

      metrics_server = perfmond_http_server_new (&http_limits);
      /* On loopback, /metrics is open to the local users (as
       * node_exporter's); elsewhere it needs the token as the page does
       * (Prometheus: authorization: credentials_file). */
      if (!g_inet_address_get_is_loopback (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (metrics_socket_address))))
        {
          g_autofree char *token = perfmond_http_load_token (&error);

          if (token == NULL)
            {
              g_printerr ("perfmond: cannot make the HTTP token: %s\n", error->message);
              perfmond_daemon_unexport (daemon);
              return EXIT_FAILED;
            }
          perfmond_http_server_set_token (metrics_server, token);
          perfmond_http_server_add_handler (metrics_server, "/metrics", PERFMOND_HTTP_NEEDS_TOKEN, serve_metrics, daemon);
        }
      else
        perfmond_http_server_add_handler (metrics_server, "/metrics", PERFMOND_HTTP_PUBLIC, serve_metrics, daemon);
      if (!perfmond_http_server_listen (metrics_server, metrics_socket_address, &error))
        {
          g_printerr ("perfmond: cannot serve metrics at %s: %s\n", metrics_address, error->message);
          perfmond_daemon_unexport (daemon);
          return EXIT_FAILED;
        }
      url = perfmond_http_server_get_url (metrics_server, "/metrics");
      if (!perfmond_http_server_is_loopback (metrics_server))
        g_warning ("serves metrics on %s, not only on loopback (--allow-remote): anyone who can reach "
                   "this port and has the token of $XDG_RUNTIME_DIR/perfmon/http-token reads them",
                   metrics_address);
      g_message ("serves metrics at %s", url);
    }

  loop = g_main_loop_new (NULL, FALSE);
  state.loop = loop;
  state.status = EXIT_OK;
  state.pidfile = pidfile_path;
  state.daemon = daemon;
  state.view_address = view_socket_address;

  /* Not queued and not replaceable: one daemon per bus, and one that
   * loses its name has nothing left to do. */
  owner_id = g_bus_own_name_on_connection (connection, PERFMON_DAEMON_BUS_NAME,
                                           G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE,
                                           on_name_acquired, on_name_lost, &state, NULL);
  g_unix_signal_add (SIGTERM, on_unix_signal, &state);
  g_unix_signal_add (SIGINT, on_unix_signal, &state);

  g_main_loop_run (loop);

  g_bus_unown_name (owner_id);
  if (metrics_server != NULL)
    g_object_run_dispose (G_OBJECT (metrics_server));
  g_clear_pointer (&state.view, perfmond_view_free);
  perfmond_daemon_unexport (daemon);
  if (!g_dbus_connection_is_closed (connection))
    g_dbus_connection_flush_sync (connection, NULL, NULL);
  if (state.pidfile_written)
    g_unlink (pidfile_path);

  return state.status;
}
