/* test-dbus-export.c: a monitor served over D-Bus as org.perfmon.Monitor1
 *
 * Everything runs on a private bus (GTestDBus), or on peer-to-peer
 * connections to a GDBusServer of the test.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define _GNU_SOURCE 1   /* memfd_create() */
#include "config.h"

#include <gio/gunixfdlist.h>
#include <json-glib/json-glib.h>
#include <dlfcn.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-publish.h"
#include "perfmon-test-utils.h"
#include "perfmon-test-dirs.h"

#define NOBODY_UID 65534
#define NOBODY_GID 65534

static GTestDBus *test_bus;

/* --- helpers ------------------------------------------------------------ */

typedef struct
{
  gboolean  done;
  GVariant *reply;
  GError   *error;
} CallResult;

static void
on_call_done (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  CallResult *call = user_data;

  call->reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &call->error);
  call->done = TRUE;
}

/* Calls a method of the monitor from the calling thread, iterating its
 * context meanwhile (the exporter may run on the same context). Returns
 * the reply, or NULL with @error set. */
static GVariant *
call_full (GDBusConnection  *connection,
           const char       *bus_name,
           const char       *interface,
           const char       *method,
           GVariant         *parameters,
           GError          **error)
{
  CallResult call = { 0 };

  g_dbus_connection_call (connection, bus_name, PERFMON_MONITOR_OBJECT_PATH, interface, method,
                          parameters, NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, 10000, NULL,
                          on_call_done, &call);
  test_iterate_until (NULL, &call.done, method);
  if (call.error != NULL)
    g_propagate_error (error, call.error);
  return call.reply;
}

static GVariant *
call (GDBusConnection  *connection,
      const char       *bus_name,
      const char       *method,
      GVariant         *parameters,
      GError          **error)
{
  return call_full (connection, bus_name, PERFMON_MONITOR_INTERFACE, method, parameters, error);
}

static GVariant *
get_property (GDBusConnection  *connection,
              const char       *bus_name,
              const char       *property,
              GError          **error)
{
  g_autoptr(GVariant) reply = call_full (connection, bus_name, "org.freedesktop.DBus.Properties", "Get",
                                         g_variant_new ("(ss)", PERFMON_MONITOR_INTERFACE, property), error);
  GVariant *value = NULL;

  if (reply != NULL)
    g_variant_get (reply, "(v)", &value);
  return value;
}

static void
assert_dbus_error (GError     *error,
                   const char *name,
                   const char *message_part)
{
  g_autofree char *remote = NULL;

  g_assert_nonnull (error);
  remote = g_dbus_error_get_remote_error (error);
  g_assert_cmpstr (remote, ==, name);
  if (message_part != NULL && strstr (error->message, message_part) == NULL)
    g_error ("error message \"%s\" does not mention \"%s\"", error->message, message_part);
}

/* --- a client on its own thread ------------------------------------------ */

/* Collects the monitor's signals on a thread of its own, with its own
 * context and connection: the exporting thread may be hung. */
typedef struct
{
  GThread         *thread;
  GMainContext    *context;
  GMainLoop       *loop;
  GDBusConnection *connection;
  GAsyncQueue     *signals;      /* GVariant (sv): name, parameters */
  char            *sender;
  gboolean         ready;
  GMutex           lock;
  GCond            cond;
} Collector;

static void
on_collected_signal (GDBusConnection *connection,
                     const char      *sender_name,
                     const char      *object_path,
                     const char      *interface_name,
                     const char      *signal_name,
                     GVariant        *parameters,
                     gpointer         user_data)
{
  Collector *collector = user_data;

  g_async_queue_push (collector->signals,
                      g_variant_ref_sink (g_variant_new ("(s@*)", signal_name, parameters)));
}

static gpointer
collector_main (gpointer data)
{
  Collector *collector = data;
  guint subscription;

  g_main_context_push_thread_default (collector->context);
  collector->connection = test_bus_connect (test_bus);
  subscription = g_dbus_connection_signal_subscribe (collector->connection, collector->sender,
                                                     PERFMON_MONITOR_INTERFACE, NULL,
                                                     PERFMON_MONITOR_OBJECT_PATH, NULL,
                                                     G_DBUS_SIGNAL_FLAGS_NONE,
                                                     on_collected_signal, collector, NULL);
  g_mutex_lock (&collector->lock);
  collector->ready = TRUE;
  g_cond_signal (&collector->cond);
  g_mutex_unlock (&collector->lock);

  g_main_loop_run (collector->loop);

  g_dbus_connection_signal_unsubscribe (collector->connection, subscription);
  g_dbus_connection_close_sync (collector->connection, NULL, NULL);
  g_clear_object (&collector->connection);
  g_main_context_pop_thread_default (collector->context);
  return NULL;
}

static void
subscription_round_trip_done (GObject      *source,
                              GAsyncResult *result,
                              gpointer      user_data)
{
  G_GNUC_UNUSED g_autoptr(GVariant) reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, NULL);
  *(gboolean *) user_data = TRUE;
}

/* With @subscribe, it calls Subscribe (on a bus the signals go to
 * subscribers only). */
static Collector *
collector_new_full (const char *sender,
                    gboolean    subscribe)
{
  Collector *collector = g_new0 (Collector, 1);

  collector->context = g_main_context_new ();
  collector->loop = g_main_loop_new (collector->context, FALSE);
  collector->signals = g_async_queue_new_full ((GDestroyNotify) g_variant_unref);
  collector->sender = g_strdup (sender);
  g_mutex_init (&collector->lock);
  g_cond_init (&collector->cond);
  collector->thread = g_thread_new ("collector", collector_main, collector);

  g_mutex_lock (&collector->lock);
  while (!collector->ready)
    g_cond_wait (&collector->cond, &collector->lock);
  g_mutex_unlock (&collector->lock);

  /* The AddMatch of the subscription is on the bus once a later call on
   * the same connection is answered: Subscribe, or GetId. */
  {
    gboolean done = FALSE;

    if (subscribe)
      g_dbus_connection_call (collector->connection, sender, PERFMON_MONITOR_OBJECT_PATH,
                              PERFMON_MONITOR_INTERFACE, "Subscribe", NULL, NULL, G_DBUS_CALL_FLAGS_NONE,
                              -1, NULL, subscription_round_trip_done, &done);
    else
      g_dbus_connection_call (collector->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                              "org.freedesktop.DBus", "GetId", NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                              NULL, subscription_round_trip_done, &done);
    test_iterate_until (NULL, &done, "subscription round trip");
  }
  return collector;
}

static Collector *
collector_new (const char *sender)
{
  return collector_new_full (sender, TRUE);
}

static void
round_trip_done (GObject      *source,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  G_GNUC_UNUSED g_autoptr(GVariant) reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, NULL);
  g_atomic_int_set ((int *) user_data, TRUE);
}

typedef struct
{
  Collector *collector;
  int        done;
} RoundTrip;

static gboolean
start_round_trip (gpointer data)
{
  RoundTrip *trip = data;

  g_dbus_connection_call (trip->collector->connection, trip->collector->sender, PERFMON_MONITOR_OBJECT_PATH,
                          "org.freedesktop.DBus.Properties", "Get",
                          g_variant_new ("(ss)", PERFMON_MONITOR_INTERFACE, "Pid"), NULL,
                          G_DBUS_CALL_FLAGS_NONE, -1, NULL, round_trip_done, &trip->done);
  return G_SOURCE_REMOVE;
}

/* A call from the collector's thread to the process, answered: every
 * signal the process sent this collector before has been collected (one
 * sender, one destination: the bus keeps the order, and so does the
 * collector's context). */
static void
collector_round_trip (Collector *collector)
{
  RoundTrip trip = { collector, FALSE };
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  g_autoptr(GMainContext) context = g_main_context_ref_thread_default ();

  g_main_context_invoke (collector->context, start_round_trip, &trip);
  while (!g_atomic_int_get (&trip.done))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (context, FALSE);
      g_usleep (1000);
    }
}

