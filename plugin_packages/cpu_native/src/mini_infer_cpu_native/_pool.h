/* The compiled kernels' thread pool (_pool.c). */
#ifndef MI_POOL_H
#define MI_POOL_H

/* one part of a job: the caller runs part 0, each worker one of the others */
typedef void (*mi_part_fn)(const void *job, int part, int parts);

/* run fn(arg, part, parts) for every part in [0, parts), parts = the pool's thread count (1
 * while another thread's job runs: then the caller runs it alone), and return when all are
 * done: 0, or 1 if a part could not get its scratch (mi_pool_scratch returned NULL) and so
 * did nothing, in which case the caller runs the whole job again alone, with its own buffers */
int mi_pool_run(mi_part_fn fn, const void *arg);

/* threads a job uses (default: the cores this process may run on); 0 restores the default */
int mi_pool_get_threads(void);
void mi_pool_set_threads(int n);

/* a float buffer of at least n floats owned by the calling thread (kept for its next job;
 * NULL if memory runs out: the part returns at once, and mi_pool_run says so) */
float *mi_pool_scratch(long n);
void mi_pool_fail_scratch(int on); /* tests: make every mi_pool_scratch fail */

/* [begin, end) of `total` items for part `part` of `parts` */
static inline void mi_pool_share(long total, int part, int parts, long *begin, long *end) {
    *begin = total * part / parts;
    *end = total * (part + 1) / parts;
}

#endif
