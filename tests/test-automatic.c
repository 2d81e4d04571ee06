/* test-automatic.c: automatic groups, the per-dispatch hook and the hang
 * dispatch list
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Linked with -rdynamic: the callbacks below are named by their dynamic
 * symbols, as dladdr() sees them.
 */
#include "config.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>

#include <time.h>

#include "perfmon.h"
#include "perfmon-clock-private.h"
#include "perfmon-dispatch-observer-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-test-dirs.h"
#include "perfmon-test-utils.h"

typedef struct
{
  GMainContext   *context;
  PerfmonMonitor *monitor;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->context = g_main_context_new ();
  g_main_context_push_thread_default (fixture->context);
  fixture->monitor = perfmon_monitor_new (fixture->context);
  perfmon_monitor_set_automatic_groups (fixture->monitor, TRUE);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_clear_object (&fixture->monitor);
  g_main_context_pop_thread_default (fixture->context);
  g_main_context_unref (fixture->context);
}

static void
spin_ms (guint ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

/* The snapshot's group named @name, or NULL. */
static PerfmonGroupStats *
find_stats (PerfmonSnapshot *snapshot,
            const char      *name)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

  for (guint i = 0; i < groups->len; i++)
    if (g_str_equal (perfmon_group_stats_get_name (g_ptr_array_index (groups, i)), name))
      return g_ptr_array_index (groups, i);
  return NULL;
}

static guint
count_compartments (PerfmonSnapshot *snapshot)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);
  guint n = 0;

  for (guint i = 0; i < groups->len; i++)
    n += perfmon_group_stats_get_kind (g_ptr_array_index (groups, i)) == PERFMON_GROUP_KIND_COMPARTMENT;
  return n;
}

/* Callbacks named by their symbols: global, for -rdynamic. */
G_GNUC_NO_INLINE gboolean automatic_test_idle_callback (gpointer data);
G_GNUC_NO_INLINE gboolean automatic_test_timeout_callback (gpointer data);
G_GNUC_NO_INLINE gboolean automatic_test_fd_callback (int fd, GIOCondition condition, gpointer data);
G_GNUC_NO_INLINE gboolean automatic_test_io_callback (GIOChannel *channel, GIOCondition condition, gpointer data);
G_GNUC_NO_INLINE void automatic_test_child_callback (GPid pid, int status, gpointer data);
G_GNUC_NO_INLINE gboolean automatic_test_signal_callback (gpointer data);
G_GNUC_NO_INLINE gboolean automatic_test_socket_callback (GSocket *socket, GIOCondition condition, gpointer data);

