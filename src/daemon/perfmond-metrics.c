/* perfmond-metrics.c: the Prometheus and OpenMetrics text of perfmond's /metrics
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every family is summable: a sum over a process's series of one family
 * means something. A snapshot's groups nest (a compartment's time is also
 * its window's, its add-on's and its thread's), so each kind has a family
 * of its own:
 *
 *   perfmon_process_cpu_seconds_total      the process's user + system CPU
 *   perfmon_thread_{cpu,blocked}_seconds_total        thread groups
 *   perfmon_window_{cpu,blocked}_seconds_total        window groups
 *   perfmon_addon_{cpu,blocked}_seconds_total         add-on groups
 *   perfmon_compartment_{cpu,blocked}_seconds_total   compartments
 *   perfmon_thread_iteration_cpu_seconds   histogram, thread groups
 *
 * and each family of a kind below the thread has, per process, a series
 * for the time outside every group of that kind ("(none)": the threads'
 * total minus the kind's, never below 0), so that the sum of a family is
 * the threads' total, like the thread family's. Compartments are charged
 * inclusively (perfmon_group_enter()): when one calls into another, the
 * time of the inner one counts in both, as in Firefox's API, and a sum
 * over compartments exceeds the threads' total by that time (then the
 * "(none)" series is 0).
 */
#include "perfmond-metrics.h"

#include <libsoup/soup.h>
#include <string.h>

/* The groups of one process and kind with the most CPU that get series of
 * their own; the others are summed into "(other)". Runnables with a hang
 * counter of their own, in all. Bounds the label cardinality. */
#define MAX_METRIC_GROUPS_PER_KIND 50
#define MAX_METRIC_RUNNABLES 100

struct _PerfmondMetrics
{
  GHashTable *hang_counts;  /* "pid\nprocess\nrunnable" → guint64 * */
};

PerfmondMetrics *
perfmond_metrics_new (void)
{
  PerfmondMetrics *self = g_new0 (PerfmondMetrics, 1);

  self->hang_counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  return self;
}

void
perfmond_metrics_free (PerfmondMetrics *self)
{
  if (self == NULL)
    return;
  g_hash_table_unref (self->hang_counts);
  g_free (self);
}

/* One series per process (pid and name) and runnable, at most
 * MAX_METRIC_RUNNABLES, then "(other)". */
void
perfmond_metrics_count_hang (PerfmondMetrics *self,
                             guint            pid,
                             const char      *process_name,
                             const char      *runnable_name)
{
  g_autofree char *key = g_strdup_printf ("%u\n%s\n%s", pid, process_name,
                                          runnable_name[0] ? runnable_name : "(unlabelled)");
  guint64 *count = g_hash_table_lookup (self->hang_counts, key);

  if (count == NULL && g_hash_table_size (self->hang_counts) >= MAX_METRIC_RUNNABLES)
    {
      g_free (key);
      key = g_strdup ("\n(other)\n(other)");
      count = g_hash_table_lookup (self->hang_counts, key);
    }
  if (count == NULL)
    {
      count = g_new0 (guint64, 1);
      g_hash_table_insert (self->hang_counts, g_steal_pointer (&key), count);
    }
  (*count)++;
}

/* A label value: backslash, quote and newline escaped (both formats). */
static void
append_label_value (GString    *out,
                    const char *value)
{
  for (const char *p = value; *p != '\0'; p++)
    {
      if (*p == '\\' || *p == '"')
        g_string_append_c (out, '\\');
      if (*p == '\n')
        g_string_append (out, "\\n");
      else
        g_string_append_c (out, *p);
    }
}

typedef struct
{
  guint64     id;         /* 0 for "(other)" and "(none)" */
  const char *name;
  guint64     cpu_time, blocked_time, ticks;
  guint64     sampled_cpu_time;   /* add-on groups: estimated, apart */
  guint64     durations[PERFMON_N_DURATIONS];
} MetricGroup;

static int
compare_metric_cpu (gconstpointer a,
                    gconstpointer b)
{
  const MetricGroup *x = a, *y = b;

  return x->cpu_time > y->cpu_time ? -1 : x->cpu_time < y->cpu_time;
}

/* The groups of @kind in @snapshot, the MAX_METRIC_GROUPS_PER_KIND with
 * the most CPU and "(other)", and, below the thread, "(none)". */
