/* The compiled kernels' thread pool: the calling thread plus workers started on first use.
 *
 * A job is split in chunks (CHUNKS_PER_THREAD per thread) that the caller and the workers
 * claim one by one (see `claim`); the caller returns when every chunk is done.
 * Workers spin for SPIN_NS after each job (in an engine run the next one comes within tens of
 * microseconds, and a futex wake costs more than that), yielding the core now and then (see
 * `polite`), and then sleep on a futex. The caller,
 * its own chunks done, spins the same way for the chunks the workers took (at least as long
 * as its own part took) and then sleeps on `done` until the last one ends, so that a worker
 * preempted with a chunk gets its core.
 *
 * A shared CPU (issue 26). Behind busy neighbours a spinning worker is always runnable, so
 * the scheduler never wakes it: it waits its turn in the run queue (milliseconds at a load of
 * a few per core) while the caller runs every chunk itself, and its spinning spends the
 * process's share of the CPU on nothing. (Its yields put it behind every other runnable
 * thread too: measured with /proc/PID/task/TID/schedstat
 * at a load of 12 on 2 cores, the worker ran 1-3% of the time and the caller ran 97% of the
 * chunks, against onnxruntime's non-spinning worker's 45%.) A thread that sleeps is woken by
 * the job (FUTEX_WAKE), and the scheduler runs a woken thread soon. So the caller watches
 * for contention: a job whose workers ran no chunk though the caller's own part took
 * IDLE_NS, or a stall (a wait for the workers' chunks longer than STALL_NS and than the
 * caller's own part: a worker preempted with a chunk). Either starts a contended time of
 * `backoff` ns (2 ms, doubling on each further sign up to 128 ms; a job outside it without
 * a sign halves the next) in which the workers do not spin at all: each sleeps as soon as
 * the chunks are gone, and every job wakes the sleepers at once, as onnxruntime's
 * non-spinning pool does. Behind busy neighbours a thread that sleeps between jobs is woken
 * onto a core within microseconds (the scheduler places a woken thread ahead of those that
 * used up their slices), while one that spins, even briefly, is preempted as a CPU hog and
 * then waits a whole round of the neighbours' slices, milliseconds, holding nothing but its
 * place: with workers that spun 20 us the caller ran 98% of MobileNetV3-Small's chunks
 * beside two busy loops and the machine's load (measured with /proc/PID/task/TID/schedstat:
 * 2 slices a run for the caller, 11 of its 15 ms in the run queue, its worker 0.2 ms on a
 * core); with sleeping ones the worker ran 15-30% of the work (onnxruntime's ran 25%) and
 * the runs took 5-9 ms instead of 6-20 (issue 26, docs/performance.md). Jobs too short for
 * a woken worker to reach cost the caller a futex wake each (a few us) and nothing else.
 * Jobs still run on every thread: beside same-priority neighbours the process's share of
 * the CPU is a share per runnable thread (running them on the caller alone, as this pool
 * did after a stall before, gave that share away). On a quiet machine no sign is seen and
 * nothing changes.
 *
 * One job at a time: a job submitted while another thread's runs is run by its
 * caller alone. After fork() the child starts without workers and makes its own. A worker
 * that cannot be started (pthread_create fails) leaves nothing behind: the pool runs with the
 * threads it has, and mi_pool_get_threads / mi_pool_started / mi_pool_start_error say so.
 *
 * Shared state and the memory orders it needs:
 * - `job` (fn, arg, parts): plain fields, written by the caller holding `busy` before it
 *   publishes the job (a release store of `claim`, then the generation increment); a thread
 *   reads them only after claiming a chunk of that job (an acquire compare-and-swap of
 *   `claim`), and the caller writes the next job only after acquiring `done` == the chunk
 *   count, i.e. after every claimed chunk (and the reads of `job` it made) is finished.
 * - `claim`: (generation, chunks, next chunk) in one word; see run_chunks.
 * - `done`: chunks finished; each increment is a release (the outputs of that chunk), the
 *   caller's loads acquire. It is also the futex word the caller sleeps on: `waiting` is set
 *   (seq_cst) by the caller before it re-reads `done` and sleeps; a worker increments `done`
 *   (seq_cst) and then reads `waiting`: either the caller sees the last increment or the
 *   worker sees the caller waiting and wakes it (FUTEX_WAIT compares the word in the kernel).
 * - `generation`: the job counter the workers wait on, and the futex word. The caller's
 *   increment is seq_cst: a release for `job`, `claim` and `done`, and one side of the
 *   `sleepers` handshake below.
 * - `sleepers`: workers asleep on the futex, or about to be. seq_cst on both sides: a worker
 *   increments it and then re-reads `generation`; the caller increments `generation` and then
 *   reads `sleepers`. In the single order of seq_cst operations either the worker sees the
 *   new generation (and does not sleep) or the caller sees the sleeper (and wakes it);
 *   FUTEX_WAIT also compares the word in the kernel, so a wake in between is not lost.
 * - `scratch_failed`: set (relaxed) by a thread whose scratch allocation failed, before its
 *   release increment of `done`; reset by the caller before it publishes the job, read
 *   after it has acquired done == chunks.
 * - `started`, `limit`: written by the caller holding `busy` (and in the child after fork),
 *   read by mi_pool_get_threads / mi_pool_started from any thread: relaxed, as is `wanted`
 *   (a setting read at the next job) and the test hooks and `start_error`.
 * - `contended_until`, `solo_until` (relaxed): written by the caller holding `busy` (or by
 *   the test hook), read by it and by workers deciding how long to spin (a stale value costs
 *   one spin or one futex wake, no more); `backoff` is read and written only under `busy`.
 * - `stats` (relaxed): counters of what the pool did (mi_pool_stats).
 */