G_GNUC_NO_INLINE gboolean
automatic_test_idle_callback (gpointer data)
{
  spin_ms (3);
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE gboolean
automatic_test_timeout_callback (gpointer data)
{
  spin_ms (3);
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE gboolean
automatic_test_fd_callback (int          fd,
                            GIOCondition condition,
                            gpointer     data)
{
  char byte;

  g_assert_cmpint (read (fd, &byte, 1), ==, 1);
  spin_ms (3);
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE gboolean
automatic_test_io_callback (GIOChannel  *channel,
                            GIOCondition condition,
                            gpointer     data)
{
  spin_ms (3);
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE void
automatic_test_child_callback (GPid     pid,
                               int      status,
                               gpointer data)
{
  spin_ms (3);
  g_spawn_close_pid (pid);
  *(gboolean *) data = TRUE;
}

G_GNUC_NO_INLINE gboolean
automatic_test_signal_callback (gpointer data)
{
  spin_ms (3);
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE gboolean
automatic_test_socket_callback (GSocket     *socket,
                                GIOCondition condition,
                                gpointer     data)
{
  spin_ms (3);
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

/* A kind of source of the test's own, tracked explicitly. */
static gboolean
custom_prepare (GSource *source,
                int     *timeout)
{
  *timeout = -1;
  return TRUE;
}

static gboolean
custom_dispatch (GSource    *source,
                 GSourceFunc callback,
                 gpointer    data)
{
  spin_ms (3);
  return callback != NULL ? callback (data) : G_SOURCE_REMOVE;
}

/* Global and writable, as a program's GSourceFuncs usually is. */
GSourceFuncs automatic_test_custom_funcs = { custom_prepare, NULL, custom_dispatch, NULL, NULL, NULL };

static gboolean
set_done (gpointer data)
{
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

/* Attaches @source to the fixture's context and runs until it is done;
 * returns the snapshot after. */
static PerfmonSnapshot *
run_source (Fixture  *fixture,
            GSource  *source,
            gboolean *done)
{
  g_source_attach (source, fixture->context);
  g_source_unref (source);
  test_iterate_until (fixture->context, done, "the source to run");
  return perfmon_monitor_snapshot (fixture->monitor);
}

static void
assert_group_ran (PerfmonSnapshot *snapshot,
                  const char      *name)
{
  PerfmonGroupStats *stats = find_stats (snapshot, name);

  if (stats == NULL)
    {
      GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

      for (guint i = 0; i < groups->len; i++)
        g_test_message ("group: %s", perfmon_group_stats_get_name (g_ptr_array_index (groups, i)));
      g_error ("no automatic group “%s”", name);
    }
  g_assert_cmpint (perfmon_group_stats_get_kind (stats), ==, PERFMON_GROUP_KIND_COMPARTMENT);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (stats), >=, 1);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (stats), >, 0);
}

static void
test_glib_kinds (Fixture       *fixture,
                 gconstpointer  data)
{
  int fds[2];
  gboolean done;
  GSource *source;
  GPid pid;
  g_autoptr(GError) error = NULL;
  char *argv[] = { (char *) "/bin/true", NULL };
  g_autoptr(GIOChannel) channel = NULL;

  done = FALSE;
  source = g_idle_source_new ();
  g_source_set_callback (source, automatic_test_idle_callback, &done, NULL);
  g_object_unref (run_source (fixture, source, &done));

  done = FALSE;
  source = g_timeout_source_new (1);
  g_source_set_callback (source, automatic_test_timeout_callback, &done, NULL);
  g_object_unref (run_source (fixture, source, &done));

  g_assert_true (g_unix_open_pipe (fds, FD_CLOEXEC, NULL));
  g_assert_cmpint (write (fds[1], "x", 1), ==, 1);
  done = FALSE;
  source = g_unix_fd_source_new (fds[0], G_IO_IN);
  g_source_set_callback (source, G_SOURCE_FUNC (automatic_test_fd_callback), &done, NULL);
  g_object_unref (run_source (fixture, source, &done));

  g_assert_cmpint (write (fds[1], "x", 1), ==, 1);
  channel = g_io_channel_unix_new (fds[0]);
  done = FALSE;
  source = g_io_create_watch (channel, G_IO_IN);
  g_source_set_callback (source, G_SOURCE_FUNC (automatic_test_io_callback), &done, NULL);
  g_object_unref (run_source (fixture, source, &done));
  close (fds[0]);
  close (fds[1]);

  g_assert_true (g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  done = FALSE;
  source = g_child_watch_source_new (pid);
  g_source_set_callback (source, G_SOURCE_FUNC (automatic_test_child_callback), &done, NULL);
  g_object_unref (run_source (fixture, source, &done));

  done = FALSE;
  source = g_unix_signal_source_new (SIGUSR1);
  g_source_set_callback (source, automatic_test_signal_callback, &done, NULL);
  g_source_attach (source, fixture->context);
  g_source_unref (source);
  raise (SIGUSR1);
  test_iterate_until (fixture->context, &done, "the sources to run");

  {
    g_autoptr(PerfmonSnapshot) snapshot = perfmon_monitor_snapshot (fixture->monitor);

    assert_group_ran (snapshot, "automatic_test_idle_callback");
    assert_group_ran (snapshot, "automatic_test_timeout_callback");
    assert_group_ran (snapshot, "automatic_test_fd_callback");
    assert_group_ran (snapshot, "automatic_test_io_callback");
    assert_group_ran (snapshot, "automatic_test_child_callback");
    assert_group_ran (snapshot, "automatic_test_signal_callback");
  }
}

static void
test_tracked_kinds (Fixture       *fixture,
                    gconstpointer  data)
{
  int fds[2];
  gboolean done = FALSE;
  GSource *source;
  g_autoptr(GError) error = NULL;
  g_autoptr(GSocket) socket = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;

  /* GIO's socket source: a kind of libgio's own, seen once tracked. */
  g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), ==, 0);
  socket = g_socket_new_from_fd (fds[0], &error);
  g_assert_no_error (error);
  g_assert_cmpint (write (fds[1], "x", 1), ==, 1);
  source = g_socket_create_source (socket, G_IO_IN, NULL);
  g_source_set_callback (source, G_SOURCE_FUNC (automatic_test_socket_callback), &done, NULL);
  perfmon_automatic_track_source (source);
  g_object_unref (run_source (fixture, source, &done));
  close (fds[1]);

  /* A kind of the program's own, without a callback: named after its
   * GSourceFuncs' symbol. */
  done = FALSE;
  source = g_source_new (&automatic_test_custom_funcs, sizeof (GSource));
  perfmon_automatic_track_source (source);
  g_source_set_callback (source, set_done, &done, NULL);
  snapshot = run_source (fixture, source, &done);

  assert_group_ran (snapshot, "automatic_test_socket_callback");
  /* set_done is static: no dynamic symbol, so the kind names it, with
   * where the callback is. */
  {
    GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);
    gboolean found = FALSE;

    for (guint i = 0; i < groups->len; i++)
      found |= g_str_has_prefix (perfmon_group_stats_get_name (g_ptr_array_index (groups, i)),
                                 "automatic_test_custom_funcs (test-automatic+0x");
    g_assert_true (found);
  }
}

/* A source's own name comes first. */
static void
test_source_name_first (Fixture       *fixture,
                        gconstpointer  data)
{
  gboolean done = FALSE;
  GSource *source = g_idle_source_new ();
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(PerfmonGroup) group = NULL;

  g_source_set_name (source, "[test] named idle");
  g_source_set_callback (source, automatic_test_idle_callback, &done, NULL);
  snapshot = run_source (fixture, source, &done);

  assert_group_ran (snapshot, "[test] named idle");
  g_assert_null (find_stats (snapshot, "automatic_test_idle_callback"));

  group = perfmon_monitor_get_automatic_group (fixture->monitor, "[test] named idle");
  g_assert_nonnull (group);
  g_assert_true (perfmon_group_get_active (group));
  g_assert_cmpint (perfmon_group_get_kind (group), ==, PERFMON_GROUP_KIND_COMPARTMENT);
  g_assert_null (perfmon_monitor_get_automatic_group (fixture->monitor, "never seen"));
}

static void
test_off (Fixture       *fixture,
          gconstpointer  data)
{
  gboolean done = FALSE;
  GSource *source = g_idle_source_new ();
  g_autoptr(PerfmonSnapshot) snapshot = NULL;

  perfmon_monitor_set_automatic_groups (fixture->monitor, FALSE);
  g_assert_false (perfmon_monitor_get_automatic_groups (fixture->monitor));
  g_source_set_callback (source, automatic_test_idle_callback, &done, NULL);
  snapshot = run_source (fixture, source, &done);

  g_assert_cmpuint (count_compartments (snapshot), ==, 0);
}

/* GLib's identity checks on source_funcs keep working. */
static void
test_identity (Fixture       *fixture,
               gconstpointer  data)
{
  static int token_idle;
  static int token_timeout;
  gboolean done = FALSE;

  /* Patched by the fixture: GLib's kinds dispatch through perfmon. */
  g_assert_true (g_idle_funcs.dispatch != NULL);

  g_idle_add (set_done, &token_idle);
  g_assert_true (g_idle_remove_by_data (&token_idle));
  g_assert_false (g_idle_remove_by_data (&token_idle));

  g_timeout_add (1000, set_done, &token_timeout);
  g_assert_true (g_source_remove_by_funcs_user_data (&g_timeout_funcs, &token_timeout));

  /* And sources of the default context still dispatch. */
  g_idle_add (set_done, &done);
  while (!done)
    g_main_context_iteration (NULL, TRUE);
}

static gboolean
name_and_spin (gpointer data)
{
  spin_ms (1);
  *(guint *) data += 1;
  return G_SOURCE_REMOVE;
}

static void
test_bounded (Fixture       *fixture,
              gconstpointer  data)
{
  guint n_done = 0;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autofree char *long_name = g_strnfill (1000, 'x');
  g_autoptr(GError) error = NULL;
  gboolean done = FALSE;

  perfmon_monitor_set_max_automatic_groups (fixture->monitor, 3);
  g_assert_cmpuint (perfmon_monitor_get_max_automatic_groups (fixture->monitor), ==, 3);

  for (guint i = 0; i < 5; i++)
    {
      GSource *source = g_idle_source_new ();
      g_autofree char *name = i == 0 ? g_strdup (long_name) : g_strdup_printf ("kind %u", i);

      g_source_set_name (source, name);
      g_source_set_callback (source, name_and_spin, &n_done, NULL);
      g_source_attach (source, fixture->context);
      g_source_unref (source);
    }
  while (n_done < 5)
    g_main_context_iteration (fixture->context, TRUE);
  g_main_context_iteration (fixture->context, FALSE);

  snapshot = perfmon_monitor_snapshot (fixture->monitor);
  /* Three groups and the overflow group (and "(outside dispatches)",
   * which the limit does not count). */
  g_assert_cmpuint (count_compartments (snapshot) - (find_stats (snapshot, "(outside dispatches)") != NULL), ==, 4);
  assert_group_ran (snapshot, "(other sources)");
  {
    GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

    for (guint i = 0; i < groups->len; i++)
      g_assert_cmpuint (strlen (perfmon_group_stats_get_name (g_ptr_array_index (groups, i))), <=, 95);
  }

  /* Assigning a new one past the limit is an error; bad names too. */
  g_assert_false (perfmon_monitor_assign_automatic_group (fixture->monitor, "kind 9", 1, NULL, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED);
  g_clear_error (&error);
  g_assert_false (perfmon_monitor_assign_automatic_group (fixture->monitor, long_name, 1, NULL, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "name"));
  g_assert_null (strstr (error->message, "xxxxxxxxxx"));
  g_clear_error (&error);

  (void) done;
}

static gboolean
enter_explicit (gpointer data)
{
  PerfmonGroup *explicit = data;

  spin_ms (2);
  perfmon_group_enter (explicit);
  spin_ms (3);
  perfmon_group_leave (explicit);
  return G_SOURCE_REMOVE;
}

/* Explicit compartments nest inside automatic ones; automatic groups map
 * to windows and add-ons. */
static void
test_nesting_and_mapping (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autoptr(PerfmonGroup) explicit = perfmon_monitor_create_compartment (fixture->monitor, "explicit", 0, NULL);
  g_autoptr(PerfmonGroup) window = perfmon_monitor_get_window_group (fixture->monitor, 42, "the window");
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  GSource *source = g_idle_source_new ();
  PerfmonGroupStats *outer;
  PerfmonGroupStats *inner;
  PerfmonGroupStats *window_stats;

  perfmon_group_set_active (explicit, TRUE);
  g_assert_true (perfmon_monitor_assign_automatic_group (fixture->monitor, "[test] outer", 42,
                                                         "addon@example.org", &error));
  g_assert_no_error (error);

  g_source_set_name (source, "[test] outer");
  g_source_set_callback (source, enter_explicit, explicit, NULL);
  g_source_attach (source, fixture->context);
  g_source_unref (source);
  g_main_context_iteration (fixture->context, TRUE);
  g_main_context_iteration (fixture->context, FALSE);

  snapshot = perfmon_monitor_snapshot (fixture->monitor);
  outer = find_stats (snapshot, "[test] outer");
  inner = find_stats (snapshot, "explicit");
  window_stats = find_stats (snapshot, "the window");
  g_assert_nonnull (outer);
  g_assert_nonnull (inner);
  g_assert_nonnull (window_stats);
  /* The window group held here is the one the snapshot names. */
  g_assert_cmpuint (perfmon_group_stats_get_id (window_stats), ==, perfmon_group_get_id (window));
  g_assert_cmpuint (perfmon_group_stats_get_window_id (outer), ==, 42);
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (outer), ==, "addon@example.org");
  /* Inclusive: the outer one holds the inner one's time; the window was
   * charged once, for the whole dispatch. */
  g_assert_cmpuint (perfmon_group_stats_get_ticks (inner), ==, 1);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (outer), >=, perfmon_group_stats_get_cpu_time (inner));
  g_assert_cmpuint (perfmon_group_stats_get_ticks (window_stats), ==, 1);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (window_stats), >=, perfmon_group_stats_get_cpu_time (inner));
}

static gboolean
enter_explicit_briefly (gpointer data)
{
  PerfmonGroup *explicit = data;

  perfmon_group_enter (explicit);
  perfmon_group_leave (explicit);
  return G_SOURCE_REMOVE;
}

/* Adds an idle source named @name that calls @func(@data) to @context. */
static void
add_idle (GMainContext *context,
          const char   *name,
          GSourceFunc   func,
          gpointer      data)
{
  GSource *source = g_idle_source_new ();

  g_source_set_name (source, name);
  g_source_set_callback (source, func, data, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
}

/* Dispatches @func(@data) once, in a source named @name, in an iteration
 * of its own. */
static void
dispatch_once (Fixture     *fixture,
               const char  *name,
               GSourceFunc  func,
               gpointer     data)
{
  add_idle (fixture->context, name, func, data);
  g_main_context_iteration (fixture->context, TRUE);
  g_main_context_iteration (fixture->context, FALSE);
}

/* The outermost dispatch of a group of no window or add-on (the hook's
 * lean measure): explicit compartments nest in it, short and long, and
 * leave the monitor as they found it. */
static void
test_nesting_lean (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(PerfmonGroup) explicit = perfmon_monitor_create_compartment (fixture->monitor, "explicit", 0, NULL);
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(PerfmonSnapshot) after = NULL;
  PerfmonGroupStats *brief, *outer, *inner, *thread;

  perfmon_group_set_active (explicit, TRUE);
  dispatch_once (fixture, "[test] brief", enter_explicit_briefly, explicit);
  dispatch_once (fixture, "[test] outer", enter_explicit, explicit);

  snapshot = perfmon_monitor_snapshot (fixture->monitor);
  brief = find_stats (snapshot, "[test] brief");
  outer = find_stats (snapshot, "[test] outer");
  inner = find_stats (snapshot, "explicit");
  {
    g_autoptr(PerfmonGroup) thread_group = perfmon_monitor_get_thread_group (fixture->monitor);

    thread = find_stats (snapshot, perfmon_group_get_name (thread_group));
  }
  g_assert_nonnull (brief);
  g_assert_nonnull (outer);
  g_assert_nonnull (inner);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (brief), ==, 1);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (outer), ==, 1);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (inner), ==, 2);
  g_assert_nonnull (thread);
  /* Inclusive, each group once: the outer dispatch holds the explicit
   * compartment's time, the thread group the dispatch's. */
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (inner), >, 0);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (outer), >=, perfmon_group_stats_get_cpu_time (inner));
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (thread), >=, perfmon_group_stats_get_cpu_time (outer));

  /* Balanced: a top-level measure still works (no critical), and the
   * lean dispatches keep counting. */
  perfmon_group_enter (explicit);
  perfmon_group_leave (explicit);
  for (guint i = 0; i < 3; i++)
    dispatch_once (fixture, "[test] brief", enter_explicit_briefly, explicit);
  after = perfmon_monitor_snapshot (fixture->monitor);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (find_stats (after, "[test] brief")), ==, 4);
}

