/* test-daemon.c: perfmond on a bus of its own, with monitored processes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each test starts a GTestDBus session bus, perfmond (PERFMOND) with the
 * options it needs, and monitored processes (MONITORED_PROCESS, see
 * monitored-process.c), and talks to perfmond as a client would: through
 * its D-Bus interface only. Waits have generous deadlines and assert what
 * happened, not how fast.
 */
#include <gio/gio.h>
#include <perfmon.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <utime.h>

#include "perfmon-test-dirs.h"
#include "perfmon-test-utils.h"
#include "perfmon-test-tsan.h"

/* The public names (perfmon-export.h), shorter. */
#define DAEMON_NAME  PERFMON_DAEMON_BUS_NAME
#define DAEMON_PATH  PERFMON_DAEMON_OBJECT_PATH
#define DAEMON_IFACE PERFMON_DAEMON_INTERFACE
#define DEADLINE_S 30

/* XDG_RUNTIME_DIR of the daemons (GTestDBus unsets it in the test). */
static char *runtime_dir;

typedef struct
{
  GTestDBus       *bus;
  char            *tmp_dir;
  GDBusConnection *connection;
  GSubprocess     *daemon;
  GPtrArray       *children;    /* GSubprocess * */
  GPtrArray       *signals;     /* GVariant * (signal name, parameters) */
  guint            signal_id;
} Fixture;

static void
on_daemon_signal (GDBusConnection *connection,
                  const char      *sender,
                  const char      *path,
                  const char      *interface,
                  const char      *name,
                  GVariant        *parameters,
                  gpointer         user_data)
{
  Fixture *fixture = user_data;

  g_ptr_array_add (fixture->signals, g_variant_ref_sink (g_variant_new ("(s@*)", name, parameters)));
}

static guint
count_signals (Fixture    *fixture,
               const char *name)
{
  guint n = 0;

  for (guint i = 0; i < fixture->signals->len; i++)
    {
      const char *signal_name;

      g_variant_get_child (g_ptr_array_index (fixture->signals, i), 0, "&s", &signal_name);
      n += g_str_equal (signal_name, name);
    }
  return n;
}

typedef gboolean (*Condition) (Fixture *fixture, gpointer data);

/* Runs the main context until @condition holds; fails the test after
 * @seconds. */
static void
wait_until_for (Fixture    *fixture,
                Condition   condition,
                gpointer    data,
                const char *what,
                guint       seconds)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) seconds * G_USEC_PER_SEC;

  while (!condition (fixture, data))
    {
      if (g_get_monotonic_time () > deadline)
        g_error ("gave up waiting for %s", what);
      while (g_main_context_iteration (NULL, FALSE))
        ;
      g_usleep (20 * 1000);
    }
}

/* The same, for DEADLINE_S seconds. */
static void
wait_until (Fixture   *fixture,
            Condition  condition,
            gpointer   data,
            const char *what)
{
  wait_until_for (fixture, condition, data, what, DEADLINE_S);
}

static GVariant *
call_with_timeout (Fixture     *fixture,
                   const char  *method,
                   GVariant    *parameters,
                   int          timeout_ms,
                   GError     **error)
{
  return g_dbus_connection_call_sync (fixture->connection, DAEMON_NAME, DAEMON_PATH,
                                      DAEMON_IFACE, method, parameters, NULL,
                                      G_DBUS_CALL_FLAGS_NO_AUTO_START, timeout_ms, NULL, error);
}

static GVariant *
call (Fixture     *fixture,
      const char  *method,
      GVariant    *parameters,
      GError     **error)
{
  return call_with_timeout (fixture, method, parameters, 20000, error);
}

static gboolean
name_has_owner (Fixture  *fixture,
                gpointer  data)
{
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (fixture->connection, "org.freedesktop.DBus",
                                                           "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                           "NameHasOwner", g_variant_new ("(s)", DAEMON_NAME),
                                                           G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE,
                                                           -1, NULL, NULL);
  gboolean has_owner = FALSE;

  if (reply != NULL)
    g_variant_get (reply, "(b)", &has_owner);
  return has_owner == GPOINTER_TO_INT (data);
}

/* A test that fails leaves no daemon behind (holding meson's stderr). */
static void
die_with_parent (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* Starts perfmond with @options (NULL-terminated) plus a pid file in the
 * test's directory, and waits until it owns its name. */
static GSubprocess *
start_daemon_full (Fixture            *fixture,
                   GSubprocessFlags    flags,
                   const char * const *options)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GError) error = NULL;
  GSubprocess *daemon;

  g_ptr_array_add (argv, g_strdup (g_getenv ("PERFMOND")));
  g_ptr_array_add (argv, g_strdup_printf ("--pidfile=%s/perfmond.pid", fixture->tmp_dir));
  for (guint i = 0; options != NULL && options[i] != NULL; i++)
    g_ptr_array_add (argv, g_strdup (options[i]));
  g_ptr_array_add (argv, NULL);

  /* perfmond's messages on stderr help when a test fails; its stdout
   * would break TAP. */
  launcher = g_subprocess_launcher_new (flags | G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  daemon = g_subprocess_launcher_spawnv (launcher, (const char * const *) argv->pdata, &error);
  g_assert_no_error (error);
  return daemon;
}

/* The daemon's signals go to subscribers only. */
static void
subscribe (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = call (fixture, "Subscribe", NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (reply);
}

static void
start_daemon (Fixture            *fixture,
              const char * const *options)
{
  g_assert_null (fixture->daemon);
  fixture->daemon = start_daemon_full (fixture, G_SUBPROCESS_FLAGS_NONE, options);
  wait_until (fixture, name_has_owner, GINT_TO_POINTER (TRUE), "perfmond to own its name");
  subscribe (fixture);
}

static void
stop_daemon (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;

  g_subprocess_send_signal (fixture->daemon, SIGTERM);
  g_subprocess_wait (fixture->daemon, NULL, &error);
  g_assert_no_error (error);
  /* Stopped on request: a clean exit, not a crash. */
  g_assert_true (g_subprocess_get_if_exited (fixture->daemon));
  g_assert_cmpint (g_subprocess_get_exit_status (fixture->daemon), ==, 0);
  g_clear_object (&fixture->daemon);
}

static gboolean is_registered (Fixture *fixture, gpointer data);

/* A field of /proc/PID/status in KiB (VmRSS, VmHWM), or 0. */
static guint64
proc_status_kib (GSubprocess *process,
                 const char  *field)
{
  g_autofree char *path = g_strdup_printf ("/proc/%s/status", g_subprocess_get_identifier (process));
  g_autofree char *text = NULL;
  g_autofree char *key = g_strdup_printf ("\n%s:", field);
  const char *at;

  if (!g_file_get_contents (path, &text, NULL, NULL) || (at = strstr (text, key)) == NULL)
    return 0;
  return g_ascii_strtoull (at + strlen (key), NULL, 10);
}

/* Starts perfmond on the bus at @address (not the fixture's), with
 * @options; does not wait. */
static GSubprocess *
start_daemon_on (const char         *address,
                 GSubprocessFlags    flags,
                 const char * const *options)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GError) error = NULL;
  GSubprocess *daemon;

  g_ptr_array_add (argv, g_strdup (g_getenv ("PERFMOND")));
  for (guint i = 0; options != NULL && options[i] != NULL; i++)
    g_ptr_array_add (argv, g_strdup (options[i]));
  g_ptr_array_add (argv, NULL);
  launcher = g_subprocess_launcher_new (flags | G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
  g_subprocess_launcher_setenv (launcher, "DBUS_SESSION_BUS_ADDRESS", address, TRUE);
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  daemon = g_subprocess_launcher_spawnv (launcher, (const char * const *) argv->pdata, &error);
  g_assert_no_error (error);
  return daemon;
}

/* Resets @process's VmHWM to its current RSS (Linux ≥ 4.0, a process
 * of the same uid). */
static gboolean
reset_peak_rss (GSubprocess *process)
{
  g_autofree char *path = g_strdup_printf ("/proc/%s/clear_refs", g_subprocess_get_identifier (process));
  /* Not g_file_set_contents(): /proc takes no temporary file. */
  FILE *file = fopen (path, "w");
  gboolean written;

  if (file == NULL)
    return FALSE;
  written = fputs ("5", file) >= 0;
  return fclose (file) == 0 && written;
}

/* AddressSanitizer keeps freed memory in quarantine (256 MiB), and
 * ThreadSanitizer's shadow and history memory is counted in the process's
 * RSS (141 MiB for /daemon/hang-flood's 128 MiB bound): RSS bounds
 * only hold in a normal build. */
static void
assert_rss_below (guint64 kib,
                  guint64 bound_kib)
{
#if defined(__SANITIZE_ADDRESS__) || UNDER_TSAN
  g_test_message ("Sanitizer build: RSS %" G_GUINT64_FORMAT " KiB not checked against %"
                  G_GUINT64_FORMAT " KiB", kib, bound_kib);
#else
  g_assert_cmpuint (kib, <, bound_kib);
#endif
}

static gboolean
name_has_owner_on (GDBusConnection *connection)
{
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, "org.freedesktop.DBus",
                                                           "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                           "NameHasOwner", g_variant_new ("(s)", DAEMON_NAME),
                                                           G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE,
                                                           -1, NULL, NULL);
  gboolean has_owner = FALSE;

  if (reply != NULL)
    g_variant_get (reply, "(b)", &has_owner);
  return has_owner;
}


/* A second private bus, beside the fixture's. Its GTestDBus sets
 * DBUS_SESSION_BUS_ADDRESS: put the fixture's back. */
static GTestDBus *
second_bus_up (Fixture          *fixture,
               GDBusConnection **connection)
{
  g_autofree char *first = g_strdup (g_test_dbus_get_bus_address (fixture->bus));
  GTestDBus *bus = g_test_dbus_new (G_TEST_DBUS_NONE);

  test_dbus_up (bus);
  *connection = test_bus_connect (bus);
  g_setenv ("DBUS_SESSION_BUS_ADDRESS", first, TRUE);
  return bus;
}

/* Starts monitored-process with @options (NULL-terminated) and waits for
 * its "READY <pid>". Returns the pid; the process is the fixture's. */
static guint
start_child_full (Fixture            *fixture,
                  const char * const *options,
                  gboolean            wait_registered,
                  GSubprocess       **out_child)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  g_autoptr(GDataInputStream) out = NULL;
  g_autofree char *line = NULL;
  GSubprocess *child;
  guint64 pid;

  g_ptr_array_add (argv, g_strdup (g_getenv ("MONITORED_PROCESS")));
  for (guint i = 0; options != NULL && options[i] != NULL; i++)
    g_ptr_array_add (argv, g_strdup (options[i]));
  g_ptr_array_add (argv, NULL);

  child = g_subprocess_newv ((const char * const *) argv->pdata, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
  g_assert_no_error (error);
  g_ptr_array_add (fixture->children, child);
  if (out_child != NULL)
    *out_child = child;
  /* The pid is the one the child says: not g_subprocess_get_identifier (),
   * which the crashing modes (they die soon after READY) race with. GLib
   * 2.74 reads the pid there without the lock under which its worker
   * thread zeroes it at the reap: a data race (ThreadSanitizer reports it
   * in /daemon/crash-mid-poll), and NULL once the child is reaped. */
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (child));
  line = g_data_input_stream_read_line (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (line, "READY "));
  g_assert_true (g_ascii_string_to_unsigned (line + 6, 10, 1, G_MAXUINT, &pid, NULL));

  /* perfmon_monitor_export() registers asynchronously; the misbehaving
   * modes register before READY, and --register-delay later. */
  if (wait_registered)
    wait_until (fixture, is_registered, GUINT_TO_POINTER ((guint) pid), "the child to register");
  return (guint) pid;
}

static guint
start_child (Fixture            *fixture,
             const char * const *options)
{
  gboolean normal = TRUE;

  for (guint i = 0; options != NULL && options[i] != NULL; i++)
    if (g_str_has_prefix (options[i], "--mode=") || g_str_has_prefix (options[i], "--register-delay") ||
        g_str_equal (options[i], "--no-register"))
      normal = FALSE;
  return start_child_full (fixture, options, normal, NULL);
}

static gboolean
is_registered (Fixture  *fixture,
               gpointer  data)
{
  g_autoptr(GVariant) reply = call (fixture, "ListProcesses", NULL, NULL);
  g_autoptr(GVariantIter) iter = NULL;
  guint pid;

  /* No daemon (yet, or any more): nobody is registered. */
  if (reply == NULL)
    return FALSE;
  g_variant_get (reply, "(a(usssx))", &iter);
  while (g_variant_iter_next (iter, "(u&s&s&sx)", &pid, NULL, NULL, NULL, NULL))
    if (pid == GPOINTER_TO_UINT (data))
      return TRUE;
  return FALSE;
}

static gboolean
is_not_registered (Fixture  *fixture,
                   gpointer  data)
{
  return !is_registered (fixture, data);
}

/* A snapshot from the daemon, read as a client must. */
static PerfmonSnapshot *
decode_wire (GVariant *variant)
{
  g_autoptr(GError) error = NULL;
  PerfmonSnapshot *snapshot;

  g_assert_cmpstr (g_variant_get_type_string (variant), ==, PERFMON_SNAPSHOT_VARIANT_TYPE);
  snapshot = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  return snapshot;
}

static PerfmonSnapshot *
get_snapshot (Fixture *fixture,
              guint    pid)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = call (fixture, "GetSnapshot", g_variant_new ("(u)", pid), &error);
  g_autoptr(GVariant) wire = NULL;

  g_assert_no_error (error);
  g_variant_get (reply, "(v)", &wire);
  return decode_wire (wire);
}

static PerfmonSnapshot *
get_aggregate (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = call (fixture, "GetAggregate", NULL, &error);
  g_autoptr(GVariant) wire = NULL;
  guint32 omitted;

  g_assert_no_error (error);
  g_variant_get (reply, "(vu)", &wire, &omitted);
  g_assert_cmpuint (omitted, ==, 0);
  return decode_wire (wire);
}

static GPtrArray *
get_history (Fixture *fixture,
             guint    pid,
             gint64   since)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = call (fixture, "GetHistory", g_variant_new ("(ux)", pid, since), &error);
  g_autoptr(GVariantIter) iter = NULL;
  GPtrArray *snapshots = g_ptr_array_new_with_free_func (g_object_unref);
  GVariant *wire;

  g_assert_no_error (error);
  g_variant_get (reply, "(av)", &iter);
  while (g_variant_iter_next (iter, "v", &wire))
    {
      g_ptr_array_add (snapshots, decode_wire (wire));
      g_variant_unref (wire);
    }
  return snapshots;
}

