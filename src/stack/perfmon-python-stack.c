/* perfmon-python-stack.c: the Python frames of a hung thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <dlfcn.h>
#include <string.h>

#include "perfmon-python-stack-private.h"
#include "perfmon-symbolizer.h"

/* Design.
 *
 * libperfmon does not link with libpython: a program that runs Python has
 * the C API in its global symbol scope (Debian's python3 exports it, and
 * an embedding program links libpython), so the functions are looked up
 * with dlsym() when a hang needs them. Only functions of the stable C API
 * are used, and no structure of the interpreter is read: the frames come
 * from sys._current_frames(), under the GIL, as a debugger would read
 * them.
 *
 * The GIL. The hung thread holds it while it runs Python code and lets it
 * go every switch interval when another thread asks; it may also hold it
 * for good (a C extension stuck without releasing it). So the watchdog
 * does not take it: a helper thread does, with PyGILState_Ensure(), and
 * the watchdog waits for the helper's answer with a timeout. On a timeout
 * the report says so and keeps its native stack; the helper goes on
 * waiting, reads the frames when the GIL comes (by then stale: they are
 * dropped) and is ready again. While it waits, further captures fail at
 * once: there is never more than one thread of ours queued on the GIL, and
 * it holds no lock of ours while it waits or runs Python code.
 *
 * While the interpreter finishes (Py_FinalizeEx), a thread that asks for
 * the GIL is made to exit: captures are refused once _Py_IsFinalizing() or
 * !Py_IsInitialized(), and a helper that vanished anyway only leaves
 * "busy" set, which makes later captures fail with a reason. */

/* Py_file_input, from Python.h. */
#define PY_FILE_INPUT 257

typedef struct _object PyObject;

typedef struct
{
  int        (*is_initialized) (void);
  int        (*is_finalizing) (void);         /* may be NULL */
  int        (*gil_ensure) (void);
  void       (*gil_release) (int);
  PyObject  *(*dict_new) (void);
  int        (*dict_set_item_string) (PyObject *, const char *, PyObject *);
  PyObject  *(*dict_get_item_string) (PyObject *, const char *);
  PyObject  *(*long_from_unsigned_long) (unsigned long);
  PyObject  *(*run_string) (const char *, int, PyObject *, PyObject *);
  const char *(*unicode_as_utf8_and_size) (PyObject *, gssize *);
  void       (*dec_ref) (PyObject *);
  void       (*err_clear) (void);
} PythonApi;

static PythonApi api;

/* Reads the frames of thread `ident`, innermost last, as lines of
 * "file\tline\tfunction". f_lineno may be None in a frame being set up. */
static const char read_frames_code[] =
  "import sys\n"
  "_f = sys._current_frames().get(ident)\n"
  "_out = []\n"
  "while _f is not None and len(_out) < limit:\n"
  "    _c = _f.f_code\n"
  "    _out.append('%s\\t%d\\t%s' % (_c.co_filename, _f.f_lineno or 0,\n"
  "                                 getattr(_c, 'co_qualname', _c.co_name)))\n"
  "    _f = _f.f_back\n"
  "result = '\\n'.join(reversed(_out)) if _out else None\n";

static gboolean
resolve_api (void)
{
  static gsize resolved;
  static gboolean have_api;

  if (g_once_init_enter (&resolved))
    {
#define RESOLVE(field, name) (*(void **) &api.field = dlsym (RTLD_DEFAULT, name)) != NULL
      have_api = RESOLVE (is_initialized, "Py_IsInitialized") &&
                 RESOLVE (gil_ensure, "PyGILState_Ensure") &&
                 RESOLVE (gil_release, "PyGILState_Release") &&
                 RESOLVE (dict_new, "PyDict_New") &&
                 RESOLVE (dict_set_item_string, "PyDict_SetItemString") &&
                 RESOLVE (dict_get_item_string, "PyDict_GetItemString") &&
                 RESOLVE (long_from_unsigned_long, "PyLong_FromUnsignedLong") &&
                 RESOLVE (run_string, "PyRun_String") &&
                 RESOLVE (unicode_as_utf8_and_size, "PyUnicode_AsUTF8AndSize") &&
                 RESOLVE (dec_ref, "Py_DecRef") &&
                 RESOLVE (err_clear, "PyErr_Clear");
      *(void **) &api.is_finalizing = dlsym (RTLD_DEFAULT, "_Py_IsFinalizing");
#undef RESOLVE
      g_once_init_leave (&resolved, 1);
    }
  return have_api;
}

static gboolean
interpreter_running (void)
{
  return api.is_initialized () && (api.is_finalizing == NULL || !api.is_finalizing ());
}

