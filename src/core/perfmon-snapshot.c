/* perfmon-snapshot.c: an immutable picture of a monitor's groups
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdarg.h>

#include "perfmon-error.h"
#include "perfmon-snapshot-private.h"

/**
 * PerfmonSnapshot:
 *
 * The counters of all the groups of a [class@Perfmon.Monitor] at one
 * moment, as returned by [method@Perfmon.Monitor.snapshot], or their growth
 * between two such moments, as returned by [method@Perfmon.Snapshot.subtract].
 *
 * A snapshot is immutable: once created, nothing about it changes, so it
 * can be kept, compared and handed to other threads freely. Besides the
 * groups (see [struct@Perfmon.GroupStats]) it holds the monotonic time at
 * which it was taken, the process it describes and the CPU time the whole
 * process had used, as getrusage() reports it.
 *
 * ## Serialization
 *
 * A snapshot can be written with [method@Perfmon.Snapshot.to_json] or
 * [method@Perfmon.Snapshot.to_variant] and read back, exactly, with
 * [ctor@Perfmon.Snapshot.new_from_json] or
 * [ctor@Perfmon.Snapshot.new_from_variant]. The #GVariant form has the type
 * %PERFMON_SNAPSHOT_VARIANT_TYPE. The JSON form is an object whose members
 * come in this order (times are in microseconds):
 *
 * ```json
 * {
 *   "version": 1,
 *   "timestamp": 1234567890,
 *   "wall_time": 1767225600000000,
 *   "interval": 0,
 *   "pid": 4242,
 *   "process_name": "gedit",
 *   "user_time": 1500000,
 *   "system_time": 250000,
 *   "groups": [
 *     {
 *       "id": 1,
 *       "kind": "thread",
 *       "name": "main",
 *       "window_id": 0,
 *       "addon_id": null,
 *       "cpu_time": 1200000,
 *       "blocked_time": 0,
 *       "ticks": 5000,
 *       "durations": [40, 12, 3, 1, 0, 0, 0, 0, 0, 0]
 *     }
 *   ],
 *   "modules": [
 *     {
 *       "name": "libgio-2.0.so.0",
 *       "path": "/usr/lib/x86_64-linux-gnu/libgio-2.0.so.0",
 *       "base": 140218331136000,
 *       "build_id": "5c1bd5d3a6c4ba2a4c4f2b6fd1e4f3c3b9a3ed4e"
 *     }
 *   ]
 * }
 * ```
 *
 * `modules` (since 0.3, left out when empty) lists, once each, the modules
 * that group names of the form `module+0xOFFSET` refer to: a callback with
 * no exported symbol, which the process names by its module's file name and
 * its offset from the module's load base rather than symbolize it. Each
 * gives the file the process loaded (`path`, absolute), its load `base` and
 * its GNU `build_id` (lowercase hex, `""` if none), so that
 * `perfmon symbolize` names the function after the process has exited
 * ([method@Perfmon.Snapshot.lookup_module]). A reader takes a missing
 * `modules` as none.
 *
 * An add-on group whose code was also seen by sampling (see
 * [method@Perfmon.GroupStats.get_sampled_cpu_time]) has one more member
 * after `blocked_time`, `"sampled_cpu_time"`: that estimate, apart from the
 * exact `cpu_time`. It is left out when 0, a reader takes a missing one as
 * 0, and only an add-on group may have one that is not 0.
 *
 * `wall_time` is the wall-clock time the snapshot was taken at
 * (g_get_real_time(), microseconds since 1970-01-01 UTC); it is left out
 * when not known, and a reader takes a missing `wall_time` as 0.
 *
 * `kind` is one of `"thread"`, `"window"`, `"addon"` and `"compartment"`;
 * `addon_id` is a string or `null`. JSON integers are signed 64-bit
 * numbers, so an unsigned value above 9223372036854775807 is written as a
 * string of decimal digits; a reader accepts that form for every unsigned
 * member. Members a reader does not know are ignored.
 *
 * Data read from JSON or a #GVariant, or given to a
 * [class@Perfmon.SnapshotBuilder], is checked: `version` must be 1,
 * `pid` at least 1, `timestamp`, `wall_time` and `interval` non-negative, group ids
 * unique, and the histogram consistent: `durations[i + 1]` never exceeds
 * `durations[i]` and `durations[0]` never exceeds `ticks`. In the
 * #GVariant form every column has one entry per group, and the add-on
 * table lists each add-on id once, in the order the groups first use
 * them (as [method@Perfmon.Snapshot.to_variant] writes it). The message of
 * the error names the offending member, such as `groups[3].durations`.
 *
 * Since: 0.1
 */

