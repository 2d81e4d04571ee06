/* perfmon-tool-run.c: perfmon run [OPTION…] -- COMMAND ARGS…
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Puts libperfmon-preload.so into LD_PRELOAD, passes the settings in the
 * environment (see src/preload/perfmon-preload.c), runs the command as a
 * child and waits for it. Every preloaded process leaves its figures in a
 * private run directory ("<pid>.json", rewritten at exit, after each hang
 * and while its loop works, at most once a second, as often as 0.5 % of its
 * CPU pays for); when the command ends,
 * however it ends (its exit, a signal, a program that closed its standard
 * error, a shell that ran the real program as its child), this process
 * reads them, prints the summary and deletes the directory.
 *
 * Signals: a terminal's Ctrl-C (SIGINT) and Ctrl-\ (SIGQUIT) reach the
 * command directly (it is in the same process group); here they are only
 * waited out. SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to this process by
 * kill() are passed on to the command. When the command dies of a signal,
 * perfmon prints the summary and then dies of the same signal, so that a
 * shell sees what happened.
 */
#define _GNU_SOURCE  /* wait4() */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"
#include "perfmon-tool-hang-groups.h"

/* Exit statuses when the command cannot run at all, as env(1) and
 * timeout(1) give them: scripts tell them from the command's own. */
#define EXIT_CANNOT_EXECUTE 126
#define EXIT_NOT_FOUND      127

/* Native frames printed per hang in the text summary. */
#define MAX_PRINTED_FRAMES 16

/* The command, for the signal handler that passes signals on: 0 until it
 * runs, and in the forked child before its exec (where the handlers are
 * still installed). */
static volatile sig_atomic_t command_pid;

static const int forwarded_signals[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };

static void
forward_signal (int        signum,
                siginfo_t *info,
                void      *context)
{
  int saved_errno = errno;

  /* si_code <= 0: sent by kill(), sigqueue() or tgkill(); the terminal's
   * (SI_KERNEL) already reached the whole foreground process group. */
  if (command_pid > 0 && getpid () != command_pid && info->si_code <= 0 && info->si_pid != command_pid)
    kill ((pid_t) command_pid, signum);
  errno = saved_errno;
}

/* Where the module is: PERFMON_PRELOAD_PATH if set (the tests set it),
 * else the build tree's when this perfmon is the build tree's, else where
 * it is installed. */
static const char *
preload_path (void)
{
  const char *path = g_getenv ("PERFMON_PRELOAD_PATH");

  if (path != NULL && *path != '\0')
    return path;
  if (perfmon_tool_running_uninstalled ())
    return PERFMON_BUILD_ROOT "/src/preload/libperfmon-preload.so";
  return PERFMON_PRELOAD_INSTALLED_PATH;
}

static gboolean
check_ms (const char *option,
          gint64      value)
{
  /* The hang monitor's properties allow [1, G_MAXINT / 1000]. */
  if (value < 1 || value > G_MAXINT / 1000)
    {
      perfmon_tool_usage_error ("%s must be in [1, %d] ms, got %" G_GINT64_FORMAT,
                                option, G_MAXINT / 1000, value);
      return FALSE;
    }
  return TRUE;
}

/* --- --trace ------------------------------------------------------------ */

/* --trace FILE: absolute (the processes run elsewhere), in a directory that
 * exists; not a directory itself. */
static gboolean
check_trace_path (char **path)
{
  g_autofree char *absolute = g_canonicalize_filename (*path, NULL);
  g_autofree char *dir = g_path_get_dirname (absolute);

  if (!g_file_test (dir, G_FILE_TEST_IS_DIR) || g_file_test (absolute, G_FILE_TEST_IS_DIR))
    {
      perfmon_tool_usage_error ("--trace: %s must be a file in an existing directory", *path);
      return FALSE;
    }
  g_free (*path);
  *path = g_steal_pointer (&absolute);
  return TRUE;
}

static int
compare_paths (gconstpointer a,
               gconstpointer b)
{
  return g_strcmp0 (*(const char * const *) a, *(const char * const *) b);
}

/* Says which task logs the run wrote: FILE and FILE.PID changed since
 * @start_us (wall clock; older ones are other runs'). */
static void
print_trace_files (const char *trace,
                   gint64      start_us)
{
  g_autofree char *dir_name = g_path_get_dirname (trace);
  g_autofree char *base = g_path_get_basename (trace);
  g_autoptr(GDir) dir = g_dir_open (dir_name, 0, NULL);
  g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GString) list = g_string_new (NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = NULL;
      GStatBuf st;

      if (!g_str_has_prefix (name, base))
        continue;
      if (name[strlen (base)] != '\0' &&
          (name[strlen (base)] != '.' || name[strlen (base) + 1] == '\0' ||
           strspn (name + strlen (base) + 1, "0123456789") != strlen (name + strlen (base) + 1)))
        continue;
      path = g_build_filename (dir_name, name, NULL);
      if (g_stat (path, &st) != 0 || (gint64) st.st_mtime * G_USEC_PER_SEC < start_us - G_USEC_PER_SEC)
        continue;
      g_ptr_array_add (found, g_steal_pointer (&path));
    }
  g_ptr_array_sort (found, compare_paths);
  for (guint i = 0; i < found->len; i++)
    g_string_append_printf (list, " %s", (const char *) g_ptr_array_index (found, i));
  if (found->len == 0)
    g_printerr ("perfmon: no task log was written to %s\n", trace);
  else
    g_printerr ("perfmon: task logs:%s\n", list->str);
}

