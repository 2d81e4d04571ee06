/* perfmon-snapshot-private.h: what the snapshot object, its JSON and
 * variant forms and its builder share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * perfmon-snapshot.c           the object, subtract, and the checks of data
 *                              that comes from outside the library
 * perfmon-snapshot-json.c      the JSON writer and reader
 * perfmon-snapshot-variant.c   the GVariant codec, both ways
 * perfmon-snapshot-builder.c   the public way to make one from counters
 */
#pragma once

#include "perfmon-group-stats-private.h"
#include "perfmon-recorded-module-private.h"
#include "perfmon-snapshot.h"

G_BEGIN_DECLS

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
  /* The modules that "module+0x…" names of @groups refer to, each once
   * (PerfmonRecordedModule); NULL or empty: none recorded. */
  GPtrArray  *modules;
  /* Lookup by id: by bisection when the ids increase along @groups, as
   * in the monitor's snapshots and their differences; otherwise through
   * a table built at the first lookup (g_once_init_enter()), since a
   * snapshot is shared between threads. &stats->id → stats. */
  gboolean    sorted_by_id;
  GHashTable *groups_by_id;
};

/* The current format version of to_json() and to_variant(). */
#define PERFMON_SNAPSHOT_FORMAT_VERSION 1

/* Takes ownership of @groups (element type PerfmonGroupStats, with a free
 * func). @interval is 0 for a snapshot of a live monitor and the time
 * between the two snapshots for a difference. @wall_time is the
 * wall-clock time (g_get_real_time()) of @timestamp, or 0 if not known.
 *
 * For the library's own data, which is valid by construction: group ids
 * unique, strings UTF-8. Only the histogram of each group is checked
 * (a comparison per bucket), with a critical warning, since a monitor
 * that breaks it has a bug. Data from outside goes through
 * _perfmon_snapshot_new_checked(). */
PerfmonSnapshot *_perfmon_snapshot_new (gint64      timestamp,
                                        gint64      wall_time,
                                        gint64      interval,
                                        guint       pid,
                                        const char *process_name,
                                        guint64     user_time,
                                        guint64     system_time,
                                        GPtrArray  *groups);

/* What reading JSON or a GVariant, or a builder, produces:
 * _perfmon_snapshot_new_checked() applies one set of rules whatever the
 * source. */
typedef struct
{
  gint64     timestamp;
  gint64     wall_time;
  gint64     interval;
  guint64    pid;
  char      *process_name;
  guint64    user_time;
  guint64    system_time;
  GPtrArray *groups;        /* of PerfmonGroupStats, with a free func */
  GPtrArray *modules;       /* of PerfmonRecordedModule, with a free func; NULL: none */
} PerfmonSnapshotFields;

void _perfmon_snapshot_fields_clear (PerfmonSnapshotFields *fields);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (PerfmonSnapshotFields, _perfmon_snapshot_fields_clear)

/* Checks untrusted @fields: on success, a snapshot that takes
 * @fields->groups; otherwise %NULL and a PERFMON_ERROR_INVALID_DATA error
 * that names the offending member. */
PerfmonSnapshot *_perfmon_snapshot_new_checked (PerfmonSnapshotFields  *fields,
                                                GError                **error);

/* Sets a PERFMON_ERROR_INVALID_DATA error about the member @member of
 * @prefix ("groups[3]"); either may be NULL. Returns FALSE. */
gboolean _perfmon_snapshot_set_field_error (GError     **error,
                                            const char  *prefix,
                                            const char  *member,
                                            const char  *format,
                                            ...) G_GNUC_PRINTF (4, 5);

/* Sets the modules that the names of @self refer to (takes @modules, of
 * PerfmonRecordedModule with a free func; NULL: none). Only on a snapshot
 * that no other thread has seen yet: the one just taken, before it is
 * serialised (dbus/ and the preload do, with stack/'s
 * _perfmon_modules_for_names()). */
void _perfmon_snapshot_set_modules (PerfmonSnapshot *self,
                                    GPtrArray       *modules);

/* perfmon_snapshot_to_json() with @modules (of PerfmonRecordedModule)
 * as the snapshot's: for a thread that holds a snapshot others share and
 * found its modules itself (the preload's checkpoint writer). */
char *_perfmon_snapshot_to_json_with_modules (PerfmonSnapshot *self,
                                              GPtrArray       *modules);

/* A copy of @self's modules, or NULL. */
GPtrArray *_perfmon_snapshot_dup_modules (PerfmonSnapshot *self);

gboolean _perfmon_snapshot_check_version (guint64   version,
                                          GError  **error);

/* Rules of the format that the variant's reader applies to its columns
 * too (perfmon_snapshot_check_variant() builds no groups): those of the
 * members other than the groups (@fields->groups is not read), the kind,
 * the sampled CPU time and the histogram of groups[@index]. */
gboolean _perfmon_snapshot_check_header    (const PerfmonSnapshotFields  *fields,
                                            GError                      **error);
gboolean _perfmon_snapshot_check_kind      (guint32                       kind,
                                            guint                         index,
                                            GError                      **error);
/* A group's sampled CPU time: 0 unless its @kind is an add-on. */
gboolean _perfmon_snapshot_check_sampled   (guint32                       kind,
                                            guint64                       sampled_cpu_time,
                                            guint                         index,
                                            GError                      **error);
gboolean _perfmon_snapshot_check_histogram (guint64                       ticks,
                                            const guint64                *durations,
                                            guint                         index,
                                            GError                      **error);
/* The modules' rules: at most PERFMON_RECORDED_MODULES_MAX, each valid,
 * names unique. */
gboolean _perfmon_snapshot_check_modules   (const PerfmonSnapshotFields  *fields,
                                            GError                      **error);

/* The kind named @name in the JSON form: perfmon_group_kind_to_string()
 * backwards. */
gboolean    _perfmon_snapshot_kind_from_name (const char       *name,
                                              PerfmonGroupKind *kind);

G_END_DECLS
