/* perfmon-publish.c: the shared page a process publishes its snapshots in
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See perfmon-publish.h for the layout and who writes what.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memfd_create(), F_ADD_SEALS */
#endif
#include "config.h"

#include "perfmon-publish.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct
{
  guint32 magic;
  guint32 capacity;
  guint32 sequence;
  guint32 length;
  guint64 generation;
} Header;

#define HEADER_BYTES ((gsize) sizeof (Header))

/* The sequence lock's fences. GCC refuses thread fences under
 * ThreadSanitizer, which does not model them; the writer and the reader
 * are two processes, which it does not see either, so a compiler barrier
 * does there. */
#if defined(__SANITIZE_THREAD__)
#define publish_fence(order) __atomic_signal_fence (order)
#else
#define publish_fence(order) __atomic_thread_fence (order)
#endif
/* What a region must be sealed with for the other side not to make it
 * fault: it can neither shrink nor grow, nor the seals change. */
#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

struct _PerfmonPublishRegion
{
  Header  *header;
  guint8  *data;
  gsize    map_size;
  guint32  capacity;     /* ours: the header's may be scribbled over */
};

static PerfmonPublishRegion *
region_new (void    *map,
            gsize    map_size,
            guint32  capacity)
{
  PerfmonPublishRegion *region = g_new0 (PerfmonPublishRegion, 1);

  region->header = map;
  region->data = (guint8 *) map + HEADER_BYTES;
  region->map_size = map_size;
  region->capacity = capacity;
  return region;
}

/**
 * perfmon_publish_region_create:
 * @capacity: bytes of snapshot the region holds, in [1, PERFMON_PUBLISH_MAX_CAPACITY]
 * @fd: (out): the region's memfd, to send to the process; the caller closes it
 * @error: a #GIOError
 *
 * perfmond's side: makes a sealed memfd of @capacity bytes and its header.
 */
PerfmonPublishRegion *
perfmon_publish_region_create (guint32   capacity,
                               int      *fd,
                               GError  **error)
{
  gsize map_size = HEADER_BYTES + capacity;
  void *map;
  int memfd;

  g_return_val_if_fail (capacity > 0 && capacity <= PERFMON_PUBLISH_MAX_CAPACITY, NULL);

  memfd = memfd_create ("perfmon-publish", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (memfd < 0 ||
      ftruncate (memfd, (off_t) map_size) != 0 ||
      fcntl (memfd, F_ADD_SEALS, REQUIRED_SEALS) != 0)
    {
      int errsv = errno;

      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                   "could not make a shared region of %" G_GSIZE_FORMAT " bytes: %s", map_size,
                   g_strerror (errsv));
      if (memfd >= 0)
        close (memfd);
      return NULL;
    }
  map = mmap (NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (map == MAP_FAILED)
    {
      int errsv = errno;

      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                   "could not map a shared region of %" G_GSIZE_FORMAT " bytes: %s", map_size,
                   g_strerror (errsv));
      close (memfd);
      return NULL;
    }
  ((Header *) map)->magic = PERFMON_PUBLISH_MAGIC;
  ((Header *) map)->capacity = capacity;
  *fd = memfd;
  return region_new (map, map_size, capacity);
}

/**
 * perfmon_publish_region_map:
 * @fd: a region's memfd, as received; not taken
 * @error: a #GIOError
 *
 * The process's side: maps a region that perfmond made, after checking
 * that it is sealed against shrinking and as big as its header says.
 */
PerfmonPublishRegion *
perfmon_publish_region_map (int      fd,
                            GError **error)
{
  struct stat st;
  Header header;
  void *map;
  int seals = fcntl (fd, F_GET_SEALS);

  if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "region: expected a memfd sealed against shrinking, growing and resealing");
      return NULL;
    }
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode) ||
      st.st_size < (off_t) HEADER_BYTES || st.st_size > (off_t) (HEADER_BYTES + PERFMON_PUBLISH_MAX_CAPACITY))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "region: expected a file of %" G_GSIZE_FORMAT " to %" G_GSIZE_FORMAT " bytes",
                   HEADER_BYTES + 1, HEADER_BYTES + PERFMON_PUBLISH_MAX_CAPACITY);
      return NULL;
    }
  map = mmap (NULL, (gsize) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED)
    {
      int errsv = errno;

      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "region: could not map it: %s",
                   g_strerror (errsv));
      return NULL;
    }
  memcpy (&header, map, sizeof header);
  if (header.magic != PERFMON_PUBLISH_MAGIC || header.capacity == 0 ||
      header.capacity > (gsize) st.st_size - HEADER_BYTES)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "region: expected magic 0x%08x and a capacity in [1, %" G_GSIZE_FORMAT "], "
                   "got 0x%08x and %u", PERFMON_PUBLISH_MAGIC, (gsize) st.st_size - HEADER_BYTES,
                   header.magic, header.capacity);
      munmap (map, (gsize) st.st_size);
      return NULL;
    }
  return region_new (map, (gsize) st.st_size, header.capacity);
}

