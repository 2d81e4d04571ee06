/* check-chrome-trace.c: check-chrome-trace FILE.json — checks a Chrome
 * trace exported by "perfmon tasks export" the way DevTools and Perfetto
 * read it, and that its flows join parents and children
 * (perfmon-chrome-trace-test.h); aborts on the first fault, else prints
 * the number of flows. For the command-line tests.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib.h>

#include "perfmon-chrome-trace-test.h"

int
main (int    argc,
      char **argv)
{
  g_autofree char *json = NULL;
  g_autoptr(GError) error = NULL;

  if (argc != 2)
    {
      g_printerr ("usage: check-chrome-trace FILE.json\n");
      return 2;
    }
  if (!g_file_get_contents (argv[1], &json, NULL, &error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  g_print ("%u flows\n", test_check_chrome_trace (json, NULL, NULL));
  return 0;
}
