/* The compiled kernels' thread pool: the calling thread plus workers started on first use.
 *
 * A job is split in as many parts as threads; the caller runs part 0 and waits for the rest.
 * Workers spin for SPIN_NS after each job (in an engine run the next one comes within tens of
 * microseconds, and a futex wake costs more than that), yielding the core now and then (a
 * thread woken onto the caller's core runs only when the caller yields it), and then sleep
 * on a futex. One job at a time: a job submitted while another thread's runs is run by its
 * caller alone. After fork() the child starts without workers and makes its own.
 */
#define _GNU_SOURCE
#include "_pool.h"

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

static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;  /* one job at a time */
static pthread_mutex_t grow = PTHREAD_MUTEX_INITIALIZER;
static int nthreads = 1;      /* threads that take part in a job (caller included) */
static int started = 1;       /* threads that exist (caller included) */
static int wanted = 0;        /* 0: not set yet (all cores) */
static atomic_uint generation;
static atomic_int sleepers;
static atomic_int remaining;
static mi_part_fn job_fn;
static const void *job_arg;
static int job_parts;

/* how long a worker spins for the next job before it sleeps */
#define SPIN_NS 300000L

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* the generation each new worker starts from: the one before the job it is created for (a
 * worker that started from 0 would run a finished job again, from a stale pointer: after a
 * fork, or when the pool grows) */
static unsigned start_generation[MAX_THREADS];

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned seen = start_generation[id];
    for (;;) {
        long deadline = now_ns() + SPIN_NS;
        unsigned spins = 0;
        unsigned cur;
        while ((cur = atomic_load_explicit(&generation, memory_order_acquire)) == seen) {
            if (++spins % 256 == 0 && now_ns() > deadline) {
                atomic_fetch_add(&sleepers, 1);
                if (atomic_load(&generation) == seen)
                    syscall(SYS_futex, &generation, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
                atomic_fetch_sub(&sleepers, 1);
                deadline = now_ns() + SPIN_NS;
            } else if (spins % 16 == 0) {
                sched_yield();  /* a thread waiting for this core (the caller?) goes first */
            } else {
                cpu_relax();
            }
        }
        seen = cur;
        if (id < job_parts) job_fn(job_arg, id, job_parts);
        atomic_fetch_sub_explicit(&remaining, 1, memory_order_acq_rel);
    }
    return NULL;
}

static int cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    return (int)lmax(1, lmin(n, MAX_THREADS));
}

void mi_pool_set_threads(int n) {
    wanted = n < 1 ? 0 : (n > MAX_THREADS ? MAX_THREADS : n);
}

int mi_pool_get_threads(void) { return wanted ? wanted : cores(); }

/* set when a worker's scratch could not be allocated during the running job */
static atomic_int scratch_failed;

int mi_pool_run(mi_part_fn fn, const void *arg) {
    int want = mi_pool_get_threads();
    if (want <= 1 || pthread_mutex_trylock(&busy) != 0) {  /* another thread's job: alone */
        fn(arg, 0, 1);
        return 0;
    }
    atomic_store(&scratch_failed, 0);
    pthread_mutex_lock(&grow);
    while (started < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        start_generation[started] = atomic_load(&generation);
        if (pthread_create(&t, &attr, worker, (void *)(intptr_t)started) != 0) break;
        pthread_attr_destroy(&attr);
        started++;
    }
    pthread_mutex_unlock(&grow);
    nthreads = want < started ? want : started;
    job_fn = fn;
    job_arg = arg;
    job_parts = nthreads;
    atomic_store_explicit(&remaining, started - 1, memory_order_release);
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
    if (atomic_load(&sleepers) > 0)
        syscall(SYS_futex, &generation, FUTEX_WAKE_PRIVATE, MAX_THREADS, NULL, NULL, 0);
    fn(arg, 0, nthreads);
    /* a worker woken onto the caller's core runs only when the caller yields it */
    for (unsigned spins = 1; atomic_load_explicit(&remaining, memory_order_acquire) > 0; spins++)
        if (spins % 16 == 0) sched_yield(); else cpu_relax();
    int failed = atomic_load(&scratch_failed);
    pthread_mutex_unlock(&busy);
    return failed;
}


/* tests: every worker's scratch allocation fails, as when memory runs out */
static atomic_int fail_scratch;
void mi_pool_fail_scratch(int on) { atomic_store(&fail_scratch, on); }

float *mi_pool_scratch(long n) {
    static _Thread_local float *buf;
    static _Thread_local long size;
    if (atomic_load(&fail_scratch)) {
        atomic_store(&scratch_failed, 1);
        return NULL;
    }
    if (n > size) {
        float *grown = realloc(buf, sizeof(float) * (size_t)n);
        if (!grown) {
            atomic_store(&scratch_failed, 1);
            return NULL;
        }
        buf = grown;
        size = n;
    }
    return buf;
}

static void after_fork(void) {
    started = 1;
    atomic_store(&sleepers, 0);
    pthread_mutex_init(&busy, NULL);
    pthread_mutex_init(&grow, NULL);
}

__attribute__((constructor)) static void register_fork_handler(void) {
    pthread_atfork(NULL, NULL, after_fork);
}
