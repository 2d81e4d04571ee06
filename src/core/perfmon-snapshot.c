/* perfmon-snapshot.c: an immutable picture of a monitor's groups
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdarg.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "perfmon-error.h"
#include "perfmon-group-stats-private.h"
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
 *   ]
 * }
 * ```
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
 * Data read from JSON or a #GVariant is checked: `version` must be 1,
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

/* The JSON names of the group kinds, part of the format: they must not
 * follow renames of the enumeration. */
static const char * const kind_names[] = {
  [PERFMON_GROUP_KIND_THREAD] = "thread",
  [PERFMON_GROUP_KIND_WINDOW] = "window",
  [PERFMON_GROUP_KIND_ADDON] = "addon",
  [PERFMON_GROUP_KIND_COMPARTMENT] = "compartment",
};

#define N_KINDS G_N_ELEMENTS (kind_names)

G_STATIC_ASSERT (N_KINDS == PERFMON_GROUP_KIND_COMPARTMENT + 1);

static const char *
kind_name (PerfmonGroupKind kind)
{
  /* Valid snapshots only hold valid kinds; see _perfmon_snapshot_new(). */
  return (guint) kind < N_KINDS ? kind_names[kind] : "invalid kind";
}

/* PERFMON_SNAPSHOT_VARIANT_TYPE without its last member, the wall time:
 * what processes built before it send. */
#define SNAPSHOT_VARIANT_TYPE_NO_WALL_TIME "(uxxusttatauasatasauatatatat)"

/* A snapshot nests four levels deep; see json_prescan(). */
#define MAX_JSON_DEPTH 128

struct _PerfmonSnapshot
{
  GObject     parent_instance;

  gint64      timestamp;
  gint64      wall_time;
  gint64      interval;
  guint       pid;
  char       *process_name;
  guint64     user_time;
  guint64     system_time;
  GPtrArray  *groups;        /* of PerfmonGroupStats */
  GHashTable *groups_by_id;  /* &stats->id → stats, borrowed from groups */
};

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

/* What parsing JSON or a GVariant produces, and what validate_fields()
 * checks: one set of rules whatever the source. */
typedef struct
{
  gint64     timestamp;
  gint64     wall_time;
  gint64     interval;
  guint64    pid;
  char      *process_name;
  guint64    user_time;
  guint64    system_time;
  GPtrArray *groups;        /* of PerfmonGroupStats */
} SnapshotFields;