static GArray *
collect_groups (PerfmonSnapshot  *snapshot,
                PerfmonGroupKind  kind)
{
  GPtrArray *stats = perfmon_snapshot_get_groups (snapshot);
  GArray *groups = g_array_new (FALSE, TRUE, sizeof (MetricGroup));
  guint64 thread_cpu = 0, thread_blocked = 0, kind_cpu = 0, kind_blocked = 0;

  for (guint j = 0; j < stats->len; j++)
    {
      PerfmonGroupStats *s = g_ptr_array_index (stats, j);
      PerfmonGroupKind group_kind = perfmon_group_stats_get_kind (s);
      MetricGroup group = { 0, };

      if (group_kind == PERFMON_GROUP_KIND_THREAD)
        {
          thread_cpu += perfmon_group_stats_get_cpu_time (s);
          thread_blocked += perfmon_group_stats_get_blocked_time (s);
        }
      if (group_kind != kind)
        continue;
      group.id = perfmon_group_stats_get_id (s);
      group.name = perfmon_group_stats_get_name (s);
      group.cpu_time = perfmon_group_stats_get_cpu_time (s);
      group.blocked_time = perfmon_group_stats_get_blocked_time (s);
      group.ticks = perfmon_group_stats_get_ticks (s);
      group.sampled_cpu_time = perfmon_group_stats_get_sampled_cpu_time (s);
      memcpy (group.durations, perfmon_group_stats_get_durations (s, NULL), sizeof group.durations);
      kind_cpu += group.cpu_time;
      kind_blocked += group.blocked_time;
      g_array_append_val (groups, group);
    }

  g_array_sort (groups, compare_metric_cpu);
  if (groups->len > MAX_METRIC_GROUPS_PER_KIND)
    {
      MetricGroup other = { .name = "(other)" };

      for (guint j = MAX_METRIC_GROUPS_PER_KIND; j < groups->len; j++)
        {
          MetricGroup *g = &g_array_index (groups, MetricGroup, j);

          other.cpu_time += g->cpu_time;
          other.blocked_time += g->blocked_time;
          other.ticks += g->ticks;
          other.sampled_cpu_time += g->sampled_cpu_time;
          for (guint k = 0; k < PERFMON_N_DURATIONS; k++)
            other.durations[k] += g->durations[k];
        }
      g_array_set_size (groups, MAX_METRIC_GROUPS_PER_KIND);
      g_array_append_val (groups, other);
    }
  if (kind != PERFMON_GROUP_KIND_THREAD)
    {
      MetricGroup none = { .name = "(none)" };

      none.cpu_time = thread_cpu > kind_cpu ? thread_cpu - kind_cpu : 0;
      none.blocked_time = thread_blocked > kind_blocked ? thread_blocked - kind_blocked : 0;
      g_array_append_val (groups, none);
    }
  return groups;
}

static void
append_labels (GString                      *out,
               const PerfmondMetricsProcess *process,
               const char                   *kind,
               const MetricGroup            *group)
{
  g_string_append_printf (out, "pid=\"%u\",process=\"", process->pid);
  append_label_value (out, process->process_name);
  g_string_append_printf (out, "\",%s=\"", kind);
  append_label_value (out, group->name);
  /* The id too: two groups of a process may have the same name. */
  g_string_append_printf (out, "\",id=\"%" G_GUINT64_FORMAT "\"", group->id);
}

static void
append_header (GString               *out,
               PerfmondMetricsFormat  format,
               const char            *name,   /* without _total */
               const char            *type,
               const char            *unit,   /* nullable */
               const char            *help)
{
  if (format == PERFMOND_METRICS_OPENMETRICS)
    {
      g_string_append_printf (out, "# TYPE %s %s\n", name, type);
      if (unit != NULL)
        g_string_append_printf (out, "# UNIT %s %s\n", name, unit);
      g_string_append_printf (out, "# HELP %s %s\n", name, help);
    }
  else
    {
      const char *suffix = strcmp (type, "counter") == 0 ? "_total" : "";

      g_string_append_printf (out, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix, help, name, suffix, type);
    }
}

/* The samples of one family of @kind: CPU or blocked counters, or the
 * iteration histogram; for add-on groups, the CPU time estimated by
 * sampling, a family of its own beside the exact one. */
