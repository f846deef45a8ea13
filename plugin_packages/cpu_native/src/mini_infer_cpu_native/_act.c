/*
 * Elementwise activations (Erf, Gelu, Sigmoid, Swish, HardSigmoid, HardSwish, Tanh,
 * LeakyRelu, Exp), Softmax / LogSoftmax along any axis, and LayerNormalization, in float32,
 * each in one pass over memory (a row read once from memory, then from cache).
 *
 * The math is _act.h's; the loops (_act_loops.h) are compiled three times, for AVX-512F,
 * AVX2+FMA and plain C, and the copy is chosen at run time by the CPU's features (once:
 * mi_act_isa; tests choose a lower one with mi_act_set_isa). The choice is read once per
 * call, so every part of a job runs the same copy, and results do not depend on the thread
 * count (each output is computed by one thread, from its own row).
 *
 * On the library's pool (_pool.c) once a job is large enough to pay for the hand-off
 * (PARALLEL_MIN floats): elementwise ones split in ranges of whole cache lines, the others
 * by rows (or, along an inner axis, by blocks of neighbouring positions). Arguments: one
 * struct per entry point (_args.h).
 */
#include <stdatomic.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

#define MI_ACT_EXTRA "_act_loops.h"
#include "_act.h"

#define PARALLEL_MIN 16384L

/* ---- the copy this CPU runs ----------------------------------------------------------- */

static int best_isa(void) {
#if MI_ACT_X86
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0;
    return __builtin_cpu_supports("avx512f") ? 2 : 1;
#else
    return 0;
#endif
}

/* -1 until first asked; relaxed: a call reads it once, into its job */
static atomic_int isa = -1;

int mi_act_isa(void) { return cached_isa(&isa, best_isa); }

void mi_act_set_isa(int most) {
    int best = best_isa();
    atomic_store_explicit(&isa, most < 0 || most > best ? best : most, memory_order_relaxed);
}

/* lanes of the copy `level` runs */
static long isa_lanes(int level) { return level == 2 ? 16 : level == 1 ? 8 : 1; }

/* ---- elementwise ---------------------------------------------------------------------- */

typedef struct {
    const mi_act_args *a;
    int isa;
} act_job;

static void act_range(const act_job *j, long i0, long i1) {
    BY_ISA(j->isa, mi_act_range, j->a, i0, i1);
}

/* ranges of whole 64-byte lines (16 floats), the last part to the end */
static void act_part(const void *arg, int part, int parts) {
    const act_job *j = arg;
    long n = j->a->n;
    long i0 = (n * part / parts) & ~15L;
    long i1 = part == parts - 1 ? n : (n * (part + 1) / parts) & ~15L;
    if (i0 < i1) act_range(j, i0, i1);
}

int mi_act_f32(const mi_act_args *a) {
    if (!a->x || !a->y || a->n < 0 || a->op < 0 || a->op >= MI_ACT_COUNT) return MI_EARGS;
    act_job j = {a, mi_act_isa()};
    if (a->n < PARALLEL_MIN)
        act_range(&j, 0, a->n);
    else
        mi_pool_run(act_part, &j);
    return MI_OK;
}

/* ---- Softmax / LogSoftmax ------------------------------------------------------------- */

typedef struct {
    const mi_softmax_args *a;
    int isa;
    long nblk; /* blocks of lanes per outer index (inner > 1) */
} softmax_job;

static void softmax_range(const softmax_job *j, long u0, long u1) {
    const mi_softmax_args *a = j->a;
    if (a->inner == 1)
        BY_ISA(j->isa, mi_softmax_rows, a->x, a->y, a->n, u0, u1, a->log);
    else
        BY_ISA(j->isa, mi_softmax_strided, a->x, a->y, a->n, a->inner, j->nblk, u0, u1, a->log);
}

static long softmax_units(const softmax_job *j) {
    return j->a->inner == 1 ? j->a->outer : j->a->outer * j->nblk;
}

static void softmax_part(const void *arg, int part, int parts) {
    const softmax_job *j = arg;
    long u0, u1;
    mi_pool_share(softmax_units(j), part, parts, &u0, &u1);
    if (u0 < u1) softmax_range(j, u0, u1);
}

int mi_softmax_f32(const mi_softmax_args *a) {
    if (!a->x || !a->y || ANY_NEGATIVE(a->outer, a->n, a->inner)) return MI_EARGS;
    if (a->outer == 0 || a->n == 0 || a->inner == 0) return MI_OK;
    softmax_job j = {a, mi_act_isa(), 0};
    long w = isa_lanes(j.isa);
    j.nblk = (a->inner + w - 1) / w;
    long units = softmax_units(&j);
    if (a->outer * a->n * a->inner < PARALLEL_MIN || units < 2)
        softmax_range(&j, 0, units);
    else
        mi_pool_run(softmax_part, &j);
    return MI_OK;
}

/* ---- LayerNormalization --------------------------------------------------------------- */

typedef struct {
    const mi_layer_norm_args *a;
    int isa;
} layer_norm_job;

static void layer_norm_range(const layer_norm_job *j, long r0, long r1) {
    BY_ISA(j->isa, mi_layer_norm_rows, j->a, r0, r1);
}

static void layer_norm_part(const void *arg, int part, int parts) {
    const layer_norm_job *j = arg;
    long r0, r1;
    mi_pool_share(j->a->rows, part, parts, &r0, &r1);
    if (r0 < r1) layer_norm_range(j, r0, r1);
}

/* n >= 1: the mean of no values is not defined */
int mi_layer_norm_f32(const mi_layer_norm_args *a) {
    if (!a->x || !a->scale || !a->y || a->rows < 0 || a->n < 1) return MI_EARGS;
    layer_norm_job j = {a, mi_act_isa()};
    if (a->rows * a->n < PARALLEL_MIN || a->rows < 2)
        layer_norm_range(&j, 0, a->rows);
    else
        mi_pool_run(layer_norm_part, &j);
    return MI_OK;
}
