/* perfmon-preload.c: LD_PRELOAD module that monitors an unmodified GLib
 * program (see "perfmon run")
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Before the program's main(), on its main thread, the constructor attaches
 * the default monitor (perfmon_monitor_get_default()) and a hang monitor to
 * the default main context.
 *
 * The summary is not printed here but by "perfmon run", the parent of the
 * command, from what each preloaded process leaves in the run's private
 * directory: "<pid>.json", replaced atomically (a whole file or the
 * previous one; never fsynced: the directory dies with the run) at exit,
 * after each hang, and, while the main loop works, at most once a second
 * and at most as often as 0.25 % of the loop's CPU pays for (a checkpoint).
 * The watched thread only takes a snapshot and references to the hangs;
 * the "perfmon-ckpt" thread serialises and writes them (see
 * perfmon-preload-checkpoint.c). So a process that dies of a signal (Ctrl-C,
 * SIGTERM), that exits from another thread, or that closes its standard
 * error still leaves its hangs and its figures, a second old if it kept
 * a CPU busy (8 s just after it idled), a few seconds if it worked less,
 * and at worst a minute old if it idled; "final" says whether the file
 * was written at exit. A process that runs no main loop
 * and is not the command itself (the children of a shell script) leaves a
 * file only if it exits normally having iterated, so that a script running
 * thousands of commands does not leave thousands of files.
 *
 * Settings come from the environment, as "perfmon run" sets it:
 *   PERFMON_RUN_DIR           the run's private directory; without it, no
 *                             summary is left anywhere
 *   PERFMON_RUN_PID           the pid of "perfmon run": its direct child
 *                             (the command) always leaves a file
 *   PERFMON_RUN_THRESHOLD_MS  hang threshold (ms)
 *   PERFMON_RUN_PERMAHANG_MS  permahang threshold (ms)
 *   PERFMON_RUN_STATE_DIR     pings and logs go under this directory
 *                             instead of $XDG_STATE_HOME/perfmon
 *   PERFMON_RUN_NO_EXPORT     "1": do not serve the monitor on the session
 *                             bus (by default it is, and registers with
 *                             perfmond, when a session bus exists)
 *   PERFMON_RUN_SYSPROF       "1": SYSPROF_TRACE_FD is `perfmon run
 *                             --sysprof`'s capture, the command's alone:
 *                             the other processes unset it before their
 *                             hang monitor could write into it
 *   PERFMON_RUN_TRACE         FILE: record every task, written to FILE (the
 *                             command) or FILE.PID (its descendants); see
 *                             perfmon-preload-trace.c
 *   PERFMON_RUN_ADDON_PATHS   add-on rules, one "PREFIX[=NAME]" a line
 *                             (`perfmon run --addon-path`), beside the
 *                             built-in ones (GNOME Shell extensions)
 *   PERFMON_RUN_NO_ADDONS     "1": no add-on rules, so no add-on
 *                             attribution at all (what
 *                             tests/bench/bench-shell-addons.py compares
 *                             against)
 *   PERFMON_RUN_NO_AUTOMATIC  "1": no automatic groups (by default every
 *                             dispatch on the default context is charged
 *                             to a group named after its source) and no
 *                             Python start-up hook
 *
 * Python: the constructor puts python/ (next to this module: its
 * sitecustomize.py and perfmon_pygobject.py) first on PYTHONPATH, before
 * the interpreter's main() reads it, so that an unmodified PyGObject
 * program names its sources after its callables (see
 * src/preload/python/sitecustomize.py). Children inherit it.
 *
 * Automatic groups (see core/perfmon-automatic.c and
 * doc/automatic-instrumentation.md): the module interposes g_source_new()
 * and g_source_attach() for calls from outside libglib (libglib calls
 * itself directly), so that perfmon sees every kind of source a program
 * or its libraries make, and the attach of each source on the attaching
 * thread. GLib's g_idle_add(), g_timeout_add() and g_timeout_add_seconds()
 * families attach inside libglib, so they are interposed too, and do what
 * GLib does with the source before it is attached: make it, set its
 * priority and callback, attach it.
 *
 * A program that uses perfmon itself starts its own hang monitor on the
 * same default monitor: ours steps aside for it (see
 * _perfmon_hang_monitor_set_step_aside()) and its hangs go into the
 * summary, until it stops and ours watches again.
 *
 * Threads: the constructor and the exit handler run on the main thread
 * (an exit from another thread writes no final file: the monitor's
 * snapshot belongs to the main thread); the checkpoints' snapshots are
 * taken and the hang signal comes on the default main context, on the
 * thread that iterates it, in sources named "[perfmon] …" (each charged
 * to an automatic group of that name); files are written by the
 * "perfmon-ckpt" thread.
 */
#define _GNU_SOURCE  /* gettid(), execvpe() */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "perfmon.h"
#include "perfmon-preload-private.h"
#include "perfmon-clock-private.h"
#include "perfmon-hang-monitor-private.h"
#include "perfmon-js-site-private.h"
#include "perfmon-preload-checkpoint.h"

/* Reports kept for the summary; later hangs are only counted. */
#define MAX_KEPT_HANGS 20

