/* The integer GEMM's AMX level (included by _qgemm.c, which defines qjob, the AVX-512 VNNI
 * micro-kernels and the epilogue used here).
 *
 * Intel AMX (Sapphire Rapids and later): tdpbusd multiplies a tile of 16 rows x 64 bytes of
 * uint8 A by a tile of 16 quads x 64 bytes of int8 B into 16 x 16 int32 sums: 16,384
 * multiply-adds an instruction, 8-16x a 512-bit vpdpbusd's work. B's packed panels
 * (16 columns, quads of [16 columns][4 k], one 64-byte line a quad) are AMX's B tile layout
 * already, 16 quads (1 KiB) a tile; A is read row-major as the AVX-512 VNNI kernels read it
 * (in place, or from a part's buffer), 64 bytes of K a tile row, `lda` bytes apart.
 *
 * The level runs the AVX-512 VNNI code everywhere (rows, panels, the fused requantizing
 * tiles) except where a part has 16 or 32 whole rows (2 or 4 full row panels in a row), a
 * full column pair and K of 64 or more: those sums are made by tdpbusd over K's whole 64-byte
 * chunks, K's last quads (fewer than 16, and B's padded k % 4 tail) added by micro_512_8,
 * then q_epi_512's epilogue over the stored tiles (q_amx_epi: the same operations). The sums
 * are exact int32, so the results are bit-identical to every other level's.
 *
 * The OS must grant the process the tile data state (Linux: arch_prctl ARCH_REQ_XCOMP_PERM,
 * once); the level is only chosen where that succeeds. Each part loads the tile
 * configuration (8 tiles of 16 rows x 64 bytes) before its first tile and releases the
 * tiles when done, so a thread holds no tile state between products. */
#ifndef MI_QAMX_H
#define MI_QAMX_H

#if Q_HAVE_X86 && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#define Q_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vnni")))
#define Q_HAVE_AMX 1
#define Q_ARCH_REQ_XCOMP_PERM 0x1023
#define Q_XFEATURE_XTILEDATA 18

/* the CPU has AMX-TILE and AMX-INT8 (CPUID.7.0:EDX bits 24 and 25) and the OS grants this
 * process the tile data (asked once) */
static int q_amx_usable(void) {
    static atomic_int state = -1;
    int s = atomic_load_explicit(&state, memory_order_relaxed);
    if (s >= 0) return s;
    unsigned a, b, c, d;
    s = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1) && (d >> 25 & 1))
        s = syscall(SYS_arch_prctl, Q_ARCH_REQ_XCOMP_PERM, Q_XFEATURE_XTILEDATA) == 0;
    atomic_store_explicit(&state, s, memory_order_relaxed);
    return s;
}

/* ldtilecfg's 64-byte operand: palette 1, tiles 0-7 of 16 rows x 64 bytes */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} q_tilecfg;

Q_AMX static void q_amx_begin(void) {
    q_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    /* not _tile_loadconfig: GCC 12's names 8 bytes as its operand, so the stores of the
     * rest of the configuration were dropped as dead */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

Q_AMX static void q_amx_end(void) { _tile_release(); }

/* 32 rows (a, lda apart) x 32 columns (B's panels at b0 and b1): the sums over nc chunks of
 * 16 quads into acc0 (columns 0-15) and acc1 (16-31), each 32 rows x 16 (row-major, QNB
 * apart). Tiles: C 0-3, A 4-5, B 6-7. */
Q_AMX static void q_amx_32x32(const uint8_t *a, long lda, const int8_t *b0, const int8_t *b1,
                              long nc, int32_t *acc0, int32_t *acc1) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const uint8_t *a1 = a + 16 * lda;
    for (long c = 0; c < nc; c++) {
        _tile_loadd(4, a + 64 * c, lda);
        _tile_loadd(6, b0 + 1024 * c, 64);
        _tile_loadd(7, b1 + 1024 * c, 64);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_loadd(5, a1 + 64 * c, lda);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
    }
    _tile_stored(0, acc0, 64);
    _tile_stored(1, acc1, 64);
    _tile_stored(2, acc0 + 16 * QNB, 64);
    _tile_stored(3, acc1 + 16 * QNB, 64);
}

/* the same for 16 rows */
Q_AMX static void q_amx_16x32(const uint8_t *a, long lda, const int8_t *b0, const int8_t *b1,
                              long nc, int32_t *acc0, int32_t *acc1) {
    _tile_zero(0);
    _tile_zero(1);
    for (long c = 0; c < nc; c++) {
        _tile_loadd(4, a + 64 * c, lda);
        _tile_loadd(6, b0 + 1024 * c, 64);
        _tile_loadd(7, b1 + 1024 * c, 64);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
    }
    _tile_stored(0, acc0, 64);
    _tile_stored(1, acc1, 64);
}

