/* perfmon-tool-demo.c: perfmon demo, perfmon at work on a janky program
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Starts what the demo needs and nothing the user did not have: a private
 * session bus when none runs, perfmond when the bus has none, and the demo
 * program (src/demo/perfmon-example --export). Shows 'perfmon top' on it a
 * few times, without redrawing so that it reads the same in a log, then
 * the report of one of its hangs, and names the add-on that caused it.
 * Everything it started is stopped before it returns.
 *
 * Binaries are found in the build tree when this perfmon runs from it,
 * else where they are installed; PERFMOND_PATH and PERFMON_DEMO_PROGRAM
 * override both.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

#define STEP_US            (100 * 1000)
#define START_TIMEOUT_US   (10 * G_USEC_PER_SEC)
#define HANG_TIMEOUT_US    (15 * G_USEC_PER_SEC)
#define STOP_TIMEOUT_US    (3 * G_USEC_PER_SEC)
#define POLL_INTERVAL_MS   "500"
#define TOP_INTERVAL_S     "2"

typedef struct
{
  char            *tmp_dir;
  GSubprocess     *bus_daemon;
  GSubprocess     *perfmond;
  GSubprocess     *program;
  GDBusConnection *bus;
  guint            program_pid;
} Demo;

static void
say (const char *format,
     ...) G_GNUC_PRINTF (1, 2);

static void
say (const char *format,
     ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_print ("\n==> %s\n", message);
}

static char *
find_binary (const char *env_name,
             const char *build_path,
             const char *installed_path,
             GError    **error)
{
  const char *from_env = g_getenv (env_name);
  g_autofree char *path = NULL;

  if (from_env != NULL && *from_env != '\0')
    path = g_strdup (from_env);
  else if (perfmon_tool_running_uninstalled ())
    path = g_build_filename (PERFMON_BUILD_ROOT, build_path, NULL);
  else
    path = g_strdup (installed_path);

  if (!g_file_test (path, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                   "%s is missing (set %s to the program to use)", path, env_name);
      return NULL;
    }
  return g_steal_pointer (&path);
}

/* Lets GSubprocess reap children and deliver their exits. */
static void
pause_a_moment (void)
{
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_usleep (STEP_US);
}

static gboolean
has_exited (GSubprocess *process)
{
  /* The identifier goes away once the child is reaped. */
  return process == NULL || g_subprocess_get_identifier (process) == NULL;
}

static void
on_child_exit (GObject      *source,
               GAsyncResult *result,
               gpointer      data)
{
  g_subprocess_wait_finish (G_SUBPROCESS (source), result, NULL);
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void
die_with_parent (gpointer data)
{
  pid_t parent = GPOINTER_TO_INT (data);

  /* Killed with SIGINT or SIGTERM, 'perfmon demo' cannot stop what it
   * started: the kernel then does. */
  prctl (PR_SET_PDEATHSIG, SIGTERM);
  if (getppid () != parent)
    _exit (1);
}

static GSubprocess *
spawn (GSubprocessLauncher *launcher,
       const char * const  *argv,
       GError             **error)
{
  GSubprocess *process;

  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, GINT_TO_POINTER (getpid ()), NULL);
  process = g_subprocess_launcher_spawnv (launcher, argv, error);

  if (process != NULL)
    g_subprocess_wait_async (process, NULL, on_child_exit, NULL);
  return process;
}

static void
stop_process (GSubprocess **process,
              const char   *what)
{
  gint64 give_up = g_get_monotonic_time () + STOP_TIMEOUT_US;

  if (*process == NULL)
    return;
  if (!has_exited (*process))
    {
      g_subprocess_send_signal (*process, SIGTERM);
      while (!has_exited (*process) && g_get_monotonic_time () < give_up)
        pause_a_moment ();
      if (!has_exited (*process))
        {
          perfmon_tool_error ("demo: %s did not stop on SIGTERM: killing it", what);
          g_subprocess_force_exit (*process);
          while (!has_exited (*process))
            pause_a_moment ();
        }
    }
  g_clear_object (process);
}

