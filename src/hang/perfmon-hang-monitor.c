/* perfmon-hang-monitor.c: the watchdog of one monitored thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfmon-annotations-private.h"
#include "perfmon-clock-private.h"
#include "perfmon-process-private.h"
#include "perfmon-error.h"
#include "perfmon-hang-monitor-private.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-jank-config-private.h"
#include "perfmon-jank-policy-private.h"
#include "perfmon-jank-sampler-private.h"
#include "perfmon-label-private.h"
#include "perfmon-log-dir-private.h"
#include "perfmon-log-event.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-modules-private.h"
#include "perfmon-js-sampler-private.h"
#include "perfmon-js-stack-private.h"
#include "perfmon-mixed-stack-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-ping-store-private.h"
#include "perfmon-stack-capture-private.h"
#include "perfmon-sysprof-private.h"

/**
 * PerfmonHangMonitor:
 *
 * A watchdog thread that watches the loop of one [class@Monitor]'s thread
 * (the main thread, or any thread with its own monitor and context) and
 * reports its hangs: busy stretches of the loop, from a poll's return to the
 * next poll, longer than [property@HangMonitor:threshold].
 *
 * When a stretch reaches the threshold, the watchdog takes the thread's
 * native stack (a signal to that thread alone, which unwinds itself with
 * libunwind and names the #GSource it dispatches), reads its label stack
 * (see perfmon_label_push()) and the annotations in force (see
 * perfmon_annotate()). When the stretch ends, the report gets its final
 * duration, is saved to [property@HangMonitor:pings-dir] at once, and
 * [signal@HangMonitor::hang] is emitted. A stretch that reaches
 * [property@HangMonitor:permahang-threshold] is saved while it still goes
 * on, annotated `Unrecovered`, so that if the process dies hung, the next
 * start's ping carries it.
 *
 * Each hang is also a structured log entry (log domain `Perfmon`,
 * `MESSAGE_ID=7d63bc06d0624852854174148686ce46`, with the fields
 * `PERFMON_PID`, `PERFMON_RUNNABLE` and `PERFMON_DURATION_MS`), written by
 * the watchdog thread when it ends, and one with
 * `MESSAGE_ID=03693b67961e4c46942ec9022f7bfe1f` when it reaches the
 * permahang threshold: at %G_LOG_LEVEL_MESSAGE when standard error is the
 * journal, else at %G_LOG_LEVEL_DEBUG.
 *
 * Every [property@HangMonitor:hangs-per-ping] hangs, on
 * perfmon_hang_monitor_flush_ping(), at perfmon_hang_monitor_stop() and at
 * process exit, the saved hangs go out in one ping file in the format of
 * the Background Hang Monitor's "bhr" ping.
 *
 * The watched thread's side costs a few plain stores and one atomic
 * exchange per iteration. The watchdog sleeps without any deadline while
 * the loop waits in poll, and with one deadline while it is busy.
 *
 * Threads: create, configure, start and stop a hang monitor on one thread,
 * which must run a #GMainContext (the thread-default one when start() is
 * called): the signals are emitted there. The watched thread is the
 * monitor's.
 *
 * Since: 0.1
 */

/* Once a hang is caught, how often the watchdog looks whether it ended:
 * the thread does not wake the watchdog when a stretch ends (that would
 * cost it a system call per iteration), and the report's duration comes
 * from the thread's own timestamps, so this only bounds the delay of the
 * report. */
#define HANG_END_CHECK_MS 25

struct _PerfmonHangMonitor
{
  GObject              parent_instance;

  /* The process whose watchdog thread `watchdog` is: a child forked
   * without exec has none (see forked_away()). */
  pid_t                watchdog_pid;
  /* Held by the watchdog while it works, released while it sleeps: a
   * fork() waits for it (before_fork()), so that the watchdog holds none
   * of perfmon's locks in the child's copy of memory. */
  GMutex               work_lock;

  PerfmonMonitor      *monitor;
  PerfmonLoopActivity *activity;
  /* Under Sysprof (SYSPROF_TRACE_FD), while running; read by the
   * watchdog. */
  PerfmonSysprof      *sysprof;

  /* Configuration: set on the owner thread, read by the watchdog. */
  guint                threshold_ms;            /* atomic */
  guint                permahang_threshold_ms;  /* atomic */
  guint                hangs_per_ping;          /* atomic */
  guint                startup_grace_ms;
  char                *pings_dir;
  char                *log_dir;                /* written under state_lock */
  guint64              log_dir_limit;          /* written under state_lock */
  char                *process_type;
  char                *remote_type;
  /* The program's identity in pings and jank events; under state_lock
   * (pings are written on other threads). NULL: the defaults. */
  char                *app_name;
  char                *app_version;
  char                *app_channel;
  char                *app_build_id;
  gboolean             developer_mode;         /* written under state_lock */
  PerfmonJankConfig    jank_config;             /* under state_lock */

  /* Running state. */
  GMainContext        *owner_context;
  GThread             *watchdog;
  gint64               start_time_us;           /* monotonic */
  gint64               last_ping_time_us;       /* monotonic, under state_lock */

  GMutex               state_lock;              /* the store, the counters */
  PerfmonPingStore    *store;
  guint                n_hangs_since_ping;
  guint64              n_wakeups;               /* atomic */
  guint64              n_hangs;                 /* atomic */
  gint64               last_detection_latency_us;   /* atomic */
  /* Set before the watchdog starts: see _perfmon_hang_monitor_set_ongoing_func(). */
  PerfmonHangOngoingFunc ongoing_func;
  gpointer               ongoing_data;

  /* Signal emissions queued for the owner's context, oldest first: stop()
   * delivers these and nothing else of that context. */
  GMutex               emissions_lock;
  GQueue               emissions;

  /* Stepping aside (see _perfmon_hang_monitor_set_step_aside()): set on
   * the owner thread before start(). */
  PerfmonHangMonitorStepAsideFunc step_aside_func;
  gpointer             step_aside_data;
  GThread             *owner_thread;            /* that started it */
  /* The monitor that gave way to this one, restarted at stop(). */
  PerfmonHangMonitor  *stepped_aside;
};

enum {
  PROP_0,
  PROP_MONITOR,
  PROP_THRESHOLD,
  PROP_PERMAHANG_THRESHOLD,
  PROP_HANGS_PER_PING,
  PROP_STARTUP_GRACE,
  PROP_PINGS_DIR,
  PROP_LOG_DIR,
  PROP_LOG_DIR_LIMIT,
  PROP_PROCESS_TYPE,
  PROP_REMOTE_TYPE,
  PROP_DEVELOPER_MODE,
  PROP_APP_NAME,
  PROP_APP_VERSION,
  PROP_APP_CHANNEL,
  PROP_APP_BUILD_ID,
  N_PROPS
};