/* --- the private run directory ------------------------------------------- */

#define RUN_DIR_PREFIX "perfmon-run-"

/* Deletes the run directories ("perfmon-run-<pid>-XXXXXX" in $TMPDIR) of
 * perfmon runs that are gone without cleaning up (SIGKILL, a crash), so
 * that they do not pile up. A directory whose pid lives, or is another
 * user's, stays. */
static void
delete_stale_run_dirs (void)
{
  g_autoptr(GDir) dir = g_dir_open (g_get_tmp_dir (), 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = NULL;
      GStatBuf st;
      guint64 pid;
      char *end;

      if (!g_str_has_prefix (name, RUN_DIR_PREFIX))
        continue;
      pid = g_ascii_strtoull (name + strlen (RUN_DIR_PREFIX), &end, 10);
      if (end == name + strlen (RUN_DIR_PREFIX) || *end != '-' || pid == 0 || pid > G_MAXINT)
        continue;
      if (kill ((pid_t) pid, 0) == 0 || errno != ESRCH)
        continue;
      path = g_build_filename (g_get_tmp_dir (), name, NULL);
      /* Only our own, and never through a symbolic link. */
      if (g_lstat (path, &st) == 0 && S_ISDIR (st.st_mode) && st.st_uid == getuid ())
        perfmon_tool_remove_tree (path);
    }
}

/* --- reading what the processes left ----------------------------------- */

static gint64
member_int (JsonObject *object,
            const char *name)
{
  JsonNode *node = json_object_get_member (object, name);

  return node != NULL && JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_INT64
    ? json_node_get_int (node) : 0;
}

static gboolean
member_bool (JsonObject *object,
             const char *name)
{
  JsonNode *node = json_object_get_member (object, name);

  return node != NULL && JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_BOOLEAN
    && json_node_get_boolean (node);
}

static gint
compare_processes (gconstpointer a,
                   gconstpointer b)
{
  JsonObject *pa = json_node_get_object (*(JsonNode **) a);
  JsonObject *pb = json_node_get_object (*(JsonNode **) b);
  gint64 sa = member_int (pa, "start_time"), sb = member_int (pb, "start_time");

  /* The command first, then the others in the order they started. */
  if (member_bool (pa, "command") != member_bool (pb, "command"))
    return member_bool (pa, "command") ? -1 : 1;
  return sa < sb ? -1 : sa > sb;
}

/* The "<pid>.json" files of @run_dir, parsed; unreadable ones (a process
 * that wrote nonsense) are skipped with a message. */
