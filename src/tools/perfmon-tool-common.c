/* perfmon-tool-common.c: what the perfmon tool's subcommands share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

void
perfmon_tool_error (const char *format,
                    ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  g_printerr ("perfmon: %s\n", message);
}

/* The dispatcher sets the program name to "perfmon CMD". */
static const char *
subcommand_name (void)
{
  const char *prgname = g_get_prgname ();

  if (prgname != NULL && g_str_has_prefix (prgname, "perfmon "))
    return prgname + strlen ("perfmon ");
  return prgname != NULL ? prgname : "perfmon";
}

int
perfmon_tool_usage_error (const char *format,
                          ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  g_printerr ("perfmon: %s: %s\n", subcommand_name (), message);
  g_printerr ("Try 'perfmon %s --help' for more information.\n", subcommand_name ());
  return PERFMON_TOOL_EXIT_USAGE;
}

gboolean
perfmon_tool_parse_options (GOptionContext *context,
                            int            *argc,
                            char         ***argv)
{
  g_autoptr(GError) error = NULL;

  if (!g_option_context_parse (context, argc, argv, &error))
    {
      perfmon_tool_usage_error ("%s", error->message);
      return FALSE;
    }
  return TRUE;
}

gboolean
perfmon_tool_parse_seconds (const char *option,
                            const char *text,
                            double      min,
                            double      max,
                            double     *out)
{
  char *end = NULL;
  double value;

  errno = 0;
  value = g_ascii_strtod (text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(value >= min && value <= max))
    {
      perfmon_tool_usage_error ("%s must be a number of seconds in [%g, %g], got '%s'",
                                option, min, max, text);
      return FALSE;
    }
  *out = value;
  return TRUE;
}

gboolean
perfmon_tool_running_uninstalled (void)
{
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);

  return exe != NULL && g_str_has_prefix (exe, PERFMON_BUILD_ROOT "/");
}

GDBusConnection *
perfmon_tool_session_bus (GError **error)
{
  g_autoptr(GError) local_error = NULL;
  GDBusConnection *bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &local_error);

  if (bus == NULL)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                 "cannot connect to the session bus (is DBUS_SESSION_BUS_ADDRESS set?): %s",
                 local_error->message);
  return bus;
}

/* A new proxy for each call, made without a call of its own but the
 * bus's GetNameOwner: the tool iterates no main loop, so a proxy kept
 * between calls would not see a perfmond that restarted meanwhile. The
 * first call starts perfmond if it is not running (D-Bus activation). */
PerfmonDBusDaemon1 *
perfmon_tool_daemon_proxy (GDBusConnection *bus,
                           GError         **error)
{
  PerfmonDBusDaemon1 *proxy;

  proxy = perfmon_dbus_daemon1_proxy_new_sync (bus,
                                               G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES |
                                               G_DBUS_PROXY_FLAGS_DO_NOT_CONNECT_SIGNALS |
                                               G_DBUS_PROXY_FLAGS_DO_NOT_AUTO_START_AT_CONSTRUCTION |
                                               G_DBUS_PROXY_FLAGS_NO_MATCH_RULE,
                                               PERFMON_DAEMON_BUS_NAME, PERFMON_DAEMON_OBJECT_PATH,
                                               NULL, error);
  if (proxy == NULL)
    {
      perfmon_tool_explain_daemon_error (error);
      return NULL;
    }
  g_dbus_proxy_set_default_timeout (G_DBUS_PROXY (proxy), PERFMON_TOOL_CALL_TIMEOUT_MS);
  return proxy;
}