static struct
{
  PerfmonMonitor     *monitor;
  PerfmonHangMonitor *hang_monitor;
  GPtrArray          *hangs;          /* of PerfmonHangReport */
  guint               n_hangs;
  gint64              start_us;       /* monotonic */
  pid_t               pid;
  pid_t               main_tid;
  char               *summary_path;   /* <run dir>/<pid>.json, or NULL */
  char               *ongoing_path;   /* <run dir>/<pid>.hang, or NULL */
  gboolean            is_command;     /* the direct child of perfmon run */
  GDBusConnection    *bus;            /* exported on */
  /* The program's own hang monitor, while it watches in place of ours
   * (see on_step_aside()); not referenced. */
  PerfmonHangMonitor *program_hang_monitor;
  gulong              program_hang_handler;
  guint               hang_threshold_ms;  /* of the monitor that reports */
  PerfmonCheckpointWriter *writer;   /* NULL without a summary path */
  PerfmonSnapshot    *last_snapshot;  /* the last checkpoint's */
  double              last_snapshot_seconds;
  /* The writer thread's (the main thread's once it is joined): the text
   * of each kept hang, written once. */
  GArray             *hang_texts;     /* of HangText */
} preload;

/* A finished report never changes: its text, written for one checkpoint,
 * serves every later one. In a program that hung at start-up (GNOME
 * Shell: two hangs, their stacks in 270 KB of summary) the reports were a
 * third of each checkpoint's serialisation. */
typedef struct
{
  PerfmonHangReport *report;   /* held */
  char              *text;
} HangText;

static void
hang_text_clear (gpointer data)
{
  HangText *entry = data;

  g_clear_pointer (&entry->report, perfmon_hang_report_unref);
  g_clear_pointer (&entry->text, g_free);
}

static void
preload_message (const char *format,
                 ...) G_GNUC_PRINTF (1, 2);

static void
preload_message (const char *format,
                 ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_printerr ("perfmon: %s\n", message);
}

/* A threshold from the environment, or 0 (keep the default) with a
 * warning when it is not a number of ms in range. */
static guint
env_ms (const char *name)
{
  const char *text = g_getenv (name);
  guint64 value = 0;
  g_autoptr(GError) error = NULL;

  if (text == NULL || *text == '\0')
    return 0;
  if (!g_ascii_string_to_unsigned (text, 10, 1, G_MAXINT / 1000, &value, &error))
    {
      preload_message ("%s: %s; keeping the default", name, error->message);
      return 0;
    }
  return (guint) value;
}

static void request_checkpoint (void);

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         gpointer            data)
{
  preload.n_hangs++;
  if (preload.hangs->len < MAX_KEPT_HANGS)
    g_ptr_array_add (preload.hangs, perfmon_hang_report_ref (report));
  /* A hang is news worth a file at once: the process may not live long.
   * Written by the checkpoint writer's thread, never here. */
  request_checkpoint ();
}

/* The program started a hang monitor of its own on the default monitor:
 * ours stepped aside (a monitor is watched by one hang monitor), and the
 * program's hangs are ours too until it stops (@successor NULL), when ours
 * watches again. The program's hang monitor keeps its own threshold and
 * pings: it runs as it runs alone. */
static void
on_step_aside (PerfmonHangMonitor *own,
               PerfmonHangMonitor *successor,
               gpointer            data)
{
  if (preload.program_hang_monitor != NULL)
    g_signal_handler_disconnect (preload.program_hang_monitor, preload.program_hang_handler);
  preload.program_hang_monitor = successor;
  preload.program_hang_handler = 0;
  if (successor != NULL)
    {
      preload.program_hang_handler = g_signal_connect (successor, "hang", G_CALLBACK (on_hang), NULL);
      preload.hang_threshold_ms = perfmon_hang_monitor_get_threshold (successor);
    }
}

static void
on_bus (GObject      *source,
        GAsyncResult *result,
        gpointer      data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = g_bus_get_finish (result, &error);

  if (bus == NULL ||
      !perfmon_monitor_export_full (preload.monitor, preload.hang_monitor, bus,
                                    PERFMON_EXPORT_FLAGS_NONE, &error))
    {
      if (preload.is_command)
        preload_message ("not exported on the session bus: %s", error->message);
      return;
    }
  preload.bus = g_steal_pointer (&bus);
}

/* On the loop's first iteration, not in the constructor: connecting to the
 * bus must never hold up the program's start, and the connection is made
 * by GDBus's own thread while the loop goes on. */
static gboolean
export_on_first_iteration (gpointer data)
{
  g_bus_get (G_BUS_TYPE_SESSION, NULL, on_bus, NULL);
  return G_SOURCE_REMOVE;
}

static gboolean
session_bus_exists (void)
{
  const char *address = g_getenv ("DBUS_SESSION_BUS_ADDRESS");
  g_autofree char *socket = NULL;

  if (address != NULL && *address != '\0')
    return TRUE;
  /* Without an address GDBus would try X11 autolaunch: only the
   * systemd-style socket counts. */
  socket = g_build_filename (g_get_user_runtime_dir (), "bus", NULL);
  return g_file_test (socket, G_FILE_TEST_EXISTS);
}

static PerfmonGroupStats *
thread_stats (PerfmonSnapshot *snapshot)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

  for (guint i = 0; i < groups->len; i++)
    if (perfmon_group_stats_get_kind (g_ptr_array_index (groups, i)) == PERFMON_GROUP_KIND_THREAD)
      return g_ptr_array_index (groups, i);
  return NULL;
}

/* What a checkpoint writes, taken on the watched thread in microseconds
 * and serialised by the writer's thread: a snapshot, references to the
 * hangs (finished, immutable reports) and numbers. */
