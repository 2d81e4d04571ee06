/* perfmon-jank-sampler.c: the MAIN_THREAD_JANK checker of a watchdog
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>
#include <unistd.h>

#include "perfmon-clock-private.h"
#include "perfmon-jank-policy-private.h"
#include "perfmon-jank-sampler-private.h"
#include "perfmon-log-dir-private.h"
#include "perfmon-modules-private.h"
#include "perfmon-stack-capture-private.h"
#include "perfmon-stack-tree-private.h"
#include "perfmon-tracer-private.h"

/* A trace is captured as OpenHarmony's own design does: the tracer's
 * flight recorder starts when a jank is detected (a busy stretch passes
 * the trace threshold, 450 ms) and runs through the session's 3 s of
 * checks and until its report. It holds this many seconds: the 3 s and
 * the report's wait for the janky task's end, at the flight recorder's
 * stated rate (see the tracer). While no trace session runs, nothing is
 * recorded: a dispatch costs no recording (issue 22). What a trace loses
 * against a recorder running all the time: what led up to the jank, and
 * the janky task's own begin (it began before the capture); the jank
 * event's begin_time, end_time and the hang report still say when it ran
 * and what it was. */
#define JANK_FLIGHT_RECORDER_SECONDS 8
/* How long a report waits past its time for the janky task to end (its
 * end_time), and how often it looks. */
#define MAX_REPORT_DELAY_MS          10000
#define REPORT_POLL_US               (10 * 1000)
/* How much of what led up to the jank a trace shows. */
#define JANK_TRACE_LEAD_US           (G_GINT64_CONSTANT (3) * G_USEC_PER_SEC)

/* The checker follows the seed's timing (see perfmon-jank-policy.c for the
 * schedule): a busy stretch that passes the stack threshold (150 ms, or
 * sample_interval with log_type 1) starts a stack session; one that passes
 * 450 ms starts a trace session instead (log_type 0 and 2). A session's
 * check "sees the jank again" when the loop is then in a busy stretch at
 * least as long as the threshold that started the session. Stack samples
 * are taken whatever the loop does, as the seed's sampler does; the
 * report, and the rate limits, come at the end. */

/* The seed's limits are per process ("for the processes with the same
 * PID"): one limiter for every sampler of the process, across hang
 * monitors and their restarts. Its start is the first sampler's. */
static GMutex process_limiter_lock;
static PerfmonJankLimiter process_limiter;   /* under process_limiter_lock */
static gboolean process_limiter_ready;

struct _PerfmonJankSampler
{
  PerfmonLoopActivity *activity;
  PerfmonJankLimiter   limiter;            /* a copy: only its start is used */

  /* The session, if any. */
  PerfmonJankAction    action;
  gint64               session_start_us;   /* monotonic: the detection */
  gint64               trigger_us;         /* the threshold that started it */
  gint64               janky_stretch_start_us;
  guint                checks_done;
  guint                jank_at_check;      /* 0 until a check saw it */
  guint                samples_done;
  PerfmonJankPlan      plan;
  PerfmonStackTree    *tree;
  PerfmonModules      *modules;
  /* The stretches that started the latest sessions of each kind: one
   * stretch starts at most one of each. */
  guint64              stack_stretch;
  guint64              trace_stretch;

  /* The janky stretch, for its end: its index in the activity, and its
   * end (monotonic) once the checker saw it over, 0 before. */
  guint64              janky_index;
  gint64               janky_end_us;
  guint                samples_skipped;    /* the loop was idle: not the jank */
  guint                n_stacks;           /* stacks of the jank taken (failed samples not) */
  gboolean             wants_stack;        /* of the janky stretch, while it runs */
  gboolean             has_running_stack;  /* the tree holds it */
  GString             *failed_samples;     /* what the kernel said instead */
  guint                n_failed_samples;

  /* Whether the sampler holds the tracer's flight recorder: during a
   * trace session only. */
  gboolean             holds_flight_recorder;
};