void
perfmon_tool_explain_daemon_error (GError **error)
{
  g_autofree char *remote = NULL;

  if (error == NULL || *error == NULL || !g_dbus_error_is_remote_error (*error))
    return;

  remote = g_dbus_error_get_remote_error (*error);
  if (g_strcmp0 (remote, "org.freedesktop.DBus.Error.ServiceUnknown") == 0 ||
      g_strcmp0 (remote, "org.freedesktop.DBus.Error.NameHasNoOwner") == 0)
    {
      g_clear_error (error);
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                           "the perfmond daemon (" PERFMON_DAEMON_BUS_NAME
                           ") is not running on the session bus, and cannot be activated: "
                           "start perfmond, or use 'perfmon demo'");
      return;
    }
  if (g_str_has_prefix (remote, "org.freedesktop.DBus.Error.Spawn."))
    {
      /* D-Bus found an activation file but what it names did not start:
       * "exited with status 127" is the dynamic loader's (the program or
       * a library it needs not found: an install moved or removed). */
      g_autofree char *message = NULL;

      g_dbus_error_strip_remote_error (*error);
      message = g_strdup ((*error)->message);
      g_clear_error (error);
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "D-Bus could not start the perfmond daemon (%s): the program that its activation "
                   "file (" PERFMON_DAEMON_BUS_NAME ".service, in a dbus-1/services directory of the "
                   "session bus) names is missing or cannot load its libraries. Run that file's "
                   "Exec= program (this perfmon's is %s) to see why, or start perfmond yourself",
                   message, PERFMON_DAEMON_INSTALLED_PATH);
      return;
    }
  /* The remote error name is for programs; people want the message. */
  g_dbus_error_strip_remote_error (*error);
}

PerfmonSnapshot *
perfmon_tool_snapshot_from_variant (GVariant   *boxed,
                                    const char *sender,
                                    GError    **error)
{
  g_autoptr(GVariant) inner = g_variant_get_variant (boxed);
  g_autoptr(GError) local_error = NULL;
  PerfmonSnapshot *snapshot;

  snapshot = perfmon_snapshot_new_from_variant (inner, &local_error);
  if (snapshot == NULL)
    g_set_error (error, local_error->domain, local_error->code,
                 "%s sent a snapshot this tool cannot read: %s", sender, local_error->message);
  return snapshot;
}

PerfmonSnapshot *
perfmon_tool_fetch_snapshot (GDBusConnection *bus,
                             guint            pid,
                             GError         **error)
{
  g_autoptr(PerfmonDBusDaemon1) daemon = perfmon_tool_daemon_proxy (bus, error);
  g_autoptr(GVariant) boxed = NULL;
  gboolean ok;

  if (daemon == NULL)
    return NULL;
  if (pid == 0)
    ok = perfmon_dbus_daemon1_call_get_aggregate_sync (daemon, &boxed, NULL, NULL, error);
  else
    ok = perfmon_dbus_daemon1_call_get_snapshot_sync (daemon, pid, &boxed, NULL, error);
  if (!ok)
    {
      perfmon_tool_explain_daemon_error (error);
      return NULL;
    }
  return perfmon_tool_snapshot_from_variant (boxed, "perfmond", error);
}

GVariant *
perfmon_tool_list_hangs (GDBusConnection *bus,
                         GError         **error)
{
  g_autoptr(PerfmonDBusDaemon1) daemon = perfmon_tool_daemon_proxy (bus, error);
  GVariant *hangs = NULL;

  if (daemon != NULL && !perfmon_dbus_daemon1_call_list_hangs_sync (daemon, &hangs, NULL, error))
    perfmon_tool_explain_daemon_error (error);
  return hangs;
}

char *
perfmon_tool_get_hang (GDBusConnection *bus,
                       const char      *id,
                       GError         **error)
{
  g_autoptr(PerfmonDBusDaemon1) daemon = perfmon_tool_daemon_proxy (bus, error);
  char *report = NULL;

  if (daemon != NULL && !perfmon_dbus_daemon1_call_get_hang_sync (daemon, id, &report, NULL, error))
    perfmon_tool_explain_daemon_error (error);
  return report;
}

PerfmonSnapshot *
perfmon_tool_load_snapshot (const char *path,
                            GError    **error)
{
  g_autofree char *text = NULL;
  g_autoptr(GError) local_error = NULL;
  PerfmonSnapshot *snapshot;

  if (!g_file_get_contents (path, &text, NULL, &local_error))
    {
      /* GLib's message names the file already. */
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }

  snapshot = perfmon_snapshot_new_from_json (text, &local_error);
  if (snapshot == NULL)
    g_set_error (error, local_error->domain, local_error->code,
                 "%s: not a perfmon snapshot: %s", path, local_error->message);
  return snapshot;
}