/* --- the dispatch observer --------------------------------------------- */

static struct
{
  guint    attached;
  guint    begun;
  guint    ended;
  guint    depth;
  guint    max_depth;
  char    *last_name;
  GSource *last_attached;
} observed;

static void
observe_attached (GSource *source)
{
  observed.attached++;
  observed.last_attached = source;
}

static gpointer
observe_begin (GSource    *source,
               const char *name)
{
  observed.begun++;
  observed.depth++;
  observed.max_depth = MAX (observed.max_depth, observed.depth);
  g_free (observed.last_name);
  observed.last_name = g_strdup (name);
  return GUINT_TO_POINTER (observed.begun);
}

static void
observe_end (GSource *source,
             gpointer token)
{
  g_assert_cmpuint (GPOINTER_TO_UINT (token), >=, 1);
  observed.ended++;
  observed.depth--;
}

static const PerfmonDispatchObserver test_observer = { observe_attached, observe_begin, observe_end };

static gboolean
nested_dispatch (gpointer data)
{
  Fixture *fixture = data;
  gboolean done = FALSE;
  GSource *inner = g_idle_source_new ();

  g_source_set_name (inner, "[test] inner");
  g_source_set_callback (inner, set_done, &done, NULL);
  g_source_attach (inner, fixture->context);
  g_source_unref (inner);
  while (!done)
    g_main_context_iteration (fixture->context, TRUE);
  return G_SOURCE_REMOVE;
}

