/* perfmon-proc-stack.c: the stack of a thread blocked in a system call, without a signal
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/perf_event.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif

/* The generic (remote-capable) flavour of libunwind: unlike the signal
 * handler's local unwinder (perfmon-stack-capture.c), this one gets its
 * registers and memory from accessors we write. */
#include <libunwind.h>

#include "perfmon-error.h"
#include "perfmon-proc-stack-private.h"

/* Design.
 *
 * A thread blocked in a system call has its user-space registers saved by
 * the kernel, and Linux shows two of them in /proc/PID/task/TID/syscall:
 * "NR ARG1 … ARG6 SP PC" ("running" when the thread is not in a system
 * call). Its user-space stack does not change while it stays there, and it
 * is in our own address space: from the PC and SP, libunwind can walk it
 * like a debugger walks another process, with accessors that read our own
 * memory. Nothing is sent to the thread, so its system call goes on as if
 * nobody had looked: a poll() or nanosleep() that a signal would have ended
 * with EINTR runs its full time.
 *
 * Memory. A bogus address (a guessed frame pointer, a corrupt stack) must
 * end the walk, not the process, so memory is read with process_vm_readv()
 * on our own pid, which fails with EFAULT where a load would fault, a
 * page at a time into a cache that lasts one look at the thread (the
 * stack's pages and the unwind tables' are read a few times each, a
 * system call per word was 20 times slower).
 *
 * Unwind info: the local address space's find_proc_info (libunwind's
 * dl_iterate_phdr() lookup of .eh_frame_hdr, the same as in the signal
 * handler), called with our address space, so that the tables it walks
 * are read through our accessors too.
 *
 * Registers. Only PC and SP are known. With DWARF CFI, the innermost
 * frames (libc's system-call wrappers, code built without frame pointers)
 * need nothing else; the other callee-saved registers are found where the
 * frames that changed them saved them. One register is often asked for
 * before any frame saved it: RBP, as the frame pointer of a caller built
 * with frame pointers (-O0, or -fno-omit-frame-pointer), since glibc's
 * wrappers leave it alone. Its value is then that caller's frame record:
 * we take the first 8-byte-aligned address R at or above the asking
 * frame's SP where [R + 8] is a return address (a call instruction ends
 * just before it); [R], the caller's RBP, may be anything, since the
 * caller need not use frame pointers. A wrong guess
 * can only give a wrong outer frame, or end the walk early; the inner
 * frames (the blocking call and its caller) never depend on it.
 *
 * Consistency. The thread may leave its system call while we read its
 * stack. Before and after the walk we read /proc/…/syscall and
 * /proc/…/schedstat (time run, time waited, times scheduled): if either
 * changed, the thread ran, and the stack is thrown away and read again (a
 * few times; a thread that leaves its call every time is busy, in and out
 * of short system calls, and is handled as a running one).
 *
 * "running" in /proc also covers a thread just woken inside its system
 * call, on its way out, where a signal would still make poll() fail: a
 * thread is taken as running only when seen so at RUNNING_LOOKS looks
 * RUNNING_LOOK_INTERVAL_US apart, and a thread that wakes up now and then
 * is caught blocked at one of them.
 *
 * Running threads: _perfmon_perf_stack_capture() takes one perf sample
 * (user registers and a copy of the stack, taken by the kernel in a timer
 * interrupt that found the thread in user space) and unwinds it with the
 * same accessors, the stack served from the copy. Where perf is refused,
 * the caller signals the thread (see perfmon-stack-capture.c).
 */

#define PAGE_BYTES        4096
#define MAX_ATTEMPTS      3
/* How many times, and how far apart, a thread must be seen running in
 * user space before the caller may signal it. */
#define RUNNING_LOOKS            4
#define RUNNING_LOOK_INTERVAL_US 500
/* How far above a frame's SP its frame record is looked for. */
#define FRAME_RECORD_SCAN_BYTES (64 * 1024)

/* Pages read with process_vm_readv(), for the length of one capture:
 * direct-mapped by page number. */
#define CACHED_PAGES 64
typedef struct
{
  guint64 page;      /* its address + 1; 0: empty */
  gboolean readable;
  guint8  bytes[PAGE_BYTES];
} CachedPage;