/* --- Kind names ---------------------------------------------------------- */

/* The names of the group kinds, the one table: part of the JSON format
 * (and of perfmond's metrics), they must not follow renames of the
 * enumeration. */
static const char * const kind_names[] = {
  [PERFMON_GROUP_KIND_THREAD] = "thread",
  [PERFMON_GROUP_KIND_WINDOW] = "window",
  [PERFMON_GROUP_KIND_ADDON] = "addon",
  [PERFMON_GROUP_KIND_COMPARTMENT] = "compartment",
};

#define N_KINDS G_N_ELEMENTS (kind_names)

G_STATIC_ASSERT (N_KINDS == PERFMON_GROUP_KIND_COMPARTMENT + 1);

/**
 * perfmon_group_kind_to_string:
 * @kind: a group kind
 *
 * The name of @kind in a snapshot's JSON form (the `kind` of each group):
 * `"thread"`, `"window"`, `"addon"` or `"compartment"`.
 *
 * Returns: (nullable): the name, or %NULL if @kind is no #PerfmonGroupKind
 *
 * Since: 0.2
 */
const char *
perfmon_group_kind_to_string (PerfmonGroupKind kind)
{
  return (guint) kind < N_KINDS ? kind_names[kind] : NULL;
}

gboolean
_perfmon_snapshot_kind_from_name (const char       *name,
                                  PerfmonGroupKind *kind)
{
  for (guint i = 0; i < N_KINDS; i++)
    {
      if (g_str_equal (name, kind_names[i]))
        {
          *kind = (PerfmonGroupKind) i;
          return TRUE;
        }
    }

  return FALSE;
}

/* --- The object ---------------------------------------------------------- */
enum {
  PROP_0,
  PROP_TIMESTAMP,
  PROP_WALL_TIME,
  PROP_INTERVAL,
  PROP_PID,
  PROP_PROCESS_NAME,
  PROP_USER_TIME,
  PROP_SYSTEM_TIME,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

G_DEFINE_FINAL_TYPE (PerfmonSnapshot, perfmon_snapshot, G_TYPE_OBJECT)

/* --- Checks of data from outside the library ----------------------------- */

void
_perfmon_snapshot_fields_clear (PerfmonSnapshotFields *fields)
{
  g_clear_pointer (&fields->process_name, g_free);
  g_clear_pointer (&fields->groups, g_ptr_array_unref);
  g_clear_pointer (&fields->modules, g_ptr_array_unref);
}

gboolean
_perfmon_snapshot_set_field_error (GError     **error,
                                   const char  *prefix,
                                   const char  *member,
                                   const char  *format,
                                   ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA, "%s%s%s: %s",
               prefix != NULL ? prefix : "",
               prefix != NULL && member != NULL ? "." : "",
               member != NULL ? member : "",
               message);

  return FALSE;
}

gboolean
_perfmon_snapshot_check_version (guint64   version,
                                 GError  **error)
{
  if (version != PERFMON_SNAPSHOT_FORMAT_VERSION)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_UNSUPPORTED_VERSION,
                   "version: unsupported format version %" G_GUINT64_FORMAT
                   ", this library reads version %d",
                   version, PERFMON_SNAPSHOT_FORMAT_VERSION);
      return FALSE;
    }

  return TRUE;
}

/* The histogram's rules, which counters of one monitor keep and so
 * differences of its snapshots too. Comparisons only: the "groups[i]"
 * of the message is formatted when there is an error to report. On the
 * values, so that the variant's reader can check its columns with the
 * same rules without building groups. */
gboolean
_perfmon_snapshot_check_histogram (guint64         ticks,
                                   const guint64  *durations,
                                   guint           index,
                                   GError        **error)
{
  char prefix[32];

  if (G_LIKELY (durations[0] <= ticks))
    {
      guint i;

      for (i = 1; i < PERFMON_N_DURATIONS; i++)
        {
          if (durations[i] > durations[i - 1])
            break;
        }
      if (G_LIKELY (i == PERFMON_N_DURATIONS))
        return TRUE;

      g_snprintf (prefix, sizeof prefix, "groups[%u]", index);
      return _perfmon_snapshot_set_field_error (error, prefix, "durations",
                                                "durations[%u] = %" G_GUINT64_FORMAT " exceeds durations[%u] = %"
                                                G_GUINT64_FORMAT ": an iteration over %u ms is also over %u ms",
                                                i, durations[i], i - 1, durations[i - 1],
                                                1u << i, 1u << (i - 1));
    }

  g_snprintf (prefix, sizeof prefix, "groups[%u]", index);
  return _perfmon_snapshot_set_field_error (error, prefix, "durations",
                                            "durations[0] = %" G_GUINT64_FORMAT " exceeds ticks = %"
                                            G_GUINT64_FORMAT ": every iteration over 1 ms is counted in ticks",
                                            durations[0], ticks);
}