/* Pops the next signal named @name, iterating the caller's context
 * meanwhile; other signals are dropped. */
static GVariant *
collector_wait (Collector  *collector,
                const char *name)
{
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  g_autoptr(GMainContext) context = g_main_context_ref_thread_default ();

  while (g_get_monotonic_time () < deadline)
    {
      g_autoptr(GVariant) item = NULL;

      g_main_context_iteration (context, FALSE);
      item = g_async_queue_timeout_pop (collector->signals, 5000);
      if (item != NULL)
        {
          const char *signal_name;
          GVariant *parameters;

          g_variant_get (item, "(&s@*)", &signal_name, &parameters);
          if (g_str_equal (signal_name, name))
            return parameters;
          g_variant_unref (parameters);
        }
    }
  g_error ("no %s signal came", name);
  return NULL;
}

static void
collector_free (Collector *collector)
{
  g_main_loop_quit (collector->loop);
  g_thread_join (collector->thread);
  g_main_loop_unref (collector->loop);
  g_main_context_unref (collector->context);
  g_async_queue_unref (collector->signals);
  g_mutex_clear (&collector->lock);
  g_cond_clear (&collector->cond);
  g_free (collector->sender);
  g_free (collector);
}

/* --- fixture ------------------------------------------------------------- */

typedef struct
{
  char               *dir;
  GMainContext       *context;
  PerfmonMonitor     *monitor;
  PerfmonHangMonitor *hang_monitor;
  GPtrArray          *groups;
  GDBusConnection    *server;    /* the exporting process's connection */
  GDBusConnection    *client;
  const char         *name;      /* the exporter's unique name */
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  fixture->dir = test_make_tmp_dir ("perfmon-dbus-XXXXXX");
  fixture->context = g_main_context_new ();
  g_main_context_push_thread_default (fixture->context);
  fixture->monitor = perfmon_monitor_new (fixture->context);
  fixture->hang_monitor = perfmon_hang_monitor_new (fixture->monitor);
  g_object_set (fixture->hang_monitor,
                "pings-dir", fixture->dir,
                "log-dir", fixture->dir,
                "process-type", "gpu",
                NULL);
  fixture->groups = g_ptr_array_new_with_free_func (g_object_unref);
  g_ptr_array_add (fixture->groups, g_object_ref (perfmon_monitor_get_thread_group (fixture->monitor)));
  g_ptr_array_add (fixture->groups, g_object_ref (perfmon_monitor_get_window_group (fixture->monitor, 7, "Window 7")));
  g_ptr_array_add (fixture->groups, g_object_ref (perfmon_monitor_get_addon_group (fixture->monitor, "calm@addons", "Calm")));
  g_ptr_array_add (fixture->groups, perfmon_monitor_create_compartment (fixture->monitor, "busy-compartment", 7, "calm@addons"));

  fixture->server = test_bus_connect (test_bus);
  fixture->client = test_bus_connect (test_bus);
  fixture->name = g_dbus_connection_get_unique_name (fixture->server);
  if (!GPOINTER_TO_INT (data))
    {
      g_assert_true (perfmon_monitor_export_full (fixture->monitor, fixture->hang_monitor, fixture->server,
                                                  PERFMON_EXPORT_FLAGS_NO_REGISTER, &error));
      g_assert_no_error (error);
    }
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  perfmon_monitor_unexport (fixture->monitor, fixture->server);
  perfmon_hang_monitor_stop (fixture->hang_monitor);
  g_dbus_connection_close_sync (fixture->client, NULL, NULL);
  g_dbus_connection_close_sync (fixture->server, NULL, NULL);
  /* Let what the connections and the export queued run. */
  test_iterate_for (NULL, 20);
  g_clear_object (&fixture->client);
  g_clear_object (&fixture->server);
  g_clear_pointer (&fixture->groups, g_ptr_array_unref);
  g_clear_object (&fixture->hang_monitor);
  g_clear_object (&fixture->monitor);
  g_main_context_pop_thread_default (fixture->context);
  g_main_context_unref (fixture->context);
  test_remove_tree (fixture->dir);
  g_free (fixture->dir);
}

#define EXPORTED GINT_TO_POINTER (0)
#define NOT_EXPORTED GINT_TO_POINTER (1)

/* --- tests --------------------------------------------------------------- */

static void
test_get_snapshot (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  PerfmonGroupStats *stats;

  reply = call (fixture->client, fixture->name, "GetSnapshot", NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_variant_is_of_type (reply, G_VARIANT_TYPE ("(v)")));
  g_variant_get (reply, "(v)", &variant);
  g_assert_cmpstr (g_variant_get_type_string (variant), ==, PERFMON_SNAPSHOT_VARIANT_TYPE);

  snapshot = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, (guint) getpid ());
  g_assert_cmpuint (perfmon_snapshot_get_groups (snapshot)->len, ==, fixture->groups->len);

  stats = perfmon_snapshot_lookup (snapshot, perfmon_group_get_id (g_ptr_array_index (fixture->groups, 1)));
  g_assert_nonnull (stats);
  g_assert_cmpint (perfmon_group_stats_get_kind (stats), ==, PERFMON_GROUP_KIND_WINDOW);
  g_assert_cmpstr (perfmon_group_stats_get_name (stats), ==, "Window 7");
  stats = perfmon_snapshot_lookup (snapshot, perfmon_group_get_id (g_ptr_array_index (fixture->groups, 3)));
  g_assert_nonnull (stats);
  g_assert_cmpstr (perfmon_group_stats_get_name (stats), ==, "busy-compartment");
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (stats), ==, "calm@addons");
}

/* GetSnapshotBytes: the same snapshot as GetSnapshot, as the bytes of a
 * little-endian serialised "v" (perfmond's poll). */
static void
test_get_snapshot_bytes (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) bytes_v = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GVariant) wrapped = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  PerfmonGroupStats *stats;

  reply = call (fixture->client, fixture->name, "GetSnapshotBytes", NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_variant_is_of_type (reply, G_VARIANT_TYPE ("(ay)")));
  bytes_v = g_variant_get_child_value (reply, 0);
  bytes = g_variant_get_data_as_bytes (bytes_v);
  wrapped = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE_VARIANT, bytes, FALSE));
  if (G_BYTE_ORDER == G_BIG_ENDIAN)
    {
      GVariant *swapped = g_variant_byteswap (wrapped);

      g_variant_unref (wrapped);
      wrapped = swapped;
    }
  g_assert_true (g_variant_is_normal_form (wrapped));
  variant = g_variant_get_variant (wrapped);
  g_assert_cmpstr (g_variant_get_type_string (variant), ==, PERFMON_SNAPSHOT_VARIANT_TYPE);

  snapshot = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, (guint) getpid ());
  g_assert_cmpuint (perfmon_snapshot_get_groups (snapshot)->len, ==, fixture->groups->len);
  stats = perfmon_snapshot_lookup (snapshot, perfmon_group_get_id (g_ptr_array_index (fixture->groups, 3)));
  g_assert_nonnull (stats);
  g_assert_cmpstr (perfmon_group_stats_get_name (stats), ==, "busy-compartment");
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (stats), ==, "calm@addons");
}

static void
test_get_snapshot_json (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(JsonNode) node = NULL;
  const char *json;

  reply = call (fixture->client, fixture->name, "GetSnapshotJson", NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(&s)", &json);

  node = json_from_string (json, &error);
  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (node));

  snapshot = perfmon_snapshot_new_from_json (json, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, (guint) getpid ());
  g_assert_cmpuint (perfmon_snapshot_get_groups (snapshot)->len, ==, fixture->groups->len);
}