typedef struct
{
  PerfmonSnapshot *snapshot;
  /* The snapshot this one replaced, whose last reference may be this:
   * released with the job, on the writer's thread, not by the watched
   * one (a snapshot of a program with many groups takes as long to free
   * as to take). */
  PerfmonSnapshot *retired;
  GPtrArray       *hangs;         /* of PerfmonHangReport */
  guint            n_hangs;
  guint            hang_threshold;
  double           seconds;
  gboolean         final;
} Checkpoint;

static void
checkpoint_free (gpointer data)
{
  Checkpoint *checkpoint = data;

  g_clear_object (&checkpoint->snapshot);
  g_clear_object (&checkpoint->retired);
  g_clear_pointer (&checkpoint->hangs, g_ptr_array_unref);
  g_free (checkpoint);
}

/* The writer thread: @report's text, written at its first checkpoint. */
static const char *
hang_text (PerfmonHangReport *report)
{
  HangText entry;

  if (preload.hang_texts == NULL)
    {
      preload.hang_texts = g_array_new (FALSE, FALSE, sizeof (HangText));
      g_array_set_clear_func (preload.hang_texts, hang_text_clear);
    }
  for (guint i = 0; i < preload.hang_texts->len; i++)
    if (g_array_index (preload.hang_texts, HangText, i).report == report)
      return g_array_index (preload.hang_texts, HangText, i).text;
  entry.report = perfmon_hang_report_ref (report);
  entry.text = perfmon_hang_report_to_json (report);
  g_array_append_val (preload.hang_texts, entry);
  return entry.text;
}

/* The writer thread: the texts of reports that @hangs no longer keeps
 * go, so that the texts stay as few as the reports kept. */
static void
forget_hang_texts (GPtrArray *hangs)
{
  for (guint i = preload.hang_texts != NULL ? preload.hang_texts->len : 0; i-- > 0;)
    if (!g_ptr_array_find (hangs, g_array_index (preload.hang_texts, HangText, i).report, NULL))
      g_array_remove_index (preload.hang_texts, i);
}

/* The checkpoint writer's thread: the summary's text. The snapshot and
 * the hang reports are JSON already (their own writers): they are put in
 * as they are, not parsed and written again; json-glib writes the rest. */
static char *
serialize_checkpoint (gpointer  data,
                      GError  **error)
{
  Checkpoint *checkpoint = data;
  PerfmonSnapshot *snapshot = checkpoint->snapshot;
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  /* With the modules its "module+0x…" names refer to, found here, off
   * the watched thread: the tool names them after the program exited. */
  g_autofree char *snapshot_text = _perfmon_preload_internals != NULL
                                     ? _perfmon_preload_internals->snapshot_to_json_with_modules (snapshot)
                                     : perfmon_snapshot_to_json (snapshot);
  g_autofree char *head = NULL;
  PerfmonGroupStats *thread = thread_stats (snapshot);
  GString *text;
  gsize head_length;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "version");
  json_builder_add_int_value (builder, 1);
  json_builder_set_member_name (builder, "final");
  json_builder_add_boolean_value (builder, checkpoint->final);
  json_builder_set_member_name (builder, "command");
  json_builder_add_boolean_value (builder, preload.is_command);
  json_builder_set_member_name (builder, "start_time");
  json_builder_add_int_value (builder, preload.start_us);
  json_builder_set_member_name (builder, "pid");
  json_builder_add_int_value (builder, perfmon_snapshot_get_pid (snapshot));
  json_builder_set_member_name (builder, "process_name");
  json_builder_add_string_value (builder, perfmon_snapshot_get_process_name (snapshot));
  json_builder_set_member_name (builder, "seconds");
  json_builder_add_double_value (builder, checkpoint->seconds);
  json_builder_set_member_name (builder, "iterations");
  json_builder_add_int_value (builder, thread != NULL ? (gint64) perfmon_group_stats_get_ticks (thread) : 0);
  json_builder_set_member_name (builder, "cpu_time");
  json_builder_add_int_value (builder, thread != NULL ? (gint64) perfmon_group_stats_get_cpu_time (thread) : 0);
  json_builder_set_member_name (builder, "blocked_time");
  json_builder_add_int_value (builder, thread != NULL ? (gint64) perfmon_group_stats_get_blocked_time (thread) : 0);
  json_builder_set_member_name (builder, "user_time");
  json_builder_add_int_value (builder, (gint64) perfmon_snapshot_get_user_time (snapshot));
  json_builder_set_member_name (builder, "system_time");
  json_builder_add_int_value (builder, (gint64) perfmon_snapshot_get_system_time (snapshot));
  json_builder_set_member_name (builder, "durations");
  json_builder_begin_array (builder);
  for (guint d = 0; thread != NULL && d < PERFMON_N_DURATIONS; d++)
    json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_durations (thread, NULL)[d]);
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "hang_threshold");
  json_builder_add_int_value (builder, checkpoint->hang_threshold);
  json_builder_set_member_name (builder, "hang_count");
  json_builder_add_int_value (builder, checkpoint->n_hangs);
  json_builder_end_object (builder);

  root = json_builder_get_root (builder);
  json_generator_set_root (generator, root);
  head = json_generator_to_data (generator, &head_length);
  /* "{…}": the members above, then the hangs and the snapshot. */
  if (head_length < 2 || head[head_length - 1] != '}' || snapshot_text == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED, "the summary could not be serialised");
      return NULL;
    }
  text = g_string_sized_new (head_length + strlen (snapshot_text) + 4096 * checkpoint->hangs->len + 64);
  g_string_append_len (text, head, (gssize) head_length - 1);
  g_string_append (text, ",\"hangs\":[");
  for (guint i = 0; i < checkpoint->hangs->len; i++)
    {
      if (i > 0)
        g_string_append_c (text, ',');
      g_string_append (text, hang_text (g_ptr_array_index (checkpoint->hangs, i)));
    }
  forget_hang_texts (checkpoint->hangs);
  g_string_append (text, "],\"snapshot\":");
  g_string_append (text, snapshot_text);
  g_string_append (text, "}\n");
  return g_string_free (text, FALSE);
}

