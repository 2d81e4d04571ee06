/* test-publish.c: the shared region a process publishes its snapshots in
 * (src/support/perfmon-publish.h): its one writer and its one reader, and
 * what each refuses of the other side
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <fcntl.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perfmon-publish.h"

#define CAPACITY 4096
/* The header's words, as the layout in perfmon-publish.h gives them. */
#define WORD_MAGIC 0
#define WORD_CAPACITY 1
#define WORD_SEQUENCE 2
#define WORD_LENGTH 3
#define WORD_GENERATION 4
#define HEADER_BYTES 24

typedef struct
{
  PerfmonPublishRegion *reader;   /* perfmond's */
  PerfmonPublishRegion *writer;   /* the process's */
  guint32              *words;    /* a third mapping: a hostile writer */
  int                   fd;
} Fixture;

static void
fixture_set_up (Fixture       *f,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  f->reader = perfmon_publish_region_create (CAPACITY, &f->fd, &error);
  g_assert_no_error (error);
  f->writer = perfmon_publish_region_map (f->fd, &error);
  g_assert_no_error (error);
  f->words = mmap (NULL, HEADER_BYTES + CAPACITY, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
  g_assert_true (f->words != MAP_FAILED);
}

static void
fixture_tear_down (Fixture       *f,
                   gconstpointer  data)
{
  munmap (f->words, HEADER_BYTES + CAPACITY);
  perfmon_publish_region_free (f->writer);
  perfmon_publish_region_free (f->reader);
  close (f->fd);
}

static void
test_round_trip (Fixture       *f,
                 gconstpointer  data)
{
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GBytes) again = NULL;
  g_autoptr(GError) error = NULL;
  guint64 generation = 0;

  g_assert_cmpuint (perfmon_publish_region_get_capacity (f->writer), ==, CAPACITY);
  /* Nothing published yet. */
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &bytes, &error), ==,
                   PERFMON_PUBLISH_NOTHING_NEW);

  g_assert_true (perfmon_publish_region_write (f->writer, "first", 5));
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &bytes, &error), ==, PERFMON_PUBLISH_NEW);
  g_assert_no_error (error);
  g_assert_cmpuint (generation, ==, 1);
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), "first", 5);
  /* A copy: what the process writes next does not change it. */
  g_assert_true (perfmon_publish_region_write (f->writer, "SECOND!", 7));
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), "first", 5);

  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &again, &error), ==, PERFMON_PUBLISH_NEW);
  g_assert_cmpuint (generation, ==, 2);
  g_assert_cmpmem (g_bytes_get_data (again, NULL), g_bytes_get_size (again), "SECOND!", 7);
  /* Read once. */
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, NULL, &error), ==,
                   PERFMON_PUBLISH_NOTHING_NEW);
  g_assert_cmpuint (f->words[WORD_SEQUENCE] % 2, ==, 0);
}

/* A snapshot bigger than the region is not written: perfmond is told to
 * ask over D-Bus, once. */
static void
test_overflow (Fixture       *f,
               gconstpointer  data)
{
  g_autofree guint8 *big = g_malloc0 (CAPACITY + 1);
  g_autoptr(GError) error = NULL;
  guint64 generation = 0;

  g_assert_true (perfmon_publish_region_write (f->writer, big, CAPACITY));
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, NULL, &error), ==, PERFMON_PUBLISH_NEW);
  g_assert_false (perfmon_publish_region_write (f->writer, big, CAPACITY + 1));
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, NULL, &error), ==,
                   PERFMON_PUBLISH_OVERFLOW_SEEN);
  g_assert_no_error (error);
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, NULL, &error), ==,
                   PERFMON_PUBLISH_NOTHING_NEW);
}