enum {
  SIGNAL_HANG,
  SIGNAL_PING,
  SIGNAL_JANK,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE (PerfmonHangMonitor, perfmon_hang_monitor, G_TYPE_OBJECT)

/* --- deliberate waits -------------------------------------------------- */

/**
 * perfmon_deliberate_wait_begin:
 *
 * Declares that the calling thread is about to wait on purpose, for example
 * in a synchronous call a user asked for: until the matching
 * perfmon_deliberate_wait_end(), its hang monitor treats the thread as idle,
 * as if it were waiting in poll, so a long wait is not reported as a hang.
 * Calls nest. On a thread no hang monitor watches it does nothing. In C,
 * PERFMON_AUTO_DELIBERATE_WAIT() ends the wait with the scope.
 *
 * Like the loop's own poll, it takes no lock and makes no system call, except
 * to wake the watchdog at the end of a wait it slept through.
 *
 * Since: 0.1
 */
void
perfmon_deliberate_wait_begin (void)
{
  _perfmon_loop_activity_idle_begin ();
}

/**
 * perfmon_deliberate_wait_end:
 *
 * Ends a wait begun by perfmon_deliberate_wait_begin(): from here the
 * thread is busy again, in a new stretch.
 *
 * Since: 0.1
 */
void
perfmon_deliberate_wait_end (void)
{
  _perfmon_loop_activity_idle_end ();
}

/* --- the monitors alive, for the ping at exit --------------------------- */

static GMutex running_lock;
static GPtrArray *running_monitors;   /* of PerfmonHangMonitor *, not referenced */
static gboolean exit_handler_installed;

static char *write_ping_locked (PerfmonHangMonitor *self, GError **error);
static void stop_watchdog (PerfmonHangMonitor *self);

/* Whether the monitor was started in a parent of this process, which was
 * forked without exec: its watchdog thread did not come along, and its
 * hangs and ping store are the parent's. */
static gboolean
forked_away (PerfmonHangMonitor *self)
{
  return self->watchdog != NULL && self->watchdog_pid != getpid ();
}

/* fork(): the locks a child may need (to stop and restart a monitor)
 * are taken around it, so that none is copied held by a thread that does
 * not exist in the child: each watchdog is let finish what it works on
 * and taken at its sleep. Order: running_lock, then each running
 * monitor's work_lock and state_lock (the watchdog takes state_lock, and
 * process_report_times_lock before it, only while it holds work_lock). */
static void
before_fork (void)
{
  g_mutex_lock (&running_lock);
  if (running_monitors != NULL)
    for (guint i = 0; i < running_monitors->len; i++)
      {
        PerfmonHangMonitor *self = g_ptr_array_index (running_monitors, i);

        /* Waits for its watchdog to go to sleep: whatever it works on
         * (a capture, symbols, a jank log) it finishes first. */
        g_mutex_lock (&self->work_lock);
        g_mutex_lock (&self->state_lock);
      }
}

static void
after_fork (void)
{
  if (running_monitors != NULL)
    for (guint i = running_monitors->len; i-- > 0;)
      {
        PerfmonHangMonitor *self = g_ptr_array_index (running_monitors, i);

        g_mutex_unlock (&self->state_lock);
        g_mutex_unlock (&self->work_lock);
      }
  g_mutex_unlock (&running_lock);
}

static void
flush_pings_at_exit (void)
{
  g_mutex_lock (&running_lock);
  if (running_monitors != NULL)
    for (guint i = 0; i < running_monitors->len; i++)
      {
        PerfmonHangMonitor *self = g_ptr_array_index (running_monitors, i);
        g_autoptr(GError) error = NULL;
        g_autofree char *path = NULL;

        /* A forked child's monitors hold its parent's hangs. */
        if (forked_away (self))
          continue;
        /* No signal now: the program is going away. */
        g_mutex_lock (&self->state_lock);
        path = write_ping_locked (self, &error);
        g_mutex_unlock (&self->state_lock);
        if (error != NULL)
          g_warning ("Could not write the hang ping at exit: %s", error->message);
      }
  g_mutex_unlock (&running_lock);
}

/* --- the watchdog ------------------------------------------------------- */

typedef struct
{
  PerfmonHangMonitor *self;
  GSource            *source;
  char               *path;
  PerfmonHangReport  *report;
  GVariant           *jank;
} Emission;

static void
emission_free (gpointer data)
{
  Emission *emission = data;

  g_object_unref (emission->self);
  g_free (emission->path);
  g_clear_pointer (&emission->report, perfmon_hang_report_unref);
  g_clear_pointer (&emission->jank, g_variant_unref);
  g_free (emission);
}

static void
emit (Emission *emission)
{
  if (emission->report != NULL)
    g_signal_emit (emission->self, signals[SIGNAL_HANG], 0, emission->report);
  if (emission->path != NULL)
    g_signal_emit (emission->self, signals[SIGNAL_PING], 0, emission->path);
  if (emission->jank != NULL)
    g_signal_emit (emission->self, signals[SIGNAL_JANK], 0, PERFMON_JANK_EVENT_NAME, emission->jank);
}

static gboolean
emit_in_owner_context (gpointer data)
{
  Emission *emission = data;
  PerfmonHangMonitor *self = emission->self;

  g_mutex_lock (&self->emissions_lock);
  g_queue_remove (&self->emissions, emission);
  g_mutex_unlock (&self->emissions_lock);
  emit (emission);
  return G_SOURCE_REMOVE;
}

/* Owner's thread, in stop(): the emissions still queued are delivered now,
 * in order, so that they come before the ping that carries their hangs.
 * Only these: dispatching the rest of the owner's context from here would
 * run the program's sources at a moment it did not choose (and, in a
 * binding's teardown, sources of a runtime already gone). */
static void
deliver_queued_emissions (PerfmonHangMonitor *self)
{
  Emission *emission;

  /* Another thread runs the owner's context: it delivers them. */
  if (!g_main_context_acquire (self->owner_context))
    return;

  for (;;)
    {
      g_mutex_lock (&self->emissions_lock);
      emission = g_queue_pop_head (&self->emissions);
      g_mutex_unlock (&self->emissions_lock);
      if (emission == NULL)
        break;
      emit (emission);
      g_source_destroy (emission->source);   /* frees @emission */
    }
  g_main_context_release (self->owner_context);
}

/* Watchdog thread: queues a signal emission on the owner's context. */
static void
queue_emission_full (PerfmonHangMonitor *self,
                     PerfmonHangReport  *report,
                     const char         *path,
                     GVariant           *jank)
{
  Emission *emission = g_new0 (Emission, 1);
  g_autoptr(GSource) source = g_idle_source_new ();

  emission->self = g_object_ref (self);
  emission->jank = jank != NULL ? g_variant_ref (jank) : NULL;
  emission->report = report != NULL ? perfmon_hang_report_ref (report) : NULL;
  emission->path = g_strdup (path);
  g_source_set_name (source, "[perfmon] hang monitor signal");
  g_source_set_priority (source, G_PRIORITY_DEFAULT);
  g_source_set_callback (source, emit_in_owner_context, emission, emission_free);
  emission->source = source;
  g_mutex_lock (&self->emissions_lock);
  g_queue_push_tail (&self->emissions, emission);
  g_source_attach (source, self->owner_context);
  g_mutex_unlock (&self->emissions_lock);
}

static void
queue_emission (PerfmonHangMonitor *self,
                PerfmonHangReport  *report,
                const char         *path)
{
  queue_emission_full (self, report, path, NULL);
}

/* Watchdog thread, without the activity lock: runs the jank checker and
 * returns when it next needs to run. */
/* The application name: the app-name property, else what GLib knows
 * (g_get_application_name(), which falls back on the prgname), else the
 * kernel's name of the process. Under state_lock. */
static char *
app_name_locked (PerfmonHangMonitor *self)
{
  if (self->app_name != NULL)
    return g_strdup (self->app_name);
  if (g_get_application_name () != NULL)
    return g_strdup (g_get_application_name ());
  return g_strdup (_perfmon_process_name ());  /* the one derivation, never empty */
}

/* What a jank report needs of the monitor's properties, copied when a
 * session reports: the main thread may set them while the watchdog runs. */
typedef struct
{
  PerfmonHangMonitor *self;
  char               *log_dir;
  char               *bundle_name;
  char               *bundle_version;
} JankSetupCopy;

static void
fill_jank_setup (PerfmonJankSetup *setup,
                 gpointer          data)
{
  JankSetupCopy *copy = data;
  PerfmonHangMonitor *self = copy->self;

  g_mutex_lock (&self->state_lock);
  g_free (copy->log_dir);
  copy->log_dir = g_strdup (self->log_dir);
  setup->log_dir_limit = self->log_dir_limit;
  setup->developer_mode = self->developer_mode;
  g_free (copy->bundle_name);
  copy->bundle_name = app_name_locked (self);
  g_free (copy->bundle_version);
  copy->bundle_version = g_strdup (self->app_version != NULL ? self->app_version : "");
  g_mutex_unlock (&self->state_lock);
  setup->log_dir = copy->log_dir;
  setup->bundle_name = copy->bundle_name;
  setup->bundle_version = copy->bundle_version;
}

/* At every wake-up of the watchdog: nothing copied, locked or allocated
 * unless a session reports (the setup is filled then). */
static gint64
tick_jank (PerfmonHangMonitor *self,
           PerfmonJankSampler *sampler,
           gint64              stretch_start_us)
{
  PerfmonJankConfig config;
  JankSetupCopy copy = { .self = self };
  PerfmonJankSetup setup = { .fill = fill_jank_setup, .fill_data = &copy };
  g_autoptr(GVariant) event = NULL;
  gint64 next;

  _perfmon_hang_monitor_get_jank_config (self, &config);
  next = _perfmon_jank_sampler_tick (sampler, &config, &setup, stretch_start_us,
                                     g_get_monotonic_time (), &event);
  g_free (copy.log_dir);
  g_free (copy.bundle_name);
  g_free (copy.bundle_version);
  if (event != NULL)
    queue_emission_full (self, NULL, NULL, event);
  return next;
}

/* What the watchdog knows of the stretch it follows. */
typedef enum
{
  WATCH_IDLE,        /* no stretch followed: the loop waits */
  WATCH_BUSY,        /* a stretch runs, shorter than the threshold so far */
  WATCH_GRACE,       /* it began in the start-up grace: never a hang */
  WATCH_HUNG,        /* it reached the threshold: a hang, its report built */
  WATCH_PERMAHANG,   /* it reached the permahang threshold: saved, unrecovered */
} WatchState;

typedef struct
{
  WatchState state;
  guint64  index;            /* of the stretch in the activity */
  gint64   start_us;         /* monotonic; moved on by ignored deadlines */
  guint64  begin_cycles;
  PerfmonHangReport *report; /* from WATCH_HUNG on */
  PerfmonStackSample *sample; /* its stack, for the jank sampler */
  char    *record_id;        /* of the saved permahang */
  /* It began a threshold or more after the one before: the loop wakes
   * rarely, and the watchdog, asleep until one of its deadlines, asks to
   * be woken at its end (see wait_for_deadline()). */
  gboolean sparse;
} Stretch;

static void
stretch_clear (Stretch *stretch)
{
  g_clear_pointer (&stretch->report, perfmon_hang_report_unref);
  g_clear_pointer (&stretch->sample, _perfmon_stack_sample_free);
  g_clear_pointer (&stretch->record_id, g_free);
  memset (stretch, 0, sizeof *stretch);
}

static double
cycles_to_ms (guint64 cycles)
{
  return (double) cycles / _perfmon_clock_cycles_per_us () / 1000.0;
}

static PerfmonLabelStack *
find_label_stack (gint64 tid)
{
  g_autoptr(GPtrArray) stacks = _perfmon_label_list_stacks ();

  for (guint i = 0; i < stacks->len; i++)
    {
      PerfmonLabelStack *stack = g_ptr_array_index (stacks, i);

      if (_perfmon_label_stack_get_thread_id (stack) == tid)
        return _perfmon_label_stack_ref (stack);
    }
  return NULL;
}

static void
add_native_frame (PerfmonHangReport   *report,
                  PerfmonModules      *modules,
                  const PerfmonPcInfo *info)
{
  if (info->module_index >= 0)
    _perfmon_hang_report_add_native_frame (report,
                                           _perfmon_modules_get_debug_name (modules, info->module_index),
                                           _perfmon_modules_get_breakpad_id (modules, info->module_index),
                                           info->offset, info->symbol, info->symbol_offset);
  else
    _perfmon_hang_report_add_native_frame (report, NULL, NULL, info->pc, info->symbol, info->symbol_offset);
}

/* The watched thread, at its first watched poll. */
static void
prepare_watched_thread (void)
{
  _perfmon_stack_capture_register_thread ();
  _perfmon_js_stack_prepare ();
}

/* Watchdog thread: the report of a stretch that just reached the
 * threshold. Takes the stack while the thread is still hung. */
/* A native frame of @sample, as @info and @modules describe it. */
static void
add_sample_native_frame (PerfmonStackSample  *sample,
                         PerfmonModules      *modules,
                         const PerfmonPcInfo *info)
{
  PerfmonStackFrame frame = {
    .pc = info->pc,
    .module_index = info->module_index,
    .offset = info->offset,
    .symbol = info->symbol,
    .symbol_offset = info->symbol_offset,
  };

  if (sample == NULL)
    return;
  if (info->module_index >= 0)
    {
      frame.path = _perfmon_modules_get_path (modules, info->module_index);
      frame.build_id = _perfmon_modules_get_build_id (modules, info->module_index);
    }
  _perfmon_stack_sample_add_frame (sample, &frame);
}

/* A label or a Python or JavaScript frame of @sample. */
static void
add_sample_script_frame (PerfmonStackSample *sample,
                         const char         *text)
{
  PerfmonStackFrame frame = { .module_index = -1, .script = text };

  if (sample != NULL)
    _perfmon_stack_sample_add_frame (sample, &frame);
}

/* Where a stretch is: its index in the loop's activity. */
typedef struct
{
  PerfmonLoopActivity *activity;
  guint64              index;
} StretchRef;

/* Whether the thread is still in stretch @index: a deadline passed, look
 * again before acting on it; a stack was taken, it is the stretch's only
 * if this holds after. A stretch ends in two ways: the thread goes idle
 * (the phase; the index stays until the next stretch), or the next one
 * begins (the index). */
static gboolean
still_in_stretch (PerfmonLoopActivity *activity,
                  guint64              index)
{
  return g_atomic_int_get (&activity->phase) == PERFMON_LOOP_BUSY &&
         __atomic_load_n (&activity->n_stretches, __ATOMIC_ACQUIRE) == index;
}

/* Whether the stretch @data (a StretchRef) still goes on. */
static gboolean
stretch_goes_on (gpointer data)
{
  StretchRef *ref = data;

  return still_in_stretch (ref->activity, ref->index);
}

/* The innermost add-on label of @label_texts (outermost first), "[add-on
 * ID] SITE", names the hang's add-on and runnable. */
static void
note_addon (PerfmonHangReport *report,
            GPtrArray         *label_texts)
{
  for (guint i = label_texts->len; i-- > 0;)
    {
      const char *text = g_ptr_array_index (label_texts, i);
      const char *end;

      if (!g_str_has_prefix (text, PERFMON_ADDON_LABEL_PREFIX) ||
          (end = strstr (text, "] ")) == NULL)
        continue;
      {
        g_autofree char *id = g_strndup (text + strlen (PERFMON_ADDON_LABEL_PREFIX),
                                         end - text - strlen (PERFMON_ADDON_LABEL_PREFIX));

        _perfmon_hang_report_set_addon (report, id, end + 2);
      }
      return;
    }
}

/* The report's frames, the same stack, outermost first, in a stack sample
 * for the jank sampler: @sample_out (if not NULL) gets it when the stack
 * could be taken while the stretch ran, else NULL. */
static PerfmonHangReport *
build_report (PerfmonHangMonitor  *self,
              gint64               tid,
              guint64              index,
              PerfmonStackSample **sample_out)
{
  g_autoptr(PerfmonStackSample) sample = NULL;
  PerfmonCapturedStack *captured = g_new0 (PerfmonCapturedStack, 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonLabelStack) labels = NULL;
  g_autoptr(GPtrArray) label_texts = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GArray) label_addresses = g_array_new (FALSE, FALSE, sizeof (guint64));
  gboolean have_stack;
  gboolean have_name;
  PerfmonCapturedStack named;
  PerfmonHangReport *report;
  /* The seed's "thread": the OS thread's name, not the thread group's. */
  g_autofree char *thread_name = _perfmon_thread_name (tid);
  g_autoptr(PerfmonMixedStack) mixed = NULL;
  g_autoptr(GPtrArray) script_frames = g_ptr_array_new ();   /* mixed's */
  guint n_dropped = 0;