PerfmonJankSampler *
_perfmon_jank_sampler_new (PerfmonLoopActivity *activity,
                           gint64               start_time_us)
{
  PerfmonJankSampler *sampler = g_new0 (PerfmonJankSampler, 1);

  sampler->activity = activity;
  sampler->stack_stretch = G_MAXUINT64;
  sampler->trace_stretch = G_MAXUINT64;
  g_mutex_lock (&process_limiter_lock);
  if (!process_limiter_ready)
    {
      _perfmon_jank_limiter_init (&process_limiter, start_time_us);
      process_limiter_ready = TRUE;
    }
  sampler->limiter = process_limiter;
  g_mutex_unlock (&process_limiter_lock);
  return sampler;
}

static void
end_session (PerfmonJankSampler *sampler)
{
  sampler->action = PERFMON_JANK_ACTION_NONE;
  if (sampler->holds_flight_recorder)
    {
      _perfmon_tracer_release_flight_recorder ();
      sampler->holds_flight_recorder = FALSE;
    }
  if (sampler->failed_samples != NULL)
    g_string_free (g_steal_pointer (&sampler->failed_samples), TRUE);
  g_clear_pointer (&sampler->tree, _perfmon_stack_tree_free);
  g_clear_pointer (&sampler->modules, _perfmon_modules_unref);
}

void
_perfmon_jank_sampler_free (PerfmonJankSampler *sampler)
{
  if (sampler == NULL)
    return;
  end_session (sampler);
  g_free (sampler);
}

/* The failed samples whose reason a log lists; the rest are counted. */
#define MAX_FAILED_SAMPLES_LISTED 10

/* Takes a sample that is due, at the seed's time, if the loop is still in
 * the janky stretch: a sample of a loop that went back to poll (or moved
 * on) is not a sample of the jank, and is only counted as skipped. */
static void
take_sample (PerfmonJankSampler *sampler,
             gboolean            in_janky_stretch)
{
  g_autofree PerfmonCapturedStack *captured = NULL;
  g_autoptr(GError) error = NULL;
  gint64 tid = __atomic_load_n (&sampler->activity->thread_id, __ATOMIC_ACQUIRE);

  sampler->samples_done++;
  if (!in_janky_stretch)
    {
      sampler->samples_skipped++;
      return;
    }

  captured = g_new0 (PerfmonCapturedStack, 1);
  if (tid == 0 || !_perfmon_stack_capture (tid, PERFMON_STACK_CAPTURE_TIMEOUT_MS, captured, &error))
    {
      /* The sample counts in the tree, with no frames: its counts stay
       * honest about how many samples had no stack. It is no stack of the
       * jank, though (n_stacks): a log of failed samples only is not
       * written. The seed prints the thread's
       * kernel wait channel instead, which the capture's error gives. */
      _perfmon_stack_tree_add_sample (sampler->tree, NULL, 0);
      if (sampler->failed_samples == NULL)
        sampler->failed_samples = g_string_new (NULL);
      if (sampler->n_failed_samples++ < MAX_FAILED_SAMPLES_LISTED)
        g_string_append_printf (sampler->failed_samples, "sample %u failed: %s\n",
                                sampler->samples_done,
                                error != NULL ? error->message : "the thread is not known yet");
      return;
    }

  /* Grouped by the dispatch that ran, named as a hang's runnable is (the
   * automatic group's name with automatic groups on). */
  sampler->n_stacks++;
  _perfmon_stack_tree_add_captured_in_dispatch (sampler->tree, sampler->modules,
                                                !captured->has_runnable_name ? "(not in a dispatch)"
                                                : captured->runnable_name[0] != '\0' ? captured->runnable_name
                                                : "(unnamed source)",
                                                captured);
}

/* What the stack log says after the tree, past an empty line: the samples
 * skipped and the failed ones. */
