/* test-jank-config.c: setEventConfig ("MAIN_THREAD_JANK", params)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon.h"
#include "perfmon-jank-config-private.h"

/* "name=value&name=value" into a char * → char * table; NULL stays NULL. */
static GHashTable *
parse_params (const char *spec)
{
  g_autoptr(GHashTable) params = NULL;
  g_auto(GStrv) pairs = NULL;

  if (spec == NULL)
    return NULL;

  params = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (*spec == '\0')
    return g_steal_pointer (&params);

  pairs = g_strsplit (spec, "&", -1);
  for (guint i = 0; pairs[i] != NULL; i++)
    {
      const char *eq = strchr (pairs[i], '=');

      /* The L1_BUT_* prefixes end in '&'. */
      if (*pairs[i] == '\0')
        continue;
      g_assert_nonnull (eq);
      g_hash_table_insert (params, g_strndup (pairs[i], (gsize) (eq - pairs[i])),
                           g_strdup (eq + 1));
    }
  return g_steal_pointer (&params);
}

#define SEED_EXAMPLE "log_type=1&sample_interval=100&ignore_startup_time=11&" \
                     "sample_count=21&report_times_per_app=3"
/* log_type 1 with everything valid but @x, which the case adds. */
#define L1_BUT_INTERVAL "log_type=1&ignore_startup_time=10&sample_count=1&report_times_per_app=1&"
#define L1_BUT_IGNORE   "log_type=1&sample_interval=150&sample_count=10&report_times_per_app=1&"
#define L1_BUT_REPORT   "log_type=1&sample_interval=150&ignore_startup_time=10&sample_count=10&"
#define L1_BUT_COUNT    "log_type=1&ignore_startup_time=10&report_times_per_app=1&"

typedef struct
{
  const char *event;
  const char *params;
  gboolean    ok;
  int         code;
  /* Substrings of the message: the parameter (or event) and what it allows. */
  const char *names;
  const char *allows;
  /* For ok cases: the configuration that results (from defaults). */
  guint       log_type, interval, ignore, count, report;
} Case;

#define OK(p, lt, i, ig, c, r) { "MAIN_THREAD_JANK", p, TRUE, 0, NULL, NULL, lt, i, ig, c, r }
#define BAD(p, n, a) { "MAIN_THREAD_JANK", p, FALSE, PERFMON_ERROR_INVALID_ARGUMENT, n, a, 0, 0, 0, 0, 0 }
#define BAD_EVENT(e, n) { e, "log_type=0", FALSE, PERFMON_ERROR_UNKNOWN_EVENT, n, "MAIN_THREAD_JANK", 0, 0, 0, 0, 0 }