static void
test_properties (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) pid = NULL;
  g_autoptr(GVariant) name = NULL;
  g_autoptr(GVariant) type = NULL;
  g_autoptr(GVariant) version = NULL;
  g_autoptr(GVariant) all = NULL;
  g_autoptr(GVariant) dict = NULL;
  g_autoptr(GVariantDict) properties = NULL;
  guint32 pid_value;
  const char *string;

  pid = get_property (fixture->client, fixture->name, "Pid", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_variant_get_uint32 (pid), ==, (guint32) getpid ());

  name = get_property (fixture->client, fixture->name, "ProcessName", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (g_variant_get_string (name, NULL), ==, g_get_prgname ());

  type = get_property (fixture->client, fixture->name, "ProcessType", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (g_variant_get_string (type, NULL), ==, "gpu");

  version = get_property (fixture->client, fixture->name, "Version", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (g_variant_get_string (version, NULL), ==, PACKAGE_VERSION);

  all = call_full (fixture->client, fixture->name, "org.freedesktop.DBus.Properties", "GetAll",
                   g_variant_new ("(s)", PERFMON_MONITOR_INTERFACE), &error);
  g_assert_no_error (error);
  g_variant_get (all, "(@a{sv})", &dict);
  g_assert_cmpuint (g_variant_n_children (dict), ==, 4);
  properties = g_variant_dict_new (dict);
  g_assert_true (g_variant_dict_lookup (properties, "Pid", "u", &pid_value));
  g_assert_cmpuint (pid_value, ==, (guint32) getpid ());
  g_assert_true (g_variant_dict_lookup (properties, "ProcessType", "&s", &string));
  g_assert_cmpstr (string, ==, "gpu");
  g_assert_true (g_variant_dict_lookup (properties, "ProcessName", "&s", &string));
  g_assert_true (g_variant_dict_lookup (properties, "Version", "&s", &string));
}

/* A program that set no prgname: ProcessName is the name its snapshots
 * carry, the library's one derivation (the base name of argv[0], which
 * the kernel's 15-byte comm would cut: "test-dbus-expor"). */
static void
test_process_name_without_prgname (Fixture       *fixture,
                                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) name = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autofree char *prgname = g_strdup (g_get_prgname ());

  g_set_prgname (NULL);
  g_assert_true (perfmon_monitor_export_full (fixture->monitor, NULL, fixture->server,
                                              PERFMON_EXPORT_FLAGS_NO_REGISTER, &error));
  g_assert_no_error (error);
  snapshot = perfmon_monitor_snapshot (fixture->monitor);
  g_set_prgname (prgname);

  name = get_property (fixture->client, fixture->name, "ProcessName", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (g_variant_get_string (name, NULL), ==, perfmon_snapshot_get_process_name (snapshot));
  g_assert_cmpstr (g_variant_get_string (name, NULL), ==, "test-dbus-export");
}

static gboolean
bus_name_has_owner (GDBusConnection *connection,
                    const char      *name)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                           "org.freedesktop.DBus", "NameHasOwner",
                                                           g_variant_new ("(s)", name), G_VARIANT_TYPE ("(b)"),
                                                           G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
  gboolean owned;

  g_assert_no_error (error);
  g_variant_get (reply, "(b)", &owned);
  return owned;
}

/* Subscribers that leave the bus before their Subscribe is served are
 * forgotten too: they do not fill the export's 16 places. Each is a caller
 * the uid gate knows, whose Subscribe is queued with the export when the
 * bus says it left (the NameOwnerChanged of its departure is then already
 * read, before the export could subscribe to it). */
static void
test_subscribers_gone_before_served (Fixture       *fixture,
                                     gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  for (guint i = 0; i < 17; i++)
    {
      g_autoptr(GDBusConnection) ghost = test_bus_connect (test_bus);
      g_autofree char *name = g_strdup (g_dbus_connection_get_unique_name (ghost));
      g_autoptr(GVariant) pid = get_property (ghost, fixture->name, "Pid", &error);

      /* A round trip first: the export has seen this caller. */
      g_assert_no_error (error);
      g_assert_nonnull (pid);
      g_dbus_connection_call (ghost, fixture->name, PERFMON_MONITOR_OBJECT_PATH, PERFMON_MONITOR_INTERFACE,
                              "Subscribe", NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
      g_dbus_connection_flush_sync (ghost, NULL, &error);
      g_assert_no_error (error);
      g_dbus_connection_close_sync (ghost, NULL, &error);
      g_assert_no_error (error);
      /* Asked on the export's connection: its departure is read there
       * before the answer. */
      while (bus_name_has_owner (fixture->server, name))
        g_usleep (1000);
    }
  test_iterate_for (NULL, 200);

  reply = call_full (fixture->client, fixture->name, PERFMON_MONITOR_INTERFACE, "Subscribe", NULL, &error);
  g_assert_no_error (error);
}

/* The interface as Introspect shows it carries its documentation. */
static void
test_introspect_documented (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GDBusNodeInfo) node = NULL;
  GDBusInterfaceInfo *interface;
  const char *xml;
  const char *doc;

  reply = call_full (fixture->client, fixture->name, "org.freedesktop.DBus.Introspectable", "Introspect",
                     NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(&s)", &xml);
  node = g_dbus_node_info_new_for_xml (xml, &error);
  g_assert_no_error (error);
  interface = g_dbus_node_info_lookup_interface (node, PERFMON_MONITOR_INTERFACE);
  g_assert_nonnull (interface);

  doc = g_dbus_annotation_info_lookup (interface->annotations, "org.gtk.GDBus.DocString");
  g_assert_nonnull (doc);
  for (guint i = 0; interface->methods[i] != NULL; i++)
    g_assert_nonnull (g_dbus_annotation_info_lookup (interface->methods[i]->annotations,
                                                     "org.gtk.GDBus.DocString"));
  for (guint i = 0; interface->signals[i] != NULL; i++)
    g_assert_nonnull (g_dbus_annotation_info_lookup (interface->signals[i]->annotations,
                                                     "org.gtk.GDBus.DocString"));
  for (guint i = 0; interface->properties[i] != NULL; i++)
    g_assert_nonnull (g_dbus_annotation_info_lookup (interface->properties[i]->annotations,
                                                     "org.gtk.GDBus.DocString"));
  g_assert_nonnull (g_dbus_annotation_info_lookup (g_dbus_interface_info_lookup_method (interface, "GetHangReports")->in_args[0]->annotations,
                                                   "org.gtk.GDBus.DocString"));
}

static gboolean
burn_in_compartment (gpointer data)
{
  PerfmonGroup *compartment = data;
  gint64 end;

  perfmon_group_enter (compartment);
  end = g_get_monotonic_time () + 30 * 1000;
  while (g_get_monotonic_time () < end)
    ;
  perfmon_group_leave (compartment);
  return G_SOURCE_REMOVE;
}

static void
test_alert (Fixture       *fixture,
            gconstpointer  data)
{
  Collector *collector = collector_new (fixture->name);
  Collector *bystander = collector_new_full (fixture->name, FALSE);
  PerfmonGroup *compartment = g_ptr_array_index (fixture->groups, 3);
  g_autoptr(GVariant) alert = NULL;
  guint64 group_id, duration_us;
  const char *group_name;

  perfmon_group_set_active (compartment, TRUE);
  perfmon_monitor_set_alert_threshold (fixture->monitor, 5);
  {
    g_autoptr(GSource) source = g_idle_source_new ();

    g_source_set_callback (source, burn_in_compartment, compartment, NULL);
    g_source_attach (source, fixture->context);
  }

  alert = collector_wait (collector, "Alert");
  g_variant_get (alert, "(t&st)", &group_id, &group_name, &duration_us);
  g_assert_cmpuint (group_id, ==, perfmon_group_get_id (compartment));
  g_assert_cmpstr (group_name, ==, "busy-compartment");
  g_assert_cmpuint (duration_us, >=, 5000);

  /* A listener of the same uid with a match rule, but not subscribed,
   * got nothing: the signals are not broadcast. */
  collector_round_trip (bystander);
  g_assert_cmpint (g_async_queue_length (bystander->signals), ==, 0);

  collector_free (bystander);
  collector_free (collector);
}

static gboolean
hang_once (gpointer data)
{
  g_usleep (GPOINTER_TO_UINT (data) * 1000);
  return G_SOURCE_REMOVE;
}

static void
test_hang (Fixture       *fixture,
           gconstpointer  data)
{
  Collector *collector = collector_new (fixture->name);
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) hang = NULL;
  g_autoptr(GVariant) ping = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GSource) source = g_idle_source_new ();
  g_autoptr(JsonNode) node = NULL;
  g_autofree char *ping_path = NULL;
  g_autofree const char **reports = NULL;
  const char *report, *path;

  g_object_set (fixture->hang_monitor, "threshold", 50, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  g_assert_no_error (error);

  /* While the exporting loop hangs, the collector's thread waits. */
  g_source_set_name (source, "hangs-on-purpose");
  g_source_set_callback (source, hang_once, GUINT_TO_POINTER (300), NULL);
  g_source_attach (source, fixture->context);

  hang = collector_wait (collector, "Hang");
  g_variant_get (hang, "(&s)", &report);
  node = json_from_string (report, &error);
  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (node));
  g_assert_nonnull (strstr (report, "hangs-on-purpose"));

  /* The same report is kept for GetHangReports. */
  reply = call (fixture->client, fixture->name, "GetHangReports", g_variant_new ("(u)", 0), &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(^a&s)", &reports);
  g_assert_cmpuint (g_strv_length ((char **) reports), ==, 1);
  g_assert_cmpstr (reports[0], ==, report);
  g_clear_pointer (&reply, g_variant_unref);
  g_clear_pointer (&reports, g_free);

  reply = call (fixture->client, fixture->name, "GetHangReports", g_variant_new ("(u)", 1), &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(^a&s)", &reports);
  g_assert_cmpuint (g_strv_length ((char **) reports), ==, 1);

  /* The hang is pending in the next ping: writing it is announced. */
  ping_path = perfmon_hang_monitor_flush_ping (fixture->hang_monitor, &error);
  g_assert_no_error (error);
  g_assert_nonnull (ping_path);
  ping = collector_wait (collector, "Ping");
  g_variant_get (ping, "(&s)", &path);
  g_assert_cmpstr (path, ==, ping_path);

  collector_free (collector);
}

static void
test_hang_reports_bounded (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autofree const char **reports = NULL;

  /* No hang yet: an empty list, not an error. */
  reply = call (fixture->client, fixture->name, "GetHangReports", g_variant_new ("(u)", 5), &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(^a&s)", &reports);
  g_assert_cmpuint (g_strv_length ((char **) reports), ==, 0);
}

static GVariant *
string_dict (const char *first_key,
             ...)
{
  GVariantBuilder builder;
  va_list args;

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("a{ss}"));
  va_start (args, first_key);
  for (const char *key = first_key; key != NULL; key = va_arg (args, const char *))
    g_variant_builder_add (&builder, "{ss}", key, va_arg (args, const char *));
  va_end (args);
  return g_variant_builder_end (&builder);
}

static void
test_set_event_config (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  reply = call (fixture->client, fixture->name, "SetEventConfig",
                g_variant_new ("(s@a{ss})", "MAIN_THREAD_JANK",
                               string_dict ("log_type", "1", "sample_interval", "100",
                                            "ignore_startup_time", "10", "sample_count", "21",
                                            "report_times_per_app", "1", NULL)),
                &error);
  g_assert_no_error (error);
  g_clear_pointer (&reply, g_variant_unref);

  /* A value out of its range: the error names the field and the range. */
  reply = call (fixture->client, fixture->name, "SetEventConfig",
                g_variant_new ("(s@a{ss})", "MAIN_THREAD_JANK",
                               string_dict ("log_type", "1", "sample_interval", "10",
                                            "ignore_startup_time", "10", "sample_count", "21",
                                            "report_times_per_app", "1", NULL)),
                &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "sample_interval");
  g_assert_nonnull (strstr (error->message, "50"));
  g_clear_error (&error);

  /* A value that is no number. */
  reply = call (fixture->client, fixture->name, "SetEventConfig",
                g_variant_new ("(s@a{ss})", "MAIN_THREAD_JANK", string_dict ("log_type", "often", NULL)),
                &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "log_type");
  g_clear_error (&error);

  /* An unknown event. */
  reply = call (fixture->client, fixture->name, "SetEventConfig",
                g_variant_new ("(s@a{ss})", "APP_CRASH", string_dict (NULL)), &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "APP_CRASH");
  g_clear_error (&error);
}

/* Long strings (a 1 MiB event name, key or value) are refused with an
 * error that quotes at most a short prefix. */
static void
test_set_event_config_long_strings (Fixture       *fixture,
                                    gconstpointer  data)
{
  g_autofree char *huge = g_strnfill (1024 * 1024, 'e');
  GVariant *cases[3];

  cases[0] = g_variant_new ("(s@a{ss})", huge, string_dict (NULL));
  cases[1] = g_variant_new ("(s@a{ss})", "MAIN_THREAD_JANK", string_dict (huge, "1", NULL));
  cases[2] = g_variant_new ("(s@a{ss})", "MAIN_THREAD_JANK", string_dict ("log_type", huge, NULL));
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(GVariant) reply = call (fixture->client, fixture->name, "SetEventConfig", cases[i], &error);

      g_assert_null (reply);
      assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "SetEventConfig");
      g_assert_cmpuint (strlen (error->message), <, 300);
    }
}