typedef struct
{
  /* From a perf sample: every general register (libunwind's numbering),
   * and the copy of the stack from SP the kernel took with them. The
   * thread runs on, so no other stack memory is read. */
  gboolean has_registers;
  guint64  registers[17];
  const guint8 *stack_dump;
  gsize    stack_dump_length;
  guint64  pc;
  guint64  sp;
  /* The SP of the frame being stepped from, for the RBP guess. */
  guint64  frame_sp;
  gboolean rbp_known;
  guint    rbp_skip;     /* candidates of the guess passed over */
  guint64  rbp;
} UnwindState;

static CachedPage *page_cache;   /* under the caller's mutex */
static unw_addr_space_t address_space;
static unw_accessors_t *local_accessors;

/* This process's pid, 0 until known: getpid() is a system call (glibc
 * caches it no more), and every read of the process's memory names it.
 * A forked child forgets it. */
static gint own_pid;   /* atomic */

static void
forget_own_pid (void)
{
  g_atomic_int_set (&own_pid, 0);
}

pid_t
_perfmon_proc_stack_own_pid (void)
{
  static gsize registered;
  pid_t pid = g_atomic_int_get (&own_pid);

  if (G_UNLIKELY (pid == 0))
    {
      if (g_once_init_enter (&registered))
        {
          pthread_atfork (NULL, NULL, forget_own_pid);
          g_once_init_leave (&registered, 1);
        }
      pid = getpid ();
      g_atomic_int_set (&own_pid, pid);
    }
  return pid;
}

static gboolean
read_memory (void   *destination,
             guint64 address,
             gsize   length)
{
  struct iovec local = { destination, length };
  struct iovec remote = { (void *) (uintptr_t) address, length };

  return process_vm_readv (_perfmon_proc_stack_own_pid (), &local, 1, &remote, 1, 0) == (ssize_t) length;
}

static gboolean
read_cached (guint64  address,
             void    *destination,
             gsize    length)
{
  guint8 *out = destination;

  while (length > 0)
    {
      guint64 page = address & ~(guint64) (PAGE_BYTES - 1);
      CachedPage *cached = &page_cache[(page / PAGE_BYTES) % CACHED_PAGES];
      gsize offset = address - page;
      gsize chunk = MIN (length, PAGE_BYTES - offset);

      if (cached->page != page + 1)
        {
          cached->page = page + 1;
          cached->readable = page != 0 && read_memory (cached->bytes, page, PAGE_BYTES);
        }
      if (!cached->readable)
        return FALSE;
      memcpy (out, cached->bytes + offset, chunk);
      out += chunk;
      address += chunk;
      length -= chunk;
    }
  return TRUE;
}

static gboolean
read_word (UnwindState *state,
           guint64      address,
           guint64     *value)
{
  if (address + 8 < address)
    return FALSE;
  if (state->stack_dump != NULL)
    {
      if (address >= state->sp && address + 8 <= state->sp + state->stack_dump_length)
        {
          memcpy (value, state->stack_dump + (address - state->sp), 8);
          return TRUE;
        }
      /* The rest of a running thread's stack changes under us; the code
       * and unwind tables do not. */
      if (address >= state->sp && address < state->sp + 16 * 1024 * 1024)
        return FALSE;
    }
  return read_cached (address, value, 8);
}

/* Whether @address is just after a call instruction: e8 rel32, or ff /2
 * (an indirect call) of 2, 3, 4, 6 or 7 bytes. */
static gboolean
is_return_address (guint64 address)
{
  guint8 code[7];

  if (address < sizeof code || !read_cached (address - sizeof code, code, sizeof code))
    return FALSE;
  if (code[2] == 0xe8)
    return TRUE;
  for (guint length = 2; length <= 7; length++)
    {
      guint8 opcode = code[sizeof code - length];
      guint8 modrm = code[sizeof code - length + 1];

      if (length != 5 && opcode == 0xff && (modrm & 0x38) == 0x10)
        return TRUE;
    }
  return FALSE;
}

static guint64
guess_frame_pointer (UnwindState *state)
{
  guint64 start = (MAX (state->frame_sp, state->sp) + 7) & ~G_GUINT64_CONSTANT (7);
  guint skip = state->rbp_skip;

  for (guint64 r = start; r < start + FRAME_RECORD_SCAN_BYTES; r += 8)
    {
      guint64 saved_fp;
      guint64 return_address;

      if (!read_word (state, r, &saved_fp) || !read_word (state, r + 8, &return_address))
        break;
      /* The saved RBP is not checked: the caller may not use frame
       * pointers, and then its RBP holds anything. */
      (void) saved_fp;
      if (return_address > 4096 && is_return_address (return_address) && skip-- == 0)
        return r;
    }
  return 0;
}

