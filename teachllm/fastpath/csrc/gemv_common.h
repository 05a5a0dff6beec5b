/* What gemv_avx2.c and gemv_avx512.c share: small helpers, and the RMSNorm they can apply to their input. */

#include <immintrin.h>
#include <stdint.h>

static float sum8(__m256 v) {  /* the sum of eight floats */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

static __m128 half4(const uint8_t *p) {  /* four float16 numbers (the file's scales) as float32, exactly */
    return _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p));
}

/* RMSNorm of each row when `norm` is given (else x itself): x / sqrt(mean(x^2) + eps) * norm, into xn [R, K].
   The decode step normalises the residual stream before q/k/v and before gate/up; doing it here, as the rows
   are read, saves PyTorch's several operations a call. The mean is summed in double, then rounded to float. */
static const float *rms_norm(const float *x, const float *norm, float eps, int R, int K, float *xn) {
    if (!norm) return x;
    for (long r = 0; r < R; r++) {
        const float *row = x + r * K;
        double squares = 0.0;
        for (int k = 0; k < K; k++) squares += (double)row[k] * row[k];
        const float scale = 1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss((float)(squares / K) + eps)));
        for (int k = 0; k < K; k++) xn[r * K + k] = row[k] * scale * norm[k];
    }
    return xn;
}

#include "attention.h"  /* the fast path's decode attention, in the same library */
