/* perfmond.c: the session daemon's command line, single instance and bus name
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Exit status:
 *   0  stopped normally (SIGTERM/SIGINT, lost its bus name, the bus went away)
 *   1  could not start (no session bus, cannot export its object)
 *   2  the command line was wrong
 *   3  another perfmond is already running (its pid file is locked, or it
 *      owns org.perfmon.Daemon1 on this bus)
 */
#include <bsd/libutil.h>
#include <errno.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <stdio.h>

#include "perfmond-daemon.h"

#define DAEMON_NAME "org.perfmon.Daemon1"

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
  .max_processes = 256,
  .max_groups = 10000,
  .max_hangs = 1000,
  .max_signals = 20,
};

static const RangeOption range_options[] = {
  { "poll-interval", &config.poll_interval_ms, 100, 3600000, " ms" },
  { "call-timeout", &config.call_timeout_ms, 10, 600000, " ms" },
  { "history", &config.history_s, 0, 86400, " s" },
  { "max-history-mib", &config.max_history_mib, 1, 65536, " MiB" },
  { "max-processes", &config.max_processes, 1, 4096, "" },
  { "max-groups", &config.max_groups, 1, 1000000, "" },
  { "max-hangs", &config.max_hangs, 0, 100000, "" },
  { "max-signals", &config.max_signals, 1, 100000, "" },
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
  GMainLoop *loop;
  int        status;
  gboolean   acquired;
} State;

static void
stop (State *state,
      int    status)
{
  state->status = status;
  g_main_loop_quit (state->loop);
}

static void
on_name_acquired (GDBusConnection *connection,
                  const char      *name,
                  gpointer         user_data)
{
  State *state = user_data;

  state->acquired = TRUE;
  g_debug ("owns %s (poll every %u ms, %u s of history, at most %u processes)",
             name, config.poll_interval_ms, config.history_s, config.max_processes);
}

static void
on_name_lost (GDBusConnection *connection,
              const char      *name,
              gpointer         user_data)
{
  State *state = user_data;

  if (connection == NULL || g_dbus_connection_is_closed (connection))
    {
      g_message ("the session bus went away, exiting");
      stop (state, EXIT_OK);
    }
  else if (!state->acquired)
    {
      g_printerr ("perfmond: another perfmond already owns %s on this bus\n", name);
      stop (state, EXIT_ALREADY_RUNNING);
    }
  else
    {
      g_message ("lost the name %s, exiting", name);
      stop (state, EXIT_OK);
    }
}

static gboolean
on_unix_signal (gpointer user_data)
{
  State *state = user_data;

  g_debug ("asked to stop, exiting");
  stop (state, EXIT_OK);
  return G_SOURCE_REMOVE;
}

/* The lock that makes perfmond a single instance per user, even when
 * started by hand with another bus address at hand. NULL with *status set
 * when it must not run. */
static struct pidfh *
lock_pidfile (const char *path,
              int        *status)
{
  g_autofree char *default_path = NULL;
  struct pidfh *pidfile;
  pid_t other = -1;

  if (path == NULL)
    {
      const char *runtime_dir = g_getenv ("XDG_RUNTIME_DIR");
      g_autofree char *dir = NULL;

      if (runtime_dir == NULL || !g_path_is_absolute (runtime_dir))
        runtime_dir = g_get_user_runtime_dir ();
      dir = g_build_filename (runtime_dir, "perfmon", NULL);
      if (g_mkdir_with_parents (dir, 0700) != 0)
        {
          int saved_errno = errno;

          g_printerr ("perfmond: cannot create %s: %s\n", dir, g_strerror (saved_errno));
          *status = EXIT_FAILED;
          return NULL;
        }
      path = default_path = g_build_filename (dir, "perfmond.pid", NULL);
    }

  pidfile = pidfile_open (path, 0600, &other);
  if (pidfile == NULL)
    {
      int saved_errno = errno;

      if (saved_errno == EEXIST)
        {
          g_printerr ("perfmond: already running as pid %ld (pid file %s)\n", (long) other, path);
          *status = EXIT_ALREADY_RUNNING;
        }
      else
        {
          g_printerr ("perfmond: cannot open the pid file %s: %s\n", path, g_strerror (saved_errno));
          *status = EXIT_FAILED;
        }
      return NULL;
    }

  if (pidfile_write (pidfile) != 0)
    {
      int saved_errno = errno;

      g_printerr ("perfmond: cannot write the pid file %s: %s\n", path, g_strerror (saved_errno));
      pidfile_remove (pidfile);
      *status = EXIT_FAILED;
      return NULL;
    }

  return pidfile;
}