void
perfmon_publish_region_free (PerfmonPublishRegion *region)
{
  if (region == NULL)
    return;
  munmap (region->header, region->map_size);
  g_free (region);
}

guint32
perfmon_publish_region_get_capacity (PerfmonPublishRegion *region)
{
  return region->capacity;
}

/**
 * perfmon_publish_region_write:
 * @region: a mapped region
 * @data: (array length=length): a snapshot, as GetSnapshotBytes sends it
 * @length: its size
 *
 * The process's side: publishes @data, or, if it is bigger than the
 * region, that a snapshot did not fit (perfmond then asks over D-Bus).
 *
 * Returns: whether @data fitted
 */
gboolean
perfmon_publish_region_write (PerfmonPublishRegion *region,
                              const void           *data,
                              gsize                 length)
{
  Header *header = region->header;
  gboolean fits = length <= region->capacity;
  /* Ours alone to write: whatever perfmond put there, it is made odd. */
  guint32 sequence = __atomic_load_n (&header->sequence, __ATOMIC_RELAXED) | 1;

  __atomic_store_n (&header->sequence, sequence, __ATOMIC_RELAXED);
  publish_fence (__ATOMIC_RELEASE);
  if (fits)
    memcpy (region->data, data, length);
  __atomic_store_n (&header->length, fits ? (guint32) length : PERFMON_PUBLISH_OVERFLOW, __ATOMIC_RELAXED);
  __atomic_store_n (&header->generation, __atomic_load_n (&header->generation, __ATOMIC_RELAXED) + 1,
                    __ATOMIC_RELAXED);
  __atomic_store_n (&header->sequence, sequence + 1, __ATOMIC_RELEASE);
  return fits;
}

/**
 * perfmon_publish_region_read:
 * @region: a region made by perfmon_publish_region_create()
 * @generation: (inout): the generation last read; updated
 * @bytes: (out) (optional): for %PERFMON_PUBLISH_NEW, a private copy of the snapshot
 * @error: for %PERFMON_PUBLISH_BAD, what is wrong
 *
 * perfmond's side: whether a new snapshot is there, and a copy of it. The
 * process may write anything at any time: the copy is taken between two
 * reads of the sequence, and only its length is checked here.
 */
PerfmonPublishRead
perfmon_publish_region_read (PerfmonPublishRegion  *region,
                             guint64               *generation,
                             GBytes               **bytes,
                             GError               **error)
{
  Header *header = region->header;
  guint32 before = __atomic_load_n (&header->sequence, __ATOMIC_ACQUIRE);
  guint64 now;
  guint32 length;
  guint8 *copy;

  if (before & 1)
    return PERFMON_PUBLISH_BUSY;
  now = __atomic_load_n (&header->generation, __ATOMIC_RELAXED);
  length = __atomic_load_n (&header->length, __ATOMIC_RELAXED);
  if (now == *generation)
    return PERFMON_PUBLISH_NOTHING_NEW;
  if (length == PERFMON_PUBLISH_OVERFLOW)
    {
      publish_fence (__ATOMIC_ACQUIRE);
      if (__atomic_load_n (&header->sequence, __ATOMIC_RELAXED) != before)
        return PERFMON_PUBLISH_BUSY;
      *generation = now;
      return PERFMON_PUBLISH_OVERFLOW_SEEN;
    }
  if (length > region->capacity || length == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "region: length: expected 1 to %u bytes, got %u", region->capacity, length);
      return PERFMON_PUBLISH_BAD;
    }

  copy = g_malloc (length);
  memcpy (copy, region->data, length);
  publish_fence (__ATOMIC_ACQUIRE);
  if (__atomic_load_n (&header->sequence, __ATOMIC_RELAXED) != before)
    {
      g_free (copy);
      return PERFMON_PUBLISH_BUSY;
    }
  *generation = now;
  if (bytes != NULL)
    *bytes = g_bytes_new_take (copy, length);
  else
    g_free (copy);
  return PERFMON_PUBLISH_NEW;
}