static char *
stack_log_contents (PerfmonJankSampler *sampler)
{
  g_autofree char *tree = _perfmon_stack_tree_to_text (sampler->tree);
  GString *text = g_string_new (tree);

  if (sampler->has_running_stack)
    g_string_append (text, "\n1 stack taken when the jank was detected, while the task ran\n");
  g_string_append_printf (text, "%s%u of %u samples skipped: the main loop was no longer in the "
                          "janky task (it was waiting in poll or running another)\n",
                          sampler->has_running_stack ? "" : "\n", sampler->samples_skipped, sampler->samples_done);
  if (sampler->failed_samples != NULL)
    {
      g_string_append (text, sampler->failed_samples->str);
      if (sampler->n_failed_samples > MAX_FAILED_SAMPLES_LISTED)
        g_string_append_printf (text, "%u more samples failed\n",
                                sampler->n_failed_samples - MAX_FAILED_SAMPLES_LISTED);
    }
  return g_string_free (text, FALSE);
}

/* The monotonic end of the janky stretch, if it ended: read from the
 * activity's ring while the slot still holds that stretch. */
static void
note_janky_end (PerfmonJankSampler *sampler,
                guint64             current_index,
                gboolean            busy)
{
  PerfmonLoopStretch *stretch;
  guint64 end;

  if (sampler->janky_end_us != 0 || (busy && current_index == sampler->janky_index))
    return;

  stretch = _perfmon_loop_activity_stretch (sampler->activity, sampler->janky_index);
  end = __atomic_load_n (&stretch->end, __ATOMIC_ACQUIRE);
  if (current_index - sampler->janky_index < PERFMON_LOOP_RECENT_STRETCHES && end != 0)
    sampler->janky_end_us = _perfmon_clock_cycles_to_monotonic_us (end);
  else
    sampler->janky_end_us = g_get_monotonic_time ();   /* overwritten: late by a tick at most */
}

static gint64
monotonic_to_real_ms (gint64 monotonic_us)
{
  return (g_get_real_time () - (g_get_monotonic_time () - monotonic_us)) / 1000;
}

/* Writes the session's log and builds the event. NULL if the rate limits
 * say no. */
