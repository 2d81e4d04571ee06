/* perfmon-js-sampler-private.h: add-on attribution by sampling the
 * JavaScript stack of long dispatches
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-hang-report.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-monitor.h"

G_BEGIN_DECLS

/* What became of a sample (_perfmon_js_sampler_account()). */
typedef enum
{
  PERFMON_JS_SAMPLE_ANSWERED,   /* the engine gave its stack */
  PERFMON_JS_SAMPLE_NO_ANSWER,  /* no safe point in time: native code, or no CPU */
  PERFMON_JS_SAMPLE_EXACT,      /* a dispatch charged exactly: not sampled */
} PerfmonJsSampleOutcome;

/* A busy stretch of the loop that runs this long is sampled, every
 * PERFMON_JS_SAMPLE_EVERY_MS, as long as it runs. */
#define PERFMON_JS_SAMPLE_AFTER_MS 10
#define PERFMON_JS_SAMPLE_EVERY_MS 5
/* How long a sample waits for the engine to reach a safe point: a thread
 * in native code (paint, GC, a system call) has no JavaScript to sample. */
#define PERFMON_JS_SAMPLE_TIMEOUT_MS 5
/* Add-on groups the sampler charges, at most. */
#define PERFMON_JS_SAMPLE_MAX_ADDONS 256
/* In something charged exactly, the sampler looks again this often at
 * most: the thread says when it ends, but not the end of a dispatch it
 * left the lean way (found running, yet under 25 µs). */
#define PERFMON_JS_SAMPLE_EXACT_RECHECK_MS 100

typedef struct _PerfmonJsSampler PerfmonJsSampler;

/* All on the hang monitor's watchdog thread, never the watched one. The
 * sampler works only for the main thread's loop of a process where
 * JavaScript add-on attribution runs (_perfmon_js_site_attribution_running()),
 * once the engine's thread is set up (_perfmon_js_stack_prepare()). */
PerfmonJsSampler *_perfmon_js_sampler_new      (PerfmonMonitor      *monitor);
void              _perfmon_js_sampler_free     (PerfmonJsSampler    *self);
/* Each look of the watchdog at the loop (@busy: in stretch @index): a
 * followed stretch that is over gets its last part charged. */
void              _perfmon_js_sampler_look     (PerfmonJsSampler    *self,
                                                PerfmonLoopActivity *activity,
                                                gboolean             busy,
                                                guint64              index);
/* When stretch @index of thread @tid (begun at @start_us, monotonic)
 * wants its next sample: G_MAXINT64 for never. */
gint64            _perfmon_js_sampler_deadline (PerfmonJsSampler    *self,
                                                gint64               tid,
                                                guint64              index,
                                                gint64               start_us);
/* A deadline passed at @now_us while the thread is still in stretch
 * @index: takes the sample if it is due. */
void              _perfmon_js_sampler_tick     (PerfmonJsSampler    *self,
                                                guint64              index,
                                                gint64               now_us);
/* TRUE if the last tick of stretch @index found the thread in something
 * charged exactly: the watchdog then sleeps until it ends
 * (_perfmon_loop_activity_sleep_until_end() with @n_exact_ends),
 * and calls _perfmon_js_sampler_check_exact_end() when it wakes. */
gboolean          _perfmon_js_sampler_waits_for_exact_end (PerfmonJsSampler *self,
                                                           guint64           index,
                                                           guint64          *n_exact_ends);
void              _perfmon_js_sampler_check_exact_end     (PerfmonJsSampler *self,
                                                           guint64           index,
                                                           gint64            now_us);

/* The bookkeeping behind _perfmon_js_sampler_deadline(),
 * _perfmon_js_sampler_tick() and _perfmon_js_sampler_look(), apart from
 * the engine and the clocks, for tests/test-js-sampler.c: begin following
 * stretch @index at @now_us, when the thread's CPU time was @cpu_ns; a
 * sample at @now_us, @cpu_ns, with its @outcome and, answered, the
 * @addon its innermost add-on frame names (NULL: none); the stretch
 * ended at @end_us, the thread's CPU time being @cpu_ns when that was
 * seen. */
void              _perfmon_js_sampler_follow   (PerfmonJsSampler      *self,
                                                gint64                 tid,
                                                guint64                index,
                                                gint64                 start_us,
                                                gint64                 now_us,
                                                gint64                 cpu_ns);
void              _perfmon_js_sampler_account  (PerfmonJsSampler      *self,
                                                gint64                 now_us,
                                                gint64                 cpu_ns,
                                                PerfmonJsSampleOutcome outcome,
                                                PerfmonGroup          *addon);
void              _perfmon_js_sampler_end      (PerfmonJsSampler      *self,
                                                gint64                 end_us,
                                                gint64                 cpu_ns);

/* When the sample after one requested at @requested_us, and answered (or
 * given up) at @done_us, is due. @rng: the sampler's random state, never
 * 0. Exposed for tests/test-js-sampler.c. */
gint64            _perfmon_js_sampler_next_sample_us (guint32 *rng,
                                                      gint64   requested_us,
                                                      gint64   done_us);

/* A hang report without an exact add-on (PERFMON_ANNOTATION_ADDON) whose
 * stack holds a JavaScript frame of an add-on: annotates the innermost's
 * add-on as PERFMON_ANNOTATION_ADDON_SAMPLED. @script_frames: the report's
 * script frames as perfmon_format_script_frame() writes them, outermost
 * first. On the watchdog thread. */
void              _perfmon_js_sampler_note_hang (PerfmonHangReport *report,
                                                 GPtrArray         *script_frames);

G_END_DECLS