static GPtrArray *
read_processes (const char *run_dir)
{
  g_autoptr(GPtrArray) processes = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
  g_autoptr(GDir) dir = g_dir_open (run_dir, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = NULL;
      g_autoptr(JsonParser) parser = NULL;
      g_autoptr(GError) error = NULL;

      if (!g_str_has_suffix (name, ".json"))
        continue;
      path = g_build_filename (run_dir, name, NULL);
      parser = json_parser_new ();
      if (!json_parser_load_from_file (parser, path, &error) ||
          !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
        {
          perfmon_tool_error ("run: skipping the unreadable figures of process %.*s",
                              (int) (strlen (name) - strlen (".json")), name);
          continue;
        }
      g_ptr_array_add (processes, json_node_ref (json_parser_get_root (parser)));
    }
  g_ptr_array_sort (processes, compare_processes);
  return g_steal_pointer (&processes);
}

/* What perfmon run knows of the run besides the processes' figures: the
 * command's real run time (run_seconds: from its start to its end, which
 * a checkpoint, written only while the loop works, does not tell), and
 * the hang each process was in when it ended ("<pid>.hang", see the
 * preload module: a frozen program the user ended), as ongoing_hang, the
 * report with its duration until @end_real_us. A process that left only
 * the latter gets a figures object of its own. */
static void
add_run_facts (GPtrArray  *processes,
               const char *run_dir,
               pid_t       command,
               const char *command_name,
               double      run_seconds,
               gint64      end_real_us)
{
  g_autoptr(GDir) dir = g_dir_open (run_dir, 0, NULL);
  const char *name;

  for (guint i = 0; i < processes->len; i++)
    {
      JsonObject *process = json_node_get_object (g_ptr_array_index (processes, i));

      if (member_int (process, "pid") == command)
        json_object_set_double_member (process, "run_seconds", run_seconds);
    }
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = NULL;
      g_autoptr(JsonParser) parser = NULL;
      JsonObject *hang, *report, *process = NULL;
      gint64 pid;
      char *end = NULL;

      if (!g_str_has_suffix (name, ".hang"))
        continue;
      pid = g_ascii_strtoll (name, &end, 10);
      path = g_build_filename (run_dir, name, NULL);
      parser = json_parser_new ();
      if (end == name || !g_str_equal (end, ".hang") || pid <= 0 ||
          !json_parser_load_from_file (parser, path, NULL) ||
          !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)) ||
          (hang = json_node_get_object (json_parser_get_root (parser))) == NULL ||
          !json_object_has_member (hang, "report") ||
          !JSON_NODE_HOLDS_OBJECT (json_object_get_member (hang, "report")))
        {
          perfmon_tool_error ("run: skipping the unreadable ongoing hang %s", name);
          continue;
        }
      report = json_object_get_object_member (hang, "report");
      json_object_set_double_member (report, "duration",
                                     MAX (end_real_us - member_int (hang, "start_real_us"), 0) / 1000.0);
      for (guint i = 0; i < processes->len && process == NULL; i++)
        if (member_int (json_node_get_object (g_ptr_array_index (processes, i)), "pid") == pid)
          process = json_node_get_object (g_ptr_array_index (processes, i));
      if (process == NULL)
        {
          JsonNode *node = json_node_new (JSON_NODE_OBJECT);

          process = json_object_new ();
          json_object_set_int_member (process, "version", 1);
          json_object_set_int_member (process, "pid", pid);
          json_object_set_boolean_member (process, "command", pid == command);
          json_object_set_string_member (process, "process_name", pid == command ? command_name : "?");
          json_object_set_int_member (process, "hang_threshold", member_int (hang, "hang_threshold"));
          json_object_set_boolean_member (process, "final", FALSE);
          if (pid == command)
            json_object_set_double_member (process, "run_seconds", run_seconds);
          json_node_take_object (node, process);
          g_ptr_array_add (processes, node);
          g_ptr_array_sort (processes, compare_processes);
        }
      json_object_set_member (process, "ongoing_hang", json_node_copy (json_object_get_member (hang, "report")));
    }
}

/* The process the summary is about: the command if it ran a main loop
 * (or hung), else the first process that did (the program a shell script
 * started), else the command. */
static JsonObject *
main_process (GPtrArray *processes)
{
  JsonObject *command = NULL;

  for (guint i = 0; i < processes->len; i++)
    {
      JsonObject *process = json_node_get_object (g_ptr_array_index (processes, i));

      if (member_int (process, "iterations") > 0 || member_int (process, "hang_count") > 0 ||
          json_object_has_member (process, "ongoing_hang"))
        return process;
      if (member_bool (process, "command") && command == NULL)
        command = process;
    }
  return command;
}

static const char *
signal_name (int signum)
{
  const char *abbrev = sigabbrev_np (signum);
  static char text[32];

  if (abbrev == NULL)
    return "an unknown signal";
  g_snprintf (text, sizeof text, "SIG%s", abbrev);
  return text;
}

/* A hang's labels and stack, innermost first, as a backtrace reads. */
static void
print_hang_details (PerfmonHangReport *report)
{
  const char * const *labels = perfmon_hang_report_get_pseudo_stack (report);
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);
  guint n_frames = g_strv_length (stack);

  if (labels[0] != NULL)
    {
      g_autofree char *joined = g_strjoinv (" > ", (char **) labels);

      g_printerr ("      labels: %s\n", joined);
    }
  if (n_frames == 0)
    g_printerr ("      no stack: %s\n",
                perfmon_hang_report_get_stack_unavailable_reason (report) != NULL
                  ? perfmon_hang_report_get_stack_unavailable_reason (report) : "unknown reason");
  for (guint f = 0; f < n_frames && f < MAX_PRINTED_FRAMES; f++)
    g_printerr ("      #%-2u %s\n", f, stack[n_frames - 1 - f]);
  if (n_frames > MAX_PRINTED_FRAMES)
    g_printerr ("      (%u more frames)\n", n_frames - MAX_PRINTED_FRAMES);
}

/* One block per group of identical hangs: the first one's labels and
 * stack, with the count and the range of durations. */
static void
print_hang_group (PerfmonToolHangGroup *group)
{
  PerfmonHangReport *report = group->first;
  const char *runnable = perfmon_tool_runnable_name (perfmon_hang_report_get_runnable_name (report));

  if (group->count == 1)
    g_printerr ("  - %.0f ms (wall) in %s\n", group->min_ms, runnable);
  else if ((guint) (group->min_ms + 0.5) == (guint) (group->max_ms + 0.5))
    g_printerr ("  - %u hangs of %.0f ms (wall) in %s, same stack\n", group->count, group->min_ms, runnable);
  else
    g_printerr ("  - %u hangs of %.0f to %.0f ms (wall) in %s, same stack\n",
                group->count, group->min_ms, group->max_ms, runnable);
  print_hang_details (report);
}

