/* perfmon-tool-state.c: perfmon state [list | clean] [--json]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What programs using libperfmon (and so "perfmon run") leave on disk, in
 * $XDG_STATE_HOME/perfmon: hang pings and the random client id that every
 * ping carries (pings/), the hangs of each running process waiting to go
 * into a ping (pings/pending/<process>/, locked while the process lives),
 * records that could not be read (pings/corrupt/), jank, timeout and
 * stuck-thread logs (watchdog/). "clean" deletes all of it except the
 * pending directories of processes still running; the directory of a
 * process that died (Ctrl-C, a crash) is no longer locked, and goes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

/* The ping store's layout (src/hang/perfmon-ping-store.c). */
#define PINGS_DIR   "pings"
#define PENDING_DIR "pending"
#define LOCK_FILE   "lock"

typedef struct
{
  guint64 files;
  guint64 bytes;
} Usage;

static void
add_usage (const char *path,
           Usage      *usage)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;
  GStatBuf st;

  if (g_lstat (path, &st) != 0)
    return;
  if (!S_ISDIR (st.st_mode))
    {
      usage->files++;
      usage->bytes += (guint64) st.st_size;
      return;
    }
  dir = g_dir_open (path, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      add_usage (child, usage);
    }
}

/* Whether the pending directory @path belongs to a process that still
 * runs: it holds the flock() of its lock file as long as it lives. */