static const Case cases[] = {
  /* Valid configurations and every boundary from inside. */
  OK ("log_type=0", 0, 150, 10, 10, 1),
  OK ("log_type=2", 2, 150, 10, 10, 1),
  OK ("log_type=00", 0, 150, 10, 10, 1),
  OK (SEED_EXAMPLE, 1, 100, 11, 21, 3),
  OK (L1_BUT_INTERVAL "sample_interval=50", 1, 50, 10, 1, 1),
  OK (L1_BUT_INTERVAL "sample_interval=500", 1, 500, 10, 1, 1),
  OK (L1_BUT_INTERVAL "sample_interval=0150", 1, 150, 10, 1, 1),
  OK (L1_BUT_IGNORE "ignore_startup_time=3", 1, 150, 3, 10, 1),
  OK (L1_BUT_IGNORE "ignore_startup_time=3600", 1, 150, 3600, 10, 1),
  OK (L1_BUT_COUNT "sample_interval=50&sample_count=46", 1, 50, 10, 46, 1),
  OK (L1_BUT_COUNT "sample_interval=50&sample_count=1", 1, 50, 10, 1, 1),
  OK (L1_BUT_COUNT "sample_interval=150&sample_count=12", 1, 150, 10, 12, 1),
  OK (L1_BUT_COUNT "sample_interval=300&sample_count=4", 1, 300, 10, 4, 1),
  OK (L1_BUT_COUNT "sample_interval=500&sample_count=1", 1, 500, 10, 1, 1),
  OK (L1_BUT_REPORT "report_times_per_app=1", 1, 150, 10, 10, 1),
  OK (L1_BUT_REPORT "report_times_per_app=3", 1, 150, 10, 10, 3),

  /* Events. */
  BAD_EVENT ("MAIN_THREAD_JANKY", "MAIN_THREAD_JANKY"),
  BAD_EVENT ("main_thread_jank", "main_thread_jank"),
  BAD_EVENT ("", "“”"),
  BAD_EVENT (NULL, "(null)"),

  /* Unknown parameters, whatever the log_type. */
  BAD ("log_type=0&foo=1", "“foo”", "log_type, sample_interval"),
  BAD (SEED_EXAMPLE "&Sample_Count=3", "“Sample_Count”", "sample_count and report_times_per_app"),
  BAD ("log_type=2&=1", "“”", "log_type"),

  /* log_type. */
  BAD ("", "log_type", "0, 1 or 2"),
  BAD (NULL, "log_type", "0, 1 or 2"),
  BAD ("log_type=3", "log_type", "0, 1 or 2"),
  BAD ("log_type=-1", "log_type", "0, 1 or 2"),
  BAD ("log_type=", "log_type", "0, 1 or 2"),
  BAD ("log_type=+1", "log_type", "0, 1 or 2"),
  BAD ("log_type= 1", "log_type", "0, 1 or 2"),
  BAD ("log_type=1 ", "log_type", "0, 1 or 2"),
  BAD ("log_type=0x1", "log_type", "0, 1 or 2"),
  BAD ("log_type=4294967296", "log_type", "0, 1 or 2"),

  /* Custom parameters with log_type 0 or 2. */
  BAD ("log_type=0&sample_interval=100", "sample_interval", "log_type 1 (in [50, 500] ms)"),
  BAD ("log_type=2&report_times_per_app=1", "report_times_per_app", "log_type 1 (in [1, 3])"),
  BAD ("log_type=0&ignore_startup_time=5", "ignore_startup_time", "[3, 3600] s"),

  /* log_type 1: required parameters, each missing one named. */
  BAD ("log_type=1", "sample_interval (in [50, 500] ms), ignore_startup_time (in [3, 3600] s), "
       "sample_count (in [1, 2500 / sample_interval - 4]), report_times_per_app (in [1, 3])",
       "requires"),
  BAD (L1_BUT_REPORT, "report_times_per_app", "(in [1, 3])"),
  BAD (L1_BUT_COUNT "sample_interval=150", "sample_count", "[1, 12] for sample_interval 150"),
  BAD (L1_BUT_COUNT "sample_interval=20", "sample_count", "[1, 2500 / sample_interval - 4]"),
  BAD (L1_BUT_INTERVAL, "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_IGNORE, "ignore_startup_time", "[3, 3600] s"),

  /* sample_interval, both sides and garbage. */
  BAD (L1_BUT_INTERVAL "sample_interval=49", "sample_interval", "[50, 500] ms, got 49"),
  BAD (L1_BUT_INTERVAL "sample_interval=501", "sample_interval", "[50, 500] ms, got 501"),
  BAD (L1_BUT_INTERVAL "sample_interval=0", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=abc", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=+100", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=-100", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval= 100", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=100 ", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=100ms", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=1e2", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=99999999999999999999999", "sample_interval", "[50, 500] ms"),
  BAD (L1_BUT_INTERVAL "sample_interval=4294967446", "sample_interval", "[50, 500] ms"),

  /* ignore_startup_time. */
  BAD (L1_BUT_IGNORE "ignore_startup_time=2", "ignore_startup_time", "[3, 3600] s, got 2"),
  BAD (L1_BUT_IGNORE "ignore_startup_time=3601", "ignore_startup_time", "[3, 3600] s, got 3601"),
  BAD (L1_BUT_IGNORE "ignore_startup_time=-3", "ignore_startup_time", "[3, 3600] s"),
  BAD (L1_BUT_IGNORE "ignore_startup_time=10.5", "ignore_startup_time", "[3, 3600] s"),

  /* sample_count and its formula at several intervals. */
  BAD (L1_BUT_COUNT "sample_interval=150&sample_count=0", "sample_count", "[1, 12] for sample_interval 150"),
  BAD (L1_BUT_COUNT "sample_interval=50&sample_count=47", "sample_count", "[1, 46] for sample_interval 50, got 47"),
  BAD (L1_BUT_COUNT "sample_interval=50&sample_count=60", "sample_count", "must be in [1, 46] for sample_interval 50, got 60"),
  BAD (L1_BUT_COUNT "sample_interval=100&sample_count=22", "sample_count", "[1, 21] for sample_interval 100, got 22"),
  BAD (L1_BUT_COUNT "sample_interval=150&sample_count=13", "sample_count", "[1, 12] for sample_interval 150, got 13"),
  BAD (L1_BUT_COUNT "sample_interval=300&sample_count=5", "sample_count", "[1, 4] for sample_interval 300, got 5"),
  BAD (L1_BUT_COUNT "sample_interval=500&sample_count=2", "sample_count", "[1, 1] for sample_interval 500, got 2"),
  BAD (L1_BUT_COUNT "sample_interval=150&sample_count=ten", "sample_count", "[1, 12] for sample_interval 150"),

  /* report_times_per_app. */
  BAD (L1_BUT_REPORT "report_times_per_app=0", "report_times_per_app", "[1, 3], got 0"),
  BAD (L1_BUT_REPORT "report_times_per_app=4", "report_times_per_app", "[1, 3], got 4"),
  BAD (L1_BUT_REPORT "report_times_per_app=two", "report_times_per_app", "[1, 3]"),
};

static void
assert_config (const PerfmonJankConfig *config,
               guint log_type, guint interval, guint ignore, guint count, guint report)
{
  g_assert_cmpuint (config->log_type, ==, log_type);
  g_assert_cmpuint (config->sample_interval_ms, ==, interval);
  g_assert_cmpuint (config->ignore_startup_time_s, ==, ignore);
  g_assert_cmpuint (config->sample_count, ==, count);
  g_assert_cmpuint (config->report_times_per_app, ==, report);
}

static void
test_case (gconstpointer data)
{
  const Case *c = data;
  g_autoptr(GHashTable) params = parse_params (c->params);
  g_autoptr(GHashTable) seed = parse_params (SEED_EXAMPLE);
  g_autoptr(GError) error = NULL;
  PerfmonJankConfig config, before;
  gboolean ok;

  /* From the defaults. */
  _perfmon_jank_config_init (&config);
  before = config;
  ok = _perfmon_jank_config_apply (&config, c->event, params, &error);

  if (c->ok)
    {
      g_assert_no_error (error);
      g_assert_true (ok);
      assert_config (&config, c->log_type, c->interval, c->ignore, c->count, c->report);
      g_assert_cmpint (config.report_times_set, ==, c->log_type == 1);
      return;
    }

  g_assert_false (ok);
  g_assert_error (error, PERFMON_ERROR, c->code);
  g_test_message ("%s", error->message);
  if (strstr (error->message, c->names) == NULL || strstr (error->message, c->allows) == NULL)
    g_error ("message “%s” lacks “%s” or “%s”", error->message, c->names, c->allows);
  g_assert_cmpmem (&config, sizeof config, &before, sizeof before);
  g_clear_error (&error);

  /* From a custom configuration: still refused, nothing changes. */
  g_assert_true (_perfmon_jank_config_apply (&config, "MAIN_THREAD_JANK", seed, NULL));
  before = config;
  g_assert_false (_perfmon_jank_config_apply (&config, c->event, params, &error));
  g_assert_error (error, PERFMON_ERROR, c->code);
  g_assert_cmpmem (&config, sizeof config, &before, sizeof before);
}

static void
test_defaults (void)
{
  PerfmonJankConfig config;

  _perfmon_jank_config_init (&config);
  assert_config (&config, 0, 150, 10, 10, 1);
  g_assert_false (config.report_times_set);
}

static void
test_max_sample_count (void)
{
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (50), ==, 46);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (99), ==, 21);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (100), ==, 21);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (150), ==, 12);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (300), ==, 4);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (500), ==, 1);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (501), ==, 0);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (2500), ==, 0);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (0), ==, 0);
  g_assert_cmpuint (_perfmon_jank_config_max_sample_count (G_MAXUINT), ==, 0);
  g_assert_cmpuint (PERFMON_JANK_SAMPLE_COUNT_MAX, ==, 46);
}