/* The hang going on, for perfmon run, in case the process is killed while
 * it hangs (a frozen program the user ends): "<pid>.hang", {"start_real_us":
 * wall-clock µs when the hang's stretch began, "hang_threshold": ms,
 * "report": the report so far},
 * written when the hang is caught, removed when it ends. On the watchdog
 * thread: the watched one is busy in the hang. */
static void
on_ongoing_hang (PerfmonHangReport *report,
                 gint64             start_real_us,
                 gpointer           data)
{
  g_autoptr(JsonBuilder) builder = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *report_json = NULL;
  g_autofree char *text = NULL;

  if (report == NULL)
    {
      g_unlink (preload.ongoing_path);
      return;
    }
  report_json = perfmon_hang_report_to_json (report);
  builder = json_builder_new ();
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "start_real_us");
  json_builder_add_int_value (builder, start_real_us);
  json_builder_set_member_name (builder, "hang_threshold");
  json_builder_add_int_value (builder, perfmon_hang_monitor_get_threshold (preload.hang_monitor));
  json_builder_set_member_name (builder, "report");
  json_builder_add_value (builder, json_from_string (report_json, NULL));
  json_builder_end_object (builder);
  root = json_builder_get_root (builder);
  text = json_to_string (root, FALSE);
  if (!g_file_set_contents (preload.ongoing_path, text, -1, &error))
    preload_message ("cannot write the ongoing hang to %s: %s", preload.ongoing_path, error->message);
}

/* The watched thread (the monitor's): what the file will say, or NULL when
 * this process is not worth a file. A snapshot and references: no
 * serialisation, no I/O. With @fresh FALSE (a hang), the last periodic
 * checkpoint's snapshot is reused: the hang is the news, and a snapshot
 * of a program with many groups costs more than the rest. */
static Checkpoint *
take_checkpoint (gboolean final,
                 gboolean fresh)
{
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(PerfmonSnapshot) retired = NULL;
  PerfmonGroupStats *thread;
  Checkpoint *checkpoint;

  /* A child forked without exec: the writer thread did not come along. */
  if (preload.monitor == NULL || getpid () != preload.pid)
    return NULL;
  if (fresh || final || preload.last_snapshot == NULL)
    {
      /* At exit, perfmon_preload_at_exit() finished the loop's last
       * iteration before it stopped the hang monitor. */
      snapshot = perfmon_monitor_snapshot (preload.monitor);
      if (snapshot == NULL)
        return NULL;
      /* Shared with the writer thread: a snapshot is immutable. */
      retired = g_steal_pointer (&preload.last_snapshot);
      preload.last_snapshot = g_object_ref (snapshot);
      preload.last_snapshot_seconds = (double) (g_get_monotonic_time () - preload.start_us) / G_USEC_PER_SEC;
    }
  else
    snapshot = g_object_ref (preload.last_snapshot);
  thread = thread_stats (snapshot);
  /* Processes without a main loop (the commands of a shell script) are
   * not worth a file; the command itself always is. */
  if (!preload.is_command && preload.n_hangs == 0 &&
      (thread == NULL || perfmon_group_stats_get_ticks (thread) == 0))
    return NULL;

  checkpoint = g_new0 (Checkpoint, 1);
  checkpoint->snapshot = g_steal_pointer (&snapshot);
  checkpoint->retired = g_steal_pointer (&retired);
  checkpoint->hangs = g_ptr_array_new_full (preload.hangs->len, (GDestroyNotify) perfmon_hang_report_unref);
  for (guint i = 0; i < preload.hangs->len; i++)
    g_ptr_array_add (checkpoint->hangs, perfmon_hang_report_ref (g_ptr_array_index (preload.hangs, i)));
  checkpoint->n_hangs = preload.n_hangs;
  checkpoint->hang_threshold = preload.hang_threshold_ms;
  checkpoint->seconds = preload.last_snapshot_seconds;
  checkpoint->final = final;
  return checkpoint;
}

/* The writer's once-a-second checkpoint, on the watched thread. */
static gpointer
take_periodic_checkpoint (void)
{
  return take_checkpoint (FALSE, TRUE);
}

static void
request_checkpoint (void)
{
  Checkpoint *checkpoint;

  if (preload.writer == NULL)
    return;
  checkpoint = take_checkpoint (FALSE, FALSE);
  if (checkpoint != NULL)
    _perfmon_checkpoint_writer_submit (preload.writer, checkpoint);
}