typedef enum { FAMILY_CPU, FAMILY_BLOCKED, FAMILY_HISTOGRAM, FAMILY_SAMPLED_CPU } FamilyType;

static void
append_family (GString                      *out,
               PerfmondMetricsFormat         format,
               const PerfmondMetricsProcess *processes,
               guint                         n_processes,
               PerfmonGroupKind              kind,
               FamilyType                    type)
{
  /* The kind names of the snapshots name the families and labels. */
  const char *label = perfmon_group_kind_to_string (kind);
  g_autofree char *name = NULL;
  g_autofree char *help = NULL;

  if (type == FAMILY_HISTOGRAM)
    {
      name = g_strdup_printf ("perfmon_%s_iteration_cpu_seconds", label);
      help = g_strdup_printf ("CPU time of a %s group per main-loop iteration it ran in", label);
      append_header (out, format, name, "histogram", "seconds", help);
    }
  else if (type == FAMILY_SAMPLED_CPU)
    {
      name = g_strdup_printf ("perfmon_%s_sampled_cpu_seconds", label);
      help = g_strdup_printf ("CPU time of the %s groups' code outside their own compartments (promise "
                              "jobs, virtual functions, ...), estimated by sampling the JavaScript stack "
                              "of long dispatches; not in perfmon_%s_cpu_seconds, which is exact",
                              label, label);
      append_header (out, format, name, "counter", "seconds", help);
    }
  else
    {
      name = g_strdup_printf ("perfmon_%s_%s_seconds", label, type == FAMILY_CPU ? "cpu" : "blocked");
      help = g_strdup_printf ("%s time of the %s groups; %s",
                              type == FAMILY_CPU ? "CPU" : "Blocked", label,
                              kind == PERFMON_GROUP_KIND_THREAD
                              ? "a process's sum is the time of its monitored event loops"
                              : "(none) is the time outside them: a process's sum is its threads'");
      append_header (out, format, name, "counter", "seconds", help);
    }

  for (guint i = 0; i < n_processes; i++)
    {
      const PerfmondMetricsProcess *process = &processes[i];
      g_autoptr(GArray) groups = NULL;

      if (process->snapshot == NULL)
        continue;
      groups = collect_groups (process->snapshot, kind);
      for (guint j = 0; j < groups->len; j++)
        {
          MetricGroup *group = &g_array_index (groups, MetricGroup, j);

          if (type == FAMILY_SAMPLED_CPU)
            {
              if (g_str_equal (group->name, "(none)") && group->id == 0)
                continue;
              g_string_append_printf (out, "%s_total{", name);
              append_labels (out, process, label, group);
              g_string_append_printf (out, "} %.6f\n", group->sampled_cpu_time / 1e6);
              continue;
            }
          if (type != FAMILY_HISTOGRAM)
            {
              g_string_append_printf (out, "%s_total{", name);
              append_labels (out, process, label, group);
              g_string_append_printf (out, "} %.6f\n",
                                      (type == FAMILY_CPU ? group->cpu_time : group->blocked_time) / 1e6);
              continue;
            }
          /* An iteration that used more than 2^i ms of the group's CPU is
           * one that is not in bucket le=2^i ms: bucket = ticks −
           * durations[i], exactly. */
          for (guint k = 0; k <= PERFMON_N_DURATIONS; k++)
            {
              g_string_append_printf (out, "%s_bucket{", name);
              append_labels (out, process, label, group);
              if (k < PERFMON_N_DURATIONS)
                g_string_append_printf (out, ",le=\"%g\"} %" G_GUINT64_FORMAT "\n", (1u << k) / 1000.0,
                                        group->ticks - MIN (group->durations[k], group->ticks));
              else
                g_string_append_printf (out, ",le=\"+Inf\"} %" G_GUINT64_FORMAT "\n", group->ticks);
            }
          g_string_append_printf (out, "%s_sum{", name);
          append_labels (out, process, label, group);
          g_string_append_printf (out, "} %.6f\n", group->cpu_time / 1e6);
          g_string_append_printf (out, "%s_count{", name);
          append_labels (out, process, label, group);
          g_string_append_printf (out, "} %" G_GUINT64_FORMAT "\n", group->ticks);
        }
    }
}

