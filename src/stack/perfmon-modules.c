/* perfmon-modules.c: the loaded objects of the process
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "perfmon-modules-private.h"
#include "perfmon-recorded-module-private.h"
#include "perfmon-snapshot.h"
#include "perfmon-symbolizer-private.h"

/* Design.
 *
 * A hang report names each native frame by a module index and an offset
 * in that module (the seed's [index, "hex offset"]), and the ping lists the
 * modules by debug file name and breakpad id, so that a symbol server can
 * symbolize the frames offline. _perfmon_modules_new() takes that list once
 * with dl_iterate_phdr(), which holds the dynamic linker's lock while it
 * runs, so the list is consistent; lookups afterwards only read the copy.
 *
 * The offset of a pc is Breakpad's: counted from the load bias
 * (dlpi_addr) plus the virtual address of the object's first PT_LOAD
 * segment, that is from where the object's first byte is mapped. For a
 * shared library or a PIE the first segment is at address 0 and the
 * offset is the address `nm` and `addr2line -e FILE` use; for a non-PIE
 * executable (Debian's python3.11: first segment at 0x400000) it is that
 * address minus 0x400000, which is what a Breakpad symbol file and
 * Mozilla's symbol server expect. The symbolizer adds the first
 * segment's address back (see perfmon-symbolizer.c).
 *
 * The build id is read from the mapped PT_NOTE segments, which the loader
 * maps read-only with the rest of the object, so no file is opened. */

typedef struct
{
  guint64 start;
  guint64 end;
} Range;

typedef struct
{
  char   *path;
  char   *debug_name;
  char   *build_id;      /* lowercase hex, "" if none */
  char   *breakpad_id;   /* "" if no build id */
  guint64 base;             /* dlpi_addr + first_load_vaddr */
  guint64 first_load_vaddr;
  guint64 size;
  GArray *ranges;        /* of Range, absolute [start, end) */
} Module;

struct _PerfmonModules
{
  gatomicrefcount ref_count;
  GPtrArray      *modules; /* of Module */
};

static void
module_free (gpointer data)
{
  Module *module = data;

  g_free (module->path);
  g_free (module->debug_name);
  g_free (module->build_id);
  g_free (module->breakpad_id);
  g_array_unref (module->ranges);
  g_free (module);
}

static char *
hex_string (const guint8 *bytes,
            gsize         length,
            gboolean      upper)
{
  static const char lower_digits[] = "0123456789abcdef";
  static const char upper_digits[] = "0123456789ABCDEF";
  const char *digits = upper ? upper_digits : lower_digits;
  char *hex = g_malloc (length * 2 + 1);

  for (gsize i = 0; i < length; i++)
    {
      hex[2 * i] = digits[bytes[i] >> 4];
      hex[2 * i + 1] = digits[bytes[i] & 0xf];
    }
  hex[length * 2] = '\0';

  return hex;
}

char *
_perfmon_breakpad_id_from_build_id (const guint8 *build_id,
                                    gsize         length)
{
  guint8 guid[16] = { 0 };
  guint8 swapped[16];
  g_autofree char *hex = NULL;

  g_return_val_if_fail (build_id != NULL || length == 0, NULL);

  if (length > 0)
    memcpy (guid, build_id, MIN (length, sizeof guid));

  /* The GUID's Data1 (4 bytes), Data2 and Data3 (2 bytes each) are
   * little-endian integers that Breakpad prints big-endian; Data4 (8 bytes)
   * is printed as it is. */
  swapped[0] = guid[3];
  swapped[1] = guid[2];
  swapped[2] = guid[1];
  swapped[3] = guid[0];
  swapped[4] = guid[5];
  swapped[5] = guid[4];
  swapped[6] = guid[7];
  swapped[7] = guid[6];
  memcpy (swapped + 8, guid + 8, 8);

  hex = hex_string (swapped, sizeof swapped, TRUE);
  return g_strconcat (hex, "0", NULL);
}

#define NOTE_ALIGN(value, align) (((value) + ((align) - 1)) & ~(guint64) ((align) - 1))