gboolean
perfmon_tool_write_output (const char *path,
                           const char *text,
                           GError    **error)
{
  g_autofree char *with_newline = g_strconcat (text, "\n", NULL);
  g_autoptr(GError) local_error = NULL;

  if (path == NULL)
    {
      g_print ("%s", with_newline);
      return TRUE;
    }
  if (!g_file_set_contents (path, with_newline, -1, &local_error))
    {
      /* GLib names the temporary file it writes through ("x.json.DC1JZ3"):
       * the user's path and the reason say what went wrong. */
      const char *reason = strrchr (local_error->message, ':');

      g_set_error (error, local_error->domain, local_error->code, "Cannot write %s: %s", path,
                   reason != NULL ? reason + 2 : local_error->message);
      return FALSE;
    }
  return TRUE;
}

/* Labels for people, not names: the table's KIND column is 6 wide, and
 * people write "add-on". The names a program reads (JSON, metrics) are
 * perfmon_group_kind_to_string()'s, which --json prints. */
const char *
perfmon_tool_kind_label (PerfmonGroupKind kind)
{
  switch (kind)
    {
    case PERFMON_GROUP_KIND_THREAD: return "thread";
    case PERFMON_GROUP_KIND_WINDOW: return "window";
    case PERFMON_GROUP_KIND_ADDON: return "add-on";
    case PERFMON_GROUP_KIND_COMPARTMENT: return "compt";
    default: return "?";
    }
}

static int
compare_cpu (gconstpointer a,
             gconstpointer b)
{
  const PerfmonGroupStats *sa = *(PerfmonGroupStats * const *) a;
  const PerfmonGroupStats *sb = *(PerfmonGroupStats * const *) b;
  /* An add-on's CPU time charged by sampling counts in its rank. */
  guint64 ca = perfmon_group_stats_get_cpu_time (sa) + perfmon_group_stats_get_sampled_cpu_time (sa);
  guint64 cb = perfmon_group_stats_get_cpu_time (sb) + perfmon_group_stats_get_sampled_cpu_time (sb);

  if (ca != cb)
    return ca < cb ? 1 : -1;
  /* Ties (idle groups) in a stable order: by kind, then id. */
  if (perfmon_group_stats_get_kind (sa) != perfmon_group_stats_get_kind (sb))
    return (int) perfmon_group_stats_get_kind (sa) - (int) perfmon_group_stats_get_kind (sb);
  return perfmon_group_stats_get_id (sa) < perfmon_group_stats_get_id (sb) ? -1 : 1;
}

GPtrArray *
perfmon_tool_sorted_groups (PerfmonSnapshot *snapshot)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);
  GPtrArray *sorted = g_ptr_array_new_full (groups->len, (GDestroyNotify) perfmon_group_stats_unref);

  for (guint i = 0; i < groups->len; i++)
    g_ptr_array_add (sorted, perfmon_group_stats_ref (g_ptr_array_index (groups, i)));
  g_ptr_array_sort (sorted, compare_cpu);
  return sorted;
}

/* One histogram cell, 4 columns wide: "   ." for zero, counts up to 999,
 * then thousands and millions; the JSON output has the exact numbers. */
static void
append_count (GString *out,
              guint64  count)
{
  if (count == 0)
    g_string_append (out, "   .");
  else if (count < 1000)
    g_string_append_printf (out, " %3" G_GUINT64_FORMAT, count);
  else if (count < 100000)
    g_string_append_printf (out, " %2" G_GUINT64_FORMAT "k", count / 1000);
  else if (count < 1000000)
    g_string_append_printf (out, " .%" G_GUINT64_FORMAT "M", count / 100000);
  else if (count < 100000000)
    g_string_append_printf (out, " %2" G_GUINT64_FORMAT "M", count / 1000000);
  else
    g_string_append (out, " ++M");
}

/* The name column: at least this wide, and wider when the terminal
 * allows; the rest of a row is REST_WIDTH columns. */