/* The hang going on when the process ended (a report's JSON). */
static void
print_ongoing_hang (JsonNode   *node,
                    const char *duration_note)
{
  g_autofree char *text = json_to_string (node, FALSE);
  g_autoptr(PerfmonHangReport) report = perfmon_hang_report_new_from_json (text, -1, NULL);

  if (report == NULL)
    return;
  g_printerr ("  frozen when it ended: a hang going on for %.0f ms (wall)%s in %s\n",
              perfmon_hang_report_get_duration (report), duration_note,
              perfmon_tool_runnable_name (perfmon_hang_report_get_runnable_name (report)));
  print_hang_details (report);
}

static gint
compare_cpu_time_descending (gconstpointer a,
                             gconstpointer b)
{
  gint64 cpu_a = json_object_get_int_member_with_default (*(JsonObject **) a, "cpu_time", 0);
  gint64 cpu_b = json_object_get_int_member_with_default (*(JsonObject **) b, "cpu_time", 0);

  return cpu_a < cpu_b ? 1 : cpu_a > cpu_b ? -1 : 0;
}

/* The compartments of @process's snapshot that used the most CPU (with
 * automatic groups, "(start-up)" and "(outside dispatches)" among them:
 * the loop's CPU that no dispatch covers). */
static void
print_busiest_groups (JsonObject *process)
{
  JsonNode *snapshot = json_object_get_member (process, "snapshot");
  JsonArray *groups;
  g_autoptr(GPtrArray) compartments = g_ptr_array_new ();
  g_autoptr(GString) line = g_string_new (NULL);
  g_autoptr(PerfmonSnapshot) parsed = NULL;

  if (snapshot == NULL || !JSON_NODE_HOLDS_OBJECT (snapshot))
    return;
  groups = perfmon_tool_json_get_array (json_node_get_object (snapshot), "groups");
  for (guint i = 0; groups != NULL && i < json_array_get_length (groups); i++)
    {
      JsonNode *node = json_array_get_element (groups, i);
      JsonObject *group = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;

      if (group != NULL &&
          g_strcmp0 (json_object_get_string_member_with_default (group, "kind", ""), "compartment") == 0 &&
          json_object_get_int_member_with_default (group, "cpu_time", 0) >= 1000)
        g_ptr_array_add (compartments, group);
    }
  if (compartments->len == 0)
    return;
  /* The program has ended: its module+0x… names are named by the
   * modules its snapshot recorded. */
  {
    g_autofree char *text = json_to_string (snapshot, FALSE);

    parsed = perfmon_snapshot_new_from_json (text, NULL);
  }
  g_ptr_array_sort (compartments, compare_cpu_time_descending);
  for (guint i = 0; i < MIN (compartments->len, 5); i++)
    {
      JsonObject *group = g_ptr_array_index (compartments, i);
      const char *name = json_object_get_string_member_with_default (group, "name", "?");
      g_autofree char *readable = parsed != NULL ? perfmon_tool_readable_group_name (parsed, name) : g_strdup (name);

      g_string_append_printf (line, "%s%s %.1f ms", i > 0 ? ", " : "", readable,
                              json_object_get_int_member_with_default (group, "cpu_time", 0) / 1000.0);
    }
  g_printerr ("  busiest groups (CPU): %s\n", line->str);
}