/* Every malloc_trim() of the process, and the thread it ran on: the test
 * program's own, called before glibc's. */
static pthread_t main_thread;
static gint trims_on_main_thread;   /* atomic */
static gint trims_elsewhere;        /* atomic */

int malloc_trim (size_t pad);

int
malloc_trim (size_t pad)
{
  static int (*real_malloc_trim) (size_t);

  if (real_malloc_trim == NULL)
    real_malloc_trim = (int (*) (size_t)) dlsym (RTLD_NEXT, "malloc_trim");
  if (pthread_equal (pthread_self (), main_thread))
    g_atomic_int_inc (&trims_on_main_thread);
  else
    g_atomic_int_inc (&trims_elsewhere);
  return real_malloc_trim != NULL ? real_malloc_trim (pad) : 0;
}

/* A refused call of 2 MiB (over the export's 64 KiB) has its memory given
 * back (issue 26: three refused 30 MB calls left a program at 191 MB),
 * by malloc_trim() on a thread of perfmon's: never on the watched thread,
 * here the test's main thread, whose context the export serves. */
static void
test_big_call_trimmed_off_thread (Fixture       *fixture,
                                  gconstpointer  data)
{
  g_autofree char *huge = g_strnfill (2 * 1024 * 1024, 'e');
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  gint before = g_atomic_int_get (&trims_elsewhere);

  reply = call (fixture->client, fixture->name, "SetEventConfig",
                g_variant_new ("(s@a{ss})", huge, string_dict (NULL)), &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "more than the 65536");
  /* The trim comes a moment later (100 ms), on its own thread. */
  while (g_atomic_int_get (&trims_elsewhere) == before)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (fixture->context, FALSE);
      g_usleep (10 * 1000);
    }
  g_assert_cmpint (g_atomic_int_get (&trims_on_main_thread), ==, 0);
}