#define MIN_NAME_WIDTH 18
#define REST_WIDTH (1 + 6 + 1 + 6 + 1 + 6 + PERFMON_N_DURATIONS * 4)
/* The column of CPU time charged by sampling, shown when a group has some. */
#define SAMPLED_WIDTH (1 + 6)

/* The columns the table may use: the terminal's, or $COLUMNS, or no
 * limit (0) when the output is a file or a pipe. */
static guint
output_width (void)
{
  struct winsize size;
  const char *columns = g_getenv ("COLUMNS");
  guint64 value;

  if (isatty (STDOUT_FILENO) && ioctl (STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  if (columns != NULL && g_ascii_string_to_unsigned (columns, 10, 1, 10000, &value, NULL))
    return (guint) value;
  return 0;
}

/* Whether another name of @names than @self starts with @head and ends
 * with @tail (UTF-8 strings): then "@head…@tail" would not tell them
 * apart. */
static gboolean
abbreviation_is_ambiguous (GPtrArray  *names,
                           const char *self,
                           const char *head,
                           const char *tail)
{
  for (guint i = 0; i < names->len; i++)
    {
      const char *other = g_ptr_array_index (names, i);

      if (other != self && g_strcmp0 (other, self) != 0 &&
          g_str_has_prefix (other, head) && g_str_has_suffix (other, tail) &&
          strlen (other) >= strlen (head) + strlen (tail))
        return TRUE;
    }
  return FALSE;
}

/* How many characters @a and @b share from their start. */
static glong
common_prefix_chars (const char *a,
                     const char *b)
{
  glong n = 0;

  while (*a != '\0' && g_utf8_get_char (a) == g_utf8_get_char (b))
    {
      a = g_utf8_next_char (a);
      b = g_utf8_next_char (b);
      n++;
    }
  return n;
}

/* @name in @width characters at most, keeping what tells it apart from
 * the other names of the table, @names: its start and its end ("main
 * thread (python3, pid 12)" and "… pid 13)"), with "…" for the middle,
 * the cut moved from the middle towards the end or the start until no
 * other name has the same start and end; if no cut does, its start, "…",
 * and where it differs from the name most like it ("[gtk] gdk_fr…paint_id…"
 * and "…flush_id…"). */
static char *
abbreviate_middle (const char *name,
                   guint       width,
                   GPtrArray  *names)
{
  glong length = g_utf8_strlen (name, -1);
  glong keep, balanced, differs = 0;

  if (length <= (glong) width || width < 3)
    return g_strdup (name);
  keep = (glong) width - 1;
  balanced = keep / 2;
  for (glong step = 0; step <= keep; step++)
    {
      /* balanced, balanced + 1, balanced - 1, balanced + 2, … */
      glong head = step % 2 == 1 ? balanced + (step + 1) / 2 : balanced - step / 2;
      g_autofree char *start = NULL;
      g_autofree char *end = NULL;

      if (head < 0 || head > keep)
        continue;
      start = g_utf8_substring (name, 0, head);
      end = g_utf8_substring (name, length - (keep - head), length);
      if (names == NULL || !abbreviation_is_ambiguous (names, name, start, end))
        return g_strconcat (start, "…", end, NULL);
    }

  /* Where it differs from the name most like it. */
  for (guint i = 0; i < names->len; i++)
    if (g_strcmp0 (g_ptr_array_index (names, i), name) != 0)
      differs = MAX (differs, common_prefix_chars (name, g_ptr_array_index (names, i)));
  {
    glong head = ((glong) width - 2) / 2;
    glong middle = (glong) width - 2 - head;
    glong from = MIN (MAX (differs, head), length - middle);
    g_autofree char *start = g_utf8_substring (name, 0, head);
    g_autofree char *part = g_utf8_substring (name, from, from + middle);

    return g_strconcat (start, "…", part, "…", NULL);
  }
}

/* Whether @stats is a row that PERFMON_TOOL_TABLE_HIDE_IDLE leaves out
 * of a table of an interval of @interval_us. */
static gboolean
is_idle_row (PerfmonGroupStats *stats,
             double             interval_us)
{
  const guint64 *durations = perfmon_group_stats_get_durations (stats, NULL);
  PerfmonGroupKind kind = perfmon_group_stats_get_kind (stats);

  if (kind != PERFMON_GROUP_KIND_COMPARTMENT &&
      !g_str_has_prefix (perfmon_group_stats_get_name (stats), "[perfmon] "))
    return FALSE;
  /* What the table shows as 0.0 (%, one decimal). */
  if (interval_us <= 0 ||
      1000.0 * (double) perfmon_group_stats_get_cpu_time (stats) / interval_us >= 0.5 ||
      1000.0 * (double) perfmon_group_stats_get_blocked_time (stats) / interval_us >= 0.5)
    return FALSE;
  for (guint d = 0; d < PERFMON_N_DURATIONS; d++)
    if (durations[d] != 0)
      return FALSE;
  return TRUE;
}

void
perfmon_tool_print_table (PerfmonSnapshot     *snapshot,
                          PerfmonToolTableMode mode,
                          guint                max_rows)
{
  perfmon_tool_print_table_full (snapshot, mode, max_rows, PERFMON_TOOL_TABLE_ALL);
}

guint
perfmon_tool_print_table_full (PerfmonSnapshot      *snapshot,
                               PerfmonToolTableMode  mode,
                               guint                 max_rows,
                               PerfmonToolTableFlags flags)
{
  g_autoptr(GPtrArray) groups = perfmon_tool_sorted_groups (snapshot);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  double interval_us = (double) perfmon_snapshot_get_interval (snapshot);
  gboolean percent = mode == PERFMON_TOOL_TABLE_PERCENT && interval_us > 0;
  guint n_hidden = 0;
  guint rows;
  guint width = output_width ();
  guint name_width = MIN_NAME_WIDTH;
  gboolean any_sampled = FALSE;

  if (flags & PERFMON_TOOL_TABLE_HIDE_IDLE)
    for (guint i = groups->len; i-- > 0;)
      if (is_idle_row (g_ptr_array_index (groups, i), interval_us))
        {
          g_ptr_array_remove_index (groups, i);
          n_hidden++;
        }
  rows = max_rows > 0 ? MIN (max_rows, groups->len) : groups->len;
  for (guint i = 0; i < rows; i++)
    any_sampled |= perfmon_group_stats_get_sampled_cpu_time (g_ptr_array_index (groups, i)) != 0;

  /* As wide as the longest name, within the width (less one column: a
   * terminal wraps a line that fills the last one). */
  for (guint i = 0; i < rows; i++)
    {
      g_ptr_array_add (names, perfmon_tool_readable_group_name (snapshot,
                                                                perfmon_group_stats_get_name (g_ptr_array_index (groups, i))));
      name_width = MAX (name_width, (guint) g_utf8_strlen (g_ptr_array_index (names, i), -1));
    }
  if (width > 0)
    {
      guint rest = REST_WIDTH + (any_sampled ? SAMPLED_WIDTH : 0);

      name_width = MIN (name_width, MAX (MIN_NAME_WIDTH, width - 1 > rest ? width - 1 - rest : 0));
    }

  g_print ("%*s  iterations over N ms of CPU\n",
           (int) name_width + 1 + 6 + 1 + 6 + 1 + 6 + (any_sampled ? SAMPLED_WIDTH : 0), "");
  g_print ("%-*s %-6s %6s %6s%s   1   2   4   8  16  32  64 128 256 512\n",
           (int) name_width, "GROUP", "KIND",
           percent ? "CPU%" : "CPU s",
           percent ? "BLK%" : "BLK s",
           !any_sampled ? "" : percent ? "  ~CPU%" : " ~CPU s");

  for (guint i = 0; i < rows; i++)
    {
      PerfmonGroupStats *stats = g_ptr_array_index (groups, i);
      const guint64 *durations = perfmon_group_stats_get_durations (stats, NULL);
      g_autoptr(GString) line = g_string_new (NULL);
      const char *name = g_ptr_array_index (names, i);
      double cpu = (double) perfmon_group_stats_get_cpu_time (stats);
      double blocked = (double) perfmon_group_stats_get_blocked_time (stats);
      g_autofree char *shown_name = NULL;

      shown_name = abbreviate_middle (name, name_width, names);

      /* Padded by characters, not bytes: names are UTF-8. */
      g_string_append (line, shown_name);
      for (glong pad = g_utf8_strlen (shown_name, -1); pad < (glong) name_width; pad++)
        g_string_append_c (line, ' ');
      g_string_append_printf (line, " %-6s ", perfmon_tool_kind_label (perfmon_group_stats_get_kind (stats)));
      if (percent)
        g_string_append_printf (line, "%6.1f %6.1f", 100.0 * cpu / interval_us, 100.0 * blocked / interval_us);
      else
        g_string_append_printf (line, "%6.2f %6.2f", cpu / G_USEC_PER_SEC, blocked / G_USEC_PER_SEC);
      if (any_sampled)
        {
          double sampled = (double) perfmon_group_stats_get_sampled_cpu_time (stats);

          if (perfmon_group_stats_get_kind (stats) != PERFMON_GROUP_KIND_ADDON)
            g_string_append (line, "       ");
          else if (percent)
            g_string_append_printf (line, " %6.1f", 100.0 * sampled / interval_us);
          else
            g_string_append_printf (line, " %6.2f", sampled / G_USEC_PER_SEC);
        }
      for (guint d = 0; d < PERFMON_N_DURATIONS; d++)
        append_count (line, durations[d]);
      g_print ("%s\n", line->str);
    }
  if (any_sampled)
    g_print ("(CPU: measured exactly; ~CPU: an add-on's code elsewhere, estimated by sampling "
             "long dispatches)\n");
  if (rows < groups->len)
    g_print ("(%u more groups)\n", groups->len - rows);
  if (n_hidden > 0)
    g_print ("(%u idle groups hidden: --all, or the a key, shows them)\n", n_hidden);
  return n_hidden;
}

JsonNode *
perfmon_tool_table_to_json (PerfmonSnapshot *snapshot,
                            gboolean         with_percent)
{
  g_autofree char *text = perfmon_snapshot_to_json (snapshot);
  g_autoptr(GError) error = NULL;
  JsonNode *root = json_from_string (text, &error);
  double interval_us = (double) perfmon_snapshot_get_interval (snapshot);
  JsonArray *groups;

  /* The library wrote it: it parses. */
  g_assert_no_error (error);

  if (!with_percent || interval_us <= 0)
    return root;

  groups = json_object_get_array_member (json_node_get_object (root), "groups");
  for (guint i = 0; i < json_array_get_length (groups); i++)
    {
      JsonObject *group = json_array_get_object_element (groups, i);
      double cpu = (double) json_object_get_int_member (group, "cpu_time");
      double blocked = (double) json_object_get_int_member (group, "blocked_time");

      json_object_set_double_member (group, "cpu_percent", 100.0 * cpu / interval_us);
      json_object_set_double_member (group, "blocked_percent", 100.0 * blocked / interval_us);
      if (json_object_has_member (group, "sampled_cpu_time"))
        json_object_set_double_member (group, "sampled_cpu_percent",
                                       100.0 * (double) json_object_get_int_member (group, "sampled_cpu_time") /
                                       interval_us);
    }
  return root;
}

void
perfmon_tool_remove_tree (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      if (g_file_test (child, G_FILE_TEST_IS_DIR) && !g_file_test (child, G_FILE_TEST_IS_SYMLINK))
        perfmon_tool_remove_tree (child);
      else
        g_unlink (child);
    }
  g_rmdir (path);
}

void
perfmon_tool_print_taken_at (PerfmonSnapshot *snapshot)
{
  gint64 wall_time = perfmon_snapshot_get_wall_time (snapshot);
  g_autoptr(GDateTime) utc = NULL;
  g_autoptr(GDateTime) local = NULL;
  g_autofree char *text = NULL;

  if (wall_time <= 0)
    return;
  utc = g_date_time_new_from_unix_utc (wall_time / G_USEC_PER_SEC);
  local = utc != NULL ? g_date_time_to_local (utc) : NULL;
  text = local != NULL ? g_date_time_format (local, "%Y-%m-%d %H:%M:%S") : NULL;
  if (text != NULL)
    g_print ("taken at %s\n", text);
}

/* --- names a person can read -------------------------------------------- */

/* The tool's one thread. Kept to the end: its cache serves every refresh
 * of top. */
static PerfmonSymbolizer *names_symbolizer;

void
perfmon_tool_use_symbolizer (PerfmonSymbolizer *symbolizer)
{
  g_set_object (&names_symbolizer, symbolizer);
}

static PerfmonSymbolizer *
tool_symbolizer (void)
{
  if (names_symbolizer == NULL)
    names_symbolizer = perfmon_symbolizer_new ();
  return names_symbolizer;
}

/* Module file name → path, from /proc/@pid/maps; NULL if unreadable (a
 * process gone, or another user's). Cached per pid for the tool's run. */
static GHashTable *
module_paths (guint pid)
{
  static GHashTable *by_pid;
  GHashTable *paths;
  g_autofree char *maps_path = NULL;
  g_autofree char *maps = NULL;
  g_auto(GStrv) lines = NULL;

  if (pid == 0)
    return NULL;
  if (by_pid == NULL)
    by_pid = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_hash_table_unref);
  if (g_hash_table_lookup_extended (by_pid, GUINT_TO_POINTER (pid), NULL, (gpointer *) &paths))
    return paths;

  paths = NULL;
  maps_path = g_strdup_printf ("/proc/%u/maps", pid);
  if (g_file_get_contents (maps_path, &maps, NULL, NULL))
    {
      paths = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
      lines = g_strsplit (maps, "\n", -1);
      for (guint i = 0; lines[i] != NULL; i++)
        {
          const char *path = strchr (lines[i], '/');

          if (path != NULL && strstr (path, " (deleted)") == NULL)
            g_hash_table_replace (paths, g_path_get_basename (path), g_strdup (path));
        }
    }
  g_hash_table_insert (by_pid, GUINT_TO_POINTER (pid), paths);
  return paths;
}