static void
test_observer_calls (Fixture       *fixture,
                     gconstpointer  data)
{
  GSource *source = g_source_new (&automatic_test_custom_funcs, sizeof (GSource));

  memset (&observed, 0, sizeof observed);
  _perfmon_dispatch_set_observer (&test_observer);

  g_source_set_name (source, "[test] outer");
  g_source_set_callback (source, nested_dispatch, fixture, NULL);
  g_source_attach (source, fixture->context);
  perfmon_automatic_track_source (source);
  g_assert_cmpuint (observed.attached, ==, 1);
  g_assert_true (observed.last_attached == source);
  g_source_unref (source);

  g_main_context_iteration (fixture->context, TRUE);
  _perfmon_dispatch_set_observer (NULL);

  /* The outer dispatch and, inside it, the inner one. */
  g_assert_cmpuint (observed.begun, ==, 2);
  g_assert_cmpuint (observed.ended, ==, 2);
  g_assert_cmpuint (observed.max_depth, ==, 2);
  g_assert_cmpuint (observed.depth, ==, 0);
  g_assert_cmpstr (observed.last_name, ==, "[test] inner");
  g_clear_pointer (&observed.last_name, g_free);
}

/* --- hangs name their dispatches --------------------------------------- */

static gboolean
busy_60_ms (gpointer data)
{
  spin_ms (GPOINTER_TO_UINT (data));
  return G_SOURCE_REMOVE;
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         GPtrArray          *reports)
{
  g_ptr_array_add (reports, perfmon_hang_report_ref (report));
}

