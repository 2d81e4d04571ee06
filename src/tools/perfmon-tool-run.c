/* perfmon-tool-run.c: perfmon run [OPTION…] -- COMMAND ARGS…
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Puts libperfmon-preload.so into LD_PRELOAD, passes the settings in the
 * environment (see src/preload/perfmon-preload.c) and execs the command:
 * the command keeps perfmon's pid, its signals and its exit status.
 */
#define _GNU_SOURCE  /* gettid(), execvpe() */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

/* Exit statuses when the command cannot run at all, as env(1) and
 * timeout(1) give them: scripts tell them from the command's own. */
#define EXIT_CANNOT_EXECUTE 126
#define EXIT_NOT_FOUND      127

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

int
perfmon_tool_run (int    argc,
                  char **argv)
{
  /* G_MININT64: not given, the hang monitor's default. */
  gint64 threshold = G_MININT64;
  gint64 permahang = G_MININT64;
  g_autofree char *summary = NULL;
  gboolean no_export = FALSE;
  const GOptionEntry entries[] = {
    { "threshold", 't', 0, G_OPTION_ARG_INT64, &threshold,
      "A main-loop iteration this long is a hang (default 128)", "MS" },
    { "permahang", 0, 0, G_OPTION_ARG_INT64, &permahang,
      "A hang this long is saved while it lasts (default 8192)", "MS" },
    { "no-export", 0, 0, G_OPTION_ARG_NONE, &no_export,
      "Do not serve the monitor on the session bus nor register with perfmond", NULL },
    { "summary", 's', 0, G_OPTION_ARG_FILENAME, &summary,
      "Write the summary as JSON to FILE instead of standard error", "FILE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("-- COMMAND [ARG…]");
  g_auto(GStrv) env = NULL;
  g_autofree char *pid_text = NULL;
  g_autofree char *preload_value = NULL;
  const char *module = preload_path ();
  const char *old_preload;
  int first;

  g_option_context_set_summary (context,
                                "Runs an unmodified GLib program with perfmon watching its main loop:\n"
                                "accounting and hang detection on the default main context, served on\n"
                                "the session bus (when there is one) for perfmond and 'perfmon top'.\n"
                                "At exit the program prints a summary (iterations, CPU, the jank\n"
                                "histogram, hangs with their stacks) to standard error, or to\n"
                                "--summary FILE as JSON.\n"
                                "\n"
                                "The exit status is the command's; 126 if it cannot be executed, 127\n"
                                "if it is not found, 2 for a wrong perfmon command line.");
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

  if (!g_file_test (module, G_FILE_TEST_IS_REGULAR))
    {
      perfmon_tool_error ("run: the preload module %s is missing (set PERFMON_PRELOAD_PATH to "
                          "libperfmon-preload.so)", module);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  env = g_get_environ ();
  /* The dynamic loader reads the list from the left: earlier modules (a
   * sanitizer runtime must be first) stay first. */
  old_preload = g_environ_getenv (env, "LD_PRELOAD");
  preload_value = old_preload != NULL && *old_preload != '\0'
    ? g_strconcat (old_preload, ":", module, NULL) : g_strdup (module);
  env = g_environ_setenv (env, "LD_PRELOAD", preload_value, TRUE);
  /* exec keeps the pid: the command itself prints the summary, not the
   * children it starts. */
  pid_text = g_strdup_printf ("%d", (int) getpid ());
  env = g_environ_setenv (env, "PERFMON_RUN_PID", pid_text, TRUE);
  env = g_environ_unsetenv (env, "PERFMON_RUN_THRESHOLD_MS");
  env = g_environ_unsetenv (env, "PERFMON_RUN_PERMAHANG_MS");
  env = g_environ_unsetenv (env, "PERFMON_RUN_SUMMARY");
  env = g_environ_unsetenv (env, "PERFMON_RUN_NO_EXPORT");
  if (no_export)
    env = g_environ_setenv (env, "PERFMON_RUN_NO_EXPORT", "1", TRUE);
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
  if (summary != NULL)
    {
      /* The command may chdir: give it an absolute path. */
      g_autofree char *absolute = g_canonicalize_filename (summary, NULL);
      env = g_environ_setenv (env, "PERFMON_RUN_SUMMARY", absolute, TRUE);
    }

  execvpe (argv[first], argv + first, env);

  perfmon_tool_error ("run: cannot run '%s': %s", argv[first], g_strerror (errno));
  return errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
}