/* The helper thread and its one request. */
static GMutex lock;
static GCond cond;
static GThread *helper;
static gboolean busy;            /* a request is being served */
static gboolean requested;
static guint64 request_ident;
static guint64 request_serial;
static guint64 answered_serial;
static char *answer;             /* of answered_serial; NULL: nothing read */
static gboolean answer_found;    /* the thread had a Python frame */

/* Helper thread, holding the GIL: the frames of @ident. */
static char *
read_frames (guint64   ident,
             gboolean *found)
{
  PyObject *globals = api.dict_new ();
  PyObject *value;
  PyObject *ran;
  char *text = NULL;

  *found = FALSE;
  if (globals == NULL)
    {
      api.err_clear ();
      return NULL;
    }
  value = api.long_from_unsigned_long ((unsigned long) ident);
  if (value != NULL)
    {
      api.dict_set_item_string (globals, "ident", value);
      api.dec_ref (value);
    }
  value = api.long_from_unsigned_long (PERFMON_PYTHON_STACK_MAX_FRAMES);
  if (value != NULL)
    {
      api.dict_set_item_string (globals, "limit", value);
      api.dec_ref (value);
    }

  ran = api.run_string (read_frames_code, PY_FILE_INPUT, globals, globals);
  if (ran == NULL)
    api.err_clear ();
  else
    {
      PyObject *result = api.dict_get_item_string (globals, "result");   /* borrowed */
      gssize length = 0;
      const char *utf8;

      api.dec_ref (ran);
      /* None (no frames) is no str: NULL, with an error to clear. */
      utf8 = result != NULL ? api.unicode_as_utf8_and_size (result, &length) : NULL;
      if (utf8 != NULL)
        {
          text = g_strndup (utf8, length);
          *found = TRUE;
        }
      else
        api.err_clear ();
    }
  api.dec_ref (globals);
  return text;
}

static gpointer
helper_main (gpointer data)
{
  g_mutex_lock (&lock);
  for (;;)
    {
      guint64 ident, serial;
      gboolean found = FALSE;
      char *text = NULL;

      while (!requested)
        g_cond_wait (&cond, &lock);
      requested = FALSE;
      ident = request_ident;
      serial = request_serial;
      g_mutex_unlock (&lock);

      /* No lock of ours is held while we wait for the GIL or run Python. */
      if (interpreter_running ())
        {
          int state = api.gil_ensure ();

          if (interpreter_running ())
            text = read_frames (ident, &found);
          api.gil_release (state);
        }

      g_mutex_lock (&lock);
      g_free (answer);
      answer = text;
      answer_found = found;
      answered_serial = serial;
      busy = FALSE;
      g_cond_broadcast (&cond);
    }
  return NULL;
}

gboolean
_perfmon_python_stack_capture (guint64     thread_ident,
                               guint       timeout_ms,
                               GPtrArray  *frames,
                               char      **reason)
{
  gint64 deadline_us = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  guint64 serial;
  gboolean answered;
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  *reason = NULL;
  if (!resolve_api () || !interpreter_running ())
    return FALSE;

  g_mutex_lock (&lock);
  if (busy)
    {
      g_mutex_unlock (&lock);
      *reason = g_strdup ("an earlier capture still waits for the Python interpreter's GIL");
      return FALSE;
    }
  if (helper == NULL)
    helper = g_thread_new ("perfmon-python", helper_main, NULL);
  busy = TRUE;
  requested = TRUE;
  request_ident = thread_ident;
  serial = ++request_serial;
  g_cond_broadcast (&cond);
  while (answered_serial != serial)
    if (!g_cond_wait_until (&cond, &lock, deadline_us))
      break;
  answered = answered_serial == serial;
  if (answered)
    {
      text = g_steal_pointer (&answer);
      if (!answer_found)
        g_clear_pointer (&text, g_free);
    }
  g_mutex_unlock (&lock);

  if (!answered)
    {
      *reason = g_strdup_printf ("the Python interpreter did not release the GIL within %u ms "
                                 "(the thread runs C code that holds it)", timeout_ms);
      return FALSE;
    }
  /* The thread runs no Python code: nothing is missing. */
  if (text == NULL)
    return FALSE;

  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto(GStrv) fields = g_strsplit (lines[i], "\t", 3);

      if (g_strv_length (fields) != 3)
        continue;
      g_ptr_array_add (frames, perfmon_format_script_frame (fields[2], fields[0],
                                                            (guint) g_ascii_strtoull (fields[1], NULL, 10)));
    }
  return TRUE;
}