static void
test_set_event_config_without_hang_monitor (Fixture       *fixture,
                                            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  g_assert_true (perfmon_monitor_export_full (fixture->monitor, NULL, fixture->server,
                                              PERFMON_EXPORT_FLAGS_NO_REGISTER, &error));
  g_assert_no_error (error);

  reply = call (fixture->client, fixture->name, "SetEventConfig",
                g_variant_new ("(s@a{ss})", "MAIN_THREAD_JANK", string_dict ("log_type", "0", NULL)),
                &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.NotSupported", "no hang monitor");
  g_clear_error (&error);

  /* Without a hang monitor the process type is the default one. */
  {
    g_autoptr(GVariant) type = get_property (fixture->client, fixture->name, "ProcessType", &error);

    g_assert_no_error (error);
    g_assert_cmpstr (g_variant_get_string (type, NULL), ==, "default");
  }
}

static void
test_malformed_calls (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  /* A wrong argument type: the error gives the expected signature. */
  reply = call (fixture->client, fixture->name, "GetHangReports", g_variant_new ("(s)", "ten"), &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "(u)");
  g_clear_error (&error);

  reply = call (fixture->client, fixture->name, "SetEventConfig",
                g_variant_new ("(sa{si})", "MAIN_THREAD_JANK", NULL), &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "(sa{ss})");
  g_clear_error (&error);

  /* Arguments to a method that takes none. */
  reply = call (fixture->client, fixture->name, "GetSnapshot", g_variant_new ("(u)", 1), &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "()");
  g_clear_error (&error);

  /* No such method, property or interface. */
  reply = call (fixture->client, fixture->name, "GetEverything", NULL, &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.UnknownMethod", "GetEverything");
  g_clear_error (&error);

  reply = get_property (fixture->client, fixture->name, "Uid", &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "Uid");
  g_clear_error (&error);

  /* Properties are read-only. */
  reply = call_full (fixture->client, fixture->name, "org.freedesktop.DBus.Properties", "Set",
                     g_variant_new ("(ssv)", PERFMON_MONITOR_INTERFACE, "Pid", g_variant_new_uint32 (1)),
                     &error);
  g_assert_null (reply);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "Pid");
  g_clear_error (&error);

  /* The export still serves. */
  reply = call (fixture->client, fixture->name, "GetSnapshot", NULL, &error);
  g_assert_no_error (error);
}

static void
test_export_twice_and_unexport (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  g_assert_false (perfmon_monitor_export (fixture->monitor, fixture->server, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS);
  g_clear_error (&error);

  g_assert_true (perfmon_monitor_unexport (fixture->monitor, fixture->server));
  g_assert_false (perfmon_monitor_unexport (fixture->monitor, fixture->server));

  reply = call (fixture->client, fixture->name, "GetSnapshot", NULL, &error);
  g_assert_null (reply);
  g_assert_true (g_dbus_error_is_remote_error (error));
  g_clear_error (&error);

  /* And again, after being unexported. */
  g_assert_true (perfmon_monitor_export_full (fixture->monitor, NULL, fixture->server,
                                              PERFMON_EXPORT_FLAGS_NO_REGISTER, &error));
  g_assert_no_error (error);
  reply = call (fixture->client, fixture->name, "GetSnapshot", NULL, &error);
  g_assert_no_error (error);
}

static void
test_export_wrong_context (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainContext) other = g_main_context_new ();

  g_main_context_push_thread_default (other);
  g_assert_false (perfmon_monitor_export (fixture->monitor, fixture->server, &error));
  g_main_context_pop_thread_default (other);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "context"));
}

/* --- registration with a fake daemon ------------------------------------ */

typedef struct
{
  GDBusConnection *connection;
  guint            registration;
  guint            owner_id;
  gboolean         owned;
  GPtrArray       *registered;    /* senders of Register, in order */
  GPtrArray       *unregistered;  /* senders of Unregister */
} FakeDaemon;

static void
fake_daemon_method_call (GDBusConnection       *connection,
                         const char            *sender,
                         const char            *object_path,
                         const char            *interface_name,
                         const char            *method_name,
                         GVariant              *parameters,
                         GDBusMethodInvocation *invocation,
                         gpointer               user_data)
{
  FakeDaemon *daemon = user_data;

  if (g_str_equal (method_name, "Register"))
    g_ptr_array_add (daemon->registered, g_strdup (sender));
  else if (g_str_equal (method_name, "Unregister"))
    g_ptr_array_add (daemon->unregistered, g_strdup (sender));
  g_dbus_method_invocation_return_value (invocation, NULL);
}

static const GDBusInterfaceVTable fake_daemon_vtable = { .method_call = fake_daemon_method_call };

static void
on_fake_daemon_name_acquired (GDBusConnection *connection,
                              const char      *name,
                              gpointer         user_data)
{
  ((FakeDaemon *) user_data)->owned = TRUE;
}

static void
fake_daemon_own (FakeDaemon *daemon)
{
  daemon->owned = FALSE;
  daemon->owner_id = g_bus_own_name_on_connection (daemon->connection, PERFMON_DAEMON_BUS_NAME,
                                                   G_BUS_NAME_OWNER_FLAGS_NONE,
                                                   on_fake_daemon_name_acquired, NULL, daemon, NULL);
  test_iterate_until (NULL, &daemon->owned, "owning org.perfmon.Daemon1");
}

static void
fake_daemon_disown (FakeDaemon *daemon)
{
  g_bus_unown_name (daemon->owner_id);
  daemon->owner_id = 0;
}

static FakeDaemon *
fake_daemon_new (void)
{
  FakeDaemon *daemon = g_new0 (FakeDaemon, 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusNodeInfo) node = NULL;
  g_autofree char *xml = NULL;
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "..", "data", "org.perfmon.Daemon1.xml", NULL);

  /* The daemon's real interface, as the exporter will call it. */
  g_file_get_contents (path, &xml, NULL, &error);
  g_assert_no_error (error);
  node = g_dbus_node_info_new_for_xml (xml, &error);
  g_assert_no_error (error);

  daemon->connection = test_bus_connect (test_bus);
  daemon->registered = g_ptr_array_new_with_free_func (g_free);
  daemon->unregistered = g_ptr_array_new_with_free_func (g_free);
  daemon->registration =
    g_dbus_connection_register_object (daemon->connection, PERFMON_DAEMON_OBJECT_PATH,
                                       g_dbus_node_info_lookup_interface (node, PERFMON_DAEMON_INTERFACE),
                                       &fake_daemon_vtable, daemon, NULL, &error);
  g_assert_no_error (error);
  fake_daemon_own (daemon);
  return daemon;
}

static void
fake_daemon_free (FakeDaemon *daemon)
{
  if (daemon->owner_id != 0)
    fake_daemon_disown (daemon);
  g_dbus_connection_unregister_object (daemon->connection, daemon->registration);
  g_dbus_connection_close_sync (daemon->connection, NULL, NULL);
  g_object_unref (daemon->connection);
  g_ptr_array_unref (daemon->registered);
  g_ptr_array_unref (daemon->unregistered);
  g_free (daemon);
}

static void
wait_for_registrations (FakeDaemon *daemon,
                        guint       n)
{
  g_autoptr(GMainContext) context = g_main_context_ref_thread_default ();
  g_autoptr(GSource) timeout = g_timeout_source_new_seconds (20);

  g_source_set_callback (timeout, test_fail_on_timeout, "Register", NULL);
  g_source_attach (timeout, context);
  while (daemon->registered->len < n)
    g_main_context_iteration (context, TRUE);
  g_source_destroy (timeout);
}

static void
test_register (Fixture       *fixture,
               gconstpointer  data)
{
  FakeDaemon *daemon = fake_daemon_new ();
  g_autoptr(GError) error = NULL;

  g_assert_true (perfmon_monitor_export (fixture->monitor, fixture->server, &error));
  g_assert_no_error (error);
  wait_for_registrations (daemon, 1);
  g_assert_cmpstr (g_ptr_array_index (daemon->registered, 0), ==, fixture->name);

  /* The daemon goes away and comes back: the process registers again. */
  fake_daemon_disown (daemon);
  test_iterate_for (NULL, 50);
  fake_daemon_own (daemon);
  wait_for_registrations (daemon, 2);
  g_assert_cmpstr (g_ptr_array_index (daemon->registered, 1), ==, fixture->name);

  /* And once only per appearance. */
  test_iterate_for (NULL, 100);
  g_assert_cmpuint (daemon->registered->len, ==, 2);

  /* Unexporting unregisters. */
  g_assert_true (perfmon_monitor_unexport (fixture->monitor, fixture->server));
  {
    g_autoptr(GMainContext) context = g_main_context_ref_thread_default ();
    g_autoptr(GSource) timeout = g_timeout_source_new_seconds (20);

    g_source_set_callback (timeout, test_fail_on_timeout, "Unregister", NULL);
    g_source_attach (timeout, context);
    while (daemon->unregistered->len < 1)
      g_main_context_iteration (context, TRUE);
    g_source_destroy (timeout);
  }
  g_assert_cmpstr (g_ptr_array_index (daemon->unregistered, 0), ==, fixture->name);

  fake_daemon_free (daemon);
}