static PerfmonGroupStats *
find_group (PerfmonSnapshot  *snapshot,
            PerfmonGroupKind  kind,
            guint64           window_id,
            const char       *addon_id,
            guint            *n_found)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);
  PerfmonGroupStats *found = NULL;

  *n_found = 0;
  for (guint i = 0; i < groups->len; i++)
    {
      PerfmonGroupStats *stats = g_ptr_array_index (groups, i);

      if (perfmon_group_stats_get_kind (stats) != kind)
        continue;
      if (kind == PERFMON_GROUP_KIND_WINDOW && perfmon_group_stats_get_window_id (stats) != window_id)
        continue;
      if (kind == PERFMON_GROUP_KIND_ADDON && g_strcmp0 (perfmon_group_stats_get_addon_id (stats), addon_id) != 0)
        continue;
      found = stats;
      (*n_found)++;
    }
  return found;
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *services = NULL;
  g_autofree char *service = NULL;
  g_autofree char *service_text = NULL;

  fixture->tmp_dir = test_make_tmp_dir ("perfmon-test-daemon-XXXXXX");

  /* perfmond is D-Bus activatable on the test bus too: with its default
   * pid file, under XDG_RUNTIME_DIR (see main()). */
  services = g_build_filename (fixture->tmp_dir, "services", NULL);
  service = g_build_filename (services, "org.perfmon.Daemon1.service", NULL);
  service_text = g_strdup_printf ("[D-BUS Service]\nName=%s\nExec=%s --poll-interval=100\n",
                                  DAEMON_NAME, g_getenv ("PERFMOND"));
  g_assert_cmpint (g_mkdir (services, 0700), ==, 0);
  g_file_set_contents (service, service_text, -1, &error);
  g_assert_no_error (error);

  /* g_test_dbus_down() of the last test unset it; the bus passes it on
   * to the daemons it activates. */
  g_setenv ("XDG_RUNTIME_DIR", runtime_dir, TRUE);
  fixture->bus = g_test_dbus_new (G_TEST_DBUS_NONE);
  g_test_dbus_add_service_dir (fixture->bus, services);
  test_dbus_up (fixture->bus);
  fixture->connection = test_bus_connect (fixture->bus);
  fixture->children = g_ptr_array_new_with_free_func (g_object_unref);
  fixture->signals = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);
  fixture->signal_id = g_dbus_connection_signal_subscribe (fixture->connection, NULL, DAEMON_NAME, NULL,
                                                           DAEMON_PATH, NULL, G_DBUS_SIGNAL_FLAGS_NONE,
                                                           on_daemon_signal, fixture, NULL);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  for (guint i = 0; i < fixture->children->len; i++)
    {
      GSubprocess *child = g_ptr_array_index (fixture->children, i);

      g_subprocess_force_exit (child);
      g_subprocess_wait (child, NULL, NULL);
    }
  if (fixture->daemon != NULL)
    stop_daemon (fixture);

  g_dbus_connection_signal_unsubscribe (fixture->connection, fixture->signal_id);
  g_dbus_connection_close_sync (fixture->connection, NULL, NULL);
  g_clear_object (&fixture->connection);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_test_dbus_down (fixture->bus);
  g_clear_object (&fixture->bus);
  g_ptr_array_unref (fixture->children);
  g_ptr_array_unref (fixture->signals);
  test_remove_tree (fixture->tmp_dir);
  g_free (fixture->tmp_dir);
}

static const char * const fast_daemon[] = { "--poll-interval=100", NULL };

static gboolean
has_snapshot_with_cpu (Fixture  *fixture,
                       gpointer  data)
{
  g_autoptr(PerfmonSnapshot) snapshot = get_snapshot (fixture, GPOINTER_TO_UINT (data));
  PerfmonGroupStats *window;
  guint n;

  window = find_group (snapshot, PERFMON_GROUP_KIND_WINDOW, 1, NULL, &n);
  return n == 1 && perfmon_group_stats_get_cpu_time (window) > 0;
}

typedef struct
{
  guint  pid;
  gint64 timestamp;
} SnapshotAfter;

static gboolean
has_snapshot_after (Fixture  *fixture,
                    gpointer  data)
{
  SnapshotAfter *after = data;
  g_autoptr(PerfmonSnapshot) snapshot = get_snapshot (fixture, after->pid);

  return perfmon_snapshot_get_timestamp (snapshot) > after->timestamp;
}

static void
count_bystander_signal (GDBusConnection *connection,
                        const char      *sender,
                        const char      *path,
                        const char      *interface,
                        const char      *name,
                        GVariant        *parameters,
                        gpointer         user_data)
{
  (*(guint *) user_data)++;
}

static void
test_register (Fixture       *fixture,
               gconstpointer  data)
{
  const char * const options[] = { "--windows=2", NULL };
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) again = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariantIter) iter = NULL;
  const char *bus_name, *process_name, *process_type;
  gint64 registered_at;
  guint pid, child_pid;
  GSubprocess *child;

  g_autoptr(GDBusConnection) bystander = NULL;
  guint bystander_signals = 0, bystander_id;

  start_daemon (fixture, fast_daemon);
  /* A listener of the same uid with a match rule that did not subscribe. */
  bystander = test_bus_connect (fixture->bus);
  bystander_id = g_dbus_connection_signal_subscribe (bystander, NULL, DAEMON_NAME, NULL, DAEMON_PATH, NULL,
                                                     G_DBUS_SIGNAL_FLAGS_NONE, count_bystander_signal,
                                                     &bystander_signals, NULL);
  g_clear_pointer (&reply, g_variant_unref);
  reply = g_dbus_connection_call_sync (bystander, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetId", NULL, NULL, G_DBUS_CALL_FLAGS_NONE,
                                       -1, NULL, &error);
  g_assert_no_error (error);
  g_clear_pointer (&reply, g_variant_unref);
  child_pid = start_child_full (fixture, options, TRUE, &child);
  reply = call (fixture, "ListProcesses", NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(a(usssx))", &iter);
  g_assert_true (g_variant_iter_next (iter, "(u&s&s&sx)", &pid, &bus_name, &process_name,
                                      &process_type, &registered_at));
  g_assert_cmpuint (pid, ==, child_pid);
  g_assert_true (g_dbus_is_unique_name (bus_name));
  g_assert_cmpint (registered_at, >, 0);
  g_assert_cmpuint (count_signals (fixture, "ProcessAdded"), <=, 1);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_cmpuint (count_signals (fixture, "ProcessAdded"), ==, 1);
  /* The bystander's round trip to the daemon is answered after any signal
   * the daemon sent it before: it got none. */
  {
    g_autoptr(GVariant) list = g_dbus_connection_call_sync (bystander, DAEMON_NAME, DAEMON_PATH, DAEMON_IFACE,
                                                            "ListProcesses", NULL, NULL,
                                                            G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, NULL, &error);

    g_assert_no_error (error);
    g_assert_nonnull (list);
  }
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_cmpuint (bystander_signals, ==, 0);
  g_dbus_connection_signal_unsubscribe (bystander, bystander_id);

  /* Registering twice (here: the test itself, twice) is not an error. */
  again = call (fixture, "Register", NULL, &error);
  g_assert_no_error (error);
  g_clear_pointer (&again, g_variant_unref);
  again = call (fixture, "Register", NULL, &error);
  g_assert_no_error (error);
  g_clear_pointer (&again, g_variant_unref);
  again = call (fixture, "Unregister", NULL, &error);
  g_assert_no_error (error);

  /* Leaving the bus unregisters. */
  g_subprocess_force_exit (child);
  wait_until (fixture, is_not_registered, GUINT_TO_POINTER (child_pid), "the child to be unregistered");
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_cmpuint (count_signals (fixture, "ProcessRemoved"), >=, 1);
}

static void
test_poll (Fixture       *fixture,
           gconstpointer  data)
{
  const char * const options[] = { "--windows=2", "--addon=calm@test", "--burn=3", NULL };
  g_autoptr(PerfmonSnapshot) first = NULL;
  g_autoptr(PerfmonSnapshot) later = NULL;
  PerfmonGroupStats *window;
  guint child_pid, n;

  start_daemon (fixture, fast_daemon);
  child_pid = start_child (fixture, options);

  /* Right after Register() the first poll may still be on its way:
   * GetSnapshot waits for it. */
  first = get_snapshot (fixture, child_pid);
  g_assert_cmpuint (perfmon_snapshot_get_pid (first), ==, child_pid);
  g_assert_cmpstr (perfmon_snapshot_get_process_name (first), ==, "monitored-process");
  find_group (first, PERFMON_GROUP_KIND_THREAD, 0, NULL, &n);
  g_assert_cmpuint (n, ==, 1);
  find_group (first, PERFMON_GROUP_KIND_WINDOW, 2, NULL, &n);
  g_assert_cmpuint (n, ==, 1);
  find_group (first, PERFMON_GROUP_KIND_ADDON, 0, "calm@test", &n);
  g_assert_cmpuint (n, ==, 1);

  /* Polled again and again: the CPU burned in window 1 shows up (on a
   * loaded machine, maybe already in the first snapshot). */
  wait_until (fixture, has_snapshot_with_cpu, GUINT_TO_POINTER (child_pid), "CPU time in window 1");
  wait_until (fixture, has_snapshot_after, &(SnapshotAfter) { child_pid, perfmon_snapshot_get_timestamp (first) },
              "a later snapshot");
  later = get_snapshot (fixture, child_pid);
  g_assert_cmpint (perfmon_snapshot_get_timestamp (later), >, perfmon_snapshot_get_timestamp (first));
  window = find_group (later, PERFMON_GROUP_KIND_WINDOW, 1, NULL, &n);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (window), >, 0);
}

static void
test_aggregate (Fixture       *fixture,
                gconstpointer  data)
{
  /* Window 1 and "shared@test" in both processes; window 2 only in the
   * first, window 3 only in the second. */
  const char * const first_options[] = { "--windows=2", "--window-base=1", "--addon=shared@test", NULL };
  const char * const second_options[] = { "--windows=2", "--window-base=2", "--addon=shared@test",
                                          "--addon=own@test", NULL };
  g_autoptr(PerfmonSnapshot) a = NULL;
  g_autoptr(PerfmonSnapshot) b = NULL;
  g_autoptr(PerfmonSnapshot) aggregate = NULL;
  g_autoptr(PerfmonSnapshot) aggregate_again = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(GError) error = NULL;
  PerfmonGroupStats *merged, *in_a, *in_b;
  guint pid_a, pid_b, n;

  start_daemon (fixture, fast_daemon);
  pid_a = start_child (fixture, first_options);
  pid_b = start_child (fixture, second_options);
  wait_until (fixture, has_snapshot_with_cpu, GUINT_TO_POINTER (pid_a), "CPU time in window 1 of a");

  a = get_snapshot (fixture, pid_a);
  b = get_snapshot (fixture, pid_b);
  aggregate = get_aggregate (fixture);

  /* The daemon's own pid and name: a valid snapshot of nobody. */
  g_assert_cmpuint (perfmon_snapshot_get_pid (aggregate), !=, pid_a);
  g_assert_cmpuint (perfmon_snapshot_get_pid (aggregate), !=, pid_b);
  g_assert_cmpstr (perfmon_snapshot_get_process_name (aggregate), ==, "perfmond aggregate");

  /* One thread group per process. */
  find_group (aggregate, PERFMON_GROUP_KIND_THREAD, 0, NULL, &n);
  g_assert_cmpuint (n, ==, 2);

  /* Window 2 is in both processes (the first's second window, the
   * second's first): one merged group. Windows 1 and 3 are single. */
  merged = find_group (aggregate, PERFMON_GROUP_KIND_WINDOW, 2, NULL, &n);
  g_assert_cmpuint (n, ==, 1);
  in_a = find_group (a, PERFMON_GROUP_KIND_WINDOW, 2, NULL, &n);
  in_b = find_group (b, PERFMON_GROUP_KIND_WINDOW, 2, NULL, &n);
  /* Counters only grow, and the aggregate was taken last. */
  g_assert_cmpuint (perfmon_group_stats_get_ticks (merged), >=,
                    perfmon_group_stats_get_ticks (in_a) + perfmon_group_stats_get_ticks (in_b));
  find_group (aggregate, PERFMON_GROUP_KIND_WINDOW, 1, NULL, &n);
  g_assert_cmpuint (n, ==, 1);
  find_group (aggregate, PERFMON_GROUP_KIND_WINDOW, 3, NULL, &n);
  g_assert_cmpuint (n, ==, 1);

  merged = find_group (aggregate, PERFMON_GROUP_KIND_ADDON, 0, "shared@test", &n);
  g_assert_cmpuint (n, ==, 1);
  in_a = find_group (a, PERFMON_GROUP_KIND_ADDON, 0, "shared@test", &n);
  in_b = find_group (b, PERFMON_GROUP_KIND_ADDON, 0, "shared@test", &n);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (merged), >=,
                    perfmon_group_stats_get_cpu_time (in_a) + perfmon_group_stats_get_cpu_time (in_b));
  find_group (aggregate, PERFMON_GROUP_KIND_ADDON, 0, "own@test", &n);
  g_assert_cmpuint (n, ==, 1);

  /* Ids are stable: a later aggregate subtracts from an earlier one. */
  aggregate_again = get_aggregate (fixture);
  delta = perfmon_snapshot_subtract (aggregate_again, aggregate, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_snapshot_get_groups (delta)->len, ==,
                    perfmon_snapshot_get_groups (aggregate)->len);
}

/* The first Hang signal whose report lasted at least 500 ms (a new
 * reference), or NULL. */
static GVariant *
long_hang_signal (Fixture *fixture)
{
  for (guint i = 0; i < fixture->signals->len; i++)
    {
      g_autoptr(GVariant) hang = NULL;
      g_autoptr(JsonNode) node = NULL;
      const char *name, *id, *report;
      guint pid;

      g_variant_get_child (g_ptr_array_index (fixture->signals, i), 0, "&s", &name);
      if (!g_str_equal (name, "Hang"))
        continue;
      g_variant_get_child (g_ptr_array_index (fixture->signals, i), 1, "@(sus)", &hang);
      g_variant_get (hang, "(&su&s)", &id, &pid, &report);
      node = json_from_string (report, NULL);
      if (node != NULL && JSON_NODE_HOLDS_OBJECT (node) &&
          json_object_get_double_member_with_default (json_node_get_object (node), "duration", 0) >= 500)
        return g_steal_pointer (&hang);
    }
  return NULL;
}