  /* The runnable's name first, read without stopping the thread, so that
   * the report names it even when its stack cannot be taken in time (a
   * thread that TSan or a loaded machine keeps from answering the signal):
   * it is the hang's if the stretch is still the same one after the read. */
  have_name = _perfmon_stack_capture_runnable_name (tid, &named) &&
              still_in_stretch (self->activity, index);
  have_stack = _perfmon_stack_capture (tid, PERFMON_STACK_CAPTURE_TIMEOUT_MS, captured, &error);
  if (have_stack && !still_in_stretch (self->activity, index))
    {
      have_stack = FALSE;
      g_clear_error (&error);
      g_set_error_literal (&error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                           "the hang ended while its stack was being taken");
    }

  report = _perfmon_hang_report_new (thread_name,
                                     have_stack && captured->has_runnable_name
                                       ? captured->runnable_name
                                       : have_name ? named.runnable_name : NULL,
                                     self->process_type,
                                     /* The seed: only a "tab" process has a remote type. */
                                     g_strcmp0 (self->process_type, "tab") == 0 ? self->remote_type : NULL);
  _perfmon_annotate_report (report);
  /* How the stack was taken: "proc-syscall" (the thread was blocked in a
   * system call and was not disturbed), "signal" (it was running), or
   * "none". */
  _perfmon_hang_report_annotate (report, PERFMON_ANNOTATION_STACK_METHOD,
                                 have_stack ? _perfmon_stack_method_to_string (captured->method) : "none");
  if (have_stack && captured->interrupted_syscall)
    _perfmon_hang_report_annotate (report, PERFMON_ANNOTATION_INTERRUPTED_SYSCALL, "true");

  labels = find_label_stack (tid);
  if (labels != NULL &&
      !_perfmon_label_stack_read_full (labels, label_texts, label_addresses, &n_dropped))
    {
      g_ptr_array_set_size (label_texts, 0);
      g_array_set_size (label_addresses, 0);
    }
  note_addon (report, label_texts);
  if (have_stack && sample_out != NULL)
    sample = _perfmon_stack_sample_new (captured->has_runnable_name
                                          ? (captured->runnable_name[0] != '\0' ? captured->runnable_name
                                                                                 : "(unnamed source)")
                                          : "(not in a dispatch)");
  if (have_stack)
    {
      StretchRef stretch_ref = { self->activity, index };

      mixed = _perfmon_mixed_stack_new (captured, label_texts, label_addresses,
                                        stretch_goes_on, &stretch_ref);
      if (mixed->script_reason != NULL)
        _perfmon_hang_report_set_script_stack_unavailable (report, mixed->script_reason);
    }
  else
    {
      _perfmon_hang_report_set_stack_unavailable (report, error->message);
      mixed = _perfmon_mixed_stack_new (NULL, label_texts, label_addresses, NULL, NULL);
    }

  /* Labels and Python frames make the pseudo stack, in the same order. */
  for (guint i = 0; i < mixed->frames->len; i++)
    {
      const PerfmonMixedFrame *frame = &g_array_index (mixed->frames, PerfmonMixedFrame, i);

      if (frame->script != NULL)
        {
          g_ptr_array_add (script_frames, (gpointer) frame->script);
          _perfmon_hang_report_add_label_frame (report, frame->script);
          _perfmon_hang_report_add_pseudo_frame (report, frame->script);
          add_sample_script_frame (sample, frame->script);
        }
      else
        {
          add_native_frame (report, mixed->modules, frame->info);
          add_sample_native_frame (sample, mixed->modules, frame->info);
        }
    }

  /* Without an add-on's label, its JavaScript frame names it: sampled. */
  _perfmon_js_sampler_note_hang (report, script_frames);

  g_free (captured);
  if (sample_out != NULL)
    *sample_out = g_steal_pointer (&sample);
  return report;
}

static void
save_report_locked (PerfmonHangMonitor *self,
                    PerfmonHangReport  *report,
                    char              **record_id)
{
  g_autoptr(GError) error = NULL;
  char *id;

  if (self->store == NULL)
    return;

  _perfmon_hang_report_annotate (report, PERFMON_ANNOTATION_NOT_SAVED, NULL);
  id = _perfmon_ping_store_save_hang (self->store, *record_id, report, &error);
  if (id == NULL)
    {
      g_warning ("Could not save a hang report in %s: %s", self->pings_dir, error->message);
      /* Whoever gets the report learns it will not reach a ping. */
      _perfmon_hang_report_annotate (report, PERFMON_ANNOTATION_NOT_SAVED, error->message);
      return;
    }
  g_free (*record_id);
  *record_id = id;
}

/* Watchdog thread (never the watched one: the writer may block on the
 * journal's socket): @report in the journal, with the MESSAGE_ID of a
 * hang (of a permahang that goes on, if @ongoing) and the fields of
 * src/support/perfmon-log-event.h, so that `journalctl MESSAGE_ID=…`
 * finds every hang. When standard error is the journal
 * (a service, an application the desktop started), at MESSAGE level,
 * which GLib's default writer always sends there; in a terminal at DEBUG
 * level (G_MESSAGES_DEBUG=Perfmon shows it), as the program's own output
 * is no place for them. */
static void
log_hang (PerfmonHangReport *report,
          gboolean           ongoing)
{
  GLogLevelFlags level = g_log_writer_is_journald (STDERR_FILENO) ? G_LOG_LEVEL_MESSAGE : G_LOG_LEVEL_DEBUG;
  const char *runnable = perfmon_hang_report_get_runnable_name (report);
  double duration_ms = perfmon_hang_report_get_duration (report);
  const char *thread = perfmon_hang_report_get_thread (report);

  _perfmon_log_event (G_LOG_DOMAIN, level, ongoing ? PERFMON_MESSAGE_ID_PERMAHANG : PERFMON_MESSAGE_ID_HANG,
                      (guint) getpid (), runnable, duration_ms,
                      "%s %.0f ms in %s (thread %s of %s, pid %u)",
                      ongoing ? "hung for" : "hang of", duration_ms,
                      runnable != NULL ? runnable : "an unnamed callback",
                      thread != NULL ? thread : "?", _perfmon_process_name (),
                      (guint) getpid ());
}

/* Watchdog thread: the stretch reached the permahang threshold and still
 * goes on; save it now, in case the process never gets out of it. */
static void
save_permahang (PerfmonHangMonitor *self,
                Stretch            *stretch,
                gint64              now_us)
{
  _perfmon_hang_report_set_duration (stretch->report, (double) (now_us - stretch->start_us) / 1000.0);
  _perfmon_hang_report_annotate (stretch->report, PERFMON_ANNOTATION_UNRECOVERED, "true");
  g_mutex_lock (&self->state_lock);
  save_report_locked (self, stretch->report, &stretch->record_id);
  g_mutex_unlock (&self->state_lock);
  _perfmon_hang_report_annotate (stretch->report, PERFMON_ANNOTATION_UNRECOVERED, NULL);
  stretch->state = WATCH_PERMAHANG;
  log_hang (stretch->report, TRUE);
}

/* Watchdog thread: the caught stretch is over; the longest dispatches the
 * thread noted in it (automatic groups) name the hang. */
static void
add_dispatches (PerfmonHangMonitor *self,
                Stretch            *stretch)
{
  PerfmonLoopDispatchCopy dispatches[PERFMON_LOOP_DISPATCHES];
  guint n = _perfmon_loop_activity_read_dispatches (self->activity, stretch->index, dispatches);

  for (guint i = 0; i < n; i++)
    _perfmon_hang_report_add_dispatch (stretch->report, dispatches[i].name,
                                       cycles_to_ms (dispatches[i].cycles));
}