static void
snapshot_fields_clear (SnapshotFields *fields)
{
  g_clear_pointer (&fields->process_name, g_free);
  g_clear_pointer (&fields->groups, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (SnapshotFields, snapshot_fields_clear)

/* Sets a PERFMON_ERROR_INVALID_DATA error about the member @member of
 * @prefix ("groups[3]"); either may be NULL. Returns FALSE. */
static gboolean set_field_error (GError     **error,
                                 const char  *prefix,
                                 const char  *member,
                                 const char  *format,
                                 ...) G_GNUC_PRINTF (4, 5);

static gboolean
set_field_error (GError     **error,
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

static gboolean
set_durations_length_error (GError     **error,
                            const char  *prefix,
                            gsize        length)
{
  return set_field_error (error, prefix, "durations",
                          "expected an array of %d non-negative integers, got %"
                          G_GSIZE_FORMAT " elements",
                          PERFMON_N_DURATIONS, length);
}

static gboolean
check_version (guint64   version,
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

static gboolean
validate_group (const PerfmonGroupStats  *stats,
                const char               *prefix,
                GError                  **error)
{
  if ((guint) stats->kind >= N_KINDS)
    return set_field_error (error, prefix, "kind",
                            "expected an integer in [0, %u], got %u",
                            (guint) N_KINDS - 1, (guint) stats->kind);

  if (!g_utf8_validate (stats->name, -1, NULL))
    return set_field_error (error, prefix, "name", "expected a UTF-8 string");

  if (stats->addon_id != NULL && !g_utf8_validate (stats->addon_id, -1, NULL))
    return set_field_error (error, prefix, "addon_id", "expected a UTF-8 string");

  if (stats->durations[0] > stats->ticks)
    return set_field_error (error, prefix, "durations",
                            "durations[0] = %" G_GUINT64_FORMAT " exceeds ticks = %"
                            G_GUINT64_FORMAT ": every iteration over 1 ms is counted in ticks",
                            stats->durations[0], stats->ticks);

  for (guint i = 1; i < PERFMON_N_DURATIONS; i++)
    {
      if (stats->durations[i] > stats->durations[i - 1])
        return set_field_error (error, prefix, "durations",
                                "durations[%u] = %" G_GUINT64_FORMAT " exceeds durations[%u] = %"
                                G_GUINT64_FORMAT ": an iteration over %u ms is also over %u ms",
                                i, stats->durations[i], i - 1, stats->durations[i - 1],
                                1u << i, 1u << (i - 1));
    }

  return TRUE;
}

/* The checks that do not depend on where the data came from. */
static gboolean
validate_fields (const SnapshotFields  *fields,
                 GError               **error)
{
  g_autoptr(GHashTable) index_by_id = NULL;

  if (fields->timestamp < 0)
    return set_field_error (error, NULL, "timestamp",
                            "expected a non-negative integer, got %" G_GINT64_FORMAT,
                            fields->timestamp);

  if (fields->wall_time < 0)
    return set_field_error (error, NULL, "wall_time",
                            "expected a non-negative integer, got %" G_GINT64_FORMAT,
                            fields->wall_time);

  if (fields->interval < 0)
    return set_field_error (error, NULL, "interval",
                            "expected a non-negative integer, got %" G_GINT64_FORMAT,
                            fields->interval);

  if (fields->pid < 1 || fields->pid > G_MAXUINT)
    return set_field_error (error, NULL, "pid",
                            "expected an integer in [1, %u], got %" G_GUINT64_FORMAT,
                            G_MAXUINT, fields->pid);

  if (!g_utf8_validate (fields->process_name, -1, NULL))
    return set_field_error (error, NULL, "process_name", "expected a UTF-8 string");

  index_by_id = g_hash_table_new (g_int64_hash, g_int64_equal);

  for (guint i = 0; i < fields->groups->len; i++)
    {
      const PerfmonGroupStats *stats = g_ptr_array_index (fields->groups, i);
      char prefix[32];
      gpointer other;

      g_snprintf (prefix, sizeof prefix, "groups[%u]", i);

      if (!validate_group (stats, prefix, error))
        return FALSE;

      if (g_hash_table_lookup_extended (index_by_id, &stats->id, NULL, &other))
        return set_field_error (error, prefix, "id",
                                "duplicate id %" G_GUINT64_FORMAT ", already the id of groups[%u]",
                                stats->id, GPOINTER_TO_UINT (other));

      g_hash_table_insert (index_by_id, (gpointer) &stats->id, GUINT_TO_POINTER (i));
    }

  return TRUE;
}

/* Takes @groups. The data must have passed validate_fields(). */
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

  for (guint i = 0; i < groups->len; i++)
    {
      PerfmonGroupStats *stats = g_ptr_array_index (groups, i);

      /* Ids are unique in valid data; keep the first one regardless. */
      if (!g_hash_table_contains (self->groups_by_id, &stats->id))
        g_hash_table_insert (self->groups_by_id, &stats->id, stats);
    }

  return self;
}

static PerfmonSnapshot *
snapshot_new_from_fields (SnapshotFields *fields)
{
  return snapshot_new_take (fields->timestamp, fields->wall_time, fields->interval, (guint) fields->pid,
                            fields->process_name, fields->user_time, fields->system_time,
                            g_steal_pointer (&fields->groups));
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
  g_autoptr(GError) error = NULL;
  SnapshotFields fields;

  g_return_val_if_fail (timestamp >= 0, NULL);
  g_return_val_if_fail (interval >= 0, NULL);
  g_return_val_if_fail (groups != NULL, NULL);

  /* Borrowed: not cleared. */
  fields = (SnapshotFields) {
    .timestamp = timestamp,
    .wall_time = wall_time,
    .interval = interval,
    .pid = pid,
    .process_name = (char *) (process_name != NULL ? process_name : ""),
    .user_time = user_time,
    .system_time = system_time,
    .groups = groups,
  };

  /* Whatever a snapshot holds must read back from its JSON and variant
   * forms: data that would not is a bug of the caller. */
  if (!validate_fields (&fields, &error))
    g_critical ("%s: snapshot data would not read back: %s", G_STRFUNC, error->message);

  return snapshot_new_take (timestamp, wall_time, interval, pid, process_name,
                            user_time, system_time, groups);
}

static void
perfmon_snapshot_finalize (GObject *object)
{
  PerfmonSnapshot *self = PERFMON_SNAPSHOT (object);

  g_clear_pointer (&self->groups_by_id, g_hash_table_unref);
  g_clear_pointer (&self->groups, g_ptr_array_unref);
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
  self->groups_by_id = g_hash_table_new (g_int64_hash, g_int64_equal);
}

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

  return g_hash_table_lookup (self->groups_by_id, &id);
}

/* Sets *@delta to @newer - @older, which must not be negative. @group is
 * NULL for the counters of the whole process; @index is -1 unless @field
 * is an array. */
static gboolean
subtract_counter (guint64                  *delta,
                  guint64                   newer,
                  guint64                   older,
                  const PerfmonGroupStats  *group,
                  const char               *field,
                  int                       index,
                  GError                  **error)
{
  g_autoptr(GString) what = NULL;

  if (older <= newer)
    {
      *delta = newer - older;
      return TRUE;
    }

  what = g_string_new (NULL);
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
                         delta, "ticks", -1, error))
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
  g_auto(SnapshotFields) fields = { 0, };
  g_autoptr(GError) local_error = NULL;

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
  fields.process_name = g_strdup (self->process_name);

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
      const PerfmonGroupStats *before = perfmon_snapshot_lookup (older, newer->id);
      g_autoptr(PerfmonGroupStats) delta = _perfmon_group_stats_copy (newer);

      if (before != NULL)
        {
          if (before->kind != newer->kind)
            {
              g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH,
                           "group %" G_GUINT64_FORMAT " is a %s in the older snapshot "
                           "but a %s in the newer one",
                           newer->id, kind_name (before->kind), kind_name (newer->kind));
              return NULL;
            }

          if (!subtract_group (delta, before, error))
            return NULL;
        }

      g_ptr_array_add (fields.groups, g_steal_pointer (&delta));
    }

  /* Counters of one monitor only grow, and consistently; a difference
   * that breaks the rules of the histogram shows they do not. */
  if (!validate_fields (&fields, &local_error))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH,
                   "the snapshots do not come from the same monitor: "
                   "their difference has %s",
                   local_error->message);
      return NULL;
    }

  return snapshot_new_from_fields (&fields);
}