static void
perfmon_preload_at_exit (void)
{
  if (preload.monitor == NULL)
    return;
  /* A child forked without exec: the watchdog thread did not come along,
   * and the file is its parent's. */
  if (getpid () != preload.pid)
    return;
  /* The monitor's snapshot belongs to the main thread: the last
   * checkpoint stands. */
  if (gettid () != preload.main_tid)
    return;

  /* A snapshot counts finished iterations; at exit the loop's last one
   * (a program quits its loop from a dispatch, and never polls again) is
   * finished too. Before the hang monitor stops: its last Sysprof
   * counters then count what the summary counts, and perfmon's own exit
   * work (stopping, writing) is in neither. */
  perfmon_monitor_iteration_done (preload.monitor);
  /* Stopping finishes a hang still going on (a program that quits its
   * loop from inside a long dispatch) and delivers the hangs not yet
   * signalled. */
  if (_perfmon_preload_internals != NULL)
    _perfmon_preload_internals->hang_monitor_set_step_aside (preload.hang_monitor, NULL, NULL);
  if (preload.program_hang_monitor != NULL)
    {
      /* The program's own is still watching: what it caught is ours too
       * (it would do the same at its own exit handler, after this one). */
      perfmon_hang_monitor_stop (preload.program_hang_monitor);
      g_signal_handler_disconnect (preload.program_hang_monitor, preload.program_hang_handler);
      preload.program_hang_monitor = NULL;
    }
  perfmon_hang_monitor_stop (preload.hang_monitor);
  /* The final file is written before the process goes: the writer
   * thread is joined. */
  if (preload.writer != NULL)
    _perfmon_checkpoint_writer_finish (g_steal_pointer (&preload.writer), take_checkpoint (TRUE, TRUE));
  /* The writer thread is joined: its texts are ours to free. */
  g_clear_pointer (&preload.hang_texts, g_array_unref);
  g_clear_object (&preload.last_snapshot);
  /* A process worth a summary is worth its task log (--trace). */
  _perfmon_preload_trace_stop (preload.is_command ||
                               (preload.summary_path != NULL &&
                                g_file_test (preload.summary_path, G_FILE_TEST_EXISTS)));
  if (preload.bus != NULL)
    perfmon_monitor_unexport (preload.monitor, preload.bus);
  g_clear_object (&preload.bus);
  g_clear_pointer (&preload.hangs, g_ptr_array_unref);
  g_clear_object (&preload.hang_monitor);
  g_clear_pointer (&preload.summary_path, g_free);
  /* The default monitor is the library's, not ours. */
  preload.monitor = NULL;
}

/* --- interposed GLib calls ----------------------------------------------- */

/* Add-on attribution by creation site: on with automatic groups, in a
 * process whose JavaScript engine perfmon knows. Set by the constructor. */
static gint addons_on;

typedef GSource *(*SourceNewFunc) (GSourceFuncs *funcs, guint struct_size);
typedef guint    (*SourceAttachFunc) (GSource *source, GMainContext *context);

static SourceNewFunc real_source_new;
static SourceAttachFunc real_source_attach;

/* Called at every interposed call: cheap once resolved. The constructor
 * resolves them first, but a library's own constructor may make a source
 * before ours runs. */
static void
resolve_real_functions (void)
{
  if (G_UNLIKELY (g_atomic_pointer_get (&real_source_attach) == NULL))
    {
      g_atomic_pointer_set (&real_source_new, (SourceNewFunc) dlsym (RTLD_NEXT, "g_source_new"));
      g_atomic_pointer_set (&real_source_attach, (SourceAttachFunc) dlsym (RTLD_NEXT, "g_source_attach"));
      if (real_source_new == NULL || real_source_attach == NULL)
        {
          g_printerr ("perfmon: cannot find GLib's g_source_new()/g_source_attach(): %s\n", dlerror ());
          abort ();
        }
    }
}

GSource *g_source_new (GSourceFuncs *source_funcs, guint struct_size);

GSource *
g_source_new (GSourceFuncs *source_funcs,
              guint         struct_size)
{
  GSource *source;

  resolve_real_functions ();
  source = real_source_new (source_funcs, struct_size);
  perfmon_automatic_track_source (source);
  return source;
}

guint g_source_attach (GSource *source, GMainContext *context);

guint
g_source_attach (GSource      *source,
                 GMainContext *context)
{
  guint id;

  resolve_real_functions ();
  /* Named (and charged to its add-on) by its JavaScript creation site,
   * before anything can dispatch it: see hang/perfmon-js-site.c. */
  if (g_atomic_int_get (&addons_on))
    _perfmon_preload_internals->js_site_source_attached (preload.monitor, source, context);
  /* Before the attach: once attached, another thread may dispatch the
   * source before the observer has learnt who attached it. */
  perfmon_automatic_track_source (source);
  id = real_source_attach (source, context);
  return id;
}

/* GLib's g_idle_add_full() and g_timeout_add_full() (gmain.c), with the
 * attach seen. */
static guint
attach_new_source (GSource        *source,
                   gint            priority,
                   GSourceFunc     function,
                   gpointer        data,
                   GDestroyNotify  notify)
{
  guint id;

  /* Unconditionally: an idle source starts at G_PRIORITY_DEFAULT_IDLE. */
  g_source_set_priority (source, priority);
  g_source_set_callback (source, function, data, notify);
  id = g_source_attach (source, NULL);
  g_source_unref (source);
  return id;
}

guint
g_idle_add_full (gint           priority,
                 GSourceFunc    function,
                 gpointer       data,
                 GDestroyNotify notify)
{
  g_return_val_if_fail (function != NULL, 0);

  return attach_new_source (g_idle_source_new (), priority, function, data, notify);
}