/* Watchdog thread: the caught stretch ended after @duration_ms. */
static void
finish_hang (PerfmonHangMonitor *self,
             Stretch            *stretch,
             double              duration_ms)
{
  g_autofree char *ping_path = NULL;
  gboolean ping_due;

  _perfmon_hang_report_set_duration (stretch->report, duration_ms);
  add_dispatches (self, stretch);
  if (self->sysprof != NULL)
    _perfmon_sysprof_add_hang (self->sysprof, stretch->report, stretch->start_us);

  g_mutex_lock (&self->state_lock);
  save_report_locked (self, stretch->report, &stretch->record_id);
  self->n_hangs_since_ping++;
  ping_due = self->n_hangs_since_ping >= (guint) g_atomic_int_get (&self->hangs_per_ping);
  if (ping_due)
    {
      g_autoptr(GError) error = NULL;

      ping_path = write_ping_locked (self, &error);
      if (error != NULL)
        g_warning ("Could not write the hang ping: %s", error->message);
    }
  g_mutex_unlock (&self->state_lock);

  __atomic_fetch_add (&self->n_hangs, 1, __ATOMIC_RELAXED);
  log_hang (stretch->report, FALSE);
  if (self->ongoing_func != NULL)
    self->ongoing_func (NULL, 0, self->ongoing_data);
  queue_emission (self, stretch->report, NULL);
  if (ping_path != NULL)
    queue_emission (self, NULL, ping_path);
  stretch_clear (stretch);
}

/* The watchdog thread's state: the stretch it follows and its view of the
 * loop. Each round looks at what the thread published, then takes one
 * step: the end of a hang, a sleep while the loop is idle, or a sleep
 * until the stretch's next deadline and what is due on it. */
typedef struct
{
  PerfmonHangMonitor  *self;
  PerfmonLoopActivity *activity;
  PerfmonJankSampler  *sampler;
  /* Samples long stretches' JavaScript stacks for add-ons: see
   * perfmon-js-sampler.c. */
  PerfmonJsSampler    *js_sampler;
  Stretch              stretch;
  gint64               grace_end_us;
  /* When the watchdog last woke too late (see wait_for_deadline()): busy
   * time before that is not counted, whichever stretch it belongs to. */
  gint64               resumed_us;
  /* /proc/thread-self/schedstat of the watchdog thread, or -1. */
  int                  schedstat_fd;
  /* Its last reading (µs, -1 if unknown), and when it was taken. */
  gint64               run_delay_us;
  gint64               run_delay_read_us;
} Watchdog;

/* A reading of the watchdog's run delay this recent stands for one taken
 * before a sleep: see watchdog_run_delay_before_us(). */
#define RUN_DELAY_FRESH_US G_USEC_PER_SEC

/* The time the watchdog thread has waited on a run queue, in µs (the
 * second field of its schedstat), or -1 if unknown; kept as the last
 * reading, taken at @now_us. */
static gint64
watchdog_run_delay_us (Watchdog *watchdog,
                       gint64    now_us)
{
  char buffer[96];
  guint64 run_ns, wait_ns;
  ssize_t n;

  watchdog->run_delay_us = -1;
  watchdog->run_delay_read_us = now_us;
  if (watchdog->schedstat_fd < 0)
    return -1;
  n = pread (watchdog->schedstat_fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0)
    return -1;
  buffer[n] = '\0';
  if (sscanf (buffer, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &run_ns, &wait_ns) != 2)
    return -1;
  watchdog->run_delay_us = (gint64) (wait_ns / 1000);
  return watchdog->run_delay_us;
}

/* The run delay before a sleep that begins at @now_us, against which the
 * delay after it is measured if the watchdog wakes late. The last reading
 * serves while it is under RUN_DELAY_FRESH_US old: a reading (a pread and
 * a parse) at every sleep was a sixth of the watchdog's CPU in a busy
 * GNOME Shell, which makes ~30 sleeps a second. An older reading can only
 * add the run-queue waits of the watchdog's last second to the delay
 * that explains a late wake-up, so a stop shorter than those waits is
 * taken for load: on a machine busy enough for that, a late wake-up is
 * load anyway. */
static gint64
watchdog_run_delay_before_us (Watchdog *watchdog,
                              gint64    now_us)
{
  if (watchdog->run_delay_us >= 0 && now_us - watchdog->run_delay_read_us < RUN_DELAY_FRESH_US)
    return watchdog->run_delay_us;
  return watchdog_run_delay_us (watchdog, now_us);
}

/* Whether the watchdog, woken @late_us after its deadline, was kept
 * from running by something other than a busy machine: the process was
 * stopped (SIGSTOP, a debugger). The time it waited for a CPU after its
 * timer fired (@run_delay_us, -1 if unknown) is the machine's load: the
 * watched thread went on meanwhile, and the stretch's length stands. */
gboolean
_perfmon_hang_watchdog_was_stopped (gint64 late_us,
                                    gint64 run_delay_us,
                                    gint64 threshold_us)
{
  if (run_delay_us > 0)
    late_us -= run_delay_us;
  return late_us > threshold_us / 2;
}

/* What the thread published, and the thresholds, as of one round. */
typedef struct
{
  gint    phase;
  guint64 index;
  gint64  tid;
  gint64  threshold_us;
  gint64  permahang_us;
} Look;

static void
look_at_loop (Watchdog *watchdog,
              Look     *look)
{
  PerfmonLoopActivity *activity = watchdog->activity;

  look->phase = g_atomic_int_get (&activity->phase);
  look->index = __atomic_load_n (&activity->n_stretches, __ATOMIC_ACQUIRE);
  look->tid = __atomic_load_n (&activity->thread_id, __ATOMIC_ACQUIRE);
  look->threshold_us = (gint64) g_atomic_int_get (&watchdog->self->threshold_ms) * 1000;
  look->permahang_us = (gint64) g_atomic_int_get (&watchdog->self->permahang_threshold_ms) * 1000;
}

static gboolean
is_hang (const Stretch *stretch)
{
  return stretch->state == WATCH_HUNG || stretch->state == WATCH_PERMAHANG;
}

/* The followed hang is over (the thread is idle, or in a new stretch):
 * report it with the thread's own measure of it. The end is read
 * consistently with the stretch's identity: the thread writes a stretch's
 * end before it moves on to the next, and the ring is large enough that
 * the slot is not reused while the watchdog looks. */
static void
end_hang (Watchdog *watchdog)
{
  Stretch *stretch = &watchdog->stretch;
  guint64 end = __atomic_load_n (&_perfmon_loop_activity_stretch (watchdog->activity, stretch->index)->end,
                                 __ATOMIC_ACQUIRE);
  double duration_ms = end > stretch->begin_cycles
    ? cycles_to_ms (end - stretch->begin_cycles)
    : (double) (g_get_monotonic_time () - stretch->start_us) / 1000.0;

  finish_hang (watchdog->self, stretch, duration_ms);
}

/* The loop waits: sleep until it is busy again, with no deadline (the
 * thread wakes us), unless a jank session still has samples to take or a
 * log to write. */
static void
sleep_while_idle (Watchdog *watchdog)
{
  gint64 jank_next;

  stretch_clear (&watchdog->stretch);
  jank_next = tick_jank (watchdog->self, watchdog->sampler, 0);
  g_mutex_unlock (&watchdog->self->work_lock);
  if (_perfmon_loop_activity_sleep_while_idle (watchdog->activity, jank_next))
    __atomic_fetch_add (&watchdog->self->n_wakeups, 1, __ATOMIC_RELAXED);
  g_mutex_lock (&watchdog->self->work_lock);
}

/* Follows stretch @index, if it is not followed yet. FALSE if the thread
 * moved on meanwhile: look again. */
static gboolean
follow_stretch (Watchdog *watchdog,
                guint64   index)
{
  Stretch *stretch = &watchdog->stretch;

  if (stretch->state != WATCH_IDLE && stretch->index == index)
    return TRUE;

  stretch_clear (stretch);
  stretch->state = WATCH_BUSY;
  stretch->index = index;
  stretch->begin_cycles = __atomic_load_n (&_perfmon_loop_activity_stretch (watchdog->activity, index)->begin,
                                           __ATOMIC_RELAXED);
  stretch->start_us = MAX (_perfmon_clock_cycles_to_monotonic_us (stretch->begin_cycles), watchdog->resumed_us);
  if (index > 1)
    {
      guint64 previous = __atomic_load_n (&_perfmon_loop_activity_stretch (watchdog->activity, index - 1)->begin,
                                          __ATOMIC_RELAXED);
      guint64 threshold = _perfmon_clock_us_to_cycles ((gint64) g_atomic_int_get (&watchdog->self->threshold_ms) * 1000);

      stretch->sparse = previous != 0 && stretch->begin_cycles > previous &&
                        stretch->begin_cycles - previous >= threshold;
    }
  /* Read back: if the thread moved on meanwhile, begin belongs to a later
   * stretch (and the one before it may be a later one's too). */
  if (__atomic_load_n (&watchdog->activity->n_stretches, __ATOMIC_ACQUIRE) != index)
    {
      stretch_clear (stretch);
      return FALSE;
    }
  return TRUE;
}

/* A jank stack session began on the followed stretch: give it the stack
 * the hang monitor took of the stretch while it ran, or take one now, the
 * same way, if the stretch still runs. */
static void
give_jank_stack (Watchdog   *watchdog,
                 const Look *look)
{
  Stretch *stretch = &watchdog->stretch;
  g_autoptr(PerfmonStackSample) taken = NULL;
  guint64 index;

  if (!_perfmon_jank_sampler_wants_stack (watchdog->sampler, &index) || index != stretch->index)
    return;
  /* The report itself is not kept: only the stack it took. */
  if (stretch->sample == NULL && still_in_stretch (watchdog->activity, index))
    {
      PerfmonHangReport *report = build_report (watchdog->self, look->tid, index, &taken);

      g_clear_pointer (&report, perfmon_hang_report_unref);
    }
  if (stretch->sample != NULL || taken != NULL)
    _perfmon_jank_sampler_add_running_stack (watchdog->sampler, index,
                                             stretch->sample != NULL ? stretch->sample : taken);
}

/* When the followed stretch next needs the watchdog: its next threshold,
 * the next look whether a hang ended, or the jank sampler's next tick. */
static gint64
stretch_deadline (Watchdog   *watchdog,
                  const Look *look)
{
  const Stretch *stretch = &watchdog->stretch;
  gint64 end_check_us = g_get_monotonic_time () + HANG_END_CHECK_MS * 1000;
  gint64 deadline_us = G_MAXINT64;
  gint64 jank_next_us;

  switch (stretch->state)
    {
    case WATCH_IDLE:   /* not reached: follow_stretch() follows one */
    case WATCH_BUSY:
      deadline_us = stretch->start_us + look->threshold_us;
      break;
    case WATCH_GRACE:
      deadline_us = g_get_monotonic_time () + look->threshold_us;
      break;
    case WATCH_HUNG:
      deadline_us = MIN (stretch->start_us + look->permahang_us, end_check_us);
      break;
    case WATCH_PERMAHANG:
      deadline_us = end_check_us;
      break;
    }
  jank_next_us = tick_jank (watchdog->self, watchdog->sampler, stretch->start_us);
  give_jank_stack (watchdog, look);
  deadline_us = MIN (deadline_us,
                     _perfmon_js_sampler_deadline (watchdog->js_sampler, look->tid, stretch->index,
                                                   _perfmon_clock_cycles_to_monotonic_us (stretch->begin_cycles)));
  return MIN (deadline_us, jank_next_us);
}