static GVariant *
report (PerfmonJankSampler     *sampler,
        const PerfmonJankConfig *config,
        const PerfmonJankSetup  *given,
        gint64                   now_us)
{
  PerfmonJankSetup filled = *given;
  const PerfmonJankSetup *setup = &filled;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) trace = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *heaviest = NULL;
  g_autofree char *path = NULL;
  const char *own_prefixes[] = { PERFMON_LOG_DIR_JANK_PREFIX, NULL };
  GVariantBuilder builder;
  GVariantBuilder logs;
  gboolean over_limit = FALSE;
  gboolean written = FALSE;
  gint64 real_now_us = g_get_real_time ();
  gboolean is_trace = sampler->action == PERFMON_JANK_ACTION_TRACE;
  gboolean allowed;
  const char *data;
  gsize length;

  if (given->fill != NULL)
    given->fill (&filled, given->fill_data);

  /* A stack session began at the stack threshold, before the task's
   * length was known: the seed's ranges decide by that length, now that
   * the report waited for the task's end (a task of 450 ms or more is not
   * a stack sampling jank, with log_type 0). */
  if (!is_trace && sampler->janky_end_us != 0 &&
      _perfmon_jank_classify ((guint64) MAX (sampler->janky_end_us - sampler->janky_stretch_start_us, 0),
                              config) != PERFMON_JANK_ACTION_STACK_SAMPLING)
    return NULL;

  /* A stack log without a stack of the janky task says nothing of where
   * it spent its time (failed samples give only why the thread could not
   * give one): it is not written, and spends none of
   * report_times_per_app. */
  if (!is_trace && sampler->n_stacks == 0)
    return NULL;

  g_mutex_lock (&process_limiter_lock);
  allowed = is_trace ? _perfmon_jank_limiter_allow_trace (&process_limiter, real_now_us)
                     : _perfmon_jank_limiter_allow_stack (&process_limiter, config,
                                                          setup->developer_mode, real_now_us);
  g_mutex_unlock (&process_limiter_lock);
  if (!allowed)
    return NULL;

  if (is_trace)
    {
      /* The task log of the flight recorder (see the tasks/ tracer): the
       * tasks that ran and waited from a little before the jank to now,
       * the end of the seed's 3 s capture. */
      trace = _perfmon_tracer_serialize_recent (sampler->janky_stretch_start_us - JANK_TRACE_LEAD_US);
      data = g_bytes_get_data (trace, &length);
      heaviest = g_strdup ("");
    }
  else
    {
      heaviest = _perfmon_stack_tree_heaviest_stack (sampler->tree);
      contents = stack_log_contents (sampler);
      data = contents;
      length = strlen (contents);
    }

  /* "MAIN_THREAD_JANK_<YYYYmmddHHMMSS>_<pid>[_<n>].txt|.trace", a name of
   * its own; log_over_limit: this log could not be kept (the seed's "logs
   * fail to be written"). */
  path = _perfmon_log_dir_write_new (setup->log_dir, own_prefixes, setup->log_dir_limit,
                                     PERFMON_LOG_DIR_JANK_PREFIX,
                                     is_trace ? PERFMON_LOG_DIR_TRACE_SUFFIX : PERFMON_LOG_DIR_STACK_SUFFIX,
                                     data, length, &over_limit, &error);
  if (path == NULL)
    {
      g_warning ("Could not write the jank log in %s: %s", setup->log_dir, error->message);
      over_limit = TRUE;
    }
  written = path != NULL;

  g_variant_builder_init (&logs, G_VARIANT_TYPE_STRING_ARRAY);
  if (written)
    g_variant_builder_add (&logs, "s", path);

  g_variant_builder_init (&builder, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&builder, "{sv}", "time", g_variant_new_int64 (real_now_us / 1000));
  g_variant_builder_add (&builder, "{sv}", "bundle_name",
                         g_variant_new_string (setup->bundle_name != NULL ? setup->bundle_name : ""));
  g_variant_builder_add (&builder, "{sv}", "bundle_version",
                         g_variant_new_string (setup->bundle_version != NULL ? setup->bundle_version : ""));
  g_variant_builder_add (&builder, "{sv}", "pid", g_variant_new_int32 ((gint32) getpid ()));
  g_variant_builder_add (&builder, "{sv}", "uid", g_variant_new_uint32 ((guint32) getuid ()));
  g_variant_builder_add (&builder, "{sv}", "begin_time",
                         g_variant_new_int64 (monotonic_to_real_ms (sampler->janky_stretch_start_us)));
  /* The end of the task, the janky stretch: the report waited for it. */
  g_variant_builder_add (&builder, "{sv}", "end_time",
                         g_variant_new_int64 (monotonic_to_real_ms (sampler->janky_end_us != 0
                                                                    ? sampler->janky_end_us : now_us)));
  g_variant_builder_add (&builder, "{sv}", "external_log", g_variant_builder_end (&logs));
  g_variant_builder_add (&builder, "{sv}", "log_over_limit", g_variant_new_boolean (over_limit));
  /* Jiffies since boot (CLOCK_MONOTONIC in clock ticks) at the task's start. */
  g_variant_builder_add (&builder, "{sv}", "app_start_jiffies_time",
                         g_variant_new_int64 (sampler->janky_stretch_start_us * sysconf (_SC_CLK_TCK) /
                                              G_USEC_PER_SEC));
  g_variant_builder_add (&builder, "{sv}", "heaviest_stack", g_variant_new_string (heaviest));
  g_variant_builder_add (&builder, "{sv}", "log_type", g_variant_new_string (is_trace ? "trace" : "stack"));
  if (!is_trace)
    g_variant_builder_add (&builder, "{sv}", "sample_count",
                           g_variant_new_uint32 (_perfmon_stack_tree_get_n_samples (sampler->tree)));
  return g_variant_ref_sink (g_variant_builder_end (&builder));
}

