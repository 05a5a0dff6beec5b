/* One decode step's attention for one sequence, after the q/k/v projection: the fast path's (teachllm/fast.py)
   replacement for RoPE, the cache write and F.scaled_dot_product_attention, each several PyTorch operations.
   model.py's Attention is the reference; the arithmetic is the same, in float32:

     RoPE        x * cos + roll(x, d/2) * sin, on each q and k head   (sin carries rotate_half's sign: [-sin | sin])
     the cache   k and v of the new token stored in slot t            (slots 0 .. t-1 hold the earlier tokens)
     attention   for each q head h, its k/v head g = h / (n_h / n_kv)  (grouped-query attention):
                 s_i = scale * (q . k_i),  p = softmax(s),  out = sum_i p_i v_i,   i = 0 .. t

     qkv      [n_h + 2 n_kv, d]   the q heads, then k, then v (RoPE is applied in place)
     cos, sin [d]                 this token's angles
     k, v     the layer's cache: head g, slot i at k + g * head_stride + i * d
     scores   t + 1 floats of scratch
     out      [n_h, d]
   d is a multiple of 8, at most 256 (fast.py checks). */

#include <math.h>

static float dot(const float *a, const float *b, int d) {
    __m256 acc = _mm256_setzero_ps();
    for (int j = 0; j < d; j += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc);
    return sum8(acc);
}

void decode_attention(float *qkv, const float *cos, const float *sin, float *k, float *v, long head_stride,
                      int t, int n_h, int n_kv, int d, float scale, float *scores, float *out) {
    const int half = d / 2;
    float x[256];
    for (int h = 0; h < n_h + n_kv; h++) {  /* RoPE on the q and k heads */
        float *head = qkv + (long)h * d;
        for (int j = 0; j < d; j++) x[j] = head[j];
        for (int j = 0; j < d; j++) head[j] = x[j] * cos[j] + x[(j + half) % d] * sin[j];
    }
    for (int g = 0; g < n_kv; g++) {  /* the new token's k and v into slot t */
        for (int j = 0; j < d; j++) {
            k[g * head_stride + (long)t * d + j] = qkv[(long)(n_h + g) * d + j];
            v[g * head_stride + (long)t * d + j] = qkv[(long)(n_h + n_kv + g) * d + j];
        }
    }
    for (int h = 0; h < n_h; h++) {
        const float *q = qkv + (long)h * d;
        const float *keys = k + (h / (n_h / n_kv)) * head_stride, *values = v + (h / (n_h / n_kv)) * head_stride;
        float largest = -INFINITY, total = 0.0f;
        for (int i = 0; i <= t; i++) {
            scores[i] = scale * dot(q, keys + (long)i * d, d);
            largest = scores[i] > largest ? scores[i] : largest;
        }
        for (int i = 0; i <= t; i++) total += scores[i] = expf(scores[i] - largest);
        float *o = out + (long)h * d;
        for (int j = 0; j < d; j++) o[j] = 0.0f;
        for (int i = 0; i <= t; i++) {
            const float p = scores[i] / total, *value = values + (long)i * d;
            for (int j = 0; j < d; j++) o[j] += p * value[j];
        }
    }
}
