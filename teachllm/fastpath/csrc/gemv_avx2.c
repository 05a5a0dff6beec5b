/* teachllm.fastpath.kernels' "avx2" kernel: GGUF blocks times activations, with AVX2 integer dot products.

   For a row x of activations and one output n, the de-quantised weight is w = d*q + m per block of 32, so

       y[n] = sum over blocks g of   d[n,g] * (q[n,g,:] . x[g,:])   +   m[n,g] * (sum of x[g,:])

   The second sum is done in float32. For the first, each block of x is rounded to 16-bit integers with its
   own scale (x ~ s[g] * xi, s[g] = max |x[g,:]| / 32767, an error under 1.6e-5 of the block's largest value),
   and q . xi is an integer dot product: _mm256_madd_epi16 multiplies sixteen 16-bit pairs and adds them in
   pairs, exactly, into 32-bit integers. Then y[n] adds d[n,g] * s[g] * (q . xi) in float32. Compared with
   converting every weight to float32, this widens the integers only to 16 bits (one shuffle per 16 weights
   instead of two per 8), and it is what llama.cpp does with 8-bit activations.

   Layout (teachllm/kernels.py prepares it from the file's blocks; G blocks per row, K = 32 G): the outputs
   are taken four at a time, and each "tile" holds one block of four outputs, so that a pass over the
   weight reads one stream of memory from start to end:

     tile (t, g), t = n / 4:  the four blocks' integers   4 x 16 bytes (Q4_1: byte j holds q_j in its low
                                                          nibble and q_{j+16} in its high one) or 4 x 32 (Q8_0)
                              their scales d              4 float16, the file's own
                              their minimums m            4 float16 (Q4_1 only)
     tiles   [ceil(N/4), G, tile bytes]                   rows past N are zero
     x       [R, K] float32                               R rows of activations
     work    R * (3K/2 + 2 G) floats                      scratch: xi [R, K] int16, s [R, G], sums [R, G], and
                                                          the normalised rows [R, K] (when norm is given)
     y       [R, N] float32
     threads                                              how many threads share the tile rows
     norm, eps                                            RMSNorm's weight [K] and epsilon, to apply to x first;
                                                          norm = NULL: x as it is
*/

#include "gemv_common.h"

static float max8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

/* 16 floats -> 16 int16, in order (packs works within 128-bit lanes; the permute puts them back in order) */
static __m256i to_int16(__m256 a, __m256 b, __m256 inv) {
    __m256i packed = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(a, inv)),
                                        _mm256_cvtps_epi32(_mm256_mul_ps(b, inv)));
    return _mm256_permute4x64_epi64(packed, 0xD8);
}

/* each block of 32 activations: its 16-bit integers xi, its scale s and its float32 sum */
static void round_blocks(const float *x, long blocks, int16_t *xi, float *s, float *sums) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (long b = 0; b < blocks; b++) {
        const float *v = x + 32 * b;
        __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
        __m256 v2 = _mm256_loadu_ps(v + 16), v3 = _mm256_loadu_ps(v + 24);
        sums[b] = sum8(_mm256_add_ps(_mm256_add_ps(v0, v1), _mm256_add_ps(v2, v3)));
        __m256 top = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                   _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        s[b] = max8(top) / 32767.0f;
        __m256 inv = _mm256_set1_ps(s[b] > 0.0f ? 1.0f / s[b] : 0.0f);
        _mm256_storeu_si256((__m256i *)(xi + 32 * b), to_int16(v0, v1, inv));
        _mm256_storeu_si256((__m256i *)(xi + 32 * b + 16), to_int16(v2, v3, inv));
    }
}

/* one block's 32 integers as two vectors of 16 int16 */
static void widen(const uint8_t *b, int q4, __m256i *w0, __m256i *w1) {
    if (q4) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)b), low4 = _mm_set1_epi8(0x0F);
        *w0 = _mm256_cvtepu8_epi16(_mm_and_si128(bytes, low4));                     /* q0 .. q15  */
        *w1 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(bytes, 4), low4));  /* q16 .. q31 */
    } else {
        *w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b));
        *w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16)));
    }
}

