/* perfmon-symbolizer.c: names for the native frames of stacks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "perfmon-error.h"
#include "perfmon-modules-private.h"
#include "perfmon-symbolizer-private.h"

/**
 * PerfmonSymbolizer:
 *
 * Names the native frames of stacks, with elfutils: a frame is a module
 * (its file name and its GNU build id or breakpad id) and an offset
 * counted, as Breakpad and Mozilla's symbol server count it, from the
 * module's first `PT_LOAD` segment.
 *
 * For each module the symbolizer finds the object itself (the file the
 * process loaded, or a file of the same name and build id in the usual
 * library directories), and its separate debug file: by build id under each
 * debug directory (`DIR/.build-id/xx/yyyy.debug`, `/usr/lib/debug` by
 * default), by the object's `.gnu_debuglink`, and from the debuginfod
 * servers of `DEBUGINFOD_URLS` when that is set. The function is then read
 * from the best symbol table there is: the debug file's `.symtab`, the
 * object's own `.symtab` if it is not stripped, its `.dynsym`. Static
 * functions are named wherever a `.symtab` is.
 *
 * Each module is loaded once and cached (at most 512 modules and 64 MiB of
 * functions and names; then the cache starts again). Looking up a frame never waits for more than the
 * time budget: a module that would be loaded after it stays unnamed.
 *
 * A symbolizer is thread-safe. Hang reports are symbolized by the watchdog
 * thread, never by the hung thread nor in a signal handler.
 *
 * The symbolizer knows modules and functions only. The owners of the
 * files perfmon writes name their frames with it: [method@Symbolizer.symbolize]
 * and [method@HangReport.symbolize] (hang reports, "bhr" pings and jank
 * stack trees, in `hang/`), `perfmon symbolize` (task logs).
 *
 * Since: 0.2
 */

/* Design.
 *
 * A module is loaded with a Dwfl of its own, reported with
 * dwfl_report_elf() at its own addresses (bias 0): a frame's address is
 * then the first PT_LOAD segment's vaddr plus its Breakpad offset. The
 * functions of its best symbol table are copied, sorted, and the Dwfl is
 * ended: the cache keeps no file open nor mapped (a monitored program's
 * descriptors are its own). libdwfl's find_debuginfo
 * callback is ours and only hands back the debug file found beforehand,
 * so that libdwfl itself never goes to the network (its standard callback
 * asks debuginfod with no deadline) and the budget holds: debuginfod is
 * asked through libdebuginfod (loaded with dlopen() when
 * DEBUGINFOD_URLS is set), whose progress callback cancels the
 * download once the deadline has passed.
 *
 * The cache is keyed by build id (or breakpad id, or path when there is
 * neither) and holds what failed too, so that a module without symbols
 * costs one search. */

/* libdebuginfod, opened only when DEBUGINFOD_URLS is set (as libdwfl
 * does): linked, it would bring libcurl and its initialisation into every
 * monitored program. */
static struct
{
  debuginfod_client *(*begin) (void);
  void               (*end) (debuginfod_client *);
  int                (*find_debuginfo) (debuginfod_client *, const unsigned char *, int, char **);
  int                (*find_executable) (debuginfod_client *, const unsigned char *, int, char **);
  void               (*set_progressfn) (debuginfod_client *, debuginfod_progressfn_t);
  void               (*set_user_data) (debuginfod_client *, void *);
  void              *(*get_user_data) (debuginfod_client *);
} debuginfod;

#define MAX_CACHED_MODULES 512
/* The most the cache keeps of sorted functions and names; past it, the
 * cache starts again. */
#define MAX_CACHED_BYTES (64 * 1024 * 1024)
#define DEFAULT_TIME_BUDGET_MS 10000

/* A function of a module's best symbol table. */
typedef struct
{
  guint64     address;
  const char *name;               /* in the entry's names */
  guint32     size;               /* 0 if the table does not say */
  guint32     rank;               /* of aliases, the lowest names the function */
} Symbol;



/* What the cache keeps of a module: its functions, sorted by address, and
 * their names; no file stays open or mapped. */
typedef struct
{
  guint64       first_load_vaddr;
  Symbol       *symbols;          /* NULL: nothing found */
  gsize         n_symbols;
  GStringChunk *names;
  gsize         bytes;            /* of symbols and names */
} Entry;

struct _PerfmonSymbolizer
{
  GObject parent_instance;

  GMutex      lock;
  char      **debug_dirs;
  guint       time_budget_ms;
  GHashTable *cache;              /* key → Entry */
  gsize       cached_bytes;       /* the sum of the entries' bytes */
  debuginfod_client *debuginfod;  /* NULL until needed */
  gboolean    debuginfod_tried;
  gint64      deadline_us;        /* of the lookup under way, under lock */
};