#define _GNU_SOURCE
#include "_pool.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "_common.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax(void) { _mm_pause(); }
#else
static inline void cpu_relax(void) {}
#endif

#define MAX_THREADS 64
#define RELAXED memory_order_relaxed

static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static atomic_int started = 1; /* threads that exist (caller included) */
static atomic_int wanted = 0;  /* threads a job should use; 0: not set (all cores) */
static atomic_int limit = 0;   /* 0, or `started` when a worker could not be started: the
                                  pool keeps that many until the next mi_pool_set_threads */
static atomic_int start_error = 0;  /* errno of the last failed pthread_create (0: none) */
static atomic_int start_budget = -1; /* tests: workers that may still start (-1: any) */
static atomic_uint generation;
static atomic_int sleepers;
static atomic_int scratch_failed; /* a worker's scratch could not be allocated this job */
static atomic_int waiting;        /* the caller sleeps (or is about to) on `done` */
static atomic_long contended_until; /* CLOCK_MONOTONIC ns: until then spins are short */
static atomic_long solo_until;    /* tests: jobs before it run on the caller alone */
static long backoff;              /* the next contended time (0: none yet); under `busy` */
static atomic_int adaptive = 1;   /* tests: 0 turns the contention watch off */
static atomic_int legacy;         /* benchmarks: the pool before the contention watch (yields
                                     while spinning, solo jobs after a stall) */
static atomic_int fail_scratch;   /* tests: every worker's scratch allocation fails */

/* what the pool did (mi_pool_stats; the order of _native.POOL_STATS) */
enum { ST_PARALLEL, ST_SOLO, ST_CONTENDED, ST_SIGNS, ST_CHUNKS, ST_CALLER_CHUNKS, ST_OWN_NS,
       ST_WAIT_NS, ST_SLEPT, ST_COUNT };
static atomic_long stats[ST_COUNT];
#define STAT_ADD(i, v) atomic_fetch_add_explicit(&stats[i], (v), RELAXED)

static struct {
    mi_part_fn fn;
    const void *arg;
    int parts;
} job;

/* how long a worker spins for the next job before it sleeps, and the caller for the chunks
 * the workers took before it sleeps (the same: a thread that sleeps beside a `nice 19`
 * process hands it the core for the rest of its slice, milliseconds on Linux's EEVDF); the
 * workers do not spin in a contended time */
#define SPIN_NS 300000L
#define WAIT_SPIN_NS SPIN_NS
/* a wait for the workers' chunks this long (and longer than the caller's own part) is a
 * stall; a job whose caller ran every chunk though its own part took IDLE_NS had workers
 * that did not run (a spinning worker on a free core claims a chunk within microseconds,
 * a sleeping one is woken within tens); either starts a contended time, doubled on each
 * further sign up to BACKOFF_MAX_NS */
#define STALL_NS 200000L
#define IDLE_NS 200000L
#define BACKOFF_MIN_NS 2000000L
#define BACKOFF_MAX_NS 128000000L

/* how long a worker spins from `now`: SPIN_NS, none in a contended or a solo time */
static long spin_for(long now, long spin) {
    if (now < atomic_load_explicit(&solo_until, RELAXED) ||
        now < atomic_load_explicit(&contended_until, RELAXED))
        return 0;
    return spin;
}