static void
begin_session (PerfmonJankSampler      *sampler,
               const PerfmonJankConfig *config,
               PerfmonJankAction        action,
               gint64                   stretch_start_us,
               gint64                   now_us)
{
  end_session (sampler);
  sampler->action = action;
  sampler->trigger_us = (gint64) _perfmon_jank_threshold_us (config, action);
  /* The session's times count from when the stretch passed the
   * threshold, not from when the watchdog saw it: a watchdog woken late (a
   * loaded machine) would otherwise check for the jank later than the seed
   * says, after a task that was still running then had ended. */
  sampler->session_start_us = stretch_start_us > 0 ? MIN (now_us, stretch_start_us + sampler->trigger_us) : now_us;
  sampler->janky_stretch_start_us = stretch_start_us;
  sampler->checks_done = 0;
  sampler->jank_at_check = 0;
  sampler->samples_done = 0;
  sampler->samples_skipped = 0;
  sampler->n_failed_samples = 0;
  sampler->n_stacks = 0;
  sampler->has_running_stack = FALSE;
  sampler->janky_end_us = 0;
  _perfmon_jank_sampling_plan (config, action, 0, &sampler->plan);
  if (action == PERFMON_JANK_ACTION_STACK_SAMPLING)
    {
      sampler->tree = _perfmon_stack_tree_new ();
      sampler->modules = _perfmon_modules_new ();
      /* The session begins while the task runs: its stack now is one of
       * the jank, which the seed's samples, an interval or more later,
       * may all miss (a 300 ms task ends before the first). */
      sampler->wants_stack = TRUE;
    }
  else if (action == PERFMON_JANK_ACTION_TRACE)
    {
      /* The capture starts now: see JANK_FLIGHT_RECORDER_SECONDS. */
      _perfmon_tracer_hold_flight_recorder (JANK_FLIGHT_RECORDER_SECONDS);
      sampler->holds_flight_recorder = TRUE;
    }
}

gboolean
_perfmon_jank_sampler_wants_stack (PerfmonJankSampler *sampler,
                                   guint64            *index_out)
{
  if (sampler->action != PERFMON_JANK_ACTION_STACK_SAMPLING || !sampler->wants_stack)
    return FALSE;
  sampler->wants_stack = FALSE;
  *index_out = sampler->janky_index;
  return TRUE;
}

void
_perfmon_jank_sampler_add_running_stack (PerfmonJankSampler       *sampler,
                                         guint64                   index,
                                         const PerfmonStackSample *sample)
{
  if (sampler->action != PERFMON_JANK_ACTION_STACK_SAMPLING || sampler->janky_index != index ||
      sampler->has_running_stack || _perfmon_stack_sample_get_n_frames (sample) == 0)
    return;
  _perfmon_stack_tree_add_stack_sample (sampler->tree, sample);
  sampler->has_running_stack = TRUE;
  sampler->n_stacks++;
}

