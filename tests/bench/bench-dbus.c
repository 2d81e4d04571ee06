/* bench-dbus.c: the GetSnapshot round trip of a process with 1,000 groups
 *
 * A thread with its own context and bus connection exports a monitor with
 * 1,000 groups on a private bus (GTestDBus, a real dbus-daemon); the main
 * thread, with a connection of its own, times GetSnapshot calls from the
 * call to a decoded PerfmonSnapshot (perfmon_snapshot_new_from_variant),
 * as perfmond or the perfmon tool would see them. The target:
 * median ≤ 5 ms.
 *
 * The same calls on a peer-to-peer connection to the exporter show what
 * the bus daemon's relay adds. Wall times depend on what else the machine
 * runs, so the CPU time each round trip costs is printed too: in this
 * process (exporter, client and GDBus worker threads) and in the
 * dbus-daemon.
 *
 * Then what one snapshot for perfmond costs the exporting thread (the
 * watched thread of a real program), by that thread's CPU clock: answering
 * GetSnapshotBytes (perfmond's poll before 0.3's Publish), and taking a
 * snapshot for Publish, whose serialisation and write are the export's
 * sender thread's.
 *
 * Prints figures; asserts only that the answers are right.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#define _GNU_SOURCE 1
#include <gio/gunixfdlist.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-publish.h"
#include "tests/bench/bench-common.h"
#include "tests/perfmon-test-utils.h"

#define N_GROUPS 1000
#define N_WINDOWS 10
#define N_ADDONS 20
#define N_WARMUP 20
#define N_CALLS 500

typedef struct
{
  const char      *address;
  GMainContext    *context;
  GMainLoop       *loop;
  GDBusConnection *connection;
  GDBusServer     *server;
  GPtrArray       *peers;
  PerfmonMonitor  *monitor;
  GPtrArray       *groups;
  GMutex           lock;
  GCond            cond;
  char            *name;        /* set once exported */
  clockid_t        cpu_clock;   /* the exporting thread's */
} Exporter;

static gboolean
charge_every_compartment (gpointer data)
{
  Exporter *exporter = data;

  for (guint i = 0; i < exporter->groups->len; i++)
    {
      PerfmonGroup *group = g_ptr_array_index (exporter->groups, i);

      if (perfmon_group_get_kind (group) != PERFMON_GROUP_KIND_COMPARTMENT)
        continue;
      perfmon_group_set_active (group, TRUE);
      perfmon_group_enter (group);
      perfmon_group_leave (group);
    }
  return G_SOURCE_REMOVE;
}

static gboolean
on_new_peer (GDBusServer     *server,
             GDBusConnection *connection,
             gpointer         data)
{
  Exporter *exporter = data;
  g_autoptr(GError) error = NULL;

  if (!perfmon_monitor_export (exporter->monitor, connection, &error))
    g_error ("export to a peer: %s", error->message);
  g_ptr_array_add (exporter->peers, g_object_ref (connection));
  return TRUE;
}