static gboolean
validate_histogram (const PerfmonGroupStats  *stats,
                    guint                     index,
                    GError                  **error)
{
  return _perfmon_snapshot_check_histogram (stats->ticks, stats->durations, index, error);
}

gboolean
_perfmon_snapshot_check_kind (guint32   kind,
                              guint     index,
                              GError  **error)
{
  char prefix[32];

  if (kind < N_KINDS)
    return TRUE;
  g_snprintf (prefix, sizeof prefix, "groups[%u]", index);
  return _perfmon_snapshot_set_field_error (error, prefix, "kind",
                                            "expected an integer in [0, %u], got %u",
                                            (guint) N_KINDS - 1, kind);
}

gboolean
_perfmon_snapshot_check_sampled (guint32   kind,
                                 guint64   sampled_cpu_time,
                                 guint     index,
                                 GError  **error)
{
  char prefix[32];

  if (sampled_cpu_time == 0 || kind == PERFMON_GROUP_KIND_ADDON)
    return TRUE;
  g_snprintf (prefix, sizeof prefix, "groups[%u]", index);
  return _perfmon_snapshot_set_field_error (error, prefix, "sampled_cpu_time",
                                            "expected 0: only an add-on group has sampled CPU time, "
                                            "this one is a %s group",
                                            perfmon_group_kind_to_string ((PerfmonGroupKind) kind));
}

static gboolean
validate_group (const PerfmonGroupStats  *stats,
                guint                     index,
                GError                  **error)
{
  const char *member = NULL;
  char prefix[32];

  if (!_perfmon_snapshot_check_kind ((guint32) stats->kind, index, error))
    return FALSE;

  if (!g_utf8_validate (stats->name, -1, NULL))
    member = "name";
  else if (stats->addon_id != NULL && !g_utf8_validate (stats->addon_id, -1, NULL))
    member = "addon_id";
  if (member != NULL)
    {
      g_snprintf (prefix, sizeof prefix, "groups[%u]", index);
      return _perfmon_snapshot_set_field_error (error, prefix, member, "expected a UTF-8 string");
    }
  if (!_perfmon_snapshot_check_sampled ((guint32) stats->kind, stats->sampled_cpu_time, index, error))
    return FALSE;

  return validate_histogram (stats, index, error);
}

/* The rules of the members other than the groups. */
gboolean
_perfmon_snapshot_check_header (const PerfmonSnapshotFields  *fields,
                                GError                      **error)
{
  if (fields->timestamp < 0)
    return _perfmon_snapshot_set_field_error (error, NULL, "timestamp",
                                              "expected a non-negative integer, got %" G_GINT64_FORMAT,
                                              fields->timestamp);

  if (fields->wall_time < 0)
    return _perfmon_snapshot_set_field_error (error, NULL, "wall_time",
                                              "expected a non-negative integer, got %" G_GINT64_FORMAT,
                                              fields->wall_time);

  if (fields->interval < 0)
    return _perfmon_snapshot_set_field_error (error, NULL, "interval",
                                              "expected a non-negative integer, got %" G_GINT64_FORMAT,
                                              fields->interval);

  if (fields->pid < 1 || fields->pid > G_MAXUINT)
    return _perfmon_snapshot_set_field_error (error, NULL, "pid",
                                              "expected an integer in [1, %u], got %" G_GUINT64_FORMAT,
                                              G_MAXUINT, fields->pid);

  if (fields->process_name != NULL && !g_utf8_validate (fields->process_name, -1, NULL))
    return _perfmon_snapshot_set_field_error (error, NULL, "process_name", "expected a UTF-8 string");

  return TRUE;
}

/* Every rule of the format; see the documentation of PerfmonSnapshot. */
static gboolean
validate_fields (const PerfmonSnapshotFields  *fields,
                 GError                      **error)
{
  g_autoptr(GHashTable) index_by_id = NULL;

  if (!_perfmon_snapshot_check_header (fields, error))
    return FALSE;

  index_by_id = g_hash_table_new (g_int64_hash, g_int64_equal);

  for (guint i = 0; i < fields->groups->len; i++)
    {
      const PerfmonGroupStats *stats = g_ptr_array_index (fields->groups, i);
      gpointer other;

      if (!validate_group (stats, i, error))
        return FALSE;

      if (g_hash_table_lookup_extended (index_by_id, &stats->id, NULL, &other))
        {
          char prefix[32];

          g_snprintf (prefix, sizeof prefix, "groups[%u]", i);
          return _perfmon_snapshot_set_field_error (error, prefix, "id",
                                                    "duplicate id %" G_GUINT64_FORMAT
                                                    ", already the id of groups[%u]",
                                                    stats->id, GPOINTER_TO_UINT (other));
        }

      g_hash_table_insert (index_by_id, (gpointer) &stats->id, GUINT_TO_POINTER (i));
    }

  return _perfmon_snapshot_check_modules (fields, error);
}