/* The writer. JsonBuilder would build a tree of some 150,000 nodes, with a
 * hash table per group, for a snapshot of 10,000 groups, and take three
 * times the 20 ms budget of snapshot + subtract + to_json. The format is
 * flat and fixed, so it is written straight into one buffer; reading stays
 * with json-glib, and the fuzz targets check that json-glib reads back
 * exactly what is written here. */

static void
append_u64_digits (GString *out,
                   guint64  value)
{
  char digits[20];
  int n = 0;

  do
    {
      digits[n++] = (char) ('0' + value % 10);
      value /= 10;
    }
  while (value != 0);

  while (n > 0)
    g_string_append_c (out, digits[--n]);
}

/* JSON integers of json-glib are signed 64-bit numbers: larger values are
 * written as strings of decimal digits. */
static void
append_u64 (GString *out,
            guint64  value)
{
  if (value <= G_MAXINT64)
    {
      append_u64_digits (out, value);
    }
  else
    {
      g_string_append_c (out, '"');
      append_u64_digits (out, value);
      g_string_append_c (out, '"');
    }
}

/* @text is valid UTF-8 (checked where groups are made and read): only the
 * characters JSON requires are escaped, as json-glib's generator does. */
static void
append_string (GString    *out,
               const char *text)
{
  const char *run = text;
  const char *p;

  g_string_append_c (out, '"');
  for (p = text; *p != '\0'; p++)
    {
      guchar c = (guchar) *p;

      if (c >= 0x20 && c != '"' && c != '\\')
        continue;

      g_string_append_len (out, run, p - run);
      run = p + 1;
      switch (c)
        {
        case '"': g_string_append (out, "\\\""); break;
        case '\\': g_string_append (out, "\\\\"); break;
        case '\b': g_string_append (out, "\\b"); break;
        case '\f': g_string_append (out, "\\f"); break;
        case '\n': g_string_append (out, "\\n"); break;
        case '\r': g_string_append (out, "\\r"); break;
        case '\t': g_string_append (out, "\\t"); break;
        default: g_string_append_printf (out, "\\u%04x", c); break;
        }
    }
  g_string_append_len (out, run, p - run);
  g_string_append_c (out, '"');
}

static void
append_member (GString    *out,
               const char *name)
{
  g_string_append_c (out, '"');
  g_string_append (out, name);
  g_string_append (out, "\":");
}

static void
append_group (GString                 *out,
              const PerfmonGroupStats *stats)
{
  append_member (out, "id");
  append_u64 (out, stats->id);
  g_string_append_c (out, ',');
  append_member (out, "kind");
  append_string (out, kind_name (stats->kind));
  g_string_append_c (out, ',');
  append_member (out, "name");
  append_string (out, stats->name);
  g_string_append_c (out, ',');
  append_member (out, "window_id");
  append_u64 (out, stats->window_id);
  g_string_append_c (out, ',');
  append_member (out, "addon_id");
  if (stats->addon_id != NULL)
    append_string (out, stats->addon_id);
  else
    g_string_append (out, "null");
  g_string_append_c (out, ',');
  append_member (out, "cpu_time");
  append_u64 (out, stats->cpu_time);
  g_string_append_c (out, ',');
  append_member (out, "blocked_time");
  append_u64 (out, stats->blocked_time);
  g_string_append_c (out, ',');
  append_member (out, "ticks");
  append_u64 (out, stats->ticks);
  g_string_append_c (out, ',');
  append_member (out, "durations");
  g_string_append_c (out, '[');
  for (guint i = 0; i < PERFMON_N_DURATIONS; i++)
    {
      if (i > 0)
        g_string_append_c (out, ',');
      append_u64 (out, stats->durations[i]);
    }
  g_string_append_c (out, ']');
}

/**
 * perfmon_snapshot_to_json:
 * @self: a `PerfmonSnapshot`
 *
 * Serializes @self to compact JSON, in the format described in
 * [class@Perfmon.Snapshot]. The output depends only on the contents of the
 * snapshot: equal snapshots give identical strings.
 *
 * Returns: (transfer full): a JSON document
 *
 * Since: 0.1
 */