guint
g_idle_add (GSourceFunc function,
            gpointer    data)
{
  return g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, function, data, NULL);
}

guint
g_timeout_add_full (gint           priority,
                    guint          interval,
                    GSourceFunc    function,
                    gpointer       data,
                    GDestroyNotify notify)
{
  g_return_val_if_fail (function != NULL, 0);

  return attach_new_source (g_timeout_source_new (interval), priority, function, data, notify);
}

guint
g_timeout_add (guint       interval,
               GSourceFunc function,
               gpointer    data)
{
  return g_timeout_add_full (G_PRIORITY_DEFAULT, interval, function, data, NULL);
}

guint
g_timeout_add_seconds_full (gint           priority,
                            guint          interval,
                            GSourceFunc    function,
                            gpointer       data,
                            GDestroyNotify notify)
{
  g_return_val_if_fail (function != NULL, 0);

  return attach_new_source (g_timeout_source_new_seconds (interval), priority, function, data, notify);
}

guint
g_timeout_add_seconds (guint       interval,
                       GSourceFunc function,
                       gpointer    data)
{
  return g_timeout_add_seconds_full (G_PRIORITY_DEFAULT, interval, function, data, NULL);
}

typedef gulong (*ConnectClosureByIdFunc) (gpointer instance, guint signal_id, GQuark detail,
                                          GClosure *closure, gboolean after);

gulong g_signal_connect_closure_by_id (gpointer instance, guint signal_id, GQuark detail,
                                       GClosure *closure, gboolean after);

/* GJS connects every handler through it (object.cpp): a handler connected
 * while an add-on's JavaScript is on the stack is charged to the add-on
 * at each invocation (hang/perfmon-js-site.c). */
gulong
g_signal_connect_closure_by_id (gpointer  instance,
                                guint     signal_id,
                                GQuark    detail,
                                GClosure *closure,
                                gboolean  after)
{
  static ConnectClosureByIdFunc real;
  ConnectClosureByIdFunc found = g_atomic_pointer_get (&real);

  if (G_UNLIKELY (found == NULL))
    {
      found = (ConnectClosureByIdFunc) dlsym (RTLD_NEXT, "g_signal_connect_closure_by_id");
      if (found == NULL)
        {
          g_printerr ("perfmon: cannot find GObject's g_signal_connect_closure_by_id(): %s\n", dlerror ());
          abort ();
        }
      g_atomic_pointer_set (&real, found);
    }
  if (g_atomic_int_get (&addons_on))
    _perfmon_preload_internals->js_site_handler_connected (preload.monitor, closure);
  return found (instance, signal_id, detail, closure, after);
}

/* The built-in add-on rules are those of GNOME Shell extensions (run by
 * GJS) and of libpeas plugins: of use only in a process with GJS or
 * libpeas. Reading them scans the data and library directories (some 300
 * system calls, 2.3 ms on the project's VMs: tests/bench/bench-startup),
 * which every process of a shell script paid at start-up. Set (atomic)
 * while a process that may load libpeas later has not yet made an
 * engine. */
static gint builtin_rules_pending;

static gboolean
addon_system_loaded (void)
{
  static const char * const libraries[] = { "libgjs.so.0", "libpeas-1.0.so.0", "libpeas-2.so.0" };

  for (guint i = 0; i < G_N_ELEMENTS (libraries); i++)
    {
      void *handle = dlopen (libraries[i], RTLD_LAZY | RTLD_NOLOAD);

      if (handle != NULL)
        {
          dlclose (handle);
          return TRUE;
        }
    }
  return FALSE;
}

/* A program that loaded libpeas after the constructor (Python:
 * gi.require_version ('Peas', …)) gets the built-in rules as it makes its
 * engine, before any plugin is found, loaded or makes a source (Python
 * callables are matched as their sources are made: perfmon_pygobject.py). */
typedef gpointer (*PeasEngineFunc) (void);

static gpointer
make_peas_engine (const char *name)
{
  static const char * const libraries[] = { "libpeas-1.0.so.0", "libpeas-2.so.0" };
  PeasEngineFunc real = (PeasEngineFunc) dlsym (RTLD_NEXT, name);

  /* Loaded RTLD_LOCAL, where RTLD_NEXT does not look: in the library. */
  for (guint i = 0; real == NULL && i < G_N_ELEMENTS (libraries); i++)
    {
      void *handle = dlopen (libraries[i], RTLD_LAZY | RTLD_NOLOAD);

      if (handle != NULL)
        {
          real = (PeasEngineFunc) dlsym (handle, name);
          dlclose (handle);
        }
    }
  if (g_atomic_int_compare_and_exchange (&builtin_rules_pending, TRUE, FALSE))
    perfmon_addon_rule_add_builtin ();
  if (real == NULL)
    {
      g_printerr ("perfmon: cannot find libpeas's %s(): %s\n", name, dlerror ());
      abort ();
    }
  return real ();
}

gpointer peas_engine_get_default (void);
gpointer peas_engine_new (void);
gpointer peas_engine_new_with_nonglobal_loaders (void);

gpointer
peas_engine_get_default (void)
{
  return make_peas_engine ("peas_engine_get_default");
}

gpointer
peas_engine_new (void)
{
  return make_peas_engine ("peas_engine_new");
}