static void
print_process (JsonObject *process,
               int         wait_status)
{
  JsonNode *ongoing = json_object_get_member (process, "ongoing_hang");
  JsonNode *run_seconds = json_object_get_member (process, "run_seconds");
  JsonArray *durations = perfmon_tool_json_get_array (process, "durations");
  JsonArray *hangs = perfmon_tool_json_get_array (process, "hangs");
  g_autoptr(GPtrArray) reports = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  g_autoptr(GPtrArray) groups = NULL;
  g_autoptr(GString) histogram = g_string_new (NULL);
  JsonNode *seconds = json_object_get_member (process, "seconds");
  guint n_hangs = (guint) member_int (process, "hang_count");

  for (guint d = 0; durations != NULL && d < json_array_get_length (durations); d++)
    g_string_append_printf (histogram, " %u:%" G_GINT64_FORMAT, 1u << d,
                            json_array_get_int_element (durations, d));

  g_printerr ("\nperfmon: summary of %s (pid %" G_GINT64_FORMAT "), %.2f s:\n",
              json_object_get_string_member_with_default (process, "process_name", "?"),
              member_int (process, "pid"),
              /* The command's real run time, as perfmon run measured it. */
              run_seconds != NULL && JSON_NODE_HOLDS_VALUE (run_seconds) ? json_node_get_double (run_seconds)
              : seconds != NULL && JSON_NODE_HOLDS_VALUE (seconds) ? json_node_get_double (seconds) : 0.0);
  if (!member_bool (process, "final"))
    {
      g_autofree char *when = NULL;

      /* Checkpoints back off when a process does little (up to a minute
       * apart: perfmon-preload-checkpoint.c), so say how old the figures
       * are where the run's end is known: the command's. Its figures
       * cover `seconds` from its start, a few ms after perfmon's. */
      if (run_seconds != NULL && JSON_NODE_HOLDS_VALUE (run_seconds) &&
          seconds != NULL && JSON_NODE_HOLDS_VALUE (seconds))
        {
          double covered = json_node_get_double (seconds);
          double age = json_node_get_double (run_seconds) - covered;

          when = age >= 0.05 ? g_strdup_printf (", %.1f s before its end (its first %.1f s)", age, covered)
                             : g_strdup (", just before its end");
        }
      if (!json_object_has_member (process, "seconds"))
        g_printerr ("  %s before its first checkpoint: no figures of its loop\n",
                    member_bool (process, "command") && WIFSIGNALED (wait_status) ? "killed" : "ended");
      else if (member_bool (process, "command") && WIFSIGNALED (wait_status))
        g_printerr ("  killed by %s: the figures of its last checkpoint%s\n",
                    signal_name (WTERMSIG (wait_status)), when != NULL ? when : "");
      else
        g_printerr ("  ended without exit(): the figures of its last checkpoint%s\n", when != NULL ? when : "");
    }
  g_printerr ("  main loop: %" G_GINT64_FORMAT " iterations, %.1f ms of CPU in them, %.1f ms blocked\n",
              member_int (process, "iterations"), member_int (process, "cpu_time") / 1000.0,
              member_int (process, "blocked_time") / 1000.0);
  print_busiest_groups (process);
  g_printerr ("  process CPU: user %.1f ms, system %.1f ms\n",
              member_int (process, "user_time") / 1000.0, member_int (process, "system_time") / 1000.0);
  g_printerr ("  iterations that used over N ms of CPU (N:count):%s\n", histogram->str);
  g_printerr ("  hangs: %u (threshold %" G_GINT64_FORMAT " ms)%s\n", n_hangs,
              member_int (process, "hang_threshold"), n_hangs > 0 ? ", in wall time:" : "");

  for (guint i = 0; hangs != NULL && i < json_array_get_length (hangs); i++)
    {
      g_autofree char *text = json_to_string (json_array_get_element (hangs, i), FALSE);
      PerfmonHangReport *report = perfmon_hang_report_new_from_json (text, -1, NULL);

      if (report != NULL)
        g_ptr_array_add (reports, report);
    }
  groups = perfmon_tool_group_hangs (reports);
  for (guint i = 0; i < groups->len; i++)
    print_hang_group (g_ptr_array_index (groups, i));
  if (hangs != NULL && n_hangs > json_array_get_length (hangs))
    g_printerr ("  (%u more hangs not shown)\n", n_hangs - json_array_get_length (hangs));
  if (ongoing != NULL)
    print_ongoing_hang (ongoing, member_bool (process, "command") ? "" : " (until the run ended, at most)");
}

static void
print_summary (GPtrArray        *processes,
               const char       *command,
               pid_t             pid,
               int               wait_status,
               const struct rusage *usage)
{
  gboolean have_command = FALSE;

  for (guint i = 0; i < processes->len; i++)
    {
      JsonObject *process = json_node_get_object (g_ptr_array_index (processes, i));

      have_command = have_command || member_bool (process, "command");
      print_process (process, wait_status);
    }
  if (!have_command)
    {
      /* A static program, one that unset LD_PRELOAD, or one killed before
       * its first checkpoint: what the kernel says is all there is. */
      g_printerr ("\nperfmon: summary of %s (pid %d):\n", command, (int) pid);
      g_printerr ("  no figures from the program (it did not load the preload module, or ended before its first checkpoint)\n");
      g_printerr ("  process CPU: user %.1f ms, system %.1f ms\n",
                  usage->ru_utime.tv_sec * 1000.0 + usage->ru_utime.tv_usec / 1000.0,
                  usage->ru_stime.tv_sec * 1000.0 + usage->ru_stime.tv_usec / 1000.0);
    }
  if (WIFSIGNALED (wait_status))
    g_printerr ("perfmon: %s was killed by %s\n", command, signal_name (WTERMSIG (wait_status)));
}