/* The daemon starts after the process exported. */
static void
test_register_late_daemon (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  FakeDaemon *daemon;

  /* No daemon and no activation file: not an error. */
  g_assert_true (perfmon_monitor_export (fixture->monitor, fixture->server, &error));
  g_assert_no_error (error);
  test_iterate_for (NULL, 100);

  daemon = fake_daemon_new ();
  wait_for_registrations (daemon, 1);
  g_assert_cmpstr (g_ptr_array_index (daemon->registered, 0), ==, fixture->name);
  fake_daemon_free (daemon);
}

static void
test_register_opt_out (Fixture       *fixture,
                       gconstpointer  data)
{
  FakeDaemon *daemon = fake_daemon_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonMonitor) by_env = perfmon_monitor_new (fixture->context);
  g_autoptr(PerfmonMonitor) control = perfmon_monitor_new (fixture->context);
  g_autoptr(GDBusConnection) env_connection = test_bus_connect (test_bus);
  g_autoptr(GDBusConnection) control_connection = test_bus_connect (test_bus);

  /* By flag, ... */
  g_assert_true (perfmon_monitor_export_full (fixture->monitor, NULL, fixture->server,
                                              PERFMON_EXPORT_FLAGS_NO_REGISTER, &error));
  g_assert_no_error (error);
  /* ... by environment, ... */
  g_setenv ("PERFMON_NO_REGISTER", "1", TRUE);
  g_assert_true (perfmon_monitor_export (by_env, env_connection, &error));
  g_unsetenv ("PERFMON_NO_REGISTER");
  g_assert_no_error (error);
  /* ... and one that does register, after them, as the yardstick of how
   * long a registration takes. */
  g_assert_true (perfmon_monitor_export (control, control_connection, &error));
  g_assert_no_error (error);

  wait_for_registrations (daemon, 1);
  test_iterate_for (NULL, 200);
  g_assert_cmpuint (daemon->registered->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (daemon->registered, 0), ==,
                   g_dbus_connection_get_unique_name (control_connection));

  perfmon_monitor_unexport (by_env, env_connection);
  perfmon_monitor_unexport (control, control_connection);
  g_dbus_connection_close_sync (env_connection, NULL, NULL);
  g_dbus_connection_close_sync (control_connection, NULL, NULL);
  test_iterate_for (NULL, 20);
  fake_daemon_free (daemon);
}

/* The daemon as D-Bus activation starts it: this program run with
 * --fake-daemon XML LOG. It serves Register and Unregister, appending the
 * caller's name to LOG, until the bus goes away. */
static void
activated_daemon_method_call (GDBusConnection       *connection,
                              const char            *sender,
                              const char            *object_path,
                              const char            *interface_name,
                              const char            *method_name,
                              GVariant              *parameters,
                              GDBusMethodInvocation *invocation,
                              gpointer               user_data)
{
  const char *log_path = user_data;
  g_autofree char *old = NULL;
  g_autofree char *new = NULL;

  g_file_get_contents (log_path, &old, NULL, NULL);
  new = g_strdup_printf ("%s%s %s\n", old != NULL ? old : "", method_name, sender);
  g_file_set_contents (log_path, new, -1, NULL);
  g_dbus_method_invocation_return_value (invocation, NULL);
}

static int
run_fake_daemon (const char *xml_path,
                 const char *log_path)
{
  static const GDBusInterfaceVTable vtable = { .method_call = activated_daemon_method_call };
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(GDBusNodeInfo) node = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autofree char *xml = NULL;

  if (!g_file_get_contents (xml_path, &xml, NULL, &error) ||
      (node = g_dbus_node_info_new_for_xml (xml, &error)) == NULL ||
      (bus = g_bus_get_sync (G_BUS_TYPE_STARTER, NULL, &error)) == NULL ||
      g_dbus_connection_register_object (bus, PERFMON_DAEMON_OBJECT_PATH,
                                         g_dbus_node_info_lookup_interface (node, PERFMON_DAEMON_INTERFACE),
                                         &vtable, (gpointer) log_path, NULL, &error) == 0)
    {
      g_printerr ("fake daemon: %s\n", error->message);
      return 1;
    }
  /* Exits when the bus closes (exit-on-close). */
  g_bus_own_name_on_connection (bus, PERFMON_DAEMON_BUS_NAME, G_BUS_NAME_OWNER_FLAGS_NONE,
                                NULL, NULL, NULL, NULL);
  g_main_loop_run (loop);
  return 0;
}

/* Exporting starts the daemon through D-Bus activation, and registers
 * once. A bus of its own: the other tests need a bus without the
 * daemon's activation file. */
static void
test_register_activates_daemon (Fixture       *fixture,
                                gconstpointer  data)
{
  g_autoptr(GTestDBus) bus = g_test_dbus_new (G_TEST_DBUS_NONE);
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *self_path = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *services = g_build_filename (fixture->dir, "services", NULL);
  g_autofree char *service = g_build_filename (services, "org.perfmon.Daemon1.service", NULL);
  g_autofree char *log_path = g_build_filename (fixture->dir, "daemon.log", NULL);
  g_autofree char *xml_path = g_test_build_filename (G_TEST_DIST, "..", "data", "org.perfmon.Daemon1.xml", NULL);
  g_autofree char *service_text = NULL;
  g_autofree char *log = NULL;
  g_autofree char *expected = NULL;
  gint64 deadline;

  g_assert_cmpint (g_mkdir (services, 0700), ==, 0);
  service_text = g_strdup_printf ("[D-BUS Service]\nName=%s\nExec=%s --fake-daemon %s %s\n",
                                  PERFMON_DAEMON_BUS_NAME, self_path, xml_path, log_path);
  g_file_set_contents (service, service_text, -1, &error);
  g_assert_no_error (error);
  g_test_dbus_add_service_dir (bus, services);
  test_dbus_up (bus);

  connection = test_bus_connect (bus);
  g_assert_true (perfmon_monitor_export (fixture->monitor, connection, &error));
  g_assert_no_error (error);

  expected = g_strdup_printf ("Register %s\n", g_dbus_connection_get_unique_name (connection));
  deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  while ((log == NULL || !g_str_has_prefix (log, expected)) && g_get_monotonic_time () < deadline)
    {
      g_clear_pointer (&log, g_free);
      test_iterate_for (NULL, 10);
      g_file_get_contents (log_path, &log, NULL, NULL);
    }
  g_assert_cmpstr (log, ==, expected);

  /* Once only, though the name appeared while Register was on its way. */
  test_iterate_for (NULL, 200);
  g_clear_pointer (&log, g_free);
  g_file_get_contents (log_path, &log, NULL, NULL);
  g_assert_cmpstr (log, ==, expected);

  perfmon_monitor_unexport (fixture->monitor, connection);
  g_dbus_connection_close_sync (connection, NULL, NULL);
  g_clear_object (&connection);
  g_test_dbus_down (bus);
}

/* --- peer-to-peer and access control ------------------------------------- */

typedef struct
{
  GDBusServer     *server;
  PerfmonMonitor  *monitor;
  GPtrArray       *connections;
} PeerServer;

static gboolean
on_new_connection (GDBusServer     *server,
                   GDBusConnection *connection,
                   gpointer         user_data)
{
  PeerServer *peer_server = user_data;
  g_autoptr(GError) error = NULL;

  g_assert_true (perfmon_monitor_export (peer_server->monitor, connection, &error));
  g_assert_no_error (error);
  g_ptr_array_add (peer_server->connections, g_object_ref (connection));
  return TRUE;
}

