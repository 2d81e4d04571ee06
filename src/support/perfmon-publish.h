/* perfmon-publish.h: the shared page a process publishes its snapshots in
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * perfmond polls every registered process once per interval. Over D-Bus
 * that is a call and a reply per process per poll: at 200 processes and
 * 1 Hz, GDBus alone (a client that does nothing with the replies) uses
 * 2.3 to 3 % of a core. So once a process has answered one
 * GetSnapshotBytes, perfmond hands it a region of shared memory
 * (Monitor1.Publish) and reads its snapshots from there: no message.
 *
 * The region is a sealed memfd that perfmond makes: its size cannot
 * change, so neither side can be made to fault on it. The process writes,
 * perfmond reads; neither trusts the other. The layout, little-endian
 * 32- and 64-bit words at their natural alignment:
 *
 *   magic      u32  PERFMON_PUBLISH_MAGIC, written by perfmond
 *   capacity   u32  bytes of data, written by perfmond
 *   sequence   u32  even: stable; odd: the process is writing
 *   length     u32  bytes of the snapshot in data, or
 *                   PERFMON_PUBLISH_OVERFLOW: it did not fit (poll over D-Bus)
 *   generation u64  snapshots published so far
 *   data       capacity bytes: the snapshot as GetSnapshotBytes sends it
 *
 * A sequence lock: the reader copies length and data out, then checks
 * that the sequence did not move; the copy is then checked like any
 * snapshot from D-Bus (perfmond_snapshot_check_reply()).
 *
 * Threads: a region is used by one thread at a time (its owner's).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define PERFMON_PUBLISH_MAGIC    0x31627570u   /* "pub1" */
#define PERFMON_PUBLISH_OVERFLOW 0xffffffffu
/* The most perfmond offers; mapped, not allocated: pages are made as the
 * process writes them. */
#define PERFMON_PUBLISH_MAX_CAPACITY (16u * 1024 * 1024)

typedef struct _PerfmonPublishRegion PerfmonPublishRegion;

typedef enum
{
  PERFMON_PUBLISH_NOTHING_NEW,   /* the generation it had */
  PERFMON_PUBLISH_NEW,           /* a copy of a new snapshot */
  PERFMON_PUBLISH_BUSY,          /* being written: read again later */
  PERFMON_PUBLISH_OVERFLOW_SEEN, /* a new snapshot too big for the region */
  PERFMON_PUBLISH_BAD,           /* what is there breaks the layout */
} PerfmonPublishRead;

PerfmonPublishRegion *perfmon_publish_region_create (guint32      capacity,
                                                     int         *fd,
                                                     GError     **error);
PerfmonPublishRegion *perfmon_publish_region_map    (int          fd,
                                                     GError     **error);
void                  perfmon_publish_region_free   (PerfmonPublishRegion *region);
guint32               perfmon_publish_region_get_capacity (PerfmonPublishRegion *region);
gboolean              perfmon_publish_region_write  (PerfmonPublishRegion *region,
                                                     const void           *data,
                                                     gsize                 length);
PerfmonPublishRead    perfmon_publish_region_read   (PerfmonPublishRegion *region,
                                                     guint64              *generation,
                                                     GBytes              **bytes,
                                                     GError              **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonPublishRegion, perfmon_publish_region_free)

G_END_DECLS