static gpointer
exporter_main (gpointer data)
{
  Exporter *exporter = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GSource) charge = g_idle_source_new ();
  guint n_compartments;

  g_main_context_push_thread_default (exporter->context);
  pthread_getcpuclockid (pthread_self (), &exporter->cpu_clock);
  exporter->monitor = perfmon_monitor_new (exporter->context);
  exporter->groups = g_ptr_array_new_with_free_func (g_object_unref);

  /* 1 thread group + windows + add-ons + compartments = N_GROUPS. */
  g_ptr_array_add (exporter->groups, g_object_ref (perfmon_monitor_get_thread_group (exporter->monitor)));
  for (guint i = 0; i < N_WINDOWS; i++)
    {
      g_autofree char *name = g_strdup_printf ("Window %u", i);

      g_ptr_array_add (exporter->groups,
                       g_object_ref (perfmon_monitor_get_window_group (exporter->monitor, i + 1, name)));
    }
  for (guint i = 0; i < N_ADDONS; i++)
    {
      g_autofree char *id = g_strdup_printf ("addon-%u@example.org", i);

      g_ptr_array_add (exporter->groups,
                       g_object_ref (perfmon_monitor_get_addon_group (exporter->monitor, id, id)));
    }
  n_compartments = N_GROUPS - exporter->groups->len;
  for (guint i = 0; i < n_compartments; i++)
    {
      g_autofree char *name = g_strdup_printf ("https://site-%u.example.org/page", i);
      g_autofree char *addon = g_strdup_printf ("addon-%u@example.org", i % N_ADDONS);

      g_ptr_array_add (exporter->groups,
                       perfmon_monitor_create_compartment (exporter->monitor, name, i % N_WINDOWS + 1,
                                                           i % 3 == 0 ? addon : NULL));
    }

  g_source_set_callback (charge, charge_every_compartment, exporter, NULL);
  g_source_attach (charge, exporter->context);

  exporter->connection =
    g_dbus_connection_new_for_address_sync (exporter->address,
                                            G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                            G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                            NULL, NULL, &error);
  g_assert_no_error (error);
  if (!perfmon_monitor_export_full (exporter->monitor, NULL, exporter->connection,
                                    PERFMON_EXPORT_FLAGS_NO_REGISTER, &error))
    g_error ("export: %s", error->message);

  {
    g_autofree char *guid = g_dbus_generate_guid ();

    exporter->peers = g_ptr_array_new_with_free_func (g_object_unref);
    exporter->server = g_dbus_server_new_sync ("unix:tmpdir=/tmp", G_DBUS_SERVER_FLAGS_NONE, guid,
                                               NULL, NULL, &error);
    g_assert_no_error (error);
    g_signal_connect (exporter->server, "new-connection", G_CALLBACK (on_new_peer), exporter);
    g_dbus_server_start (exporter->server);
  }

  g_mutex_lock (&exporter->lock);
  exporter->name = g_strdup (g_dbus_connection_get_unique_name (exporter->connection));
  g_cond_signal (&exporter->cond);
  g_mutex_unlock (&exporter->lock);

  g_main_loop_run (exporter->loop);

  perfmon_monitor_unexport (exporter->monitor, exporter->connection);
  g_dbus_connection_close_sync (exporter->connection, NULL, NULL);
  for (guint i = 0; i < exporter->peers->len; i++)
    {
      GDBusConnection *peer = g_ptr_array_index (exporter->peers, i);

      perfmon_monitor_unexport (exporter->monitor, peer);
      g_dbus_connection_close_sync (peer, NULL, NULL);
    }
  g_clear_pointer (&exporter->peers, g_ptr_array_unref);
  g_dbus_server_stop (exporter->server);
  g_clear_object (&exporter->server);
  g_clear_object (&exporter->connection);
  g_clear_pointer (&exporter->groups, g_ptr_array_unref);
  g_clear_object (&exporter->monitor);
  g_main_context_pop_thread_default (exporter->context);
  return NULL;
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

/* One GetSnapshot, decoded; returns its duration in ms. */
static double
time_one_call (GDBusConnection *connection,
               const char      *name)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  gint64 start = _perfmon_clock_monotonic_ns ();
  double ms;

  reply = g_dbus_connection_call_sync (connection, name, PERFMON_MONITOR_OBJECT_PATH,
                                       PERFMON_MONITOR_INTERFACE, "GetSnapshot", NULL,
                                       G_VARIANT_TYPE ("(v)"), G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                       10000, NULL, &error);
  if (reply == NULL)
    g_error ("GetSnapshot: %s", error->message);
  g_variant_get (reply, "(v)", &variant);
  snapshot = perfmon_snapshot_new_from_variant (variant, &error);
  if (snapshot == NULL)
    g_error ("decoding the snapshot: %s", error->message);
  ms = (double) (_perfmon_clock_monotonic_ns () - start) / 1e6;

  if (perfmon_snapshot_get_groups (snapshot)->len != N_GROUPS)
    g_error ("expected %d groups, got %u", N_GROUPS, perfmon_snapshot_get_groups (snapshot)->len);
  return ms;
}

/* CPU time (user + system) of process @pid so far, in ms; -1 if unknown. */
static double
process_cpu_ms (int pid)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", pid);
  g_autofree char *stat = NULL;
  g_auto(GStrv) fields = NULL;
  const char *after_comm;

  if (!g_file_get_contents (path, &stat, NULL, NULL) || (after_comm = strrchr (stat, ')')) == NULL)
    return -1;
  fields = g_strsplit (after_comm + 2, " ", 0);
  if (g_strv_length (fields) < 13)
    return -1;
  /* utime and stime, fields 14 and 15 of stat(5), in clock ticks. */
  return (g_ascii_strtod (fields[11], NULL) + g_ascii_strtod (fields[12], NULL)) * 1000.0 /
         (double) sysconf (_SC_CLK_TCK);
}