static int
access_mem (unw_addr_space_t  as,
            unw_word_t        address,
            unw_word_t       *value,
            int               write,
            void             *arg)
{
  guint64 word;

  if (write)
    return -UNW_EREADONLYREG;
  if (!read_word (arg, address, &word))
    return -UNW_EINVAL;
  *value = word;
  return 0;
}

static int
access_reg (unw_addr_space_t  as,
            unw_regnum_t      reg,
            unw_word_t       *value,
            int               write,
            void             *arg)
{
  UnwindState *state = arg;

  if (write)
    return -UNW_EREADONLYREG;
  if (state->has_registers)
    {
      if (reg < 0 || reg > UNW_X86_64_RIP)
        return -UNW_EBADREG;
      *value = state->registers[reg];
      return 0;
    }
  switch (reg)
    {
    case UNW_X86_64_RIP:
      *value = state->pc;
      return 0;
    case UNW_X86_64_RSP:
      *value = state->sp;
      return 0;
    case UNW_X86_64_RBP:
      if (!state->rbp_known)
        {
          state->rbp = guess_frame_pointer (state);
          state->rbp_known = TRUE;
        }
      if (state->rbp == 0)
        return -UNW_EBADREG;
      *value = state->rbp;
      return 0;
    default:
      return -UNW_EBADREG;
    }
}

static int
access_fpreg (unw_addr_space_t  as,
              unw_regnum_t      reg,
              unw_fpreg_t      *value,
              int               write,
              void             *arg)
{
  return -UNW_EBADREG;
}

static int
find_proc_info (unw_addr_space_t  as,
                unw_word_t        ip,
                unw_proc_info_t  *info,
                int               need_unwind_info,
                void             *arg)
{
  return local_accessors->find_proc_info (as, ip, info, need_unwind_info, arg);
}

static void
put_unwind_info (unw_addr_space_t  as,
                 unw_proc_info_t  *info,
                 void             *arg)
{
  local_accessors->put_unwind_info (as, info, arg);
}

static int
get_dyn_info_list_addr (unw_addr_space_t  as,
                        unw_word_t       *address,
                        void             *arg)
{
  return -UNW_ENOINFO;
}

static int
resume (unw_addr_space_t  as,
        unw_cursor_t     *cursor,
        void             *arg)
{
  return -UNW_EINVAL;
}

static int
get_proc_name (unw_addr_space_t  as,
               unw_word_t        address,
               char             *buffer,
               size_t            length,
               unw_word_t       *offset,
               void             *arg)
{
  return -UNW_ENOINFO;
}

static gboolean
ensure_address_space (void)
{
  static unw_accessors_t accessors = {
    .find_proc_info = find_proc_info,
    .put_unwind_info = put_unwind_info,
    .get_dyn_info_list_addr = get_dyn_info_list_addr,
    .access_mem = access_mem,
    .access_reg = access_reg,
    .access_fpreg = access_fpreg,
    .resume = resume,
    .get_proc_name = get_proc_name,
  };

  if (address_space != NULL)
    return TRUE;
  local_accessors = unw_get_accessors (unw_local_addr_space);
  if (local_accessors == NULL)
    return FALSE;
  address_space = unw_create_addr_space (&accessors, 0);
  if (address_space == NULL)
    return FALSE;
  /* No cache: the stacks of threads come and go, and the unwind info of
   * plugins unloaded since would go stale. */
  unw_set_caching_policy (address_space, UNW_CACHE_NONE);
  page_cache = g_new0 (CachedPage, CACHED_PAGES);
  return TRUE;
}

/* Reads a small /proc file into @buffer (NUL-terminated); FALSE if it
 * cannot be read. */
static gboolean
read_small_file (const char *path,
                 char       *buffer,
                 gsize       size)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  ssize_t n;

  if (fd < 0)
    return FALSE;
  do
    n = read (fd, buffer, size - 1);
  while (n < 0 && errno == EINTR);
  close (fd);
  if (n < 0)
    return FALSE;
  buffer[n] = '\0';
  return TRUE;
}