gpointer
peas_engine_new_with_nonglobal_loaders (void)
{
  return make_peas_engine ("peas_engine_new_with_nonglobal_loaders");
}

/* The add-on rules of the run: built-in ones and --addon-path's. Before
 * main(): the metadata files are read here, not on the watched loop. */
static void
start_addon_attribution (void)
{
  const char *paths = g_getenv ("PERFMON_RUN_ADDON_PATHS");
  const char *status;

  /* No rules either: no add-on by creation site, by a C callback's module
   * (core/perfmon-automatic.c) nor by a Python callable's file
   * (perfmon_pygobject.py). */
  if (g_strcmp0 (g_getenv ("PERFMON_RUN_NO_ADDONS"), "1") == 0)
    return;
  if (addon_system_loaded ())
    perfmon_addon_rule_add_builtin ();
  else
    g_atomic_int_set (&builtin_rules_pending, TRUE);
  if (paths != NULL && *paths != '\0')
    {
      g_auto(GStrv) specs = g_strsplit (paths, "\n", -1);

      for (guint i = 0; specs[i] != NULL; i++)
        {
          g_autoptr(GError) error = NULL;

          if (*specs[i] != '\0' && !perfmon_addon_rule_add_spec (specs[i], &error))
            preload_message ("ignoring add-on path: %s", error->message);
        }
    }
  /* addons_on stays off without the library's table (another version). */
  if (_perfmon_preload_internals == NULL)
    return;
  status = _perfmon_preload_internals->js_site_status ();
  if (status == NULL)
    g_atomic_int_set (&addons_on, 1);
  else if (!g_str_has_suffix (status, "no GJS"))
    preload_message ("JavaScript add-on attribution %s", status);
}

/* The cycle counter's rate, calibrated by the first process of the run
 * (2 ms of spinning) and checked by each of its descendants in 0.1 ms
 * (core/perfmon-clock.c): a shell script's commands each paid the 2 ms.
 * Set whatever the process found, so that a wrong value stops here. */
static void
hand_down_clock_rate (void)
{
  char text[G_ASCII_DTOSTR_BUF_SIZE];

  if (_perfmon_preload_internals == NULL)
    return;
  g_setenv (PERFMON_CLOCK_HINT_ENV,
            g_ascii_dtostr (text, sizeof text, _perfmon_preload_internals->clock_cycles_per_us ()), TRUE);
}

/* Puts python/ next to this module first on PYTHONPATH; see the top. */
static void
add_python_hook (void)
{
  Dl_info info;
  g_autofree char *module_dir = NULL;
  g_autofree char *hook_dir = NULL;
  g_autofree char *hook = NULL;
  g_autofree char *path = NULL;
  const char *old = g_getenv ("PYTHONPATH");

  if (dladdr ((gconstpointer) add_python_hook, &info) == 0 || info.dli_fname == NULL)
    return;
  module_dir = g_path_get_dirname (info.dli_fname);
  hook_dir = g_build_filename (module_dir, "python", NULL);
  hook = g_build_filename (hook_dir, "sitecustomize.py", NULL);
  if (!g_file_test (hook, G_FILE_TEST_IS_REGULAR))
    return;

  if (old != NULL && *old != '\0')
    {
      g_auto(GStrv) entries = g_strsplit (old, G_SEARCHPATH_SEPARATOR_S, -1);

      /* A child of a program already run: its PYTHONPATH has the hook. */
      if (g_strv_contains ((const char * const *) entries, hook_dir))
        return;
      path = g_strconcat (hook_dir, G_SEARCHPATH_SEPARATOR_S, old, NULL);
    }
  else
    path = g_strdup (hook_dir);
  g_setenv ("PYTHONPATH", path, TRUE);
}

const PerfmonPreloadInternals *_perfmon_preload_internals;

/* Called by libperfmon's constructor, which runs before this module's
 * (the module depends on the library): the internals it does not export
 * (see perfmon-preload-internals-private.h). */
__attribute__((visibility ("default"))) void
perfmon_preload_receive_internals (const PerfmonPreloadInternals *internals);

void
perfmon_preload_receive_internals (const PerfmonPreloadInternals *internals)
{
  if (internals->version == PERFMON_PRELOAD_INTERNALS_VERSION &&
      internals->size == sizeof (PerfmonPreloadInternals))
    _perfmon_preload_internals = internals;
}