char *
perfmon_tool_readable_name (const char *name,
                            guint       pid)
{
  return perfmon_tool_readable_name_with (name, pid, NULL, NULL);
}

gboolean
perfmon_tool_snapshot_module (gpointer     data,
                              const char  *module,
                              const char **path,
                              const char **build_id)
{
  return perfmon_snapshot_lookup_module (data, module, path, NULL, build_id);
}

char *
perfmon_tool_readable_task_name (PerfmonTaskLog *log,
                                 PerfmonTask    *task)
{
  PerfmonNamesTaskLogModules modules = { log, perfmon_task_get_process (task) };

  return perfmon_tool_readable_name_with (perfmon_task_get_name (task), modules.process, perfmon_names_task_log_module,
                                          &modules);
}

char *
perfmon_tool_readable_log_name (PerfmonTaskLog *log,
                                guint           process,
                                const char     *name)
{
  PerfmonNamesTaskLogModules modules = { log, process };

  return perfmon_tool_readable_name_with (name, process, perfmon_names_task_log_module, &modules);
}

char *
perfmon_tool_readable_group_name (PerfmonSnapshot *snapshot,
                                  const char      *name)
{
  return perfmon_tool_readable_name_with (name, perfmon_snapshot_get_pid (snapshot),
                                          perfmon_tool_snapshot_module, snapshot);
}

char *
perfmon_tool_readable_name_with (const char             *name,
                                 guint                   pid,
                                 PerfmonToolModuleLookup lookup,
                                 gpointer                data)
{
  return perfmon_names_readable (tool_symbolizer (), name, lookup, data, module_paths, pid, 0);
}

char *
perfmon_tool_readable_chrome_trace (PerfmonTaskLog *log)
{
  return perfmon_names_readable_chrome_trace (tool_symbolizer (), log, module_paths, 0);
}