/* Sleeps until @deadline_us. TRUE if it passed and is to be acted on,
 * in @now_us; FALSE to look again (a stop, a spurious wake-up, a late one). */
static gboolean
wait_for_deadline (Watchdog   *watchdog,
                   const Look *look,
                   gint64      deadline_us,
                   gint64     *now_us)
{
  gint64 run_delay_before_us;
  guint64 n_exact_ends;

  *now_us = g_get_monotonic_time ();
  if (*now_us >= deadline_us)
    return TRUE;

  run_delay_before_us = watchdog_run_delay_before_us (watchdog, *now_us);
  g_mutex_unlock (&watchdog->self->work_lock);
  /* A stretch of a loop that wakes seldom: woken at its end, while the
   * process still runs, rather than at the deadline, after the loop went
   * to sleep. In a large process (GNOME Shell) a wake-up then cost this
   * thread several times as much on the project's VMs
   * (tests/bench/bench-wakeup); the thread's price is one system call at
   * the end of such a stretch, at most 1000 / threshold_ms a second.
   * Likewise, in a dispatch or handler charged exactly the JS sampler
   * has nothing to take: woken at its end (the thread's word), or at the
   * stretch's. */
  if (_perfmon_js_sampler_waits_for_exact_end (watchdog->js_sampler, watchdog->stretch.index, &n_exact_ends))
    _perfmon_loop_activity_sleep_until_end (watchdog->activity, watchdog->stretch.index, &n_exact_ends,
                                            deadline_us);
  else if (watchdog->stretch.sparse)
    _perfmon_loop_activity_sleep_until_end (watchdog->activity, watchdog->stretch.index, NULL, deadline_us);
  else
    _perfmon_loop_activity_sleep_until (watchdog->activity, deadline_us);
  g_mutex_lock (&watchdog->self->work_lock);
  __atomic_fetch_add (&watchdog->self->n_wakeups, 1, __ATOMIC_RELAXED);
  *now_us = g_get_monotonic_time ();
  _perfmon_js_sampler_check_exact_end (watchdog->js_sampler, watchdog->stretch.index, *now_us);
  if (_perfmon_loop_activity_watcher_stopping (watchdog->activity))
    return FALSE;
  /* Woken more than half a threshold late, beyond the time this thread
   * waited for a CPU: the process was stopped. The thread could not run
   * either, and when it stopped is unknown, so the stretch's length says
   * nothing: ignore this deadline and give the stretch a whole threshold
   * from now. A hang that goes on is caught then. Lateness that a loaded
   * machine explains (the run queue) is not that: the watched thread's
   * stretch went on, and a hang the load delayed is still one. */
  if (*now_us - deadline_us > look->threshold_us / 2 &&
      _perfmon_hang_watchdog_was_stopped (*now_us - deadline_us,
                                          run_delay_before_us >= 0
                                            ? watchdog_run_delay_us (watchdog, *now_us) - run_delay_before_us
                                            : -1,
                                          look->threshold_us))
    {
      watchdog->resumed_us = *now_us;
      watchdog->stretch.start_us = *now_us;
      return FALSE;
    }
  return *now_us >= deadline_us;   /* else a spurious wake-up */
}

/* A deadline of the followed stretch passed at @now_us, and the thread is
 * still in it: what is due. */
static void
on_deadline (Watchdog   *watchdog,
             const Look *look,
             gint64      now_us)
{
  PerfmonHangMonitor *self = watchdog->self;
  Stretch *stretch = &watchdog->stretch;
  gint64 busy_us = now_us - stretch->start_us;

  _perfmon_js_sampler_tick (watchdog->js_sampler, stretch->index, now_us);
  switch (stretch->state)
    {
    case WATCH_BUSY:
      if (busy_us < look->threshold_us)
        return;   /* the jank sampler's deadline */
      if (stretch->start_us < watchdog->grace_end_us)
        {
          /* Start-up work: not a hang. Look again a threshold later in
           * case the thread moved on to a stretch that is one. */
          stretch->state = WATCH_GRACE;
          return;
        }
      __atomic_store_n (&self->last_detection_latency_us, busy_us, __ATOMIC_RELAXED);
      stretch->report = build_report (self, look->tid, stretch->index, &stretch->sample);
      /* If stop() came meanwhile, the report stands: stop() ends the
       * stretch of the thread it is called on before anything else, so
       * a stack taken in it was dropped above, and a stretch that goes
       * on is the program's (stop() called on another thread). (The
       * report was dropped whenever stop() came while it was built: a
       * loaded machine lost a Python program's only hang under perfmon
       * run, when naming its stack under AddressSanitizer took 250 ms,
       * longer than the rest of its 400-ms hang.) */
      stretch->state = WATCH_HUNG;
      if (self->ongoing_func != NULL)
        self->ongoing_func (stretch->report, g_get_real_time () - (g_get_monotonic_time () - stretch->start_us),
                            self->ongoing_data);
      return;
    case WATCH_HUNG:
      if (busy_us >= look->permahang_us)
        save_permahang (self, stretch, now_us);
      return;
    case WATCH_IDLE:
    case WATCH_GRACE:
    case WATCH_PERMAHANG:
      return;
    }
}

static gpointer
watchdog_main (gpointer data)
{
  PerfmonHangMonitor *self = data;
  Watchdog watchdog;

  g_mutex_lock (&self->work_lock);
  watchdog = (Watchdog) {
    .self = self,
    .activity = self->activity,
    .sampler = _perfmon_jank_sampler_new (self->activity, g_get_real_time ()),
    .js_sampler = _perfmon_js_sampler_new (self->monitor),
    .grace_end_us = self->start_time_us + (gint64) self->startup_grace_ms * 1000,
    /* Of this thread: opened here. */
    .schedstat_fd = open ("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC),
    .run_delay_us = -1,
  };

  /* A first tick, on an idle loop. (Jank traces start the flight
   * recorder when a jank is detected, not before: see the sampler.) */
  tick_jank (self, watchdog.sampler, 0);

  while (!_perfmon_loop_activity_watcher_stopping (watchdog.activity))
    {
      Look look;
      gint64 now_us;

      look_at_loop (&watchdog, &look);
      _perfmon_js_sampler_look (watchdog.js_sampler, watchdog.activity, look.phase == PERFMON_LOOP_BUSY,
                                look.index);
      if (is_hang (&watchdog.stretch) &&
          (look.phase != PERFMON_LOOP_BUSY || look.index != watchdog.stretch.index))
        end_hang (&watchdog);
      else if (look.phase != PERFMON_LOOP_BUSY || look.tid == 0)
        sleep_while_idle (&watchdog);
      else if (follow_stretch (&watchdog, look.index) &&
               wait_for_deadline (&watchdog, &look, stretch_deadline (&watchdog, &look), &now_us) &&
               still_in_stretch (watchdog.activity, watchdog.stretch.index))
        on_deadline (&watchdog, &look, now_us);
    }

  /* Stopped during a hang: report it as far as it went; or stopped after
   * it ended, before this thread saw the end: with its own length. */
  if (is_hang (&watchdog.stretch) && !still_in_stretch (watchdog.activity, watchdog.stretch.index))
    end_hang (&watchdog);
  else if (is_hang (&watchdog.stretch))
    finish_hang (self, &watchdog.stretch,
                 (double) (g_get_monotonic_time () - watchdog.stretch.start_us) / 1000.0);
  stretch_clear (&watchdog.stretch);
  _perfmon_jank_sampler_free (watchdog.sampler);
  _perfmon_js_sampler_free (watchdog.js_sampler);
  if (watchdog.schedstat_fd >= 0)
    close (watchdog.schedstat_fd);
  g_mutex_unlock (&self->work_lock);

  return NULL;
}

/* --- pings --------------------------------------------------------------- */

/* Under state_lock. */
static char *
write_ping_locked (PerfmonHangMonitor *self,
                   GError            **error)
{
  PerfmonPingInfo info = { 0, };
  gint64 now_us = g_get_monotonic_time ();
  g_autofree char *app_name = NULL;
  char *path;

  if (self->store == NULL)
    return NULL;

  app_name = app_name_locked (self);
  info.app_name = app_name;
  info.app_version = self->app_version;
  info.build_id = self->app_build_id;
  info.channel = self->app_channel;
  info.time_since_last_ping_ms = (now_us - self->last_ping_time_us) / 1000;

  path = _perfmon_ping_store_write_ping (self->store, &info, error);
  if (path != NULL)
    {
      self->last_ping_time_us = now_us;
      self->n_hangs_since_ping = 0;
    }
  return path;
}

/**
 * perfmon_hang_monitor_flush_ping:
 * @self: a #PerfmonHangMonitor
 * @error: return location for a #GError
 *
 * Writes a ping now with every hang saved and not yet sent (by this
 * process, or left by an earlier one that died) and emits
 * [signal@HangMonitor::ping]. The ping is written atomically to
 * [property@HangMonitor:pings-dir]; the hangs it carries are then removed
 * from the store.
 *
 * Returns: (transfer full) (nullable): the ping's path, or %NULL if there was
 *   no hang to send (and then @error is not set) or on error
 *
 * Since: 0.1
 */
char *
perfmon_hang_monitor_flush_ping (PerfmonHangMonitor *self,
                                 GError            **error)
{
  char *path;

  g_return_val_if_fail (PERFMON_IS_HANG_MONITOR (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_mutex_lock (&self->state_lock);
  if (self->store == NULL)
    {
      g_mutex_unlock (&self->state_lock);
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "The hang monitor is not running: start it first");
      return NULL;
    }
  path = write_ping_locked (self, error);
  g_mutex_unlock (&self->state_lock);

  if (path != NULL)
    g_signal_emit (self, signals[SIGNAL_PING], 0, path);
  return path;
}

/* --- starting and stopping --------------------------------------------- */

/* See perfmon-hang-monitor-private.h. */
void
_perfmon_hang_monitor_set_step_aside (PerfmonHangMonitor             *self,
                                      PerfmonHangMonitorStepAsideFunc func,
                                      gpointer                        data)
{
  g_return_if_fail (PERFMON_IS_HANG_MONITOR (self));

  self->step_aside_func = func;
  self->step_aside_data = data;
}

/* At start(), when another hang monitor watches the same monitor: if that
 * one steps aside (perfmon run's) and was started on this thread, stops it
 * and watches instead. */
static gboolean
take_over_from_yielding (PerfmonHangMonitor *self)
{
  PerfmonHangMonitor *yielding = NULL;

  g_mutex_lock (&running_lock);
  for (guint i = 0; running_monitors != NULL && i < running_monitors->len; i++)
    {
      PerfmonHangMonitor *other = g_ptr_array_index (running_monitors, i);

      if (other != self && other->activity == self->activity &&
          other->step_aside_func != NULL && other->owner_thread == g_thread_self ())
        yielding = g_object_ref (other);
    }
  g_mutex_unlock (&running_lock);
  if (yielding == NULL)
    return FALSE;

  perfmon_hang_monitor_stop (yielding);
  if (!_perfmon_loop_activity_watch (self->activity, prepare_watched_thread))
    {
      g_autoptr(GError) error = NULL;

      /* Someone else was quicker: the yielding one goes back to work. */
      if (!perfmon_hang_monitor_start (yielding, &error))
        g_warning ("Could not restart a hang monitor: %s", error->message);
      g_object_unref (yielding);
      return FALSE;
    }
  self->stepped_aside = yielding;
  yielding->step_aside_func (yielding, self, yielding->step_aside_data);
  return TRUE;
}

/* At the end of stop(): the monitor that stepped aside for this one
 * watches again. */
static void
give_back_to_yielding (PerfmonHangMonitor *self)
{
  g_autoptr(PerfmonHangMonitor) yielding = g_steal_pointer (&self->stepped_aside);
  g_autoptr(GError) error = NULL;

  if (yielding == NULL || yielding->step_aside_func == NULL)
    return;
  yielding->step_aside_func (yielding, NULL, yielding->step_aside_data);
  if (!perfmon_hang_monitor_start (yielding, &error))
    g_warning ("Could not restart a hang monitor: %s", error->message);
}

/**
 * perfmon_hang_monitor_start:
 * @self: a #PerfmonHangMonitor
 * @error: return location for a #GError
 *
 * Starts the watchdog thread. The monitor must be attached to a
 * #GMainContext (perfmon_monitor_new() with a context, of which perfmon
 * watches 32 at most), or have none and have its thread mark its units of
 * work (perfmon_monitor_work_begin()), and no other hang monitor may watch
 * it (except the one of `perfmon run`, which steps aside for the
 * program's own until that one stops). Opens the ping store in
 * [property@HangMonitor:pings-dir]; hangs that an earlier process left there
 * (a permahang it died in, hangs it had no time to send) go out in a ping
 * right away.
 *
 * Returns: %TRUE if the watchdog runs (also if it already ran)
 *
 * Since: 0.1
 */
gboolean
perfmon_hang_monitor_start (PerfmonHangMonitor *self,
                            GError            **error)
{
  g_autofree char *ping_path = NULL;

  g_return_val_if_fail (PERFMON_IS_HANG_MONITOR (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (self->watchdog != NULL)
    return TRUE;

  if (!_perfmon_monitor_is_attached (self->monitor))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "The monitor's main context is not watched: perfmon watches "
                   "no more than %d main contexts at once", PERFMON_MONITOR_MAX_CONTEXTS);
      return FALSE;
    }
  if (!_perfmon_stack_capture_init (error))
    return FALSE;

  if (!_perfmon_loop_activity_watch (self->activity, prepare_watched_thread) &&
      !take_over_from_yielding (self))
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "Another hang monitor already watches this monitor");
      return FALSE;
    }

  g_mutex_lock (&self->state_lock);
  self->store = _perfmon_ping_store_open (self->pings_dir, error);
  if (self->store == NULL)
    {
      g_mutex_unlock (&self->state_lock);
      _perfmon_loop_activity_unwatch (self->activity);
      return FALSE;
    }
  self->start_time_us = g_get_monotonic_time ();
  self->last_ping_time_us = self->start_time_us;
  self->n_hangs_since_ping = 0;
  if (_perfmon_ping_store_count_pending (self->store) > 0)
    {
      g_autoptr(GError) ping_error = NULL;

      ping_path = write_ping_locked (self, &ping_error);
      if (ping_error != NULL)
        g_warning ("Could not send the hangs of an earlier run: %s", ping_error->message);
    }
  g_mutex_unlock (&self->state_lock);


  g_clear_pointer (&self->owner_context, g_main_context_unref);
  self->owner_context = g_main_context_ref_thread_default ();
  self->watchdog_pid = getpid ();
  /* Under Sysprof: before the watchdog, which reads it. */
  self->sysprof = _perfmon_sysprof_new_from_env (self->monitor);
  self->owner_thread = g_thread_self ();
  self->watchdog = g_thread_new ("perfmon-hang", watchdog_main, self);

  g_mutex_lock (&running_lock);
  if (running_monitors == NULL)
    running_monitors = g_ptr_array_new ();
  g_ptr_array_add (running_monitors, self);
  if (!exit_handler_installed)
    {
      exit_handler_installed = atexit (flush_pings_at_exit) == 0;
      pthread_atfork (before_fork, after_fork, after_fork);
    }
  g_mutex_unlock (&running_lock);

  if (ping_path != NULL)
    queue_emission (self, NULL, ping_path);
  return TRUE;
}