static gboolean
write_summary (GPtrArray   *processes,
               int          wait_status,
               const char  *path,
               GError     **error)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;
  JsonObject *main = main_process (processes);

  json_builder_begin_object (builder);
  if (main != NULL)
    {
      JsonObjectIter iter;
      const char *member;
      JsonNode *value;

      json_object_iter_init (&iter, main);
      while (json_object_iter_next (&iter, &member, &value))
        {
          if (g_str_equal (member, "final"))
            continue;
          json_builder_set_member_name (builder, member);
          json_builder_add_value (builder, json_node_copy (value));
        }
    }
  else
    {
      json_builder_set_member_name (builder, "version");
      json_builder_add_int_value (builder, 1);
    }
  /* Whether the figures are those of the main process's exit rather than
   * of a checkpoint. */
  json_builder_set_member_name (builder, "complete");
  json_builder_add_boolean_value (builder, main != NULL && member_bool (main, "final"));
  json_builder_set_member_name (builder, "exit_status");
  if (WIFEXITED (wait_status))
    json_builder_add_int_value (builder, WEXITSTATUS (wait_status));
  else
    json_builder_add_null_value (builder);
  json_builder_set_member_name (builder, "exit_signal");
  if (WIFSIGNALED (wait_status))
    json_builder_add_int_value (builder, WTERMSIG (wait_status));
  else
    json_builder_add_null_value (builder);
  json_builder_set_member_name (builder, "processes");
  json_builder_begin_array (builder);
  for (guint i = 0; i < processes->len; i++)
    json_builder_add_value (builder, json_node_copy (g_ptr_array_index (processes, i)));
  json_builder_end_array (builder);
  json_builder_end_object (builder);

  root = json_builder_get_root (builder);
  text = json_to_string (root, TRUE);
  return perfmon_tool_write_output (path, text, error);
}

/* Ends this process as the command ended: the same status, or the same
 * signal (without a core dump of perfmon itself). */
static int
exit_like (int wait_status)
{
  if (WIFSIGNALED (wait_status))
    {
      int signum = WTERMSIG (wait_status);
      struct rlimit no_core = { 0, 0 };
      sigset_t set;

      setrlimit (RLIMIT_CORE, &no_core);
      signal (signum, SIG_DFL);
      sigemptyset (&set);
      sigaddset (&set, signum);
      sigprocmask (SIG_UNBLOCK, &set, NULL);
      raise (signum);
      return 128 + signum;
    }
  return WIFEXITED (wait_status) ? WEXITSTATUS (wait_status) : PERFMON_TOOL_EXIT_FAILED;
}