static void
demo_clear (Demo *demo)
{
  stop_process (&demo->program, "the demo program");
  stop_process (&demo->perfmond, "perfmond");
  g_clear_object (&demo->bus);
  stop_process (&demo->bus_daemon, "the private dbus-daemon");
  if (demo->tmp_dir != NULL)
    perfmon_tool_remove_tree (demo->tmp_dir);
  g_clear_pointer (&demo->tmp_dir, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Demo, demo_clear)

/* A session bus to use: the user's when there is one, else a private
 * dbus-daemon of our own, whose address our children inherit. */
static gboolean
connect_bus (Demo    *demo,
             GError **error)
{
  const char *address = g_getenv ("DBUS_SESSION_BUS_ADDRESS");
  g_autofree char *user_socket = g_build_filename (g_get_user_runtime_dir (), "bus", NULL);
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GDataInputStream) out = NULL;
  g_autofree char *line = NULL;
  const char * const argv[] = { "dbus-daemon", "--session", "--nofork", "--print-address=1", NULL };

  /* Without an address GDBus would try X11 autolaunch: only connect to a
   * bus we know is there. */
  if ((address != NULL && *address != '\0') || g_file_test (user_socket, G_FILE_TEST_EXISTS))
    {
      g_autoptr(GError) local_error = NULL;

      demo->bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &local_error);
      if (demo->bus != NULL)
        {
          say ("Using the session bus");
          return TRUE;
        }
      g_print ("perfmon demo: the session bus does not answer (%s): starting a private one\n",
               local_error->message);
    }

  say ("Starting a private session bus (dbus-daemon)");
  /* Its complaints about limits it may not raise only confuse. */
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  demo->bus_daemon = spawn (launcher, argv, error);
  if (demo->bus_daemon == NULL)
    return FALSE;

  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (demo->bus_daemon));
  line = g_data_input_stream_read_line_utf8 (out, NULL, NULL, error);
  if (line == NULL)
    {
      if (error != NULL && *error == NULL)
        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                             "dbus-daemon exited without giving its address");
      return FALSE;
    }
  g_strstrip (line);
  g_setenv ("DBUS_SESSION_BUS_ADDRESS", line, TRUE);

  demo->bus = g_dbus_connection_new_for_address_sync (line,
                                                      G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                      G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                      NULL, NULL, error);
  return demo->bus != NULL;
}

static gboolean
daemon_is_up (Demo    *demo,
              GError **error)
{
  g_autoptr(GVariant) reply = NULL;
  gboolean has_owner = FALSE;

  reply = g_dbus_connection_call_sync (demo->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "NameHasOwner",
                                       g_variant_new ("(s)", PERFMON_DAEMON_BUS_NAME),
                                       G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE,
                                       PERFMON_TOOL_CALL_TIMEOUT_MS, NULL, error);
  if (reply == NULL)
    return FALSE;
  g_variant_get (reply, "(b)", &has_owner);
  return has_owner;
}

static gboolean
start_daemon (Demo    *demo,
              GError **error)
{
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autofree char *perfmond = NULL;
  g_autofree char *pidfile = NULL;
  const char *installed = PERFMON_DAEMON_INSTALLED_PATH;
  gint64 give_up;

  if (daemon_is_up (demo, error))
    {
      say ("Using the perfmond already on the bus");
      return TRUE;
    }
  if (error != NULL && *error != NULL)
    return FALSE;

  perfmond = find_binary ("PERFMOND_PATH", "src/daemon/perfmond", installed, error);
  if (perfmond == NULL)
    return FALSE;

  say ("Starting perfmond (polling every %s ms)", POLL_INTERVAL_MS);
  /* Its own lock file: a perfmond on another bus (the user's) must not
   * keep this one from starting. */
  pidfile = g_build_filename (demo->tmp_dir, "perfmond.pid", NULL);
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  demo->perfmond = spawn (launcher,
                          (const char * const []) { perfmond, "--poll-interval", POLL_INTERVAL_MS,
                                                    "--pidfile", pidfile, NULL },
                          error);
  if (demo->perfmond == NULL)
    return FALSE;

  give_up = g_get_monotonic_time () + START_TIMEOUT_US;
  while (!daemon_is_up (demo, error))
    {
      if (error != NULL && *error != NULL)
        return FALSE;
      if (has_exited (demo->perfmond))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "perfmond exited at start (see above)");
          return FALSE;
        }
      if (g_get_monotonic_time () > give_up)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                       "perfmond did not take the name " PERFMON_DAEMON_BUS_NAME " within %d s",
                       (int) (START_TIMEOUT_US / G_USEC_PER_SEC));
          return FALSE;
        }
      pause_a_moment ();
    }
  return TRUE;
}