/**
 * perfmon_hang_monitor_stop:
 * @self: a #PerfmonHangMonitor
 *
 * Stops the watchdog thread and writes a ping with the hangs not yet sent,
 * if any (emitting [signal@HangMonitor::ping]). A hang going on is reported
 * as far as it went. Does nothing if the watchdog does not run.
 *
 * In a child forked without exec, the watchdog thread of a monitor started
 * in the parent did not come along, and the child gets no hang reports from
 * it. There this only forgets the parent's watchdog: it joins nothing and
 * writes nothing (the pending hangs and the ping are the parent's). Call it
 * on the thread that forked, then perfmon_hang_monitor_start() for a
 * watchdog of the child's own.
 *
 * Since: 0.1
 */
void
perfmon_hang_monitor_stop (PerfmonHangMonitor *self)
{
  g_return_if_fail (PERFMON_IS_HANG_MONITOR (self));

  if (self->watchdog == NULL)
    return;

  /* On the watched thread, perfmon's own stop() is no work of the
   * program: its busy stretch ends here, before the watchdog is told to
   * stop, so that a stack the watchdog takes from now on is not the
   * hang's (see build_report()). Balanced after the join, by which time
   * the thread is no longer watched: it begins no stretch. */
  _perfmon_loop_activity_idle_begin ();
  stop_watchdog (self);
  _perfmon_loop_activity_idle_end ();
}

static void
stop_watchdog (PerfmonHangMonitor *self)
{
  g_autofree char *path = NULL;
  g_autoptr(GError) error = NULL;

  g_mutex_lock (&running_lock);
  g_ptr_array_remove_fast (running_monitors, self);
  g_mutex_unlock (&running_lock);

  if (forked_away (self))
    {
      /* A child forked without exec: there is no watchdog to join (its
       * GThread is left, a few bytes, since freeing it would detach a
       * thread of the parent), and the pending hangs and the ping are the
       * parent's to send. Then start() may run a watchdog of the child's
       * own. */
      self->watchdog = NULL;
      _perfmon_loop_activity_after_fork (self->activity);
      _perfmon_loop_activity_unwatch (self->activity);
      g_mutex_lock (&self->state_lock);
      g_clear_pointer (&self->store, _perfmon_ping_store_forget);
      g_mutex_unlock (&self->state_lock);
      return;
    }

  _perfmon_loop_activity_stop_watcher (self->activity);
  g_thread_join (g_steal_pointer (&self->watchdog));
  _perfmon_sysprof_free (g_steal_pointer (&self->sysprof),
                         perfmon_monitor_get_context (self->monitor) == self->owner_context);
  _perfmon_loop_activity_unwatch (self->activity);

  g_mutex_lock (&self->state_lock);
  path = write_ping_locked (self, &error);
  g_clear_pointer (&self->store, _perfmon_ping_store_close);
  g_mutex_unlock (&self->state_lock);

  if (error != NULL)
    g_warning ("Could not write the hang ping: %s", error->message);

  deliver_queued_emissions (self);

  if (path != NULL)
    g_signal_emit (self, signals[SIGNAL_PING], 0, path);

  give_back_to_yielding (self);
}

/**
 * perfmon_hang_monitor_is_running:
 * @self: a #PerfmonHangMonitor
 *
 * Gets whether the hang monitor was started and not stopped since.
 *
 * Returns: %TRUE between perfmon_hang_monitor_start() and
 *   perfmon_hang_monitor_stop()
 *
 * Since: 0.1
 */
gboolean
perfmon_hang_monitor_is_running (PerfmonHangMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_HANG_MONITOR (self), FALSE);

  return self->watchdog != NULL;
}

/* --- configuration ------------------------------------------------------ */

/* report_times_per_app "can be set only once for the processes with the
 * same PID": it is the process's, whichever hang monitor set it. */
static GMutex process_report_times_lock;
static guint process_report_times;      /* under process_report_times_lock */
static gboolean process_report_times_set;

static void
overlay_process_report_times (PerfmonJankConfig *config)
{
  if (process_report_times_set)
    {
      config->report_times_per_app = process_report_times;
      config->report_times_set = TRUE;
    }
}

/**
 * perfmon_hang_monitor_set_event_config:
 * @self: a #PerfmonHangMonitor
 * @name: the event, "MAIN_THREAD_JANK"
 * @params: (nullable) (element-type utf8 utf8): parameter names and their
 *   decimal values: `log_type` (0, 1 or 2), and with `log_type` 1
 *   `sample_interval` (ms, 50 to 500), `ignore_startup_time` (s, at least 3),
 *   `sample_count` (1 to 2500 / sample_interval − 4) and
 *   `report_times_per_app` (1 to 3, set once per process)
 * @error: return location for a #GError
 *
 * Configures the main-thread jank event, as HiAppEvent's setEventConfig()
 * does. On any error (an unknown event, an unknown parameter, a value out of
 * its range) the error names the parameter and its allowed range, and the
 * configuration in force stays as it was.
 *
 * Returns: %TRUE if the configuration was applied
 *
 * Since: 0.1
 */