char *
perfmon_snapshot_to_json (PerfmonSnapshot *self)
{
  GString *out;

  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  /* About 200 bytes per group: one allocation for typical snapshots. */
  out = g_string_sized_new (256 + 256 * (gsize) self->groups->len);

  g_string_append (out, "{\"version\":");
  append_u64 (out, PERFMON_SNAPSHOT_FORMAT_VERSION);
  g_string_append (out, ",\"timestamp\":");
  append_u64 (out, (guint64) self->timestamp);
  /* Not known: not written, as before wall times were. */
  if (self->wall_time != 0)
    {
      g_string_append (out, ",\"wall_time\":");
      append_u64 (out, (guint64) self->wall_time);
    }
  g_string_append (out, ",\"interval\":");
  append_u64 (out, (guint64) self->interval);
  g_string_append (out, ",\"pid\":");
  append_u64 (out, self->pid);
  g_string_append (out, ",\"process_name\":");
  append_string (out, self->process_name);
  g_string_append (out, ",\"user_time\":");
  append_u64 (out, self->user_time);
  g_string_append (out, ",\"system_time\":");
  append_u64 (out, self->system_time);
  g_string_append (out, ",\"groups\":[");
  for (guint i = 0; i < self->groups->len; i++)
    {
      if (i > 0)
        g_string_append_c (out, ',');
      g_string_append_c (out, '{');
      append_group (out, g_ptr_array_index (self->groups, i));
      g_string_append_c (out, '}');
    }
  g_string_append (out, "]}");

  return g_string_free (out, FALSE);
}

/* json-glib 1.6 parses and frees nested arrays and objects recursively with
 * no limit: a few hundred thousand '[' overflow the stack. It also accepts
 * comments and single-quoted strings, which could hide brackets from a
 * simple count. So, before json-glib sees @json: refuse a '/' or a '\''
 * outside a string (neither is JSON) and count the nesting outside
 * double-quoted strings, whose rules are simple and the same everywhere. */
static gboolean
json_prescan (const char  *json,
              GError     **error)
{
  guint depth = 0;

  for (const char *p = json; *p != '\0'; p++)
    {
      switch (*p)
        {
        case '[':
        case '{':
          if (++depth > MAX_JSON_DEPTH)
            return set_field_error (error, NULL, "(root)",
                                    "arrays and objects nested deeper than %d levels",
                                    MAX_JSON_DEPTH);
          break;

        case ']':
        case '}':
          if (depth > 0)
            depth--;
          break;

        case '"':
          /* A backslash escapes at least the next byte. An unterminated
           * string is json-glib's error to report. */
          for (p++; *p != '"'; p++)
            {
              if (*p == '\\')
                p++;
              if (*p == '\0')
                return TRUE;
            }
          break;

        case '/':
        case '\'':
          return set_field_error (error, NULL, "(root)",
                                  "not valid JSON: comments and single-quoted strings are not allowed");

        default:
          break;
        }
    }

  return TRUE;
}

static const char *
describe_node (JsonNode *node)
{
  switch (JSON_NODE_TYPE (node))
    {
    case JSON_NODE_OBJECT:
      return "an object";

    case JSON_NODE_ARRAY:
      return "an array";

    case JSON_NODE_NULL:
      return "null";

    case JSON_NODE_VALUE:
      switch (json_node_get_value_type (node))
        {
        case G_TYPE_INT64:
          return "an integer";

        case G_TYPE_DOUBLE:
          return "a number with a fraction or an exponent";

        case G_TYPE_BOOLEAN:
          return "a boolean";

        case G_TYPE_STRING:
          return "a string";

        default:
          break;
        }
      break;

    default:
      break;
    }

  return "an unknown value";
}

static JsonNode *
get_member (JsonObject  *object,
            const char  *prefix,
            const char  *member,
            GError     **error)
{
  JsonNode *node = json_object_get_member (object, member);

  if (node == NULL)
    set_field_error (error, prefix, member, "missing required member");

  return node;
}

static gboolean
json_node_holds_type (JsonNode *node,
                      GType     type)
{
  return JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == type;
}

/* A non-negative integer, or a string of decimal digits for the values
 * that JSON integers of json-glib cannot hold. */
static gboolean
read_u64 (JsonNode    *node,
          const char  *prefix,
          const char  *member,
          guint64     *value,
          GError     **error)
{
  if (json_node_holds_type (node, G_TYPE_INT64))
    {
      gint64 number = json_node_get_int (node);

      if (number < 0)
        return set_field_error (error, prefix, member,
                                "expected a non-negative integer, got %" G_GINT64_FORMAT,
                                number);

      *value = (guint64) number;
      return TRUE;
    }

  if (json_node_holds_type (node, G_TYPE_STRING))
    {
      if (!g_ascii_string_to_unsigned (json_node_get_string (node), 10, 0, G_MAXUINT64,
                                       value, NULL))
        return set_field_error (error, prefix, member,
                                "expected a non-negative integer, got a string that is not "
                                "a decimal number in [0, %" G_GUINT64_FORMAT "]",
                                G_MAXUINT64);

      return TRUE;
    }

  return set_field_error (error, prefix, member,
                          "expected a non-negative integer, got %s",
                          describe_node (node));
}

