/* write-sample-ping.c: writes one ping through the ping store, for test_ping_schema.py
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdio.h>

#include "perfmon.h"
#include "perfmon-ping-store-private.h"

/* Two records whose module lists overlap in a different order, so that the
 * ping's shared list and its re-indexed frames are what the schema checks,
 * and every optional field is present at least once. */
static const char * const hangs[] = {
  "{\"duration\": 301.5, \"thread\": \"main\", \"runnableName\": \"spell-check\","
  " \"process\": \"default\", \"remoteType\": null,"
  " \"annotations\": [[\"Unrecovered\", \"true\"]],"
  " \"pseudoStack\": [\"outer label\", \"inner label dyn\"],"
  " \"stack\": [\"outer label\", [0, \"1a2b\"], [-1, \"7ffe0010\"], \"inner label dyn\", [1, \"40\"]],"
  " \"modules\": [[\"app\", \"55679D09BCDEA35B11111111111111110\"],"
  "               [\"libglib-2.0.so.0\", \"0A0B0C0D0E0F10111213141516171819A\"]]}",
  "{\"duration\": 150, \"thread\": \"worker\", \"runnableName\": \"\","
  " \"process\": \"tab\", \"remoteType\": \"web\", \"annotations\": [],"
  " \"stack\": [[0, \"ff\"], [1, \"10\"]],"
  " \"modules\": [[\"libglib-2.0.so.0\", \"0A0B0C0D0E0F10111213141516171819A\"],"
  "               [\"libjson-glib-1.0.so.0\", \"FFEEDDCCBBAA99887766554433221100B\"]]}",
};

int
main (int    argc,
      char **argv)
{
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  PerfmonPingInfo info = {
    .app_name = "write-sample-ping",
    .app_version = PACKAGE_VERSION,
    .time_since_last_ping_ms = 12345,
  };

  if (argc != 2)
    {
      fprintf (stderr, "Usage: %s PINGS-DIR\n", argv[0]);
      return 2;
    }

  store = _perfmon_ping_store_open (argv[1], &error);
  for (gsize i = 0; store != NULL && i < G_N_ELEMENTS (hangs); i++)
    {
      g_autofree char *id = _perfmon_ping_store_save_hang_json (store, NULL, hangs[i], &error);
      if (id == NULL)
        break;
    }
  if (error == NULL)
    path = _perfmon_ping_store_write_ping (store, &info, &error);
  if (path == NULL)
    {
      fprintf (stderr, "%s\n", error != NULL ? error->message : "no ping written");
      return 1;
    }

  printf ("%s\n", path);
  return 0;
}
