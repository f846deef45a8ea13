/* com.microsoft's QLinearGlobalAveragePool on an NHWC 8-bit tensor (qlayout.py): each image's
 * channel sums over its hw pixels in int32, then onnxruntime's requantization (MLAS's
 * MlasQLinearGlobalAveragePoolNhwc and MlasRequantizeOutput, and cpu_basic's NumPy kernel):
 *
 *   y[b, ch] = sat(rint((float)(sum - zx * hw) * mult) + zy)    mult = sx / (sy * (float)hw)
 *
 * mult computed by the caller in float32, rounding half to even (rintf in the default
 * rounding mode; vrndscaleps to nearest), saturation to uint8 or int8. The sums are exact
 * (hw <= MI_QGAP_MAX_HW: 255 * hw fits int32) and one float multiply follows them, so every
 * ISA level gives the same bytes. Sums at the integer GEMM's level (mi_qgemm_isa, which the
 * tests cap): AVX-512 (3) 16 channels a step with a masked tail, AVX2 (1, 2) 8 channels a step
 * and the rest plain, or plain C (0). Shared out on the pool by (image, 64 channels) from
 * 64 KiB of input on. */

#include <math.h>
#include <stdint.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

int mi_qgemm_isa(void); /* _qgemm.c */

/* channels a pool part takes */
#define QGAP_BLOCK 64

/* sums of channels [0, w) (w <= QGAP_BLOCK) of hw pixels c bytes apart, plain */
#define QGAP_SUM_PLAIN(T)                                                                   \
    do {                                                                                    \
        const T *restrict p = (const T *)x;                                                 \
        for (long j = 0; j < w; j++) acc[j] = 0;                                            \
        for (long i = 0; i < hw; i++, p += c)                                               \
            for (long j = 0; j < w; j++) acc[j] += p[j];                                    \
    } while (0)

static void qgap_sum_plain(const uint8_t *x, long hw, long c, long w, int sgn, int32_t *acc) {
    if (sgn)
        QGAP_SUM_PLAIN(int8_t);
    else
        QGAP_SUM_PLAIN(uint8_t);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QGAP_X86 1

__attribute__((target("avx2"))) static void qgap_sum_avx2(const uint8_t *x, long hw, long c,
                                                         long w, int sgn, int32_t *acc) {
    long j = 0;
    for (; j + 8 <= w; j += 8) {
        __m256i s = _mm256_setzero_si256();
        const uint8_t *p = x + j;
        if (sgn)
            for (long i = 0; i < hw; i++, p += c)
                s = _mm256_add_epi32(s, _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
        else
            for (long i = 0; i < hw; i++, p += c)
                s = _mm256_add_epi32(s, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
        _mm256_storeu_si256((__m256i *)(acc + j), s);
    }
    if (j < w) qgap_sum_plain(x + j, hw, c, w - j, sgn, acc + j);
}

#define Q512 __attribute__((target("avx512f,avx512bw,avx512vl")))
Q512 static void qgap_sum_512(const uint8_t *x, long hw, long c, long w, int sgn,
                              int32_t *acc) {
    for (long j = 0; j < w; j += 16) {
        const __mmask16 k = w - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (w - j)) - 1);
        __m512i s = _mm512_setzero_si512();
        const uint8_t *p = x + j;
        if (sgn)
            for (long i = 0; i < hw; i++, p += c)
                s = _mm512_add_epi32(s, _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, p)));
        else
            for (long i = 0; i < hw; i++, p += c)
                s = _mm512_add_epi32(s, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, p)));
        _mm512_mask_storeu_epi32(acc + j, k, s);
    }
}
#undef Q512
#endif

/* image b's channels [c0, c0 + w): summed at the level chosen, then requantized */
static void qgap_block(const mi_qgap_args *a, long b, long c0, long w, int level) {
    int32_t acc[QGAP_BLOCK];
    const uint8_t *x = (const uint8_t *)a->x + b * a->hw * a->c + c0;
    const int sgn = a->is_signed;
#ifdef QGAP_X86
    if (level >= 3)
        qgap_sum_512(x, a->hw, a->c, w, sgn, acc);
    else if (level >= 1)
        qgap_sum_avx2(x, a->hw, a->c, w, sgn, acc);
    else
#endif
        qgap_sum_plain(x, a->hw, a->c, w, sgn, acc);
    (void)level;
    const int32_t bias = -a->zx * (int32_t)a->hw;
    const float mult = a->mult, zy = (float)a->zy;
    const float lo = sgn ? -128.0f : 0.0f, hi = sgn ? 127.0f : 255.0f;
    uint8_t *y = (uint8_t *)a->y + b * a->c + c0;
    for (long j = 0; j < w; j++) {
        float v = rintf((float)(acc[j] + bias) * mult) + zy;
        v = v < lo ? lo : v > hi ? hi : v;
        const int32_t q = (int32_t)v;
        y[j] = sgn ? (uint8_t)(int8_t)q : (uint8_t)q;
    }
}

typedef struct {
    const mi_qgap_args *a;
    int level;
} qgap_job;

static void qgap_part(const void *job, int part, int parts) {
    const qgap_job *j = job;
    const long blocks = (j->a->c + QGAP_BLOCK - 1) / QGAP_BLOCK;
    long u0, u1;
    mi_pool_share(j->a->n * blocks, part, parts, &u0, &u1);
    for (long u = u0; u < u1; u++) {
        const long c0 = (u % blocks) * QGAP_BLOCK;
        qgap_block(j->a, u / blocks, c0, lmin(QGAP_BLOCK, j->a->c - c0), j->level);
    }
}

int mi_qgap_i8(const mi_qgap_args *a) {
    if (!a->x || !a->y || ANY_NEGATIVE(a->n, a->hw, a->c) || a->hw > MI_QGAP_MAX_HW ||
        a->is_signed < 0 || a->is_signed > 1 || a->zx < -128 || a->zx > 255 ||
        a->zy < -128 || a->zy > 255)
        return MI_EARGS;
    const qgap_job j = {a, mi_qgemm_isa()};
    if (a->n * a->hw * a->c < 65536L || mi_pool_run(qgap_part, &j) != 0) qgap_part(&j, 0, 1);
    return MI_OK;
}