gint64
_perfmon_jank_sampler_tick (PerfmonJankSampler      *sampler,
                            const PerfmonJankConfig *config,
                            const PerfmonJankSetup  *setup,
                            gint64                   stretch_start_us,
                            gint64                   now_us,
                            GVariant               **event_out)
{
  guint64 index = __atomic_load_n (&sampler->activity->n_stretches, __ATOMIC_ACQUIRE);
  gboolean busy = stretch_start_us != 0;
  gint64 busy_us = busy ? now_us - stretch_start_us : 0;
  gint64 next = G_MAXINT64;
  guint64 stack_us = _perfmon_jank_threshold_us (config, PERFMON_JANK_ACTION_STACK_SAMPLING);
  guint64 trace_us = _perfmon_jank_threshold_us (config, PERFMON_JANK_ACTION_TRACE);
  PerfmonJankAction due;
  gint64 real_us;

  *event_out = NULL;

  real_us = g_get_real_time ();
  /* In the start-up window, a busy loop is looked at again when the window
   * ends (the watchdog sleeps until then), an idle one at its next
   * stretch. */
  if (_perfmon_jank_limiter_in_startup (&sampler->limiter, config, real_us))
    return busy ? now_us + MAX (sampler->limiter.start_time_us +
                                (gint64) config->ignore_startup_time_s * G_USEC_PER_SEC - real_us, 1)
                : G_MAXINT64;

  /* A stretch past 450 ms starts a trace session, replacing a stack
   * session it started (log_type 0). */
  due = busy ? _perfmon_jank_classify ((guint64) MAX (busy_us, 0), config) : PERFMON_JANK_ACTION_NONE;
  if (due == PERFMON_JANK_ACTION_TRACE &&
      sampler->trace_stretch != index && sampler->action != PERFMON_JANK_ACTION_TRACE)
    {
      begin_session (sampler, config, PERFMON_JANK_ACTION_TRACE, stretch_start_us, now_us);
      sampler->janky_index = index;
      sampler->trace_stretch = index;
      sampler->stack_stretch = index;
    }
  else if (due == PERFMON_JANK_ACTION_STACK_SAMPLING &&
           sampler->stack_stretch != index && sampler->action == PERFMON_JANK_ACTION_NONE)
    {
      begin_session (sampler, config, PERFMON_JANK_ACTION_STACK_SAMPLING, stretch_start_us, now_us);
      sampler->janky_index = index;
      sampler->stack_stretch = index;
    }

  if (sampler->action != PERFMON_JANK_ACTION_NONE)
    {
      gint64 elapsed_ms = (now_us - sampler->session_start_us) / 1000;

      /* Checks that are due. Each asks whether the janky task still ran
       * at the check's time, not at this tick's, which may come later: the
       * task's recorded end says. */
      note_janky_end (sampler, index, busy);
      while (sampler->checks_done < sampler->plan.n_checks &&
             (gint64) sampler->plan.check_ms[sampler->checks_done] <= elapsed_ms)
        {
          gint64 check_us = sampler->session_start_us + (gint64) sampler->plan.check_ms[sampler->checks_done] * 1000;
          gboolean ran_then = (busy && index == sampler->janky_index) ||
                              (sampler->janky_end_us != 0 && sampler->janky_end_us >= check_us);

          sampler->checks_done++;
          if (sampler->jank_at_check == 0 && ran_then &&
              check_us - sampler->janky_stretch_start_us >= sampler->trigger_us)
            {
              sampler->jank_at_check = sampler->checks_done;
              /* The plan changes once the jank is seen: samples follow. */
              _perfmon_jank_sampling_plan (config, sampler->action, sampler->jank_at_check, &sampler->plan);
            }
        }

      /* Samples that are due. */
      while (sampler->samples_done < sampler->plan.n_samples &&
             (gint64) sampler->plan.sample_ms[sampler->samples_done] <= elapsed_ms)
        take_sample (sampler, busy && index == sampler->janky_index);

      if ((gint64) sampler->plan.end_ms <= elapsed_ms && sampler->plan.report &&
          sampler->janky_end_us == 0 && elapsed_ms < (gint64) sampler->plan.end_ms + MAX_REPORT_DELAY_MS)
        {
          /* end_time is the task's end: the report waits for it, a
           * while. */
          next = now_us + REPORT_POLL_US;
        }
      else if ((gint64) sampler->plan.end_ms <= elapsed_ms)
        {
          if (sampler->plan.report)
            *event_out = report (sampler, config, setup, now_us);
          end_session (sampler);
        }
      else
        {
          guint64 due_ms = sampler->plan.end_ms;

          if (sampler->checks_done < sampler->plan.n_checks)
            due_ms = MIN (due_ms, sampler->plan.check_ms[sampler->checks_done]);
          if (sampler->samples_done < sampler->plan.n_samples)
            due_ms = MIN (due_ms, sampler->plan.sample_ms[sampler->samples_done]);
          next = sampler->session_start_us + (gint64) due_ms * 1000;
        }
    }

  /* The next threshold the busy stretch may pass. */
  if (busy && stack_us != G_MAXUINT64 && sampler->stack_stretch != index &&
      sampler->action == PERFMON_JANK_ACTION_NONE)
    next = MIN (next, stretch_start_us + (gint64) stack_us + 1);
  if (busy && trace_us != G_MAXUINT64 && sampler->trace_stretch != index &&
      sampler->action != PERFMON_JANK_ACTION_TRACE)
    next = MIN (next, stretch_start_us + (gint64) trace_us + 1);

  return next;
}