gboolean
_perfmon_snapshot_check_modules (const PerfmonSnapshotFields  *fields,
                                 GError                      **error)
{
  if (fields->modules != NULL && fields->modules->len > PERFMON_RECORDED_MODULES_MAX)
    return _perfmon_snapshot_set_field_error (error, NULL, "modules", "expected at most %d modules, got %u",
                                              PERFMON_RECORDED_MODULES_MAX, fields->modules->len);
  for (guint i = 0; fields->modules != NULL && i < fields->modules->len; i++)
    {
      const PerfmonRecordedModule *module = g_ptr_array_index (fields->modules, i);
      char prefix[32];

      g_snprintf (prefix, sizeof prefix, "modules[%u]", i);
      if (!_perfmon_recorded_module_check (prefix, module->name, module->path, module->build_id, error))
        return FALSE;
      for (guint j = 0; j < i; j++)
        if (g_str_equal (((PerfmonRecordedModule *) g_ptr_array_index (fields->modules, j))->name, module->name))
          return _perfmon_snapshot_set_field_error (error, prefix, "name", "duplicate name, already that of modules[%u]", j);
    }

  return TRUE;
}

/* --- Construction -------------------------------------------------------- */

/* Takes @groups. Ids must be unique. */
static PerfmonSnapshot *
snapshot_new_take (gint64      timestamp,
                   gint64      wall_time,
                   gint64      interval,
                   guint       pid,
                   const char *process_name,
                   guint64     user_time,
                   guint64     system_time,
                   GPtrArray  *groups)
{
  PerfmonSnapshot *self;

  self = g_object_new (PERFMON_TYPE_SNAPSHOT, NULL);
  self->timestamp = timestamp;
  self->wall_time = wall_time;
  self->interval = interval;
  self->pid = pid;
  self->process_name = g_strdup (process_name != NULL ? process_name : "");
  self->user_time = user_time;
  self->system_time = system_time;
  self->groups = groups;
  g_ptr_array_set_free_func (self->groups, (GDestroyNotify) perfmon_group_stats_unref);

  self->sorted_by_id = TRUE;
  for (guint i = 1; i < groups->len && self->sorted_by_id; i++)
    {
      const PerfmonGroupStats *previous = g_ptr_array_index (groups, i - 1);
      const PerfmonGroupStats *stats = g_ptr_array_index (groups, i);

      self->sorted_by_id = previous->id < stats->id;
    }

  return self;
}

PerfmonSnapshot *
_perfmon_snapshot_new_checked (PerfmonSnapshotFields  *fields,
                               GError                **error)
{
  PerfmonSnapshot *self;

  if (!validate_fields (fields, error))
    return NULL;

  self = snapshot_new_take (fields->timestamp, fields->wall_time, fields->interval, (guint) fields->pid,
                            fields->process_name, fields->user_time, fields->system_time,
                            g_steal_pointer (&fields->groups));
  _perfmon_snapshot_set_modules (self, g_steal_pointer (&fields->modules));
  return self;
}

void
_perfmon_snapshot_set_modules (PerfmonSnapshot *self,
                               GPtrArray       *modules)
{
  g_clear_pointer (&self->modules, g_ptr_array_unref);
  self->modules = modules;
}

GPtrArray *
_perfmon_snapshot_dup_modules (PerfmonSnapshot *self)
{
  if (self->modules == NULL || self->modules->len == 0)
    return NULL;
  return g_ptr_array_copy (self->modules, (GCopyFunc) (void (*) (void)) _perfmon_recorded_module_copy, NULL);
}

