/* perfmon-tool-view.c: perfmon view [--print-url]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Opens perfmond's about:performance page in the browser (as `gio open`
 * does), or prints its URL. perfmond is started by D-Bus activation if it
 * is not running; the URL is the one it wrote to
 * $XDG_RUNTIME_DIR/perfmon/view-url (taken only if the pid there is the
 * bus name's owner), with the token of $XDG_RUNTIME_DIR/perfmon/http-token.
 */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

/* How long perfmond may take to start and serve the page. */
#define VIEW_WAIT_US (10 * G_USEC_PER_SEC)

/* The pid of the owner of perfmond's name, starting perfmond if needed. */
static guint
daemon_pid (GDBusConnection *bus,
            GError         **error)
{
  g_autoptr(GVariant) reply = NULL;
  guint pid = 0;

  /* Any call to the name activates it. */
  reply = g_dbus_connection_call_sync (bus, PERFMON_DAEMON_BUS_NAME, "/", "org.freedesktop.DBus.Peer", "Ping",
                                       NULL, NULL, G_DBUS_CALL_FLAGS_NONE, PERFMON_TOOL_CALL_TIMEOUT_MS, NULL, error);
  if (reply == NULL)
    {
      perfmon_tool_explain_daemon_error (error);
      return 0;
    }
  g_clear_pointer (&reply, g_variant_unref);
  reply = g_dbus_connection_call_sync (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "GetConnectionUnixProcessID", g_variant_new ("(s)", PERFMON_DAEMON_BUS_NAME),
                                       G_VARIANT_TYPE ("(u)"), G_DBUS_CALL_FLAGS_NONE, PERFMON_TOOL_CALL_TIMEOUT_MS,
                                       NULL, error);
  if (reply == NULL)
    return 0;
  g_variant_get (reply, "(u)", &pid);
  return pid;
}

/* A file of ours that only we can read: its contents, else NULL. */
static char *
read_private_file (const char *path)
{
  struct stat st;
  int fd = open (path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  char buffer[512];
  ssize_t n;

  if (fd < 0)
    return NULL;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode) || st.st_uid != getuid () || (st.st_mode & 077) != 0)
    {
      close (fd);
      return NULL;
    }
  n = read (fd, buffer, sizeof buffer - 1);
  close (fd);
  if (n <= 0)
    return NULL;
  buffer[n] = '\0';
  return g_strdup (buffer);
}

/* The page's URL with its token, once perfmond @pid serves it. */
static char *
wait_for_url (guint    pid,
              GError **error)
{
  g_autofree char *dir = g_build_filename (g_get_user_runtime_dir (), "perfmon", NULL);
  g_autofree char *url_path = g_build_filename (dir, "view-url", NULL);
  g_autofree char *token_path = g_build_filename (dir, "http-token", NULL);
  gint64 deadline = g_get_monotonic_time () + VIEW_WAIT_US;

  while (g_get_monotonic_time () < deadline)
    {
      g_autofree char *contents = read_private_file (url_path);
      g_autofree char *token = read_private_file (token_path);
      g_auto(GStrv) lines = NULL;
      guint64 owner = 0;

      if (contents != NULL && token != NULL)
        {
          lines = g_strsplit (contents, "\n", 3);
          if (lines[0] != NULL && lines[1] != NULL &&
              g_ascii_string_to_unsigned (lines[1], 10, 1, G_MAXUINT, &owner, NULL) && owner == pid &&
              g_str_has_prefix (lines[0], "http://"))
            return g_strconcat (lines[0], "?token=", g_strstrip (token), NULL);
        }
      g_usleep (50 * 1000);
    }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
               "perfmond (pid %u) does not serve the about:performance page: see %s, and whether "
               "it runs with --no-view", pid, url_path);
  return NULL;
}

int
perfmon_tool_view (int    argc,
                   char **argv)
{
  g_autoptr(GOptionContext) context = g_option_context_new ("- open the about:performance page");
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *url = NULL;
  gboolean print_url = FALSE;
  guint pid;
  const GOptionEntry entries[] = {
    { "print-url", 0, 0, G_OPTION_ARG_NONE, &print_url,
      "Print the page's URL (with its token: it opens the page as given) instead of opening it", NULL },
    { NULL }
  };

  g_option_context_set_summary (context,
                                "Opens perfmond's live about:performance page in the browser: the processes, "
                                "their groups\nand their hangs. perfmond is started if it is not running.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      g_printerr ("perfmon view: %s\n", error->message);
      return PERFMON_TOOL_EXIT_USAGE;
    }
  if (argc > 1)
    {
      g_printerr ("perfmon view: unexpected argument “%s”\n", argv[1]);
      return PERFMON_TOOL_EXIT_USAGE;
    }

  bus = perfmon_tool_session_bus (&error);
  if (bus == NULL || (pid = daemon_pid (bus, &error)) == 0 || (url = wait_for_url (pid, &error)) == NULL)
    {
      g_printerr ("perfmon: %s\n", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  if (print_url)
    {
      g_print ("%s\n", url);
      return PERFMON_TOOL_EXIT_OK;
    }
  if (!g_app_info_launch_default_for_uri (url, NULL, &error))
    {
      /* Not the URL: it holds the token. */
      g_printerr ("perfmon: cannot open the page in a browser: %s\n"
                  "“perfmon view --print-url” prints its URL.\n", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }
  return PERFMON_TOOL_EXIT_OK;
}
