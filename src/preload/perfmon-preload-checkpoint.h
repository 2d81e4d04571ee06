/* perfmon-preload-checkpoint.h: the checkpoints of "perfmon run", written
 * off the watched thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _PerfmonCheckpointWriter PerfmonCheckpointWriter;

/* Watched thread: what a checkpoint needs, taken in microseconds (a
 * snapshot, references); or NULL when there is nothing worth a file. */
typedef gpointer (*PerfmonCheckpointTakeFunc) (void);
/* Writer thread: the file's text, or NULL with @error set. */
typedef char *(*PerfmonCheckpointSerializeFunc) (gpointer job, GError **error);

G_GNUC_INTERNAL PerfmonCheckpointWriter *_perfmon_checkpoint_writer_new    (const char                     *path,
                                                            PerfmonCheckpointTakeFunc       take,
                                                            PerfmonCheckpointSerializeFunc  serialize,
                                                            GDestroyNotify                  job_free);
G_GNUC_INTERNAL void     _perfmon_checkpoint_writer_submit (PerfmonCheckpointWriter        *writer,
                                                            gpointer                        job);
G_GNUC_INTERNAL void     _perfmon_checkpoint_writer_finish (PerfmonCheckpointWriter        *writer,
                                                            gpointer                        job);

G_END_DECLS