PerfmonSnapshot *
_perfmon_snapshot_new (gint64      timestamp,
                       gint64      wall_time,
                       gint64      interval,
                       guint       pid,
                       const char *process_name,
                       guint64     user_time,
                       guint64     system_time,
                       GPtrArray  *groups)
{
  g_return_val_if_fail (timestamp >= 0, NULL);
  g_return_val_if_fail (interval >= 0, NULL);
  g_return_val_if_fail (groups != NULL, NULL);

  /* Whatever a snapshot holds must read back from its JSON and variant
   * forms. The library's data is valid by construction; a histogram out
   * of order would be a bug of the monitor, cheap to catch. */
  for (guint i = 0; i < groups->len; i++)
    {
      g_autoptr(GError) error = NULL;

      if (G_UNLIKELY (!validate_histogram (g_ptr_array_index (groups, i), i, &error)))
        {
          g_critical ("%s: snapshot data would not read back: %s", G_STRFUNC, error->message);
          break;
        }
    }

  return snapshot_new_take (timestamp, wall_time, interval, pid, process_name,
                            user_time, system_time, groups);
}

/* --- GObject ------------------------------------------------------------- */

static void
perfmon_snapshot_finalize (GObject *object)
{
  PerfmonSnapshot *self = PERFMON_SNAPSHOT (object);

  g_clear_pointer (&self->groups_by_id, g_hash_table_unref);
  g_clear_pointer (&self->groups, g_ptr_array_unref);
  g_clear_pointer (&self->modules, g_ptr_array_unref);
  g_clear_pointer (&self->process_name, g_free);

  G_OBJECT_CLASS (perfmon_snapshot_parent_class)->finalize (object);
}

static void
perfmon_snapshot_get_property (GObject    *object,
                               guint       prop_id,
                               GValue     *value,
                               GParamSpec *pspec)
{
  PerfmonSnapshot *self = PERFMON_SNAPSHOT (object);

  switch (prop_id)
    {
    case PROP_TIMESTAMP:
      g_value_set_int64 (value, self->timestamp);
      break;

    case PROP_WALL_TIME:
      g_value_set_int64 (value, self->wall_time);
      break;

    case PROP_INTERVAL:
      g_value_set_int64 (value, self->interval);
      break;

    case PROP_PID:
      g_value_set_uint (value, self->pid);
      break;

    case PROP_PROCESS_NAME:
      g_value_set_string (value, self->process_name);
      break;

    case PROP_USER_TIME:
      g_value_set_uint64 (value, self->user_time);
      break;

    case PROP_SYSTEM_TIME:
      g_value_set_uint64 (value, self->system_time);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_snapshot_class_init (PerfmonSnapshotClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = perfmon_snapshot_finalize;
  object_class->get_property = perfmon_snapshot_get_property;

  /**
   * PerfmonSnapshot:timestamp: (getter get_timestamp)
   *
   * The monotonic time (see g_get_monotonic_time()) at which the snapshot
   * was taken, in microseconds.
   *
   * Since: 0.1
   */
  properties[PROP_TIMESTAMP] =
    g_param_spec_int64 ("timestamp", NULL, NULL,
                        0, G_MAXINT64, 0,
                        G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonSnapshot:wall-time: (getter get_wall_time)
   *
   * The wall-clock time at which the snapshot was taken, in microseconds
   * since January 1, 1970 UTC (see g_get_real_time()); for a difference,
   * that of the newer snapshot. 0 if not known (a snapshot read from a file
   * written before perfmon recorded it).
   *
   * Since: 0.1
   */
  properties[PROP_WALL_TIME] =
    g_param_spec_int64 ("wall-time", NULL, NULL,
                        0, G_MAXINT64, 0,
                        G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonSnapshot:interval: (getter get_interval)
   *
   * For a difference of two snapshots, the time between them, in
   * microseconds; 0 for a snapshot of a live monitor.
   *
   * Since: 0.1
   */
  properties[PROP_INTERVAL] =
    g_param_spec_int64 ("interval", NULL, NULL,
                        0, G_MAXINT64, 0,
                        G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonSnapshot:pid: (getter get_pid)
   *
   * The id of the process the snapshot describes.
   *
   * Since: 0.1
   */
  properties[PROP_PID] =
    g_param_spec_uint ("pid", NULL, NULL,
                       0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonSnapshot:process-name: (getter get_process_name)
   *
   * The name of the process the snapshot describes, possibly empty.
   *
   * Since: 0.1
   */
  properties[PROP_PROCESS_NAME] =
    g_param_spec_string ("process-name", NULL, NULL,
                         "",
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonSnapshot:user-time: (getter get_user_time)
   *
   * The CPU time the process had spent in user mode, in microseconds; for
   * a difference, the CPU time spent in the interval.
   *
   * Since: 0.1
   */
  properties[PROP_USER_TIME] =
    g_param_spec_uint64 ("user-time", NULL, NULL,
                         0, G_MAXUINT64, 0,
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonSnapshot:system-time: (getter get_system_time)
   *
   * The CPU time the process had spent in the kernel, in microseconds; for
   * a difference, the CPU time spent in the interval.
   *
   * Since: 0.1
   */
  properties[PROP_SYSTEM_TIME] =
    g_param_spec_uint64 ("system-time", NULL, NULL,
                         0, G_MAXUINT64, 0,
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
perfmon_snapshot_init (PerfmonSnapshot *self)
{
}

/* --- Getters and lookup -------------------------------------------------- */

/**
 * perfmon_snapshot_get_timestamp: (get-property timestamp)
 * @self: a `PerfmonSnapshot`
 *
 * Gets the monotonic time (see g_get_monotonic_time()) at which @self was
 * taken.
 *
 * Returns: the time, in microseconds
 *
 * Since: 0.1
 */
gint64
perfmon_snapshot_get_timestamp (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), 0);

  return self->timestamp;
}

/**
 * perfmon_snapshot_get_wall_time: (get-property wall-time)
 * @self: a `PerfmonSnapshot`
 *
 * Gets the wall-clock time at which @self was taken: the moment to show to
 * a person, or to compare with other machines' logs.
 * [method@Perfmon.Snapshot.get_timestamp] is the one to compute intervals
 * with.
 *
 * Returns: the time, in microseconds since January 1, 1970 UTC, or 0 if
 *   not known
 *
 * Since: 0.1
 */
gint64
perfmon_snapshot_get_wall_time (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), 0);

  return self->wall_time;
}

/**
 * perfmon_snapshot_get_interval: (get-property interval)
 * @self: a `PerfmonSnapshot`
 *
 * Gets the time covered by @self if it is a difference of two snapshots.
 *
 * Returns: the time between the two snapshots, in microseconds, or 0 if
 *   @self is a snapshot of a live monitor
 *
 * Since: 0.1
 */
gint64
perfmon_snapshot_get_interval (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), 0);

  return self->interval;
}

/**
 * perfmon_snapshot_get_pid: (get-property pid)
 * @self: a `PerfmonSnapshot`
 *
 * Gets the id of the process @self describes.
 *
 * Returns: the process id
 *
 * Since: 0.1
 */
guint
perfmon_snapshot_get_pid (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), 0);

  return self->pid;
}

/**
 * perfmon_snapshot_get_process_name: (get-property process-name)
 * @self: a `PerfmonSnapshot`
 *
 * Gets the name of the process @self describes.
 *
 * Returns: (transfer none): the process name, possibly empty
 *
 * Since: 0.1
 */
const char *
perfmon_snapshot_get_process_name (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  return self->process_name;
}

/**
 * perfmon_snapshot_get_user_time: (get-property user-time)
 * @self: a `PerfmonSnapshot`
 *
 * Gets the CPU time the process had spent in user mode (for a difference,
 * during the interval), as getrusage() reports it.
 *
 * Returns: the CPU time, in microseconds
 *
 * Since: 0.1
 */
guint64
perfmon_snapshot_get_user_time (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), 0);

  return self->user_time;
}

