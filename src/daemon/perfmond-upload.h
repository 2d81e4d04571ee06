/* perfmond-upload.h: pings sent to a telemetry server (--upload-url)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _PerfmondUploader PerfmondUploader;

PerfmondUploader *perfmond_uploader_new  (const char       *base_url);
void              perfmond_uploader_add  (PerfmondUploader *self,
                                          const char       *path);
void              perfmond_uploader_free (PerfmondUploader *self);

G_END_DECLS