static gboolean
has_long_hang_signal (Fixture  *fixture,
                      gpointer  data)
{
  g_autoptr(GVariant) hang = long_hang_signal (fixture);

  return hang != NULL;
}

static void
check_hang_listed (Fixture *fixture,
                   guint    pid)
{
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariantIter) iter = NULL;
  g_autofree char *id_prefix = g_strdup_printf ("%u-", pid);
  const char *id, *process_name, *runnable, *json;
  double duration;
  guint hang_pid;
  guint n_hangs = 0;

  /* What the daemon promises: every hang of the process is listed, under
   * its pid, at least the threshold long (100 ms here), and GetHang gives
   * its report. Not how many: a slow machine may add an early hang (the
   * child's start-up) to the one the test provokes. */
  reply = call (fixture, "ListHangs", NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(a(susds))", &iter);
  while (g_variant_iter_next (iter, "(&su&sd&s)", &id, &hang_pid, &process_name, &duration, &runnable))
    {
      g_autoptr(GVariant) report = NULL;
      g_autoptr(JsonParser) parser = json_parser_new ();

      g_assert_true (g_str_has_prefix (id, id_prefix));
      g_assert_cmpuint (hang_pid, ==, pid);
      g_assert_cmpfloat (duration, >=, 100);

      report = call (fixture, "GetHang", g_variant_new ("(s)", id), &error);
      g_assert_no_error (error);
      g_variant_get (report, "(&s)", &json);
      json_parser_load_from_data (parser, json, -1, &error);
      g_assert_no_error (error);
      g_assert_cmpfloat (json_object_get_double_member (json_node_get_object (json_parser_get_root (parser)),
                                                        "duration"), ==, duration);
      n_hangs++;
    }
  g_assert_cmpuint (n_hangs, >=, 1);
}

static gboolean
has_hang_listed (Fixture  *fixture,
                 gpointer  data)
{
  g_autoptr(GVariant) reply = call (fixture, "ListHangs", NULL, NULL);
  g_autoptr(GVariant) hangs = g_variant_get_child_value (reply, 0);

  return g_variant_n_children (hangs) > 0;
}

static void
test_hang (Fixture       *fixture,
           gconstpointer  data)
{
  /* --early-stall: the extra early hang of a slow machine, every time. */
  const char * const options[] = { "--hang-threshold=100", "--early-stall=150", "--stall-after=300",
                                   "--stall=600", NULL };
  g_autoptr(GVariant) hang = NULL;
  const char *id, *report;
  guint pid, child_pid;

  start_daemon (fixture, fast_daemon);
  child_pid = start_child (fixture, options);

  /* The provoked hang (600 ms) is signalled, whatever came before it. */
  wait_until (fixture, has_long_hang_signal, NULL, "the Hang signal of the 600 ms stall");
  hang = long_hang_signal (fixture);
  g_variant_get (hang, "(&su&s)", &id, &pid, &report);
  g_assert_cmpuint (pid, ==, child_pid);
  g_assert_true (g_str_has_prefix (report, "{"));
  check_hang_listed (fixture, child_pid);
}

static gboolean
has_ping_signal (Fixture  *fixture,
                 gpointer  data)
{
  return count_signals (fixture, "Ping") > 0;
}

/* A process's pings (here one per hang) reach the daemon: re-emitted with
 * the pid, and listed. */
static void
test_ping (Fixture       *fixture,
           gconstpointer  data)
{
  const char * const options[] = { "--hang-threshold=100", "--hangs-per-ping=1", "--early-stall=150",
                                   "--stall-after=300", "--stall=400", NULL };
  g_autoptr(GVariant) ping = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariantIter) iter = NULL;
  g_autoptr(GError) error = NULL;
  const char *path, *listed_path, *process_name;
  guint pid, listed_pid, child_pid;
  gboolean found = FALSE;

  start_daemon (fixture, fast_daemon);
  child_pid = start_child (fixture, options);

  wait_until (fixture, has_ping_signal, NULL, "a Ping signal");
  for (guint i = 0; i < fixture->signals->len; i++)
    {
      const char *name;

      g_variant_get_child (g_ptr_array_index (fixture->signals, i), 0, "&s", &name);
      if (g_str_equal (name, "Ping") && ping == NULL)
        g_variant_get_child (g_ptr_array_index (fixture->signals, i), 1, "@(us)", &ping);
    }
  g_variant_get (ping, "(u&s)", &pid, &path);
  g_assert_cmpuint (pid, ==, child_pid);
  g_assert_true (g_path_is_absolute (path));
  g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));

  /* The signalled ping is listed, under the child's pid (a slow machine
   * may add an earlier hang, and with it an earlier ping). */
  reply = call (fixture, "ListPings", NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(a(uss))", &iter);
  while (g_variant_iter_next (iter, "(u&s&s)", &listed_pid, &process_name, &listed_path))
    {
      g_assert_cmpuint (listed_pid, ==, child_pid);
      if (g_str_equal (listed_path, path))
        found = TRUE;
    }
  g_assert_true (found);
}

/* A hang before the daemon knew the process: fetched at registration
 * (GetHangReports), not missed. */
static void
test_hang_before_register (Fixture       *fixture,
                           gconstpointer  data)
{
  const char * const options[] = { "--hang-threshold=100", "--stall-after=0", "--stall=500",
                                   "--register-delay=1500", NULL };
  guint child_pid;

  start_daemon (fixture, fast_daemon);
  child_pid = start_child (fixture, options);
  wait_until (fixture, is_registered, GUINT_TO_POINTER (child_pid), "the late registration");
  wait_until (fixture, has_hang_listed, NULL, "the early hang to be listed");
  check_hang_listed (fixture, child_pid);
}

static void
test_history (Fixture       *fixture,
              gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=100", "--history=1", NULL };
  g_autoptr(GPtrArray) all = NULL;
  g_autoptr(GPtrArray) recent = NULL;
  g_autoptr(GPtrArray) bounded = NULL;
  gint64 middle;
  guint child_pid;

  start_daemon (fixture, options);
  child_pid = start_child (fixture, NULL);

  /* A bit more than the second of history kept. */
  g_usleep (2500 * 1000);

  all = get_history (fixture, child_pid, 0);
  g_assert_cmpuint (all->len, >=, 3);
  /* At most one second at one poll per 100 ms. */
  g_assert_cmpuint (all->len, <=, 11);
  for (guint i = 1; i < all->len; i++)
    {
      g_assert_cmpuint (perfmon_snapshot_get_pid (g_ptr_array_index (all, i)), ==, child_pid);
      g_assert_cmpint (perfmon_snapshot_get_timestamp (g_ptr_array_index (all, i)), >,
                       perfmon_snapshot_get_timestamp (g_ptr_array_index (all, i - 1)));
    }
  g_assert_cmpint (perfmon_snapshot_get_timestamp (g_ptr_array_index (all, all->len - 1)) -
                   perfmon_snapshot_get_timestamp (g_ptr_array_index (all, 0)), <=, G_USEC_PER_SEC);

  /* Only the snapshots taken after `since`. */
  middle = perfmon_snapshot_get_timestamp (g_ptr_array_index (all, all->len / 2));
  recent = get_history (fixture, child_pid, middle);
  g_assert_cmpuint (recent->len, >=, 1);
  for (guint i = 0; i < recent->len; i++)
    g_assert_cmpint (perfmon_snapshot_get_timestamp (g_ptr_array_index (recent, i)), >, middle);

  bounded = get_history (fixture, child_pid, G_MAXINT64);
  g_assert_cmpuint (bounded->len, ==, 0);
}

/* The total history budget holds: with snapshots of ~0.7 MiB and ~6,000
 * groups (2.9 MiB to keep the newest: twice its bytes, kept and decoded,
 * and 256 bytes a decoded group) and 3 MiB for all, only the newest of
 * each process is kept, however long it runs. */
static void
test_history_budget (Fixture       *fixture,
                     gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=100", "--max-history-mib=3", NULL };
  const char * const child_options[] = { "--compartments=5000", "--tick=1000", NULL };
  g_autoptr(GPtrArray) history = NULL;
  g_autoptr(PerfmonSnapshot) first = NULL;
  g_autoptr(PerfmonSnapshot) later = NULL;
  guint child_pid;

  start_daemon (fixture, options);
  child_pid = start_child (fixture, child_options);
  first = get_snapshot (fixture, child_pid);
  g_assert_cmpuint (perfmon_snapshot_get_groups (first)->len, >, 5000);

  /* Polled several times since. */
  g_usleep (1500 * 1000);
  later = get_snapshot (fixture, child_pid);
  g_assert_cmpint (perfmon_snapshot_get_timestamp (later), >, perfmon_snapshot_get_timestamp (first));
  history = get_history (fixture, child_pid, 0);
  g_assert_cmpuint (history->len, ==, 1);
  /* The newest one (the daemon may have polled again since). */
  g_assert_cmpint (perfmon_snapshot_get_timestamp (g_ptr_array_index (history, 0)), >=,
                   perfmon_snapshot_get_timestamp (later));
}

static gboolean
history_grows (Fixture  *fixture,
               gpointer  data)
{
  g_autoptr(GPtrArray) history = get_history (fixture, GPOINTER_TO_UINT (data), 0);

  return history->len >= 10;
}

static void
test_crash_mid_poll (Fixture       *fixture,
                     gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=100", "--call-timeout=300", NULL };
  const char * const exit_options[] = { "--mode=exit", NULL };
  const char * const stall_options[] = { "--mode=stall", NULL };
  guint crasher, staller, healthy;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  start_daemon (fixture, options);

  /* Dies inside the first GetSnapshotJson: the daemon just forgets it. */
  crasher = start_child (fixture, exit_options);
  wait_until (fixture, is_not_registered, GUINT_TO_POINTER (crasher), "the crashed child to go");

  /* Never answers: its polls time out while the others go on. */
  staller = start_child (fixture, stall_options);
  healthy = start_child (fixture, NULL);
  wait_until (fixture, history_grows, GUINT_TO_POINTER (healthy), "the healthy child's history");
  g_assert_true (is_registered (fixture, GUINT_TO_POINTER (staller)));

  reply = call (fixture, "GetSnapshot", g_variant_new ("(u)", staller), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, "has no snapshot"));
}

static guint
daemon_owner_pid (Fixture *fixture)
{
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GError) error = NULL;
  guint pid;

  reply = g_dbus_connection_call_sync (fixture->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                                       g_variant_new ("(s)", DAEMON_NAME), G_VARIANT_TYPE ("(u)"),
                                       G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(u)", &pid);
  return pid;
}

static gboolean
pidfile_gone (Fixture  *fixture,
              gpointer  path)
{
  return !g_file_test (path, G_FILE_TEST_EXISTS);
}

/* Stops a perfmond that the bus started, so that nothing of it outlives
 * the test. */
static void
stop_activated_daemon (Fixture *fixture)
{
  g_assert_cmpint (kill ((pid_t) daemon_owner_pid (fixture), SIGTERM), ==, 0);
  wait_until (fixture, name_has_owner, GINT_TO_POINTER (FALSE), "the activated daemon to leave the bus");
}

/* Restarting the daemon loses no process: they register again when the
 * name comes back (perfmon_monitor_export() watches it). */
static void
test_restart (Fixture       *fixture,
              gconstpointer  data)
{
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  GSubprocess *restarted;
  guint first, second, restarted_pid;

  start_daemon (fixture, fast_daemon);
  first = start_child (fixture, NULL);
  second = start_child (fixture, NULL);

  stop_daemon (fixture);

  /* A daemon that was running and went was stopped on purpose or
   * crashed: the processes must not have the bus start another one by
   * activation. Half a second is ample for an activation to show. */
  {
    gint64 until = g_get_monotonic_time () + G_USEC_PER_SEC / 2;

    while (g_get_monotonic_time () < until)
      {
        while (g_main_context_iteration (NULL, FALSE))
          ;
        g_usleep (20 * 1000);
      }
    g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (FALSE)));
  }

  restarted = start_daemon_full (fixture, G_SUBPROCESS_FLAGS_NONE, fast_daemon);
  g_assert_nonnull (g_subprocess_get_identifier (restarted));
  restarted_pid = (guint) g_ascii_strtoull (g_subprocess_get_identifier (restarted), NULL, 10);
  fixture->daemon = restarted;
  wait_until (fixture, name_has_owner, GINT_TO_POINTER (TRUE), "the restarted daemon to own the name");
  g_assert_cmpuint (daemon_owner_pid (fixture), ==, restarted_pid);
  wait_until (fixture, is_registered, GUINT_TO_POINTER (first), "the first child to come back");
  wait_until (fixture, is_registered, GUINT_TO_POINTER (second), "the second child to come back");
  snapshot = get_snapshot (fixture, first);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, first);
}

/* No daemon running: the first process that registers starts it. */
static void
test_activation (Fixture       *fixture,
                 gconstpointer  data)
{
  guint child_pid;

  g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (FALSE)));
  child_pid = start_child (fixture, NULL);
  g_assert_true (is_registered (fixture, GUINT_TO_POINTER (child_pid)));
  stop_activated_daemon (fixture);
}

/* A second perfmond on the same bus (its own pid file or not) finds the
 * name taken and exits 3; the first is unharmed. */
static void
test_single_instance (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GSubprocess) second = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;

  start_daemon (fixture, NULL);

  second = start_daemon_full (fixture, G_SUBPROCESS_FLAGS_STDERR_PIPE, NULL);
  g_subprocess_communicate_utf8 (second, NULL, NULL, NULL, &err, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (second));
  g_assert_cmpint (g_subprocess_get_exit_status (second), ==, 3);
  g_assert_nonnull (strstr (err, "already owns org.perfmon.Daemon1"));

  g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (TRUE)));
}

static void
test_bad_options (Fixture       *fixture,
                  gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=5", NULL };
  g_autoptr(GSubprocess) daemon = start_daemon_full (fixture, G_SUBPROCESS_FLAGS_STDERR_PIPE, options);
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;

  g_subprocess_communicate_utf8 (daemon, NULL, NULL, NULL, &err, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_subprocess_get_exit_status (daemon), ==, 2);
  g_assert_nonnull (strstr (err, "--poll-interval: expected an integer in [100, 3600000] ms"));
}