/* q . xi for one block: eight 32-bit partial sums, as float32 */
static __m256 block_dot(__m256i w0, __m256i w1, const int16_t *xi) {
    __m256i p = _mm256_add_epi32(_mm256_madd_epi16(w0, _mm256_loadu_si256((const __m256i *)xi)),
                                 _mm256_madd_epi16(w1, _mm256_loadu_si256((const __m256i *)(xi + 16))));
    return _mm256_cvtepi32_ps(p);
}

#define OUTS 4      /* outputs per tile */
#ifndef AHEAD
#define AHEAD 4096  /* bytes: how far ahead of the tile in use the next ones are fetched (1024: 1.3x slower) */
#endif

/* y[r, n0 .. n0+3] for one row r of activations (its xi, s and sums) and tile row t */
static void tile_row(const uint8_t *tiles, int q4, int G, const int16_t *xi, const float *s, const float *sums,
                     float out[OUTS]) {
    const int width = q4 ? 16 : 32, tile_bytes = OUTS * width + (q4 ? 16 : 8);
    __m256 acc[OUTS];
    __m128 minimum = _mm_setzero_ps();
    for (int j = 0; j < OUTS; j++) acc[j] = _mm256_setzero_ps();
    for (int g = 0; g < G; g++) {
        const uint8_t *tile = tiles + (long)g * tile_bytes;
        _mm_prefetch((const char *)tile + AHEAD, _MM_HINT_T0);  /* the stream, a little ahead of its use */
        _mm_prefetch((const char *)tile + AHEAD + 64, _MM_HINT_T0);
        const uint8_t *scales = tile + OUTS * width;  /* d0 .. d3, then m0 .. m3: float16, 8 bytes each */
        float ds[OUTS];  /* d_j * s: the scale of output j's integer dot product in this block */
        _mm_storeu_ps(ds, _mm_mul_ps(half4(scales), _mm_set1_ps(s[g])));
        for (int j = 0; j < OUTS; j++) {
            __m256i w0, w1;
            widen(tile + j * width, q4, &w0, &w1);
            acc[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(ds + j), block_dot(w0, w1, xi + 32 * g), acc[j]);
        }
        if (q4) minimum = _mm_fmadd_ps(half4(scales + 8), _mm_set1_ps(sums[g]), minimum);
    }
    float m4[OUTS];
    _mm_storeu_ps(m4, minimum);
    for (int j = 0; j < OUTS; j++) out[j] = sum8(acc[j]) + m4[j];
}

void gemv(const float *x, const void *tiles, int q4, float *work, float *y, int R, int N, int G, int threads,
          const float *norm, float eps) {
    const int K = 32 * G, tile_bytes = OUTS * (q4 ? 16 : 32) + (q4 ? 16 : 8);
    int16_t *xi = (int16_t *)work;
    float *s = work + (long)R * K / 2, *sums = s + (long)R * G, *xn = sums + (long)R * G;
    round_blocks(rms_norm(x, norm, eps, R, K, xn), (long)R * G, xi, s, sums);
    const int T = (N + OUTS - 1) / OUTS;
    /* tile rows shared among the threads (OpenMP, when built with it): each output is one thread's work alone,
       so the result is the same for any number of threads; a small matrix stays on one */
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && (long)T * G * R >= 2048)
    for (int t = 0; t < T; t++) {
        const uint8_t *row = (const uint8_t *)tiles + (long)t * G * tile_bytes;
        for (int r = 0; r < R; r++) {  /* several rows: the tile row is read from memory once, then from cache */
            float out[OUTS];
            tile_row(row, q4, G, xi + (long)r * K, s + (long)r * G, sums + (long)r * G, out);
            for (int j = 0; j < OUTS && t * OUTS + j < N; j++) y[(long)r * N + t * OUTS + j] = out[j];
        }
    }
}