static gboolean
program_is_registered (Demo    *demo,
                       GError **error)
{
  g_autoptr(PerfmonDBusDaemon1) daemon = perfmon_tool_daemon_proxy (demo->bus, error);
  g_autoptr(GVariant) processes = NULL;
  GVariantIter iter;
  guint pid;

  if (daemon == NULL || !perfmon_dbus_daemon1_call_list_processes_sync (daemon, &processes, NULL, error))
    {
      perfmon_tool_explain_daemon_error (error);
      return FALSE;
    }
  g_variant_iter_init (&iter, processes);
  while (g_variant_iter_next (&iter, "(u&s&s&sx)", &pid, NULL, NULL, NULL, NULL))
    if (pid == demo->program_pid)
      return TRUE;
  return FALSE;
}

static gboolean
start_program (Demo    *demo,
               GError **error)
{
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  const char *installed = PERFMON_DEMO_INSTALLED_PATH;
  g_autofree char *program = NULL;
  g_autofree char *state_dir = NULL;
  const char *identifier;
  gint64 give_up;

  program = find_binary ("PERFMON_DEMO_PROGRAM", "src/demo/perfmon-example", installed, error);
  if (program == NULL)
    return FALSE;

  say ("Starting the demo program: two windows, three add-ons (a calm clock,\n"
       "    a CPU-hungry spell checker, a sync agent that now and then stalls\n"
       "    the loop for 200 to 600 ms)");
  /* Its table and alerts would interleave with ours; its errors still
   * show. */
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
  /* The demo's hang pings go to our temporary directory, not the user's
   * state directory. */
  state_dir = g_build_filename (demo->tmp_dir, "state", NULL);
  g_subprocess_launcher_setenv (launcher, "XDG_STATE_HOME", state_dir, TRUE);
  demo->program = spawn (launcher,
                         (const char * const []) { program, "--export", "--seconds", "120", NULL },
                         error);
  if (demo->program == NULL)
    return FALSE;
  /* NULL once the program has exited and been reaped, as one that cannot
   * start soon is: pid 0 never registers, and the loop below says so. */
  identifier = g_subprocess_get_identifier (demo->program);
  demo->program_pid = identifier != NULL ? (guint) g_ascii_strtoull (identifier, NULL, 10) : 0;

  give_up = g_get_monotonic_time () + START_TIMEOUT_US;
  while (!program_is_registered (demo, error))
    {
      if (error != NULL && *error != NULL)
        return FALSE;
      if (has_exited (demo->program))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "the demo program exited at start (see above)");
          return FALSE;
        }
      if (g_get_monotonic_time () > give_up)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                       "the demo program (pid %u) did not register with perfmond within %d s",
                       demo->program_pid, (int) (START_TIMEOUT_US / G_USEC_PER_SEC));
          return FALSE;
        }
      pause_a_moment ();
    }
  return TRUE;
}

/* The longest hang of the demo program, waiting for one if need be. On a
 * busy machine the spell checker's bursts can pass the threshold too; the
 * stalls are the longest. */
static char *
wait_for_hang (Demo    *demo,
               GError **error)
{
  gint64 give_up = g_get_monotonic_time () + HANG_TIMEOUT_US;

  for (;;)
    {
      g_autoptr(GVariant) hangs = NULL;
      GVariantIter iter;
      g_autofree char *longest = NULL;
      double longest_ms = -1;
      const char *id;
      double duration_ms;
      guint pid;

      hangs = perfmon_tool_list_hangs (demo->bus, error);
      if (hangs == NULL)
        return NULL;
      g_variant_iter_init (&iter, hangs);
      while (g_variant_iter_next (&iter, "(&su&sd&s)", &id, &pid, NULL, &duration_ms, NULL))
        if (pid == demo->program_pid && duration_ms > longest_ms)
          {
            g_free (longest);
            longest = g_strdup (id);
            longest_ms = duration_ms;
          }
      if (longest != NULL)
        return g_steal_pointer (&longest);

      if (g_get_monotonic_time () > give_up)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                       "perfmond collected no hang of the demo program within %d s",
                       (int) (HANG_TIMEOUT_US / G_USEC_PER_SEC));
          return NULL;
        }
      pause_a_moment ();
    }
}

/* The add-on the report blames: the demo annotates its stalls, and its
 * labels carry the add-on id too. */