/**
 * perfmon_snapshot_get_system_time: (get-property system-time)
 * @self: a `PerfmonSnapshot`
 *
 * Gets the CPU time the process had spent in the kernel (for a difference,
 * during the interval), as getrusage() reports it.
 *
 * Returns: the CPU time, in microseconds
 *
 * Since: 0.1
 */
guint64
perfmon_snapshot_get_system_time (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), 0);

  return self->system_time;
}

/**
 * perfmon_snapshot_get_groups:
 * @self: a `PerfmonSnapshot`
 *
 * Gets the counters of all the groups in @self, the thread group first. The
 * array must not be modified.
 *
 * Returns: (transfer none) (element-type PerfmonGroupStats): the groups
 *
 * Since: 0.1
 */
GPtrArray *
perfmon_snapshot_get_groups (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  return self->groups;
}

/**
 * perfmon_snapshot_lookup:
 * @self: a `PerfmonSnapshot`
 * @id: the id of a group
 *
 * Finds the counters of the group whose id is @id.
 *
 * Returns: (transfer none) (nullable): the counters of the group, or %NULL
 *   if @self has no group with that id
 *
 * Since: 0.1
 */
PerfmonGroupStats *
perfmon_snapshot_lookup (PerfmonSnapshot *self,
                         guint64          id)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  if (self->sorted_by_id)
    {
      guint low = 0, high = self->groups->len;

      while (low < high)
        {
          guint middle = low + (high - low) / 2;
          PerfmonGroupStats *stats = g_ptr_array_index (self->groups, middle);

          if (stats->id < id)
            low = middle + 1;
          else if (stats->id > id)
            high = middle;
          else
            return stats;
        }

      return NULL;
    }

  if (g_once_init_enter (&self->groups_by_id))
    {
      GHashTable *table = g_hash_table_new (g_int64_hash, g_int64_equal);

      for (guint i = 0; i < self->groups->len; i++)
        {
          PerfmonGroupStats *stats = g_ptr_array_index (self->groups, i);

          /* Ids are unique in valid data; keep the first one regardless. */
          if (!g_hash_table_contains (table, &stats->id))
            g_hash_table_insert (table, &stats->id, stats);
        }
      g_once_init_leave (&self->groups_by_id, table);
    }

  return g_hash_table_lookup (self->groups_by_id, &id);
}