/* The thread's scheduling counters: they change whenever it runs. */
static gboolean
read_run_counters (gint64  tid,
                   char   *buffer,
                   gsize   size)
{
  char path[64];
  char status[2048];
  const char *voluntary;

  g_snprintf (path, sizeof path, "/proc/self/task/%" G_GINT64_FORMAT "/schedstat", tid);
  if (read_small_file (path, buffer, size))
    return TRUE;
  /* Without CONFIG_SCHED_INFO: the context switches, which count too. */
  g_snprintf (path, sizeof path, "/proc/self/task/%" G_GINT64_FORMAT "/status", tid);
  if (!read_small_file (path, status, sizeof status))
    return FALSE;
  voluntary = strstr (status, "voluntary_ctxt_switches:");
  g_strlcpy (buffer, voluntary != NULL ? voluntary : "", size);
  return TRUE;
}

static int
unwind (UnwindState          *state,
        PerfmonCapturedStack *out)
{
  unw_cursor_t cursor;
  int ret;

  out->n_frames = 0;
  out->truncated = FALSE;
  ret = unw_init_remote (&cursor, address_space, state);
  if (ret < 0)
    return ret;

  for (;;)
    {
      unw_word_t pc, sp;

      ret = unw_get_reg (&cursor, UNW_REG_IP, &pc);
      if (ret == 0)
        ret = unw_get_reg (&cursor, UNW_REG_SP, &sp);
      if (ret < 0)
        return ret;
      if (pc == 0)
        return 0;
      out->pcs[out->n_frames] = pc;
      out->sps[out->n_frames] = sp;
      out->n_frames++;
      state->frame_sp = sp;
      ret = unw_step (&cursor);
      if (ret <= 0)
        return ret;
      if (out->n_frames == PERFMON_STACK_CAPTURE_MAX_FRAMES)
        {
          out->truncated = TRUE;
          return 0;
        }
    }
}

static gboolean
is_running (const char *line)
{
  return g_str_has_prefix (line, "running") || g_str_has_prefix (line, "-1 ");
}

/* How many frame records the RBP guess tries: a frame may hold stale
 * return addresses in kilobytes of locals below its record (libasan's
 * read() interceptor has a 2 KiB buffer). */
#define RBP_CANDIDATES 256

/* unwind(), and if it needed to guess RBP, again with the next candidates
 * of the guess: the walk kept is the first complete one (down to where
 * the thread started, every frame in a loaded object), else the one with
 * most frames in objects. A wrong candidate gives a short or broken walk.
 * Only frames that use RBP as their frame pointer before any frame saved
 * it need the guess; for the others one walk is all. */
/* How many frames are in a loaded object (a walk led astray by a wrong
 * guess reaches addresses in none), and whether the walk is complete: its
 * outermost frame is where every thread starts (_start, or clone() for a
 * thread other than the first). */
static guint
frames_in_objects (const PerfmonCapturedStack *stack,
                   gboolean                   *complete)
{
  static const char * const starts[] = { "_start", "clone", "__clone", "clone3", "__clone3",
                                         "start_thread" };
  guint n = 0;

  *complete = FALSE;
  for (guint i = 0; i < stack->n_frames; i++)
    {
      Dl_info info;

      if (dladdr ((void *) (uintptr_t) stack->pcs[i], &info) == 0 || info.dli_fname == NULL)
        continue;
      n++;
      if (i == stack->n_frames - 1 && info.dli_sname != NULL)
        for (guint s = 0; s < G_N_ELEMENTS (starts); s++)
          *complete |= strcmp (info.dli_sname, starts[s]) == 0;
    }
  return n;
}

static int
unwind_best (UnwindState          *state,
             PerfmonCapturedStack *out)
{
  g_autofree PerfmonCapturedStack *best = NULL;
  int best_ret = 0;
  guint best_score = 0;

  for (guint skip = 0; skip < RBP_CANDIDATES; skip++)
    {
      UnwindState attempt = *state;
      gboolean clean;
      guint score;
      int ret;

      attempt.rbp_skip = skip;
      attempt.rbp_known = FALSE;
      ret = unwind (&attempt, out);
      /* No guess was needed, or no candidate is left. */
      if (!attempt.rbp_known || (skip > 0 && attempt.rbp == 0))
        {
          if (skip == 0)
            return ret;
          break;
        }
      {
        gboolean complete;
        guint in_objects = frames_in_objects (out, &complete);

        clean = complete && in_objects == out->n_frames;
        score = in_objects + (clean ? PERFMON_STACK_CAPTURE_MAX_FRAMES + 1 : 0);
      }
      if (best == NULL || score > best_score)
        {
          if (best == NULL)
            best = g_new (PerfmonCapturedStack, 1);
          *best = *out;
          best_ret = ret;
          best_score = score;
        }
      if (attempt.rbp == 0 || clean)
        break;
    }
  *out = *best;
  return best_ret;
}