static void
test_hang_dispatches (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-automatic-XXXXXX");
  g_autoptr(PerfmonHangMonitor) hangs = perfmon_hang_monitor_new (fixture->monitor);
  g_autoptr(GPtrArray) reports = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  g_autoptr(GError) error = NULL;
  const char *names[] = { "[test] first", "[test] second", "[test] third" };
  const guint ms[] = { 60, 80, 60 };
  const char * const *dispatches;
  PerfmonHangReport *report;
  g_autofree char *json = NULL;
  gint64 deadline;

  g_object_set (hangs, "threshold", 100, "pings-dir", dir, "log-dir", dir, NULL);
  g_signal_connect (hangs, "hang", G_CALLBACK (on_hang), reports);
  g_assert_true (perfmon_hang_monitor_start (hangs, &error));
  g_assert_no_error (error);

  /* Let the watchdog see the loop once. */
  g_main_context_iteration (fixture->context, FALSE);

  /* Three sources ready in the same iteration, none a hang by itself. */
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      GSource *source = g_idle_source_new ();

      g_source_set_name (source, names[i]);
      g_source_set_callback (source, busy_60_ms, GUINT_TO_POINTER (ms[i]), NULL);
      g_source_attach (source, fixture->context);
      g_source_unref (source);
    }
  g_main_context_iteration (fixture->context, FALSE);

  deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (reports->len == 0)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (fixture->context, TRUE);
    }
  perfmon_hang_monitor_stop (hangs);

  g_assert_cmpuint (reports->len, ==, 1);
  report = g_ptr_array_index (reports, 0);
  dispatches = perfmon_hang_report_get_dispatch_names (report);
  g_assert_cmpuint (g_strv_length ((char **) dispatches), ==, 3);
  /* Longest first; the runnable is the longest, not the last. */
  g_assert_cmpstr (dispatches[0], ==, "[test] second");
  g_assert_cmpstr (perfmon_hang_report_get_runnable_name (report), ==, "[test] second");
  /* Durations by the cycle counter: positive, longest first (no timing
   * thresholds beyond the order of 80 ms and 60 ms). */
  g_assert_cmpfloat (perfmon_hang_report_get_dispatch_duration (report, 2), >, 0.0);
  g_assert_cmpfloat (perfmon_hang_report_get_dispatch_duration (report, 1), >=,
                     perfmon_hang_report_get_dispatch_duration (report, 2));
  g_assert_cmpfloat (perfmon_hang_report_get_dispatch_duration (report, 0), >=,
                     perfmon_hang_report_get_dispatch_duration (report, 1));
  g_assert_cmpfloat (perfmon_hang_report_get_dispatch_duration (report, 3), ==, 0.0);

  json = perfmon_hang_report_to_json (report);
  g_assert_nonnull (strstr (json, "\"dispatches\""));
  g_assert_nonnull (strstr (json, "[test] third"));

  test_remove_tree (dir);
}

