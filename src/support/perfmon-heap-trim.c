/* perfmon-heap-trim.c: give the heap back after a spike, off the caller's
 * thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <malloc.h>

#include "perfmon-heap-trim.h"

static gint trim_pending;   /* atomic */

static gpointer
trim_heap (gpointer data)
{
  g_usleep (100 * 1000);
  malloc_trim (0);
  g_usleep (400 * 1000);
  malloc_trim (0);
  g_atomic_int_set (&trim_pending, FALSE);
  return NULL;
}

void
_perfmon_heap_trim_soon (const char *thread_name)
{
  if (g_atomic_int_compare_and_exchange (&trim_pending, FALSE, TRUE))
    g_thread_unref (g_thread_new (thread_name, trim_heap, NULL));
}

/* A message dropped this big gives its memory back to the system. */
#define TRIM_AFTER_BYTES (1024 * 1024)

gboolean
_perfmon_refuse_big_call (GDBusConnection *connection,
                          GDBusMessage    *message,
                          const char      *path,
                          gsize            max_bytes,
                          const char      *trim_thread_name)
{
  GVariant *body;
  gsize size;

  if (g_dbus_message_get_message_type (message) != G_DBUS_MESSAGE_TYPE_METHOD_CALL ||
      g_strcmp0 (g_dbus_message_get_path (message), path) != 0)
    return FALSE;
  body = g_dbus_message_get_body (message);
  size = body != NULL ? g_variant_get_size (body) : 0;
  if (size <= max_bytes)
    return FALSE;

  if (!(g_dbus_message_get_flags (message) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED))
    {
      g_autoptr(GDBusMessage) reply =
        g_dbus_message_new_method_error (message, "org.freedesktop.DBus.Error.InvalidArgs",
                                         "%s: arguments of %" G_GSIZE_FORMAT " bytes, more than the %"
                                         G_GSIZE_FORMAT " that %s takes", g_dbus_message_get_member (message),
                                         size, max_bytes, path);

      g_dbus_connection_send_message (connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, NULL);
    }
  g_object_unref (message);
  /* glibc keeps a freed heap: three refused 30 MB calls kept 191 MB in
   * a monitored program before. */
  if (size >= TRIM_AFTER_BYTES)
    _perfmon_heap_trim_soon (trim_thread_name);
  return TRUE;
}

void
_perfmon_heap_trim_now (void)
{
  malloc_trim (0);
}

/* glibc's M_MMAP_THRESHOLD default, kept: setting it at all is what turns
 * the dynamic threshold off. */
#define MAP_BLOCKS_FROM_BYTES (128 * 1024)

void
_perfmon_heap_map_big_blocks (void)
{
  mallopt (M_MMAP_THRESHOLD, MAP_BLOCKS_FROM_BYTES);
}