/* The NT_GNU_BUILD_ID note of the object, as lowercase hex, or "". */
static char *
read_build_id (const struct dl_phdr_info *info)
{
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
      const guint8 *p;
      guint64 left;
      guint64 align;

      if (phdr->p_type != PT_NOTE)
        continue;

      p = (const guint8 *) (gsize) (info->dlpi_addr + phdr->p_vaddr);
      left = phdr->p_memsz;
      /* Notes are 4-byte aligned, except in segments aligned to 8 (such as
       * .note.gnu.property on x86-64), whose notes are 8-byte aligned. */
      align = phdr->p_align == 8 ? 8 : 4;

      while (left >= sizeof (ElfW(Nhdr)))
        {
          ElfW(Nhdr) header;
          guint64 name_size, desc_size, total;

          memcpy (&header, p, sizeof header);
          name_size = NOTE_ALIGN ((guint64) header.n_namesz, align);
          desc_size = NOTE_ALIGN ((guint64) header.n_descsz, align);
          total = sizeof header + name_size + desc_size;
          if (total > left)
            break;

          if (header.n_type == NT_GNU_BUILD_ID &&
              header.n_namesz == sizeof "GNU" &&
              memcmp (p + sizeof header, "GNU", sizeof "GNU") == 0 &&
              header.n_descsz > 0)
            return hex_string (p + sizeof header + name_size, header.n_descsz, FALSE);

          p += total;
          left -= total;
        }
    }

  return g_strdup ("");
}

static char *
main_program_path (void)
{
  g_autoptr(GError) error = NULL;
  char *path = g_file_read_link ("/proc/self/exe", &error);

  if (path != NULL)
    return path;

  return g_strdup (program_invocation_name != NULL ? program_invocation_name : "");
}

static int
add_module (struct dl_phdr_info *info,
            size_t               size,
            void                *data)
{
  GPtrArray *modules = data;
  Module *module = g_new0 (Module, 1);
  g_autofree guint8 *raw = NULL;
  gsize raw_length = 0;

  /* The first object is the main program, whose name the dynamic linker
   * leaves empty. */
  if (modules->len == 0 && (info->dlpi_name == NULL || info->dlpi_name[0] == '\0'))
    module->path = main_program_path ();
  else
    module->path = g_strdup (info->dlpi_name != NULL ? info->dlpi_name : "");
  module->debug_name = g_path_get_basename (module->path);
  if (module->path[0] == '\0')
    {
      g_free (module->debug_name);
      module->debug_name = g_strdup ("");
    }

  module->ranges = g_array_new (FALSE, FALSE, sizeof (Range));
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
      Range range;

      if (phdr->p_type != PT_LOAD || phdr->p_memsz == 0)
        continue;

      if (module->ranges->len == 0)
        {
          module->first_load_vaddr = phdr->p_vaddr;
          module->base = info->dlpi_addr + phdr->p_vaddr;
        }
      range.start = info->dlpi_addr + phdr->p_vaddr;
      range.end = range.start + phdr->p_memsz;
      g_array_append_val (module->ranges, range);
      module->size = MAX (module->size, range.end - module->base);
    }
  if (module->ranges->len == 0)
    module->base = info->dlpi_addr;

  module->build_id = read_build_id (info);
  if (module->build_id[0] != '\0')
    {
      raw_length = strlen (module->build_id) / 2;
      raw = g_malloc (raw_length);
      for (gsize i = 0; i < raw_length; i++)
        raw[i] = (guint8) (g_ascii_xdigit_value (module->build_id[2 * i]) << 4 |
                           g_ascii_xdigit_value (module->build_id[2 * i + 1]));
      module->breakpad_id = _perfmon_breakpad_id_from_build_id (raw, raw_length);
    }
  else
    module->breakpad_id = g_strdup ("");

  g_ptr_array_add (modules, module);

  return 0;
}

PerfmonModules *
_perfmon_modules_new (void)
{
  PerfmonModules *modules = g_new0 (PerfmonModules, 1);

  g_atomic_ref_count_init (&modules->ref_count);
  modules->modules = g_ptr_array_new_with_free_func (module_free);
  dl_iterate_phdr (add_module, modules->modules);

  return modules;
}

PerfmonModules *
_perfmon_modules_ref (PerfmonModules *modules)
{
  g_return_val_if_fail (modules != NULL, NULL);

  g_atomic_ref_count_inc (&modules->ref_count);
  return modules;
}

void
_perfmon_modules_unref (PerfmonModules *modules)
{
  g_return_if_fail (modules != NULL);

  if (g_atomic_ref_count_dec (&modules->ref_count))
    {
      g_ptr_array_unref (modules->modules);
      g_free (modules);
    }
}

guint
_perfmon_modules_get_n (PerfmonModules *modules)
{
  g_return_val_if_fail (modules != NULL, 0);

  return modules->modules->len;
}

static Module *
get_module (PerfmonModules *modules,
            guint           index)
{
  g_return_val_if_fail (modules != NULL, NULL);
  g_return_val_if_fail (index < modules->modules->len, NULL);

  return g_ptr_array_index (modules->modules, index);
}