/* A permahang is saved while it goes on, with the runnable the stack
 * capture saw: the automatic group's name (here the callback's symbol),
 * not the source's name (GLib's default "GIdleSource"). */
G_GNUC_NO_INLINE gboolean automatic_test_stuck_callback (gpointer data);

G_GNUC_NO_INLINE gboolean
automatic_test_stuck_callback (gpointer data)
{
  for (;;)
    spin_ms (10);
  return G_SOURCE_REMOVE;
}

/* The pings directory of the child's hang monitor, in the child's own
 * temporary directory (@dir), which the child removes before it exits. */
typedef struct
{
  char *dir;
  char *pending;
} PermahangChild;

/* The exit status of the child: 0 once a saved record names the callback,
 * else (after 20 s) 4 if records came that name something else, 3 if none
 * came. Other records may come first (a hang of the starting process,
 * slow under a sanitizer on a loaded machine): what is promised is the
 * stuck callback's. */
static int
saved_record_status (const char *pending)
{
  gboolean other = FALSE;

  for (guint i = 0; i < 2000; i++)
    {
      g_autoptr(GDir) dir = g_dir_open (pending, 0, NULL);
      const char *instance;

      while (dir != NULL && (instance = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *path = g_build_filename (pending, instance, NULL);
          g_autoptr(GDir) records = g_dir_open (path, 0, NULL);
          const char *name;

          while (records != NULL && (name = g_dir_read_name (records)) != NULL)
            if (g_str_has_suffix (name, ".json"))
              {
                g_autofree char *file = g_build_filename (path, name, NULL);
                g_autoptr(JsonParser) parser = json_parser_new ();

                if (!json_parser_load_from_file (parser, file, NULL))
                  continue;
                if (g_strcmp0 (json_object_get_string_member_with_default (json_node_get_object (json_parser_get_root (parser)),
                                                                           "runnableName", NULL),
                               "automatic_test_stuck_callback") == 0)
                  return 0;
                other = TRUE;
              }
        }
      g_usleep (10000);
    }
  return other ? 4 : 3;
}

/* The child's watcher thread: ends the child with saved_record_status(). */
static gpointer
check_saved_record (gpointer data)
{
  PermahangChild *child = data;
  int status = saved_record_status (child->pending);

  test_remove_tree (child->dir);
  _exit (status);
}

/* The child runs in a subprocess of its own (g_test_trap_subprocess(), a
 * fresh process): a fork() of this multi-threaded test program may not
 * start threads (POSIX; ThreadSanitizer refuses it). */
/* Issue 23, point 8: an alert names the automatic group that used the
 * CPU, not only the thread. */
static void
on_alert_note_name (PerfmonMonitor *monitor,
                    PerfmonGroup   *group,
                    guint64         duration_us,
                    gpointer        data)
{
  g_ptr_array_add (data, g_strdup (perfmon_group_get_name (group)));
}

/* Uses 30 ms of CPU, however loaded the machine is. */
static gboolean
slow_spell_check (gpointer data)
{
  struct timespec start, now;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &start);
  do
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
  while ((now.tv_sec - start.tv_sec) * G_GINT64_CONSTANT (1000000000) + (now.tv_nsec - start.tv_nsec) <
         30 * 1000 * 1000);
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

static gboolean
names_contain (GPtrArray  *names,
               const char *name)
{
  return g_ptr_array_find_with_equal_func (names, name, g_str_equal, NULL);
}

static void
test_alert_names_group (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GSource) source = g_idle_source_new ();
  gboolean done = FALSE;
  gint64 deadline;

  perfmon_monitor_set_alert_threshold (fixture->monitor, 10);
  g_signal_connect (fixture->monitor, "alert", G_CALLBACK (on_alert_note_name), names);
  g_source_set_name (source, "[test] spell check");
  g_source_set_callback (source, slow_spell_check, &done, NULL);
  g_source_attach (source, fixture->context);
  test_iterate_until (fixture->context, &done, "the sources to run");
  /* Alerts come from a source of their own. */
  deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (!names_contain (names, "[test] spell check") && g_get_monotonic_time () < deadline)
    g_main_context_iteration (fixture->context, FALSE);
  for (guint i = 0; i < names->len; i++)
    g_test_message ("alert: %s", (const char *) g_ptr_array_index (names, i));
  g_assert_true (names_contain (names, "[test] spell check"));
}