static void
test_malformed_calls (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  guint child_pid;

  start_daemon (fixture, fast_daemon);
  child_pid = start_child (fixture, NULL);

  reply = call (fixture, "GetSnapshot", g_variant_new ("(u)", 0u), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  g_assert_nonnull (strstr (error->message, "no registered process has pid 0"));
  /* People read it through perfmon: it names perfmon's commands. */
  g_assert_nonnull (strstr (error->message, "perfmon top"));
  g_assert_null (strstr (error->message, "ListProcesses"));
  g_clear_error (&error);

  reply = call (fixture, "GetHistory", g_variant_new ("(ux)", child_pid, (gint64) -1), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  g_assert_nonnull (strstr (error->message, "since_us"));
  g_clear_error (&error);

  reply = call (fixture, "GetHistory", g_variant_new ("(ux)", 1u, (gint64) 0), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  g_clear_error (&error);

  reply = call (fixture, "GetHang", g_variant_new ("(s)", "1-1"), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  g_assert_nonnull (strstr (error->message, "no hang has the id"));
  g_assert_nonnull (strstr (error->message, "perfmon hangs list"));
  g_assert_null (strstr (error->message, "ListHangs"));
  g_clear_error (&error);

  /* Wrong argument types: GDBus checks them against the interface. */
  reply = call (fixture, "GetSnapshot", g_variant_new ("(s)", "1"), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  g_clear_error (&error);

  reply = call (fixture, "NoSuchMethod", NULL, &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD);
  g_clear_error (&error);

  /* And the daemon still works. */
  g_assert_true (is_registered (fixture, GUINT_TO_POINTER (child_pid)));
}

typedef struct
{
  guint       pid;
  const char *needle;
  /* The daemon's --call-timeout. */
  int         call_timeout_ms;
} Refusal;

/* GetSnapshot of the process fails, saying @needle. A loaded machine may
 * first time out the daemon's polls of a process that floods (the daemon
 * then says that): what is promised is the refusal that follows. */
static gboolean
snapshot_refused (Fixture  *fixture,
                  gpointer  data)
{
  Refusal *refusal = data;
  g_autoptr(GError) error = NULL;
  /* Longer than the daemon's own --call-timeout to the process, so that
   * the daemon answers first, however slow the machine (ThreadSanitizer). */
  g_autoptr(GVariant) reply = call_with_timeout (fixture, "GetSnapshot",
                                                 g_variant_new ("(u)", refusal->pid),
                                                 refusal->call_timeout_ms + 30000, &error);

  g_assert_null (reply);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED);
  if (strstr (error->message, refusal->needle) == NULL)
    {
      g_test_message ("not yet refused for “%s”: %s", refusal->needle, error->message);
      return FALSE;
    }
  return TRUE;
}

static gboolean
has_alert (Fixture  *fixture,
           gpointer  data)
{
  return count_signals (fixture, "Alert") > 0;
}

static gboolean
has_window (PerfmonSnapshot *snapshot,
            guint64          window_id)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

  for (guint i = 0; i < groups->len; i++)
    {
      PerfmonGroupStats *stats = g_ptr_array_index (groups, i);

      if (perfmon_group_stats_get_kind (stats) == PERFMON_GROUP_KIND_WINDOW &&
          perfmon_group_stats_get_window_id (stats) == window_id)
        return TRUE;
    }
  return FALSE;
}

/* perfmond polls with GetSnapshotBytes (a snapshot in one array of bytes),
 * and with GetSnapshot the processes that do not have it (a libperfmon
 * before 0.3): both are kept and served as the same snapshots, and what
 * comes as bytes is checked as strictly as the variant. */
static void
test_poll_bytes (Fixture       *fixture,
                 gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=100", "--max-groups=1000", "--call-timeout=30000", NULL };
  const char * const bytes_options[] = { "--mode=real", "--bytes", "--windows=3", NULL };
  const char * const legacy_options[] = { "--mode=real", "--windows=3", NULL };
  const char * const flood_options[] = { "--mode=flood", "--bytes", NULL };
  const char * const garbage_options[] = { "--mode=garbage", "--bytes", NULL };
  const char * const not_snapshot_options[] = { "--mode=not-a-snapshot", "--bytes", NULL };
  Refusal flood_refusal = { 0, "--max-groups", 30000 };
  Refusal garbage_refusal = { 0, "expected a snapshot of type", 30000 };
  Refusal not_snapshot_refusal = { 0, "expected a snapshot of type", 30000 };
  const char * const library_options[] = { "--windows=3", NULL };
  guint pids[3];

  start_daemon (fixture, options);
  /* Answers GetSnapshotBytes only (GetSnapshot fails); answers GetSnapshot
   * only; the library's own export. */
  pids[0] = start_child (fixture, bytes_options);
  pids[1] = start_child (fixture, legacy_options);
  pids[2] = start_child (fixture, library_options);
  flood_refusal.pid = start_child (fixture, flood_options);
  garbage_refusal.pid = start_child (fixture, garbage_options);
  not_snapshot_refusal.pid = start_child (fixture, not_snapshot_options);

  for (guint i = 0; i < G_N_ELEMENTS (pids); i++)
    {
      g_autoptr(PerfmonSnapshot) snapshot = NULL;
      g_autoptr(GPtrArray) history = NULL;

      wait_until (fixture, history_grows, GUINT_TO_POINTER (pids[i]), "a child's history");
      snapshot = get_snapshot (fixture, pids[i]);
      g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, pids[i]);
      g_assert_cmpstr (perfmon_snapshot_get_process_name (snapshot), ==, "monitored-process");
      /* The thread's group and the 3 windows at least. */
      g_assert_cmpuint (perfmon_snapshot_get_groups (snapshot)->len, >=, 4);
      g_assert_true (has_window (snapshot, 3));
      history = get_history (fixture, pids[i], 0);
      for (guint j = 0; j < history->len; j++)
        g_assert_cmpuint (perfmon_snapshot_get_pid (g_ptr_array_index (history, j)), ==, pids[i]);
    }

  wait_until_for (fixture, snapshot_refused, &flood_refusal, "the flooder's bytes refused for --max-groups", 180);
  wait_until_for (fixture, snapshot_refused, &garbage_refusal, "bytes that are no variant refused", 180);
  wait_until_for (fixture, snapshot_refused, &not_snapshot_refusal, "a variant of bytes that is no snapshot refused",
                  180);
  g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (TRUE)));
}

/* Processes that send too much or nonsense are refused, each with a
 * message that says why, and do not get in the others' way. */
static void
test_bad_processes (Fixture       *fixture,
                    gconstpointer  data)
{
  /* --call-timeout: the flooder answers with a snapshot of 5,000 groups, which
   * under ThreadSanitizer takes longer than the default timeout; what is
   * promised is the refusal of the answer, not a time to get it. */
  const char * const options[] = { "--poll-interval=100", "--max-groups=1000", "--max-signals=5",
                                   "--call-timeout=30000", NULL };
  const char * const flood_options[] = { "--mode=flood", NULL };
  const char * const garbage_options[] = { "--mode=garbage", NULL };
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  Refusal flood_refusal = { 0, "--max-groups", 30000 };
  Refusal garbage_refusal = { 0, "expected a snapshot of type", 30000 };
  guint flood, garbage, healthy, n_alerts;
  gint64 started, elapsed_s;

  started = g_get_monotonic_time ();
  start_daemon (fixture, options);
  flood = start_child (fixture, flood_options);
  garbage = start_child (fixture, garbage_options);
  healthy = start_child (fixture, NULL);

  flood_refusal.pid = flood;
  /* Each try may take up to the daemon's --call-timeout. */
  wait_until_for (fixture, snapshot_refused, &flood_refusal,
                  "the flooder's snapshot refused for --max-groups", 180);
  garbage_refusal.pid = garbage;
  wait_until_for (fixture, snapshot_refused, &garbage_refusal, "the garbage snapshot refused", 180);

  wait_until (fixture, history_grows, GUINT_TO_POINTER (healthy), "the healthy child's history");
  snapshot = get_snapshot (fixture, healthy);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, healthy);

  /* The flood child sends 10,000 alerts a second; 5 a second get through:
   * some, and no more than 5 for each second (or part) since the daemon
   * started, however long the machine made the test take. */
  wait_until (fixture, has_alert, NULL, "an Alert of the flooder");
  while (g_main_context_iteration (NULL, FALSE))
    ;
  n_alerts = count_signals (fixture, "Alert");
  elapsed_s = (g_get_monotonic_time () - started) / G_USEC_PER_SEC;
  g_test_message ("%u alerts in %" G_GINT64_FORMAT " s", n_alerts, elapsed_s);
  g_assert_cmpuint (n_alerts, >, 0);
  g_assert_cmpuint (n_alerts, <=, 5 * (elapsed_s + 2));
}

static void
test_process_cap (Fixture       *fixture,
                  gconstpointer  data)
{
  const char * const options[] = { "--max-processes=1", NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  start_daemon (fixture, options);
  start_child (fixture, NULL);

  /* The test's own connection would be the second process. */
  reply = call (fixture, "Register", NULL, &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED);
  g_assert_nonnull (strstr (error->message, "--max-processes"));
}

/* A GetAggregate whose reply would pass D-Bus's 64 MiB array limit (8
 * processes × 9,999 windows of 1 KiB names) is answered, bounded, with the
 * number of groups left out; and perfmond is still on the bus, having
 * used for it no more than two copies of the capped reply (the reply, and
 * the message GDBus writes of it) and the ids of the groups (32 bytes
 * each, 2.4 MiB): the merge copies nothing of the processes' snapshots
 * (doc/perfmond.md, "Memory"). Measured: 34 MiB over the RSS before the
 * call; 47 MiB when the merge built a snapshot of the groups it kept, and
 * 408 MB when it copied every group of every process.
 *
 * Each process is polled once, when it registers (the interval is an
 * hour), and that poll may take long: the peak is the merge's, not that
 * of a poll flood (which /daemon/history-bytes bounds), and perfmond never
 * falls behind 80 MiB a second of replies, which the test bus's
 * dbus-daemon then refuses ("full message queue").
 *
 * Under ThreadSanitizer, 2,000 windows each: perfmond's decoding of a
 * 10 MiB snapshot (about 100 ms of CPU in a plain build) takes ten times
 * longer and more, and 8 of them did not fit the test's time-outs on a
 * loaded machine (doc/faults.md). The 8 × 2,000 groups (18 MB) still pass
 * the reply's cap, so the same merge and cut run; RSS is not checked
 * there (assert_rss_below()). */
#define AGGREGATE_HISTORY_MIB 200
/* Under ThreadSanitizer every byte GLib reads is instrumented, so the
 * same merge, cut and reply run at a smaller scale: a 1 MiB cap
 * (--max-aggregate-mib) and 150 windows of 1 KB names per process, still
 * over the cap. */
#define AGGREGATE_REPLY_CAP_MIB (UNDER_TSAN ? 1 : 16)
static void
test_aggregate_bounded (Fixture       *fixture,
                        gconstpointer  data)
{
  const char * const options[] = { "--history=1", "--poll-interval=3600000", "--call-timeout=120000",
                                   "--max-history-mib=" G_STRINGIFY (AGGREGATE_HISTORY_MIB),
                                   UNDER_TSAN ? "--max-aggregate-mib=1" : "--max-aggregate-mib=16", NULL };
  const guint n_groups = UNDER_TSAN ? 150 : 9999;
  g_autofree char *groups_option = g_strdup_printf ("--big-groups=%u", n_groups);
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) wire = NULL;
  g_autoptr(PerfmonSnapshot) aggregate = NULL;
  guint pids[8];
  guint32 omitted;
  guint64 start_kib, before_peak_kib, before_kib, peak_kib;
  gint64 call_start;
  gsize newest_bytes = 0;

  start_daemon (fixture, options);
  start_kib = proc_status_kib (fixture->daemon, "VmRSS");
  for (guint i = 0; i < G_N_ELEMENTS (pids); i++)
    {
      g_autofree char *base = g_strdup_printf ("--window-base=%u", 1 + i * 10000);
      const char * const child_options[] = { "--mode=big", base, groups_option, NULL };

      pids[i] = start_child (fixture, child_options);
    }
  for (guint i = 0; i < G_N_ELEMENTS (pids); i++)
    {
      g_autoptr(GVariant) snapshot_reply = NULL;
      g_autoptr(GVariant) snapshot_wire = NULL;
      g_autoptr(PerfmonSnapshot) snapshot = NULL;

      wait_until (fixture, is_registered, GUINT_TO_POINTER (pids[i]), "a big child to register");
      /* It waits for the first poll of the process, which a loaded
       * machine takes a while to build and send (10 MiB). */
      snapshot_reply = call_with_timeout (fixture, "GetSnapshot", g_variant_new ("(u)", pids[i]), 120000, &error);
      g_assert_no_error (error);
      g_variant_get (snapshot_reply, "(v)", &snapshot_wire);
      newest_bytes += g_variant_get_size (snapshot_wire);
      snapshot = decode_wire (snapshot_wire);
      g_assert_cmpuint (perfmon_snapshot_get_groups (snapshot)->len, ==, n_groups);
    }

  before_peak_kib = proc_status_kib (fixture->daemon, "VmHWM");
  /* From here on, VmHWM is the peak of the merge and its reply. */
  g_assert_true (reset_peak_rss (fixture->daemon));
  before_kib = proc_status_kib (fixture->daemon, "VmRSS");
  call_start = g_get_monotonic_time ();
  /* A deadline, not a promise of speed: under ThreadSanitizer every byte
   * GLib reads is instrumented (8 × 2,000 groups for a 16 MiB cap took
   * the call 159 s at load 40; hence the 1 MiB cap there). */
  reply = g_dbus_connection_call_sync (fixture->connection, DAEMON_NAME, DAEMON_PATH, DAEMON_IFACE,
                                       "GetAggregate", NULL, G_VARIANT_TYPE ("(vu)"),
                                       G_DBUS_CALL_FLAGS_NO_AUTO_START, UNDER_TSAN ? 600000 : 60000,
                                       NULL, &error);
  g_assert_no_error (error);
  g_test_message ("GetAggregate answered in %" G_GINT64_FORMAT " ms",
                  (g_get_monotonic_time () - call_start) / 1000);
  g_variant_get (reply, "(vu)", &wire, &omitted);
  g_assert_cmpuint (g_variant_get_size (wire), <=, AGGREGATE_REPLY_CAP_MIB * 1024 * 1024);
  aggregate = decode_wire (wire);
  g_assert_cmpuint (omitted, >, 0);
  g_assert_cmpuint (perfmon_snapshot_get_groups (aggregate)->len + omitted, ==, 8 * n_groups);
  g_assert_cmpuint (perfmon_snapshot_get_groups (aggregate)->len, >, 0);
  g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (TRUE)));
  peak_kib = proc_status_kib (fixture->daemon, "VmHWM");
  g_test_message ("perfmond RSS: %" G_GUINT64_FORMAT " KiB at start, peak %" G_GUINT64_FORMAT
                  " KiB while polling, %" G_GUINT64_FORMAT
                  " KiB before GetAggregate, peak %" G_GUINT64_FORMAT " KiB while merging and "
                  "replying (+%" G_GUINT64_FORMAT " KiB); reply %" G_GSIZE_FORMAT " bytes",
                  start_kib, before_peak_kib, before_kib, peak_kib, peak_kib - MIN (peak_kib, before_kib),
                  g_variant_get_size (wire));
  /* The merge and its reply: twice the reply's cap, and 4 MiB for the
   * ids of all 80,000 groups (2.4 MiB, kept from one merge to the next)
   * and GDBus's and the allocator's slack. Measured: 34 MiB (47 MiB
   * before). perfmond decodes a process's newest snapshot when first
   * asked for it after a poll, and GetAggregate is the first here: that
   * decoded copy, as big as the snapshot's variant (what the history's
   * budget counts for it) and about 256 bytes a group of objects beyond
   * it, is in the peak too. */
  assert_rss_below (peak_kib, before_kib + (2 * AGGREGATE_REPLY_CAP_MIB + 4) * 1024 +
                                (newest_bytes + G_N_ELEMENTS (pids) * n_groups * 256) / 1024);
  /* And all told: the history budget (which counts each newest snapshot
   * twice, kept and decoded, and 256 bytes a group for the decoded
   * objects: 8 × 24.4 MiB here), twice the reply's cap, and 24 MiB that
   * no peer makes perfmond hold: perfmond itself (8 MiB) and GDBus's read
   * buffer, which keeps the size of the largest message read (one 11 MiB
   * snapshot here), and the allocator's slack. Measured: 245 MiB (257 MiB
   * before). */
  assert_rss_below (MAX (peak_kib, before_peak_kib),
                    (AGGREGATE_HISTORY_MIB + 2 * AGGREGATE_REPLY_CAP_MIB + 24) * 1024);
}