static void
apply_ok (PerfmonJankConfig *config,
          const char        *spec)
{
  g_autoptr(GHashTable) params = parse_params (spec);
  g_autoptr(GError) error = NULL;

  g_assert_true (_perfmon_jank_config_apply (config, "MAIN_THREAD_JANK", params, &error));
  g_assert_no_error (error);
}

static void
test_report_times_once (void)
{
  g_autoptr(GHashTable) other = parse_params (L1_BUT_REPORT "report_times_per_app=3");
  g_autoptr(GError) error = NULL;
  PerfmonJankConfig config, before;

  _perfmon_jank_config_init (&config);
  apply_ok (&config, L1_BUT_REPORT "report_times_per_app=2");
  g_assert_true (config.report_times_set);
  g_assert_cmpuint (config.report_times_per_app, ==, 2);

  /* Another value: refused, naming the parameter and its value. */
  before = config;
  g_assert_false (_perfmon_jank_config_apply (&config, "MAIN_THREAD_JANK", other, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "report_times_per_app"));
  g_assert_nonnull (strstr (error->message, "only once"));
  g_assert_nonnull (strstr (error->message, "it is 2"));
  g_assert_cmpmem (&config, sizeof config, &before, sizeof before);

  /* The same value again (a caller repeating its configuration): fine. */
  apply_ok (&config, "log_type=1&sample_interval=100&ignore_startup_time=5&"
                     "sample_count=20&report_times_per_app=2");
  assert_config (&config, 1, 100, 5, 20, 2);

  /* Switching to log_type 0 drops the custom parameters but not the
   * once-per-process report_times_per_app. */
  apply_ok (&config, "log_type=0");
  assert_config (&config, 0, 150, 10, 10, 2);
  g_assert_true (config.report_times_set);
  apply_ok (&config, "log_type=2");
  assert_config (&config, 2, 150, 10, 10, 2);

  g_clear_error (&error);
  g_assert_false (_perfmon_jank_config_apply (&config, "MAIN_THREAD_JANK", other, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  assert_config (&config, 2, 150, 10, 10, 2);
}

/* A bad value is quoted, but never more than a short prefix of it. */
static void
test_long_value_not_echoed (void)
{
  const char *names[] = { "log_type", "sample_interval" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autoptr(GHashTable) params = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
      g_autoptr(GError) error = NULL;
      PerfmonJankConfig config;
      char *value = g_strnfill (100000, 'x');

      g_hash_table_insert (params, g_strdup ("log_type"), g_strdup ("1"));
      g_hash_table_insert (params, g_strdup ("sample_interval"), g_strdup ("150"));
      g_hash_table_insert (params, g_strdup ("ignore_startup_time"), g_strdup ("10"));
      g_hash_table_insert (params, g_strdup ("sample_count"), g_strdup ("10"));
      g_hash_table_insert (params, g_strdup ("report_times_per_app"), g_strdup ("1"));
      g_hash_table_insert (params, g_strdup (names[i]), value);
      _perfmon_jank_config_init (&config);
      g_assert_false (_perfmon_jank_config_apply (&config, "MAIN_THREAD_JANK", params, &error));
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
      g_assert_nonnull (strstr (error->message, names[i]));
      g_assert_cmpuint (strlen (error->message), <, 200);
    }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/jank-config/defaults", test_defaults);
  g_test_add_func ("/jank-config/max-sample-count", test_max_sample_count);
  g_test_add_func ("/jank-config/report-times-once", test_report_times_once);
  g_test_add_func ("/jank-config/long-value-not-echoed", test_long_value_not_echoed);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/jank-config/case/%02" G_GSIZE_FORMAT "-%s",
                                               i, cases[i].ok ? "ok" : "error");

      g_test_add_data_func (path, &cases[i], test_case);
    }

  return g_test_run ();
}