__attribute__((constructor))
static void
perfmon_preload_init (void)
{
  g_autoptr(GError) error = NULL;
  const char *run_pid = g_getenv ("PERFMON_RUN_PID");
  const char *run_dir = g_getenv ("PERFMON_RUN_DIR");
  const char *state_dir = g_getenv ("PERFMON_RUN_STATE_DIR");
  guint threshold_ms = env_ms ("PERFMON_RUN_THRESHOLD_MS");
  guint permahang_ms = env_ms ("PERFMON_RUN_PERMAHANG_MS");

  /* First: no other thread exists yet to read the environment. */
  if (g_strcmp0 (g_getenv ("PERFMON_RUN_NO_AUTOMATIC"), "1") != 0)
    add_python_hook ();
  hand_down_clock_rate ();

  preload.start_us = g_get_monotonic_time ();
  preload.pid = getpid ();
  preload.main_tid = gettid ();
  preload.is_command = run_pid != NULL && atoi (run_pid) == getppid ();
  if (!preload.is_command && g_strcmp0 (g_getenv ("PERFMON_RUN_SYSPROF"), "1") == 0)
    g_unsetenv ("SYSPROF_TRACE_FD");
  if (run_dir != NULL && g_path_is_absolute (run_dir))
    {
      g_autofree char *name = g_strdup_printf ("%d.json", (int) preload.pid);
      g_autofree char *hang_name = g_strdup_printf ("%d.hang", (int) preload.pid);

      preload.summary_path = g_build_filename (run_dir, name, NULL);
      preload.ongoing_path = g_build_filename (run_dir, hang_name, NULL);
    }

  resolve_real_functions ();
  /* perfmon run --trace: before anything makes a source. */
  _perfmon_preload_trace_start (preload.is_command);
  preload.monitor = perfmon_monitor_get_default ();
  /* For tests/bench/bench-run.py only, under callgrind (50 times slower):
   * the monitor's time thresholds (when an iteration is long enough to
   * read the thread's CPU clock) stretched as much, so that it takes the
   * paths it takes natively; see _perfmon_monitor_dilate_time(). */
  {
    const char *dilation = g_getenv ("PERFMON_RUN_TIME_DILATION");
    guint64 factor = 0;

    if (dilation != NULL && _perfmon_preload_internals != NULL &&
        g_ascii_string_to_unsigned (dilation, 10, 1, 100000, &factor, NULL))
      _perfmon_preload_internals->monitor_dilate_time (preload.monitor, (guint) factor);
  }
  if (g_strcmp0 (g_getenv ("PERFMON_RUN_NO_AUTOMATIC"), "1") != 0)
    {
      perfmon_monitor_set_automatic_groups (preload.monitor, TRUE);
      start_addon_attribution ();
    }
  preload.hangs = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  preload.hang_monitor = perfmon_hang_monitor_new (preload.monitor);
  if (threshold_ms != 0)
    perfmon_hang_monitor_set_threshold (preload.hang_monitor, threshold_ms);
  if (permahang_ms != 0)
    perfmon_hang_monitor_set_permahang_threshold (preload.hang_monitor, permahang_ms);
  if (state_dir != NULL && g_path_is_absolute (state_dir))
    {
      g_autofree char *pings_dir = g_build_filename (state_dir, "pings", NULL);
      g_autofree char *log_dir = g_build_filename (state_dir, "watchdog", NULL);

      g_object_set (preload.hang_monitor, "pings-dir", pings_dir, "log-dir", log_dir, NULL);
    }
  g_signal_connect (preload.hang_monitor, "hang", G_CALLBACK (on_hang), NULL);
  preload.hang_threshold_ms = perfmon_hang_monitor_get_threshold (preload.hang_monitor);
  /* A program that uses perfmon itself starts its own hang monitor on the
   * same default monitor: ours gives way to it. */
  if (_perfmon_preload_internals != NULL)
    {
      _perfmon_preload_internals->hang_monitor_set_step_aside (preload.hang_monitor, on_step_aside, NULL);
      if (preload.ongoing_path != NULL)
        _perfmon_preload_internals->hang_monitor_set_ongoing_func (preload.hang_monitor, on_ongoing_hang, NULL);
    }
  /* The program's identity in its pings, from `perfmon run`'s caller (a
   * bad value is said, and the default kept). */
  {
    static const char * const identity[][2] = {
      { "PERFMON_APP_NAME", "app-name" },
      { "PERFMON_APP_VERSION", "app-version" },
      { "PERFMON_APP_CHANNEL", "app-channel" },
      { "PERFMON_APP_BUILD_ID", "app-build-id" },
    };

    for (guint i = 0; i < G_N_ELEMENTS (identity); i++)
      if (g_getenv (identity[i][0]) != NULL && *g_getenv (identity[i][0]) != '\0')
        g_object_set (preload.hang_monitor, identity[i][1], g_getenv (identity[i][0]), NULL);
  }

  /* Its signals come on the default context, which the program's loop
   * runs: a hang found while the loop sleeps wakes it. */
  if (_perfmon_preload_internals == NULL)
    /* It could not step aside for the program's own. */
    preload_message ("no hang detection in this process: libperfmon handed the module none of "
                     "its internals (a libperfmon of another version than the module's?)");
  else if (!perfmon_hang_monitor_start (preload.hang_monitor, &error))
    {
      /* Accounting still works without the watchdog. */
      preload_message ("no hang detection in this process: %s", error->message);
      g_clear_error (&error);
    }

  if (g_strcmp0 (g_getenv ("PERFMON_RUN_NO_EXPORT"), "1") != 0 && session_bus_exists ())
    {
      g_autoptr(GSource) source = g_idle_source_new ();

      /* Named as every source perfmon puts on a watched context, so that
       * its automatic group says whose it is. */
      g_source_set_name (source, "[perfmon] export");
      g_source_set_priority (source, G_PRIORITY_DEFAULT);
      g_source_set_callback (source, export_on_first_iteration, NULL, NULL);
      g_source_attach (source, NULL);
    }

  if (preload.summary_path != NULL)
    preload.writer = _perfmon_checkpoint_writer_new (preload.summary_path, take_periodic_checkpoint,
                                                     serialize_checkpoint, checkpoint_free);

  /* After the hang monitor's own exit handler, so that this one runs first
   * (atexit is last in, first out) and sees every hang. */
  if (atexit (perfmon_preload_at_exit) != 0)
    preload_message ("cannot register the exit summary: %s", g_strerror (errno));
}