static PeerServer *
peer_server_new (PerfmonMonitor *monitor)
{
  PeerServer *peer_server = g_new0 (PeerServer, 1);
  g_autoptr(GError) error = NULL;
  g_autofree char *guid = g_dbus_generate_guid ();

  peer_server->monitor = monitor;
  peer_server->connections = g_ptr_array_new_with_free_func (g_object_unref);
  /* An abstract socket: any uid may connect, as a real attacker could to
   * a socket it can reach. */
  peer_server->server = g_dbus_server_new_sync ("unix:tmpdir=/tmp", G_DBUS_SERVER_FLAGS_NONE, guid,
                                                NULL, NULL, &error);
  g_assert_no_error (error);
  g_signal_connect (peer_server->server, "new-connection", G_CALLBACK (on_new_connection), peer_server);
  g_dbus_server_start (peer_server->server);
  return peer_server;
}

static void
peer_server_free (PeerServer *peer_server)
{
  for (guint i = 0; i < peer_server->connections->len; i++)
    {
      GDBusConnection *connection = g_ptr_array_index (peer_server->connections, i);

      perfmon_monitor_unexport (peer_server->monitor, connection);
      g_dbus_connection_close_sync (connection, NULL, NULL);
    }
  g_dbus_server_stop (peer_server->server);
  g_object_unref (peer_server->server);
  g_ptr_array_unref (peer_server->connections);
  g_free (peer_server);
}

static void
connected (GObject      *source,
           GAsyncResult *result,
           gpointer      user_data)
{
  g_autoptr(GError) error = NULL;

  *(GDBusConnection **) user_data = g_dbus_connection_new_for_address_finish (result, &error);
  g_assert_no_error (error);
}

static void
test_peer_same_uid (Fixture       *fixture,
                    gconstpointer  data)
{
  PeerServer *peer_server = peer_server_new (fixture->monitor);
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) pid = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  gboolean have_connection = FALSE;

  g_dbus_connection_new_for_address (g_dbus_server_get_client_address (peer_server->server),
                                     G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, NULL, NULL,
                                     connected, &connection);
  while (!have_connection)
    {
      g_main_context_iteration (fixture->context, TRUE);
      have_connection = connection != NULL;
    }

  reply = call (connection, NULL, "GetSnapshot", NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(v)", &variant);
  snapshot = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, (guint) getpid ());

  pid = get_property (connection, NULL, "Pid", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_variant_get_uint32 (pid), ==, (guint32) getpid ());

  g_dbus_connection_close_sync (connection, NULL, NULL);
  peer_server_free (peer_server);
}

static void
on_publish_done (GObject      *source,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  CallResult *call = user_data;

  call->reply = g_dbus_connection_call_with_unix_fd_list_finish (G_DBUS_CONNECTION (source), NULL, result,
                                                                 &call->error);
  call->done = TRUE;
}

/* Publish(@fd, @interval_ms), @fd -1 for none; iterating this thread's
 * context meanwhile. */
static GVariant *
call_publish (GDBusConnection  *connection,
              const char       *bus_name,
              int               fd,
              guint32           interval_ms,
              GError          **error)
{
  g_autoptr(GUnixFDList) fds = fd >= 0 ? g_unix_fd_list_new_from_array (&fd, 1) : NULL;
  CallResult call = { 0 };

  g_dbus_connection_call_with_unix_fd_list (connection, bus_name, PERFMON_MONITOR_OBJECT_PATH,
                                            PERFMON_MONITOR_INTERFACE, "Publish",
                                            g_variant_new ("(hu)", 0, interval_ms), NULL,
                                            G_DBUS_CALL_FLAGS_NO_AUTO_START, 10000, fds, NULL,
                                            on_publish_done, &call);
  test_iterate_until (NULL, &call.done, "Publish");
  if (call.error != NULL)
    g_propagate_error (error, call.error);
  return call.reply;
}

/* Publish(): on a bus, only the daemon the process registered with may
 * hand it a region; from its peer, it publishes a snapshot into it at the
 * interval, taken on the monitor's thread; bad arguments are refused
 * naming the field. */
static void
test_publish (Fixture       *fixture,
              gconstpointer  data)
{
  PeerServer *peer_server = NULL;
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(PerfmonPublishRegion) region = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GVariant) wrapped = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  guint64 generation = 0;
  gint64 deadline;
  int fd = -1;
  int unsealed;

  /* A client on the bus that is not the daemon. */
  region = perfmon_publish_region_create (65536, &fd, &error);
  g_assert_no_error (error);
  reply = call_publish (fixture->client, fixture->name, fd, 100, &error);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.AccessDenied", "only the daemon");
  g_clear_error (&error);

  peer_server = peer_server_new (fixture->monitor);
  g_dbus_connection_new_for_address (g_dbus_server_get_client_address (peer_server->server),
                                     G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, NULL, NULL,
                                     connected, &connection);
  while (connection == NULL)
    g_main_context_iteration (fixture->context, TRUE);

  fd = -1;
  g_clear_pointer (&region, perfmon_publish_region_free);
  region = perfmon_publish_region_create (65536, &fd, &error);
  g_assert_no_error (error);
  reply = call_publish (connection, NULL, dup (fd), 5, &error);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "interval_ms: expected 10 to 3600000, got 5");
  g_clear_error (&error);
  reply = call_publish (connection, NULL, -1, 100, &error);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "region: expected a file descriptor");
  g_clear_error (&error);
  unsealed = memfd_create ("unsealed", MFD_CLOEXEC);
  g_assert_cmpint (ftruncate (unsealed, 65536), ==, 0);
  reply = call_publish (connection, NULL, unsealed, 100, &error);
  assert_dbus_error (error, "org.freedesktop.DBus.Error.InvalidArgs", "sealed");
  g_clear_error (&error);

  reply = call_publish (connection, NULL, fd, 20, &error);
  g_assert_no_error (error);
  deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (perfmon_publish_region_read (region, &generation, &bytes, &error) != PERFMON_PUBLISH_NEW)
    {
      g_assert_no_error (error);
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (fixture->context, FALSE);
      g_usleep (1000);
    }
  /* As GetSnapshotBytes sends it: a little-endian "v" of the snapshot. */
  wrapped = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE_VARIANT, bytes, FALSE));
  variant = g_variant_get_variant (wrapped);
  snapshot = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, (guint) getpid ());
  g_assert_cmpuint (perfmon_snapshot_get_groups (snapshot)->len, >=, fixture->groups->len);

  /* And again, at the interval. */
  g_clear_pointer (&bytes, g_bytes_unref);
  while (perfmon_publish_region_read (region, &generation, &bytes, &error) != PERFMON_PUBLISH_NEW)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (fixture->context, FALSE);
      g_usleep (1000);
    }
  g_assert_cmpuint (generation, >=, 2);

  g_dbus_connection_close_sync (connection, NULL, NULL);
  peer_server_free (peer_server);
}

static void
on_closed (GDBusConnection *connection,
           gboolean         remote_peer_vanished,
           GError          *error,
           gpointer         user_data)
{
  *(gboolean *) user_data = TRUE;
}

/* A peer that goes away takes its export with it: nothing is left to
 * unexport, and the monitor is no longer held. */
