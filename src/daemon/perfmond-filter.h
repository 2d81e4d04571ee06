/* perfmond-filter.h: what perfmond's connection drops before it is queued
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* A hang report of the library is a few KiB (at most a few hundred frames
 * and modules); anything much bigger is not one. */
#define PERFMOND_MAX_HANG_REPORT_BYTES (256 * 1024)

/* The filter of perfmond's connection: the Monitor1 signals of a process
 * that is not registered, or over its budget (--max-signals a second, and
 * bytes), and calls to the daemon with oversize arguments are dropped on
 * GDBus's worker thread, before GDBus queues them for the main thread, so
 * that a flood costs the time to read it and nothing piles up.
 * Reference-counted: the connection holds one while the filter may run. */
typedef struct _PerfmondFilter PerfmondFilter;

PerfmondFilter *perfmond_filter_new           (guint           max_signals);
PerfmondFilter *perfmond_filter_ref           (PerfmondFilter *filter);
void            perfmond_filter_unref         (PerfmondFilter *filter);
/* The GDBusMessageFilterFunction, with the filter as @user_data. */
GDBusMessage   *perfmond_filter_message       (GDBusConnection *connection,
                                               GDBusMessage    *message,
                                               gboolean         incoming,
                                               gpointer         user_data);
/* A registered process's signals pass from now on, within its budget. */
void            perfmond_filter_budget_add    (PerfmondFilter *filter,
                                               const char     *bus_name,
                                               guint           pid);
void            perfmond_filter_budget_remove (PerfmondFilter *filter,
                                               const char     *bus_name);
/* Signals dropped and calls refused so far, for /metrics. */
void            perfmond_filter_get_counts    (PerfmondFilter *filter,
                                               guint64        *signals_dropped,
                                               guint64        *calls_refused);

G_END_DECLS