/* "NR ARG1 … ARG6 SP PC": the last two fields. */
static gboolean
parse_syscall_line (const char *line,
                    guint64    *sp,
                    guint64    *pc)
{
  g_autofree char *copy = g_strstrip (g_strdup (line));
  g_auto(GStrv) fields = g_strsplit (copy, " ", -1);

  if (g_strv_length (fields) != 9)
    return FALSE;
  *sp = g_ascii_strtoull (fields[7], NULL, 16);
  *pc = g_ascii_strtoull (fields[8], NULL, 16);
  return *sp != 0 && *pc != 0;
}

/* Copies the NUL-terminated string at @address, cut at
 * PERFMON_RUNNABLE_NAME_MAX bytes, into @out. */
static void
read_string (guint64  address,
             char    *out)
{
  char name[PERFMON_RUNNABLE_NAME_MAX + 1];
  gsize length = 0;

  /* Up to a page boundary at a time: the string may end right before an
   * unmapped page. */
  while (length < PERFMON_RUNNABLE_NAME_MAX)
    {
      gsize chunk = MIN (PERFMON_RUNNABLE_NAME_MAX - length,
                         PAGE_BYTES - ((address + length) % PAGE_BYTES));

      if (!read_memory (name + length, address + length, chunk))
        break;
      if (memchr (name + length, '\0', chunk) != NULL)
        {
          length += strlen (name + length);
          break;
        }
      length += chunk;
    }
  memcpy (out, name, length);
  out[length] = '\0';
}

/* The address of perfmon's name of what @thread dispatches now
 * (_perfmon_current_dispatch_name), 0 if none or unreadable. */
static guint64
read_dispatch_name_address (const PerfmonThreadAddresses *thread)
{
  guint64 name_address = 0;

  if (thread->dispatch_name_address == 0 ||
      !read_memory (&name_address, thread->dispatch_name_address, 8))
    return 0;
  return name_address;
}

/* The runnable name, as the signal handler takes it: perfmon's name of the
 * dispatch (automatic groups) at @name_address if not 0, else the name of
 * the GSource that GLib dispatches. Read from the thread's memory, without
 * stopping it. */
static void
read_runnable_name_from (const PerfmonThreadAddresses *thread,
                         guint64                       name_address,
                         PerfmonCapturedStack         *out)
{
  guint64 source_address = 0;

  out->has_runnable_name = FALSE;
  out->runnable_name[0] = '\0';
  if (name_address != 0)
    {
      out->has_runnable_name = TRUE;
      read_string (name_address, out->runnable_name);
      return;
    }
  if (thread->glib_dispatch_address == 0 ||
      !read_memory (&source_address, thread->glib_dispatch_address + sizeof (gpointer), 8) ||
      source_address == 0)
    return;
  out->has_runnable_name = TRUE;
  if (read_memory (&name_address, source_address + G_STRUCT_OFFSET (GSource, name), 8) &&
      name_address != 0)
    read_string (name_address, out->runnable_name);
}

static void
read_runnable_name (const PerfmonThreadAddresses *thread,
                    PerfmonCapturedStack         *out)
{
  read_runnable_name_from (thread, read_dispatch_name_address (thread), out);
}