/* What a hostile or broken process may write, read by perfmond. */
static void
test_hostile_writer (Fixture       *f,
                     gconstpointer  data)
{
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;
  guint64 generation = 0;

  /* A write under way (or one that never ends): nothing is read. */
  f->words[WORD_GENERATION] = 1;
  f->words[WORD_LENGTH] = 3;
  f->words[WORD_SEQUENCE] = 1;
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &bytes, &error), ==, PERFMON_PUBLISH_BUSY);
  g_assert_null (bytes);
  g_assert_cmpuint (generation, ==, 0);

  /* A length beyond the region: refused, naming the field and the range,
   * and nothing is copied. */
  f->words[WORD_LENGTH] = CAPACITY + 1;
  f->words[WORD_SEQUENCE] = 2;
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &bytes, &error), ==, PERFMON_PUBLISH_BAD);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, "length: expected 1 to 4096 bytes, got 4097"));
  g_assert_null (bytes);
  g_clear_error (&error);

  /* Its own capacity in the header is not believed: the reader keeps the
   * one it made the region with. */
  f->words[WORD_CAPACITY] = 0xffffffffu;
  f->words[WORD_LENGTH] = 0x7fffffffu;
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &bytes, &error), ==, PERFMON_PUBLISH_BAD);
  g_clear_error (&error);

  /* An empty one is no snapshot either. */
  f->words[WORD_LENGTH] = 0;
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &bytes, &error), ==, PERFMON_PUBLISH_BAD);
  g_clear_error (&error);

  /* The writer's sequence, whatever perfmond or anyone left in it, ends
   * even after a write. */
  f->words[WORD_SEQUENCE] = 41;
  g_assert_true (perfmon_publish_region_write (f->writer, "ok", 2));
  g_assert_cmpuint (f->words[WORD_SEQUENCE] % 2, ==, 0);
  g_assert_cmpint (perfmon_publish_region_read (f->reader, &generation, &bytes, &error), ==, PERFMON_PUBLISH_NEW);
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), "ok", 2);
}

/* The region cannot be shrunk or grown by either side: a mapping of it
 * never faults. */
static void
test_sealed (Fixture       *f,
             gconstpointer  data)
{
  g_assert_cmpint (ftruncate (f->fd, 8), ==, -1);
  g_assert_cmpint (ftruncate (f->fd, HEADER_BYTES + CAPACITY * 2), ==, -1);
  g_assert_cmpint (fcntl (f->fd, F_ADD_SEALS, F_SEAL_WRITE), ==, -1);
}

/* What the process refuses to map, from a perfmond (or anyone) that sends
 * something else than a sealed region. */
static void
test_map_refuses (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPublishRegion) region = NULL;
  int unsealed = memfd_create ("unsealed", MFD_CLOEXEC);
  int small = memfd_create ("small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  int wrong = memfd_create ("wrong", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  int pipes[2];
  guint32 header[6] = { 0x12345678, 16, 0, 0, 0, 0 };
  guint32 too_big[6] = { PERFMON_PUBLISH_MAGIC, 1000, 0, 0, 0, 0 };

  g_assert_cmpint (ftruncate (unsealed, HEADER_BYTES + 16), ==, 0);
  region = perfmon_publish_region_map (unsealed, &error);
  g_assert_null (region);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "sealed"));
  g_clear_error (&error);

  g_assert_cmpint (ftruncate (small, 8), ==, 0);
  g_assert_cmpint (fcntl (small, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), ==, 0);
  region = perfmon_publish_region_map (small, &error);
  g_assert_null (region);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);

  /* A wrong magic, then a capacity bigger than the file. */
  g_assert_cmpint (write (wrong, header, sizeof header), ==, sizeof header);
  g_assert_cmpint (ftruncate (wrong, HEADER_BYTES + 16), ==, 0);
  g_assert_cmpint (fcntl (wrong, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), ==, 0);
  region = perfmon_publish_region_map (wrong, &error);
  g_assert_null (region);
  g_assert_nonnull (strstr (error->message, "magic"));
  g_clear_error (&error);
  g_assert_cmpint (pwrite (wrong, too_big, sizeof too_big, 0), ==, sizeof too_big);
  region = perfmon_publish_region_map (wrong, &error);
  g_assert_null (region);
  g_assert_nonnull (strstr (error->message, "capacity in [1, 16], got 0x31627570 and 1000"));
  g_clear_error (&error);

  /* Not a file at all. */
  g_assert_cmpint (pipe (pipes), ==, 0);
  region = perfmon_publish_region_map (pipes[0], &error);
  g_assert_null (region);
  g_clear_error (&error);

  close (unsealed);
  close (small);
  close (wrong);
  close (pipes[0]);
  close (pipes[1]);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/publish/round-trip", Fixture, NULL, fixture_set_up, test_round_trip, fixture_tear_down);
  g_test_add ("/publish/overflow", Fixture, NULL, fixture_set_up, test_overflow, fixture_tear_down);
  g_test_add ("/publish/hostile-writer", Fixture, NULL, fixture_set_up, test_hostile_writer, fixture_tear_down);
  g_test_add ("/publish/sealed", Fixture, NULL, fixture_set_up, test_sealed, fixture_tear_down);
  g_test_add_func ("/publish/map-refuses", test_map_refuses);

  return g_test_run ();
}
