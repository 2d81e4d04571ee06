/* test-perfmond-log.c: perfmond's events carry their MESSAGE_ID and fields
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A structured log writer of the test's own records each event's fields,
 * as journald would store them.
 */
#include <string.h>

#include <glib.h>

#include "perfmond-log.h"

static GHashTable *last_fields;   /* key → value, of the last event */
static GLogLevelFlags last_level;

static GLogWriterOutput
record_writer (GLogLevelFlags   level,
               const GLogField *fields,
               gsize            n_fields,
               gpointer         data)
{
  g_clear_pointer (&last_fields, g_hash_table_unref);
  last_fields = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  last_level = level;
  for (gsize i = 0; i < n_fields; i++)
    g_hash_table_insert (last_fields, g_strdup (fields[i].key),
                         fields[i].length < 0 ? g_strdup (fields[i].value)
                                              : g_strndup (fields[i].value, fields[i].length));
  return G_LOG_WRITER_HANDLED;
}

static const char *
field (const char *key)
{
  return g_hash_table_lookup (last_fields, key);
}

static void
test_hang_fields (void)
{
  perfmond_log_event (G_LOG_LEVEL_DEBUG, PERFMOND_MESSAGE_ID_HANG, 4242, "__main__.busy", 301.4,
                      "pid %u (python3): hang 4242-1 of %.0f ms in %s", 4242u, 301.4, "__main__.busy");
  g_assert_cmpint (last_level, ==, G_LOG_LEVEL_DEBUG);
  g_assert_cmpstr (field ("MESSAGE_ID"), ==, "7d63bc06d0624852854174148686ce46");
  g_assert_cmpstr (field ("PERFMON_PID"), ==, "4242");
  g_assert_cmpstr (field ("PERFMON_RUNNABLE"), ==, "__main__.busy");
  g_assert_cmpstr (field ("PERFMON_DURATION_MS"), ==, "301");
  g_assert_cmpstr (field ("GLIB_DOMAIN"), ==, "perfmond");
  g_assert_cmpstr (field ("MESSAGE"), ==, "pid 4242 (python3): hang 4242-1 of 301 ms in __main__.busy");
}

static void
test_warning_fields (void)
{
  perfmond_log_event (G_LOG_LEVEL_WARNING, PERFMOND_MESSAGE_ID_REFUSED, 7, NULL, -1,
                      "refused to register pid %u", 7u);
  g_assert_cmpint (last_level, ==, G_LOG_LEVEL_WARNING);
  g_assert_cmpstr (field ("MESSAGE_ID"), ==, PERFMOND_MESSAGE_ID_REFUSED);
  g_assert_cmpstr (field ("PERFMON_PID"), ==, "7");
  g_assert_null (field ("PERFMON_RUNNABLE"));
  g_assert_null (field ("PERFMON_DURATION_MS"));
}

/* Fixed, distinct, 128-bit ids: 32 lower-case hex digits. */
static void
test_ids (void)
{
  const char *ids[] = { PERFMOND_MESSAGE_ID_HANG, PERFMOND_MESSAGE_ID_REJECTED,
                        PERFMOND_MESSAGE_ID_THROTTLED, PERFMOND_MESSAGE_ID_REFUSED };

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
  g_test_init (&argc, &argv, NULL);
  g_log_set_writer_func (record_writer, NULL, NULL);

  g_test_add_func ("/perfmond-log/hang-fields", test_hang_fields);
  g_test_add_func ("/perfmond-log/warning-fields", test_warning_fields);
  g_test_add_func ("/perfmond-log/ids", test_ids);
  return g_test_run ();
}
