/* test-hang-journal.c: every hang is a structured log entry with its
 * MESSAGE_ID and fields, written off the watched thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A structured log writer of the test's own records each entry's fields,
 * as journald would store them (there is no journald in the test's
 * machine), and the thread that wrote it: the hang monitor's watchdog,
 * never the thread that hung (a journal socket can block).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfmon.h>

#include "perfmon-hang-monitor-private.h"
#include "perfmon-log-event.h"
#include "perfmon-test-dirs.h"
#include "perfmon-test-utils.h"

typedef struct
{
  GLogLevelFlags level;
  GHashTable    *fields;   /* key → value */
  GThread       *thread;
} Entry;

static GMutex entries_lock;
static GPtrArray *entries;   /* of Entry *: those with a MESSAGE_ID */

static void
entry_free (Entry *entry)
{
  g_hash_table_unref (entry->fields);
  g_free (entry);
}

static GLogWriterOutput
record_writer (GLogLevelFlags   level,
               const GLogField *fields,
               gsize            n_fields,
               gpointer         data)
{
  Entry *entry = g_new0 (Entry, 1);

  entry->level = level;
  entry->thread = g_thread_self ();
  entry->fields = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (gsize i = 0; i < n_fields; i++)
    g_hash_table_insert (entry->fields, g_strdup (fields[i].key),
                         fields[i].length < 0 ? g_strdup (fields[i].value)
                                              : g_strndup (fields[i].value, fields[i].length));
  if (!g_hash_table_contains (entry->fields, "MESSAGE_ID"))
    {
      entry_free (entry);
      return g_log_writer_default (level, fields, n_fields, data);
    }
  g_mutex_lock (&entries_lock);
  g_ptr_array_add (entries, entry);
  g_mutex_unlock (&entries_lock);
  return G_LOG_WRITER_HANDLED;
}

static const char *
field (Entry      *entry,
       const char *key)
{
  return g_hash_table_lookup (entry->fields, key);
}

/* The recorded entries with @message_id, oldest first (the caller frees
 * the array, not the entries). */
static GPtrArray *
entries_with_id (const char *message_id)
{
  GPtrArray *found = g_ptr_array_new ();

  g_mutex_lock (&entries_lock);
  for (guint i = 0; i < entries->len; i++)
    if (g_strcmp0 (field (g_ptr_array_index (entries, i), "MESSAGE_ID"), message_id) == 0)
      g_ptr_array_add (found, g_ptr_array_index (entries, i));
  g_mutex_unlock (&entries_lock);
  return found;
}

/* The hang: the loop's callback spins until the watchdog has caught it,
 * stack and runnable taken (and, for a permahang, logged it as one), so
 * that a loaded machine, whose watchdog may wake late, only makes it
 * longer. */
typedef struct
{
  gint     caught;   /* atomic: the watchdog built the report */
  gboolean permahang;
} Hang;

/* The watchdog thread, with the report it built (then NULL at the end). */
static void
on_ongoing (PerfmonHangReport *report,
            gint64             start_real_us,
            gpointer           data)
{
  Hang *hang = data;

  if (report != NULL)
    g_atomic_int_set (&hang->caught, 1);
}

static gboolean
permahang_logged (void)
{
  gboolean found = FALSE;

  g_mutex_lock (&entries_lock);
  for (guint i = 0; i < entries->len && !found; i++)
    found = g_strcmp0 (field (g_ptr_array_index (entries, i), "MESSAGE_ID"), PERFMON_MESSAGE_ID_PERMAHANG) == 0;
  g_mutex_unlock (&entries_lock);
  return found;
}

static gboolean
hang_once (gpointer data)
{
  Hang *hang = data;
  gint64 give_up = g_get_monotonic_time () + TEST_ITERATE_TIMEOUT_S * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < give_up &&
         !(hang->permahang ? permahang_logged ()
                           : g_atomic_int_get (&hang->caught) != 0))
    ;
  return G_SOURCE_REMOVE;
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         gpointer            data)
{
  PerfmonHangReport **out = data;

  if (*out == NULL)
    *out = perfmon_hang_report_ref (report);
}

/* A hang in a source named @name, caught with a threshold of 100 ms and
 * a permahang threshold of 200 ms if @permahang (else 8192 ms); returns
 * its report. */
static PerfmonHangReport *
run_hang (const char *name,
          gboolean    permahang)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = test_make_tmp_dir ("perfmon-hang-journal-XXXXXX");
  g_autofree char *pings_dir = g_build_filename (dir, "pings", NULL);
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(PerfmonMonitor) monitor = NULL;
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  g_autoptr(GSource) source = g_timeout_source_new (50);
  PerfmonHangReport *report = NULL;
  Hang hang = { 0, permahang };

  g_main_context_push_thread_default (context);
  monitor = perfmon_monitor_new (context);
  hang_monitor = perfmon_hang_monitor_new (monitor);
  g_object_set (hang_monitor, "pings-dir", pings_dir, "log-dir", dir,
                "threshold", 100, "permahang-threshold", permahang ? 200 : 8192, NULL);
  g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang), &report);
  _perfmon_hang_monitor_set_ongoing_func (hang_monitor, on_ongoing, &hang);
  g_assert_true (perfmon_hang_monitor_start (hang_monitor, &error));
  g_assert_no_error (error);

  g_source_set_name (source, name);
  g_source_set_callback (source, hang_once, &hang, NULL);
  g_source_attach (source, context);
  test_iterate_until (context, (const gboolean *) &report, "no hang report");

  perfmon_hang_monitor_stop (hang_monitor);
  g_main_context_pop_thread_default (context);
  test_remove_tree (dir);
  return report;
}