int
perfmon_tool_run (int    argc,
                  char **argv)
{
  /* G_MININT64: not given, the hang monitor's default. */
  gint64 threshold = G_MININT64;
  gint64 permahang = G_MININT64;
  g_autofree char *summary = NULL;
  g_autofree char *trace = NULL;
  gboolean no_export = FALSE;
  gboolean no_state = FALSE;
  g_autofree char *sysprof = NULL;
  g_auto(GStrv) addon_paths = NULL;
  int sysprof_fd = -1;
  const GOptionEntry entries[] = {
    { "threshold", 't', 0, G_OPTION_ARG_INT64, &threshold,
      "A main-loop iteration this long (wall time) is a hang (default 128)", "MS" },
    { "permahang", 0, 0, G_OPTION_ARG_INT64, &permahang,
      "A hang this long is saved while it lasts (default 8192)", "MS" },
    { "no-export", 0, 0, G_OPTION_ARG_NONE, &no_export,
      "Do not serve the monitor on the session bus nor register with perfmond", NULL },
    { "no-state", 0, 0, G_OPTION_ARG_NONE, &no_state,
      "Keep hang pings and logs in the run's private directory, deleted at the end", NULL },
    { "summary", 's', 0, G_OPTION_ARG_FILENAME, &summary,
      "Write the summary as JSON to FILE instead of standard error", "FILE" },
    { "sysprof", 0, 0, G_OPTION_ARG_FILENAME, &sysprof,
      "Write the command's hangs, long dispatches and group CPU to FILE, a Sysprof capture", "FILE" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
      "Record the tasks of the whole run: the command's task log to FILE, "
      "each other process's to FILE.PID (read them with 'perfmon tasks')", "FILE" },
    { "addon-path", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &addon_paths,
      "Code under PREFIX is the add-on NAME, or each directory under PREFIX an add-on "
      "(GNOME Shell extensions are built in); may be repeated", "PREFIX[=NAME]" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("-- COMMAND [ARG…]");
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) env = NULL;
  g_autofree char *pid_text = NULL;
  g_autofree char *preload_value = NULL;
  g_autofree char *run_dir = NULL;
  g_autoptr(GPtrArray) processes = NULL;
  struct sigaction action = { 0 };
  struct sigaction old_actions[G_N_ELEMENTS (forwarded_signals)];
  struct rusage usage = { 0 };
  const char *module = preload_path ();
  const char *old_preload;
  GPid pid;
  gint64 spawn_us;
  int wait_status = 0;
  int first;
  gint64 start_us;

  g_option_context_set_summary (context,
                                "Runs an unmodified GLib program with perfmon watching its main loop:\n"
                                "accounting and hang detection on the default main context, served on\n"
                                "the session bus (when there is one) for perfmond and 'perfmon top'.\n"
                                "When the program ends, however it ends (Ctrl-C, SIGTERM, a program\n"
                                "that closed its standard error, a shell script that ran it), perfmon\n"
                                "prints a summary (iterations, CPU, the histogram of CPU time per\n"
                                "iteration, hangs in wall time with their stacks) to standard error,\n"
                                "or to --summary FILE as JSON.\n"
                                "\n"
                                "What it writes where:\n"
                                "  - the summary's data: a private directory in $TMPDIR, deleted at\n"
                                "    the end;\n"
                                "  - hangs, as pings, under $XDG_STATE_HOME/perfmon/pings (with a\n"
                                "    random client id kept in its file 'client-id' there), and jank\n"
                                "    and timeout logs under $XDG_STATE_HOME/perfmon/watchdog, as a\n"
                                "    program using libperfmon does. --no-state keeps them in the\n"
                                "    private directory instead; 'perfmon state' lists and deletes\n"
                                "    them.\n"
                                "  - with --trace FILE, the task log of each process of the run: the\n"
                                "    command's in FILE, each other process's in FILE.PID, written\n"
                                "    again every second and at exit ('perfmon tasks FILE FILE.*'\n"
                                "    reads them as one).\n"
                                "\n"
                                "A hang's stack is taken without interrupting the hung thread: through\n"
                                "/proc if it is blocked in a system call, with one perf sample if it\n"
                                "runs. Only where perf_event_open() is refused, or no sample finds it in\n"
                                "user space (a thread in and out of short system calls), is a running\n"
                                "thread sent a signal (SIGRTMIN+3), and a system call it is in at that\n"
                                "moment may return EINTR. Each hang's StackMethod annotation says which\n"
                                "way.\n"
                                "\n"
                                "The exit status is the command's (if a signal killed it, perfmon\n"
                                "ends with the same signal); 126 if it cannot be executed, 127 if it\n"
                                "is not found, 2 for a wrong perfmon command line.");
  g_option_context_add_main_entries (context, entries, NULL);
  /* Options after the command are the command's. */
  g_option_context_set_strict_posix (context, TRUE);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;

  first = 1;
  if (first < argc && g_str_equal (argv[first], "--"))
    first++;
  if (first >= argc)
    return perfmon_tool_usage_error ("no command to run: perfmon run [OPTION…] -- COMMAND [ARG…]");
  if (threshold != G_MININT64 && !check_ms ("--threshold", threshold))
    return PERFMON_TOOL_EXIT_USAGE;
  if (permahang != G_MININT64 && !check_ms ("--permahang", permahang))
    return PERFMON_TOOL_EXIT_USAGE;
  if (trace != NULL && !check_trace_path (&trace))
    return PERFMON_TOOL_EXIT_USAGE;
  for (guint i = 0; addon_paths != NULL && addon_paths[i] != NULL; i++)
    {
      g_autoptr(GError) rule_error = NULL;

      /* Checked here as the preload module will read it; a newline would
       * split the list it is passed in. */
      if (strchr (addon_paths[i], '\n') != NULL)
        return perfmon_tool_usage_error ("--addon-path: a newline in the path");
      if (!perfmon_addon_rule_add_spec (addon_paths[i], &rule_error))
        return perfmon_tool_usage_error ("--addon-path: %s", rule_error->message);
    }

  if (!g_file_test (module, G_FILE_TEST_IS_REGULAR))
    {
      perfmon_tool_error ("run: the preload module %s is missing (set PERFMON_PRELOAD_PATH to "
                          "libperfmon-preload.so)", module);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  /* GSpawn does not tell "not found" apart from other failures. */
  if (!g_file_test (argv[first], G_FILE_TEST_EXISTS) || strchr (argv[first], '/') == NULL)
    {
      g_autofree char *found = g_find_program_in_path (argv[first]);

      if (found == NULL)
        {
          perfmon_tool_error ("run: cannot run '%s': command not found", argv[first]);
          return EXIT_NOT_FOUND;
        }
    }

  start_us = g_get_real_time ();
  delete_stale_run_dirs ();
  {
    /* The pid in the name tells a later run whether this one is gone. */
    g_autofree char *template = g_strdup_printf (RUN_DIR_PREFIX "%d-XXXXXX", (int) getpid ());
    run_dir = g_dir_make_tmp (template, &error);
  }
  if (run_dir == NULL)
    {
      perfmon_tool_error ("run: %s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  env = g_get_environ ();
  /* The dynamic loader reads the list from the left: earlier modules (a
   * sanitizer runtime must be first) stay first. */
  old_preload = g_environ_getenv (env, "LD_PRELOAD");
  preload_value = old_preload != NULL && *old_preload != '\0'
    ? g_strconcat (old_preload, ":", module, NULL) : g_strdup (module);
  env = g_environ_setenv (env, "LD_PRELOAD", preload_value, TRUE);
  pid_text = g_strdup_printf ("%d", (int) getpid ());
  env = g_environ_setenv (env, "PERFMON_RUN_PID", pid_text, TRUE);
  env = g_environ_setenv (env, "PERFMON_RUN_DIR", run_dir, TRUE);
  env = g_environ_unsetenv (env, "PERFMON_RUN_THRESHOLD_MS");
  env = g_environ_unsetenv (env, "PERFMON_RUN_PERMAHANG_MS");
  env = g_environ_unsetenv (env, "PERFMON_RUN_STATE_DIR");
  env = g_environ_unsetenv (env, "PERFMON_RUN_NO_EXPORT");
  env = g_environ_unsetenv (env, "PERFMON_RUN_TRACE");
  env = g_environ_unsetenv (env, "PERFMON_RUN_ADDON_PATHS");
  if (addon_paths != NULL && addon_paths[0] != NULL)
    {
      g_autofree char *joined = g_strjoinv ("\n", addon_paths);

      env = g_environ_setenv (env, "PERFMON_RUN_ADDON_PATHS", joined, TRUE);
    }
  if (trace != NULL)
    env = g_environ_setenv (env, "PERFMON_RUN_TRACE", trace, TRUE);
  if (no_export)
    env = g_environ_setenv (env, "PERFMON_RUN_NO_EXPORT", "1", TRUE);
  if (no_state)
    {
      g_autofree char *state_dir = g_build_filename (run_dir, "state", NULL);
      env = g_environ_setenv (env, "PERFMON_RUN_STATE_DIR", state_dir, TRUE);
    }
  if (threshold != G_MININT64)
    {
      g_autofree char *text = g_strdup_printf ("%" G_GINT64_FORMAT, threshold);
      env = g_environ_setenv (env, "PERFMON_RUN_THRESHOLD_MS", text, TRUE);
    }
  if (permahang != G_MININT64)
    {
      g_autofree char *text = g_strdup_printf ("%" G_GINT64_FORMAT, permahang);
      env = g_environ_setenv (env, "PERFMON_RUN_PERMAHANG_MS", text, TRUE);
    }

  /* --sysprof: the capture Sysprof's recorder would give the program
   * (SYSPROF_TRACE_FD), a file here; the command's alone (see
   * src/preload/perfmon-preload.c). */
  env = g_environ_unsetenv (env, "PERFMON_RUN_SYSPROF");
  if (sysprof != NULL)
    {
      g_autofree char *fd_text = NULL;

      sysprof_fd = open (sysprof, O_RDWR | O_CREAT | O_TRUNC, 0640);
      if (sysprof_fd < 0)
        {
          int saved_errno = errno;

          perfmon_tool_remove_tree (run_dir);
          perfmon_tool_error ("run: --sysprof: cannot create %s: %s", sysprof, g_strerror (saved_errno));
          return PERFMON_TOOL_EXIT_FAILED;
        }
      fd_text = g_strdup_printf ("%d", sysprof_fd);
      env = g_environ_setenv (env, "SYSPROF_TRACE_FD", fd_text, TRUE);
      env = g_environ_setenv (env, "PERFMON_RUN_SYSPROF", "1", TRUE);
    }

  /* Before the command exists, so that no signal meant for it is lost;
   * exec gives the command the default dispositions back. */
  action.sa_sigaction = forward_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset (&action.sa_mask);
  for (guint i = 0; i < G_N_ELEMENTS (forwarded_signals); i++)
    sigaction (forwarded_signals[i], &action, &old_actions[i]);

  spawn_us = g_get_monotonic_time ();
  if (!g_spawn_async (NULL, argv + first, env,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                      G_SPAWN_CHILD_INHERITS_STDIN | G_SPAWN_LEAVE_DESCRIPTORS_OPEN,
                      NULL, NULL, &pid, &error))
    {
      for (guint i = 0; i < G_N_ELEMENTS (forwarded_signals); i++)
        sigaction (forwarded_signals[i], &old_actions[i], NULL);
      if (sysprof_fd >= 0)
        close (sysprof_fd);
      perfmon_tool_remove_tree (run_dir);
      perfmon_tool_error ("run: cannot run '%s': %s", argv[first], error->message);
      return EXIT_CANNOT_EXECUTE;
    }
  command_pid = pid;
  if (sysprof_fd >= 0)
    close (sysprof_fd);   /* the command has its own */

  while (wait4 (pid, &wait_status, 0, &usage) < 0)
    {
      if (errno != EINTR)
        {
          perfmon_tool_error ("run: waiting for '%s': %s", argv[first], g_strerror (errno));
          wait_status = PERFMON_TOOL_EXIT_FAILED << 8;
          break;
        }
    }
  command_pid = 0;

  processes = read_processes (run_dir);
  {
    g_autofree char *command_name = g_path_get_basename (argv[first]);

    add_run_facts (processes, run_dir, pid, command_name,
                   (double) (g_get_monotonic_time () - spawn_us) / G_USEC_PER_SEC, g_get_real_time ());
  }
  if (summary != NULL)
    {
      if (!write_summary (processes, wait_status, summary, &error))
        perfmon_tool_error ("run: cannot write the summary: %s", error->message);
    }
  else
    print_summary (processes, argv[first], pid, wait_status, &usage);
  if (trace != NULL)
    print_trace_files (trace, start_us);
  perfmon_tool_remove_tree (run_dir);

  return exit_like (wait_status);
}
