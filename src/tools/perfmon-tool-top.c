/* perfmon-tool-top.c: perfmon top, a live table after about:performance
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <termios.h>
#include <unistd.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

/* The daemon hands out the snapshot of its last poll: when two refreshes
 * see the same one, wait for the next poll this long at most (beyond the
 * refresh interval) before calling the daemon stuck. */
#define NEWER_SNAPSHOT_GRACE_US (5 * G_USEC_PER_SEC)
#define RETRY_US (100 * 1000)

/* At a terminal, keys are read one by one (no Enter) and not echoed, so
 * that q quits as in top(1); the terminal's settings come back at exit
 * and on the signals that end perfmon (Ctrl-C still sends SIGINT). */
static struct termios saved_termios;
static volatile sig_atomic_t termios_changed;

static void
restore_terminal (void)
{
  if (termios_changed)
    tcsetattr (STDIN_FILENO, TCSANOW, &saved_termios);
  termios_changed = 0;
}

static void
restore_terminal_and_die (int signum)
{
  restore_terminal ();
  signal (signum, SIG_DFL);
  raise (signum);
}

static void
read_keys_one_by_one (void)
{
  struct termios raw;
  static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

  if (!isatty (STDIN_FILENO) || tcgetattr (STDIN_FILENO, &saved_termios) != 0)
    return;
  raw = saved_termios;
  raw.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
    signal (signals[i], restore_terminal_and_die);
  atexit (restore_terminal);
  if (tcsetattr (STDIN_FILENO, TCSANOW, &raw) == 0)
    termios_changed = 1;
}

typedef enum
{
  WAIT_DONE,
  WAIT_QUIT,        /* q or Q */
  WAIT_TOGGLE_ALL,  /* a or A: show or hide the idle rows */
} WaitResult;

/* Waits until @end (monotonic); early if a key that does something was
 * typed at the terminal. */
static WaitResult
wait_for_key (gint64 end)
{
  if (!termios_changed)
    {
      g_usleep ((gulong) MAX (end - g_get_monotonic_time (), 0));
      return WAIT_DONE;
    }
  for (;;)
    {
      gint64 left = end - g_get_monotonic_time ();
      struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
      char key;

      if (left <= 0)
        return WAIT_DONE;
      if (poll (&pfd, 1, (int) ((left + 999) / 1000)) > 0)
        {
          if (read (STDIN_FILENO, &key, 1) != 1)
            {
              /* The terminal is gone: no more keys, only the wait. */
              g_usleep ((gulong) MAX (end - g_get_monotonic_time (), 0));
              return WAIT_DONE;
            }
          if (key == 'q' || key == 'Q')
            return WAIT_QUIT;
          if (key == 'a' || key == 'A')
            return WAIT_TOGGLE_ALL;
        }
    }
}

static PerfmonSnapshot *
fetch_newer (GDBusConnection *bus,
             guint            pid,
             PerfmonSnapshot *previous,
             GError         **error)
{
  gint64 give_up = g_get_monotonic_time () + NEWER_SNAPSHOT_GRACE_US;

  for (;;)
    {
      g_autoptr(PerfmonSnapshot) snapshot = perfmon_tool_fetch_snapshot (bus, pid, error);

      if (snapshot == NULL)
        return NULL;
      if (previous == NULL ||
          perfmon_snapshot_get_timestamp (snapshot) > perfmon_snapshot_get_timestamp (previous))
        return g_steal_pointer (&snapshot);
      if (g_get_monotonic_time () > give_up)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                       "perfmond has taken no new snapshot of %s for %d s: is it polling?",
                       pid != 0 ? "this process" : "any process",
                       (int) (NEWER_SNAPSHOT_GRACE_US / G_USEC_PER_SEC));
          return NULL;
        }
      g_usleep (RETRY_US);
    }
}

static void
print_refresh (PerfmonSnapshot *delta,
               guint            pid,
               gboolean         json,
               gboolean         clear,
               gboolean         all)
{
  if (json)
    {
      g_autoptr(JsonNode) node = perfmon_tool_table_to_json (delta, TRUE);
      g_autofree char *text = json_to_string (node, FALSE);

      /* One object per line, so that a reader can follow the stream. */
      g_print ("%s\n", text);
      return;
    }

  if (clear)
    g_print ("\033[H\033[2J");
  /* Within 80 columns: a wrapped title pushes the table off the screen. */
  g_print ("perfmon top: %s; last %.1f s: user %.1f%%, system %.1f%% CPU\n",
           pid != 0 ? perfmon_snapshot_get_process_name (delta) : "all processes, merged",
           (double) perfmon_snapshot_get_interval (delta) / G_USEC_PER_SEC,
           100.0 * (double) perfmon_snapshot_get_user_time (delta) / (double) MAX (perfmon_snapshot_get_interval (delta), 1),
           100.0 * (double) perfmon_snapshot_get_system_time (delta) / (double) MAX (perfmon_snapshot_get_interval (delta), 1));
  perfmon_tool_print_taken_at (delta);
  g_print ("\n");
  /* A terminal of 24 lines keeps the header and the busiest groups. */
  perfmon_tool_print_table_full (delta, PERFMON_TOOL_TABLE_PERCENT, clear ? 17 : 0,
                                 all ? PERFMON_TOOL_TABLE_ALL : PERFMON_TOOL_TABLE_HIDE_IDLE);
  if (!clear)
    g_print ("\n");
}