static void
test_peer_closes (Fixture       *fixture,
                  gconstpointer  data)
{
  PeerServer *peer_server = peer_server_new (fixture->monitor);
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  GDBusConnection *server_side;
  gboolean closed = FALSE;
  guint monitor_refs = G_OBJECT (fixture->monitor)->ref_count;

  g_dbus_connection_new_for_address (g_dbus_server_get_client_address (peer_server->server),
                                     G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, NULL, NULL,
                                     connected, &connection);
  while (connection == NULL)
    g_main_context_iteration (fixture->context, TRUE);
  reply = call (connection, NULL, "GetSnapshot", NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (peer_server->connections->len, ==, 1);
  server_side = g_ptr_array_index (peer_server->connections, 0);
  g_signal_connect (server_side, "closed", G_CALLBACK (on_closed), &closed);

  g_dbus_connection_close_sync (connection, NULL, NULL);
  /* GDBusServer makes its connections on a thread of its own, whose
   * context is the global default one: ::closed is emitted there. */
  {
    gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

    while (!closed && g_get_monotonic_time () < deadline)
      {
        g_main_context_iteration (NULL, FALSE);
        g_main_context_iteration (fixture->context, FALSE);
        g_usleep (1000);
      }
    g_assert_true (closed);
  }
  test_iterate_for (NULL, 20);
  g_assert_false (perfmon_monitor_unexport (fixture->monitor, server_side));
  /* The export let go of the monitor. */
  g_assert_cmpuint (G_OBJECT (fixture->monitor)->ref_count, ==, monitor_refs);

  peer_server_free (peer_server);
}

/* The child of test_peer_other_uid, already running as nobody: calls the
 * monitor at @address and prints each call's outcome on a line. */
static int
run_peer_client (const char *address)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) connection = NULL;
  const char *calls[][2] = {
    { PERFMON_MONITOR_INTERFACE, "GetSnapshot" },
    { "org.freedesktop.DBus.Properties", "Get" },
    { "org.freedesktop.DBus.Properties", "GetAll" },
  };

  connection = g_dbus_connection_new_for_address_sync (address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                       NULL, NULL, &error);
  if (connection == NULL)
    {
      printf ("connect: %s\n", error->message);
      return 1;
    }

  for (guint i = 0; i < G_N_ELEMENTS (calls); i++)
    {
      g_autoptr(GVariant) reply = NULL;
      GVariant *parameters = NULL;

      if (g_str_equal (calls[i][1], "Get"))
        parameters = g_variant_new ("(ss)", PERFMON_MONITOR_INTERFACE, "Pid");
      else if (g_str_equal (calls[i][1], "GetAll"))
        parameters = g_variant_new ("(s)", PERFMON_MONITOR_INTERFACE);
      reply = g_dbus_connection_call_sync (connection, NULL, PERFMON_MONITOR_OBJECT_PATH, calls[i][0],
                                           calls[i][1], parameters, NULL, G_DBUS_CALL_FLAGS_NONE, 10000,
                                           NULL, &error);
      if (reply != NULL)
        printf ("%s: served\n", calls[i][1]);
      else
        {
          g_autofree char *remote = g_dbus_error_get_remote_error (error);

          g_dbus_error_strip_remote_error (error);
          printf ("%s: %s: %s\n", calls[i][1], remote, error->message);
          g_clear_error (&error);
        }
    }
  fflush (stdout);
  return 0;
}

static void
become_nobody (gpointer data)
{
  /* After fork, before exec: only async-signal-safe calls. */
  if (setgroups (0, NULL) != 0 || setgid (NOBODY_GID) != 0 || setuid (NOBODY_UID) != 0)
    _exit (99);
}

typedef struct
{
  gboolean  done;
  char     *out;
  GError   *error;
} Communication;

static void
on_communicated (GObject      *source,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  Communication *communication = user_data;

  g_subprocess_communicate_utf8_finish (G_SUBPROCESS (source), result, &communication->out, NULL,
                                        &communication->error);
  communication->done = TRUE;
}

static void
test_peer_other_uid (Fixture       *fixture,
                     gconstpointer  data)
{
  PeerServer *peer_server;
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GSubprocess) child = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *self_path = NULL;
  g_auto(GStrv) lines = NULL;
  Communication communication = { 0 };

  if (getuid () != 0)
    {
      g_test_skip ("needs root, to run a client as nobody");
      return;
    }

  peer_server = peer_server_new (fixture->monitor);
  self_path = g_file_read_link ("/proc/self/exe", &error);
  g_assert_no_error (error);

  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_subprocess_launcher_set_child_setup (launcher, become_nobody, NULL, NULL);
  child = g_subprocess_launcher_spawn (launcher, &error, self_path, "--peer-client",
                                       g_dbus_server_get_client_address (peer_server->server), NULL);
  g_assert_no_error (error);

  /* The exporter is on this thread: iterate while the child calls. */
  g_subprocess_communicate_utf8_async (child, NULL, NULL, on_communicated, &communication);
  test_iterate_until (NULL, &communication.done, "the client running as nobody");
  g_assert_no_error (communication.error);
  g_assert_true (g_subprocess_get_if_exited (child));
  g_assert_cmpint (g_subprocess_get_exit_status (child), ==, 0);

  g_test_message ("child said:\n%s", communication.out);
  lines = g_strsplit (communication.out, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), >=, 3);
  g_assert_true (g_str_has_prefix (lines[0], "GetSnapshot: org.freedesktop.DBus.Error.AccessDenied: "));
  g_assert_nonnull (strstr (lines[0], "uid 65534"));
  g_assert_true (g_str_has_prefix (lines[1], "Get: org.freedesktop.DBus.Error.AccessDenied: "));
  g_assert_true (g_str_has_prefix (lines[2], "GetAll: org.freedesktop.DBus.Error.AccessDenied: "));

  g_free (communication.out);
  peer_server_free (peer_server);
}

int
main (int   argc,
      char *argv[])
{
  int status;

  if (argc == 3 && g_str_equal (argv[1], "--peer-client"))
    return run_peer_client (argv[2]);
  if (argc == 4 && g_str_equal (argv[1], "--fake-daemon"))
    return run_fake_daemon (argv[2], argv[3]);

  main_thread = pthread_self ();
  g_test_init (&argc, &argv, NULL);
  g_set_prgname ("test-dbus-export");

  test_bus = test_private_bus_new ();

#define ADD(path, func, data) \
  g_test_add ("/dbus-export/" path, Fixture, data, fixture_set_up, func, fixture_tear_down)

  ADD ("get-snapshot", test_get_snapshot, EXPORTED);
  ADD ("get-snapshot-json", test_get_snapshot_json, EXPORTED);
  ADD ("get-snapshot-bytes", test_get_snapshot_bytes, EXPORTED);
  ADD ("properties", test_properties, EXPORTED);
  ADD ("process-name-without-prgname", test_process_name_without_prgname, NOT_EXPORTED);
  ADD ("subscribers-gone-before-served", test_subscribers_gone_before_served, EXPORTED);
  ADD ("introspect-documented", test_introspect_documented, EXPORTED);
  ADD ("alert", test_alert, EXPORTED);
  ADD ("hang", test_hang, EXPORTED);
  ADD ("hang-reports-empty", test_hang_reports_bounded, EXPORTED);
  ADD ("set-event-config", test_set_event_config, EXPORTED);
  ADD ("set-event-config-long-strings", test_set_event_config_long_strings, EXPORTED);
  ADD ("big-call-trimmed-off-thread", test_big_call_trimmed_off_thread, EXPORTED);
  ADD ("set-event-config-without-hang-monitor", test_set_event_config_without_hang_monitor, NOT_EXPORTED);
  ADD ("malformed-calls", test_malformed_calls, EXPORTED);
  ADD ("export-twice-and-unexport", test_export_twice_and_unexport, EXPORTED);
  ADD ("export-wrong-context", test_export_wrong_context, NOT_EXPORTED);
  ADD ("register", test_register, NOT_EXPORTED);
  ADD ("register-late-daemon", test_register_late_daemon, NOT_EXPORTED);
  ADD ("register-opt-out", test_register_opt_out, NOT_EXPORTED);
  ADD ("register-activates-daemon", test_register_activates_daemon, NOT_EXPORTED);
  ADD ("peer-same-uid", test_peer_same_uid, NOT_EXPORTED);
  ADD ("peer-other-uid", test_peer_other_uid, NOT_EXPORTED);
  ADD ("peer-closes", test_peer_closes, NOT_EXPORTED);
  ADD ("publish", test_publish, EXPORTED);

  status = g_test_run ();
  g_test_dbus_down (test_bus);
  g_clear_object (&test_bus);
  return status;
}