/* Losing the bus is a failure (exit 1), so that Restart=on-failure
 * starts perfmond again; at logout it says so at debug level only
 * (test_cli_daemon.py). */
static void
test_bus_lost (Fixture       *fixture,
               gconstpointer  data)
{
  g_autoptr(GDBusConnection) other = NULL;
  g_autoptr(GTestDBus) bus = second_bus_up (fixture, &other);
  g_autoptr(GSubprocess) daemon = start_daemon_on (g_test_dbus_get_bus_address (bus), G_SUBPROCESS_FLAGS_NONE, NULL);
  g_autoptr(GError) error = NULL;
  gint64 deadline = g_get_monotonic_time () + DEADLINE_S * G_USEC_PER_SEC;

  while (!name_has_owner_on (other))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (20 * 1000);
    }
  g_dbus_connection_close_sync (other, NULL, NULL);
  g_test_dbus_stop (bus);

  g_subprocess_wait (daemon, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (daemon));
  g_assert_cmpint (g_subprocess_get_exit_status (daemon), ==, 1);
  g_test_dbus_down (bus);
  g_setenv ("DBUS_SESSION_BUS_ADDRESS", g_test_dbus_get_bus_address (fixture->bus), TRUE);
}

/* One perfmond per bus, whatever runs on another bus with the same
 * XDG_RUNTIME_DIR: both started alike (no --pidfile), both serve. */
static void
test_two_buses (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GDBusConnection) other = NULL;
  g_autoptr(GTestDBus) bus = second_bus_up (fixture, &other);
  g_autoptr(GSubprocess) first = NULL;
  g_autoptr(GSubprocess) second = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  gint64 deadline = g_get_monotonic_time () + DEADLINE_S * G_USEC_PER_SEC;

  first = start_daemon_on (g_test_dbus_get_bus_address (fixture->bus), G_SUBPROCESS_FLAGS_NONE, NULL);
  wait_until (fixture, name_has_owner, GINT_TO_POINTER (TRUE), "perfmond to own its name");
  second = start_daemon_on (g_test_dbus_get_bus_address (bus), G_SUBPROCESS_FLAGS_NONE, NULL);
  while (!name_has_owner_on (other))
    {
      /* Reaped (it exited) when it has no identifier any more. */
      g_assert_nonnull (g_subprocess_get_identifier (second));
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (20 * 1000);
    }
  reply = g_dbus_connection_call_sync (other, DAEMON_NAME, DAEMON_PATH, DAEMON_IFACE, "ListProcesses",
                                       NULL, G_VARIANT_TYPE ("(a(usssx))"), G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                       20000, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (TRUE)));

  for (guint i = 0; i < 2; i++)
    {
      GSubprocess *daemon = i == 0 ? first : second;

      g_subprocess_send_signal (daemon, SIGTERM);
      g_subprocess_wait (daemon, NULL, &error);
      g_assert_no_error (error);
      g_assert_cmpint (g_subprocess_get_exit_status (daemon), ==, 0);
    }
  g_dbus_connection_close_sync (other, NULL, NULL);
  g_test_dbus_down (bus);
  g_setenv ("DBUS_SESSION_BUS_ADDRESS", g_test_dbus_get_bus_address (fixture->bus), TRUE);
}

static gboolean
has_hang_of (Fixture  *fixture,
             gpointer  data)
{
  g_autoptr(GVariant) reply = call (fixture, "ListHangs", NULL, NULL);
  g_autoptr(GVariantIter) iter = NULL;
  guint pid;

  if (reply == NULL)
    return FALSE;
  g_variant_get (reply, "(a(susds))", &iter);
  while (g_variant_iter_next (iter, "(&su&sd&s)", NULL, &pid, NULL, NULL, NULL))
    if (pid == GPOINTER_TO_UINT (data))
      return TRUE;
  return FALSE;
}

/* A process sending 2,000 Hang signals of 250 KiB as fast as the bus
 * takes them, to a perfmond that takes up to 1,000 a second of each
 * process: its memory stays bounded (what it keeps is bounded in bytes,
 * the rest dropped as it arrives), it still answers, and a well-behaved
 * process's hang is heard. */
static void
test_hang_flood (Fixture       *fixture,
                 gconstpointer  data)
{
  const char * const flood_options[] = { "--mode=hang-flood", "--seconds=120", NULL };
  const char * const hang_options[] = { "--hang-threshold=50", "--stall-after=1500", "--stall=300", NULL };
  guint flood_pid, healthy;
  guint64 peak_kib;
  GSubprocess *flooder = NULL;

  const char * const options[] = { "--poll-interval=100", "--max-signals=1000", NULL };

  start_daemon (fixture, options);
  flood_pid = start_child_full (fixture, flood_options, FALSE, &flooder);
  healthy = start_child (fixture, hang_options);
  /* Heard while the flood lasts (up to 120 s), not at once: under load,
   * and under ThreadSanitizer, perfmond's share of the flood comes first. */
  wait_until_for (fixture, has_hang_of, GUINT_TO_POINTER (healthy), "the healthy child's hang", 150);
  /* The flooder exits once the bus took its whole flood. */
  {
    g_autoptr(GError) error = NULL;

    g_subprocess_wait (flooder, NULL, &error);
    g_assert_no_error (error);
    g_assert_cmpint (g_subprocess_get_exit_status (flooder), ==, 0);
  }
  g_test_message ("flooder pid %u done", flood_pid);
  g_assert_true (is_registered (fixture, GUINT_TO_POINTER (healthy)));
  peak_kib = proc_status_kib (fixture->daemon, "VmHWM");
  g_test_message ("perfmond peak RSS under the Hang flood: %" G_GUINT64_FORMAT " KiB", peak_kib);
  g_assert_cmpuint (peak_kib, >, 0);
  /* 500 MB went by; a few flood signals a second are all it may keep. */
  assert_rss_below (peak_kib, 128 * 1024);
}

/* --max-history-mib bounds the bytes of everything kept, the newest
 * snapshots included: 10 processes of 9,999 groups with 1 KiB names
 * (10 MiB a snapshot) under 1 MiB are refused, and perfmond stays small.
 *
 * Under ThreadSanitizer, 3 of them: perfmond, slowed down ten times and
 * more, reads the 100 MiB of 10 replies more slowly than they come, and
 * the test bus's dbus-daemon refuses to queue more for it ("full message
 * queue"), so the polls fail for a reason that is not the one tested.
 * Each snapshot alone is over the budget: 3 test the same path. */
static void
run_history_bytes (Fixture  *fixture,
                   gboolean  bytes)
{
  /* A 10 MiB snapshot takes a loaded machine seconds to build and send:
   * the default 5 s call timeout would fail the poll for another reason. */
  const char * const options[] = { "--max-history-mib=1", "--call-timeout=60000", NULL };
  const char * const big_options[] = { "--mode=big", bytes ? "--bytes" : NULL, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  guint pids[10];
  guint n_pids = UNDER_TSAN ? 3 : G_N_ELEMENTS (pids);
  guint64 peak_kib;

  start_daemon (fixture, options);
  for (guint i = 0; i < n_pids; i++)
    pids[i] = start_child (fixture, big_options);
  for (guint i = 0; i < n_pids; i++)
    {
      wait_until (fixture, is_registered, GUINT_TO_POINTER (pids[i]), "a big child to register");
      /* It waits for perfmond's poll of the process (up to the call
       * timeout above). */
      reply = g_dbus_connection_call_sync (fixture->connection, DAEMON_NAME, DAEMON_PATH, DAEMON_IFACE,
                                           "GetSnapshot", g_variant_new ("(u)", pids[i]), NULL,
                                           G_DBUS_CALL_FLAGS_NO_AUTO_START, 90000, NULL, &error);
      g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED);
      if (strstr (error->message, "--max-history-mib") == NULL)
        g_error ("GetSnapshot of a big process failed for another reason: %s", error->message);
      g_clear_error (&error);
    }
  /* A few more polls of all of them. */
  g_usleep (3 * G_USEC_PER_SEC);
  peak_kib = proc_status_kib (fixture->daemon, "VmRSS");
  g_test_message ("perfmond RSS with 10 big processes: %" G_GUINT64_FORMAT " KiB", peak_kib);
  assert_rss_below (peak_kib, 96 * 1024);
}

static void
test_history_bytes (Fixture       *fixture,
                    gconstpointer  data)
{
  run_history_bytes (fixture, FALSE);
}

/* The same with snapshots sent as GetSnapshotBytes sends them: the bytes
 * kept are bounded the same way. */
static void
test_history_bytes_blob (Fixture       *fixture,
                         gconstpointer  data)
{
  run_history_bytes (fixture, TRUE);
}

/* String arguments are bounded, and errors quote a short prefix. */
static void
test_long_strings (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autofree char *id = g_strnfill (1024 * 1024, 'i');
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  start_daemon (fixture, fast_daemon);
  reply = call (fixture, "GetHang", g_variant_new ("(s)", id), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  g_assert_cmpuint (strlen (error->message), <, 256);
  g_clear_error (&error);
  g_clear_pointer (&reply, g_variant_unref);

  /* Small enough to be read, too long to be a hang id. */
  id[200] = '\0';
  reply = call (fixture, "GetHang", g_variant_new ("(s)", id), &error);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  g_assert_cmpuint (strlen (error->message), <, 256);
  g_assert_nonnull (strstr (error->message, "id: expected a hang id of at most"));
  g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (TRUE)));
}

static int
compare_int64 (gconstpointer a,
               gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

  return x < y ? -1 : x > y;
}

/* Polls are spread over the interval, not sent all at once: the snapshots
 * of 10 processes, taken when polled, fall in several slots of the
 * 1 s interval. */
static void
test_poll_spread (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autoptr(GArray) phases = g_array_new (FALSE, FALSE, sizeof (gint64));
  guint pids[10];
  gint64 reference = 0, largest_gap, previous;

  start_daemon (fixture, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (pids); i++)
    pids[i] = start_child (fixture, NULL);
  /* Two rounds after the last registration. */
  g_usleep (2500 * 1000);
  for (guint i = 0; i < G_N_ELEMENTS (pids); i++)
    {
      g_autoptr(GPtrArray) history = get_history (fixture, pids[i], 0);
      gint64 timestamp, phase;

      g_assert_cmpuint (history->len, >=, 2);
      timestamp = perfmon_snapshot_get_timestamp (g_ptr_array_index (history, history->len - 1));
      if (i == 0)
        reference = timestamp;
      phase = ((timestamp - reference) % G_USEC_PER_SEC + G_USEC_PER_SEC) % G_USEC_PER_SEC;
      g_array_append_val (phases, phase);
    }
  g_array_sort (phases, compare_int64);
  /* All at once, the phases would sit together and leave a gap of almost
   * the whole second. */
  largest_gap = G_USEC_PER_SEC - g_array_index (phases, gint64, phases->len - 1) + g_array_index (phases, gint64, 0);
  previous = g_array_index (phases, gint64, 0);
  for (guint i = 1; i < phases->len; i++)
    {
      largest_gap = MAX (largest_gap, g_array_index (phases, gint64, i) - previous);
      previous = g_array_index (phases, gint64, i);
    }
  g_test_message ("largest gap between poll phases: %" G_GINT64_FORMAT " µs", largest_gap);
  g_assert_cmpint (largest_gap, <, G_USEC_PER_SEC / 2);
}

/* Counts the method calls of the bus named in a monitor connection. */
typedef struct
{
  gint snapshot_bytes;   /* atomic: GDBus's worker thread counts */
  gint publish;
} CallCounts;

static gboolean
publish_called (Fixture  *fixture,
                gpointer  data)
{
  CallCounts *counts = data;

  return g_atomic_int_get (&counts->publish) > 0;
}

static GDBusMessage *
count_calls (GDBusConnection *connection,
             GDBusMessage    *message,
             gboolean         incoming,
             gpointer         user_data)
{
  CallCounts *counts = user_data;
  const char *member = g_dbus_message_get_member (message);

  if (incoming && g_dbus_message_get_message_type (message) == G_DBUS_MESSAGE_TYPE_METHOD_CALL &&
      member != NULL)
    {
      if (g_str_equal (member, "GetSnapshotBytes"))
        g_atomic_int_inc (&counts->snapshot_bytes);
      else if (g_str_equal (member, "Publish"))
        g_atomic_int_inc (&counts->publish);
    }
  /* A monitor must not answer what it sees (GDBus would, for calls to
   * paths it does not serve): every call stops here. */
  if (incoming && g_dbus_message_get_message_type (message) == G_DBUS_MESSAGE_TYPE_METHOD_CALL)
    {
      g_object_unref (message);
      return NULL;
    }
  return message;
}

