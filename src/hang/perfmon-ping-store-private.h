/* perfmon-ping-store-private.h: hang records that survive the process, until a ping sends them
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <json-glib/json-glib.h>

#include "perfmon-bhr-ping-private.h"
#include "perfmon-hang-report.h"

G_BEGIN_DECLS

/* Layout of a pings directory:
 *
 *   <pings_dir>/client-id              one UUID, this installation's clientId
 *   <pings_dir>/<ping uuid>.json       finished pings, ready to be sent
 *   <pings_dir>/pending/<instance>/    one per live (or dead, not yet
 *                                      adopted) store: "lock" and one
 *                                      "<hang id>.json" per hang record
 *   <pings_dir>/pending/corrupt/       pending files that were not valid
 *                                      hang records, kept for a human
 *
 * Directories are made 0700, files 0600. */
#define PERFMON_PING_STORE_PENDING_DIR   "pending"
#define PERFMON_PING_STORE_CORRUPT_DIR   "corrupt"
#define PERFMON_PING_STORE_LOCK_FILE     "lock"
#define PERFMON_PING_STORE_CLIENT_ID     "client-id"

typedef struct _PerfmonPingStore PerfmonPingStore;

/* Opens (creating, mode 0700) @pings_dir and a pending directory of this
 * store, @pings_dir/pending/<instance>/, whose lock file stays locked
 * (flock LOCK_EX) for the life of the store. Then adopts the pending hangs
 * of dead stores: a pending/<other>/ whose lock can be taken belongs to a
 * process that is gone, so its hang files are moved into our pending
 * directory and it is removed. Errors name the path. */
PerfmonPingStore *_perfmon_ping_store_open  (const char        *pings_dir,
                                             GError           **error);
/* Releases the lock. Pending hangs stay for the next start to adopt; an
 * empty pending directory is removed. */
void              _perfmon_ping_store_close (PerfmonPingStore  *store);
/* In a child forked without exec, a store its parent opened: frees it and
 * closes the child's copy of the lock's descriptor, and touches no file
 * (they are the parent's). */
void              _perfmon_ping_store_forget (PerfmonPingStore *store);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonPingStore, _perfmon_ping_store_close)

/* This store's pending/<instance>/ directory. */
const char       *_perfmon_ping_store_get_pending_dir (PerfmonPingStore *store);

/* Persists @report atomically and durably, as the record that
 * perfmon_hang_report_new_from_json() reads back, and returns its
 * id, which the caller keeps to replace it. With @id non-NULL the record of
 * that id is replaced (a permahang that ended: its provisional record with
 * Unrecovered=true is rewritten with the final duration); if a ping has
 * consumed it meanwhile, it is written anew under the same id, so the final
 * record is sent too. Thread-safe. */
char             *_perfmon_ping_store_save_hang      (PerfmonPingStore  *store,
                                                      const char        *id,
                                                      PerfmonHangReport *report,
                                                      GError           **error);
/* The same, with the record as JSON text, read with
 * perfmon_hang_report_new_from_json(). */
char             *_perfmon_ping_store_save_hang_json (PerfmonPingStore  *store,
                                                      const char        *id,
                                                      const char        *json,
                                                      GError           **error);

/* For tests: the byte limits of pending records (default 4 MiB; a save
 * beyond it fails with G_FILE_ERROR_NOSPC) and of finished pings (default
 * 16 MiB; the oldest are deleted beyond it). */
void              _perfmon_ping_store_set_limits     (PerfmonPingStore  *store,
                                                      guint64            pending_bytes,
                                                      guint64            pings_bytes);

/* Hang files in our pending directory. */
guint             _perfmon_ping_store_count_pending  (PerfmonPingStore  *store);

/* Builds a "bhr" ping of all pending hangs, oldest first (after adopting
 * those of stores that died meanwhile), writes it atomically as
 * @pings_dir/<ping uuid>.json and only then deletes the pending files it
 * consumed: a crash in between sends hangs twice, never zero times
 * (at least once, by design: see doc/ping-store-files.md). Each hang in
 * the ping carries "hangId", its record's id, the same in every ping that
 * carries it, so that a receiver can drop duplicates. Pings beyond the
 * byte limit are deleted oldest first.
 * Returns the ping's path, or NULL with no error when there is no pending
 * hang. Pending files that are not valid hang records are moved to
 * pending/corrupt/ with a g_warning(), never deleted. @info may be NULL
 * (all defaults). Thread-safe. */
char             *_perfmon_ping_store_write_ping     (PerfmonPingStore       *store,
                                                      const PerfmonPingInfo  *info,
                                                      GError                **error);

G_END_DECLS