gboolean
perfmon_hang_monitor_set_event_config (PerfmonHangMonitor *self,
                                       const char         *name,
                                       GHashTable         *params,
                                       GError            **error)
{
  PerfmonJankConfig next;
  gboolean applied;

  g_return_val_if_fail (PERFMON_IS_HANG_MONITOR (self), FALSE);
  g_return_val_if_fail (name != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  g_mutex_lock (&process_report_times_lock);
  g_mutex_lock (&self->state_lock);
  next = self->jank_config;
  overlay_process_report_times (&next);
  applied = _perfmon_jank_config_apply (&next, name, params, error);
  if (applied)
    {
      self->jank_config = next;
      if (next.report_times_set)
        {
          process_report_times = next.report_times_per_app;
          process_report_times_set = TRUE;
        }
    }
  g_mutex_unlock (&self->state_lock);
  g_mutex_unlock (&process_report_times_lock);
  return applied;
}

void
_perfmon_hang_monitor_get_jank_config (PerfmonHangMonitor *self,
                                       PerfmonJankConfig  *config)
{
  g_mutex_lock (&process_report_times_lock);
  g_mutex_lock (&self->state_lock);
  *config = self->jank_config;
  overlay_process_report_times (config);
  g_mutex_unlock (&self->state_lock);
  g_mutex_unlock (&process_report_times_lock);
}

guint64
_perfmon_hang_monitor_count_wakeups (PerfmonHangMonitor *self)
{
  return __atomic_load_n (&self->n_wakeups, __ATOMIC_RELAXED);
}

guint64
_perfmon_hang_monitor_count_hangs (PerfmonHangMonitor *self)
{
  return __atomic_load_n (&self->n_hangs, __ATOMIC_RELAXED);
}

void
_perfmon_hang_monitor_set_ongoing_func (PerfmonHangMonitor     *self,
                                        PerfmonHangOngoingFunc  func,
                                        gpointer                data)
{
  g_return_if_fail (PERFMON_IS_HANG_MONITOR (self));

  self->ongoing_func = func;
  self->ongoing_data = data;
}

gint64
_perfmon_hang_monitor_get_last_detection_latency_us (PerfmonHangMonitor *self)
{
  return __atomic_load_n (&self->last_detection_latency_us, __ATOMIC_RELAXED);
}

/**
 * perfmon_hang_monitor_new:
 * @monitor: the monitor of the thread to watch; it must have a #GMainContext
 *
 * Creates a hang monitor that watches the thread of @monitor. Configure it
 * with its properties and perfmon_hang_monitor_set_event_config(), then
 * call perfmon_hang_monitor_start().
 *
 * Returns: (transfer full): a new hang monitor, not yet started
 *
 * Since: 0.1
 */
PerfmonHangMonitor *
perfmon_hang_monitor_new (PerfmonMonitor *monitor)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (monitor), NULL);

  return g_object_new (PERFMON_TYPE_HANG_MONITOR, "monitor", monitor, NULL);
}

/**
 * perfmon_hang_monitor_get_monitor:
 * @self: a #PerfmonHangMonitor
 *
 * Gets the monitor whose thread this hang monitor watches.
 *
 * Returns: (transfer none): the monitor whose thread is watched
 *
 * Since: 0.1
 */
PerfmonMonitor *
perfmon_hang_monitor_get_monitor (PerfmonHangMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_HANG_MONITOR (self), NULL);

  return self->monitor;
}

/**
 * perfmon_hang_monitor_get_threshold:
 * @self: a #PerfmonHangMonitor
 *
 * Gets [property@Perfmon.HangMonitor:threshold].
 *
 * Returns: the hang threshold in ms
 *
 * Since: 0.1
 */
guint
perfmon_hang_monitor_get_threshold (PerfmonHangMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_HANG_MONITOR (self), 0);

  return g_atomic_int_get (&self->threshold_ms);
}

/**
 * perfmon_hang_monitor_set_threshold:
 * @self: a #PerfmonHangMonitor
 * @threshold_ms: the new threshold, 1 ms or more
 *
 * Sets [property@HangMonitor:threshold]; a running watchdog uses it from
 * the next busy stretch.
 *
 * Since: 0.1
 */
void
perfmon_hang_monitor_set_threshold (PerfmonHangMonitor *self,
                                    guint               threshold_ms)
{
  g_return_if_fail (PERFMON_IS_HANG_MONITOR (self));

  g_object_set (self, "threshold", threshold_ms, NULL);
}

/**
 * perfmon_hang_monitor_get_permahang_threshold:
 * @self: a #PerfmonHangMonitor
 *
 * Gets [property@Perfmon.HangMonitor:permahang-threshold].
 *
 * Returns: the permahang threshold in ms
 *
 * Since: 0.1
 */
guint
perfmon_hang_monitor_get_permahang_threshold (PerfmonHangMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_HANG_MONITOR (self), 0);

  return g_atomic_int_get (&self->permahang_threshold_ms);
}

/**
 * perfmon_hang_monitor_set_permahang_threshold:
 * @self: a #PerfmonHangMonitor
 * @threshold_ms: the new permahang threshold, 1 ms or more
 *
 * Sets [property@HangMonitor:permahang-threshold].
 *
 * Since: 0.1
 */
void
perfmon_hang_monitor_set_permahang_threshold (PerfmonHangMonitor *self,
                                              guint               threshold_ms)
{
  g_return_if_fail (PERFMON_IS_HANG_MONITOR (self));

  g_object_set (self, "permahang-threshold", threshold_ms, NULL);
}

/* --- GObject ------------------------------------------------------------ */

static char *
default_state_dir (const char *leaf)
{
  return g_build_filename (g_get_user_state_dir (), "perfmon", leaf, NULL);
}

static void
perfmon_hang_monitor_dispose (GObject *object)
{
  PerfmonHangMonitor *self = PERFMON_HANG_MONITOR (object);

  perfmon_hang_monitor_stop (self);

  G_OBJECT_CLASS (perfmon_hang_monitor_parent_class)->dispose (object);
}

static void
perfmon_hang_monitor_finalize (GObject *object)
{
  PerfmonHangMonitor *self = PERFMON_HANG_MONITOR (object);

  g_clear_object (&self->stepped_aside);
  g_clear_object (&self->monitor);
  g_clear_pointer (&self->owner_context, g_main_context_unref);
  g_free (self->pings_dir);
  g_free (self->log_dir);
  g_free (self->process_type);
  g_free (self->remote_type);
  g_free (self->app_name);
  g_free (self->app_version);
  g_free (self->app_channel);
  g_free (self->app_build_id);
  g_mutex_clear (&self->state_lock);
  g_mutex_clear (&self->work_lock);
  g_mutex_clear (&self->emissions_lock);

  G_OBJECT_CLASS (perfmon_hang_monitor_parent_class)->finalize (object);
}

static void
replace_string (char      **field,
                const char *value,
                const char *default_leaf)
{
  g_free (*field);
  *field = value != NULL ? g_strdup (value)
                         : default_leaf != NULL ? default_state_dir (default_leaf) : NULL;
}

/* The identity properties: strings of at most 128 bytes; a build id is
 * 14 digits (YYYYmmddHHMMSS), as Mozilla's pipeline wants. A bad value is
 * a critical and leaves the property as it was. */
static void
set_identity (PerfmonHangMonitor *self,
              guint               prop_id,
              const char         *value)
{
  char **field = prop_id == PROP_APP_NAME ? &self->app_name
                 : prop_id == PROP_APP_VERSION ? &self->app_version
                 : prop_id == PROP_APP_CHANNEL ? &self->app_channel : &self->app_build_id;
  const char *name = g_param_spec_get_name (properties[prop_id]);

  if (value != NULL && (*value == '\0' || strlen (value) > 128))
    {
      g_critical ("PerfmonHangMonitor:%s: expected NULL or 1 to 128 bytes", name);
      return;
    }
  if (value != NULL && prop_id == PROP_APP_BUILD_ID)
    {
      gsize i;

      for (i = 0; g_ascii_isdigit (value[i]); i++)
        ;
      if (i != 14 || value[i] != '\0')
        {
          g_critical ("PerfmonHangMonitor:%s: expected 14 digits (YYYYmmddHHMMSS), got %.*s%s", name,
                      (int) MIN (strlen (value), 32), value, strlen (value) > 32 ? "…" : "");
          return;
        }
    }
  g_mutex_lock (&self->state_lock);
  g_free (*field);
  *field = g_strdup (value);
  g_mutex_unlock (&self->state_lock);
}