static void
test_hang_entry (void)
{
  g_autoptr(PerfmonHangReport) report = run_hang ("journal-test-idle", FALSE);
  g_autoptr(GPtrArray) hangs = entries_with_id (PERFMON_MESSAGE_ID_HANG);
  g_autoptr(GPtrArray) permahangs = entries_with_id (PERFMON_MESSAGE_ID_PERMAHANG);
  g_autofree char *pid = g_strdup_printf ("%d", (int) getpid ());
  g_autofree char *duration = g_strdup_printf ("%.0f", perfmon_hang_report_get_duration (report));
  Entry *entry;

  /* One entry, for this hang, as searched for in the journal. */
  g_assert_cmpuint (hangs->len, ==, 1);
  g_assert_cmpuint (permahangs->len, ==, 0);
  entry = g_ptr_array_index (hangs, 0);
  g_assert_cmpstr (field (entry, "MESSAGE_ID"), ==, "7d63bc06d0624852854174148686ce46");
  g_assert_cmpstr (field (entry, "GLIB_DOMAIN"), ==, "Perfmon");
  g_assert_cmpstr (field (entry, "PERFMON_PID"), ==, pid);
  g_assert_cmpstr (field (entry, "PERFMON_RUNNABLE"), ==, "journal-test-idle");
  g_assert_cmpstr (field (entry, "PERFMON_RUNNABLE"), ==, perfmon_hang_report_get_runnable_name (report));
  g_assert_cmpstr (field (entry, "PERFMON_DURATION_MS"), ==, duration);
  g_assert_true (g_str_has_prefix (field (entry, "MESSAGE"), "hang of "));
  g_assert_nonnull (strstr (field (entry, "MESSAGE"), "ms in journal-test-idle"));
  /* Standard error is no journal here: debug level, which GLib's default
   * writer drops unless G_MESSAGES_DEBUG asks. */
  g_assert_cmpint (entry->level, ==, G_LOG_LEVEL_DEBUG);
  /* Written by perfmon's watchdog, not by the thread that hung. */
  g_assert_true (entry->thread != g_thread_self ());
}

/* A hang that reaches the permahang threshold is in the journal while it
 * goes on, then again when it ends. */
static void
test_permahang_entry (void)
{
  g_autoptr(PerfmonHangReport) report = run_hang ("journal-test-permahang", TRUE);
  g_autoptr(GPtrArray) hangs = entries_with_id (PERFMON_MESSAGE_ID_HANG);
  g_autoptr(GPtrArray) permahangs = entries_with_id (PERFMON_MESSAGE_ID_PERMAHANG);
  g_autofree char *duration = g_strdup_printf ("%.0f", perfmon_hang_report_get_duration (report));
  Entry *entry;

  g_assert_cmpuint (permahangs->len, ==, 1);
  entry = g_ptr_array_index (permahangs, 0);
  g_assert_cmpstr (field (entry, "PERFMON_RUNNABLE"), ==, "journal-test-permahang");
  g_assert_cmpint (atoi (field (entry, "PERFMON_DURATION_MS")), >=, 200);
  g_assert_true (g_str_has_prefix (field (entry, "MESSAGE"), "hung for "));
  g_assert_true (entry->thread != g_thread_self ());

  /* The end of the same hang, after it: the first test's and this one's. */
  g_assert_cmpuint (hangs->len, ==, 2);
  entry = g_ptr_array_index (hangs, 1);
  g_assert_cmpstr (field (entry, "PERFMON_RUNNABLE"), ==, "journal-test-permahang");
  g_assert_cmpint (atoi (field (entry, "PERFMON_DURATION_MS")), >=, 200);
  g_assert_cmpstr (field (entry, "PERFMON_DURATION_MS"), ==, duration);
}

/* Fixed, distinct, 128-bit ids: 32 lower-case hex digits. */
static void
test_ids (void)
{
  const char *ids[] = { PERFMON_MESSAGE_ID_HANG, PERFMON_MESSAGE_ID_PERMAHANG,
                        PERFMON_MESSAGE_ID_REJECTED, PERFMON_MESSAGE_ID_THROTTLED,
                        PERFMON_MESSAGE_ID_REFUSED };

  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    {
      g_assert_cmpuint (strlen (ids[i]), ==, 32);
      for (const char *p = ids[i]; *p; p++)
        g_assert_true (g_ascii_isdigit (*p) || (*p >= 'a' && *p <= 'f'));
      for (guint j = 0; j < i; j++)
        g_assert_cmpstr (ids[i], !=, ids[j]);
    }
}

int
main (int    argc,
      char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  entries = g_ptr_array_new_with_free_func ((GDestroyNotify) entry_free);
  g_log_set_writer_func (record_writer, NULL, NULL);

  /* In this order: the second counts the first's entry. */
  g_test_add_func ("/hang-journal/hang", test_hang_entry);
  g_test_add_func ("/hang-journal/permahang", test_permahang_entry);
  g_test_add_func ("/hang-journal/ids", test_ids);
  status = g_test_run ();
  g_ptr_array_unref (entries);
  return status;
}