/**
 * perfmond_metrics_write:
 * @self: the metrics
 * @processes: (array length=n_processes): the monitored processes, by pid
 * @n_processes: their number
 * @health: perfmond's counters
 * @format: the text format
 * @out: where to append
 *
 * Appends the metrics of the newest snapshot of every process, the hangs
 * by process and runnable, and perfmond's own health.
 */
void
perfmond_metrics_write (PerfmondMetrics              *self,
                        const PerfmondMetricsProcess *processes,
                        guint                         n_processes,
                        const PerfmondMetricsHealth  *health,
                        PerfmondMetricsFormat         format,
                        GString                      *out)
{
  GHashTableIter iter;
  gpointer key, value;

  append_header (out, format, "perfmon_process_cpu_seconds", "counter", "seconds",
                 "User and system CPU time of a monitored process, all its threads");
  for (guint i = 0; i < n_processes; i++)
    {
      const PerfmondMetricsProcess *process = &processes[i];

      if (process->snapshot == NULL)
        continue;
      g_string_append_printf (out, "perfmon_process_cpu_seconds_total{pid=\"%u\",process=\"", process->pid);
      append_label_value (out, process->process_name);
      g_string_append_printf (out, "\"} %.6f\n",
                              (perfmon_snapshot_get_user_time (process->snapshot) +
                               perfmon_snapshot_get_system_time (process->snapshot)) / 1e6);
    }

  for (PerfmonGroupKind kind = PERFMON_GROUP_KIND_THREAD; kind <= PERFMON_GROUP_KIND_COMPARTMENT; kind++)
    {
      append_family (out, format, processes, n_processes, kind, FAMILY_CPU);
      append_family (out, format, processes, n_processes, kind, FAMILY_BLOCKED);
    }
  append_family (out, format, processes, n_processes, PERFMON_GROUP_KIND_ADDON, FAMILY_SAMPLED_CPU);
  append_family (out, format, processes, n_processes, PERFMON_GROUP_KIND_THREAD, FAMILY_HISTOGRAM);

  append_header (out, format, "perfmon_hangs", "counter", NULL, "Hangs reported, by process and runnable");
  g_hash_table_iter_init (&iter, self->hang_counts);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      g_auto(GStrv) parts = g_strsplit (key, "\n", 3);

      g_string_append (out, "perfmon_hangs_total{pid=\"");
      append_label_value (out, parts[0]);
      g_string_append (out, "\",process=\"");
      append_label_value (out, parts[1] != NULL ? parts[1] : "");
      g_string_append (out, "\",runnable=\"");
      append_label_value (out, parts[1] != NULL && parts[2] != NULL ? parts[2] : "");
      g_string_append_printf (out, "\"} %" G_GUINT64_FORMAT "\n", *(guint64 *) value);
    }

  append_header (out, format, "perfmond_processes", "gauge", NULL, "Processes perfmond monitors");
  g_string_append_printf (out, "perfmond_processes %u\n", health->processes);
  append_header (out, format, "perfmond_refused_calls", "counter", NULL, "Calls refused for oversize arguments");
  g_string_append_printf (out, "perfmond_refused_calls_total %" G_GUINT64_FORMAT "\n", health->refused_calls);
  append_header (out, format, "perfmond_dropped_signals", "counter", NULL,
                 "Signals of monitored processes dropped (rate, size, unregistered)");
  g_string_append_printf (out, "perfmond_dropped_signals_total %" G_GUINT64_FORMAT "\n", health->dropped_signals);

  if (format == PERFMOND_METRICS_OPENMETRICS)
    g_string_append (out, "# EOF\n");
}

/* OpenMetrics when the scraper prefers it (Prometheus says so in its
 * Accept header), else the Prometheus text format 0.0.4. */
PerfmondMetricsFormat
perfmond_metrics_negotiate (const char *accept)
{
  GSList *preferred;
  PerfmondMetricsFormat format = PERFMOND_METRICS_PROMETHEUS;

  if (accept == NULL)
    return format;
  preferred = soup_header_parse_quality_list (accept, NULL);
  if (preferred != NULL && g_str_has_prefix (preferred->data, "application/openmetrics-text"))
    format = PERFMOND_METRICS_OPENMETRICS;
  soup_header_free_list (preferred);
  return format;
}

const char *
perfmond_metrics_content_type (PerfmondMetricsFormat format)
{
  return format == PERFMOND_METRICS_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                                : "text/plain; version=0.0.4; charset=utf-8";
}