/* The dbus-daemon GTestDBus started: our child of that name. */
static int
find_bus_daemon (void)
{
  g_autoptr(GDir) tasks = g_dir_open ("/proc/self/task", 0, NULL);
  const char *tid;

  while (tasks != NULL && (tid = g_dir_read_name (tasks)) != NULL)
    {
      g_autofree char *path = g_strdup_printf ("/proc/self/task/%s/children", tid);
      g_autofree char *children = NULL;
      g_auto(GStrv) pids = NULL;

      if (!g_file_get_contents (path, &children, NULL, NULL))
        continue;
      pids = g_strsplit (g_strstrip (children), " ", 0);
      for (guint i = 0; pids[i] != NULL; i++)
        {
          g_autofree char *comm_path = g_strdup_printf ("/proc/%s/comm", pids[i]);
          g_autofree char *comm = NULL;

          if (g_file_get_contents (comm_path, &comm, NULL, NULL) &&
              g_str_equal (g_strstrip (comm), "dbus-daemon"))
            return atoi (pids[i]);
        }
    }
  return -1;
}

static double
self_cpu_ms (void)
{
  struct rusage usage;

  getrusage (RUSAGE_SELF, &usage);
  return (double) (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000.0 +
         (double) (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000.0;
}

static void
measure (const char      *what,
         GDBusConnection *client,
         const char      *name,
         int              bus_daemon)
{
  double times[N_CALLS];
  double total = 0, cpu_start, cpu_end, daemon_start = -1, daemon_end = -1;

  /* The first calls also ask the bus for our uid; not what is measured. */
  for (guint i = 0; i < N_WARMUP; i++)
    time_one_call (client, name);

  cpu_start = self_cpu_ms ();
  if (bus_daemon > 0)
    daemon_start = process_cpu_ms (bus_daemon);
  for (guint i = 0; i < N_CALLS; i++)
    {
      times[i] = time_one_call (client, name);
      total += times[i];
    }
  cpu_end = self_cpu_ms ();
  if (bus_daemon > 0)
    daemon_end = process_cpu_ms (bus_daemon);

  bench_median (times, N_CALLS);  /* sorts */
  g_print ("%s, %d calls:\n", what, N_CALLS);
  g_print ("  wall: median %.3f ms, p90 %.3f ms, max %.3f ms, mean %.3f ms (target: median <= 5 ms)\n",
           times[N_CALLS / 2], times[N_CALLS * 9 / 10], times[N_CALLS - 1], total / N_CALLS);
  g_print ("  CPU per round trip: %.3f ms in this process (exporter + client + GDBus threads)",
           (cpu_end - cpu_start) / N_CALLS);
  if (daemon_start >= 0 && daemon_end >= 0)
    g_print (", %.3f ms in the dbus-daemon", (daemon_end - daemon_start) / N_CALLS);
  g_print ("\n");
}

static double
clock_ms (clockid_t clock)
{
  struct timespec ts;

  clock_gettime (clock, &ts);
  return (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1e6;
}

/* The exporting thread's CPU per snapshot that perfmond gets: by
 * GetSnapshotBytes, then by Publish at 10 ms for 2 s. */
static void
measure_exporter_thread (Exporter        *exporter,
                         GDBusConnection *peer)
{
  g_autoptr(PerfmonPublishRegion) region = NULL;
  g_autoptr(GUnixFDList) fds = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GError) error = NULL;
  guint64 generation = 0, first_generation = 0;
  double start, polled, published, idle;
  int fd = -1;

  start = clock_ms (exporter->cpu_clock);
  for (guint i = 0; i < N_CALLS; i++)
    {
      g_autoptr(GVariant) bytes = g_dbus_connection_call_sync (peer, NULL, PERFMON_MONITOR_OBJECT_PATH,
                                                               PERFMON_MONITOR_INTERFACE, "GetSnapshotBytes",
                                                               NULL, G_VARIANT_TYPE ("(ay)"),
                                                               G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &error);
      g_assert_no_error (error);
    }
  polled = (clock_ms (exporter->cpu_clock) - start) / N_CALLS;

  /* What the exporting thread uses with nothing asked of it, over 2 s. */
  start = clock_ms (exporter->cpu_clock);
  g_usleep (2 * G_USEC_PER_SEC);
  idle = clock_ms (exporter->cpu_clock) - start;

  region = perfmon_publish_region_create (8 * 1024 * 1024, &fd, &error);
  g_assert_no_error (error);
  fds = g_unix_fd_list_new_from_array (&fd, 1);
  reply = g_dbus_connection_call_with_unix_fd_list_sync (peer, NULL, PERFMON_MONITOR_OBJECT_PATH,
                                                         PERFMON_MONITOR_INTERFACE, "Publish",
                                                         g_variant_new ("(hu)", 0, 10), NULL,
                                                         G_DBUS_CALL_FLAGS_NONE, 10000, fds, NULL, NULL, &error);
  g_assert_no_error (error);
  while (perfmon_publish_region_read (region, &first_generation, NULL, &error) != PERFMON_PUBLISH_NEW)
    g_usleep (1000);
  start = clock_ms (exporter->cpu_clock);
  g_usleep (2 * G_USEC_PER_SEC);
  published = clock_ms (exporter->cpu_clock) - start;
  generation = first_generation;
  g_assert_cmpint (perfmon_publish_region_read (region, &generation, NULL, &error), ==, PERFMON_PUBLISH_NEW);

  g_print ("the exporting (watched) thread's CPU per snapshot perfmond gets, %d groups:\n", N_GROUPS);
  g_print ("  GetSnapshotBytes (peer to peer, %d calls): %.3f ms\n", N_CALLS, polled);
  g_print ("  Publish at 10 ms for 2 s (%" G_GUINT64_FORMAT " snapshots written): %.3f ms "
           "(%.3f ms with the thread's idle %.3f ms over 2 s)\n",
           generation - first_generation, (published - idle) / (double) MAX (generation - first_generation, 1),
           published / (double) MAX (generation - first_generation, 1), idle);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GTestDBus) bus = NULL;
  g_autoptr(GDBusConnection) client = NULL;
  g_autoptr(GDBusConnection) peer = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) probe = NULL;
  Exporter exporter = { 0 };
  GThread *thread;
  double load[1] = { 0 };

  bus = test_private_bus_new ();
  exporter.address = g_test_dbus_get_bus_address (bus);
  exporter.context = g_main_context_new ();
  exporter.loop = g_main_loop_new (exporter.context, FALSE);
  g_mutex_init (&exporter.lock);
  g_cond_init (&exporter.cond);
  thread = g_thread_new ("exporter", exporter_main, &exporter);

  g_mutex_lock (&exporter.lock);
  while (exporter.name == NULL)
    g_cond_wait (&exporter.cond, &exporter.lock);
  g_mutex_unlock (&exporter.lock);

  client = test_bus_connect (bus);
  peer = g_dbus_connection_new_for_address_sync (g_dbus_server_get_client_address (exporter.server),
                                                 G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                 NULL, NULL, &error);
  g_assert_no_error (error);

  probe = g_dbus_connection_call_sync (client, exporter.name, PERFMON_MONITOR_OBJECT_PATH,
                                       PERFMON_MONITOR_INTERFACE, "GetSnapshot", NULL,
                                       G_VARIANT_TYPE ("(v)"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &error);
  g_assert_no_error (error);
  getloadavg (load, 1);
  g_print ("GetSnapshot round trip, %d groups (a %" G_GSIZE_FORMAT "-byte reply), call + "
           "perfmon_snapshot_new_from_variant(); load average %.2f on %u CPUs\n",
           N_GROUPS, g_variant_get_size (probe), load[0], g_get_num_processors ());

  measure ("through a dbus-daemon", client, exporter.name, find_bus_daemon ());
  measure ("peer to peer", peer, NULL, -1);
  measure_exporter_thread (&exporter, peer);

  g_main_context_invoke (exporter.context, quit_loop, exporter.loop);
  g_thread_join (thread);
  g_main_loop_unref (exporter.loop);
  g_main_context_unref (exporter.context);
  g_mutex_clear (&exporter.lock);
  g_cond_clear (&exporter.cond);
  g_free (exporter.name);
  g_dbus_connection_close_sync (peer, NULL, NULL);
  g_dbus_connection_close_sync (client, NULL, NULL);
  g_clear_object (&peer);
  g_clear_object (&client);
  g_test_dbus_down (bus);
  return 0;
}