/* the epilogue of `rows` rows (sums in t, QNB apart; row sums 8 a panel in rs) of the 16
 * columns from j0, from row i0: q_epi_512's operations in its order (so the same bits), the
 * column vectors loaded once and the output's kind chosen once for all the rows */
Q_AVX512VNNI static void q_amx_epi(const qjob *g, const int32_t *t, long rows, long i0,
                                   const int32_t *const *rs, long j0) {
    const __m512i ct = _mm512_loadu_si512((const void *)(g->colterm + j0));
    const __m512i zb = g->zb_step ? _mm512_loadu_si512((const void *)(g->zb + j0))
                                  : _mm512_set1_epi32(g->zb[0]);
    const int sums = g->rowsums;
#define Q_AMX_SUMS(r)                                                                            __m512i v = _mm512_add_epi32(_mm512_loadu_si512((const void *)(t + (r) * QNB)), ct);          if (sums) {                                                                                      const int32_t s_ = rs[(r) / QMR_MAX][(r) % QMR_MAX];                                          v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(s_)));                  }
    if (g->out == MI_Q_INT32) {
        for (long r = 0; r < rows; r++) {
            Q_AMX_SUMS(r);
            _mm512_storeu_si512((void *)((int32_t *)g->c + (i0 + r) * g->ldc + j0), v);
        }
        return;
    }
    const __m512 m = g->mult_step ? _mm512_loadu_ps(g->mult + j0) : _mm512_set1_ps(g->mult[0]);
    if (g->out == MI_Q_FLOAT) {
        const __m512 lo = _mm512_set1_ps(g->lo), hi = _mm512_set1_ps(g->hi);
        const __m512 bias = g->bias ? _mm512_loadu_ps(g->bias + j0) : _mm512_setzero_ps();
        const int add = g->bias != NULL;
        for (long r = 0; r < rows; r++) {
            Q_AMX_SUMS(r);
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), m);
            if (add) f = _mm512_add_ps(f, bias);
            f = _mm512_min_ps(hi, _mm512_max_ps(lo, f));
            _mm512_storeu_ps((float *)g->c + (i0 + r) * g->ldc + j0, f);
        }
        return;
    }
    const __m512 lo = _mm512_set1_ps(g->lo - (float)g->zy),
                 hi = _mm512_set1_ps(g->hi - (float)g->zy);
    const __m512i zy = _mm512_set1_epi32(g->zy);
    for (long r = 0; r < rows; r++) {
        Q_AMX_SUMS(r);
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), m);
        f = _mm512_min_ps(hi, _mm512_max_ps(lo, f));
        __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
        _mm_storeu_si128((__m128i *)((uint8_t *)g->c + (i0 + r) * g->ldc + j0),
                         _mm512_cvtepi32_epi8(q));
    }
#undef Q_AMX_SUMS
}

/* rows [r0, r0 + 8 * panels) of the block (panels ip.. of 8 rows, each whole, their rows
 * evenly spaced: a part's buffer or the matrix in place) times the full column pair jq:
 * tiles over K's whole chunks (one at least), micro_512_8 for K's last quads and tail, then
 * the epilogue */
static void q_amx_group(const qjob *g, long ip, long panels, const uint8_t *a, long lda,
                        const int32_t *const *rs, long jq) {
    int32_t acc[2][32 * QNB];
    const long jp = 2 * jq, j0 = jp * QNB, nc = g->kq / 16, qa = nc * 16;
    const int8_t *b0 = g->bp + j0 * g->k, *b1 = g->bp + (j0 + QNB) * g->k;
    if (panels == 4) {
        q_amx_32x32(a, lda, b0, b1, nc, acc[0], acc[1]);
    } else {
        q_amx_16x32(a, lda, b0, b1, nc, acc[0], acc[1]);
    }
    if (g->kq > qa || g->btail)
        for (long p = 0; p < panels; p++) {
            const uint8_t *ap = a + p * QMR_MAX * lda;
            for (int h = 0; h < 2; h++) {
                int32_t *t = acc[h] + p * QMR_MAX * QNB;
                const int8_t *b = h ? b1 : b0;
                if (g->kq > qa) micro_512_8(ap + 4 * qa, lda, b + qa * 64, g->kq - qa, t);
                if (g->btail) micro_512_8(ap + 4 * g->kq, lda, g->btail + (jp + h) * 64, 1, t);
            }
        }
    for (int h = 0; h < 2; h++)
        q_amx_epi(g, acc[h], panels * QMR_MAX, ip * QMR_MAX, rs, j0 + h * QNB);
}
#else
#define Q_HAVE_AMX 0
static int q_amx_usable(void) { return 0; }
#endif

#endif