static char *
guilty_addon (Demo       *demo,
              const char *hang_id)
{
  g_autofree char *text = perfmon_tool_get_hang (demo->bus, hang_id, NULL);
  g_autoptr(PerfmonHangReport) report = NULL;
  const char *addon;
  const char * const *labels;

  if (text == NULL)
    return NULL;
  report = perfmon_hang_report_new_from_json (text, -1, NULL);
  if (report == NULL)
    return NULL;

  addon = perfmon_hang_report_get_annotation (report, "StallingAddon");
  if (addon != NULL)
    return g_strdup (addon);

  labels = perfmon_hang_report_get_pseudo_stack (report);
  for (gsize i = 0; labels != NULL && labels[i] != NULL; i++)
    if (g_str_has_prefix (labels[i], "add-on "))
      return g_strdup (labels[i] + strlen ("add-on "));
  return NULL;
}

static int
run_tool (int       (*tool) (int argc, char **argv),
          const char *const *args)
{
  g_auto(GStrv) owned = g_strdupv ((char **) args);
  guint n = g_strv_length (owned);
  /* GOption drops the arguments it parsed from the array it is given: it
   * gets a copy of the pointers, and the strings are freed from here. */
  g_autofree char **argv = g_memdup2 (owned, sizeof (char *) * (n + 1));

  return tool ((int) n, argv);
}

int
perfmon_tool_demo (int    argc,
                   char **argv)
{
  int refreshes = 3;
  const GOptionEntry entries[] = {
    { "refreshes", 'n', 0, G_OPTION_ARG_INT, &refreshes, "How many tables 'perfmon top' prints (default 3)", "N" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new (NULL);
  g_auto(Demo) demo = { NULL, };
  g_autoptr(GError) error = NULL;
  g_autofree char *pid_text = NULL;
  g_autofree char *count_text = NULL;
  g_autofree char *hang_id = NULL;
  g_autofree char *addon = NULL;
  int status;

  g_option_context_set_summary (context,
                                "Shows perfmon at work: runs a demo GLib program with two windows and\n"
                                "three add-ons (one calm, one CPU-hungry, one that stalls the loop now\n"
                                "and then) under perfmond, on a private session bus when none runs,\n"
                                "prints 'perfmon top' a few times, then a hang report that names the\n"
                                "guilty add-on. Stops everything it started. Takes about 10 s.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;
  if (argc != 1)
    return perfmon_tool_usage_error ("unexpected argument '%s'", argv[1]);
  if (refreshes < 1 || refreshes > 100)
    return perfmon_tool_usage_error ("--refreshes must be in [1, 100], got %d", refreshes);

  demo.tmp_dir = g_dir_make_tmp ("perfmon-demo-XXXXXX", &error);
  if (demo.tmp_dir == NULL ||
      !connect_bus (&demo, &error) ||
      !start_daemon (&demo, &error) ||
      !start_program (&demo, &error))
    {
      perfmon_tool_error ("demo: %s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  pid_text = g_strdup_printf ("%u", demo.program_pid);
  count_text = g_strdup_printf ("%d", refreshes);
  say ("perfmon top --pid %s --count %s --interval %s", pid_text, count_text, TOP_INTERVAL_S);
  status = run_tool (perfmon_tool_top,
                     (const char * const []) { "top", "--pid", pid_text, "--count", count_text,
                                               "--interval", TOP_INTERVAL_S, NULL });
  if (status != PERFMON_TOOL_EXIT_OK)
    return status;

  hang_id = wait_for_hang (&demo, &error);
  if (hang_id == NULL)
    {
      perfmon_tool_error ("demo: %s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }
  say ("perfmon hangs show %s", hang_id);
  status = run_tool (perfmon_tool_hangs, (const char * const []) { "hangs", "show", hang_id, NULL });
  if (status != PERFMON_TOOL_EXIT_OK)
    return status;

  addon = guilty_addon (&demo, hang_id);
  if (addon != NULL)
    say ("The loop stalled in add-on %s: its label and annotation are in the report.", addon);
  else
    say ("This hang carries no add-on label: the loop stalled outside the add-ons.");

  say ("Done: stopping the demo program%s%s", demo.perfmond != NULL ? ", perfmond" : "",
       demo.bus_daemon != NULL ? " and the private bus" : "");
  return PERFMON_TOOL_EXIT_OK;
}
