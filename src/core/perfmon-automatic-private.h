/* perfmon-automatic-private.h: automatic groups, one per kind of dispatch
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The per-dispatch hook and the automatic compartments it charges; see the
 * top of perfmon-automatic.c for the mechanism and doc/automatic-instrumentation.md
 * for what it sees and misses. Each PerfmonMonitor owns one
 * PerfmonAutomatic; everything in it is touched on the monitor's thread,
 * except `on`, which the hook reads on any thread.
 */
#pragma once

#include "perfmon-dispatch-observer-private.h"
#include "perfmon-monitor-private.h"

G_BEGIN_DECLS

#define PERFMON_AUTOMATIC_DEFAULT_MAX_GROUPS 256
#define PERFMON_AUTOMATIC_MAX_MAX_GROUPS 65536
/* Bytes of a group's name, NUL excluded. */
#define PERFMON_AUTOMATIC_NAME_MAX 95
#define PERFMON_AUTOMATIC_OVERFLOW_NAME "(other sources)"
/* The loop thread's CPU that no dispatch covers (GLib's own work between
 * dispatches, code the program runs between two iterations), and the work
 * of a GApplication's start-up before its loop first polls; see
 * charge_outside_dispatches() in perfmon-monitor.c. */
#define PERFMON_AUTOMATIC_OUTSIDE_NAME "(outside dispatches)"
#define PERFMON_AUTOMATIC_STARTUP_NAME "(start-up)"

typedef struct _PerfmonAutomatic PerfmonAutomatic;

PerfmonAutomatic *_perfmon_automatic_new            (PerfmonMonitor   *monitor);
/* At the monitor's finalize: releases the automatic groups' records. */
void              _perfmon_automatic_free           (PerfmonAutomatic *self);
gboolean          _perfmon_automatic_get_on         (PerfmonAutomatic *self);
/* Turning it on patches GLib's own source kinds, once per process. */
void              _perfmon_automatic_set_on         (PerfmonAutomatic *self,
                                                     gboolean          on);
guint             _perfmon_automatic_get_max_groups (PerfmonAutomatic *self);
/* The automatic group @name, made if new, not counted towards
 * max-automatic-groups (for the two groups above). Monitor's thread. */
PerfmonGroupRecord *_perfmon_automatic_special_group (PerfmonAutomatic *self,
                                                      const char       *name);
void              _perfmon_automatic_set_max_groups (PerfmonAutomatic *self,
                                                     guint             max_groups);

/* Whether @name (NULL included) is one GLib gives a source by default
 * ("GIdleSource", "GTimeoutSource", …): a name that says less than the
 * source's callback or creation site. */
gboolean          _perfmon_automatic_is_default_name (const char *name);

/* From perfmon-monitor.c, for the hook. */
PerfmonAutomatic   *_perfmon_monitor_get_automatic            (PerfmonMonitor     *self);
/* The monitor whose poll wrapper runs on @context, or NULL. Any thread; no
 * lock. */
PerfmonMonitor     *_perfmon_monitor_find_for_context         (GMainContext       *context);
/* Bumped whenever a monitor attaches to or detaches from a context: a
 * thread's cached answer of the above is good while it is unchanged. */
guint               _perfmon_monitor_get_context_epoch        (void);
/* The same, for the hook to read inline (atomic). */
extern gint         _perfmon_monitor_context_epoch;
/* Whether the calling thread is (or now becomes) the monitor's thread. */
gboolean            _perfmon_monitor_claim_thread             (PerfmonMonitor     *self);
typedef gboolean (*PerfmonDispatchFunc) (GSource    *source,
                                         GSourceFunc callback,
                                         gpointer    user_data);
/* Runs @dispatch (of @source) as a measure of @record, an automatic
 * group: the dispatch's name set for stack captures, the dispatch observer
 * (if any) around it, a long dispatch noted in the busy stretch. Returns
 * what @dispatch returned. On the monitor's thread only. */
gboolean            _perfmon_monitor_dispatch_in_group        (PerfmonMonitor                *self,
                                                               PerfmonGroupRecord            *record,
                                                               PerfmonDispatchFunc            dispatch,
                                                               GSource                       *source,
                                                               GSourceFunc                    callback,
                                                               gpointer                       user_data);
/* A new active compartment record named @name, held once by the caller. */
PerfmonGroupRecord *_perfmon_monitor_new_automatic_record     (PerfmonMonitor     *self,
                                                               const char         *name);
/* Makes @record (a compartment) belong to @window_id's and @addon_id's
 * groups instead of its current ones. Monitor's thread. */
void                _perfmon_monitor_set_record_parents       (PerfmonMonitor     *self,
                                                               PerfmonGroupRecord *record,
                                                               guint64             window_id,
                                                               const char         *addon_id);
/* The group object of a compartment record (a new one if it has none). */
PerfmonGroup       *_perfmon_monitor_group_for_compartment    (PerfmonMonitor     *self,
                                                               PerfmonGroupRecord *record);

G_END_DECLS