/* A connection that becomes the bus's monitor and counts, in @counts,
 * every call of GetSnapshotBytes and Publish on the bus. */
static GDBusConnection *
count_calls_on_bus (Fixture    *fixture,
                    CallCounts *counts)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  GDBusConnection *monitor;

  monitor = g_dbus_connection_new_for_address_sync (g_test_dbus_get_bus_address (fixture->bus),
                                                    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                    G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                    NULL, NULL, &error);
  g_assert_no_error (error);
  g_dbus_connection_add_filter (monitor, count_calls, counts, NULL);
  reply = g_dbus_connection_call_sync (monitor, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus.Monitoring", "BecomeMonitor",
                                       g_variant_new ("(asu)", NULL, 0), NULL, G_DBUS_CALL_FLAGS_NONE,
                                       -1, NULL, &error);
  g_assert_no_error (error);
  return monitor;
}

/* A process of this libperfmon publishes its snapshots in the region
 * perfmond gives it (Monitor1.Publish): after the first poll, perfmond
 * keeps the process's history at its interval without a call. The bus's
 * own monitor (BecomeMonitor) counts the calls. */
static void
test_publish (Fixture       *fixture,
              gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=100", NULL };
  g_autoptr(GDBusConnection) monitor = NULL;
  g_autoptr(GPtrArray) before = NULL;
  g_autoptr(GPtrArray) after = NULL;
  CallCounts counts = { 0, 0 };
  gint calls_before;
  guint pid;

  monitor = count_calls_on_bus (fixture, &counts);

  start_daemon (fixture, options);
  pid = start_child (fixture, NULL);
  /* Publishing starts after the first poll. */
  wait_until (fixture, publish_called, &counts, "perfmond to call Publish");
  g_usleep (300 * 1000);
  before = get_history (fixture, pid, 0);
  calls_before = g_atomic_int_get (&counts.snapshot_bytes);
  g_usleep (1500 * 1000);
  after = get_history (fixture, pid, 0);

  g_test_message ("%u snapshots in 1.5 s at 100 ms, %d GetSnapshotBytes calls in all, %d during",
                  after->len - before->len, g_atomic_int_get (&counts.snapshot_bytes),
                  g_atomic_int_get (&counts.snapshot_bytes) - calls_before);
  g_assert_cmpint (g_atomic_int_get (&counts.publish), ==, 1);
  g_assert_cmpint (g_atomic_int_get (&counts.snapshot_bytes), ==, calls_before);
  /* 15 intervals: the history keeps up without a call (half of them, for
   * a loaded machine). */
  g_assert_cmpuint (after->len, >=, before->len + 7);
  g_assert_cmpint (perfmon_snapshot_get_timestamp (g_ptr_array_index (after, after->len - 1)), >,
                   perfmon_snapshot_get_timestamp (g_ptr_array_index (before, before->len - 1)));
  g_assert_cmpuint (perfmon_snapshot_get_pid (g_ptr_array_index (after, after->len - 1)), ==, pid);
  g_dbus_connection_close_sync (monitor, NULL, NULL);
}

static gboolean
publish_called_twice (Fixture  *fixture,
                      gpointer  data)
{
  CallCounts *counts = data;

  return g_atomic_int_get (&counts->publish) >= 2;
}

/* A process whose snapshot outgrows the region (1 MiB) is polled over
 * D-Bus once, then handed a region that fits, and publishes there. Only
 * the snapshots of the last 3 s are fetched: a history of 1.2 MB
 * snapshots takes long to send under ThreadSanitizer. */
static void
test_publish_grows (Fixture       *fixture,
                    gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=1000", "--max-groups=100000", NULL };
  /* 8,001 groups: a snapshot of 1.2 MB. */
  const char * const child_options[] = { "--windows=4000", "--tick=1000", NULL };
  g_autoptr(GDBusConnection) monitor = NULL;
  g_autoptr(GPtrArray) recent = NULL;
  g_autoptr(GVariant) size_probe = NULL;
  CallCounts counts = { 0, 0 };
  gint calls_before;
  gint64 since;
  guint pid;

  monitor = count_calls_on_bus (fixture, &counts);

  start_daemon (fixture, options);
  pid = start_child (fixture, child_options);
  wait_until (fixture, publish_called_twice, &counts, "a second Publish, of a bigger region");
  /* The process writes in the new region half an interval later. */
  g_usleep (1500 * 1000);
  since = g_get_monotonic_time ();   /* the snapshots' clock */
  calls_before = g_atomic_int_get (&counts.snapshot_bytes);
  g_usleep (3000 * 1000);
  recent = get_history (fixture, pid, since);
  g_assert_cmpuint (recent->len, >, 0);
  size_probe = g_variant_ref_sink (perfmon_snapshot_to_variant (g_ptr_array_index (recent, 0)));
  g_test_message ("a snapshot of %" G_GSIZE_FORMAT " bytes; %u snapshots in 3 s at 1 s, "
                  "%d GetSnapshotBytes calls in all, %d during",
                  g_variant_get_size (size_probe), recent->len, g_atomic_int_get (&counts.snapshot_bytes),
                  g_atomic_int_get (&counts.snapshot_bytes) - calls_before);
  g_assert_cmpuint (g_variant_get_size (size_probe), >, 1024 * 1024);
  g_assert_cmpint (g_atomic_int_get (&counts.publish), ==, 2);
  g_assert_cmpint (g_atomic_int_get (&counts.snapshot_bytes), ==, calls_before);
  g_dbus_connection_close_sync (monitor, NULL, NULL);
}

/* Processes that write what they like in the region perfmond hands them:
 * perfmond stays up and keeps the others' histories; a snapshot that is
 * not one is kept out; a length beyond the region sends the process back
 * to polling over D-Bus (whose answers are good here); a write that never
 * ends is waited out. */
static void
test_publish_hostile (Fixture       *fixture,
                      gconstpointer  data)
{
  const char * const options[] = { "--poll-interval=100", "--call-timeout=300", NULL };
  const char * const garbage_options[] = { "--mode=publish-garbage", NULL };
  const char * const overlength_options[] = { "--mode=publish-overlength", NULL };
  const char * const torn_options[] = { "--mode=publish-torn", NULL };
  g_autoptr(GDBusConnection) monitor = NULL;
  g_autoptr(GPtrArray) garbage_before = NULL;
  g_autoptr(GPtrArray) torn_before = NULL;
  CallCounts counts = { 0, 0 };
  guint garbage, overlength, torn, healthy;
  gint calls_before;

  monitor = count_calls_on_bus (fixture, &counts);

  start_daemon (fixture, options);
  garbage = start_child (fixture, garbage_options);
  overlength = start_child (fixture, overlength_options);
  torn = start_child (fixture, torn_options);
  wait_until (fixture, is_registered, GUINT_TO_POINTER (garbage), "the garbage publisher registered");
  wait_until (fixture, is_registered, GUINT_TO_POINTER (overlength), "the over-length publisher registered");
  wait_until (fixture, is_registered, GUINT_TO_POINTER (torn), "the torn publisher registered");
  healthy = start_child (fixture, NULL);
  wait_until (fixture, history_grows, GUINT_TO_POINTER (healthy), "the healthy child's history");
  /* The over-length one is polled over D-Bus again, at the interval. */
  wait_until (fixture, history_grows, GUINT_TO_POINTER (overlength), "the over-length publisher's history");
  garbage_before = get_history (fixture, garbage, 0);
  torn_before = get_history (fixture, torn, 0);
  calls_before = g_atomic_int_get (&counts.snapshot_bytes);
  g_usleep (500 * 1000);
  g_test_message ("%d GetSnapshotBytes calls in 0.5 s at 100 ms", g_atomic_int_get (&counts.snapshot_bytes) - calls_before);
  g_assert_cmpint (g_atomic_int_get (&counts.snapshot_bytes) - calls_before, >=, 2);
  g_assert_cmpint (g_atomic_int_get (&counts.publish), >=, 4);

  /* The garbage and the torn write never enter a history: only the
   * snapshots of the polls over D-Bus before Publish() are there (the
   * one at registration, and the one at the slot Publish() was called
   * at), and no more come. */
  {
    g_autoptr(GPtrArray) garbage_history = get_history (fixture, garbage, 0);
    g_autoptr(GPtrArray) torn_history = get_history (fixture, torn, 0);

    g_assert_cmpuint (garbage_history->len, <=, 2);
    g_assert_cmpuint (torn_history->len, <=, 2);
    g_assert_cmpuint (garbage_history->len, ==, garbage_before->len);
    g_assert_cmpuint (torn_history->len, ==, torn_before->len);
  }
  g_assert_true (name_has_owner (fixture, GINT_TO_POINTER (TRUE)));
  g_dbus_connection_close_sync (monitor, NULL, NULL);
}

static void
become_nobody (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (setgroups (0, NULL) != 0 || setgid (65534) != 0 || setuid (65534) != 0)
    _exit (125);
}

/* perfmond serves and accepts only its own uid: as `nobody`, on a bus that
 * lets any uid connect, every method and property is refused. */
static void
test_other_uid (Fixture       *fixture,
                gconstpointer  data)
{
  static const char * const calls[][2] = {
    { "org.perfmon.Daemon1.ListProcesses", NULL },
    { "org.perfmon.Daemon1.Register", NULL },
    { "org.perfmon.Daemon1.GetHang", "1-1" },
    { "org.perfmon.Daemon1.GetAggregate", NULL },
    { "org.freedesktop.DBus.Properties.GetAll", DAEMON_IFACE },
  };
  g_autofree char *dir = NULL;
  g_autofree char *config = NULL;
  g_autofree char *config_path = NULL;
  g_autofree char *address = NULL;
  g_autoptr(GSubprocess) bus = NULL;
  g_autoptr(GSubprocess) daemon = NULL;
  g_autoptr(GDataInputStream) out = NULL;
  g_autoptr(GDBusConnection) own = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  gint64 deadline;

  if (geteuid () != 0)
    {
      g_test_skip ("needs root, to run a client as nobody");
      return;
    }

  /* A bus of our own: GTestDBus's lets only its own uid connect. */
  dir = g_dir_make_tmp ("perfmon-test-uid-XXXXXX", &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_chmod (dir, 0755), ==, 0);
  config = g_strdup_printf ("<busconfig><type>session</type><listen>unix:path=%s/bus</listen>"
                            "<auth>EXTERNAL</auth><policy context=\"default\"><allow user=\"*\"/>"
                            "<allow send_destination=\"*\" eavesdrop=\"true\"/><allow eavesdrop=\"true\"/>"
                            "<allow own=\"*\"/></policy></busconfig>", dir);
  config_path = g_build_filename (dir, "bus.conf", NULL);
  g_file_set_contents (config_path, config, -1, &error);
  g_assert_no_error (error);
  bus = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, "dbus-daemon", "--nofork",
                          "--print-address=1", "--config-file", config_path, NULL);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (bus));
  address = g_data_input_stream_read_line (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (address);

  daemon = start_daemon_on (address, G_SUBPROCESS_FLAGS_NONE, NULL);
  own = g_dbus_connection_new_for_address_sync (address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                NULL, NULL, &error);
  g_assert_no_error (error);
  deadline = g_get_monotonic_time () + DEADLINE_S * G_USEC_PER_SEC;
  while (!name_has_owner_on (own))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (20 * 1000);
    }
  /* Its own uid is served. */
  reply = g_dbus_connection_call_sync (own, DAEMON_NAME, DAEMON_PATH, DAEMON_IFACE, "ListProcesses", NULL,
                                       NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, 20000, NULL, &error);
  g_assert_no_error (error);

  for (guint i = 0; i < G_N_ELEMENTS (calls); i++)
    {
      g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
      g_autoptr(GSubprocess) client = NULL;
      g_autofree char *client_out = NULL;
      g_autofree char *client_err = NULL;
      const char *argv[] = { "gdbus", "call", "--address", address, "--dest", DAEMON_NAME,
                             "--object-path", DAEMON_PATH, "--method", calls[i][0], calls[i][1], NULL };

      g_subprocess_launcher_set_child_setup (launcher, become_nobody, NULL, NULL);
      client = g_subprocess_launcher_spawnv (launcher, argv, &error);
      g_assert_no_error (error);
      g_subprocess_communicate_utf8 (client, NULL, NULL, &client_out, &client_err, &error);
      g_assert_no_error (error);
      g_test_message ("as nobody, %s: %s", calls[i][0], client_err);
      g_assert_cmpint (g_subprocess_get_exit_status (client), !=, 0);
      g_assert_nonnull (strstr (client_err, "AccessDenied"));
      g_assert_nonnull (strstr (client_err, "served only to callers with the process's uid"));
    }
  /* Nobody got registered. */
  g_clear_pointer (&reply, g_variant_unref);
  reply = g_dbus_connection_call_sync (own, DAEMON_NAME, DAEMON_PATH, DAEMON_IFACE, "ListProcesses", NULL,
                                       G_VARIANT_TYPE ("(a(usssx))"), G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                       20000, NULL, &error);
  g_assert_no_error (error);
  {
    g_autoptr(GVariant) list = g_variant_get_child_value (reply, 0);

    g_assert_cmpuint (g_variant_n_children (list), ==, 0);
  }

  g_subprocess_send_signal (daemon, SIGTERM);
  g_subprocess_wait (daemon, NULL, NULL);
  g_dbus_connection_close_sync (own, NULL, NULL);
  g_subprocess_force_exit (bus);
  g_subprocess_wait (bus, NULL, NULL);
  test_remove_tree (dir);
}

/* --upload-url: a ping goes to the receiver as the edge server spec says
 * (tests/ping-receiver.py checks it), again after a 503, and its file is
 * deleted once the receiver said 200. */