G_DEFINE_FINAL_TYPE (PerfmonSymbolizer, perfmon_symbolizer, G_TYPE_OBJECT)

enum
{
  PROP_0,
  PROP_DEBUG_DIRS,
  PROP_TIME_BUDGET,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
entry_free (gpointer data)
{
  Entry *entry = data;

  g_free (entry->symbols);
  if (entry->names != NULL)
    g_string_chunk_free (entry->names);
  g_free (entry);
}

static void
perfmon_symbolizer_finalize (GObject *object)
{
  PerfmonSymbolizer *self = PERFMON_SYMBOLIZER (object);

  g_hash_table_unref (self->cache);
  g_strfreev (self->debug_dirs);
  if (self->debuginfod != NULL)
    debuginfod.end (self->debuginfod);
  g_mutex_clear (&self->lock);

  G_OBJECT_CLASS (perfmon_symbolizer_parent_class)->finalize (object);
}

static void
perfmon_symbolizer_get_property (GObject    *object,
                                 guint       prop_id,
                                 GValue     *value,
                                 GParamSpec *pspec)
{
  PerfmonSymbolizer *self = PERFMON_SYMBOLIZER (object);

  switch (prop_id)
    {
    case PROP_DEBUG_DIRS:
      g_mutex_lock (&self->lock);
      g_value_set_boxed (value, self->debug_dirs);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_TIME_BUDGET:
      g_value_set_uint (value, perfmon_symbolizer_get_time_budget (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_symbolizer_set_property (GObject      *object,
                                 guint         prop_id,
                                 const GValue *value,
                                 GParamSpec   *pspec)
{
  PerfmonSymbolizer *self = PERFMON_SYMBOLIZER (object);

  switch (prop_id)
    {
    case PROP_DEBUG_DIRS:
      perfmon_symbolizer_set_debug_dirs (self, g_value_get_boxed (value));
      break;
    case PROP_TIME_BUDGET:
      perfmon_symbolizer_set_time_budget (self, g_value_get_uint (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_symbolizer_class_init (PerfmonSymbolizerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  elf_version (EV_CURRENT);

  object_class->finalize = perfmon_symbolizer_finalize;
  object_class->get_property = perfmon_symbolizer_get_property;
  object_class->set_property = perfmon_symbolizer_set_property;

  /**
   * PerfmonSymbolizer:debug-dirs:
   *
   * The directories under which separate debug files are looked for, by
   * build id (`DIR/.build-id/xx/yyyy.debug`) and by `.gnu_debuglink`
   * (`DIR/<directory of the object>/<link>`). By default the directories
   * of `$PERFMON_DEBUG_DIRS` (separated by colons) or `/usr/lib/debug`.
   *
   * Since: 0.2
   */
  properties[PROP_DEBUG_DIRS] =
    g_param_spec_boxed ("debug-dirs", NULL, NULL, G_TYPE_STRV,
                        G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonSymbolizer:time-budget:
   *
   * The longest, in milliseconds, that one call spends loading modules
   * (reading symbol tables, asking debuginfod): frames of modules that
   * would be loaded later are left unnamed. 1 to 600000; 10000 by default.
   *
   * Since: 0.2
   */
  properties[PROP_TIME_BUDGET] =
    g_param_spec_uint ("time-budget", NULL, NULL, 1, 600000, DEFAULT_TIME_BUDGET_MS,
                       G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static char **
default_debug_dirs (void)
{
  const char *env = g_getenv ("PERFMON_DEBUG_DIRS");

  if (env != NULL && env[0] != '\0')
    {
      g_auto(GStrv) split = g_strsplit (env, ":", -1);
      g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();

      for (guint i = 0; split[i] != NULL; i++)
        if (split[i][0] != '\0')
          g_strv_builder_add (builder, split[i]);
      return g_strv_builder_end (builder);
    }
  return g_strsplit ("/usr/lib/debug", ":", -1);
}

static void
perfmon_symbolizer_init (PerfmonSymbolizer *self)
{
  g_mutex_init (&self->lock);
  self->debug_dirs = default_debug_dirs ();
  self->time_budget_ms = DEFAULT_TIME_BUDGET_MS;
  self->cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, entry_free);
}

/**
 * perfmon_symbolizer_new:
 *
 * Creates a symbolizer.
 *
 * Returns: (transfer full): a new symbolizer with an empty cache
 *
 * Since: 0.2
 */
PerfmonSymbolizer *
perfmon_symbolizer_new (void)
{
  return g_object_new (PERFMON_TYPE_SYMBOLIZER, NULL);
}

static PerfmonSymbolizer *default_symbolizer;

PerfmonSymbolizer *
_perfmon_symbolizer_get_default (void)
{
  if (g_once_init_enter (&default_symbolizer))
    g_once_init_leave (&default_symbolizer, perfmon_symbolizer_new ());
  return default_symbolizer;
}

/**
 * perfmon_symbolizer_set_debug_dirs:
 * @self: a #PerfmonSymbolizer
 * @debug_dirs: (array zero-terminated=1) (nullable): the directories, or
 *   %NULL for the default ones
 *
 * Sets [property@Symbolizer:debug-dirs] and empties the cache.
 *
 * Since: 0.2
 */
void
perfmon_symbolizer_set_debug_dirs (PerfmonSymbolizer  *self,
                                   const char * const *debug_dirs)
{
  g_return_if_fail (PERFMON_IS_SYMBOLIZER (self));

  g_mutex_lock (&self->lock);
  g_strfreev (self->debug_dirs);
  self->debug_dirs = debug_dirs != NULL ? g_strdupv ((char **) debug_dirs) : default_debug_dirs ();
  g_hash_table_remove_all (self->cache);
  self->cached_bytes = 0;
  g_mutex_unlock (&self->lock);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_DEBUG_DIRS]);
}

/**
 * perfmon_symbolizer_get_debug_dirs:
 * @self: a #PerfmonSymbolizer
 *
 * Gets the directories searched for separate debug files.
 *
 * Returns: (transfer none) (array zero-terminated=1): the debug
 *   directories; valid until they are set again
 *
 * Since: 0.2
 */
const char * const *
perfmon_symbolizer_get_debug_dirs (PerfmonSymbolizer *self)
{
  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (self), NULL);

  return (const char * const *) self->debug_dirs;
}

/**
 * perfmon_symbolizer_set_time_budget:
 * @self: a #PerfmonSymbolizer
 * @milliseconds: 1 to 600000
 *
 * Sets [property@Symbolizer:time-budget].
 *
 * Since: 0.2
 */
void
perfmon_symbolizer_set_time_budget (PerfmonSymbolizer *self,
                                    guint              milliseconds)
{
  g_return_if_fail (PERFMON_IS_SYMBOLIZER (self));
  g_return_if_fail (milliseconds >= 1 && milliseconds <= 600000);

  g_atomic_int_set (&self->time_budget_ms, milliseconds);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TIME_BUDGET]);
}

/**
 * perfmon_symbolizer_get_time_budget:
 * @self: a #PerfmonSymbolizer
 *
 * Gets the time one call may spend loading symbols.
 *
 * Returns: [property@Symbolizer:time-budget]
 *
 * Since: 0.2
 */
guint
perfmon_symbolizer_get_time_budget (PerfmonSymbolizer *self)
{
  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (self), 0);

  return (guint) g_atomic_int_get (&self->time_budget_ms);
}

/**
 * perfmon_symbolizer_get_n_cached_modules:
 * @self: a #PerfmonSymbolizer
 *
 * Counts the modules in the symbolizer's cache.
 *
 * Returns: how many modules the cache holds, with or without symbols
 *
 * Since: 0.2
 */
guint
perfmon_symbolizer_get_n_cached_modules (PerfmonSymbolizer *self)
{
  guint n;

  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (self), 0);

  g_mutex_lock (&self->lock);
  n = g_hash_table_size (self->cache);
  g_mutex_unlock (&self->lock);
  return n;
}

void
_perfmon_symbolizer_clear_cache (PerfmonSymbolizer *self)
{
  g_mutex_lock (&self->lock);
  g_hash_table_remove_all (self->cache);
  self->cached_bytes = 0;
  g_mutex_unlock (&self->lock);
}

/* --- finding the files ------------------------------------------------- */

/* The GNU build id of the ELF file open on @fd, as lowercase hex, or NULL. */
static char *
file_build_id (int fd)
{
  Elf *elf = elf_begin (fd, ELF_C_READ_MMAP, NULL);
  const void *bits = NULL;
  ssize_t length;
  char *hex = NULL;

  if (elf == NULL)
    return NULL;
  length = dwelf_elf_gnu_build_id (elf, &bits);
  if (length > 0)
    {
      const guint8 *bytes = bits;
      GString *out = g_string_sized_new (length * 2);

      for (ssize_t i = 0; i < length; i++)
        g_string_append_printf (out, "%02x", bytes[i]);
      hex = g_string_free (out, FALSE);
    }
  elf_end (elf);
  return hex;
}

/* The first 32 hex digits of a breakpad id turned back into the first 16
 * bytes of the build id (lowercase hex), or NULL if @breakpad_id is not
 * one. */
static char *
build_id_prefix_from_breakpad (const char *breakpad_id)
{
  static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15 };
  char *prefix;

  if (breakpad_id == NULL || strlen (breakpad_id) < 32)
    return NULL;
  for (guint i = 0; i < 32; i++)
    if (!g_ascii_isxdigit (breakpad_id[i]))
      return NULL;

  prefix = g_malloc (33);
  for (guint i = 0; i < 16; i++)
    {
      prefix[2 * i] = g_ascii_tolower (breakpad_id[2 * order[i]]);
      prefix[2 * i + 1] = g_ascii_tolower (breakpad_id[2 * order[i] + 1]);
    }
  prefix[32] = '\0';
  return prefix;
}

static gboolean
is_hex (const char *text)
{
  if (text == NULL || text[0] == '\0')
    return FALSE;
  for (const char *p = text; *p != '\0'; p++)
    if (!g_ascii_isxdigit (*p))
      return FALSE;
  return TRUE;
}

/* What we know of the module's identity: a full build id, or the build
 * id's first bytes (from a breakpad id), or nothing. */
typedef struct
{
  char *build_id;   /* full, lowercase; NULL if unknown */
  char *prefix;     /* build id or its known prefix, lowercase; NULL */
} Identity;

static void
identity_clear (Identity *identity)
{
  g_free (identity->build_id);
  g_free (identity->prefix);
}

static gboolean
identity_matches (const Identity *identity,
                  const char     *build_id)
{
  if (identity->prefix == NULL)
    return TRUE;
  return build_id != NULL && g_str_has_prefix (build_id, identity->prefix) &&
         (identity->build_id == NULL || g_str_equal (build_id, identity->build_id));
}

/* Opens @path if it is an ELF file of the module's identity. */
static int
open_matching (const char     *path,
               const Identity *identity)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  g_autofree char *build_id = NULL;

  if (fd < 0)
    return -1;
  build_id = file_build_id (fd);
  if (!identity_matches (identity, build_id))
    {
      close (fd);
      return -1;
    }
  return fd;
}

/* DIR/.build-id/xx/yyyy@suffix for the module's build id, or, knowing only
 * its first 16 bytes, the one file there whose name starts with them. */
static char *
find_by_build_id (const char     *dir,
                  const Identity *identity,
                  const char     *suffix)
{
  g_autofree char *subdir = NULL;
  g_autoptr(GDir) listing = NULL;
  const char *name;

  if (identity->prefix == NULL || strlen (identity->prefix) < 4)
    return NULL;

  subdir = g_strdup_printf ("%s/.build-id/%.2s", dir, identity->prefix);
  if (identity->build_id != NULL)
    {
      char *path = g_strdup_printf ("%s/%s%s", subdir, identity->build_id + 2, suffix);

      if (g_file_test (path, G_FILE_TEST_EXISTS))
        return path;
      g_free (path);
      return NULL;
    }

  listing = g_dir_open (subdir, 0, NULL);
  while (listing != NULL && (name = g_dir_read_name (listing)) != NULL)
    if (g_str_has_prefix (name, identity->prefix + 2) && g_str_has_suffix (name, suffix) &&
        strlen (name) - strlen (suffix) >= strlen (identity->prefix) - 2 &&
        (suffix[0] != '\0' || strchr (name, '.') == NULL))
      return g_build_filename (subdir, name, NULL);
  return NULL;
}

/* Directories where an object named only by its file name may be. */
static const char * const *
library_dirs (void)
{
  static const char * const *dirs;

  if (g_once_init_enter (&dirs))
    {
      GPtrArray *list = g_ptr_array_new ();
      Dl_info info;

      /* The multiarch directory of this system, from GLib's own path. */
      if (dladdr ((const void *) g_free, &info) != 0 && info.dli_fname != NULL &&
          g_path_is_absolute (info.dli_fname))
        g_ptr_array_add (list, g_path_get_dirname (info.dli_fname));
      for (const char *const *p = (const char * const[]) { "/usr/lib", "/lib", "/usr/local/lib",
                                                           "/usr/bin", "/bin", "/usr/libexec",
                                                           "/usr/local/bin", "/usr/sbin", NULL };
           *p != NULL; p++)
        g_ptr_array_add (list, g_strdup (*p));
      g_ptr_array_add (list, NULL);
      g_once_init_leave (&dirs, (const char * const *) g_ptr_array_free (list, FALSE));
    }
  return dirs;
}

static gboolean
load_debuginfod (void)
{
  static gsize loaded;
  static gboolean have;

  if (g_once_init_enter (&loaded))
    {
      void *library = dlopen (DEBUGINFOD_SONAME, RTLD_LAZY | RTLD_LOCAL);

#define LOAD(field, name) ((*(void **) &debuginfod.field = dlsym (library, name)) != NULL)
      have = library != NULL &&
             LOAD (begin, "debuginfod_begin") && LOAD (end, "debuginfod_end") &&
             LOAD (find_debuginfo, "debuginfod_find_debuginfo") &&
             LOAD (find_executable, "debuginfod_find_executable") &&
             LOAD (set_progressfn, "debuginfod_set_progressfn") &&
             LOAD (set_user_data, "debuginfod_set_user_data") &&
             LOAD (get_user_data, "debuginfod_get_user_data");
#undef LOAD
      g_once_init_leave (&loaded, 1);
    }
  return have;
}

static int
progress_cancel_after_deadline (debuginfod_client *client,
                                long               a,
                                long               b)
{
  PerfmonSymbolizer *self = debuginfod.get_user_data (client);

  return self->deadline_us != 0 && g_get_monotonic_time () > self->deadline_us;
}

/* Under lock: the debuginfod client, if DEBUGINFOD_URLS names servers. */
static debuginfod_client *
get_debuginfod (PerfmonSymbolizer *self)
{
  const char *urls = g_getenv ("DEBUGINFOD_URLS");

  if (self->debuginfod_tried)
    return self->debuginfod;
  self->debuginfod_tried = TRUE;
  if (urls == NULL || urls[0] == '\0' || !load_debuginfod ())
    return NULL;
  self->debuginfod = debuginfod.begin ();
  if (self->debuginfod != NULL)
    {
      debuginfod.set_user_data (self->debuginfod, self);
      debuginfod.set_progressfn (self->debuginfod, progress_cancel_after_deadline);
    }
  return self->debuginfod;
}

static gboolean
past (gint64 deadline_us)
{
  return deadline_us != 0 && g_get_monotonic_time () > deadline_us;
}

/* The object itself: @path if it is the module's, else a file of the same
 * name in the library directories, else debuginfod's copy. */
static char *
find_object (PerfmonSymbolizer *self,
             const char        *path,
             const Identity    *identity)
{
  g_autofree char *name = NULL;
  int fd;

  if (path == NULL || path[0] == '\0')
    return NULL;

  if (g_path_is_absolute (path) && (fd = open_matching (path, identity)) >= 0)
    {
      close (fd);
      return g_strdup (path);
    }

  /* Without an identity, a file of the same name elsewhere may be
   * another build: only the path itself is trusted. */
  if (identity->prefix == NULL)
    return NULL;

  name = g_path_get_basename (path);
  for (const char * const *dir = library_dirs (); *dir != NULL; dir++)
    {
      g_autofree char *candidate = g_build_filename (*dir, name, NULL);

      if ((fd = open_matching (candidate, identity)) >= 0)
        {
          close (fd);
          return g_steal_pointer (&candidate);
        }
    }

  for (guint i = 0; self->debug_dirs[i] != NULL; i++)
    {
      char *candidate = find_by_build_id (self->debug_dirs[i], identity, "");

      if (candidate != NULL)
        return candidate;
    }

  if (identity->build_id != NULL && get_debuginfod (self) != NULL && !past (self->deadline_us))
    {
      char *found = NULL;

      fd = debuginfod.find_executable (self->debuginfod, (const unsigned char *) identity->build_id, 0, &found);
      if (fd >= 0)
        {
          char *copy = g_strdup (found);

          close (fd);
          free (found);
          return copy;
        }
    }
  return NULL;
}

/* The separate debug file of the module whose object (may be NULL) is
 * @object. */
static char *
find_debug_file (PerfmonSymbolizer *self,
                 const char        *object,
                 const Identity    *identity)
{
  for (guint i = 0; self->debug_dirs[i] != NULL; i++)
    {
      char *candidate = find_by_build_id (self->debug_dirs[i], identity, ".debug");
      int fd;

      if (candidate != NULL && (fd = open_matching (candidate, identity)) >= 0)
        {
          close (fd);
          return candidate;
        }
      g_free (candidate);
    }

  if (object != NULL)
    {
      int fd = open (object, O_RDONLY | O_CLOEXEC);
      Elf *elf = fd >= 0 ? elf_begin (fd, ELF_C_READ_MMAP, NULL) : NULL;
      GElf_Word crc;
      const char *link = elf != NULL ? dwelf_elf_gnu_debuglink (elf, &crc) : NULL;
      char *found = NULL;

      if (link != NULL && strchr (link, '/') == NULL)
        {
          g_autofree char *dir = g_path_get_dirname (object);
          g_autoptr(GPtrArray) candidates = g_ptr_array_new_with_free_func (g_free);

          g_ptr_array_add (candidates, g_build_filename (dir, link, NULL));
          g_ptr_array_add (candidates, g_build_filename (dir, ".debug", link, NULL));
          for (guint i = 0; self->debug_dirs[i] != NULL; i++)
            g_ptr_array_add (candidates, g_build_filename (self->debug_dirs[i], dir, link, NULL));
          for (guint i = 0; found == NULL && i < candidates->len; i++)
            {
              const char *candidate = g_ptr_array_index (candidates, i);
              int debug_fd;

              if (g_str_equal (candidate, object))
                continue;
              if ((debug_fd = open_matching (candidate, identity)) >= 0)
                {
                  close (debug_fd);
                  found = g_strdup (candidate);
                }
            }
        }
      if (elf != NULL)
        elf_end (elf);
      if (fd >= 0)
        close (fd);
      if (found != NULL)
        return found;
    }

  if (identity->build_id != NULL && get_debuginfod (self) != NULL && !past (self->deadline_us))
    {
      char *found = NULL;
      int fd = debuginfod.find_debuginfo (self->debuginfod, (const unsigned char *) identity->build_id, 0, &found);

      if (fd >= 0)
        {
          char *copy = g_strdup (found);

          close (fd);
          free (found);
          return copy;
        }
    }
  return NULL;
}

/* libdwfl's find_debuginfo: the debug file found beforehand, if any. */
static int
hand_over_debuginfo (Dwfl_Module *module,
                     void       **userdata,
                     const char  *modname,
                     Dwarf_Addr   base,
                     const char  *file_name,
                     const char  *debuglink_file,
                     GElf_Word    debuglink_crc,
                     char       **debuginfo_file_name)
{
  const char *debug_path = *userdata;
  int fd;

  if (debug_path == NULL || (file_name != NULL && g_str_equal (file_name, debug_path)))
    return -1;
  fd = open (debug_path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    *debuginfo_file_name = strdup (debug_path);
  return fd;
}

static const Dwfl_Callbacks callbacks = {
  .find_elf = NULL,
  .find_debuginfo = hand_over_debuginfo,
  .section_address = dwfl_offline_section_address,
};

static guint64
first_load_vaddr (Elf *elf)
{
  size_t n = 0;

  if (elf_getphdrnum (elf, &n) != 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    {
      GElf_Phdr phdr;

      if (gelf_getphdr (elf, (int) i, &phdr) != NULL && phdr.p_type == PT_LOAD)
        return phdr.p_vaddr;
    }
  return 0;
}

static int
compare_symbols (gconstpointer a,
                 gconstpointer b)
{
  const Symbol *x = a, *y = b;

  if (x->address != y->address)
    return x->address < y->address ? -1 : 1;
  /* Of aliases, the one that names the function first. */
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The functions of the module's best symbol table (libdwfl picks the
 * debug file's .symtab, the object's own .symtab, or .dynsym), sorted by
 * address: libdwfl looks an address up by a scan of the whole table, this
 * by a binary search. The names are copied: the files are closed after. */
static void
read_symbols (Entry       *entry,
              Dwfl_Module *module)
{
  int n = dwfl_module_getsymtab (module);
  GArray *symbols;

  if (n <= 0)
    return;
  entry->names = g_string_chunk_new (4096);
  symbols = g_array_sized_new (FALSE, FALSE, sizeof (Symbol), n);
  for (int i = 1; i < n; i++)
    {
      GElf_Sym sym;
      GElf_Addr address = 0;
      GElf_Word shndx = 0;
      const char *name = dwfl_module_getsym_info (module, i, &sym, &address, &shndx, NULL, NULL);
      Symbol symbol;

      if (name == NULL || name[0] == '\0' || shndx == SHN_UNDEF ||
          (GELF_ST_TYPE (sym.st_info) != STT_FUNC && GELF_ST_TYPE (sym.st_info) != STT_GNU_IFUNC))
        continue;
      symbol.address = address;
      /* No function is 4 GiB long. */
      symbol.size = (guint32) MIN (sym.st_size, G_MAXUINT32);
      /* Of aliases: one with a size, then global, weak, local ones
       * ("__clock_gettime" before the local "__clock_gettime_2"). */
      symbol.rank = (sym.st_size == 0) << 2 |
                    (GELF_ST_BIND (sym.st_info) == STB_GLOBAL ? 0 :
                     GELF_ST_BIND (sym.st_info) == STB_WEAK ? 1 : 2);
      /* .dynsym names carry their version: "memcpy@@GLIBC_2.14". */
      symbol.name = g_string_chunk_insert_len (entry->names, name, strcspn (name, "@"));
      entry->bytes += strcspn (name, "@") + 1;
      g_array_append_val (symbols, symbol);
    }
  g_array_sort (symbols, compare_symbols);
  entry->n_symbols = symbols->len;
  entry->bytes += symbols->len * sizeof (Symbol);
  entry->symbols = (Symbol *) g_array_free (symbols, FALSE);
}

/* The function that holds @address, or NULL. */
static const Symbol *
find_symbol (const Entry *entry,
             guint64      address)
{
  gsize low = 0, high = entry->n_symbols;
  const Symbol *found;

  /* The last symbol at or below @address. */
  while (low < high)
    {
      gsize middle = low + (high - low) / 2;

      if (entry->symbols[middle].address <= address)
        low = middle + 1;
      else
        high = middle;
    }
  if (low == 0)
    return NULL;
  found = &entry->symbols[low - 1];
  /* Back to the first alias at that address (the one that names it). */
  while (found > entry->symbols && found[-1].address == found->address)
    found--;
  if (found->size != 0 && address >= found->address + found->size)
    return NULL;
  return found;
}

/* Under lock: the entry of @ref, loaded if need be; NULL if it is not in
 * the cache and the deadline has passed. */
static Entry *
get_entry (PerfmonSymbolizer      *self,
           const PerfmonModuleRef *ref)
{
  Identity identity = { NULL, NULL };
  g_autofree char *key = NULL;
  g_autofree char *object = NULL;
  g_autofree char *debug_path = NULL;
  const char *elf_path;
  Entry *entry;
  Dwfl *dwfl;
  Dwfl_Module *module;
  void **userdata = NULL;
  int fd;

  if (ref->build_id != NULL && is_hex (ref->build_id))
    {
      identity.build_id = g_ascii_strdown (ref->build_id, -1);
      identity.prefix = g_strdup (identity.build_id);
    }
  else if (ref->breakpad_id != NULL && is_hex (ref->breakpad_id) &&
           strspn (ref->breakpad_id, "0") < strlen (ref->breakpad_id))
    identity.prefix = build_id_prefix_from_breakpad (ref->breakpad_id);

  key = g_strdup_printf ("%s\n%s", identity.prefix != NULL ? identity.prefix : "",
                         ref->path != NULL ? ref->path : "");
  if (identity.prefix != NULL)
    {
      /* The same object under another path is the same module. */
      g_free (key);
      key = g_strdup (identity.prefix);
    }

  entry = g_hash_table_lookup (self->cache, key);
  if (entry != NULL || past (self->deadline_us))
    {
      identity_clear (&identity);
      return entry;
    }

  if (g_hash_table_size (self->cache) >= MAX_CACHED_MODULES || self->cached_bytes >= MAX_CACHED_BYTES)
    {
      g_hash_table_remove_all (self->cache);
      self->cached_bytes = 0;
    }

  entry = g_new0 (Entry, 1);
  g_hash_table_insert (self->cache, g_strdup (key), entry);

  object = find_object (self, ref->path, &identity);
  /* A module known by its path only: its debug file by the object's own
   * build id. */
  if (object != NULL && identity.prefix == NULL)
    {
      int object_fd = open (object, O_RDONLY | O_CLOEXEC);

      if (object_fd >= 0)
        {
          identity.build_id = file_build_id (object_fd);
          identity.prefix = g_strdup (identity.build_id);
          close (object_fd);
        }
    }
  debug_path = find_debug_file (self, object, &identity);
  identity_clear (&identity);
  elf_path = object != NULL ? object : debug_path;
  if (elf_path == NULL || (fd = open (elf_path, O_RDONLY | O_CLOEXEC)) < 0)
    return entry;

  /* libdwfl reads the tables; nothing of it is kept. */
  dwfl = dwfl_begin (&callbacks);
  dwfl_report_begin (dwfl);
  module = dwfl_report_elf (dwfl, ref->path != NULL ? ref->path : elf_path, elf_path, fd, 0, false);
  dwfl_report_end (dwfl, NULL, NULL);
  if (module == NULL)
    close (fd);
  else
    {
      GElf_Addr bias = 0;
      Elf *elf;

      dwfl_module_info (module, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
      *userdata = debug_path;
      elf = dwfl_module_getelf (module, &bias);
      entry->first_load_vaddr = elf != NULL ? first_load_vaddr (elf) + bias : 0;
      read_symbols (entry, module);
      self->cached_bytes += entry->bytes;
    }
  dwfl_end (dwfl);
  return entry;
}

static __thread guint thread_lookups;

guint
_perfmon_symbolizer_get_thread_lookups (void)
{
  return thread_lookups;
}

char *
_perfmon_symbolizer_lookup_ref (PerfmonSymbolizer      *self,
                                const PerfmonModuleRef *module,
                                guint64                 offset,
                                gboolean                is_return_address,
                                gint64                  deadline_us,
                                guint64                *function_offset)
{
  Entry *entry;
  char *name = NULL;

  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (self), NULL);
  g_return_val_if_fail (module != NULL, NULL);

  thread_lookups++;
  g_mutex_lock (&self->lock);
  self->deadline_us = deadline_us;
  entry = get_entry (self, module);
  if (entry != NULL && entry->symbols != NULL)
    {
      guint64 address = entry->first_load_vaddr + offset - (is_return_address && offset > 0 ? 1 : 0);
      const Symbol *symbol = find_symbol (entry, address);

      if (symbol != NULL)
        {
          name = g_strdup (symbol->name);
          if (function_offset != NULL)
            *function_offset = address - symbol->address + (is_return_address && offset > 0 ? 1 : 0);
        }
    }
  self->deadline_us = 0;
  g_mutex_unlock (&self->lock);
  return name;
}

char *
_perfmon_symbolizer_lookup_until (PerfmonSymbolizer *self,
                                 const char        *module,
                                 const char        *id,
                                 guint64            offset,
                                 gboolean           is_return_address,
                                 gint64             deadline_us,
                                 guint64           *function_offset)
{
  PerfmonModuleRef ref = { module, NULL, NULL };

  if (id != NULL && strlen (id) == PERFMON_BREAKPAD_ID_LENGTH && id[32] == '0' && is_hex (id))
    ref.breakpad_id = id;
  else
    ref.build_id = id;
  return _perfmon_symbolizer_lookup_ref (self, &ref, offset, is_return_address, deadline_us,
                                         function_offset);
}

/**
 * perfmon_symbolizer_lookup:
 * @self: a #PerfmonSymbolizer
 * @module: the module's file: a path, or only its file name (the debug
 *   name of a ping), then looked for in the library directories
 * @id: (nullable): the module's GNU build id (hex) or breakpad id (33 hex
 *   digits); %NULL or "" if unknown (then only @module's own file is used)
 * @offset: the frame's offset in the module, counted from its first
 *   `PT_LOAD` segment (Breakpad's convention, the offsets perfmon writes)
 * @is_return_address: %TRUE for every frame of a stack but the innermost:
 *   the function is looked up at the call instruction before @offset
 * @function_offset: (out) (optional): where to store @offset's distance
 *   from the start of the function
 *
 * Names the function at @offset in @module. Loads the module on first use
 * (within the time budget), then answers from the cache.
 *
 * Returns: (transfer full) (nullable): the function's name, or %NULL if no
 *   symbol table covers @offset
 *
 * Since: 0.2
 */
char *
perfmon_symbolizer_lookup (PerfmonSymbolizer *self,
                           const char        *module,
                           const char        *id,
                           guint64            offset,
                           gboolean           is_return_address,
                           guint64           *function_offset)
{
  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (self), NULL);
  g_return_val_if_fail (module != NULL, NULL);

  return _perfmon_symbolizer_lookup_until (self, module, id, offset, is_return_address,
                                          g_get_monotonic_time () +
                                            (gint64) perfmon_symbolizer_get_time_budget (self) * 1000,
                                          function_offset);
}

/* --- the one frame format ---------------------------------------------- */

/**
 * perfmon_format_native_frame:
 * @module: (nullable): the module's file name, %NULL for a frame outside
 *   every module
 * @offset: the frame's offset in @module, or its address outside every
 *   module
 * @function: (nullable): the function, if known
 * @function_offset: the frame's distance from @function's start
 *
 * The one text form of a native frame in everything perfmon prints:
 * `module+0xoffset (function+0xdistance)`, `module+0xoffset` when the
 * function is unknown, `0xaddress` outside every module.
 *
 * Returns: (transfer full): the frame as text
 *
 * Since: 0.2
 */
char *
perfmon_format_native_frame (const char *module,
                             guint64     offset,
                             const char *function,
                             guint64     function_offset)
{
  GString *out = g_string_new (NULL);

  if (module != NULL)
    g_string_append_printf (out, "%s+0x%" G_GINT64_MODIFIER "x", module, offset);
  else
    g_string_append_printf (out, "0x%" G_GINT64_MODIFIER "x", offset);
  if (function != NULL)
    g_string_append_printf (out, " (%s+0x%" G_GINT64_MODIFIER "x)", function, function_offset);
  return g_string_free (out, FALSE);
}

/**
 * perfmon_format_script_frame:
 * @function: the function's name
 * @file: (nullable): its source file
 * @line: the line being run, 0 if unknown
 *
 * The one text form of a Python or JavaScript frame, as it appears in the
 * stacks and pseudo-stacks of hang reports: `function (file:line)`.
 *
 * Returns: (transfer full): the frame as text
 *
 * Since: 0.2
 */
char *
perfmon_format_script_frame (const char *function,
                             const char *file,
                             guint       line)
{
  g_return_val_if_fail (function != NULL, NULL);

  if (file == NULL)
    return g_strdup (function);
  if (line == 0)
    return g_strdup_printf ("%s (%s)", function, file);
  return g_strdup_printf ("%s (%s:%u)", function, file, line);
}