static void
test_permahang_runnable (void)
{
  if (g_test_subprocess ())
    {
      PermahangChild *child = g_new0 (PermahangChild, 1);
      g_autofree char *pings = NULL;
      GMainContext *context = g_main_context_new ();
      PerfmonMonitor *monitor = perfmon_monitor_new (context);
      PerfmonHangMonitor *hang_monitor = perfmon_hang_monitor_new (monitor);
      GSource *source = g_idle_source_new ();

      child->dir = test_make_tmp_dir ("perfmon-automatic-XXXXXX");
      pings = g_build_filename (child->dir, "pings", NULL);
      child->pending = g_build_filename (pings, "pending", NULL);
      perfmon_monitor_set_automatic_groups (monitor, TRUE);
      g_object_set (hang_monitor, "pings-dir", pings, "threshold", 50, "permahang-threshold", 300, NULL);
      if (!perfmon_hang_monitor_start (hang_monitor, NULL))
        _exit (2);
      g_thread_unref (g_thread_new ("checker", check_saved_record, child));
      g_source_set_callback (source, automatic_test_stuck_callback, NULL, NULL);
      g_source_attach (source, context);
      for (;;)
        g_main_context_iteration (context, TRUE);
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

/* Issue 23, point 7: what the loop's thread runs between dispatches (here
 * between two iterations, as a GApplication's activate or a program's
 * own code between iterations does) is charged to "(outside
 * dispatches)", so that the compartments add up to the thread group. */
static void
test_outside_dispatches (Fixture       *fixture,
                         gconstpointer  data)
{
  guint n_done = 0;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  PerfmonGroupStats *outside;
  PerfmonGroupStats *thread = NULL;
  GPtrArray *groups;
  guint64 in_groups = 0;
  GSource *source = g_idle_source_new ();

  g_source_set_name (source, "one idle");
  g_source_set_callback (source, name_and_spin, &n_done, NULL);
  g_source_attach (source, fixture->context);
  g_source_unref (source);
  while (n_done < 1)
    g_main_context_iteration (fixture->context, TRUE);
  /* Work of the loop's thread in no dispatch, inside the iteration the
   * last poll began. */
  spin_ms (20);
  g_main_context_iteration (fixture->context, FALSE);
  g_main_context_iteration (fixture->context, FALSE);

  snapshot = perfmon_monitor_snapshot (fixture->monitor);
  assert_group_ran (snapshot, "(outside dispatches)");
  outside = find_stats (snapshot, "(outside dispatches)");
  groups = perfmon_snapshot_get_groups (snapshot);
  for (guint i = 0; i < groups->len; i++)
    {
      PerfmonGroupStats *stats = g_ptr_array_index (groups, i);

      if (perfmon_group_stats_get_kind (stats) == PERFMON_GROUP_KIND_THREAD)
        thread = stats;
      else if (perfmon_group_stats_get_kind (stats) == PERFMON_GROUP_KIND_COMPARTMENT)
        in_groups += perfmon_group_stats_get_cpu_time (stats);
    }
  g_assert_nonnull (thread);
  /* The busiest group: the 20 ms outside weigh more than the 1 ms idle,
   * whatever share of them the machine gave the test. */
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (outside), >,
                    perfmon_group_stats_get_cpu_time (find_stats (snapshot, "one idle")));
  /* Nothing in no group but the lean path's short iterations. */
  g_assert_cmpuint (in_groups, <=, perfmon_group_stats_get_cpu_time (thread) + 1);
  g_assert_cmpuint (in_groups, >=, perfmon_group_stats_get_cpu_time (thread) * 9 / 10);
}

/* A watchdog asleep until the end of what the thread runs charged
 * exactly (the JavaScript sampler's wait in an add-on's dispatch), or
 * until the stretch's end. */
typedef struct
{
  PerfmonLoopActivity *activity;
  guint64              index;
  guint64              n_exact_ends;
  GThread             *thread;
} ExactWait;

static gpointer
sleep_until_exact_end_thread (gpointer data)
{
  ExactWait *wait = data;

  _perfmon_loop_activity_sleep_until_end (wait->activity, wait->index, &wait->n_exact_ends,
                                          g_get_monotonic_time () + 30 * G_USEC_PER_SEC);
  return NULL;
}

static guint64
count_wakes (PerfmonLoopActivity *activity)
{
  return __atomic_load_n (&activity->n_wakes, __ATOMIC_SEQ_CST);
}

/* The dispatch the watchdog waits through: it starts the watchdog on the
 * stretch under way, waits until it sleeps, then works 2 ms (a dispatch
 * left the slow way, whose end is told). */
static gboolean
exact_dispatch (gpointer data)
{
  ExactWait *wait = data;

  wait->index = __atomic_load_n (&wait->activity->n_stretches, __ATOMIC_SEQ_CST);
  wait->n_exact_ends = __atomic_load_n (&wait->activity->n_exact_ends, __ATOMIC_SEQ_CST);
  wait->thread = g_thread_new ("watchdog", sleep_until_exact_end_thread, wait);
  while (!__atomic_load_n (&wait->activity->watcher_wants_exact_end, __ATOMIC_SEQ_CST))
    g_usleep (1000);
  g_usleep (10000);
  spin_ms (2);
  return G_SOURCE_REMOVE;
}

static gboolean
short_dispatch (gpointer data)
{
  return G_SOURCE_REMOVE;
}

/* An outermost dispatch's end does not wake the watchdog that waits for
 * it at once, only when the thread goes on to another dispatch, or at the
 * stretch's end, which wakes it anyway microseconds later: one wake-up
 * (each tens of µs of the watched thread on some hypervisors), not two in
 * a row. The end is counted at once, and stamped. */
static void
test_exact_end_wakes_once (Fixture       *fixture,
                           gconstpointer  data)
{
  PerfmonLoopActivity *activity = _perfmon_monitor_get_loop_activity (fixture->monitor);
  ExactWait wait = { .activity = activity };
  g_autoptr(GSource) timeout = g_timeout_source_new (20);
  guint64 wakes, before_cycles;

  g_assert_true (_perfmon_loop_activity_watch (activity, NULL));
  /* The groups are made at their first dispatches. */
  add_idle (fixture->context, "[test] exact", short_dispatch, NULL);
  add_idle (fixture->context, "[test] next", short_dispatch, NULL);
  while (g_main_context_iteration (fixture->context, FALSE))
    ;

  /* The exact dispatch, then another in the same stretch. */
  add_idle (fixture->context, "[test] exact", exact_dispatch, &wait);
  before_cycles = _perfmon_clock_cycles ();
  wakes = count_wakes (activity);
  g_main_context_iteration (fixture->context, FALSE);
  g_assert_cmpuint (__atomic_load_n (&activity->n_exact_ends, __ATOMIC_SEQ_CST), >, wait.n_exact_ends);
  g_assert_cmpuint (__atomic_load_n (&activity->last_exact_end, __ATOMIC_SEQ_CST), >, before_cycles);
  g_usleep (20000);
  /* Still asleep: nothing woke it. */
  g_assert_cmpuint (count_wakes (activity), ==, wakes);
  add_idle (fixture->context, "[test] next", short_dispatch, NULL);
  g_main_context_iteration (fixture->context, FALSE);
  g_thread_join (wait.thread);
  g_assert_cmpuint (count_wakes (activity), ==, wakes + 1);

  /* The exact dispatch, then the loop sleeps: the stretch's end wakes it,
   * once, and the dispatch after the sleep does not again. */
  add_idle (fixture->context, "[test] exact", exact_dispatch, &wait);
  g_main_context_iteration (fixture->context, FALSE);
  g_usleep (20000);
  g_assert_cmpuint (count_wakes (activity), ==, wakes + 1);
  g_source_set_callback (timeout, short_dispatch, NULL, NULL);
  g_source_attach (timeout, fixture->context);
  g_main_context_iteration (fixture->context, TRUE);
  g_thread_join (wait.thread);
  g_assert_cmpuint (count_wakes (activity), ==, wakes + 2);
  add_idle (fixture->context, "[test] next", short_dispatch, NULL);
  g_main_context_iteration (fixture->context, FALSE);
  g_assert_cmpuint (count_wakes (activity), ==, wakes + 2);
  g_source_destroy (timeout);

  _perfmon_loop_activity_unwatch (activity);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
  ADD ("/automatic/glib-kinds", test_glib_kinds);
  ADD ("/automatic/tracked-kinds", test_tracked_kinds);
  ADD ("/automatic/source-name-first", test_source_name_first);
  ADD ("/automatic/off", test_off);
  ADD ("/automatic/identity", test_identity);
  ADD ("/automatic/bounded", test_bounded);
  ADD ("/automatic/nesting-and-mapping", test_nesting_and_mapping);
  ADD ("/automatic/nesting-lean", test_nesting_lean);
  ADD ("/automatic/observer", test_observer_calls);
  ADD ("/automatic/hang-dispatches", test_hang_dispatches);
  ADD ("/automatic/alert-names-group", test_alert_names_group);
  ADD ("/automatic/outside-dispatches", test_outside_dispatches);
  ADD ("/automatic/exact-end-wakes-once", test_exact_end_wakes_once);
#undef ADD
  g_test_add_func ("/automatic/permahang-runnable", test_permahang_runnable);

  return g_test_run ();
}
