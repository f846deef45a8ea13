/* The compiled kernels' thread pool (_pool.c). */
#ifndef MI_POOL_H
#define MI_POOL_H

/* one part of a job: the threads of the pool claim the parts one by one */
typedef void (*mi_part_fn)(const void *job, int part, int parts);

/* run fn(arg, part, parts) for every part in [0, parts), parts = a few per thread the pool
 * has for it (1 while another thread's job runs: then the caller runs it alone), each part
 * on whichever thread claims it, and return when all are done: 0, or 1 if a part could not
 * get its scratch (mi_pool_scratch returned NULL) and so did nothing, in which case the
 * caller runs the whole job again alone, with its own buffers */
int mi_pool_run(mi_part_fn fn, const void *arg);

/* threads a job uses: the count set (default: the cores this process may run on), or
 * fewer once a worker could not be started (see mi_pool_started); setting a count (0: the
 * default) lets the pool try again to start what it lacks */
int mi_pool_get_threads(void);
void mi_pool_set_threads(int n);

/* the process's CPU budget (affinity and cgroup quota, read by mini_infer_core.threads): the
 * default thread count is at most this (0: the affinity alone) */
void mi_pool_set_budget(int n);

/* threads that exist, the caller included (workers start at the first job that needs them),
 * and the error of the last pthread_create that failed (0: none) */
int mi_pool_started(void);
int mi_pool_start_error(void);

/* a float buffer of at least n floats owned by the calling thread (kept for its next job;
 * NULL if memory runs out: the part returns at once, and mi_pool_run says so) */
float *mi_pool_scratch(long n);

/* tests: make every mi_pool_scratch fail (on != 0); let only `after` more workers start, the
 * next ones failing as pthread_create does without resources (after < 0: no limit) */
void mi_pool_fail_scratch(int on);
void mi_pool_fail_start(int after);
/* tests: 0 turns off the contention watch (the workers spin after every job as on a quiet
 * machine), 1 turns it on (the default), 2 runs every job on the caller alone, 3 as in a
 * contended time for good (no spins: the workers sleep after every job and every job
 * wakes them); 4 (benchmarks) as
 * before the contention watch: spins that yield the core, jobs on the caller alone after a
 * stall; each ends the previous mode's solo or contended time */
void mi_pool_set_adaptive(int mode);

/* what the pool did since the last mi_pool_reset_stats, into out[0..n): jobs run in
 * parallel, jobs run on the caller alone (mi_pool_set_adaptive(2)), jobs run alone because
 * another thread's job held the pool, signs of contention seen, chunks of the parallel
 * jobs, chunks of them the caller ran, ns the callers spent on their own chunks, ns they
 * then waited for the workers', waits that went to sleep; returns the count of figures (9) */
int mi_pool_stats(long *out, int n);
void mi_pool_reset_stats(void);

/* [begin, end) of `total` items for part `part` of `parts` */
static inline void mi_pool_share(long total, int part, int parts, long *begin, long *end) {
    *begin = total * part / parts;
    *end = total * (part + 1) / parts;
}

#endif