/* whether a spin yields the core now and then: outside a contended time (a thread the
 * scheduler put on the same core, the caller's Python between two jobs most of all, runs
 * only when the spinner yields it: without the yields, on a loaded 2-core machine, 1-ms
 * models took 1.2-1.5x longer); not in one, where a yield puts the spinner behind every
 * runnable thread of the machine */
static int polite(long now) {
    return now >= atomic_load_explicit(&contended_until, RELAXED);
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* the generation each new worker starts from: the one before the job it is created for (a
 * worker that started from 0 would run a finished job again, from a stale pointer: after a
 * fork, or when the pool grows). Written before pthread_create, which orders it before the
 * worker's first read. The worker's only other state, its scratch, it allocates itself. */
static unsigned start_generation[MAX_THREADS];

/* Chunks of the current job are claimed through one word: the job's generation (high 32
 * bits), its chunk count (16 bits) and the next chunk to take (low 16 bits). A thread takes
 * chunk i by a compare-and-swap from (gen, n, i) to (gen, n, i + 1); a thread that woke too
 * late for a job finds its chunks all taken, or a newer generation, and takes none. The
 * caller returns when `done` reaches the chunk count, so it never waits for a worker that
 * has not started (a worker the scheduler holds back on a busy machine), only for chunks
 * being computed. */
static _Atomic uint64_t claim;
static atomic_int done;

#define CLAIM(gen, n, next) (((uint64_t)(gen) << 32) | ((uint64_t)(n) << 16) | (uint64_t)(next))

static void wake_workers(void) {
    syscall(SYS_futex, &generation, FUTEX_WAKE_PRIVATE, MAX_THREADS, NULL, NULL, 0);
}

/* run chunks of job `gen` until none is left, and return how many this thread ran; the job's
 * fields are stable while a chunk of it is claimed and not done (the caller waits for it
 * before publishing another). */
static int run_chunks(unsigned gen) {
    int ran = 0;
    for (;;) {
        uint64_t w = atomic_load_explicit(&claim, memory_order_acquire);
        int n = (int)((w >> 16) & 0xffff), next = (int)(w & 0xffff);
        if ((unsigned)(w >> 32) != gen || next >= n) return ran;
        if (!atomic_compare_exchange_weak_explicit(&claim, &w, w + 1, memory_order_acq_rel,
                                                   memory_order_relaxed))
            continue;
        job.fn(job.arg, next, n);
        ran++;
        /* seq_cst: the release of this chunk's outputs, then `waiting` (the handshake) */
        if (atomic_fetch_add(&done, 1) + 1 == n && atomic_load(&waiting))
            syscall(SYS_futex, &done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned seen = start_generation[id];
    for (;;) {
        long now = now_ns();
        long deadline = now + spin_for(now, SPIN_NS);
        int yields = polite(now);
        unsigned cur;
        for (unsigned spins = 0;
             (cur = atomic_load_explicit(&generation, memory_order_acquire)) == seen;) {
            if (deadline <= now || (++spins % 64 == 0 && now_ns() >= deadline)) {
                atomic_fetch_add(&sleepers, 1);
                if (atomic_load(&generation) == seen)
                    syscall(SYS_futex, &generation, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
                atomic_fetch_sub(&sleepers, 1);
                now = now_ns();
                deadline = now + spin_for(now, SPIN_NS);
                yields = polite(now);
            } else if (spins % 16 == 0 && yields) {
                sched_yield();
            } else {
                cpu_relax();
            }
        }
        seen = cur;
        run_chunks(cur);
    }
    return NULL;
}

static atomic_int budget = 0; /* the process's CPU budget (0: not given) */

/* the default thread count: the CPUs this thread may run on, or the CPU budget the library's
 * user gave (mi_pool_set_budget: the cgroup quota counted in) where that is fewer */
static int cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    int b = atomic_load_explicit(&budget, RELAXED);
    if (b > 0) n = lmin(n, b);
    return (int)lmax(1, lmin(n, MAX_THREADS));
}

void mi_pool_set_budget(int n) { atomic_store_explicit(&budget, n < 0 ? 0 : n, RELAXED); }

void mi_pool_set_threads(int n) {
    atomic_store_explicit(&wanted, n < 1 ? 0 : (n > MAX_THREADS ? MAX_THREADS : n), RELAXED);
    atomic_store_explicit(&limit, 0, RELAXED); /* try again to start what is missing */
}

int mi_pool_get_threads(void) {
    int want = atomic_load_explicit(&wanted, RELAXED);
    int most = atomic_load_explicit(&limit, RELAXED);
    if (!want) want = cores();
    return most && want > most ? most : want;
}

int mi_pool_started(void) { return atomic_load_explicit(&started, RELAXED); }

int mi_pool_start_error(void) { return atomic_load_explicit(&start_error, RELAXED); }

void mi_pool_fail_start(int after) { atomic_store_explicit(&start_budget, after, RELAXED); }

/* start workers until `want` threads exist (the caller holds `busy`); a worker that cannot
 * start keeps nothing (its attributes are destroyed, its slot is reused by the next try),
 * and the pool stays at the threads it has until the count is set again */
static int grow_to(int want) {
    int have = atomic_load_explicit(&started, RELAXED);
    while (have < want) {
        pthread_t t;
        pthread_attr_t attr;
        int rc = pthread_attr_init(&attr);
        if (rc == 0) {
            rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            int budget = atomic_load_explicit(&start_budget, RELAXED);
            if (rc == 0 && budget == 0) {
                rc = EAGAIN; /* tests: as when the system has no thread left to give */
            } else if (rc == 0) {
                start_generation[have] = atomic_load_explicit(&generation, RELAXED);
                rc = pthread_create(&t, &attr, worker, (void *)(intptr_t)have);
                if (rc == 0 && budget > 0)
                    atomic_store_explicit(&start_budget, budget - 1, RELAXED);
            }
            pthread_attr_destroy(&attr);
        }
        if (rc != 0) {
            atomic_store_explicit(&start_error, rc, RELAXED);
            atomic_store_explicit(&limit, have, RELAXED);
            break;
        }
        have++;
        atomic_store_explicit(&started, have, RELAXED);
    }
    return have;
}

/* chunks per thread: a job is claimed piece by piece, so a thread the scheduler holds back
 * (a busy machine) delays it by one small chunk at most, and the others take the rest */
#define CHUNKS_PER_THREAD 4

/* wait until `done` reaches `chunks`: spin for WAIT_SPIN_NS or as long as the caller's own
 * part took, whichever is longer (the workers' chunks end about when the caller's do; a
 * worker that claimed one was running then), then sleep on `done` so that a worker
 * preempted with a chunk can have this core */
static void wait_done(int chunks, long own_ns) {
    long deadline = 0;
    int yields = polite(now_ns());
    for (unsigned spins = 1;; spins++) {
        int d = atomic_load_explicit(&done, memory_order_acquire);
        if (d >= chunks) return;
        if (spins % 64 != 0) {
            if (spins % 16 == 0 && yields) sched_yield();
            else cpu_relax();
            continue;
        }
        long now = now_ns();
        if (!deadline) deadline = now + lmax(WAIT_SPIN_NS, own_ns);
        if (now < deadline) continue;
        atomic_store(&waiting, 1); /* seq_cst: then re-read `done` (the handshake) */
        d = atomic_load(&done);
        if (d < chunks) {
            syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, d, NULL, NULL, 0);
            STAT_ADD(ST_SLEPT, 1);
        }
        atomic_store_explicit(&waiting, 0, RELAXED);
    }
}

/* after a parallel job in which the caller ran `mine` of `chunks`: a sign of contention (a
 * stall, or workers that ran nothing in IDLE_NS) starts a contended time, doubling; a job
 * outside one without a sign halves the next (a job inside one, its workers woken for it,
 * says nothing of how they would do spinning) */
static void learn(long start, long own_done, long end, int mine, int chunks) {
    if (!atomic_load_explicit(&adaptive, RELAXED)) return;
    long own = own_done - start, wait = end - own_done;
    int stall = wait > STALL_NS && wait > own;
    int old = atomic_load_explicit(&legacy, RELAXED);
    int idle = mine == chunks && own > IDLE_NS && !old;
    if (stall || idle) {
        STAT_ADD(ST_SIGNS, 1);
        backoff = backoff ? lmin(2 * backoff, BACKOFF_MAX_NS) : BACKOFF_MIN_NS;
        atomic_store_explicit(old ? &solo_until : &contended_until, end + backoff, RELAXED);
    } else if (backoff && (old || start >= atomic_load_explicit(&contended_until, RELAXED))) {
        backoff = backoff / 2 < BACKOFF_MIN_NS ? 0 : backoff / 2;
    }
}

void mi_pool_set_adaptive(int mode) {
    atomic_store_explicit(&adaptive, mode == 1 || mode == 4, RELAXED);
    atomic_store_explicit(&legacy, mode == 4, RELAXED);
    atomic_store_explicit(&solo_until, mode == 2 ? LONG_MAX : 0, RELAXED);
    atomic_store_explicit(&contended_until, mode == 3 ? LONG_MAX : 0, RELAXED);
}

int mi_pool_stats(long *out, int n) {
    for (int i = 0; out && i < n && i < ST_COUNT; i++)
        out[i] = atomic_load_explicit(&stats[i], RELAXED);
    return ST_COUNT;
}

void mi_pool_reset_stats(void) {
    for (int i = 0; i < ST_COUNT; i++) atomic_store_explicit(&stats[i], 0, RELAXED);
}

int mi_pool_run(mi_part_fn fn, const void *arg) {
    int want = mi_pool_get_threads();
    long start = now_ns();
    /* alone: one thread wanted, a stall's solo time, or another thread's job running */
    if (want <= 1 || start < atomic_load_explicit(&solo_until, RELAXED) ||
        pthread_mutex_trylock(&busy) != 0) {
        if (want > 1)
            STAT_ADD(start < atomic_load_explicit(&solo_until, RELAXED) ? ST_SOLO : ST_CONTENDED,
                     1);
        fn(arg, 0, 1);
        return 0;
    }
    int have = grow_to(want);
    int threads = want < have ? want : have;
    int chunks = threads * CHUNKS_PER_THREAD;
    atomic_store_explicit(&scratch_failed, 0, RELAXED);
    job.fn = fn;
    job.arg = arg;
    job.parts = chunks;
    atomic_store_explicit(&done, 0, RELAXED);
    unsigned gen = atomic_load_explicit(&generation, RELAXED) + 1;
    atomic_store_explicit(&claim, CLAIM(gen, chunks, 0), memory_order_release);
    atomic_fetch_add(&generation, 1); /* seq_cst: publishes the job, then reads sleepers */
    if (atomic_load(&sleepers) > 0) wake_workers(); /* seq_cst: see `sleepers` */
    int mine = run_chunks(gen);
    long own_done = now_ns();
    wait_done(chunks, own_done - start); /* the chunks other threads took */
    long end = now_ns();
    learn(start, own_done, end, mine, chunks);
    STAT_ADD(ST_PARALLEL, 1);
    STAT_ADD(ST_CHUNKS, chunks);
    STAT_ADD(ST_CALLER_CHUNKS, mine);
    STAT_ADD(ST_OWN_NS, own_done - start);
    STAT_ADD(ST_WAIT_NS, end - own_done);
    int failed = atomic_load_explicit(&scratch_failed, RELAXED);
    pthread_mutex_unlock(&busy);
    return failed;
}

void mi_pool_fail_scratch(int on) { atomic_store_explicit(&fail_scratch, on, RELAXED); }

/* each thread's scratch: kept for its next job, freed when the thread exits (a caller's
 * thread, e.g. one of an application's thread pool: `scratch_key`'s destructor); the main
 * thread's lives until the process exits */
static _Thread_local float *buf;
static _Thread_local long size;
static pthread_key_t scratch_key;
static int scratch_key_made; /* 0: no key (pthread_key_create failed): the buffers leak */

/* at the exit of a thread that has scratch (the buffer is `buf`, in this thread); a thread's
 * later destructor that asks for scratch again gets a new one, freed on the next round */
static void free_scratch(void *p) {
    free(p);
    buf = NULL;
    size = 0;
}

float *mi_pool_scratch(long n) {
    if (atomic_load_explicit(&fail_scratch, RELAXED)) {
        atomic_store_explicit(&scratch_failed, 1, RELAXED);
        return NULL;
    }
    if (n > size) {
        float *grown = realloc(buf, sizeof(float) * (size_t)n);
        if (!grown) {
            atomic_store_explicit(&scratch_failed, 1, RELAXED);
            return NULL;
        }
        buf = grown;
        size = n;
        if (scratch_key_made) pthread_setspecific(scratch_key, grown);
    }
    return buf;
}

/* in the child, which has only the thread that forked: no workers, nobody asleep, no limit
 * learnt from the parent's failures, and the mutex free (another thread of the parent may
 * have held it) */
static void after_fork(void) {
    atomic_store_explicit(&started, 1, RELAXED);
    atomic_store_explicit(&sleepers, 0, RELAXED);
    atomic_store_explicit(&limit, 0, RELAXED);
    atomic_store_explicit(&start_error, 0, RELAXED);
    atomic_store_explicit(&waiting, 0, RELAXED);
    pthread_mutex_init(&busy, NULL);
}

__attribute__((constructor)) static void register_fork_handler(void) {
    pthread_atfork(NULL, NULL, after_fork);
    scratch_key_made = pthread_key_create(&scratch_key, free_scratch) == 0;
}