static gboolean
read_u64_member (JsonObject  *object,
                 const char  *prefix,
                 const char  *member,
                 guint64     *value,
                 GError     **error)
{
  JsonNode *node = get_member (object, prefix, member, error);

  return node != NULL && read_u64 (node, prefix, member, value, error);
}

static gboolean
read_i64_member (JsonObject  *object,
                 const char  *prefix,
                 const char  *member,
                 gint64      *value,
                 GError     **error)
{
  JsonNode *node = get_member (object, prefix, member, error);

  if (node == NULL)
    return FALSE;

  if (!json_node_holds_type (node, G_TYPE_INT64))
    return set_field_error (error, prefix, member, "expected an integer, got %s",
                            describe_node (node));

  *value = json_node_get_int (node);

  return TRUE;
}

static gboolean
read_string_member (JsonObject  *object,
                    const char  *prefix,
                    const char  *member,
                    gboolean     nullable,
                    char       **value,
                    GError     **error)
{
  JsonNode *node = get_member (object, prefix, member, error);

  if (node == NULL)
    return FALSE;

  if (nullable && JSON_NODE_HOLDS_NULL (node))
    {
      *value = NULL;
      return TRUE;
    }

  if (!json_node_holds_type (node, G_TYPE_STRING))
    return set_field_error (error, prefix, member, "expected a string%s, got %s",
                            nullable ? " or null" : "", describe_node (node));

  *value = json_node_dup_string (node);

  return TRUE;
}

static gboolean
read_kind_member (JsonObject       *object,
                  const char       *prefix,
                  PerfmonGroupKind *kind,
                  GError          **error)
{
  g_autofree char *name = NULL;

  if (!read_string_member (object, prefix, "kind", FALSE, &name, error))
    return FALSE;

  for (guint i = 0; i < N_KINDS; i++)
    {
      if (g_str_equal (name, kind_names[i]))
        {
          *kind = (PerfmonGroupKind) i;
          return TRUE;
        }
    }

  return set_field_error (error, prefix, "kind",
                          "expected \"thread\", \"window\", \"addon\" or \"compartment\"");
}

static PerfmonGroupStats *
group_from_json (JsonNode  *node,
                 guint      index,
                 GError   **error)
{
  g_autoptr(PerfmonGroupStats) stats = NULL;
  g_autofree char *name = NULL;
  g_autofree char *addon_id = NULL;
  PerfmonGroupKind kind = PERFMON_GROUP_KIND_THREAD;
  guint64 id = 0, window_id = 0;
  JsonObject *object;
  JsonNode *durations_node;
  JsonArray *durations;
  char prefix[32];

  g_snprintf (prefix, sizeof prefix, "groups[%u]", index);

  if (!JSON_NODE_HOLDS_OBJECT (node))
    {
      set_field_error (error, NULL, prefix, "expected an object, got %s", describe_node (node));
      return NULL;
    }

  object = json_node_get_object (node);

  if (!read_u64_member (object, prefix, "id", &id, error) ||
      !read_kind_member (object, prefix, &kind, error) ||
      !read_string_member (object, prefix, "name", FALSE, &name, error) ||
      !read_u64_member (object, prefix, "window_id", &window_id, error) ||
      !read_string_member (object, prefix, "addon_id", TRUE, &addon_id, error))
    return NULL;

  stats = _perfmon_group_stats_new (id, kind, name, window_id, addon_id);

  if (!read_u64_member (object, prefix, "cpu_time", &stats->cpu_time, error) ||
      !read_u64_member (object, prefix, "blocked_time", &stats->blocked_time, error) ||
      !read_u64_member (object, prefix, "ticks", &stats->ticks, error))
    return NULL;

  if (!(durations_node = get_member (object, prefix, "durations", error)))
    return NULL;

  if (!JSON_NODE_HOLDS_ARRAY (durations_node))
    {
      set_field_error (error, prefix, "durations",
                       "expected an array of %d non-negative integers, got %s",
                       PERFMON_N_DURATIONS, describe_node (durations_node));
      return NULL;
    }

  durations = json_node_get_array (durations_node);

  if (json_array_get_length (durations) != PERFMON_N_DURATIONS)
    {
      set_durations_length_error (error, prefix, json_array_get_length (durations));
      return NULL;
    }

  for (guint i = 0; i < PERFMON_N_DURATIONS; i++)
    {
      char member[32];

      g_snprintf (member, sizeof member, "durations[%u]", i);
      if (!read_u64 (json_array_get_element (durations, i), prefix, member,
                     &stats->durations[i], error))
        return NULL;
    }

  return g_steal_pointer (&stats);
}

/**
 * perfmon_snapshot_new_from_json:
 * @json: a JSON document, as written by perfmon_snapshot_to_json()
 * @error: return location for a #GError
 *
 * Reads a snapshot back from its JSON form, described in
 * [class@Perfmon.Snapshot].
 *
 * The document is checked: if it is not a valid snapshot, this fails with
 * %PERFMON_ERROR_INVALID_DATA and a message that names the offending
 * member, or with %PERFMON_ERROR_UNSUPPORTED_VERSION if its format version
 * is not 1.
 *
 * Returns: (transfer full): a new snapshot
 *
 * Since: 0.1
 */