const char *
_perfmon_modules_get_path (PerfmonModules *modules,
                           guint           index)
{
  Module *module = get_module (modules, index);

  return module != NULL ? module->path : NULL;
}

const char *
_perfmon_modules_get_debug_name (PerfmonModules *modules,
                                 guint           index)
{
  Module *module = get_module (modules, index);

  return module != NULL ? module->debug_name : NULL;
}

const char *
_perfmon_modules_get_build_id (PerfmonModules *modules,
                               guint           index)
{
  Module *module = get_module (modules, index);

  return module != NULL ? module->build_id : NULL;
}

const char *
_perfmon_modules_get_breakpad_id (PerfmonModules *modules,
                                  guint           index)
{
  Module *module = get_module (modules, index);

  return module != NULL ? module->breakpad_id : NULL;
}

guint64
_perfmon_modules_get_base (PerfmonModules *modules,
                           guint           index)
{
  Module *module = get_module (modules, index);

  return module != NULL ? module->base : 0;
}

guint64
_perfmon_modules_get_size (PerfmonModules *modules,
                           guint           index)
{
  Module *module = get_module (modules, index);

  return module != NULL ? module->size : 0;
}

gboolean
_perfmon_modules_lookup (PerfmonModules *modules,
                         guint64         pc,
                         guint          *index_out,
                         guint64        *offset_out)
{
  g_return_val_if_fail (modules != NULL, FALSE);

  for (guint i = 0; i < modules->modules->len; i++)
    {
      const Module *module = g_ptr_array_index (modules->modules, i);

      for (guint j = 0; j < module->ranges->len; j++)
        {
          const Range *range = &g_array_index (module->ranges, Range, j);

          if (pc >= range->start && pc < range->end)
            {
              if (index_out != NULL)
                *index_out = i;
              if (offset_out != NULL)
                *offset_out = pc - module->base;
              return TRUE;
            }
        }
    }

  return FALSE;
}

char *
_perfmon_symbolize (guint64  pc,
                    guint64 *offset_out)
{
  Dl_info info = { 0 };

  if (pc == 0 || pc > G_MAXSIZE)
    return NULL;

  if (dladdr ((const void *) (gsize) pc, &info) == 0 ||
      info.dli_sname == NULL || info.dli_sname[0] == '\0' ||
      info.dli_saddr == NULL || (gsize) info.dli_saddr > pc)
    return NULL;

  if (offset_out != NULL)
    *offset_out = pc - (gsize) info.dli_saddr;

  return g_strdup (info.dli_sname);
}

void
_perfmon_modules_describe_pc (PerfmonModules *modules,
                              guint64         pc,
                              gboolean        is_return_address,
                              gint64          deadline_us,
                              PerfmonPcInfo  *info)
{
  /* A return address points after its call instruction, which may be the
   * last of its function: the call itself, one byte before, names the
   * function that made it. */
  guint64 lookup_pc = is_return_address && pc > 0 ? pc - 1 : pc;
  guint index;
  guint64 offset;

  memset (info, 0, sizeof *info);
  info->pc = pc;
  info->module_index = -1;
  info->offset = pc;
  if (_perfmon_modules_lookup (modules, pc, &index, &offset))
    {
      const Module *module = g_ptr_array_index (modules->modules, index);
      PerfmonModuleRef ref = { module->path, module->build_id, NULL };

      info->module_index = (int) index;
      info->offset = offset;
      /* elfutils: .symtab of the object or of its debug file, .dynsym. */
      info->symbol = _perfmon_symbolizer_lookup_ref (_perfmon_symbolizer_get_default (), &ref,
                                                     offset, is_return_address, deadline_us,
                                                     &info->symbol_offset);
      if (info->symbol != NULL)
        return;
    }
  /* The vDSO, objects whose file is gone, modules past the deadline:
   * what the dynamic linker knows. */
  info->symbol = _perfmon_symbolize (lookup_pc, &info->symbol_offset);
  if (info->symbol != NULL && lookup_pc != pc)
    info->symbol_offset += pc - lookup_pc;
}

/* --- the modules that names refer to ------------------------------------ */

/* What _perfmon_modules_for_names() found: word → PerfmonRecordedModule,
 * or &no_module for a word that named no loaded object when last looked
 * up. Bounded: past MAX_NAMED_WORDS words, unknown ones are looked up
 * again rather than remembered. */
#define MAX_NAMED_WORDS 4096
static GMutex named_lock;
static GHashTable *named;
static const char no_module[] = "";