static void
test_upload (Fixture       *fixture,
             gconstpointer  data)
{
  const char * const child_options[] = { "--hang-threshold=100", "--hangs-per-ping=1", "--stall-after=300",
                                         "--stall=400", NULL };
  g_autofree char *receiver_path = g_test_build_filename (G_TEST_DIST, "ping-receiver.py", NULL);
  g_autoptr(GSubprocess) receiver = NULL;
  g_autoptr(GDataInputStream) out = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *line = NULL;
  g_autofree char *url = NULL;
  g_autofree char *doc_id = NULL;
  g_autofree char *path = NULL;
  const char *options[3] = { "--poll-interval=100", NULL, NULL };
  g_autoptr(GVariant) ping = NULL;
  guint pid;

  receiver = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, "/usr/bin/python3", receiver_path, NULL);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (receiver));
  line = g_data_input_stream_read_line (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (line, "PORT "));
  url = g_strdup_printf ("--upload-url=http://127.0.0.1:%s", line + 5);
  options[1] = url;

  start_daemon (fixture, options);
  start_child (fixture, child_options);
  wait_until (fixture, has_ping_signal, NULL, "a Ping signal");
  for (guint i = 0; i < fixture->signals->len && ping == NULL; i++)
    {
      const char *name;

      g_variant_get_child (g_ptr_array_index (fixture->signals, i), 0, "&s", &name);
      if (g_str_equal (name, "Ping"))
        g_variant_get_child (g_ptr_array_index (fixture->signals, i), 1, "@(us)", &ping);
    }
  g_variant_get (ping, "(us)", &pid, &path);

  /* Refused once (503), kept, sent again, accepted, deleted. */
  g_clear_pointer (&line, g_free);
  line = g_data_input_stream_read_line (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("receiver: %s", line);
  g_assert_true (g_str_has_prefix (line, "RETRY "));
  doc_id = g_strdup (line + 6);
  g_assert_true (g_str_has_suffix (path, ".json"));
  g_clear_pointer (&line, g_free);
  line = g_data_input_stream_read_line (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("receiver: %s", line);
  g_assert_true (g_str_has_prefix (line, "OK "));
  g_assert_cmpstr (line + 3, ==, doc_id);
  wait_until (fixture, pidfile_gone, path, "the uploaded ping's file to go");

  g_subprocess_force_exit (receiver);
  g_subprocess_wait (receiver, NULL, NULL);
}

/* A ping receiver (tests/ping-receiver.py --accept-first) whose lines
 * are read as the test's main context runs. */
typedef struct
{
  GSubprocess      *process;
  GDataInputStream *out;
  GCancellable     *cancellable;
  GPtrArray        *lines;   /* char * */
  char             *url_option;
} Receiver;

static void
receiver_read (GObject      *source,
               GAsyncResult *result,
               gpointer      data)
{
  Receiver *receiver = data;
  g_autoptr(GError) error = NULL;
  char *line = g_data_input_stream_read_line_finish (G_DATA_INPUT_STREAM (source), result, NULL, &error);

  if (line == NULL)
    return;
  g_test_message ("receiver: %s", line);
  g_ptr_array_add (receiver->lines, line);
  g_data_input_stream_read_line_async (receiver->out, G_PRIORITY_DEFAULT, receiver->cancellable,
                                       receiver_read, receiver);
}

static Receiver *
receiver_start (void)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "ping-receiver.py", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *line = NULL;
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  Receiver *receiver = g_new0 (Receiver, 1);

  /* Gone with the test, even when it fails. */
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  receiver->process = g_subprocess_launcher_spawn (launcher, &error, "/usr/bin/python3", path,
                                                   "--accept-first", NULL);
  g_assert_no_error (error);
  receiver->out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (receiver->process));
  line = g_data_input_stream_read_line (receiver->out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (line, "PORT "));
  receiver->url_option = g_strdup_printf ("--upload-url=http://127.0.0.1:%s", line + 5);
  receiver->lines = g_ptr_array_new_with_free_func (g_free);
  receiver->cancellable = g_cancellable_new ();
  g_data_input_stream_read_line_async (receiver->out, G_PRIORITY_DEFAULT, receiver->cancellable,
                                       receiver_read, receiver);
  return receiver;
}

static void
receiver_stop (Receiver *receiver)
{
  g_cancellable_cancel (receiver->cancellable);
  g_subprocess_force_exit (receiver->process);
  g_subprocess_wait (receiver->process, NULL, NULL);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_object_unref (receiver->cancellable);
  g_object_unref (receiver->out);
  g_object_unref (receiver->process);
  g_ptr_array_unref (receiver->lines);
  g_free (receiver->url_option);
  g_free (receiver);
}

/* hangId → the docIds (distinct) of the pings that carried it, from the
 * receiver's OK lines; TRUE when there is no BAD line. The edge server
 * deduplicates by docId: a ping sent twice (perfmond killed between the
 * server's 200 and the file's deletion) is one ping. */
static gboolean
receiver_hangs (Receiver   *receiver,
                GHashTable *hangs)
{
  g_autoptr(GHashTable) docs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gboolean good = TRUE;

  g_hash_table_remove_all (hangs);
  for (guint i = 0; i < receiver->lines->len; i++)
    {
      const char *line = g_ptr_array_index (receiver->lines, i);
      g_auto(GStrv) fields = NULL;
      g_auto(GStrv) ids = NULL;

      if (!g_str_has_prefix (line, "OK "))
        {
          good = FALSE;
          continue;
        }
      fields = g_strsplit (line, " ", 3);
      g_assert_nonnull (fields[1]);
      if (!g_hash_table_add (docs, g_strdup (fields[1])))
        continue;
      ids = g_strsplit (fields[2] != NULL ? fields[2] : "", ",", -1);
      for (guint j = 0; ids[j] != NULL; j++)
        if (*ids[j] != '\0')
          g_hash_table_insert (hangs, g_strdup (ids[j]),
                               GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (hangs, ids[j])) + 1));
    }
  return good;
}

/* The "<name>.json" files directly in @dir (pings not sent yet). */
static guint
count_ping_files (const char *dir)
{
  g_autoptr(GDir) listing = g_dir_open (dir, 0, NULL);
  const char *name;
  guint n = 0;

  while (listing != NULL && (name = g_dir_read_name (listing)) != NULL)
    n += name[0] != '.' && g_str_has_suffix (name, ".json");
  return n;
}

typedef struct
{
  Receiver   *receiver;
  GHashTable *hangs;
  guint       n_hangs;
  const char *pings_dir;
  gboolean    child_exited;
} UploadState;

static void
child_exited (GObject      *source,
              GAsyncResult *result,
              gpointer      data)
{
  g_subprocess_wait_finish (G_SUBPROCESS (source), result, NULL);
  *(gboolean *) data = TRUE;
}

static gboolean
uploaded_some (Fixture  *fixture,
               gpointer  data)
{
  UploadState *state = data;

  receiver_hangs (state->receiver, state->hangs);
  return g_hash_table_size (state->hangs) >= state->n_hangs;
}

static gboolean
all_uploaded (Fixture  *fixture,
              gpointer  data)
{
  UploadState *state = data;

  /* The child has made all its pings (it writes the last one as it
   * exits), none is left to send, and none is pending. */
  return state->child_exited && count_ping_files (state->pings_dir) == 0;
}

/* perfmond killed (SIGKILL) in the middle of a burst of hangs, each its own
 * ping, and started again: every hang reaches the server in exactly one
 * ping (by hangId, pings deduplicated by docId as the edge server does),
 * and every ping file is gone. The old perfmond lost the pings written while
 * it was down (nothing rescanned the directory) and those whose Ping signal
 * its shared 3-a-second budget dropped behind the Hang signals. */
static void
test_upload_restart (Fixture       *fixture,
                     gconstpointer  data)
{
  /* The default pings directory, as a user's: earlier tests' pings left
   * there are sent too. */
  g_autofree char *pings_dir = g_build_filename (g_get_user_state_dir (), "perfmon", "pings", NULL);
  g_autoptr(GHashTable) hangs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  Receiver *receiver = receiver_start ();
  /* A Ping signal dropped behind the Hang signals delays its ping until
   * the next rescan: every 2 s here (60 s by default), well inside the
   * test's deadline even on a loaded machine. */
  const char * const options[] = { "--poll-interval=100", "--max-signals=3", "--pings-rescan=2",
                                   receiver->url_option, NULL };
  const char * const child_options[] = { "--hang-threshold=50", "--hangs-per-ping=1", "--stall-after=300",
                                         "--stall=120", "--stalls=30", "--seconds=12", NULL };
  UploadState state = { receiver, hangs, 3, pings_dir, FALSE };
  GSubprocess *child = NULL;
  GHashTableIter iter;
  gpointer key, value;

  start_daemon (fixture, options);
  start_child_full (fixture, child_options, TRUE, &child);
  g_subprocess_wait_async (child, NULL, child_exited, &state.child_exited);
  wait_until (fixture, uploaded_some, &state, "3 hangs uploaded");

  /* Killed as a crash or the OOM killer would, and started again a
   * little later: the child goes on hanging meanwhile. */
  g_subprocess_force_exit (fixture->daemon);
  g_subprocess_wait (fixture->daemon, NULL, NULL);
  g_clear_object (&fixture->daemon);
  g_usleep (G_USEC_PER_SEC);
  start_daemon (fixture, options);

  wait_until (fixture, all_uploaded, &state, "every ping uploaded and deleted");
  g_assert_true (receiver_hangs (receiver, hangs));
  g_test_message ("%u hangs uploaded", g_hash_table_size (hangs));
  /* The 30 stalls, and perhaps a slow start-up's hang or earlier tests'. */
  g_assert_cmpuint (g_hash_table_size (hangs), >=, 30);
  g_hash_table_iter_init (&iter, hangs);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      if (GPOINTER_TO_UINT (value) != 1)
        g_error ("hang %s in %u pings", (const char *) key, GPOINTER_TO_UINT (value));
    }
  receiver_stop (receiver);
}

static gboolean
has_ok_line (Fixture  *fixture,
             gpointer  data)
{
  Receiver *receiver = data;

  while (g_main_context_iteration (NULL, FALSE))
    ;
  for (guint i = 0; i < receiver->lines->len; i++)
    if (g_str_has_prefix (g_ptr_array_index (receiver->lines, i), "OK "))
      return TRUE;
  return FALSE;
}

/* A ping as a hang monitor writes one, with the id @doc_id (a UUID):
 * perfmond would send it, were it allowed to read it. @stack is the
 * frames of its one hang, against one module. */
#define SECRET_DOC "5ec2e700-0000-4000-8000-000000000001"
#define NOBODY_DOC "5ec2e700-0000-4000-8000-000000000002"
#define GOOD_DOC   "5ec2e700-0000-4000-8000-000000000003"
static void
write_ping_with (const char *path,
                 const char *doc_id,
                 int         version,
                 const char *stack)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *text =
    g_strdup_printf ("{\"type\":\"bhr\",\"id\":\"%s\",\"creationDate\":\"2026-11-28T09:31:52.123Z\","
                     "\"version\":%d,\"application\":{\"architecture\":\"x86-64\",\"buildId\":\"20250101000000\","
                     "\"channel\":\"c\",\"name\":\"x\",\"platformVersion\":\"00.0.3.0\",\"vendor\":\"perfmon\","
                     "\"version\":\"00.1\",\"xpcomAbi\":\"x86_64-gcc3\"},"
                     "\"clientId\":\"11111111-2222-4333-8444-555555555555\","
                     "\"payload\":{\"timeSinceLastPing\":0,\"modules\":[[\"libx.so\",\"0A0B\"]],"
                     "\"hangs\":[{\"duration\":300,\"thread\":\"main\",\"runnableName\":\"x\","
                     "\"process\":\"default\",\"remoteType\":null,\"annotations\":[],\"stack\":%s,"
                     "\"hangId\":\"h1\"}]}}", doc_id, version, stack);

  g_file_set_contents (path, text, -1, &error);
  g_assert_no_error (error);
}

static void
write_fake_ping (const char *path,
                 const char *doc_id)
{
  write_ping_with (path, doc_id, 4, "[[0,\"10\"]]");
}

/* A process announces paths that are no pings of its pings directory: a
 * file outside it, /etc/passwd, a way out through "..", a link, a FIFO and
 * (as root) a file of another uid inside it. perfmond reads, sends and
 * deletes none of them (each would pass as a ping), says so a few times
 * and not at each signal, and still sends the process's real ping. */
