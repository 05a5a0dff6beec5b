/* teachllm.fastpath.kernels' "avx512" kernel: gemv_avx2.c's arithmetic, sixteen lanes wide, two outputs per vector.

   The sum is the same as in gemv_avx2.c (read that file first): per block of 32, the weights' integers q times
   the activations rounded to 16-bit integers xi, exactly, in 32-bit integers; then d * s and the minimum term in
   float32. What changes is the width. A 512-bit vector holds 32 16-bit integers, and it holds them for two
   outputs at once, so that the 4-bit integers need no reordering:

     32 bytes of a tile, outputs j and j+1:  b = [ j's 16 bytes | j+1's 16 bytes ]   widened to 16 bits
     b & 15  holds q0 .. q15  of both;   times  [x0 .. x15  | x0 .. x15 ]   (xlo, one per block, for every pair)
     b >> 4  holds q16 .. q31 of both;   times  [x16 .. x31 | x16 .. x31]   (xhi)

   _mm512_madd_epi16 multiplies the 32 pairs and adds neighbours: lanes 0-7 are output j's partial sums,
   lanes 8-15 output j+1's. The 8-bit head is laid out to match (kernels.py does it): in each pair's 64 bytes,
   the first 32 hold q0 .. q15 of j then of j+1, the next 32 q16 .. q31.

     tile (t, g), t = n / 4:  integers   4 x 16 bytes (Q4_1) or 4 x 32 (Q8_0, paired as above)
                              d          4 float16
                              m          4 float16 (Q4_1 only)
     x       [R, K] float32
     work    R * (2K + 2 G) floats       scratch: xlo and xhi [R, G, 64] int16, s [R, G], sums [R, G], and
                                         the normalised rows [R, K] (when norm is given)
     norm, eps                           as in gemv_avx2.c
     y       [R, N] float32
*/

#include "gemv_common.h"

/* each block of 32 activations: xlo and xhi (64 16-bit integers), its scale s and its float32 sum */
static void round_blocks(const float *x, long blocks, int16_t *xw, float *s, float *sums) {
    for (long b = 0; b < blocks; b++) {
        __m512 lo = _mm512_loadu_ps(x + 32 * b), hi = _mm512_loadu_ps(x + 32 * b + 16);
        sums[b] = _mm512_reduce_add_ps(_mm512_add_ps(lo, hi));
        s[b] = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi))) / 32767.0f;
        __m512 inv = _mm512_set1_ps(s[b] > 0.0f ? 1.0f / s[b] : 0.0f);
        __m256i l = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(lo, inv)));  /* x0 .. x15  */
        __m256i h = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(hi, inv)));  /* x16 .. x31 */
        _mm512_storeu_si512(xw + 64 * b, _mm512_inserti64x4(_mm512_castsi256_si512(l), l, 1));
        _mm512_storeu_si512(xw + 64 * b + 32, _mm512_inserti64x4(_mm512_castsi256_si512(h), h, 1));
    }
}

/* q . xi for outputs j and j+1 of one block: lanes 0-7 j's partial sums, 8-15 j+1's */
static __m512i pair_dot(const uint8_t *b, int q4, __m512i xlo, __m512i xhi) {
    __m512i lo, hi;
    if (q4) {
        __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)b));
        lo = _mm512_and_si512(w, _mm512_set1_epi16(15));
        hi = _mm512_srli_epi16(w, 4);
    } else {
        lo = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)b));
        hi = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(b + 32)));
    }
#ifdef __AVX512VNNI__
    return _mm512_dpwssd_epi32(_mm512_madd_epi16(lo, xlo), hi, xhi);  /* the second product added in place */
#else
    return _mm512_add_epi32(_mm512_madd_epi16(lo, xlo), _mm512_madd_epi16(hi, xhi));
#endif
}

#define OUTS 4
#ifndef AHEAD
#define AHEAD 4096
#endif

static void tile_row(const uint8_t *tiles, int q4, int G, const int16_t *xw, const float *s, const float *sums,
                     float out[OUTS]) {
    const int width = q4 ? 16 : 32, tile_bytes = OUTS * width + (q4 ? 16 : 8);
    const __m512i first = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i second = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2);
    __m512 acc01 = _mm512_setzero_ps(), acc23 = _mm512_setzero_ps();
    __m128 minimum = _mm_setzero_ps();
    for (int g = 0; g < G; g++) {
        const uint8_t *tile = tiles + (long)g * tile_bytes;
        _mm_prefetch((const char *)tile + AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)tile + AHEAD + 64, _MM_HINT_T0);
        const uint8_t *scales = tile + OUTS * width;  /* d0 .. d3, then m0 .. m3: float16 */
        __m512 ds = _mm512_castps128_ps512(_mm_mul_ps(half4(scales), _mm_set1_ps(s[g])));  /* d_j * s, j = 0..3 */
        __m512i xlo = _mm512_loadu_si512(xw + 64 * g), xhi = _mm512_loadu_si512(xw + 64 * g + 32);
        acc01 = _mm512_fmadd_ps(_mm512_permutexvar_ps(first, ds),
                                _mm512_cvtepi32_ps(pair_dot(tile, q4, xlo, xhi)), acc01);
        acc23 = _mm512_fmadd_ps(_mm512_permutexvar_ps(second, ds),
                                _mm512_cvtepi32_ps(pair_dot(tile + 2 * width, q4, xlo, xhi)), acc23);
        if (q4) minimum = _mm_fmadd_ps(half4(scales + 8), _mm_set1_ps(sums[g]), minimum);
    }
    float m4[OUTS];
    _mm_storeu_ps(m4, minimum);
    out[0] = sum8(_mm512_castps512_ps256(acc01)) + m4[0];
    out[1] = sum8(_mm512_extractf32x8_ps(acc01, 1)) + m4[1];
    out[2] = sum8(_mm512_castps512_ps256(acc23)) + m4[2];
    out[3] = sum8(_mm512_extractf32x8_ps(acc23, 1)) + m4[3];
}

void gemv(const float *x, const void *tiles, int q4, float *work, float *y, int R, int N, int G, int threads,
          const float *norm, float eps) {
    const int K = 32 * G, tile_bytes = OUTS * (q4 ? 16 : 32) + (q4 ? 16 : 8);
    int16_t *xw = (int16_t *)work;
    float *s = work + (long)R * K, *sums = s + (long)R * G, *xn = sums + (long)R * G;
    round_blocks(rms_norm(x, norm, eps, R, K, xn), (long)R * G, xw, s, sums);
    const int T = (N + OUTS - 1) / OUTS;
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && (long)T * G * R >= 2048)
    for (int t = 0; t < T; t++) {
        const uint8_t *row = (const uint8_t *)tiles + (long)t * G * tile_bytes;
        for (int r = 0; r < R; r++) {
            float out[OUTS];
            tile_row(row, q4, G, xw + (long)r * 2 * K, s + (long)r * G, sums + (long)r * G, out);
            for (int j = 0; j < OUTS && t * OUTS + j < N; j++) y[(long)r * N + t * OUTS + j] = out[j];
        }
    }
}