/**
 * perfmon_snapshot_lookup_module:
 * @self: a `PerfmonSnapshot`
 * @name: the module's file name, as group names use it before `+0x`
 * @path: (out) (optional) (transfer none): where to store the file the
 *   process loaded
 * @base: (out) (optional): where to store the module's load base
 * @build_id: (out) (optional) (transfer none): where to store its GNU build
 *   id (lowercase hex, "" if it has none)
 *
 * Finds what @self recorded of the module that its group names of the form
 * `module+0xOFFSET` refer to (a callback without an exported symbol: the
 * process names it so and never symbolizes), so that a symbolizer can name
 * the function after the process has exited: see
 * [method@Perfmon.Symbolizer.lookup].
 *
 * Returns: %TRUE if @self recorded the module @name
 *
 * Since: 0.3
 */
gboolean
perfmon_snapshot_lookup_module (PerfmonSnapshot  *self,
                                const char       *name,
                                const char      **path,
                                guint64          *base,
                                const char      **build_id)
{
  const PerfmonRecordedModule *module;

  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), FALSE);
  g_return_val_if_fail (name != NULL, FALSE);

  module = _perfmon_recorded_modules_find (self->modules, name);
  if (module == NULL)
    return FALSE;
  if (path != NULL)
    *path = module->path;
  if (base != NULL)
    *base = module->base;
  if (build_id != NULL)
    *build_id = module->build_id;
  return TRUE;
}

/* --- Differences --------------------------------------------------------- */

/* The error of subtract_counter(), out of its way. */
static G_GNUC_NO_INLINE gboolean
counter_went_backwards (guint64                   newer,
                        guint64                   older,
                        const PerfmonGroupStats  *group,
                        const char               *field,
                        int                       index,
                        GError                  **error)
{
  g_autoptr(GString) what = g_string_new (NULL);

  if (group != NULL)
    g_string_append_printf (what, "group %" G_GUINT64_FORMAT ": ", group->id);
  g_string_append (what, field);
  if (index >= 0)
    g_string_append_printf (what, "[%d]", index);

  g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_ORDER,
               "%s went backwards: %" G_GUINT64_FORMAT " in the older snapshot, %"
               G_GUINT64_FORMAT " in the newer one",
               what->str, older, newer);

  return FALSE;
}

/* Sets *@delta to @newer - @older, which must not be negative. @group is
 * NULL for the counters of the whole process; @index is -1 unless @field
 * is an array. */
static inline gboolean
subtract_counter (guint64                  *delta,
                  guint64                   newer,
                  guint64                   older,
                  const PerfmonGroupStats  *group,
                  const char               *field,
                  int                       index,
                  GError                  **error)
{
  if (G_LIKELY (older <= newer))
    {
      *delta = newer - older;
      return TRUE;
    }

  return counter_went_backwards (newer, older, group, field, index, error);
}

/* Subtracts the counters of @older from those of @delta, a copy of the
 * newer group. */
static gboolean
subtract_group (PerfmonGroupStats        *delta,
                const PerfmonGroupStats  *older,
                GError                  **error)
{
  if (!subtract_counter (&delta->cpu_time, delta->cpu_time, older->cpu_time,
                         delta, "cpu_time", -1, error) ||
      !subtract_counter (&delta->blocked_time, delta->blocked_time, older->blocked_time,
                         delta, "blocked_time", -1, error) ||
      !subtract_counter (&delta->ticks, delta->ticks, older->ticks,
                         delta, "ticks", -1, error) ||
      !subtract_counter (&delta->sampled_cpu_time, delta->sampled_cpu_time, older->sampled_cpu_time,
                         delta, "sampled_cpu_time", -1, error))
    return FALSE;

  for (int i = 0; i < PERFMON_N_DURATIONS; i++)
    {
      if (!subtract_counter (&delta->durations[i], delta->durations[i], older->durations[i],
                             delta, "durations", i, error))
        return FALSE;
    }

  return TRUE;
}

