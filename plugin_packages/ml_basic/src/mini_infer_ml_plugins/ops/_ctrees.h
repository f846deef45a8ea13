/* The tree-ensemble traversal's node layouts and entry points (_ctrees.c), shared by the
 * library and the sanitizers' driver (tests/sanitize/forest_check.c); _trees.py mirrors the
 * layouts as NumPy structured dtypes and checks their sizes against the module's NODE_F32 and
 * NODE_F64 constants when it loads. */
#ifndef MI_CTREES_H
#define MI_CTREES_H

#include <stdint.h>

typedef struct {
    float thr;
    int32_t feat, tc, fc;
    uint8_t mode, mt, pad[2];
} node_f32;

typedef struct {
    double thr;
    int32_t feat, tc, fc;
    uint8_t mode, mt, pad[2];
} node_f64;

int mi_forest_f32(const float *X, int64_t n_rows, int64_t stride, const node_f32 *nodes,
                  const int32_t *roots, int64_t n_trees, const int32_t *wt_target,
                  const float *wt_value, int64_t n_targets, int32_t agg, int32_t fast,
                  float *scores, uint8_t *has);
int mi_forest_f64(const double *X, int64_t n_rows, int64_t stride, const node_f64 *nodes,
                  const int32_t *roots, int64_t n_trees, const int32_t *wt_target,
                  const double *wt_value, int64_t n_targets, int32_t agg, int32_t fast,
                  double *scores, uint8_t *has);

#endif
