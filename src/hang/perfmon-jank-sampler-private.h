/* perfmon-jank-sampler-private.h: the MAIN_THREAD_JANK checker of a watchdog
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-jank-config-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-stack-tree-private.h"

G_BEGIN_DECLS

typedef struct _PerfmonJankSampler PerfmonJankSampler;

/* Where the sampler writes and what it puts in the event. Needed only
 * when a session reports (a few times an hour at most), while the
 * sampler ticks at every wake-up of the watchdog: with @fill set, the
 * sampler calls it first, to fill in the rest from @fill_data. */
typedef struct _PerfmonJankSetup PerfmonJankSetup;
struct _PerfmonJankSetup
{
  const char *log_dir;
  guint64     log_dir_limit;
  gboolean    developer_mode;
  const char *bundle_name;
  const char *bundle_version;
  void      (*fill)      (PerfmonJankSetup *setup,
                          gpointer          fill_data);
  gpointer    fill_data;
};

/* The checker of the loop whose busy stretches @activity publishes, for a
 * process (the checks' start-up window) that started at @start_time_us
 * (wall clock, g_get_real_time()). Used by the watchdog thread only. */
PerfmonJankSampler *_perfmon_jank_sampler_new  (PerfmonLoopActivity *activity,
                                                gint64               start_time_us);
void                _perfmon_jank_sampler_free (PerfmonJankSampler  *sampler);

/* Called by the watchdog whenever it wakes while the loop is busy (or a
 * sampling session runs): @stretch_start_us is the monotonic start of the
 * current busy stretch, or 0 when the loop is not busy. Does what is due by
 * @now_us (start a session, check, take a stack sample, write the log) and
 * returns the monotonic time of the next thing to do, or G_MAXINT64 if
 * nothing is pending. When a session reported, stores in @event_out the
 * event's params (an a{sv} GVariant, floating reference sunk, owned by the
 * caller). */
gint64 _perfmon_jank_sampler_tick (PerfmonJankSampler     *sampler,
                                   const PerfmonJankConfig *config,
                                   const PerfmonJankSetup  *setup,
                                   gint64                   stretch_start_us,
                                   gint64                   now_us,
                                   GVariant               **event_out);

/* Whether the stack session that just began wants a stack of its janky
 * stretch (index in @index_out), taken while the stretch still runs: TRUE
 * once per session. The watchdog answers with
 * _perfmon_jank_sampler_add_running_stack(): the stack the hang monitor
 * took of that stretch (its report's stack, Python and JavaScript frames
 * and labels included), or one it takes now the same way. */
gboolean _perfmon_jank_sampler_wants_stack       (PerfmonJankSampler       *sampler,
                                                  guint64                  *index_out);
/* Adds @sample, a stack of stretch @index taken while it ran, to the
 * session's samples, if the session is of that stretch (once). */
void     _perfmon_jank_sampler_add_running_stack (PerfmonJankSampler       *sampler,
                                                  guint64                   index,
                                                  const PerfmonStackSample *sample);

G_END_DECLS