PerfmonProcStackResult
_perfmon_proc_stack_capture (gint64                tid,
                             const PerfmonThreadAddresses *thread,
                             PerfmonCapturedStack *out,
                             GError              **error)
{
  char syscall_path[64];
  int last_error = 0;

#ifndef __x86_64__
  /* The registers the accessors know are x86-64's. */
  return PERFMON_PROC_STACK_RUNNING;
#endif
  g_snprintf (syscall_path, sizeof syscall_path, "/proc/self/task/%" G_GINT64_FORMAT "/syscall", tid);
  if (!ensure_address_space ())
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                           "libunwind could not set up an address space to unwind from /proc");
      return PERFMON_PROC_STACK_FAILED;
    }

  for (guint attempt = 0; attempt < MAX_ATTEMPTS; attempt++)
    {
      char counters_before[512], counters_after[512];
      char line_before[256], line_after[256];
      UnwindState state = { 0, };

      if (!read_run_counters (tid, counters_before, sizeof counters_before) ||
          !read_small_file (syscall_path, line_before, sizeof line_before))
        {
          char task_path[64];

          g_snprintf (task_path, sizeof task_path, "/proc/self/task/%" G_GINT64_FORMAT, tid);
          if (!g_file_test (task_path, G_FILE_TEST_IS_DIR))
            {
              g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                           "no stack of thread %" G_GINT64_FORMAT ": the thread has exited", tid);
              return PERFMON_PROC_STACK_FAILED;
            }
          /* The kernel does not say (no /proc/…/syscall, or it is hidden
           * from us): as for a running thread, the caller samples it. */
          return PERFMON_PROC_STACK_RUNNING;
        }
      /* "running", or "-1 SP PC" while it is stopped outside a call.
       * "running" covers a thread just woken inside its system call, on
       * its way out, where a signal still makes it fail with EINTR: a
       * thread that wakes up now and then is seen blocked at one of a few
       * looks; only one seen running at each is left to the caller. */
      for (guint look = 1; look < RUNNING_LOOKS && is_running (line_before); look++)
        {
          g_usleep (RUNNING_LOOK_INTERVAL_US);
          if (!read_run_counters (tid, counters_before, sizeof counters_before) ||
              !read_small_file (syscall_path, line_before, sizeof line_before))
            break;
        }
      if (is_running (line_before))
        return PERFMON_PROC_STACK_RUNNING;
      if (!parse_syscall_line (line_before, &state.sp, &state.pc))
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                       "no stack of thread %" G_GINT64_FORMAT ": unexpected /proc/…/syscall line",
                       tid);
          return PERFMON_PROC_STACK_FAILED;
        }

      /* Pages of the stack and of the unwind tables, read afresh for
       * each look at the thread. */
      for (guint i = 0; i < CACHED_PAGES; i++)
        page_cache[i].page = 0;
      state.frame_sp = state.sp;
      last_error = unwind_best (&state, out);
      read_runnable_name (thread, out);

      if (!read_small_file (syscall_path, line_after, sizeof line_after) ||
          !read_run_counters (tid, counters_after, sizeof counters_after))
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                       "no stack of thread %" G_GINT64_FORMAT ": the thread has exited", tid);
          return PERFMON_PROC_STACK_FAILED;
        }
      if (strcmp (line_before, line_after) != 0 || strcmp (counters_before, counters_after) != 0)
        {
          /* It ran: what we read may be half of two stacks. Once it runs
           * in user space, the caller takes over. */
          continue;
        }

      if (out->n_frames == 0)
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                       "no stack of thread %" G_GINT64_FORMAT " (blocked in a system call): "
                       "libunwind read no frame: %s",
                       tid, last_error != 0 ? unw_strerror (last_error) : "empty stack");
          return PERFMON_PROC_STACK_FAILED;
        }
      out->thread_handle = thread->thread_handle;
      out->method = PERFMON_STACK_METHOD_PROC_SYSCALL;
      out->interrupted_syscall = FALSE;
      return PERFMON_PROC_STACK_TAKEN;
    }

  /* It left its system call each time before its stack was read: it is
   * not blocked but busy, in and out of short calls (usleep(0) in a loop,
   * a poll() with a short timeout). As for a running thread, the caller
   * samples it. */
  return PERFMON_PROC_STACK_RUNNING;
}

/* --- a running thread: one perf sample -------------------------------- */

/* The stack copied with the sample, from SP up: deeper stacks lose their
 * outermost frames (the capture says it is truncated). */
#define PERF_STACK_BYTES   32768
/* The ring buffer: a sample of the registers and PERF_STACK_BYTES fits. */
#define PERF_DATA_PAGES    16
/* Task-clock time between samples (ns): the first one comes after the
 * thread has run this long in user space. */
#define PERF_PERIOD_NS     200000

static gint perf_unavailable;   /* atomic: perf_event_open() refused once */
static gint perf_disallowed;    /* atomic: for tests of the signal */
static char *perf_unavailable_reason;

#if defined(__x86_64__)
/* The kernel's register numbers, in the sample's order (ascending), and
 * libunwind's for each. */
