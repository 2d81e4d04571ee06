/* perfmon-modules-private.h: the loaded objects of the process
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Length of a breakpad id: 32 hex digits of GUID and 1 of age. */
#define PERFMON_BREAKPAD_ID_LENGTH 33

typedef struct _PerfmonModules PerfmonModules;

/* A snapshot, taken with dl_iterate_phdr(), of the objects loaded in the
 * process: the main program, the shared libraries and the vDSO, in the
 * order the dynamic linker lists them (the order of the ping's "modules"
 * list). Immutable once taken, refcounted atomically: any thread may use
 * it. Objects loaded or unloaded later are not seen; take a new snapshot.
 * Not async-signal-safe (it allocates). */
PerfmonModules *_perfmon_modules_new   (void);
PerfmonModules *_perfmon_modules_ref   (PerfmonModules *modules);
void            _perfmon_modules_unref (PerfmonModules *modules);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonModules, _perfmon_modules_unref)

guint           _perfmon_modules_get_n (PerfmonModules *modules);

/* For module @index < _perfmon_modules_get_n():
 *
 * - path: the file name the dynamic linker used; for the main program
 *   (whose name is empty there) the target of /proc/self/exe, or
 *   program_invocation_name if that cannot be read.
 * - debug name: the basename of the path (the ping's "debug file name").
 * - build id: the GNU build id (NT_GNU_BUILD_ID note) as lowercase hex, ""
 *   if the object has none.
 * - breakpad id: _perfmon_breakpad_id_from_build_id() of the build id, ""
 *   if the object has no build id (the seed hashes the text section then;
 *   we do not).
 * - base: where offsets are counted from, Breakpad's convention: the
 *   load bias (dlpi_addr) plus the virtual address of the first PT_LOAD
 *   segment (0 for shared libraries and PIEs, 0x400000 for a usual
 *   x86-64 non-PIE executable).
 * - first load vaddr: that virtual address, as the file says it: an
 *   offset plus it is the address `nm` and the symbol tables use.
 * - size: the end of the highest PT_LOAD segment, counted from the base:
 *   every offset _perfmon_modules_lookup() returns for the module is
 *   below it. */
const char     *_perfmon_modules_get_path        (PerfmonModules *modules,
                                                  guint           index);
const char     *_perfmon_modules_get_debug_name  (PerfmonModules *modules,
                                                  guint           index);
const char     *_perfmon_modules_get_build_id    (PerfmonModules *modules,
                                                  guint           index);
const char     *_perfmon_modules_get_breakpad_id (PerfmonModules *modules,
                                                  guint           index);
guint64         _perfmon_modules_get_base        (PerfmonModules *modules,
                                                  guint           index);
guint64         _perfmon_modules_get_size        (PerfmonModules *modules,
                                                  guint           index);

/* Finds the module one of whose PT_LOAD segments holds @pc: stores its
 * index (in the modules list) and @pc's offset from its base, and
 * returns TRUE. Returns FALSE, and leaves both untouched, if @pc is outside
 * every module (the ping then writes the index -1). Either out pointer may
 * be NULL. Does not allocate or lock. */
gboolean        _perfmon_modules_lookup (PerfmonModules *modules,
                                         guint64         pc,
                                         guint          *index_out,
                                         guint64        *offset_out);

/* The breakpad id, as Mozilla's ping uses it, of an ELF file whose GNU
 * build id is @build_id (@length bytes): its first 16 bytes (zero-padded
 * if shorter) read as a GUID, that is the first 4 bytes reversed, the next
 * 2 reversed, the next 2 reversed and the last 8 as they are, printed as 32
 * uppercase hex digits, then the age "0". Always 33 characters. */
char           *_perfmon_breakpad_id_from_build_id (const guint8 *build_id,
                                                    gsize         length);

/* The modules that the "module+0xOFFSET" words of @names (@n_names
 * strings, any of them NULL) refer to, once each, in the order first
 * referred to, as PerfmonRecordedModule (core/'s record, which snapshots
 * and task logs hold): the loaded object whose file name is the word (the
 * main program also under "program", the name a program without one gets,
 * and under its invocation name), with its path, load base and build id
 * read from memory: no file is opened, nothing is symbolized. Words that
 * name no loaded object, or one whose record would not pass
 * _perfmon_recorded_module_check() (a path not UTF-8), are left out.
 * Returns NULL if there is none.
 *
 * The modules are cached for the process: words seen before cost a hash
 * lookup, a new one a dl_iterate_phdr() (the dynamic linker's lock). Any
 * thread, not a hot path, never a signal handler. */
GPtrArray      *_perfmon_modules_for_names (const char * const *names,
                                            gsize               n_names);

/* _perfmon_modules_for_names() of the group names of @snapshot (a
 * PerfmonSnapshot), for _perfmon_snapshot_set_modules() or
 * _perfmon_snapshot_to_json_with_modules(). */
GPtrArray      *_perfmon_modules_for_snapshot (gpointer snapshot);

/* How long symbolizing one report or sample may spend loading modules. */
#define PERFMON_SYMBOLIZE_BUDGET_MS 2000

/* The name of the function that holds @pc, from the dynamic symbol table
 * (dladdr()), not demangled; NULL if there is none (a static or stripped
 * function, or @pc outside every module). Stores @pc's offset from the
 * start of the function in @offset_out (may be NULL) when it returns a
 * name.
 *
 * Not async-signal-safe: dladdr() takes the dynamic linker's lock and this
 * allocates. Never call it from a signal handler or on a thread that is
 * stopped; callers symbolize on the watchdog thread, after the capture. */
char           *_perfmon_symbolize (guint64  pc,
                                    guint64 *offset_out);

/* What a hang report or a stack tree says of one native frame. */
typedef struct
{
  guint64  pc;
  int      module_index;   /* -1 outside every module */
  guint64  offset;         /* from the module's base; the pc outside any */
  char    *symbol;         /* g_free() it; NULL if unknown */
  guint64  symbol_offset;  /* of pc from the function's start */
} PerfmonPcInfo;

/* Describes @pc, a frame of a captured stack: @is_return_address is TRUE
 * for every frame but the innermost, whose function is then looked up at
 * the call instruction rather than the address after it. The function
 * comes from the process's symbolizer (elfutils: symbol tables and debug
 * files), which loads no module past @deadline_us (monotonic, 0: none),
 * then from dladdr(). Same thread rules as _perfmon_symbolize(). */
void            _perfmon_modules_describe_pc (PerfmonModules *modules,
                                              guint64         pc,
                                              gboolean        is_return_address,
                                              gint64          deadline_us,
                                              PerfmonPcInfo  *info);

G_END_DECLS