static void
perfmon_hang_monitor_set_property (GObject      *object,
                                   guint         prop_id,
                                   const GValue *value,
                                   GParamSpec   *pspec)
{
  PerfmonHangMonitor *self = PERFMON_HANG_MONITOR (object);

  switch (prop_id)
    {
    case PROP_MONITOR:
      self->monitor = g_value_dup_object (value);
      self->activity = _perfmon_monitor_get_loop_activity (self->monitor);
      break;
    case PROP_THRESHOLD:
      g_atomic_int_set (&self->threshold_ms, g_value_get_uint (value));
      break;
    case PROP_PERMAHANG_THRESHOLD:
      g_atomic_int_set (&self->permahang_threshold_ms, g_value_get_uint (value));
      break;
    case PROP_HANGS_PER_PING:
      g_atomic_int_set (&self->hangs_per_ping, g_value_get_uint (value));
      break;
    case PROP_STARTUP_GRACE:
      self->startup_grace_ms = g_value_get_uint (value);
      break;
    case PROP_PINGS_DIR:
      if (self->watchdog != NULL)
        g_warning ("PerfmonHangMonitor:pings-dir cannot change while the monitor runs");
      else
        replace_string (&self->pings_dir, g_value_get_string (value), "pings");
      break;
    case PROP_LOG_DIR:
      g_mutex_lock (&self->state_lock);  /* read by the watchdog */
      replace_string (&self->log_dir, g_value_get_string (value), "watchdog");
      g_mutex_unlock (&self->state_lock);
      break;
    case PROP_LOG_DIR_LIMIT:
      g_mutex_lock (&self->state_lock);
      self->log_dir_limit = g_value_get_uint64 (value);
      g_mutex_unlock (&self->state_lock);
      break;
    case PROP_PROCESS_TYPE:
      g_free (self->process_type);
      self->process_type = g_value_dup_string (value);
      if (self->process_type == NULL)
        self->process_type = g_strdup ("default");
      break;
    case PROP_APP_NAME:
    case PROP_APP_VERSION:
    case PROP_APP_CHANNEL:
    case PROP_APP_BUILD_ID:
      set_identity (self, prop_id, g_value_get_string (value));
      break;
    case PROP_REMOTE_TYPE:
      replace_string (&self->remote_type, g_value_get_string (value), NULL);
      break;
    case PROP_DEVELOPER_MODE:
      g_mutex_lock (&self->state_lock);
      self->developer_mode = g_value_get_boolean (value);
      g_mutex_unlock (&self->state_lock);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_hang_monitor_get_property (GObject    *object,
                                   guint       prop_id,
                                   GValue     *value,
                                   GParamSpec *pspec)
{
  PerfmonHangMonitor *self = PERFMON_HANG_MONITOR (object);

  switch (prop_id)
    {
    case PROP_MONITOR:
      g_value_set_object (value, self->monitor);
      break;
    case PROP_THRESHOLD:
      g_value_set_uint (value, g_atomic_int_get (&self->threshold_ms));
      break;
    case PROP_PERMAHANG_THRESHOLD:
      g_value_set_uint (value, g_atomic_int_get (&self->permahang_threshold_ms));
      break;
    case PROP_HANGS_PER_PING:
      g_value_set_uint (value, g_atomic_int_get (&self->hangs_per_ping));
      break;
    case PROP_STARTUP_GRACE:
      g_value_set_uint (value, self->startup_grace_ms);
      break;
    case PROP_PINGS_DIR:
      g_value_set_string (value, self->pings_dir);
      break;
    case PROP_LOG_DIR:
      g_value_set_string (value, self->log_dir);
      break;
    case PROP_LOG_DIR_LIMIT:
      g_value_set_uint64 (value, self->log_dir_limit);
      break;
    case PROP_PROCESS_TYPE:
      g_value_set_string (value, self->process_type);
      break;
    case PROP_APP_NAME:
      g_mutex_lock (&self->state_lock);
      g_value_take_string (value, app_name_locked (self));
      g_mutex_unlock (&self->state_lock);
      break;
    case PROP_APP_VERSION:
    case PROP_APP_CHANNEL:
    case PROP_APP_BUILD_ID:
      g_mutex_lock (&self->state_lock);
      g_value_set_string (value, prop_id == PROP_APP_VERSION ? self->app_version
                                 : prop_id == PROP_APP_CHANNEL ? self->app_channel : self->app_build_id);
      g_mutex_unlock (&self->state_lock);
      break;
    case PROP_REMOTE_TYPE:
      g_value_set_string (value, self->remote_type);
      break;
    case PROP_DEVELOPER_MODE:
      g_value_set_boolean (value, self->developer_mode);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_hang_monitor_class_init (PerfmonHangMonitorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;

  object_class->dispose = perfmon_hang_monitor_dispose;
  object_class->finalize = perfmon_hang_monitor_finalize;
  object_class->set_property = perfmon_hang_monitor_set_property;
  object_class->get_property = perfmon_hang_monitor_get_property;

  /**
   * PerfmonHangMonitor:monitor:
   *
   * The monitor whose thread's loop is watched.
   *
   * Since: 0.1
   */
  properties[PROP_MONITOR] =
    g_param_spec_object ("monitor", NULL, NULL, PERFMON_TYPE_MONITOR,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonHangMonitor:threshold:
   *
   * A busy stretch of the loop at least this long, in ms, is a hang.
   *
   * Since: 0.1
   */
  properties[PROP_THRESHOLD] =
    g_param_spec_uint ("threshold", NULL, NULL, 1, G_MAXINT / 1000,
                       PERFMON_HANG_DEFAULT_THRESHOLD_MS, flags);

  /**
   * PerfmonHangMonitor:permahang-threshold:
   *
   * A hang at least this long, in ms, is a permahang: it is saved while it
   * goes on, annotated `Unrecovered`, so that it is not lost if the process
   * never recovers.
   *
   * Since: 0.1
   */
  properties[PROP_PERMAHANG_THRESHOLD] =
    g_param_spec_uint ("permahang-threshold", NULL, NULL, 1, G_MAXINT / 1000,
                       PERFMON_HANG_DEFAULT_PERMAHANG_THRESHOLD_MS, flags);

  /**
   * PerfmonHangMonitor:hangs-per-ping:
   *
   * A ping is written once this many hangs were reported since the last.
   *
   * Since: 0.1
   */
  properties[PROP_HANGS_PER_PING] =
    g_param_spec_uint ("hangs-per-ping", NULL, NULL, 1, 100000,
                       PERFMON_HANG_DEFAULT_HANGS_PER_PING, flags);

  /**
   * PerfmonHangMonitor:startup-grace:
   *
   * Busy stretches that begin within this many ms of start() are not
   * reported: start-up work is often long on purpose.
   *
   * Since: 0.1
   */
  properties[PROP_STARTUP_GRACE] =
    g_param_spec_uint ("startup-grace", NULL, NULL, 0, 3600 * 1000, 0, flags);

  /**
   * PerfmonHangMonitor:pings-dir:
   *
   * Where hangs are saved and pings are written; by default
   * `$XDG_STATE_HOME/perfmon/pings`. Setting %NULL restores the default.
   * Cannot change while the monitor runs.
   *
   * Since: 0.1
   */
  properties[PROP_PINGS_DIR] =
    g_param_spec_string ("pings-dir", NULL, NULL, NULL, flags | G_PARAM_CONSTRUCT);

  /**
   * PerfmonHangMonitor:log-dir:
   *
   * Where jank stack and trace logs are written; by default
   * `$XDG_STATE_HOME/perfmon/watchdog`. Setting %NULL restores the default.
   *
   * Since: 0.1
   */
  properties[PROP_LOG_DIR] =
    g_param_spec_string ("log-dir", NULL, NULL, NULL, flags | G_PARAM_CONSTRUCT);

  /**
   * PerfmonHangMonitor:log-dir-limit:
   *
   * The most bytes the jank logs of [property@HangMonitor:log-dir] may
   * take; older logs are deleted to make room.
   *
   * Since: 0.1
   */
  properties[PROP_LOG_DIR_LIMIT] =
    g_param_spec_uint64 ("log-dir-limit", NULL, NULL, 0, G_MAXUINT64,
                         PERFMON_LOG_DIR_DEFAULT_LIMIT, flags | G_PARAM_CONSTRUCT);

  /**
   * PerfmonHangMonitor:process-type:
   *
   * The process type hang reports give: "default" (the main process),
   * "tab", "gpu", ...
   *
   * Since: 0.1
   */
  properties[PROP_PROCESS_TYPE] =
    g_param_spec_string ("process-type", NULL, NULL, "default", flags | G_PARAM_CONSTRUCT);

  /**
   * PerfmonHangMonitor:remote-type:
   *
   * The remote type hang reports give when the process type is "tab";
   * reports of other process types have none.
   *
   * Since: 0.1
   */
  properties[PROP_REMOTE_TYPE] =
    g_param_spec_string ("remote-type", NULL, NULL, NULL, flags);

  /**
   * PerfmonHangMonitor:developer-mode:
   *
   * Whether the jank event's report limits count per hour (%TRUE) or per
   * day, as with the seed's Developer Options.
   *
   * Since: 0.1
   */
  properties[PROP_DEVELOPER_MODE] =
    g_param_spec_boolean ("developer-mode", NULL, NULL, FALSE, flags);

  /**
   * PerfmonHangMonitor:app-name:
   *
   * The application's name in pings (`application.name`, and the
   * `appName` of an upload) and jank events (`bundle_name`). %NULL (the
   * default) reads back as what GLib knows: g_get_application_name(),
   * which falls back on g_get_prgname(), else the process's name. Under
   * `perfmon run`, the environment variable `PERFMON_APP_NAME`.
   *
   * Since: 0.2
   */
  properties[PROP_APP_NAME] =
    g_param_spec_string ("app-name", NULL, NULL, NULL, flags);

  /**
   * PerfmonHangMonitor:app-version:
   *
   * The application's version in pings (`application.version`, written
   * as Mozilla's pattern wants: "3.1.4" becomes "00.3.1.4") and jank
   * events (`bundle_version`); %NULL when unknown. Under `perfmon run`,
   * `PERFMON_APP_VERSION`.
   *
   * Since: 0.2
   */
  properties[PROP_APP_VERSION] =
    g_param_spec_string ("app-version", NULL, NULL, NULL, flags);

  /**
   * PerfmonHangMonitor:app-channel:
   *
   * The update channel in pings (`application.channel`); %NULL for
   * "default". Under `perfmon run`, `PERFMON_APP_CHANNEL`.
   *
   * Since: 0.2
   */
  properties[PROP_APP_CHANNEL] =
    g_param_spec_string ("app-channel", NULL, NULL, NULL, flags);

  /**
   * PerfmonHangMonitor:app-build-id:
   *
   * The build id in pings (`application.buildId`): 14 digits,
   * YYYYmmddHHMMSS; %NULL for the executable's modification time. Under
   * `perfmon run`, `PERFMON_APP_BUILD_ID`.
   *
   * Since: 0.2
   */
  properties[PROP_APP_BUILD_ID] =
    g_param_spec_string ("app-build-id", NULL, NULL, NULL, flags);

  g_object_class_install_properties (object_class, N_PROPS, properties);

  /**
   * PerfmonHangMonitor::hang:
   * @self: the hang monitor
   * @report: the hang
   *
   * Emitted on the context that was thread-default when the monitor was
   * started, once a hang is over and saved.
   *
   * Since: 0.1
   */
  signals[SIGNAL_HANG] =
    g_signal_new ("hang", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 1, PERFMON_TYPE_HANG_REPORT);

  /**
   * PerfmonHangMonitor::ping:
   * @self: the hang monitor
   * @path: the ping file written
   *
   * Emitted on the context that was thread-default when the monitor was
   * started, after a ping file was written.
   *
   * Since: 0.1
   */
  signals[SIGNAL_PING] =
    g_signal_new ("ping", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);

  /**
   * PerfmonHangMonitor::jank:
   * @self: the hang monitor
   * @name: the event, "MAIN_THREAD_JANK"
   * @params: the event's parameters, an `a{sv}` dictionary with the jank
   *   seed's params: `time` (ms since the epoch), `bundle_name`,
   *   `bundle_version`, `pid`, `uid`, `begin_time` and `end_time` (ms since
   *   the epoch), `external_log` (the log files written), `log_over_limit`,
   *   `app_start_jiffies_time`, `heaviest_stack`; and `log_type` ("stack" or
   *   "trace") and, for stacks, `sample_count`
   *
   * Emitted on the context that was thread-default when the monitor was
   * started, when a main-thread jank was sampled or traced and its log
   * written (see perfmon_hang_monitor_set_event_config()).
   *
   * Since: 0.1
   */
  signals[SIGNAL_JANK] =
    g_signal_new ("jank", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_VARIANT);
}

static void
perfmon_hang_monitor_init (PerfmonHangMonitor *self)
{
  g_mutex_init (&self->state_lock);
  g_mutex_init (&self->work_lock);
  g_mutex_init (&self->emissions_lock);
  g_queue_init (&self->emissions);
  self->threshold_ms = PERFMON_HANG_DEFAULT_THRESHOLD_MS;
  self->permahang_threshold_ms = PERFMON_HANG_DEFAULT_PERMAHANG_THRESHOLD_MS;
  self->hangs_per_ping = PERFMON_HANG_DEFAULT_HANGS_PER_PING;
  self->process_type = g_strdup ("default");
  _perfmon_jank_config_init (&self->jank_config);
}
