/* fuzz-ping-pending.c: pending hang files read back at start
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is the content of one pending hang file, as a crash, a full
 * disk or another program may have left it. Writing a ping must either
 * send it (a ping that parses, with one hang, and the file gone) or set it
 * aside in pending/corrupt/ (with no ping); it must never crash, and
 * nothing may stay in the pending directory. A crash or a sanitizer
 * report is a finding (the g_warning() for a corrupt file is expected).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "perfmon-error.h"
#include "perfmon-ping-store-private.h"
#include "fuzz-common.h"

static char *pings_dir;
static PerfmonPingStore *store;

static void
remove_files (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *file = g_build_filename (path, name, NULL);

      if (g_unlink (file) != 0)
        abort ();
    }
}

static guint
count_files (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
  guint n = 0;

  while (dir != NULL && g_dir_read_name (dir) != NULL)
    n++;
  return n;
}

/* Leaves nothing behind in /dev/shm. */
static void
remove_pings_dir (void)
{
  g_autofree char *pending_root = g_build_filename (pings_dir, PERFMON_PING_STORE_PENDING_DIR, NULL);
  g_autofree char *corrupt_dir = g_build_filename (pending_root, PERFMON_PING_STORE_CORRUPT_DIR, NULL);

  _perfmon_ping_store_close (g_steal_pointer (&store));
  remove_files (corrupt_dir);
  g_rmdir (corrupt_dir);
  g_rmdir (pending_root);
  remove_files (pings_dir);   /* client-id */
  g_rmdir (pings_dir);
}

static void
quiet (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
}

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  g_autofree char *hang_path = NULL;
  g_autofree char *ping_path = NULL;
  g_autofree char *corrupt_dir = NULL;
  g_autoptr(GError) error = NULL;

  if (store == NULL)
    {
      const char *base = g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" : g_get_tmp_dir ();
      g_autofree char *template = g_build_filename (base, "fuzz-ping-XXXXXX", NULL);

      /* Corrupt files are set aside with a warning: expected here. */
      g_log_set_handler ("Perfmon", G_LOG_LEVEL_WARNING, quiet, NULL);
      g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
      pings_dir = g_mkdtemp (template) != NULL ? g_strdup (template) : NULL;
      if (pings_dir == NULL)
        abort ();
      store = _perfmon_ping_store_open (pings_dir, &error);
      if (store == NULL)
        abort ();
      atexit (remove_pings_dir);
    }
  corrupt_dir = g_build_filename (pings_dir, PERFMON_PING_STORE_PENDING_DIR,
                                  PERFMON_PING_STORE_CORRUPT_DIR, NULL);

  hang_path = g_build_filename (_perfmon_ping_store_get_pending_dir (store), "fuzz.json", NULL);
  if (!g_file_set_contents (hang_path, (const char *) data, (gssize) size, NULL))
    abort ();

  ping_path = _perfmon_ping_store_write_ping (store, NULL, &error);
  if (ping_path != NULL)
    {
      g_autoptr(JsonParser) parser = json_parser_new ();
      JsonObject *payload;

      if (error != NULL || !json_parser_load_from_file (parser, ping_path, NULL))
        abort ();
      payload = json_object_get_object_member (json_node_get_object (json_parser_get_root (parser)),
                                               "payload");
      if (json_array_get_length (json_object_get_array_member (payload, "hangs")) != 1)
        abort ();
      g_unlink (ping_path);
    }
  else if (error != NULL)
    abort ();   /* a pending file can be unusable, never an error */
  else if (count_files (corrupt_dir) != 1)
    abort ();   /* not sent: then set aside */

  if (_perfmon_ping_store_count_pending (store) != 0 ||
      g_file_test (hang_path, G_FILE_TEST_EXISTS))
    abort ();
  remove_files (corrupt_dir);
  return 0;
}