static gboolean
pending_dir_is_live (const char *path)
{
  g_autofree char *lock_path = g_build_filename (path, LOCK_FILE, NULL);
  int fd = open (lock_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  gboolean live;

  if (fd < 0)
    return FALSE;
  live = flock (fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close (fd);
  return live;
}

static char *
state_dir (void)
{
  return g_build_filename (g_get_user_state_dir (), "perfmon", NULL);
}

/* Each entry of the state directory, and of its pings directory, with its
 * usage; pending directories counted as live or stale. */
static int
list_state (gboolean json)
{
  g_autofree char *top = state_dir ();
  g_autofree char *pending = g_build_filename (top, PINGS_DIR, PENDING_DIR, NULL);
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(GDir) dir = g_dir_open (top, 0, NULL);
  g_autoptr(GDir) pending_dir = g_dir_open (pending, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  guint n_live = 0, n_stale = 0;
  Usage total = { 0, 0 };
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
  while (pending_dir != NULL && (name = g_dir_read_name (pending_dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (pending, name, NULL);

      if (!g_file_test (path, G_FILE_TEST_IS_DIR) || g_str_equal (name, "corrupt"))
        continue;
      if (pending_dir_is_live (path))
        n_live++;
      else
        n_stale++;
    }

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "directory");
  json_builder_add_string_value (builder, top);
  json_builder_set_member_name (builder, "entries");
  json_builder_begin_array (builder);
  if (!json)
    g_print ("%s:\n", top);
  for (guint i = 0; i < names->len; i++)
    {
      g_autofree char *path = g_build_filename (top, g_ptr_array_index (names, i), NULL);
      Usage usage = { 0, 0 };

      add_usage (path, &usage);
      total.files += usage.files;
      total.bytes += usage.bytes;
      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "name");
      json_builder_add_string_value (builder, g_ptr_array_index (names, i));
      json_builder_set_member_name (builder, "files");
      json_builder_add_int_value (builder, (gint64) usage.files);
      json_builder_set_member_name (builder, "bytes");
      json_builder_add_int_value (builder, (gint64) usage.bytes);
      json_builder_end_object (builder);
      if (!json)
        {
          g_autofree char *size = g_format_size (usage.bytes);
          g_print ("  %-12s %6" G_GUINT64_FORMAT " files %10s\n",
                   (const char *) g_ptr_array_index (names, i), usage.files, size);
        }
    }
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "files");
  json_builder_add_int_value (builder, (gint64) total.files);
  json_builder_set_member_name (builder, "bytes");
  json_builder_add_int_value (builder, (gint64) total.bytes);
  json_builder_set_member_name (builder, "pending_live");
  json_builder_add_int_value (builder, n_live);
  json_builder_set_member_name (builder, "pending_stale");
  json_builder_add_int_value (builder, n_stale);
  json_builder_end_object (builder);

  if (json)
    {
      g_autoptr(JsonNode) root = json_builder_get_root (builder);
      g_autofree char *text = json_to_string (root, TRUE);

      g_print ("%s\n", text);
    }
  else
    {
      g_autofree char *size = g_format_size (total.bytes);

      if (names->len == 0)
        g_print ("  nothing\n");
      else
        g_print ("  %-12s %6" G_GUINT64_FORMAT " files %10s\n", "total", total.files, size);
      g_print ("Pending hangs: %u directories of running processes, %u of processes that died.\n"
               "pings: hang pings and the client id they carry; watchdog: jank, timeout and\n"
               "stuck-thread logs. 'perfmon state clean' deletes them.\n", n_live, n_stale);
    }
  return PERFMON_TOOL_EXIT_OK;
}

/* Deletes a file, or a tree without following symbolic links. */
static void
delete_path (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
    perfmon_tool_remove_tree (path);
  else
    g_unlink (path);
}

/* Deletes each entry of @dir but @keep. */
static void
delete_entries (const char *dir,
                const char *keep)
{
  g_autoptr(GDir) entries = g_dir_open (dir, 0, NULL);
  const char *name;

  while (entries != NULL && (name = g_dir_read_name (entries)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (keep == NULL || !g_str_equal (name, keep))
        delete_path (path);
    }
}

static int
clean_state (void)
{
  g_autofree char *top = state_dir ();
  g_autofree char *pings = g_build_filename (top, PINGS_DIR, NULL);
  g_autofree char *pending = g_build_filename (pings, PENDING_DIR, NULL);
  g_autoptr(GDir) pending_dir = NULL;
  const char *name;
  guint n_kept = 0;

  if (!g_file_test (top, G_FILE_TEST_IS_DIR))
    {
      g_print ("%s: nothing to delete\n", top);
      return PERFMON_TOOL_EXIT_OK;
    }

  /* Everything but the pending directories of running processes. */
  pending_dir = g_dir_open (pending, 0, NULL);
  while (pending_dir != NULL && (name = g_dir_read_name (pending_dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (pending, name, NULL);

      if (pending_dir_is_live (path))
        n_kept++;
      else
        delete_path (path);
    }
  delete_entries (pings, PENDING_DIR);
  delete_entries (top, PINGS_DIR);
  /* Each fails, as it should, while something is kept inside. */
  g_rmdir (pending);
  g_rmdir (pings);
  g_rmdir (top);

  if (n_kept > 0)
    g_print ("%s: deleted, except the pending hangs of %u running process%s\n",
             top, n_kept, n_kept == 1 ? "" : "es");
  else
    g_print ("%s: deleted\n", top);
  return PERFMON_TOOL_EXIT_OK;
}

int
perfmon_tool_state (int    argc,
                    char **argv)
{
  gboolean json = FALSE;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "List as JSON", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("[list | clean]");
  const char *verb;

  g_option_context_set_summary (context,
                                "What perfmon leaves on disk, in $XDG_STATE_HOME/perfmon (by default\n"
                                "~/.local/state/perfmon): hang pings and the random client id they\n"
                                "carry (pings/), the saved hangs of each running process (pings/pending/),\n"
                                "jank, timeout and stuck-thread logs (watchdog/).\n"
                                "\n"
                                "  list    how many files and bytes each holds (the default)\n"
                                "  clean   delete them all, except the pending hangs of processes that\n"
                                "          still run; those of processes that died (Ctrl-C, a crash) go");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;
  if (argc > 2)
    return perfmon_tool_usage_error ("too many arguments");

  verb = argc > 1 ? argv[1] : "list";
  if (g_str_equal (verb, "list"))
    return list_state (json);
  if (g_str_equal (verb, "clean"))
    {
      if (json)
        return perfmon_tool_usage_error ("--json goes with list");
      return clean_state ();
    }
  return perfmon_tool_usage_error ("unknown action '%s' (list or clean)", verb);
}
