/* perfmond-upload.h: pings sent to a telemetry server (--upload-url)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _PerfmondUploader PerfmondUploader;

/* $XDG_STATE_HOME/perfmon/pings, PerfmonHangMonitor:pings-dir's default. */
char             *perfmond_default_pings_dir (void);
/* The entry of @dirs (canonical paths) that holds the ping file @path
 * ("<name>.json" directly inside it), or NULL. Nothing is read. */
const char       *perfmond_pings_dir_of  (const char * const *dirs,
                                          const char         *path);

/* Sends the pings of @pings_dirs to @base_url: scans them now and every
 * @rescan_s seconds. */
PerfmondUploader *perfmond_uploader_new  (const char         *base_url,
                                          const char * const *pings_dirs,
                                          guint               rescan_s);
/* A hint that @path is a new ping: sent sooner. FALSE (and nothing done)
 * when it is not in a pings directory of the uploader's. */
gboolean          perfmond_uploader_add  (PerfmondUploader   *self,
                                          const char         *path);
void              perfmond_uploader_rescan (PerfmondUploader *self);
void              perfmond_uploader_free (PerfmondUploader   *self);

G_END_DECLS