static const struct { int perf; int unw; } perf_registers[] = {
  { PERF_REG_X86_AX, UNW_X86_64_RAX }, { PERF_REG_X86_BX, UNW_X86_64_RBX },
  { PERF_REG_X86_CX, UNW_X86_64_RCX }, { PERF_REG_X86_DX, UNW_X86_64_RDX },
  { PERF_REG_X86_SI, UNW_X86_64_RSI }, { PERF_REG_X86_DI, UNW_X86_64_RDI },
  { PERF_REG_X86_BP, UNW_X86_64_RBP }, { PERF_REG_X86_SP, UNW_X86_64_RSP },
  { PERF_REG_X86_IP, UNW_X86_64_RIP },
  { PERF_REG_X86_R8, UNW_X86_64_R8 }, { PERF_REG_X86_R9, UNW_X86_64_R9 },
  { PERF_REG_X86_R10, UNW_X86_64_R10 }, { PERF_REG_X86_R11, UNW_X86_64_R11 },
  { PERF_REG_X86_R12, UNW_X86_64_R12 }, { PERF_REG_X86_R13, UNW_X86_64_R13 },
  { PERF_REG_X86_R14, UNW_X86_64_R14 }, { PERF_REG_X86_R15, UNW_X86_64_R15 },
};

/* Copies @length bytes at @offset of the ring's data (which wraps). */
static void
ring_copy (const guint8 *data,
           gsize         size,
           guint64       offset,
           void         *destination,
           gsize         length)
{
  guint8 *out = destination;

  for (gsize done = 0; done < length;)
    {
      gsize at = (offset + done) % size;
      gsize chunk = MIN (length - done, size - at);

      memcpy (out + done, data + at, chunk);
      done += chunk;
    }
}
#endif

gboolean
_perfmon_perf_stack_available (void)
{
  return !g_atomic_int_get (&perf_unavailable) && !g_atomic_int_get (&perf_disallowed);
}

void
_perfmon_perf_stack_set_allowed (gboolean allowed)
{
  g_atomic_int_set (&perf_disallowed, !allowed);
}

const char *
_perfmon_perf_stack_unavailable_reason (void)
{
  return g_atomic_int_get (&perf_unavailable) ? perf_unavailable_reason : NULL;
}