PerfmonSnapshot *
perfmon_snapshot_new_from_json (const char  *json,
                                GError     **error)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(GError) local_error = NULL;
  g_auto(SnapshotFields) fields = { 0, };
  JsonNode *root, *groups_node;
  JsonObject *object;
  JsonArray *groups;
  guint64 version = 0;

  g_return_val_if_fail (json != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!json_prescan (json, error))
    return NULL;

  parser = json_parser_new_immutable ();
  if (!json_parser_load_from_data (parser, json, -1, &local_error))
    {
      set_field_error (error, NULL, "(root)", "not valid JSON: %s", local_error->message);
      return NULL;
    }

  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      set_field_error (error, NULL, "(root)", "expected an object, got %s",
                       root != NULL ? describe_node (root) : "an empty document");
      return NULL;
    }

  object = json_node_get_object (root);

  /* The version first: another version may have other members. */
  if (!read_u64_member (object, NULL, "version", &version, error) ||
      !check_version (version, error))
    return NULL;

  if (!read_i64_member (object, NULL, "timestamp", &fields.timestamp, error) ||
      (json_object_has_member (object, "wall_time") &&
       !read_i64_member (object, NULL, "wall_time", &fields.wall_time, error)) ||
      !read_i64_member (object, NULL, "interval", &fields.interval, error) ||
      !read_u64_member (object, NULL, "pid", &fields.pid, error) ||
      !read_string_member (object, NULL, "process_name", FALSE, &fields.process_name, error) ||
      !read_u64_member (object, NULL, "user_time", &fields.user_time, error) ||
      !read_u64_member (object, NULL, "system_time", &fields.system_time, error))
    return NULL;

  if (!(groups_node = get_member (object, NULL, "groups", error)))
    return NULL;

  if (!JSON_NODE_HOLDS_ARRAY (groups_node))
    {
      set_field_error (error, NULL, "groups", "expected an array, got %s",
                       describe_node (groups_node));
      return NULL;
    }

  groups = json_node_get_array (groups_node);
  fields.groups = g_ptr_array_new_full (json_array_get_length (groups),
                                        (GDestroyNotify) perfmon_group_stats_unref);

  for (guint i = 0; i < json_array_get_length (groups); i++)
    {
      PerfmonGroupStats *stats = group_from_json (json_array_get_element (groups, i), i, error);

      if (stats == NULL)
        return NULL;

      g_ptr_array_add (fields.groups, stats);
    }

  if (!validate_fields (&fields, error))
    return NULL;

  return snapshot_new_from_fields (&fields);
}

/**
 * perfmon_snapshot_to_variant:
 * @self: a `PerfmonSnapshot`
 *
 * Serializes @self to a #GVariant of type %PERFMON_SNAPSHOT_VARIANT_TYPE,
 * in normal form: for example to send it over D-Bus.
 *
 * Returns: (transfer full): a new, non-floating #GVariant
 *
 * Since: 0.1
 */
GVariant *
perfmon_snapshot_to_variant (PerfmonSnapshot *self)
{
  guint n;
  g_autofree guint64 *ids = NULL;
  g_autofree guint32 *kinds = NULL;
  g_autofree const char **names = NULL;
  g_autofree guint64 *window_ids = NULL;
  g_autofree guint32 *addon_indexes = NULL;
  g_autofree guint64 *cpu_times = NULL;
  g_autofree guint64 *blocked_times = NULL;
  g_autofree guint64 *ticks = NULL;
  g_autofree guint64 *durations = NULL;
  g_autoptr(GPtrArray) addon_ids = NULL;
  g_autoptr(GHashTable) addon_index_of = NULL;

  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  /* Columns, so that almost everything is an array of fixed-size numbers,
   * which GDBus copies in one go: for an array of tuples it builds and
   * walks a GVariant per member of every group. Sending and receiving
   * 1,000 groups took GDBus 2.4 ms as tuples, 0.24 ms as columns, and
   * making and reading the variant itself ten times less as well. */
  n = self->groups->len;
  ids = g_new (guint64, n);
  kinds = g_new (guint32, n);
  names = g_new (const char *, n + 1);
  window_ids = g_new (guint64, n);
  addon_indexes = g_new (guint32, n);
  cpu_times = g_new (guint64, n);
  blocked_times = g_new (guint64, n);
  ticks = g_new (guint64, n);
  durations = g_new (guint64, (gsize) n * PERFMON_N_DURATIONS);
  addon_ids = g_ptr_array_new ();
  addon_index_of = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < n; i++)
    {
      const PerfmonGroupStats *stats = g_ptr_array_index (self->groups, i);

      ids[i] = stats->id;
      kinds[i] = (guint32) stats->kind;
      names[i] = stats->name;
      window_ids[i] = stats->window_id;
      addon_indexes[i] = 0;
      if (stats->addon_id != NULL)
        {
          gpointer index;

          if (!g_hash_table_lookup_extended (addon_index_of, stats->addon_id, NULL, &index))
            {
              g_ptr_array_add (addon_ids, stats->addon_id);
              index = GUINT_TO_POINTER (addon_ids->len);
              g_hash_table_insert (addon_index_of, stats->addon_id, index);
            }
          addon_indexes[i] = GPOINTER_TO_UINT (index);
        }
      cpu_times[i] = stats->cpu_time;
      blocked_times[i] = stats->blocked_time;
      ticks[i] = stats->ticks;
      memcpy (&durations[(gsize) i * PERFMON_N_DURATIONS], stats->durations, sizeof stats->durations);
    }
  names[n] = NULL;

