/* perfmon-bhr-ping-private.h: Mozilla's "bhr" ping, the envelope of a batch of hang records
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <json-glib/json-glib.h>

#include "perfmon-bhr-ping.h"

G_BEGIN_DECLS

/* Mozilla's ingestion only accepts this ping as docType "bhr", version 4
 * (the seed's "backgroundhangmonitor" name is no longer accepted). */
#define PERFMON_PING_TYPE    "bhr"
#define PERFMON_PING_VERSION 4

typedef struct
{
  const char *app_name;         /* NULL: _perfmon_process_name () */
  const char *app_version;      /* free-form, may be NULL */
  const char *build_id;         /* 14 digits YYYYmmddHHMMSS, or NULL: the main
                                 * executable's mtime (UTC) */
  const char *channel;          /* NULL: "default" */
  gint64      time_since_last_ping_ms;
} PerfmonPingInfo;

/* The limits of a ping: perfmon_bhr_ping_new_from_json() refuses
 * anything larger, and the writer keeps within them. A ping carries the
 * pending records of one pings directory (at most 4 MiB of them, see
 * perfmon-ping-store.c) in an envelope of a few hundred bytes; each hang
 * keeps the limits of a hang report (perfmon-hang-report-private.h). */
#define PERFMON_BHR_PING_MAX_JSON_BYTES   (8 * 1024 * 1024)
/* Of each string of the envelope and of "application": the writer cuts
 * longer ones (at a UTF-8 character). */
#define PERFMON_BHR_PING_MAX_STRING_BYTES 1024
#define PERFMON_BHR_PING_MAX_HANGS        100000
/* Of a hang's "hangId": the ping store's record ids. */
#define PERFMON_BHR_PING_MAX_HANG_ID      128

/* A ping being built: the envelope of @info (PERFMON_ERROR_INVALID_ARGUMENT
 * for a build_id that is not 14 digits; @info may be NULL: all defaults),
 * then the hangs, then the whole. */
typedef struct _PerfmonBhrPingBuilder PerfmonBhrPingBuilder;

PerfmonBhrPingBuilder *_perfmon_bhr_ping_builder_new      (const PerfmonPingInfo  *info,
                                                           GError                **error);
/* A builder with the envelope of @ping (its creation date, application
 * and timeSinceLastPing), to write a ping read back, or its hangs
 * changed (symbolized). */
PerfmonBhrPingBuilder *_perfmon_bhr_ping_builder_new_like (PerfmonBhrPing         *ping);
/* Adds @hang, a record as _perfmon_hang_report_to_json_object() writes
 * it, under @hang_id: in the ping, hangs share one "modules" list (their
 * native frames re-indexed into it) and carry "hangId". */
void                   _perfmon_bhr_ping_builder_add_hang (PerfmonBhrPingBuilder  *builder,
                                                           JsonObject             *hang,
                                                           const char             *hang_id);
/* The ping @ping_id of the installation @client_id; frees @builder. */
JsonObject            *_perfmon_bhr_ping_builder_end      (PerfmonBhrPingBuilder  *builder,
                                                           const char             *ping_id,
                                                           const char             *client_id);
void                   _perfmon_bhr_ping_builder_free     (PerfmonBhrPingBuilder  *builder);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonBhrPingBuilder, _perfmon_bhr_ping_builder_free)

/* @ping as the JSON object the writer writes (see
 * perfmon_bhr_ping_to_json()). */
JsonObject            *_perfmon_bhr_ping_to_json_object   (PerfmonBhrPing         *ping);
/* A ping with the envelope of @ping and @hangs (PerfmonHangReport, the
 * same number as @ping's, under the same ids): @ping's hangs symbolized. */
PerfmonBhrPing        *_perfmon_bhr_ping_new_with_hangs   (PerfmonBhrPing         *ping,
                                                           GPtrArray              *hangs);
/* @ping's "application" section, as read. */
JsonObject            *_perfmon_bhr_ping_get_application  (PerfmonBhrPing         *ping);

/* The version as the ping's application.version and platformVersion want
 * it, "^[0-9]{2,3}\\.": @version unchanged if it already starts so, else
 * "00." and @version with every character outside [A-Za-z0-9.+~-]
 * replaced by '_' ("1.2" → "00.1.2", "0.1.0" → "00.0.1.0"); a NULL or
 * empty @version is "00.0". No product version starts with "00.", so a
 * mapped one is told apart from a real one. */
char             *_perfmon_ping_map_version (const char *version);

G_END_DECLS