PerfmonProcStackResult
_perfmon_perf_stack_capture (gint64                tid,
                             guint                 timeout_ms,
                             const PerfmonThreadAddresses *thread,
                             PerfmonCapturedStack *out,
                             GError              **error)
{
#if defined(__x86_64__)
  struct perf_event_attr attr;
  struct perf_event_mmap_page *meta;
  gsize page_size = (gsize) sysconf (_SC_PAGESIZE);
  gsize map_size = page_size * (1 + PERF_DATA_PAGES);
  const guint8 *data;
  gsize data_size = page_size * PERF_DATA_PAGES;
  guint64 head, tail = 0;
  g_autofree guint8 *sample = NULL;
  gboolean found = FALSE;
  gsize sample_size = 0;
  struct pollfd pfd;
  void *map;
  int fd;

  if (!_perfmon_perf_stack_available () || !ensure_address_space ())
    return PERFMON_PROC_STACK_UNAVAILABLE;

  memset (&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = PERF_PERIOD_NS;
  attr.sample_type = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  for (guint i = 0; i < G_N_ELEMENTS (perf_registers); i++)
    attr.sample_regs_user |= G_GUINT64_CONSTANT (1) << perf_registers[i].perf;
  attr.sample_stack_user = PERF_STACK_BYTES;
  /* Samples only where the tick finds the thread in user space: its user
   * registers are then exactly where it runs, and nothing interrupts a
   * system call. */
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.exclude_callchain_kernel = 1;
  attr.wakeup_events = 1;

  fd = (int) syscall (SYS_perf_event_open, &attr, (pid_t) tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0)
    {
      int saved_errno = errno;

      if (saved_errno == ESRCH)
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                       "no stack of thread %" G_GINT64_FORMAT ": the thread has exited", tid);
          return PERFMON_PROC_STACK_FAILED;
        }
      /* Not allowed (perf_event_paranoid, a seccomp filter) or not there:
       * for good. */
      perf_unavailable_reason = g_strdup_printf ("perf_event_open: %s", g_strerror (saved_errno));
      g_atomic_int_set (&perf_unavailable, TRUE);
      return PERFMON_PROC_STACK_UNAVAILABLE;
    }
  map = mmap (NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED)
    {
      int saved_errno = errno;

      close (fd);
      if (saved_errno == EPERM || saved_errno == ENOMEM)
        {
          /* perf_event_mlock_kb is spent: maybe only for now. */
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                       "no stack of running thread %" G_GINT64_FORMAT ": cannot map a perf "
                       "buffer: %s", tid, g_strerror (saved_errno));
          return PERFMON_PROC_STACK_FAILED;
        }
      perf_unavailable_reason = g_strdup_printf ("mmap of a perf buffer: %s", g_strerror (saved_errno));
      g_atomic_int_set (&perf_unavailable, TRUE);
      return PERFMON_PROC_STACK_UNAVAILABLE;
    }
  meta = map;
  data = (const guint8 *) map + page_size;

  pfd.fd = fd;
  pfd.events = POLLIN;
  pfd.revents = 0;
  while (poll (&pfd, 1, (int) timeout_ms) < 0 && errno == EINTR)
    ;
  ioctl (fd, PERF_EVENT_IOC_DISABLE, 0);

  head = __atomic_load_n (&meta->data_head, __ATOMIC_ACQUIRE);
  while (!found && tail + sizeof (struct perf_event_header) <= head)
    {
      struct perf_event_header header;

      ring_copy (data, data_size, tail, &header, sizeof header);
      if (header.size < sizeof header || tail + header.size > head)
        break;
      if (header.type == PERF_RECORD_SAMPLE)
        {
          sample_size = header.size - sizeof header;
          sample = g_malloc (sample_size);
          ring_copy (data, data_size, tail + sizeof header, sample, sample_size);
          found = TRUE;
        }
      tail += header.size;
    }
  munmap (map, map_size);
  close (fd);

  if (!found)
    return PERFMON_PROC_STACK_NOT_SAMPLED;

  {
    UnwindState state = { 0, };
    gsize at = 0;
    guint64 abi, dump_size = 0;
    int ret;

    /* regs_user: abi, then the registers; stack_user: size, bytes,
     * dyn_size (the part of them that is valid). */
    if (sample_size < 8)
      return PERFMON_PROC_STACK_NOT_SAMPLED;
    memcpy (&abi, sample, 8);
    at = 8;
    if (abi == PERF_SAMPLE_REGS_ABI_NONE ||
        sample_size < at + 8 * G_N_ELEMENTS (perf_registers) + 8)
      return PERFMON_PROC_STACK_NOT_SAMPLED;   /* a kernel thread, or cut short */
    for (guint i = 0; i < G_N_ELEMENTS (perf_registers); i++)
      {
        memcpy (&state.registers[perf_registers[i].unw], sample + at, 8);
        at += 8;
      }
    memcpy (&dump_size, sample + at, 8);
    at += 8;
    if (dump_size > 0 && at + dump_size + 8 <= sample_size)
      {
        guint64 dynamic_size;

        memcpy (&dynamic_size, sample + at + dump_size, 8);
        state.stack_dump = sample + at;
        state.stack_dump_length = MIN (dump_size, dynamic_size);
      }
    state.has_registers = TRUE;
    state.pc = state.registers[UNW_X86_64_RIP];
    state.sp = state.registers[UNW_X86_64_RSP];
    state.frame_sp = state.sp;
    for (guint i = 0; i < CACHED_PAGES; i++)
      page_cache[i].page = 0;

    ret = unwind_best (&state, out);
    if (out->n_frames == 0)
      {
        g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                     "no stack of running thread %" G_GINT64_FORMAT ": libunwind read no frame "
                     "of its perf sample: %s", tid, ret != 0 ? unw_strerror (ret) : "empty stack");
        return PERFMON_PROC_STACK_FAILED;
      }
    /* Stopped inside the copy, the stack goes on above it. */
    if (ret < 0 && state.stack_dump_length == PERF_STACK_BYTES)
      out->truncated = TRUE;
    read_runnable_name (thread, out);
    out->thread_handle = thread->thread_handle;
    out->method = PERFMON_STACK_METHOD_PERF_SAMPLE;
    out->interrupted_syscall = FALSE;
    return PERFMON_PROC_STACK_TAKEN;
  }
#else
  return PERFMON_PROC_STACK_UNAVAILABLE;
#endif
}

void
_perfmon_proc_stack_read_runnable_name (const PerfmonThreadAddresses *thread,
                                        PerfmonCapturedStack         *out)
{
  read_runnable_name (thread, out);
}

guint64
_perfmon_proc_stack_read_dispatch_name_address (const PerfmonThreadAddresses *thread)
{
  return read_dispatch_name_address (thread);
}

void
_perfmon_proc_stack_read_runnable_name_at (const PerfmonThreadAddresses *thread,
                                           guint64                       name_address,
                                           PerfmonCapturedStack         *out)
{
  read_runnable_name_from (thread, name_address, out);
}