#define FIXED_ARRAY(type, data, count) \
  g_variant_new_fixed_array (type, data, count, sizeof *(data))

  return g_variant_ref_sink (g_variant_new ("(uxxustt@at@au@as@at@as@au@at@at@at@atx)",
                                            (guint32) PERFMON_SNAPSHOT_FORMAT_VERSION,
                                            self->timestamp,
                                            self->interval,
                                            (guint32) self->pid,
                                            self->process_name,
                                            self->user_time,
                                            self->system_time,
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, ids, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT32, kinds, n),
                                            g_variant_new_strv (names, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, window_ids, n),
                                            g_variant_new_strv ((const char * const *) addon_ids->pdata,
                                                                addon_ids->len),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT32, addon_indexes, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, cpu_times, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, blocked_times, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, ticks, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, durations,
                                                         (gsize) n * PERFMON_N_DURATIONS),
                                            self->wall_time));
#undef FIXED_ARRAY
}

/**
 * perfmon_snapshot_new_from_variant:
 * @variant: a #GVariant of type %PERFMON_SNAPSHOT_VARIANT_TYPE, as returned
 *   by perfmon_snapshot_to_variant()
 * @error: return location for a #GError
 *
 * Reads a snapshot back from its #GVariant form. @variant may come from an
 * untrusted source, such as g_variant_new_from_bytes() on data read from a
 * peer.
 *
 * The data is checked like that of perfmon_snapshot_new_from_json(): if the
 * variant does not have the expected type or is not a valid snapshot, this
 * fails with %PERFMON_ERROR_INVALID_DATA and a message that names the
 * offending member, or with %PERFMON_ERROR_UNSUPPORTED_VERSION if its
 * format version is not 1.
 *
 * Returns: (transfer full): a new snapshot
 *
 * Since: 0.1
 */