static void
test_upload_only_pings (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autofree char *pings_dir = g_build_filename (fixture->tmp_dir, "pings", NULL);
  g_autofree char *pings_dir_option = g_strdup_printf ("--pings-dir=%s", pings_dir);
  g_autofree char *secret = g_build_filename (fixture->tmp_dir, "secret-not-a-ping.json", NULL);
  g_autofree char *escape = g_build_filename (pings_dir, "..", "secret-not-a-ping.json", NULL);
  g_autofree char *link = g_build_filename (pings_dir, "link.json", NULL);
  g_autofree char *fifo = g_build_filename (pings_dir, "fifo.json", NULL);
  g_autofree char *other = g_build_filename (pings_dir, "nobody.json", NULL);
  char *announce[5];
  Receiver *receiver = receiver_start ();
  const char * const options[] = { "--poll-interval=100", "--pings-rescan=1", receiver->url_option,
                                   pings_dir_option, NULL };
  g_autoptr(GInputStream) err = NULL;
  g_autoptr(GBytes) said = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) lines = NULL;
  const char *said_text;
  guint warnings = 0;
  gsize length;

  g_assert_cmpint (g_mkdir (pings_dir, 0700), ==, 0);
  write_fake_ping (secret, SECRET_DOC);
  g_assert_cmpint (symlink (secret, link), ==, 0);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  write_fake_ping (other, NOBODY_DOC);
  if (geteuid () == 0)
    g_assert_cmpint (chown (other, 65534, 65534), ==, 0);
  announce[0] = g_strdup_printf ("--announce=%s", secret);
  announce[1] = g_strdup ("--announce=/etc/passwd");
  announce[2] = g_strdup_printf ("--announce=%s", escape);
  announce[3] = g_strdup_printf ("--announce=%s", link);
  announce[4] = g_strdup_printf ("--announce=%s", fifo);
  {
    const char * const child_options[] = { "--hang-threshold=100", "--hangs-per-ping=1", "--stall-after=1500",
                                           "--stall=300", pings_dir_option, announce[0], announce[1],
                                           announce[2], announce[3], announce[4], NULL };

    fixture->daemon = start_daemon_full (fixture, G_SUBPROCESS_FLAGS_STDERR_PIPE, options);
    err = g_object_ref (g_subprocess_get_stderr_pipe (fixture->daemon));
    wait_until (fixture, name_has_owner, GINT_TO_POINTER (TRUE), "perfmond to own its name");
    subscribe (fixture);
    start_child (fixture, child_options);
  }

  /* The real ping is sent, and deleted; a few more rescans go by. */
  wait_until (fixture, has_ok_line, receiver, "the child's ping uploaded");
  g_usleep (3 * G_USEC_PER_SEC);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  for (guint i = 0; i < receiver->lines->len; i++)
    {
      const char *line = g_ptr_array_index (receiver->lines, i);

      g_assert_true (g_str_has_prefix (line, "OK "));
      g_assert_null (strstr (line, SECRET_DOC));
      g_assert_null (strstr (line, NOBODY_DOC));
    }
  g_assert_true (g_file_test (secret, G_FILE_TEST_IS_REGULAR));
  g_assert_true (g_file_test (link, G_FILE_TEST_IS_SYMLINK));
  g_assert_true (g_file_test (fifo, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (other, G_FILE_TEST_IS_REGULAR));
  g_assert_true (g_file_test ("/etc/passwd", G_FILE_TEST_IS_REGULAR));
  g_assert_cmpuint (count_ping_files (pings_dir), ==, 3);  /* link, fifo, nobody */
  /* Nor relayed. */
  for (guint i = 0; i < fixture->signals->len; i++)
    {
      g_autofree char *text = g_variant_print (g_ptr_array_index (fixture->signals, i), FALSE);

      g_assert_null (strstr (text, "secret-not-a-ping"));
      g_assert_null (strstr (text, "passwd"));
    }

  stop_daemon (fixture);
  said = g_input_stream_read_bytes (err, 1024 * 1024, NULL, &error);
  g_assert_no_error (error);
  said_text = g_bytes_get_data (said, &length);
  lines = g_strsplit (length > 0 ? said_text : "", "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    if (strstr (lines[i], "WARNING") != NULL)
      {
        g_test_message ("perfmond: %s", lines[i]);
        warnings++;
      }
  /* About 150 hostile signals a second for 4 s and more, and a rescan a
   * second: a handful of warnings. */
  g_assert_cmpuint (warnings, >, 0);
  g_assert_cmpuint (warnings, <=, 12);
  for (guint i = 0; i < G_N_ELEMENTS (announce); i++)
    g_free (announce[i]);
  receiver_stop (receiver);
}

/* perfmond reads each ping with the ping's one strict reader before it
 * sends it: a file of its pings directory that is no ping it could have
 * written (a version it does not know, a frame of no module, a name too
 * long) is kept and never sent, and the warning names the field without
 * quoting the file; the good ping beside them is sent. */
static void
test_upload_refuses_malformed_pings (Fixture       *fixture,
                                     gconstpointer  data)
{
  g_autofree char *pings_dir = g_build_filename (fixture->tmp_dir, "pings", NULL);
  g_autofree char *pings_dir_option = g_strdup_printf ("--pings-dir=%s", pings_dir);
  g_autofree char *version = g_build_filename (pings_dir, "version.json", NULL);
  g_autofree char *frame = g_build_filename (pings_dir, "frame.json", NULL);
  g_autofree char *good = g_build_filename (pings_dir, "good.json", NULL);
  g_autofree char *long_stack = NULL;
  Receiver *receiver = receiver_start ();
  const char * const options[] = { "--poll-interval=100", "--pings-rescan=1", receiver->url_option,
                                   pings_dir_option, NULL };
  g_autoptr(GInputStream) err = NULL;
  g_autoptr(GBytes) said = NULL;
  g_autoptr(GError) error = NULL;
  struct utimbuf old_times = { 1000000000, 1000000000 };
  const char *said_text;
  gsize length;

  g_assert_cmpint (g_mkdir (pings_dir, 0700), ==, 0);
  write_ping_with (version, "5ec2e700-0000-4000-8000-000000000004", 5, "[[0,\"10\"]]");
  /* A label of 20 KiB, past a report's 16 KiB strings. */
  {
    g_autofree char *label = g_strnfill (20 * 1024, 'x');

    long_stack = g_strdup_printf ("[\"%s\",[1,\"10\"]]", label);
  }
  write_ping_with (frame, "5ec2e700-0000-4000-8000-000000000005", 4, long_stack);
  /* Older: sent (or refused) first. */
  g_assert_cmpint (utime (version, &old_times), ==, 0);
  g_assert_cmpint (utime (frame, &old_times), ==, 0);
  write_fake_ping (good, GOOD_DOC);

  fixture->daemon = start_daemon_full (fixture, G_SUBPROCESS_FLAGS_STDERR_PIPE, options);
  err = g_object_ref (g_subprocess_get_stderr_pipe (fixture->daemon));
  wait_until (fixture, has_ok_line, receiver, "the good ping uploaded");
  for (guint i = 0; i < receiver->lines->len; i++)
    {
      const char *line = g_ptr_array_index (receiver->lines, i);

      g_assert_true (g_str_has_prefix (line, "OK " GOOD_DOC));
    }
  g_assert_true (g_file_test (version, G_FILE_TEST_IS_REGULAR));
  g_assert_true (g_file_test (frame, G_FILE_TEST_IS_REGULAR));

  stop_daemon (fixture);
  said = g_input_stream_read_bytes (err, 1024 * 1024, NULL, &error);
  g_assert_no_error (error);
  said_text = g_bytes_get_data (said, &length);
  g_test_message ("perfmond: %.*s", (int) length, said_text);
  g_assert_nonnull (g_strstr_len (said_text, length, "version.json: version: expected 4, got 5"));
  g_assert_nonnull (g_strstr_len (said_text, length, "frame.json: payload.hangs[0].stack[0]: "));
  g_assert_null (g_strstr_len (said_text, length, "xxxxxxxx"));
  receiver_stop (receiver);
}

static char *
bus_name_of (Fixture *fixture,
             guint    wanted)
{
  g_autoptr(GVariant) reply = call (fixture, "ListProcesses", NULL, NULL);
  g_autoptr(GVariantIter) iter = NULL;
  const char *name;
  guint pid;

  g_assert_nonnull (reply);
  g_variant_get (reply, "(a(usssx))", &iter);
  while (g_variant_iter_next (iter, "(u&s&s&sx)", &pid, &name, NULL, NULL, NULL))
    if (pid == wanted)
      return g_strdup (name);
  g_assert_not_reached ();
}

/* A call of @bytes of arguments to @path on @destination: refused. */
static void
send_huge_call (Fixture    *fixture,
                const char *destination,
                const char *path,
                const char *interface,
                const char *method,
                gsize       bytes,
                const char *limit)
{
  g_autofree guint8 *junk = g_malloc0 (bytes);
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  reply = g_dbus_connection_call_sync (fixture->connection, destination, path, interface, method,
                                       g_variant_new ("(@ay)", g_variant_new_fixed_array (G_VARIANT_TYPE_BYTE,
                                                                                         junk, bytes, 1)),
                                       NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, 60000, NULL, &error);
  g_assert_null (reply);
  g_assert_nonnull (error);
  g_test_message ("%s.%s of %" G_GSIZE_FORMAT " bytes: %s", interface, method, bytes, error->message);
  /* Refused by perfmon's filter, which names its limit. */
  g_assert_nonnull (strstr (error->message, limit));
}

/* RSS (KiB) of @process once it is at most @bound_kib, or the last seen
 * after DEADLINE_S: the memory of a dropped message goes back a moment
 * later, off the watched thread, and a loaded machine makes the moment
 * longer. */
static guint64
rss_settles_below (GSubprocess *process,
                   guint64      bound_kib)
{
  gint64 deadline = g_get_monotonic_time () + DEADLINE_S * G_USEC_PER_SEC;
  guint64 kib;

  while ((kib = proc_status_kib (process, "VmRSS")) >= bound_kib && g_get_monotonic_time () < deadline)
    g_usleep (G_USEC_PER_SEC / 10);
  return kib;
}

#define HUGE_CALL_BYTES (30 * 1024 * 1024)

/* Refused calls of 30 MB, to a monitored program's export and to
 * perfmond: the filter answers them with an error naming the limit and
 * drops them before they are queued and dispatched (the old export let
 * GDBus dispatch them: "Type of message (ay) does not match"), both keep
 * serving, and their memory goes back (doc/perfmond.md, "Memory after
 * oversized messages"): what stays is GDBus's read buffer, as big as the
 * largest message the connection received, and in the monitored program
 * one freed copy in GDBus's worker-thread arena that malloc_trim() cannot
 * give back (perfmon does not change a program's malloc settings).
 * perfmond maps big blocks and gives back the copy. Before: the program
 * went from 7.8 MB to 191 MB, and perfmond kept a second copy (68 MB). */
static void
test_huge_calls_memory (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autofree char *child_name = NULL;
  GSubprocess *child = NULL;
  guint64 child_before, child_after, daemon_before, daemon_after;
  const guint64 huge_kib = HUGE_CALL_BYTES / 1024, slack_kib = 8 * 1024;
  guint pid;

  start_daemon (fixture, fast_daemon);
  pid = start_child_full (fixture, NULL, TRUE, &child);
  child_name = bus_name_of (fixture, pid);
  g_usleep (G_USEC_PER_SEC / 2);
  child_before = proc_status_kib (child, "VmRSS");
  daemon_before = proc_status_kib (fixture->daemon, "VmRSS");

  /* Five rounds: what a spike leaves must not add up. */
  for (guint i = 0; i < 5; i++)
    {
      send_huge_call (fixture, child_name, PERFMON_MONITOR_OBJECT_PATH, PERFMON_MONITOR_INTERFACE,
                      "GetSnapshot", HUGE_CALL_BYTES, "65536");
      send_huge_call (fixture, DAEMON_NAME, DAEMON_PATH, DAEMON_IFACE, "GetSnapshot", HUGE_CALL_BYTES,
                      "4096");
    }
  /* Still serving. */
  g_assert_true (is_registered (fixture, GUINT_TO_POINTER (pid)));
  {
    g_autoptr(PerfmonSnapshot) snapshot = get_snapshot (fixture, pid);

    g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, pid);
  }
  child_after = rss_settles_below (child, child_before + 2 * huge_kib + slack_kib);
  daemon_after = rss_settles_below (fixture->daemon, daemon_before + huge_kib + slack_kib);
  g_test_message ("RSS after 5 refused calls of %" G_GUINT64_FORMAT " KiB: program %" G_GUINT64_FORMAT
                  " → %" G_GUINT64_FORMAT " KiB, perfmond %" G_GUINT64_FORMAT " → %" G_GUINT64_FORMAT " KiB",
                  huge_kib, child_before, child_after, daemon_before, daemon_after);
  assert_rss_below (child_after, child_before + 2 * huge_kib + slack_kib);
  assert_rss_below (daemon_after, daemon_before + huge_kib + slack_kib);
}

/* Without --upload-url nothing is sent and the ping stays. */
static void
test_no_upload_without_configuration (Fixture       *fixture,
                                      gconstpointer  data)
{
  const char * const child_options[] = { "--hang-threshold=100", "--hangs-per-ping=1", "--stall-after=300",
                                         "--stall=400", NULL };
  g_autoptr(GVariant) ping = NULL;
  g_autofree char *path = NULL;
  guint pid;

  start_daemon (fixture, fast_daemon);
  start_child (fixture, child_options);
  wait_until (fixture, has_ping_signal, NULL, "a Ping signal");
  for (guint i = 0; i < fixture->signals->len && ping == NULL; i++)
    {
      const char *name;

      g_variant_get_child (g_ptr_array_index (fixture->signals, i), 0, "&s", &name);
      if (g_str_equal (name, "Ping"))
        g_variant_get_child (g_ptr_array_index (fixture->signals, i), 1, "@(us)", &ping);
    }
  g_variant_get (ping, "(us)", &pid, &path);
  g_usleep (G_USEC_PER_SEC);
  g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));
}

int
main (int    argc,
      char **argv)
{
  g_autofree char *home = test_make_tmp_dir ("perfmon-test-daemon-home-XXXXXX");
  g_autofree char *state = g_build_filename (home, "state", NULL);
  int status;

  /* Before any thread: the hang monitors of the children write their pings
   * under XDG_STATE_HOME, and perfmond's default pid file would be under
   * XDG_RUNTIME_DIR (the tests give it --pidfile). */
  g_setenv ("XDG_STATE_HOME", state, TRUE);
  g_setenv ("XDG_RUNTIME_DIR", home, TRUE);
  runtime_dir = home;

  g_test_init (&argc, &argv, NULL);

  if (g_getenv ("PERFMOND") == NULL || g_getenv ("MONITORED_PROCESS") == NULL)
    {
      g_test_skip ("PERFMOND and MONITORED_PROCESS must name the programs (meson sets them)");
      return g_test_run ();
    }

#define ADD(path, func) g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
  ADD ("/daemon/register", test_register);
  ADD ("/daemon/poll", test_poll);
  ADD ("/daemon/aggregate", test_aggregate);
  ADD ("/daemon/hang", test_hang);
  ADD ("/daemon/ping", test_ping);
  ADD ("/daemon/hang-before-register", test_hang_before_register);
  ADD ("/daemon/history", test_history);
  ADD ("/daemon/history-budget", test_history_budget);
  ADD ("/daemon/crash-mid-poll", test_crash_mid_poll);
  ADD ("/daemon/restart", test_restart);
  ADD ("/daemon/activation", test_activation);
  ADD ("/daemon/single-instance", test_single_instance);
  ADD ("/daemon/bad-options", test_bad_options);
  ADD ("/daemon/malformed-calls", test_malformed_calls);
  ADD ("/daemon/bad-processes", test_bad_processes);
  ADD ("/daemon/process-cap", test_process_cap);
  ADD ("/daemon/aggregate-bounded", test_aggregate_bounded);
  ADD ("/daemon/bus-lost", test_bus_lost);
  ADD ("/daemon/two-buses", test_two_buses);
  ADD ("/daemon/hang-flood", test_hang_flood);
  ADD ("/daemon/history-bytes", test_history_bytes);
  /* GetSnapshotBytes: a meson test of their own (test-daemon-bytes), so
   * that test-daemon's 30 keep their time-out on a loaded machine. */
  ADD ("/daemon-bytes/poll", test_poll_bytes);
  ADD ("/daemon-bytes/history-bytes", test_history_bytes_blob);
  ADD ("/daemon/long-strings", test_long_strings);
  ADD ("/daemon/poll-spread", test_poll_spread);
  ADD ("/daemon/publish", test_publish);
  ADD ("/daemon/publish-hostile", test_publish_hostile);
  ADD ("/daemon/publish-grows", test_publish_grows);
  ADD ("/daemon/other-uid", test_other_uid);
  ADD ("/daemon/upload", test_upload);
  ADD ("/daemon/no-upload-without-configuration", test_no_upload_without_configuration);
  ADD ("/daemon/upload-restart", test_upload_restart);
  ADD ("/daemon/upload-only-pings", test_upload_only_pings);
  ADD ("/daemon/upload-refuses-malformed-pings", test_upload_refuses_malformed_pings);
  ADD ("/daemon/huge-calls-memory", test_huge_calls_memory);
#undef ADD

  status = g_test_run ();
  test_remove_tree (home);
  return status;
}