static gboolean
is_module_char (char c)
{
  return g_ascii_isalnum (c) || c == '_' || c == '-' || c == '.' || c == '+';
}

/* Calls @found for each "word+0xHEX" of @name. */
static void
for_each_module_word (const char *name,
                      void      (*found) (const char *word, gsize length, gpointer data),
                      gpointer    data)
{
  const char *p = name;
  const char *plus;

  while ((plus = strstr (p, "+0x")) != NULL)
    {
      const char *start = plus;

      while (start > p && is_module_char (start[-1]))
        start--;
      if (start < plus && g_ascii_isxdigit (plus[3]))
        found (start, plus - start, data);
      p = plus + 3;
    }
}

static void
add_word (const char *word,
          gsize       length,
          gpointer    data)
{
  GPtrArray *words = data;
  char *copy = g_strndup (word, length);

  for (guint i = 0; i < words->len; i++)
    if (g_str_equal (g_ptr_array_index (words, i), copy))
      {
        g_free (copy);
        return;
      }
  g_ptr_array_add (words, copy);
}

/* The module of @modules that @word names, as a record, or NULL. */
static PerfmonRecordedModule *
find_named (PerfmonModules *modules,
            const char     *word)
{
  for (guint i = 0; i < modules->modules->len; i++)
    {
      const Module *module = g_ptr_array_index (modules->modules, i);
      gboolean match = g_str_equal (module->debug_name, word);

      /* The main program: dladdr() names it after argv[0], and
       * describe_address() (core/perfmon-automatic.c) "program" when that
       * is empty. */
      if (!match && i == 0)
        {
          g_autofree char *invoked = program_invocation_name != NULL
                                       ? g_path_get_basename (program_invocation_name) : NULL;

          match = g_str_equal (word, "program") || g_strcmp0 (invoked, word) == 0;
        }
      if (match && _perfmon_recorded_module_check ("module", word, module->path, module->build_id, NULL))
        return _perfmon_recorded_module_new (word, module->path, module->base, module->build_id);
    }
  return NULL;
}

GPtrArray *
_perfmon_modules_for_names (const char * const *names,
                            gsize               n_names)
{
  g_autoptr(GPtrArray) words = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(PerfmonModules) loaded = NULL;
  gboolean unknown = FALSE;
  GPtrArray *found = NULL;

  for (gsize i = 0; i < n_names; i++)
    if (names[i] != NULL && strstr (names[i], "+0x") != NULL)
      for_each_module_word (names[i], add_word, words);
  if (words->len == 0)
    return NULL;

  g_mutex_lock (&named_lock);
  if (named == NULL)
    named = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < words->len && !unknown; i++)
    unknown = !g_hash_table_contains (named, g_ptr_array_index (words, i));
  g_mutex_unlock (&named_lock);
  /* A word not seen yet: the objects loaded now, once per call, outside
   * named_lock (dl_iterate_phdr() takes the dynamic linker's lock, which
   * a caller may hold: never the other way round). */
  if (unknown)
    loaded = _perfmon_modules_new ();

  g_mutex_lock (&named_lock);
  for (guint i = 0; i < words->len; i++)
    {
      const char *word = g_ptr_array_index (words, i);
      gpointer module = g_hash_table_lookup (named, word);

      if (module == NULL && loaded != NULL)
        {
          module = find_named (loaded, word);
          if (module == NULL)
            module = (gpointer) no_module;
          if (g_hash_table_size (named) < MAX_NAMED_WORDS)
            g_hash_table_insert (named, g_strdup (word), module);
          else if (module != no_module)
            {
              /* Not kept: this call's copy is the one handed out. */
              if (found == NULL)
                found = g_ptr_array_new_with_free_func (_perfmon_recorded_module_free);
              g_ptr_array_add (found, module);
              continue;
            }
        }
      if (module == NULL || module == no_module)
        continue;
      if (found == NULL)
        found = g_ptr_array_new_with_free_func (_perfmon_recorded_module_free);
      g_ptr_array_add (found, _perfmon_recorded_module_copy (module));
    }
  g_mutex_unlock (&named_lock);
  return found;
}

GPtrArray *
_perfmon_modules_for_snapshot (gpointer snapshot)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);
  g_autofree const char **names = g_new (const char *, groups->len + 1);

  for (guint i = 0; i < groups->len; i++)
    names[i] = perfmon_group_stats_get_name (g_ptr_array_index (groups, i));
  return _perfmon_modules_for_names (names, groups->len);
}