PerfmonSnapshot *
perfmon_snapshot_new_from_variant (GVariant  *variant,
                                   GError   **error)
{
  g_auto(SnapshotFields) fields = { 0, };
  g_autoptr(GVariant) ids_v = NULL, kinds_v = NULL, names_v = NULL, window_ids_v = NULL;
  g_autoptr(GVariant) addon_ids_v = NULL, addon_indexes_v = NULL, cpu_times_v = NULL;
  g_autoptr(GVariant) blocked_times_v = NULL, ticks_v = NULL, durations_v = NULL;
  g_autofree const char **names = NULL;
  g_autofree const char **addon_ids = NULL;
  const guint64 *ids, *window_ids, *cpu_times, *blocked_times, *ticks, *durations;
  const guint32 *kinds, *addon_indexes;
  gsize n, n_addon_ids, length;
  guint32 version, pid, next_addon_index = 1;

  g_return_val_if_fail (variant != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (g_variant_type_equal (g_variant_get_type (variant), G_VARIANT_TYPE (SNAPSHOT_VARIANT_TYPE_NO_WALL_TIME)))
    {
      /* The form of processes built before snapshots had a wall time:
       * the same but the last member. */
      g_autoptr(GVariant) wall_time = g_variant_new_int64 (0);
      g_autoptr(GVariant) extended = NULL;
      g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);

      for (gsize i = 0; i < g_variant_n_children (variant); i++)
        g_ptr_array_add (children, g_variant_get_child_value (variant, i));
      g_ptr_array_add (children, g_variant_ref_sink (g_steal_pointer (&wall_time)));
      extended = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) children->pdata, children->len));
      return perfmon_snapshot_new_from_variant (extended, error);
    }

  if (!g_variant_type_equal (g_variant_get_type (variant),
                             G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE)))
    {
      set_field_error (error, NULL, "(root)", "expected a variant of type %s, got %s",
                       PERFMON_SNAPSHOT_VARIANT_TYPE, g_variant_get_type_string (variant));
      return NULL;
    }

  /* No '&' format: g_variant_get() would first serialise a variant in
   * tree form, which is how GDBus hands it over. */
  g_variant_get (variant, "(uxxustt@at@au@as@at@as@au@at@at@at@atx)",
                 &version,
                 &fields.timestamp,
                 &fields.interval,
                 &pid,
                 &fields.process_name,
                 &fields.user_time,
                 &fields.system_time,
                 &ids_v, &kinds_v, &names_v, &window_ids_v, &addon_ids_v, &addon_indexes_v,
                 &cpu_times_v, &blocked_times_v, &ticks_v, &durations_v,
                 &fields.wall_time);

  if (!check_version (version, error))
    return NULL;
  fields.pid = pid;

  /* Every column has one entry per group (durations PERFMON_N_DURATIONS). */
  ids = g_variant_get_fixed_array (ids_v, &n, sizeof (guint64));
  {
    const struct {
      const char *member;
      GVariant   *column;
      gsize       per_group;
    } columns[] = {
      { "kinds", kinds_v, 1 },
      { "names", names_v, 1 },
      { "window_ids", window_ids_v, 1 },
      { "addon_indexes", addon_indexes_v, 1 },
      { "cpu_times", cpu_times_v, 1 },
      { "blocked_times", blocked_times_v, 1 },
      { "ticks", ticks_v, 1 },
      { "durations", durations_v, PERFMON_N_DURATIONS },
    };

    for (guint c = 0; c < G_N_ELEMENTS (columns); c++)
    {
      gsize expected = n * columns[c].per_group;

      length = g_variant_n_children (columns[c].column);
      if (length != expected)
        {
          set_field_error (error, NULL, columns[c].member,
                           "expected %" G_GSIZE_FORMAT " elements (%" G_GSIZE_FORMAT " per id, %"
                           G_GSIZE_FORMAT " ids), got %" G_GSIZE_FORMAT,
                           expected, columns[c].per_group, n, length);
          return NULL;
        }
    }
  }

  kinds = g_variant_get_fixed_array (kinds_v, &length, sizeof (guint32));
  names = g_variant_get_strv (names_v, NULL);
  window_ids = g_variant_get_fixed_array (window_ids_v, &length, sizeof (guint64));
  addon_ids = g_variant_get_strv (addon_ids_v, &n_addon_ids);
  addon_indexes = g_variant_get_fixed_array (addon_indexes_v, &length, sizeof (guint32));
  cpu_times = g_variant_get_fixed_array (cpu_times_v, &length, sizeof (guint64));
  blocked_times = g_variant_get_fixed_array (blocked_times_v, &length, sizeof (guint64));
  ticks = g_variant_get_fixed_array (ticks_v, &length, sizeof (guint64));
  durations = g_variant_get_fixed_array (durations_v, &length, sizeof (guint64));

  fields.groups = g_ptr_array_new_full (n, (GDestroyNotify) perfmon_group_stats_unref);
  for (gsize i = 0; i < n; i++)
    {
      PerfmonGroupStats *stats;

      /* The table lists each add-on id once, in the order of the groups
       * that first use it, as perfmon_snapshot_to_variant() writes it:
       * any other table would not read back to the same variant. */
      if (addon_indexes[i] > next_addon_index || addon_indexes[i] > n_addon_ids)
        {
          char prefix[32];

          g_snprintf (prefix, sizeof prefix, "groups[%" G_GSIZE_FORMAT "]", i);
          set_field_error (error, prefix, "addon_id",
                           "addon_indexes[%" G_GSIZE_FORMAT "] = %u, expected 0 (none) or an index "
                           "in [1, %u] of addon_ids (%" G_GSIZE_FORMAT " entries, each first used "
                           "in table order)",
                           i, addon_indexes[i], MIN (next_addon_index, (guint32) MIN (n_addon_ids, G_MAXUINT32)),
                           n_addon_ids);
          return NULL;
        }
      if (addon_indexes[i] == next_addon_index)
        next_addon_index++;

      stats = _perfmon_group_stats_new (ids[i], (PerfmonGroupKind) kinds[i], names[i], window_ids[i],
                                        addon_indexes[i] != 0 ? addon_ids[addon_indexes[i] - 1] : NULL);
      stats->cpu_time = cpu_times[i];
      stats->blocked_time = blocked_times[i];
      stats->ticks = ticks[i];
      memcpy (stats->durations, &durations[i * PERFMON_N_DURATIONS], sizeof stats->durations);
      g_ptr_array_add (fields.groups, stats);
    }

  if (next_addon_index - 1 != n_addon_ids)
    {
      set_field_error (error, NULL, "addon_ids",
                       "%" G_GSIZE_FORMAT " entries, but groups use %u", n_addon_ids, next_addon_index - 1);
      return NULL;
    }
  {
    /* Entry → its index: a set, not a pairwise scan, for untrusted input
     * of thousands of add-ons. */
    g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

    for (gsize i = 0; i < n_addon_ids; i++)
      {
        gpointer first;

        if (g_hash_table_lookup_extended (seen, addon_ids[i], NULL, &first))
          {
            set_field_error (error, NULL, "addon_ids",
                             "entries %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT " are both \"%s\"",
                             (gsize) GPOINTER_TO_SIZE (first), i, addon_ids[i]);
            return NULL;
          }
        g_hash_table_insert (seen, (gpointer) addon_ids[i], GSIZE_TO_POINTER (i));
      }
  }

  if (!validate_fields (&fields, error))
    return NULL;

  return snapshot_new_from_fields (&fields);
}
