/* perfmon-monitor-private.h
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-monitor.h"
#include "perfmon-group-private.h"
#include "perfmon-loop-activity-private.h"

G_BEGIN_DECLS

/* Any thread: hands a record whose last holder went to the monitor, which
 * frees it on its own thread. */
void    _perfmon_monitor_bury_record  (PerfmonMonitor     *self,
                                       PerfmonGroupRecord *record);
/* Any thread: how many times the monitor freed dead records. A record (and
 * its name) that another thread saw in use is the same record, not one
 * made since at its address, while this count has not moved: read it
 * after what it vouches for. */
guint   _perfmon_monitor_get_reap_count (PerfmonMonitor *self);

/* The busy stretches of the monitor's loop, published by its poll wrapper
 * while `watched` is set (see perfmon-loop-activity-private.h). Lives as
 * long as the monitor. */
PerfmonLoopActivity *_perfmon_monitor_get_loop_activity (PerfmonMonitor *self);
/* TRUE if the monitor publishes its thread's busy stretches: it wraps its
 * context's poll function (FALSE past the trampolines), or it has no
 * context and the thread marks its units of work with
 * perfmon_monitor_work_begin()/end(). */
gboolean             _perfmon_monitor_is_attached       (PerfmonMonitor *self);
/* A GApplication's start-up (from `perfmon run`'s g_application_run()):
 * on the monitor's thread, before its loop first polls, begins an
 * iteration, and a busy stretch for a watching hang monitor, so that the
 * start-up's handlers (startup, activate, open, command-line) are charged
 * to the automatic group "(start-up)" and a long one is a hang. Does
 * nothing unless automatic groups are on and the monitor is attached to a
 * context that no iteration is under way on. Handed to the preload
 * module in its table (hang/perfmon-preload-internals-private.h). */
void                 _perfmon_monitor_begin_startup     (PerfmonMonitor *self);
/* How many main contexts may have a monitor attached at once (the poll
 * trampolines of perfmon-monitor.c). */
#define PERFMON_MONITOR_MAX_CONTEXTS 32

/* Charges @addon (an add-on group of @self) @cpu_us of CPU time estimated
 * by sampling (perfmon_group_stats_get_sampled_cpu_time()), apart from its
 * exact CPU time. Any thread: takes the registry lock, never the hot
 * path's records' counters. */
void    _perfmon_monitor_add_sampled_cpu_time (PerfmonMonitor *self,
                                               PerfmonGroup   *addon,
                                               guint64         cpu_us);

/* For tests and benchmarks: the number of records not yet freed, dead or
 * alive, and the number of thread CPU clock reads so far. */
guint   _perfmon_monitor_count_records (PerfmonMonitor *self);
guint64 _perfmon_monitor_count_cpu_clock_reads (PerfmonMonitor *self);
/* A busy thread's CPU clock is read at the latest when the last reading
 * is this old (by the cycle counter): at most one read per this many µs
 * of short measures or iterations (see the top of perfmon-monitor.c). */
#define _PERFMON_MONITOR_ANCHOR_MAX_AGE_US 250
/* Defined where the monitor's polls that cannot sleep make the system
 * call themselves when the context polls with g_poll() (poll_now() in
 * perfmon-monitor.c): x86-64 Linux, and not in a build whose sanitizer
 * checks poll() through libc's interceptor, which the call would go
 * around. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define _PERFMON_MONITOR_SANITIZED 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#  define _PERFMON_MONITOR_SANITIZED 1
# endif
#endif
#if defined(__x86_64__) && defined(__linux__) && !defined(_PERFMON_MONITOR_SANITIZED)
# define _PERFMON_MONITOR_DIRECT_POLL 1
#endif
/* For benchmarks under valgrind, which runs a program some 50 times
 * slower while the cycle counter keeps real time: multiplies the
 * monitor's time thresholds (the reading stretch, the anchor's age, a
 * long iteration, a long dispatch) by @factor, so that the monitor takes
 * the paths it takes natively and callgrind counts their instructions,
 * not those of readings that only the slowdown causes. On the monitor's
 * thread, before it measures anything; never in a program. */
void    _perfmon_monitor_dilate_time (PerfmonMonitor *self,
                                      guint           factor);

G_END_DECLS