int
perfmon_tool_top (int    argc,
                  char **argv)
{
  gint64 pid = 0;
  gboolean once = FALSE;
  gboolean json = FALSE;
  gboolean all = FALSE;
  g_autofree char *interval_text = NULL;
  int count = -1;
  const GOptionEntry entries[] = {
    { "pid", 'p', 0, G_OPTION_ARG_INT64, &pid, "Show one process (default: all, aggregated)", "PID" },
    { "once", '1', 0, G_OPTION_ARG_NONE, &once, "Print one table, after one interval, and exit", NULL },
    { "count", 'n', 0, G_OPTION_ARG_INT, &count, "Print N tables and exit (default: until interrupted)", "N" },
    { "interval", 'i', 0, G_OPTION_ARG_STRING, &interval_text, "Seconds between refreshes (default 1)", "S" },
    { "json", 'j', 0, G_OPTION_ARG_NONE, &json, "Print one JSON object per refresh, one per line (every group)", NULL },
    { "all", 'a', 0, G_OPTION_ARG_NONE, &all, "Also show idle groups of perfmon and of callbacks", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new (NULL);
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(PerfmonSnapshot) previous = NULL;
  g_autoptr(PerfmonSnapshot) last_delta = NULL;  /* shown last, redrawn by a */
  g_autoptr(GError) error = NULL;
  double interval = 1.0;
  gboolean clear;

  g_option_context_set_summary (context,
                                "A live table of the performance groups of every monitored process\n"
                                "(merged by window and add-on by perfmond) or of one (--pid): the CPU\n"
                                "and the blocked time of each group as a share of the last interval,\n"
                                "and its histogram: in how many main-loop iterations it used over 1, 2,\n"
                                "4 … 512 ms of CPU time. Sorted by CPU. The rows of perfmon's own groups\n"
                                "([perfmon] …) and of callbacks that show nothing in the interval are\n"
                                "hidden unless --all is given. At a terminal, q quits and a shows or\n"
                                "hides them.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;
  if (argc != 1)
    return perfmon_tool_usage_error ("unexpected argument '%s'", argv[1]);
  if (pid < 0 || pid > G_MAXUINT32)
    return perfmon_tool_usage_error ("--pid must be a process id in [1, %u], got %" G_GINT64_FORMAT,
                                     G_MAXUINT32, pid);
  /* -1: not given, refresh until interrupted. */
  if (count != -1 && (count < 1 || count > 1000000))
    return perfmon_tool_usage_error ("--count must be in [1, 1000000], got %d", count);
  if (once && count > 1)
    return perfmon_tool_usage_error ("--once and --count %d disagree: give one", count);
  if (interval_text != NULL &&
      !perfmon_tool_parse_seconds ("--interval", interval_text, 0.1, 3600, &interval))
    return PERFMON_TOOL_EXIT_USAGE;
  if (once)
    count = 1;
  /* Redraw in place only for a person at a terminal; logs get every
   * table. */
  clear = !json && count != 1 && isatty (STDOUT_FILENO);
  if (clear)
    read_keys_one_by_one ();

  bus = perfmon_tool_session_bus (&error);
  if (bus != NULL)
    previous = perfmon_tool_fetch_snapshot (bus, (guint) pid, &error);
  if (previous == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  for (int shown = 0; count == -1 || shown < count; )
    {
      g_autoptr(PerfmonSnapshot) current = NULL;
      g_autoptr(PerfmonSnapshot) delta = NULL;
      gint64 refresh_at = g_get_monotonic_time () + (gint64) (interval * G_USEC_PER_SEC);
      WaitResult waited;

      while ((waited = wait_for_key (refresh_at)) == WAIT_TOGGLE_ALL)
        {
          /* At once, on the table shown: the next one comes on time. */
          all = !all;
          if (last_delta != NULL)
            print_refresh (last_delta, (guint) pid, json, clear, all);
          fflush (stdout);
        }
      if (waited == WAIT_QUIT)
        break;
      current = fetch_newer (bus, (guint) pid, previous, &error);
      if (current == NULL)
        {
          perfmon_tool_error ("%s", error->message);
          return PERFMON_TOOL_EXIT_FAILED;
        }

      delta = perfmon_snapshot_subtract (current, previous, &error);
      g_set_object (&previous, current);
      if (delta == NULL)
        {
          /* The process restarted with the same pid, or the daemon did:
           * start counting again from this snapshot. */
          g_clear_error (&error);
          continue;
        }

      print_refresh (delta, (guint) pid, json, clear, all);
      g_set_object (&last_delta, delta);
      shown++;
      /* Whoever read the output is gone (perfmon top | head): stop. GDBus
       * ignores SIGPIPE, so the failed write is how we learn it. */
      if (fflush (stdout) != 0 || ferror (stdout))
        {
          if (errno == EPIPE)
            return PERFMON_TOOL_EXIT_OK;
          perfmon_tool_error ("cannot write the output: %s", g_strerror (errno));
          return PERFMON_TOOL_EXIT_FAILED;
        }
    }

  return PERFMON_TOOL_EXIT_OK;
}