int
main (int    argc,
      char **argv)
{
  g_autofree char *pidfile_path = NULL;
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(PerfmondDaemon) daemon = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  gboolean version = FALSE;
  struct pidfh *pidfile;
  State state = { 0, };
  guint owner_id;
  int status = EXIT_OK;
  const GOptionEntry entries[] = {
    { "poll-interval", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Poll each process every MS milliseconds (100…3600000, default 1000)", "MS" },
    { "call-timeout", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Give up on a call to a process after MS milliseconds (10…600000, default 5000)", "MS" },
    { "history", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Keep SECONDS of snapshots per process (0…86400, default 600)", "SECONDS" },
    { "max-history-mib", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Keep at most MIB MiB of snapshots in all (1…65536, default 256)", "MIB" },
    { "max-processes", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Monitor at most N processes (1…4096, default 256)", "N" },
    { "max-groups", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Reject snapshots of more than N groups (1…1000000, default 10000)", "N" },
    { "max-hangs", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Keep the newest N hang reports (0…100000, default 1000)", "N" },
    { "max-signals", 0, 0, G_OPTION_ARG_CALLBACK, parse_range_option,
      "Take at most N Hang and Alert signals a second from one process (1…100000, default 20)", "N" },
    { "pidfile", 0, 0, G_OPTION_ARG_FILENAME, &pidfile_path,
      "The lock file that keeps perfmond single (default $XDG_RUNTIME_DIR/perfmon/perfmond.pid)", "PATH" },
    { "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL },
    { NULL }
  };

  setlocale (LC_ALL, "");
  g_set_prgname ("perfmond");

  context = g_option_context_new (NULL);
  g_option_context_set_summary (context,
                                "The perfmon session daemon: polls the processes that export "
                                "org.perfmon.Monitor1,\nkeeps their history, merges them and "
                                "collects their hangs, as org.perfmon.Daemon1.\n"
                                "Usually started by D-Bus activation or systemd --user.");
  g_option_context_set_description (context,
                                    "Exit status: 0 stopped normally, 1 could not start, "
                                    "2 bad command line, 3 already running.\n");
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

  pidfile = lock_pidfile (pidfile_path, &status);
  if (pidfile == NULL)
    return status;

  connection = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  if (connection == NULL)
    {
      g_printerr ("perfmond: cannot connect to the session bus: %s\n", error->message);
      pidfile_remove (pidfile);
      return EXIT_FAILED;
    }
  /* Leave through the main loop (and remove the pid file) instead of
   * GDBus's exit(1) when the bus goes away. */
  g_dbus_connection_set_exit_on_close (connection, FALSE);

  daemon = perfmond_daemon_new (&config);
  if (!perfmond_daemon_export (daemon, connection, &error))
    {
      g_printerr ("perfmond: cannot export /org/perfmon/Daemon1: %s\n", error->message);
      pidfile_remove (pidfile);
      return EXIT_FAILED;
    }

  loop = g_main_loop_new (NULL, FALSE);
  state.loop = loop;
  state.status = EXIT_OK;

  /* Not queued and not replaceable: one daemon per bus, and one that
   * loses its name has nothing left to do. */
  owner_id = g_bus_own_name_on_connection (connection, DAEMON_NAME,
                                           G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE,
                                           on_name_acquired, on_name_lost, &state, NULL);
  g_unix_signal_add (SIGTERM, on_unix_signal, &state);
  g_unix_signal_add (SIGINT, on_unix_signal, &state);

  g_main_loop_run (loop);

  g_bus_unown_name (owner_id);
  perfmond_daemon_unexport (daemon);
  if (!g_dbus_connection_is_closed (connection))
    g_dbus_connection_flush_sync (connection, NULL, NULL);
  pidfile_remove (pidfile);

  return state.status;
}