/**
 * perfmon_snapshot_subtract:
 * @self: a `PerfmonSnapshot`
 * @older: a `PerfmonSnapshot` of the same process, taken before @self
 * @error: return location for a #GError
 *
 * Computes what happened between @older and @self.
 *
 * The result has the timestamp of @self, an interval of the time between
 * the two snapshots, and one entry per group of @self whose counters are
 * those of @self minus those of the group with the same id in @older. A
 * group created after @older was taken counts from zero; a group that is
 * gone from @self is left out.
 *
 * Fails with %PERFMON_ERROR_SNAPSHOT_MISMATCH if the snapshots come from
 * different processes or cannot come from the same monitor, and with
 * %PERFMON_ERROR_SNAPSHOT_ORDER if @older was taken after @self or one of
 * its counters is larger than in @self.
 *
 * Returns: (transfer full): the difference
 *
 * Since: 0.1
 */
PerfmonSnapshot *
perfmon_snapshot_subtract (PerfmonSnapshot  *self,
                           PerfmonSnapshot  *older,
                           GError          **error)
{
  g_auto(PerfmonSnapshotFields) fields = { 0, };
  gboolean walk = self->sorted_by_id && older->sorted_by_id;
  guint next_older = 0;

  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (older), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (older->pid != self->pid)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH,
                   "cannot subtract a snapshot of pid %u from a snapshot of pid %u",
                   older->pid, self->pid);
      return NULL;
    }

  if (older->timestamp > self->timestamp)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_ORDER,
                   "the snapshot to subtract (timestamp %" G_GINT64_FORMAT
                   ") is newer than the one it is subtracted from (timestamp %"
                   G_GINT64_FORMAT ")",
                   older->timestamp, self->timestamp);
      return NULL;
    }

  fields.timestamp = self->timestamp;
  fields.wall_time = self->wall_time;
  /* Both are non-negative: no overflow. */
  fields.interval = self->timestamp - older->timestamp;
  fields.pid = self->pid;

  if (!subtract_counter (&fields.user_time, self->user_time, older->user_time,
                         NULL, "user_time", -1, error) ||
      !subtract_counter (&fields.system_time, self->system_time, older->system_time,
                         NULL, "system_time", -1, error))
    return NULL;

  fields.groups = g_ptr_array_new_full (self->groups->len,
                                        (GDestroyNotify) perfmon_group_stats_unref);

  for (guint i = 0; i < self->groups->len; i++)
    {
      const PerfmonGroupStats *newer = g_ptr_array_index (self->groups, i);
      const PerfmonGroupStats *before = NULL;
      g_autoptr(GError) local_error = NULL;
      g_autoptr(PerfmonGroupStats) delta = _perfmon_group_stats_copy (newer);

      if (walk)
        {
          /* Both in increasing id order: one merge walk, no lookups. */
          while (next_older < older->groups->len &&
                 ((PerfmonGroupStats *) g_ptr_array_index (older->groups, next_older))->id < newer->id)
            next_older++;
          if (next_older < older->groups->len &&
              ((PerfmonGroupStats *) g_ptr_array_index (older->groups, next_older))->id == newer->id)
            before = g_ptr_array_index (older->groups, next_older);
        }
      else
        {
          before = perfmon_snapshot_lookup (older, newer->id);
        }

      if (before != NULL)
        {
          if (before->kind != newer->kind)
            {
              g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH,
                           "group %" G_GUINT64_FORMAT " is a %s in the older snapshot "
                           "but a %s in the newer one",
                           newer->id, perfmon_group_kind_to_string (before->kind),
                           perfmon_group_kind_to_string (newer->kind));
              return NULL;
            }

          if (!subtract_group (delta, before, error))
            return NULL;

          /* Counters of one monitor only grow, and consistently; a
           * difference that breaks the rules of the histogram shows they
           * do not. The rest holds: the groups are those of @self. */
          if (G_UNLIKELY (!validate_histogram (delta, i, &local_error)))
            {
              g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH,
                           "the snapshots do not come from the same monitor: "
                           "their difference has %s",
                           local_error->message);
              return NULL;
            }
        }

      g_ptr_array_add (fields.groups, g_steal_pointer (&delta));
    }

  {
    PerfmonSnapshot *delta = snapshot_new_take (fields.timestamp, fields.wall_time, fields.interval,
                                                (guint) fields.pid, self->process_name, fields.user_time,
                                                fields.system_time, g_steal_pointer (&fields.groups));

    /* The names are @self's: so are the modules they refer to. */
    _perfmon_snapshot_set_modules (delta, _perfmon_snapshot_dup_modules (self));
    return delta;
  }
}
